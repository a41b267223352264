//! JUnit XML for CI: one `<testsuite name="gauntlet">` with a test case per
//! guarantee and one per anomaly type.
//!
//! * Guarantee `G` (class `gauntlet.guarantee`): a **failure** when the run
//!   claims `G` and it is violated; **skipped** when the run claims `G` and it
//!   is unknown (not enough information: the verdict is `unknown`, exit code 2);
//!   otherwise it passes. A guarantee the run does not claim always passes, with
//!   its status in `<system-out>` ("not claimed: violated"), so CI fails only on
//!   what the run promised.
//! * Anomaly `A` (class `gauntlet.anomaly`): a **failure** when its count is
//!   above zero and it is an integrity anomaly ([`AnomalyKind::is_integrity`])
//!   or breaks a claimed guarantee ([`breaks`]); otherwise it passes, with the
//!   count in `<system-out>` when above zero. Failures carry the first examples.
use crate::escape::{cut, xml};
use gauntlet_checkers::{breaks, AnomalyKind, Status, Verdict};
use std::fmt::Write;

/// Examples put in one failure, at most.
pub const FAILURE_EXAMPLES: usize = 3;

enum Outcome {
    Pass(Option<String>),
    Fail { message: String, body: String },
    Skip(String),
}

fn examples(v: &Verdict, kinds: &[AnomalyKind]) -> String {
    let mut body = String::new();
    for &k in kinds {
        let Some(a) = v.anomalies.get(&k).filter(|a| a.count > 0) else {
            continue;
        };
        let _ = writeln!(body, "{}: {} {}", k.name(), a.count, k.unit());
        for e in a.examples.iter().take(FAILURE_EXAMPLES) {
            let _ = writeln!(
                body,
                "  {}\n    {}",
                cut(&crate::sentence::sentence(k, e), 2000),
                cut(&e.to_json().to_string(), 2000)
            );
        }
        if a.count > FAILURE_EXAMPLES.min(a.examples.len()) as u64 {
            let _ = writeln!(
                body,
                "  ... {} more",
                a.count - FAILURE_EXAMPLES.min(a.examples.len()) as u64
            );
        }
    }
    body
}

/// Renders the verdict as JUnit XML; `name` names the run or file (in `<properties>`).
pub fn junit_xml(v: &Verdict, name: &str) -> String {
    let mut cases: Vec<(&str, &str, Outcome)> = Vec::new();
    for g in v.guarantee_list() {
        let claimed = v.expected.contains(&g);
        let st = v.status(g);
        let o = match (claimed, st) {
            (true, Status::Violated) => Outcome::Fail {
                message: format!("{g} is violated"),
                body: examples(v, breaks(g)),
            },
            (true, Status::Unknown) => Outcome::Skip(format!(
                "{g} is unknown: not enough information (no drained marker, no offsets or nothing delivered)"
            )),
            (true, Status::Holds) => Outcome::Pass(None),
            (false, st) => Outcome::Pass(Some(format!("not claimed: {}", st.name()))),
        };
        cases.push(("gauntlet.guarantee", g.name(), o));
    }
    for k in v.kinds() {
        let count = v.count(k);
        let claimed_broken: Vec<&str> = v
            .expected
            .iter()
            .filter(|g| breaks(**g).contains(&k))
            .map(|g| g.name())
            .collect();
        let o = if count > 0 && (k.is_integrity() || !claimed_broken.is_empty()) {
            let why = if k.is_integrity() {
                "an integrity anomaly".to_string()
            } else {
                format!("breaks {}", claimed_broken.join(", "))
            };
            Outcome::Fail {
                message: format!("{count} {} {} ({why})", k.unit(), k.name()),
                body: examples(v, &[k]),
            }
        } else if count > 0 {
            Outcome::Pass(Some(format!(
                "{count} {} (allowed by the claimed guarantees)",
                k.unit()
            )))
        } else {
            Outcome::Pass(None)
        };
        cases.push(("gauntlet.anomaly", k.name(), o));
    }
    let failures = cases
        .iter()
        .filter(|c| matches!(c.2, Outcome::Fail { .. }))
        .count();
    let skipped = cases
        .iter()
        .filter(|c| matches!(c.2, Outcome::Skip(_)))
        .count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"gauntlet\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">",
        cases.len()
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"gauntlet\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{:.3}\">",
        cases.len(),
        v.stats.duration_ns as f64 / 1e9
    );
    let expected: Vec<&str> = v.expected.iter().map(|g| g.name()).collect();
    let _ = writeln!(
        out,
        "    <properties>\n      <property name=\"run\" value=\"{}\"/>\n      <property name=\"valid\" value=\"{}\"/>\n      <property name=\"expected\" value=\"{}\"/>\n    </properties>",
        xml(&cut(name, 300)),
        v.valid.name(),
        expected.join(",")
    );
    for (class, name, o) in &cases {
        let _ = write!(
            out,
            "    <testcase classname=\"{class}\" name=\"{name}\" time=\"0\""
        );
        match o {
            Outcome::Pass(None) => out.push_str("/>\n"),
            Outcome::Pass(Some(note)) => {
                let _ = writeln!(
                    out,
                    ">\n      <system-out>{}</system-out>\n    </testcase>",
                    xml(note)
                );
            }
            Outcome::Skip(msg) => {
                let _ = writeln!(
                    out,
                    ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                    xml(msg)
                );
            }
            Outcome::Fail { message, body } => {
                let _ =
                    writeln!(
                    out,
                    ">\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>",
                    xml(message),
                    if *class == "gauntlet.guarantee" { "violated" } else { "anomaly" },
                    xml(body)
                );
            }
        }
    }
    if !v.warnings.is_empty() {
        out.push_str("    <system-err>");
        for w in v.warnings.iter().take(50) {
            let _ = writeln!(out, "warning: {}", xml(&cut(w, 500)));
        }
        out.push_str("</system-err>\n");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}
