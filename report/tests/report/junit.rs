//! JUnit: a test case per guarantee and per anomaly type; failures only for what the run claims.
use crate::common;
use gauntlet_checkers::{CheckOptions, Guarantee};

#[test]
fn d5_fails_at_least_once_and_lost_only() {
    let (_, v) = common::d5();
    let xml = gauntlet_report::junit::junit_xml(&v, "d5");
    assert_eq!(xml.matches("<testcase ").count(), 7 + 20);
    assert!(xml.contains("tests=\"27\" failures=\"2\" errors=\"0\" skipped=\"0\""));
    assert!(xml.contains("<testcase classname=\"gauntlet.guarantee\" name=\"at-least-once\" time=\"0\">\n      <failure message=\"at-least-once is violated\" type=\"violated\">lost: 200 messages"));
    assert!(xml.contains("<testcase classname=\"gauntlet.anomaly\" name=\"lost\" time=\"0\">\n      <failure message=\"200 messages lost (breaks at-least-once)\""));
    // Not claimed: passes, with the status said.
    assert!(xml.contains(
        "name=\"total-order\" time=\"0\">\n      <system-out>not claimed: violated</system-out>"
    ));
}

#[test]
fn unknown_claims_are_skipped_and_integrity_fails() {
    let (h, _) = common::hostile();
    let v = gauntlet_checkers::check(
        &h,
        &CheckOptions {
            expect: vec![Guarantee::AtMostOnce],
            ..CheckOptions::default()
        },
    );
    let xml = gauntlet_report::junit::junit_xml(&v, "hostile");
    // `unexpected` (value 99) fails whatever is claimed; `lost` is not claimed.
    assert!(xml.contains("name=\"unexpected\" time=\"0\">\n      <failure"));
    assert!(xml.contains("name=\"lost\" time=\"0\">\n      <system-out>"));
    // A history with no drained marker: at-least-once claimed and unknown is skipped.
    let text = common::hostile_jsonl().replace("\"drained\"", "\"drain\"");
    let h = gauntlet_history::read_bytes("x", text.as_bytes()).unwrap();
    let v = gauntlet_checkers::check(&h, &CheckOptions::default());
    let xml = gauntlet_report::junit::junit_xml(&v, "x");
    assert!(xml.contains(
        "name=\"at-least-once\" time=\"0\">\n      <skipped message=\"at-least-once is unknown"
    ));
}
