//! The terminal summary: the verdict per guarantee and the count per anomaly.
use gauntlet_checkers::{Status, Verdict};
use std::fmt::Write;
use tabled::builder::Builder;
use tabled::settings::Style;

fn mark(s: Status) -> &'static str {
    match s {
        Status::Holds => "holds",
        Status::Violated => "VIOLATED",
        Status::Unknown => "unknown",
    }
}

/// A readable summary for a terminal; `source` names the history.
pub fn summary(v: &Verdict, source: &str) -> String {
    let mut out = String::new();
    let s = &v.stats;
    let _ = writeln!(
        out,
        "{source}: {} ops, {} sends ({} ok, {} fail, {} info), {} deliveries, {} group(s), {}",
        s.ops,
        s.sends,
        s.sends_ok,
        s.sends_fail,
        s.sends_info,
        s.delivered,
        s.groups,
        if s.drained {
            "drained"
        } else {
            "no drained marker"
        }
    );
    let mut g = Builder::default();
    g.push_record(["guarantee", "expected", "verdict"]);
    for guarantee in v.guarantee_list() {
        let expected = if v.expected.contains(&guarantee) {
            "yes"
        } else {
            ""
        };
        g.push_record([guarantee.name(), expected, mark(v.status(guarantee))]);
    }
    let mut a = Builder::default();
    a.push_record(["anomaly", "count", "unit", "first example (ops by index)"]);
    for kind in v.kinds() {
        let an = v.anomalies.get(&kind);
        let count = an.map_or(0, |x| x.count);
        let example = an
            .and_then(|x| x.examples.first())
            .map(|e| {
                let t = crate::sentence::sentence(kind, e);
                if t.chars().count() > 90 {
                    let cut: String = t.chars().take(87).collect();
                    format!("{cut}...")
                } else {
                    t
                }
            })
            .unwrap_or_default();
        let label = if kind.is_informational() {
            format!("{kind} (info)")
        } else {
            kind.name().to_string()
        };
        a.push_record([label, count.to_string(), kind.unit().to_string(), example]);
    }
    let _ = writeln!(out, "{}", g.build().with(Style::sharp()));
    let _ = writeln!(out, "{}", a.build().with(Style::sharp()));
    if let Some(l) = &s.send_latency_ns {
        let _ = writeln!(
            out,
            "send latency: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; {:.0} ok sends/s",
            l.p50 as f64 / 1e6,
            l.p99 as f64 / 1e6,
            l.max as f64 / 1e6,
            s.sends_ok_per_s
        );
    }
    if let Some(f) = &s.flow {
        for (what, rows) in [("key", &f.keys), ("partition", &f.partitions)] {
            if rows.len() < 2 {
                continue;
            }
            let row = |r: &gauntlet_checkers::FlowRow| {
                format!(
                    "{what} {} {:.1}% of sends, lag p99 {}",
                    r.name,
                    r.share * 100.0,
                    r.lag_ns
                        .map_or("-".to_string(), |l| format!("{:.2} ms", l.p99 as f64 / 1e6))
                )
            };
            let _ = writeln!(
                out,
                "hottest {}; coolest listed {}",
                row(&rows[0]),
                row(&rows[rows.len() - 1])
            );
        }
    }
    for w in &v.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    let expected: Vec<&str> = v.expected.iter().map(|g| g.name()).collect();
    let _ = writeln!(
        out,
        "verdict: {} (judged against {})",
        v.valid.name().to_uppercase(),
        if expected.is_empty() {
            "no guarantee".to_string()
        } else {
            expected.join(", ")
        }
    );
    out
}
