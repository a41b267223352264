//! `gauntlet check FILE`: read a history, run the checkers, print and write the verdict.
use anyhow::Context;
use clap::Args;
use gauntlet_checkers::{CheckOptions, Guarantee};
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// History file (JSON Lines, contract v1.1).
    pub file: PathBuf,
    /// Guarantees the run claims, comma-separated (default: at-least-once).
    #[arg(long, value_delimiter = ',', value_parser = super::named::<Guarantee>(Guarantee::ALL.map(|g| g.name())))]
    pub expect: Vec<Guarantee>,
    /// Write the verdict JSON here (`-` for stdout; the summary then goes to stderr).
    #[arg(long, value_name = "OUT")]
    pub json: Option<PathBuf>,
    /// Write the self-contained HTML report here.
    #[arg(long, value_name = "OUT")]
    pub html: Option<PathBuf>,
    /// Write JUnit XML here (a test case per guarantee and per anomaly type).
    #[arg(long, value_name = "OUT")]
    pub junit: Option<PathBuf>,
    /// Examples kept per anomaly type.
    #[arg(long, default_value_t = 10)]
    pub max_examples: usize,
    /// Print no summary.
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(args: CheckArgs) -> anyhow::Result<i32> {
    let history = gauntlet_history::read_path(&args.file)?;
    let opts = CheckOptions {
        expect: if args.expect.is_empty() {
            vec![Guarantee::AtLeastOnce]
        } else {
            args.expect.clone()
        },
        max_examples: args.max_examples,
    };
    let verdict = gauntlet_report::folder::judge(&history, &opts, None);
    let json = gauntlet_report::verdict_json(&verdict);
    let to_stdout = args.json.as_deref() == Some(std::path::Path::new("-"));
    if !args.quiet {
        let summary =
            gauntlet_report::terminal::summary(&verdict, &args.file.display().to_string());
        if to_stdout {
            eprint!("{summary}");
        } else {
            print!("{summary}");
        }
    }
    let source = args.file.display().to_string();
    if let Some(p) = &args.html {
        let page = gauntlet_report::html::render(
            &history,
            &verdict,
            &gauntlet_report::html::HtmlOptions {
                title: &source,
                scenario_toml: None,
                scenario: None,
            },
        );
        std::fs::write(p, page).with_context(|| format!("writing {}", p.display()))?;
    }
    if let Some(p) = &args.junit {
        let xml = gauntlet_report::junit::junit_xml(&verdict, &source);
        std::fs::write(p, xml).with_context(|| format!("writing {}", p.display()))?;
    }
    match &args.json {
        Some(p) if to_stdout => {
            let _ = p;
            std::io::stdout().write_all(json.as_bytes())?;
        }
        Some(p) => std::fs::write(p, json).with_context(|| format!("writing {}", p.display()))?,
        None => {}
    }
    Ok(verdict.valid.exit_code())
}
