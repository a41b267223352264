//! Run folders: `write_run_reports` and `gauntlet report RUN_DIR`'s re-render.
use crate::common;
use gauntlet_checkers::Guarantee;

#[test]
fn writes_and_rerenders_a_run_folder() {
    let base = common::tmp("run-dir");
    let run = base.join("d5-commit").join("20261202T101500Z");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::copy(
        common::repo().join("examples/d5-commit-before-processing.jsonl"),
        run.join("history.jsonl"),
    )
    .unwrap();
    std::fs::write(
        run.join("scenario.toml"),
        "name = \"d5-commit\"\n[delivery]\nmode = \"at-least-once\"\n",
    )
    .unwrap();
    // No verdict.json yet: checked (against at-least-once) and written.
    let done = gauntlet_report::rerender_run(&run, false, None, None).unwrap();
    assert!(done.rechecked);
    let page = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(page.contains("<h1>d5-commit / 20261202T101500Z</h1>"));
    assert!(page.contains("<td>at-least-once (this run)</td>"));
    assert!(std::fs::read_to_string(run.join("junit.xml"))
        .unwrap()
        .contains("failures=\"2\""));
    // With a verdict.json claiming more, it is used as is.
    let (h, _) = common::d5();
    let v = gauntlet_checkers::check(
        &h,
        &gauntlet_checkers::CheckOptions {
            expect: vec![Guarantee::AtLeastOnce, Guarantee::TotalOrder],
            ..Default::default()
        },
    );
    std::fs::write(run.join("verdict.json"), gauntlet_report::verdict_json(&v)).unwrap();
    let done = gauntlet_report::rerender_run(&run, false, None, None).unwrap();
    assert!(!done.rechecked);
    assert_eq!(done.verdict, v);
    // --recheck keeps the verdict's claims.
    let done = gauntlet_report::rerender_run(&run, true, None, None).unwrap();
    assert!(done.rechecked);
    assert_eq!(
        done.verdict.expected,
        vec![Guarantee::AtLeastOnce, Guarantee::TotalOrder]
    );
    // A folder without a history is an error, not a panic.
    let err = gauntlet_report::rerender_run(&base, false, None, None).unwrap_err();
    assert!(err.to_string().contains("no history.jsonl"), "{err}");
}

#[test]
fn an_older_verdict_with_examples_this_gauntlet_cannot_type_still_renders() {
    let run = common::tmp("old-verdict");
    std::fs::copy(
        common::repo().join("examples/d5-commit-before-processing.jsonl"),
        run.join("history.jsonl"),
    )
    .unwrap();
    let (_, v) = common::d5();
    // As another Gauntlet might have written it: a lost example with a field
    // this one does not know, the other examples as they are.
    let mut json: serde_json::Value =
        serde_json::from_str(&gauntlet_report::verdict_json(&v)).unwrap();
    json["anomalies"]["lost"]["examples"][0]["note"] = serde_json::json!("<older>");
    std::fs::write(run.join("verdict.json"), json.to_string()).unwrap();
    let done = gauntlet_report::rerender_run(&run, false, None, None).unwrap();
    assert!(!done.rechecked);
    let lost = &done.verdict.anomalies[&gauntlet_checkers::AnomalyKind::Lost].examples;
    assert!(matches!(
        lost[0],
        gauntlet_checkers::verdict::Example::Untyped(_)
    ));
    assert!(matches!(
        lost[1],
        gauntlet_checkers::verdict::Example::Missing(_)
    ));
    let page = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(page.contains("an example this report cannot put in words (from the verdict of another Gauntlet): see its record"), "no fallback sentence");
    assert!(
        page.contains("&quot;note&quot;: &quot;&lt;older&gt;&quot;"),
        "its record is shown"
    );
    assert!(
        page.contains(
            "message 205 of key k0 (sent at op 408, ok at op 409) was never delivered to group g1"
        ),
        "the typed ones keep their sentence"
    );
}
