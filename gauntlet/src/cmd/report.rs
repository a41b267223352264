//! `gauntlet report RUN_DIR`: re-render a run folder's report.html and junit.xml
//! from its history.jsonl and verdict.json (checking again when there is no verdict).
use clap::Args;
use gauntlet_checkers::Guarantee;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run folder (results/<scenario>/<timestamp>, or results/<scenario>/latest).
    pub run_dir: PathBuf,
    /// Check the history again instead of reading verdict.json (and write verdict.json).
    #[arg(long)]
    pub recheck: bool,
    /// Guarantees to judge against when checking again (default: verdict.json's `expected`).
    #[arg(long, value_delimiter = ',')]
    pub expect: Vec<Guarantee>,
}

pub fn run(args: ReportArgs) -> anyhow::Result<i32> {
    let expect = (!args.expect.is_empty()).then(|| args.expect.clone());
    // A folder of this Gauntlet: the typed scenario; else the report reads the
    // file leniently (an older Gauntlet's folder, or one written by hand).
    let info = std::fs::read_to_string(args.run_dir.join(gauntlet_report::folder::SCENARIO))
        .ok()
        .and_then(|t| gauntlet_harness::run::Scenario::from_toml(&t).ok())
        .map(|s| s.report_info());
    let done = gauntlet_report::rerender_run(&args.run_dir, args.recheck, expect, info.as_ref())?;
    let dir = args.run_dir.display();
    if done.rechecked {
        println!("wrote {dir}/verdict.json (checked again)");
    }
    println!("wrote {dir}/report.html");
    println!("wrote {dir}/junit.xml");
    println!("verdict: {}", done.verdict.valid.name().to_uppercase());
    Ok(done.verdict.valid.exit_code())
}
