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
    #[arg(long, value_delimiter = ',', value_parser = super::named::<Guarantee>(Guarantee::ALL.into_iter().chain(Guarantee::PROCESSING).map(|g| g.name())))]
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `gauntlet check FILE --json OUT -q` on `text`: the exit status and the verdict written.
    fn check_text(name: &str, text: &str) -> (i32, serde_json::Value) {
        let dir =
            std::env::temp_dir().join(format!("gauntlet-check-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join(name);
        std::fs::write(&file, text).expect("history");
        let out = dir.join("verdict.json");
        let code = run(CheckArgs {
            file,
            expect: Vec::new(),
            json: Some(out.clone()),
            html: None,
            junit: None,
            max_examples: 10,
            quiet: true,
        })
        .expect("checks");
        let verdict = serde_json::from_slice(&std::fs::read(&out).expect("verdict")).expect("json");
        let _ = std::fs::remove_dir_all(&dir);
        (code, verdict)
    }

    #[test]
    fn an_empty_history_or_a_lone_invoke_exits_2_with_the_reason() {
        let (code, v) = check_text("empty.jsonl", "");
        assert_eq!(code, 2);
        assert_eq!(v["valid"], "unknown");
        assert_eq!(v["unjudged"][0]["reason"], "nothing-completed");
        assert_eq!(v["unjudged"][0]["detail"], "the history has no op");
        let (code, v) = check_text(
            "one.jsonl",
            r#"{"index":0,"time":0,"process":0,"type":"invoke","f":"send","value":{"key":"k","value":1}}
"#,
        );
        assert_eq!(code, 2);
        assert_eq!(v["guarantees"]["at-most-once"], "unknown");
        assert_eq!(v["unjudged"][0]["reason"], "nothing-completed");
    }

    #[test]
    fn near_miss_one_acknowledged_and_delivered_send_exits_0() {
        let (code, v) = check_text(
            "ok.jsonl",
            r#"{"index":0,"time":0,"process":0,"type":"invoke","f":"send","value":{"key":"k","value":1}}
{"index":1,"time":1,"process":0,"type":"ok","f":"send","value":{"key":"k","value":1}}
{"index":2,"time":2,"process":1,"type":"invoke","f":"poll"}
{"index":3,"time":3,"process":1,"type":"ok","f":"poll","value":[{"key":"k","value":1}]}
"#,
        );
        assert_eq!(code, 0);
        assert_eq!(v["valid"], true);
        assert!(v.get("unjudged").is_none());
    }
}
