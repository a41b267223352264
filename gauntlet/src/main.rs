//! The `gauntlet` command line: check histories, build broker images, run scenarios.
use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod cmd;

#[derive(Debug, Parser)]
#[command(
    name = "gauntlet",
    version,
    about = "Chaos tests and history checks for message brokers"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check a recorded history (JSON Lines) and print the verdict.
    Check(cmd::check::CheckArgs),
    /// Run a scenario against a real broker: deploy, drive the workload, drain, check.
    Run(cmd::run::RunArgs),
    /// Run a matrix of scenarios (ci/matrix.toml), each judged against what it declares.
    Matrix(cmd::matrix::MatrixArgs),
    /// One consumer process of a run (started by `gauntlet run`).
    #[command(hide = true)]
    Worker(cmd::worker::WorkerArgs),
    /// Build local broker images from Debian packages (no registry needed).
    #[command(subcommand)]
    Images(cmd::images::ImagesCmd),
    /// Remove containers and networks that crashed runs left behind (labelled ones only).
    Clean(cmd::clean::CleanArgs),
    /// Machines to try the SSH backend on: containers reached only over SSH.
    #[command(subcommand)]
    Lab(cmd::lab::LabCmd),
    /// Undo on SSH hosts what a killed run left there (Gauntlet's iptables chain, netem, a paused or stopped broker).
    Heal(cmd::clean::HealArgs),
    /// Generate big histories and measure reading and checking them (speed, memory).
    Bench(cmd::bench::BenchArgs),
    /// Mutation-fuzz the history reader and the checker for a while.
    Fuzz(cmd::fuzz::FuzzArgs),
    /// Re-render a run folder's report.html and junit.xml from its history and verdict.
    Report(cmd::report::ReportArgs),
    /// Serve an index of the runs under a results folder on 127.0.0.1.
    Serve(cmd::serve::ServeArgs),
}

/// Exit status for errors, as in the history contract: 0 valid, 1 invalid, 2 unknown, 3+ errors.
const EXIT_ERROR: u8 = 3;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(args) => cmd::check::run(args),
        Command::Run(args) => cmd::run::run(args),
        Command::Matrix(args) => cmd::matrix::run(args),
        Command::Worker(args) => cmd::worker::run(args),
        Command::Images(c) => cmd::images::run(c),
        Command::Clean(args) => cmd::clean::run(args),
        Command::Heal(args) => cmd::clean::heal(args),
        Command::Lab(c) => cmd::lab::run(c),
        Command::Bench(args) => cmd::bench::run(args),
        Command::Fuzz(args) => cmd::fuzz::run(args),
        Command::Report(args) => cmd::report::run(args),
        Command::Serve(args) => cmd::serve::run(args),
    };
    match result {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(EXIT_ERROR)),
        Err(err) => {
            eprintln!("gauntlet: error: {err:#}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}
