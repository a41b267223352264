//! `gauntlet serve [RESULTS]`: serve the index of runs and their files on 127.0.0.1.
use anyhow::Context;
use clap::Args;
use std::net::{Ipv4Addr, TcpListener};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The results folder.
    #[arg(default_value = "results")]
    pub results: PathBuf,
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 8484)]
    pub port: u16,
}

pub fn run(args: ServeArgs) -> anyhow::Result<i32> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, args.port))
        .with_context(|| format!("binding 127.0.0.1:{}", args.port))?;
    let addr = listener.local_addr()?;
    let runs = gauntlet_report::index::scan(&args.results).len();
    println!(
        "serving {} ({runs} runs) on http://{addr}/ (Ctrl-C to stop)",
        args.results.display()
    );
    gauntlet_report::serve::serve(listener, &args.results)
        .with_context(|| format!("serving {}", args.results.display()))?;
    Ok(0)
}
