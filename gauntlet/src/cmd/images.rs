//! `gauntlet images ...`: build and list local broker images (no registry needed).
use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum ImagesCmd {
    /// Build the local broker images that are missing (cached: a second call is quick).
    Build {
        /// Only this broker (rabbitmq, nats, redis, kafka, sqs).
        #[arg(long)]
        broker: Option<String>,
    },
}

pub fn run(cmd: ImagesCmd) -> anyhow::Result<i32> {
    match cmd {
        ImagesCmd::Build { broker: _ } => anyhow::bail!("images build: not implemented yet"),
    }
}
