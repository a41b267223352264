//! `gauntlet matrix ci/matrix.toml [--profile smoke|full]`: runs every scenario of a
//! profile, judges each verdict against its declaration, prints a summary table,
//! and writes `results/matrix/<profile>/<timestamp>/` with one combined JUnit file,
//! an index page linking each run's report, `summary.json` and the run folders.
//! Exit 0 when every scenario showed what it declared, 1 when any contradicted it
//! (a negative control that finds nothing included), 3 for a bad matrix.
use super::run::{event_line, Line, EXIT_INTERRUPTED};
use anyhow::{bail, Context, Result};
use clap::Args;
use gauntlet_harness::matrix::{run_matrix, Expected, Matrix, MatrixEvent, MatrixSink, Row};
use gauntlet_report::escape;
use serde_json::json;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use tabled::builder::Builder;
use tabled::settings::Style;

#[derive(Debug, Args)]
pub struct MatrixArgs {
    /// The matrix file.
    #[arg(default_value = "ci/matrix.toml")]
    pub matrix: PathBuf,
    /// Which scenarios to run (a profile of the matrix file).
    #[arg(long, default_value = "smoke")]
    pub profile: String,
    /// Where the matrix folder goes.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Only list what the profile would run.
    #[arg(long)]
    pub list: bool,
}

fn expected_text(r: &Row, must_find: &str) -> String {
    match r.expected {
        Expected::Valid => "valid".into(),
        Expected::Violated => format!("caught: {must_find}"),
    }
}

fn faults_text(f: &[String]) -> String {
    if f.is_empty() {
        "none".into()
    } else {
        f.join(", ")
    }
}

fn verdict_text(r: &Row) -> &'static str {
    match &r.verdict {
        Some(v) => match v.valid {
            gauntlet_checkers::Validity::True => "valid",
            gauntlet_checkers::Validity::False => "invalid",
            gauntlet_checkers::Validity::Unknown => "unknown",
        },
        None => "error",
    }
}

pub fn run(args: MatrixArgs) -> Result<i32> {
    let text = std::fs::read_to_string(&args.matrix)
        .with_context(|| format!("reading {}", args.matrix.display()))?;
    let matrix =
        Matrix::from_toml(&text).with_context(|| format!("in {}", args.matrix.display()))?;
    let base = args.matrix.parent().unwrap_or(Path::new(".")).to_path_buf();
    let stamp = gauntlet_harness::run::timestamp();
    let dir = args.results.join("matrix").join(&args.profile).join(&stamp);
    let plan = matrix
        .plan(&base, &args.profile, &dir.join("runs"))
        .with_context(|| format!("in {}", args.matrix.display()))?;
    if plan.is_empty() {
        bail!("profile `{}` runs no scenario", args.profile);
    }
    if args.list {
        for p in &plan {
            println!(
                "{}\t{}\t{}\t{}",
                p.scenario.name,
                p.scenario.broker,
                faults_text(
                    &p.scenario
                        .nemesis
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                ),
                match p.entry.outcome {
                    Expected::Valid => "valid".to_string(),
                    Expected::Violated => format!("violated ({})", p.entry.must_find.join("|")),
                }
            );
        }
        return Ok(0);
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let must_find: Vec<String> = plan.iter().map(|p| p.entry.must_find.join("|")).collect();
    eprintln!(
        "gauntlet matrix: profile `{}`: {} scenario(s); results in {}",
        args.profile,
        plan.len(),
        dir.display()
    );
    let exe = std::env::current_exe().context("locating the gauntlet binary")?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let rows = rt.block_on(run_matrix(plan, &exe, &MatrixSink::new(print_event)));
    if rows.iter().any(|r| r.interrupted) {
        // Ctrl-C: the interrupted run's verdict is in its folder; no matrix summary.
        return Ok(EXIT_INTERRUPTED);
    }

    let junit = junit_xml(&rows, &args.profile, &must_find);
    std::fs::write(dir.join("junit.xml"), junit).context("writing junit.xml")?;
    std::fs::write(
        dir.join("index.html"),
        index_html(&rows, &args.profile, &dir, &must_find),
    )
    .context("writing index.html")?;
    let summary: Vec<_> = rows
        .iter()
        .map(|r| {
            json!({
                "scenario": r.name,
                "broker": r.broker,
                "faults": r.faults,
                "expected": r.expected,
                "verdict": verdict_text(r),
                "pass": r.judgement.pass,
                "why": r.judgement.why,
                "seconds": (r.seconds * 10.0).round() / 10.0,
                "run": r.dir,
            })
        })
        .collect();
    std::fs::write(
        dir.join("summary.json"),
        serde_json::to_string_pretty(&summary)?,
    )
    .context("writing summary.json")?;
    let latest = dir.parent().map(|p| p.join("latest"));
    if let Some(latest) = latest {
        let _ = std::fs::remove_file(&latest);
        #[cfg(unix)]
        let _ = std::os::unix::fs::symlink(&stamp, &latest);
    }

    print!("{}", table(&rows, &must_find));
    let failed = rows.iter().filter(|r| !r.judgement.pass).count();
    println!(
        "{} of {} scenario(s) as declared; matrix folder: {}",
        rows.len() - failed,
        rows.len(),
        dir.display()
    );
    Ok(if failed == 0 { 0 } else { 1 })
}

/// A matrix event on stderr: the matrix's own lines, and each run's lines
/// indented under it with the scenario's name.
fn print_event(e: MatrixEvent) {
    let mut err = std::io::stderr().lock();
    let _ = match e {
        MatrixEvent::Started {
            index,
            total,
            name,
            broker,
            faults,
            expected,
            must_find,
        } => writeln!(
            err,
            "gauntlet matrix: [{index}/{total}] {name} ({broker}; faults: {}; expects {})",
            if faults.is_empty() {
                "none".to_string()
            } else {
                faults.join(",")
            },
            match expected {
                Expected::Valid => "valid".to_string(),
                Expected::Violated => format!("violated: {}", must_find.join("|")),
            }
        ),
        MatrixEvent::Run { name, event } => match event_line(&event) {
            Some(Line::Tick(t)) => writeln!(err, "  {name}: tick {t}"),
            Some(Line::Run(t)) => writeln!(err, "  {name}: {t}"),
            Some(Line::Process(t)) => writeln!(err, "gauntlet: {t}"),
            Some(Line::Bare(t)) => writeln!(err, "{t}"),
            None => Ok(()),
        },
        MatrixEvent::Finished {
            index,
            total,
            name,
            pass,
            seconds,
            why,
        } => writeln!(
            err,
            "gauntlet matrix: [{index}/{total}] {name}: {} in {seconds:.0} s: {why}",
            if pass { "PASS" } else { "FAIL" },
        ),
        _ => Ok(()),
    };
}

fn table(rows: &[Row], must_find: &[String]) -> String {
    let mut b = Builder::default();
    b.push_record([
        "scenario", "broker", "faults", "declared", "verdict", "result", "time", "why",
    ]);
    for (r, m) in rows.iter().zip(must_find) {
        b.push_record([
            r.name.clone(),
            r.broker.to_string(),
            faults_text(&r.faults),
            expected_text(r, m),
            verdict_text(r).to_string(),
            if r.judgement.pass { "pass" } else { "FAIL" }.to_string(),
            format!("{:.0} s", r.seconds),
            gauntlet_report::escape::cut(&r.judgement.why, 90).into_owned(),
        ]);
    }
    let mut t = b.build();
    t.with(Style::rounded());
    format!("{t}\n")
}

/// One JUnit file for the whole matrix: a test case per scenario, a `failure` when
/// the run contradicted its declaration, an `error` when the run itself failed.
pub fn junit_xml(rows: &[Row], profile: &str, must_find: &[String]) -> String {
    let failures = rows
        .iter()
        .filter(|r| !r.judgement.pass && r.error.is_none())
        .count();
    let errors = rows.iter().filter(|r| r.error.is_some()).count();
    let time: f64 = rows.iter().map(|r| r.seconds).sum();
    let mut x = String::new();
    let _ = writeln!(x, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        x,
        r#"<testsuites name="gauntlet matrix" tests="{}" failures="{failures}" errors="{errors}" time="{time:.3}">"#,
        rows.len()
    );
    let _ = writeln!(
        x,
        r#"  <testsuite name="gauntlet matrix ({})" tests="{}" failures="{failures}" errors="{errors}" time="{time:.3}">"#,
        escape::xml(profile),
        rows.len()
    );
    for (r, m) in rows.iter().zip(must_find) {
        let _ = write!(
            x,
            r#"    <testcase classname="gauntlet.matrix.{}" name="{}" time="{:.3}""#,
            escape::xml(r.broker.name()),
            escape::xml(&r.name),
            r.seconds
        );
        let mut out = format!(
            "declared: {}\nfaults: {}\nverdict: {}\n{}\n",
            expected_text(r, m),
            faults_text(&r.faults),
            verdict_text(r),
            r.judgement.why
        );
        if let Some(d) = &r.dir {
            let _ = writeln!(out, "run folder: {}", d.display());
        }
        let _ = writeln!(x, ">");
        if let Some(e) = &r.error {
            let _ = writeln!(
                x,
                r#"      <error message="{}" type="run-failed">{}</error>"#,
                escape::xml(&escape::cut(e, 300)),
                escape::xml(e)
            );
        } else if !r.judgement.pass {
            let _ = writeln!(
                x,
                r#"      <failure message="{}" type="contradicts-declaration">{}</failure>"#,
                escape::xml(&escape::cut(&r.judgement.why, 300)),
                escape::xml(&out)
            );
        }
        let _ = writeln!(x, "      <system-out>{}</system-out>", escape::xml(&out));
        let _ = writeln!(x, "    </testcase>");
    }
    let _ = writeln!(x, "  </testsuite>");
    let _ = writeln!(x, "</testsuites>");
    x
}

/// The matrix's index page: one row per scenario, linking its run's report.
pub fn index_html(rows: &[Row], profile: &str, dir: &Path, must_find: &[String]) -> String {
    let failed = rows.iter().filter(|r| !r.judgement.pass).count();
    let mut h = String::new();
    let _ = write!(
        h,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>Gauntlet matrix ({profile})</title>
<style>
body{{font-family:system-ui,sans-serif;margin:2em;color:#222}}
table{{border-collapse:collapse}} td,th{{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}}
.pass{{background:#e6f4ea}} .fail{{background:#fde7e9;font-weight:bold}}
</style></head><body>
<h1>Gauntlet matrix, profile <code>{profile}</code></h1>
<p>{} of {} scenario(s) showed what they declare{}.</p>
<table><tr><th>scenario</th><th>broker</th><th>faults</th><th>declared</th><th>verdict</th><th>result</th><th>time</th><th>why</th><th>report</th></tr>
"#,
        rows.len() - failed,
        rows.len(),
        if failed == 0 {
            ""
        } else {
            "; see the failed rows"
        },
        profile = escape::html(profile),
    );
    for (r, m) in rows.iter().zip(must_find) {
        let link = r
            .dir
            .as_ref()
            .and_then(|d| d.strip_prefix(dir).ok())
            .map(|rel| {
                let rel = rel.join(gauntlet_report::folder::REPORT);
                format!(
                    r#"<a href="{}">report</a>"#,
                    escape::html(&rel.to_string_lossy())
                )
            })
            .unwrap_or_default();
        let _ = writeln!(
            h,
            r#"<tr class="{}"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0} s</td><td>{}<br><small>{}</small></td><td>{link}</td></tr>"#,
            if r.judgement.pass { "pass" } else { "fail" },
            escape::html(&r.name),
            escape::html(r.broker.name()),
            escape::html(&faults_text(&r.faults)),
            escape::html(&expected_text(r, m)),
            verdict_text(r),
            if r.judgement.pass { "pass" } else { "FAIL" },
            r.seconds,
            escape::html(&r.judgement.why),
            escape::html(&r.why_listed),
        );
    }
    h.push_str("</table></body></html>\n");
    h
}
