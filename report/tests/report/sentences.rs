//! Every example the checkers make, of the examples and the Jepsen suite, reads
//! as a sentence with no placeholder left in it.
use crate::common;
use gauntlet_checkers::verdict::Example;
use gauntlet_checkers::{CheckOptions, Verdict};
use gauntlet_report::sentence::sentence;

#[test]
fn every_example_of_the_examples_and_the_suite_reads_as_a_sentence() {
    let mut files = Vec::new();
    for dir in ["examples", "checkers/tests/conformance/jepsen-kafka"] {
        for e in std::fs::read_dir(common::repo().join(dir)).expect("folder") {
            let p = e.expect("entry").path();
            if matches!(
                p.extension().and_then(|x| x.to_str()),
                Some("edn" | "jsonl")
            ) {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut kinds = std::collections::BTreeSet::new();
    for p in &files {
        let h = gauntlet_history::read_path(p).expect("history");
        let v = gauntlet_checkers::check(&h, &CheckOptions::default());
        // As `gauntlet report` reads it: from verdict.json.
        let v: Verdict = serde_json::from_str(&gauntlet_report::verdict_json(&v)).expect("verdict");
        for (k, a) in &v.anomalies {
            for e in &a.examples {
                assert!(!matches!(e, Example::Untyped(_)), "{k}: {}", e.to_json());
                let s = sentence(*k, e);
                println!("{k}: {s}");
                assert!(
                    !s.contains('?') && !s.contains("unknown partition") && !s.contains("none"),
                    "{}: {k}: {s}",
                    p.display()
                );
                kinds.insert(k.name());
            }
        }
    }
    assert!(kinds.len() >= 20, "{kinds:?}");
}
