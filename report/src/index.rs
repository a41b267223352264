//! The index of runs under a results folder (`results/<scenario>/<timestamp>/`),
//! as `gauntlet serve` shows it.
use crate::escape::{cut, html as esc};
use crate::folder;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Files of a run folder the index links to, in this order.
pub const RUN_FILES: [&str; 5] = [
    folder::REPORT,
    folder::VERDICT,
    folder::JUNIT,
    folder::HISTORY,
    folder::SCENARIO,
];

/// Runs listed at most.
pub const MAX_RUNS: usize = 2000;

/// One run folder found under the results folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunEntry {
    /// The scenario folder's name (the run folder's own name for a run directly under the root).
    pub scenario: String,
    /// The run folder's name (its timestamp), or "" for a run folder directly under the root.
    pub timestamp: String,
    /// Path below the root, `/`-separated.
    pub rel: String,
    /// `valid` of verdict.json: "valid", "invalid", "unknown", or None without a readable verdict.
    pub verdict: Option<String>,
    /// Anomaly types with a count above zero.
    pub anomalies: Vec<(String, u64)>,
    /// Which of [`RUN_FILES`] the run folder holds, in that order.
    pub files: Vec<&'static str>,
}

fn is_run(dir: &Path) -> bool {
    dir.join(folder::HISTORY).is_file() || dir.join(folder::VERDICT).is_file()
}

fn real_dirs(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(String, PathBuf)> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false)) // symlinks are not dirs here
        .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
        .filter(|(n, _)| !n.starts_with('.'))
        .collect();
    out.sort();
    out
}

fn entry(scenario: &str, timestamp: &str, rel: String, dir: &Path) -> RunEntry {
    let (mut verdict, mut anomalies) = (None, Vec::new());
    if let Ok(bytes) = std::fs::read(dir.join(folder::VERDICT)) {
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&bytes) {
            verdict = match v.get("valid") {
                Some(serde_json::Value::Bool(true)) => Some("valid".to_string()),
                Some(serde_json::Value::Bool(false)) => Some("invalid".to_string()),
                Some(serde_json::Value::String(s)) => Some(s.clone()),
                _ => None,
            };
            if let Some(m) = v.get("anomalies").and_then(|a| a.as_object()) {
                for (k, a) in m {
                    let n = a.get("count").and_then(|c| c.as_u64()).unwrap_or(0);
                    if n > 0 {
                        anomalies.push((k.clone(), n));
                    }
                }
            }
        }
    }
    RunEntry {
        scenario: scenario.to_string(),
        timestamp: timestamp.to_string(),
        rel,
        verdict,
        anomalies,
        files: RUN_FILES
            .iter()
            .copied()
            .filter(|f| dir.join(f).is_file())
            .collect(),
    }
}

/// Finds run folders: `root/<scenario>/<timestamp>/` and `root/<name>/`, holding a
/// history.jsonl or a verdict.json. Symlinks (such as `latest`) are not followed.
/// Newest timestamp first.
pub fn scan(root: &Path) -> Vec<RunEntry> {
    let mut runs = Vec::new();
    for (name, dir) in real_dirs(root) {
        if is_run(&dir) {
            runs.push(entry(&name, "", name.clone(), &dir));
            continue;
        }
        for (ts, sub) in real_dirs(&dir) {
            if is_run(&sub) {
                runs.push(entry(&name, &ts, format!("{name}/{ts}"), &sub));
            }
        }
    }
    runs.sort_by(|a, b| {
        b.timestamp
            .cmp(&a.timestamp)
            .then_with(|| a.scenario.cmp(&b.scenario))
    });
    runs
}

/// Percent-encodes a `/`-separated path for a URL.
pub fn url_path(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    for b in p.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The index page.
pub fn index_html(runs: &[RunEntry], root_name: &str) -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Gauntlet results</title>\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
         <style>body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1f2328}table{border-collapse:collapse}\
         th,td{border:1px solid #d0d7de;padding:4px 10px;text-align:left}th{background:#f6f8fa}\
         .valid{color:#1a7f37;font-weight:600}.invalid{color:#cf222e;font-weight:700}.unknown{color:#9a6700;font-weight:600}\
         .tag{display:inline-block;font-size:12px;padding:0 6px;border-radius:10px;border:1px solid #d0d7de;margin:1px 2px}\
         a{color:#0969da;margin-right:8px}</style></head><body>",
    );
    let _ = write!(
        out,
        "<h1>Gauntlet results</h1><p>{} run(s) under <code>{}</code>.</p>",
        runs.len(),
        esc(&cut(root_name, 200))
    );
    out.push_str("<table id=\"runs\"><tr><th>scenario</th><th>time</th><th>verdict</th><th>anomalies</th><th>files</th></tr>");
    for r in runs.iter().take(MAX_RUNS) {
        let verdict = r.verdict.as_deref().unwrap_or("no verdict");
        let cls = match verdict {
            "valid" | "invalid" | "unknown" => verdict,
            _ => "",
        };
        let mut an = String::new();
        for (k, n) in &r.anomalies {
            let _ = write!(an, "<span class=\"tag\">{} {n}</span>", esc(&cut(k, 40)));
        }
        let mut links = String::new();
        for f in &r.files {
            let _ = write!(links, "<a href=\"/{}/{f}\">{f}</a>", esc(&url_path(&r.rel)));
        }
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"{cls}\">{}</td><td>{an}</td><td>{links}</td></tr>",
            esc(&cut(&r.scenario, 120)),
            esc(&cut(&r.timestamp, 60)),
            esc(verdict)
        );
    }
    out.push_str("</table>");
    if runs.len() > MAX_RUNS {
        let _ = write!(out, "<p>{} more not shown.</p>", runs.len() - MAX_RUNS);
    }
    out.push_str("</body></html>\n");
    out
}
