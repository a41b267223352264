//! `gauntlet images ...`: build and list local broker images (no registry needed).
use anyhow::Context;
use clap::Subcommand;
use gauntlet_harness::broker::BrokerExt;
use gauntlet_harness::images::{self, BuildOptions};
use gauntlet_harness::BrokerKind;
use std::time::Instant;

/// An image build's lines on stderr, prefixed `[images]`.
#[derive(Debug, Clone, Copy, Default)]
pub struct StderrProgress;

impl images::Progress for StderrProgress {
    fn line(&self, line: &str) {
        eprintln!("[images] {line}");
    }
}

#[derive(Debug, Subcommand)]
pub enum ImagesCmd {
    /// Build the local broker images that are missing (cached: a second call is quick).
    Build {
        /// Only this broker (rabbitmq, nats, redis, kafka, sqs). Without it: every
        /// broker, the Kafka storage node and the SSH test hosts (tests/e2e/ssh.rs).
        #[arg(long)]
        broker: Option<String>,
        /// Rebuild even when images with the current recipe exist.
        #[arg(long)]
        force: bool,
    },
    /// Show Gauntlet's image for each broker and whether it is present.
    List,
}

pub fn run(cmd: ImagesCmd) -> anyhow::Result<i32> {
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(async {
        let docker = gauntlet_harness::backend::docker::connect().await?;
        match cmd {
            ImagesCmd::Build { broker, force } => {
                let brokers = match &broker {
                    Some(b) => vec![b.parse::<BrokerKind>()?],
                    None => BrokerKind::ALL.to_vec(),
                };
                let opts = BuildOptions {
                    force,
                    ..BuildOptions::default()
                };
                let t = Instant::now();
                let mut built = images::ensure_images(&docker, &brokers, &opts, &StderrProgress)
                    .await
                    .context("building images")?;
                if broker.is_none() {
                    // The machines of the SSH backend's test (tests/e2e/ssh.rs).
                    built.push(
                        images::ensure_ssh_host_image(&docker, &opts, &StderrProgress)
                            .await
                            .context("building the SSH test hosts' image")?,
                    );
                }
                for s in &built {
                    println!(
                        "{:<10} {:<34} {:>5} MB  {}",
                        s.broker.name(),
                        s.image,
                        s.size / 1_000_000,
                        if s.cached { "cached" } else { "built" }
                    );
                }
                eprintln!("[images] done in {:.1}s", t.elapsed().as_secs_f64());
                Ok(0)
            }
            ImagesCmd::List => {
                for b in BrokerKind::ALL {
                    let image = b.default_image();
                    let present = docker.inspect_image(&image).await.is_ok();
                    println!(
                        "{:<10} {:<34} {}",
                        b.name(),
                        image,
                        if present { "present" } else { "missing" }
                    );
                }
                Ok(0)
            }
        }
    })
}
