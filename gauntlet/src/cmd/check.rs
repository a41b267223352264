//! `gauntlet check FILE`: read a history, run the checkers, print and write the verdict.
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// History file (JSON Lines).
    pub file: PathBuf,
}

pub fn run(_args: CheckArgs) -> anyhow::Result<i32> {
    anyhow::bail!("check: not implemented yet")
}
