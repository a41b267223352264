//! Jepsen's own Kafka checker tests as a conformance suite: every micro-history
//! of `tests/conformance/jepsen-kafka/` (a copy of the project's `../shared/conformance/jepsen-kafka/`, one per test of
//! `jepsen/test/jepsen/tests/kafka_test.clj`) is read and checked, and its
//! verdict must hold exactly the anomaly counts below: what Jepsen's test
//! asserts, in Gauntlet's names (`lost` for lost-write, `aborted-read` for G1a,
//! `duplicate-write` for duplicate), nothing the test rules out, and the extras
//! Gauntlet reports on purpose (each one argued in `docs/checkers.md`,
//! "Jepsen's Kafka tests"). Values: key `k`, value `v` read as `k * 1e9 + v`.
use gauntlet_checkers::{check, AnomalyKind, CheckOptions, Validity, Verdict};
use gauntlet_history::read_path;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One case: its file name (without `.edn`), every anomaly with a count above
/// zero (all the others must be zero), and `valid` against at-least-once.
type Case = (&'static str, &'static [(&'static str, u64)], Validity);

/// What each case must report.
const CASES: &[Case] = {
    use Validity::{False as F, True as T, Unknown as U};
    &[
        // Jepsen: no inconsistent-offsets (the info send is not proven written).
        ("inconsistent-offsets-info", &[("unseen", 1)], U),
        // Jepsen: inconsistent-offsets x@0 {1,2}: the read of y proves the info send.
        (
            "inconsistent-offsets-info+poll",
            &[("inconsistent-offsets", 1), ("unseen", 2), ("recovered", 1)],
            F,
        ),
        // Jepsen: G1a x=2.
        ("g1a", &[("aborted-read", 1)], F),
        // Jepsen: lost-write a, b (c read at offset 2; d at 3 is only unseen).
        (
            "lost-write-consistent",
            &[
                ("lost", 2),
                ("unseen", 1),
                ("recovered", 1),
                ("G0", 1),
                ("G0-realtime", 1),
                ("int-send-skip", 1),
            ],
            F,
        ),
        // Jepsen: lost-write a.
        (
            "lost-write-inconsistent",
            &[("lost", 1), ("gap", 1), ("inconsistent-offsets", 1)],
            F,
        ),
        // Jepsen: none (nothing proves the info send written).
        ("lost-write-atomic-without-poll-a", &[("recovered", 1)], T),
        // Jepsen: lost-write y=b (the read of a proves its send committed).
        (
            "lost-write-atomic-with-poll-a",
            &[("lost", 1), ("recovered", 2)],
            F,
        ),
        // Jepsen: poll-skip 2 (c; f). f, acked at 6, is a lost write too.
        (
            "poll-skip",
            &[
                ("poll-skip", 2),
                ("lost", 1),
                ("recovered", 5),
                ("G0", 1),
                ("G0-realtime", 1),
                ("int-send-skip", 1),
            ],
            F,
        ),
        // Jepsen: none (subscribe and assign of y only).
        (
            "poll-skip-sub-y",
            &[
                ("lost", 1),
                ("recovered", 5),
                ("G0", 1),
                ("G0-realtime", 1),
                ("int-send-skip", 1),
            ],
            F,
        ),
        // Jepsen: poll-skip 2 (subscribe and assign of x and y keep the place).
        (
            "poll-skip-sub-xy",
            &[
                ("poll-skip", 2),
                ("lost", 1),
                ("recovered", 5),
                ("G0", 1),
                ("G0-realtime", 1),
                ("int-send-skip", 1),
            ],
            F,
        ),
        // Jepsen: no errors at all.
        ("txn-abort-good", &[], T),
        // Jepsen: poll-skip 2 (delta 3 [1 2]; delta 5 [1..4]); 1..4 are lost writes.
        (
            "txn-abort-doesnt-roll-back",
            &[("poll-skip", 2), ("lost", 4), ("gap", 1)],
            F,
        ),
        // Jepsen: poll-skip 1 (delta 3 [1 2]).
        (
            "txn-info-can-be-poll-skip",
            &[("poll-skip", 1), ("unseen", 5)],
            U,
        ),
        // Jepsen: nonmonotonic-poll 1 (c -> b, -1).
        (
            "nonmonotonic-poll",
            &[
                ("nonmonotonic-poll", 1),
                ("redelivered", 2),
                ("partition-order", 1),
            ],
            T,
        ),
        // Jepsen: none.
        ("nonmonotonic-poll-sub-y", &[("redelivered", 2)], T),
        ("nonmonotonic-poll-assign-y", &[("redelivered", 2)], T),
        // Jepsen: nonmonotonic-poll 1 (partition-order restarts after any reset).
        (
            "nonmonotonic-poll-sub-xy",
            &[("nonmonotonic-poll", 1), ("redelivered", 2)],
            T,
        ),
        (
            "nonmonotonic-poll-assign-xy",
            &[("nonmonotonic-poll", 1), ("redelivered", 2)],
            T,
        ),
        // Jepsen: nonmonotonic-send 1 (d -> a, -3).
        (
            "nonmonotonic-send",
            &[("nonmonotonic-send", 1), ("unseen", 4), ("G0-realtime", 1)],
            U,
        ),
        // Jepsen: none.
        (
            "nonmonotonic-send-sub-y",
            &[("unseen", 4), ("G0-realtime", 1)],
            U,
        ),
        (
            "nonmonotonic-send-assign-y",
            &[("unseen", 4), ("G0-realtime", 1)],
            U,
        ),
        // Jepsen: nonmonotonic-send 1.
        (
            "nonmonotonic-send-sub-xy",
            &[("nonmonotonic-send", 1), ("unseen", 4), ("G0-realtime", 1)],
            U,
        ),
        (
            "nonmonotonic-send-assign-xy",
            &[("nonmonotonic-send", 1), ("unseen", 4), ("G0-realtime", 1)],
            U,
        ),
        // Jepsen: int-poll-skip 2. Across ops the same polls go backwards.
        (
            "int-poll-skip",
            &[
                ("int-poll-skip", 2),
                ("nonmonotonic-poll", 2),
                ("recovered", 3),
                ("redelivered", 2),
                ("gap", 1),
                ("key-order", 1),
                ("producer-order", 1),
                ("partition-order", 1),
            ],
            T,
        ),
        // Jepsen: int-send-skip 1 (a, c skip b). a, acked at 1, is a lost write.
        (
            "int-send-skip",
            &[
                ("int-send-skip", 1),
                ("lost", 1),
                ("recovered", 1),
                ("gap", 1),
                ("key-order", 1),
                ("total-order", 1),
                ("G0", 1),
                ("G0-realtime", 1),
            ],
            F,
        ),
        // Jepsen: int-nonmonotonic-poll 2.
        (
            "int-nonmonotonic-poll",
            &[
                ("int-nonmonotonic-poll", 2),
                ("recovered", 3),
                ("redelivered", 1),
                ("gap", 1),
                ("key-order", 1),
                ("producer-order", 1),
                ("partition-order", 1),
            ],
            T,
        ),
        // Jepsen: int-nonmonotonic-send 2 (x -1, y -2).
        (
            "int-nonmonotonic-send",
            &[
                ("int-nonmonotonic-send", 2),
                ("unseen", 2),
                ("recovered", 3),
                ("gap", 1),
                ("key-order", 1),
                ("producer-order", 1),
                ("G0", 1),
            ],
            U,
        ),
        // Jepsen: duplicate a @1,3.
        (
            "duplicate-basic",
            &[
                ("duplicate-write", 1),
                ("recovered", 1),
                ("key-order", 1),
                ("total-order", 1),
            ],
            T,
        ),
        // Jepsen: duplicate x10, inconsistent-offsets 2.
        (
            "duplicate-hash-insensitive",
            &[
                ("duplicate-write", 10),
                ("inconsistent-offsets", 2),
                ("partition-order", 1),
            ],
            F,
        ),
        // Jepsen: duplicate value 0 @1,11 (11 read by a failed poll).
        (
            "duplicate-aborted-txns",
            &[("duplicate-write", 1), ("unseen", 1)],
            U,
        ),
        // Jepsen: G0 1.
        ("g0", &[("G0", 1), ("unseen", 4)], U),
        // Jepsen: G1c 1.
        ("g1c-pure-wr", &[("G1c", 1)], T),
        ("g1c-ww-wr", &[("G1c", 1), ("unseen", 2)], U),
        // Jepsen: precommitted-read 1.
        ("precommitted-read", &[("precommitted-read", 1)], T),
        // Jepsen: no unseen at the end.
        ("unseen", &[], T),
        // Jepsen: inconsistent-offsets k11@537 {641,645}.
        (
            "version-orders-real-world",
            &[("inconsistent-offsets", 1), ("unseen", 2)],
            F,
        ),
        // Jepsen: inconsistent-offsets x@1 {b,c}; b also stands at 3.
        (
            "version-orders-basic",
            &[
                ("inconsistent-offsets", 1),
                ("duplicate-write", 1),
                ("unexpected", 1),
                ("recovered", 1),
                ("unseen", 2),
                ("gap", 1),
                ("G1c-realtime", 1),
            ],
            F,
        ),
    ]
};

fn suite() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/jepsen-kafka")
}

fn verdict(case: &str) -> Verdict {
    let path = suite().join(format!("{case}.edn"));
    let h = read_path(&path).unwrap_or_else(|e| panic!("{e}"));
    check(&h, &CheckOptions::default())
}

fn counts(v: &Verdict) -> BTreeMap<String, u64> {
    v.anomalies
        .iter()
        .filter(|(_, a)| a.count > 0)
        .map(|(k, a)| (k.to_string(), a.count))
        .collect()
}

#[test]
fn every_case_of_the_suite_is_judged_here() {
    let dir = suite();
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; the conformance suite is vendored in checkers/tests/conformance",
            dir.display()
        )
    });
    let mut on_disk: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            name.strip_suffix(".edn").map(str::to_string)
        })
        .collect();
    on_disk.sort();
    let mut here: Vec<String> = CASES.iter().map(|c| c.0.to_string()).collect();
    here.sort();
    assert_eq!(on_disk, here);
}

#[test]
fn each_case_reports_what_jepsen_asserts_and_nothing_it_rules_out() {
    let mut wrong = Vec::new();
    for &(case, expected, valid) in CASES {
        let v = verdict(case);
        let want: BTreeMap<String, u64> =
            expected.iter().map(|&(k, n)| (k.to_string(), n)).collect();
        let got = counts(&v);
        if got != want || v.valid != valid {
            wrong.push(format!(
                "{case}: expected {want:?} (valid {valid:?}), got {got:?} (valid {:?})",
                v.valid
            ));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

fn examples(v: &Verdict, kind: AnomalyKind) -> Vec<serde_json::Value> {
    v.anomalies.get(&kind).map_or(Vec::new(), |a| {
        a.examples.iter().map(|e| e.to_json()).collect()
    })
}

#[test]
fn the_evidence_is_jepsens_too() {
    // poll-skip: skipped [c] then [f], each by 2.
    let v = verdict("poll-skip");
    let ex = examples(&v, AnomalyKind::PollSkip);
    assert_eq!(ex[0]["skipped"], json!([3]));
    assert_eq!(ex[1]["skipped"], json!([6]));
    assert!(ex.iter().all(|e| e["delta"] == json!(2)));
    // txn-abort-doesnt-roll-back: delta 3 [1 2], delta 5 [1 2 3 4].
    let v = verdict("txn-abort-doesnt-roll-back");
    let ex = examples(&v, AnomalyKind::PollSkip);
    assert_eq!(
        (ex[0]["delta"].clone(), ex[0]["skipped"].clone()),
        (json!(3), json!([1, 2]))
    );
    assert_eq!(
        (ex[1]["delta"].clone(), ex[1]["skipped"].clone()),
        (json!(5), json!([1, 2, 3, 4]))
    );
    // nonmonotonic-poll: c then b, -1; nonmonotonic-send: d then a, -3.
    let v = verdict("nonmonotonic-poll");
    let e = &examples(&v, AnomalyKind::NonmonotonicPoll)[0];
    assert_eq!(
        (e["values"].clone(), e["delta"].clone()),
        (json!([3, 2]), json!(-1))
    );
    let v = verdict("nonmonotonic-send");
    let e = &examples(&v, AnomalyKind::NonmonotonicSend)[0];
    assert_eq!(
        (e["values"].clone(), e["delta"].clone()),
        (json!([4, 1]), json!(-3))
    );
    // int-nonmonotonic-send: x c -> a, -1; y d -> b, -2.
    let v = verdict("int-nonmonotonic-send");
    let ex = examples(&v, AnomalyKind::IntNonmonotonicSend);
    let y = 1_000_000_000;
    assert_eq!(
        (ex[0]["values"].clone(), ex[0]["delta"].clone()),
        (json!([3, 1]), json!(-1))
    );
    assert_eq!(
        (ex[1]["values"].clone(), ex[1]["delta"].clone()),
        (json!([y + 4, y + 2]), json!(-2))
    );
    // Lost writes: a and b; a; y = b.
    let lost = |case: &str| -> Vec<serde_json::Value> {
        examples(&verdict(case), AnomalyKind::Lost)
            .iter()
            .map(|e| e["value"].clone())
            .collect()
    };
    assert_eq!(lost("lost-write-consistent"), vec![json!(1), json!(2)]);
    assert_eq!(lost("lost-write-inconsistent"), vec![json!(1)]);
    assert_eq!(lost("lost-write-atomic-with-poll-a"), vec![json!(y + 2)]);
    // Inconsistent offsets: x@0 {1, 2}; k11@537 {641, 645}.
    let v = verdict("inconsistent-offsets-info+poll");
    let e = &examples(&v, AnomalyKind::InconsistentOffsets)[0];
    assert_eq!(e["position"]["offset"], json!(0));
    let mut vals: Vec<i64> = serde_json::from_value(e["values"].clone()).unwrap_or_default();
    vals.sort_unstable();
    assert_eq!(vals, vec![1, 2]);
    // Duplicates: value 0 of the aborted-txns case, and a of the basic one.
    let dup = |case: &str| -> Vec<serde_json::Value> {
        examples(&verdict(case), AnomalyKind::DuplicateWrite)
            .iter()
            .map(|e| e["value"].clone())
            .collect()
    };
    assert_eq!(dup("duplicate-aborted-txns"), vec![json!(0)]);
    assert_eq!(dup("duplicate-basic"), vec![json!(1)]);
}

/// Every example the checkers keep, of the suite and of `examples/`, is typed
/// when its verdict is read back, and writes back the same bytes.
#[test]
fn every_example_reads_back_typed_and_writes_back_the_same() {
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in [
        suite(),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples"),
    ] {
        for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let p = e.expect("dir entry").path();
            if matches!(
                p.extension().and_then(|x| x.to_str()),
                Some("edn" | "jsonl")
            ) {
                files.push(p);
            }
        }
    }
    let mut typed = 0;
    for p in &files {
        let h = read_path(p).unwrap_or_else(|e| panic!("{e}"));
        let v = check(&h, &CheckOptions::default());
        let text = serde_json::to_string_pretty(&v).expect("json");
        let back: Verdict = serde_json::from_str(&text).expect("read back");
        for (k, a) in &back.anomalies {
            for e in &a.examples {
                assert!(
                    !matches!(e, gauntlet_checkers::verdict::Example::Untyped(_)),
                    "{}: an example of {k} was not typed: {}",
                    p.display(),
                    e.to_json()
                );
                typed += 1;
            }
        }
        // The anomalies only: a float of the stats may read back one ulp off.
        assert_eq!(back.anomalies, v.anomalies, "{}", p.display());
        assert_eq!(
            serde_json::to_string_pretty(&back.anomalies).expect("json"),
            serde_json::to_string_pretty(&v.anomalies).expect("json"),
            "{}",
            p.display()
        );
    }
    assert!(
        files.len() >= 39 && typed >= 200,
        "{} files, {typed} examples",
        files.len()
    );
}
