//! The reader on whole files: contract checks with file:line, cut-off last lines, the writer round trip.
use gauntlet_history::{
    read_bytes, Actor, Event, HistoryError, HistoryWriter, OpType, Outcome, Problem,
};
use serde_json::json;

fn problem(text: &str) -> (u64, Problem) {
    match read_bytes("h.jsonl", text.as_bytes()) {
        Err(HistoryError::Line { line, problem, .. }) => (line, problem),
        other => panic!("expected a line error, got {other:?}"),
    }
}

const SEND: &str =
    r#"{"index":0,"time":0,"process":0,"type":"invoke","f":"send","value":{"key":"k","value":1}}"#;

#[test]
fn errors_name_the_line_and_what_is_wrong() {
    let (line, p) = problem(&format!(
        "{SEND}\n{{\"index\":0,\"time\":5,\"process\":0,\"type\":\"ok\",\"f\":\"send\"}}\n"
    ));
    assert_eq!(line, 2);
    assert_eq!(
        p,
        Problem::IndexNotIncreasing {
            index: 0,
            previous: 0
        }
    );

    let (line, p) = problem(
        "{\"index\":0,\"time\":0,\"process\":3,\"type\":\"ok\",\"f\":\"poll\",\"value\":[]}\n",
    );
    assert_eq!(line, 1);
    assert!(
        matches!(p, Problem::CompletionWithoutInvoke { process: 3, .. }),
        "{p}"
    );

    let (line, p) = problem(&format!(
        "{SEND}\n{{\"index\":1,\"time\":1,\"process\":0,\"type\":\"invoke\",\"f\":\"poll\"}}\n"
    ));
    assert_eq!(line, 2);
    assert!(
        matches!(
            p,
            Problem::InvokeWhilePending {
                process: 0,
                pending_line: 1,
                ..
            }
        ),
        "{p}"
    );

    let (line, p) = problem(&format!(
        "\n\n{SEND}\n{{\"index\":1,\"time\":1,\"process\":0,\"type\":\"ok\",\"f\":\"send\"\n"
    ));
    assert_eq!(line, 4);
    assert!(matches!(p, Problem::Json { .. }), "{p}");

    let (_, p) = problem(&format!("{SEND}\n{{\"index\":1,\"time\":1,\"process\":0,\"type\":\"ok\",\"f\":\"poll\",\"value\":[]}}\n"));
    assert!(matches!(p, Problem::CompletionMismatch { .. }), "{p}");

    let (_, p) = problem(&format!(
        "{SEND}\n{}\n",
        SEND.replace(
            "\"index\":0,\"time\":0,\"process\":0",
            "\"index\":1,\"time\":0,\"process\":1"
        )
    ));
    assert_eq!(
        p,
        Problem::ValueSentTwice {
            value: 1,
            first_index: 0
        }
    );

    let (_, p) = problem(&format!(
        "{SEND}\n{}\n",
        r#"{"index":1,"time":-1,"process":1,"type":"invoke","f":"poll"}"#
    ));
    assert!(matches!(p, Problem::BadField { field: "time", .. }), "{p}");

    let err = read_bytes("dir/h.jsonl", b"{\"index\":0}\n").unwrap_err();
    assert_eq!(err.to_string(), "dir/h.jsonl:1: missing field `time`");
}

#[test]
fn a_cut_off_last_line_is_left_out_with_a_warning() {
    let text = format!("{SEND}\n{{\"index\":1,\"time\":1,\"process\":0,\"ty");
    let h = read_bytes("h.jsonl", text.as_bytes()).unwrap();
    assert_eq!(h.sends.len(), 1);
    assert_eq!(h.sends[0].outcome, Outcome::Info);
    assert_eq!(h.warnings.len(), 1);
    assert!(
        h.warnings[0].starts_with("h.jsonl:2: last line is cut off"),
        "{}",
        h.warnings[0]
    );
}

#[test]
fn writer_output_reads_back() {
    let mut w = HistoryWriter::new(Vec::new());
    w.append(
        &Event::new(Actor::Client(0), OpType::Invoke, "send")
            .value(json!({"key":"k\"1","value":1})),
    )
    .unwrap();
    w.append(
        &Event::new(Actor::Client(0), OpType::Ok, "send")
            .value(json!({"key":"k\"1","value":1,"partition":0,"offset":5})),
    )
    .unwrap();
    w.append(&Event::new(Actor::Nemesis, OpType::Info, "kill").value(json!({"node":"n1"})))
        .unwrap();
    w.append(&Event::new(Actor::Client(1), OpType::Invoke, "poll").group("g"))
        .unwrap();
    w.append(
        &Event::new(Actor::Client(1), OpType::Ok, "poll")
            .group("g")
            .value(json!([{"key":"k\"1","value":1,"partition":0,"offset":5}])),
    )
    .unwrap();
    w.append(
        &Event::new(Actor::Client(2), OpType::Invoke, "send").value(json!({"key":"k","value":2})),
    )
    .unwrap();
    w.append(&Event::new(Actor::Client(2), OpType::Info, "send").error("timed out"))
        .unwrap();
    w.append(&Event::new(Actor::Harness, OpType::Info, "phase").value(json!("drained")))
        .unwrap();
    let bytes = w.into_inner();
    let h = read_bytes("w.jsonl", &bytes).unwrap();
    assert_eq!(h.counts.ops, 8);
    assert_eq!(h.sends.len(), 2);
    assert_eq!(h.sends[0].outcome, Outcome::Ok);
    assert_eq!(h.sends[0].offset, 5);
    assert_eq!(h.sends[1].outcome, Outcome::Info);
    assert_eq!(h.key_name(h.sends[0].key), "k\"1");
    assert_eq!(h.deliveries.len(), 1);
    assert_eq!(h.group_name(h.polls[0].group), "g");
    assert_eq!(h.nemesis.len(), 1);
    assert_eq!(h.drained, Some(7));
}

#[test]
fn the_drained_marker_carries_how_the_drain_ended_through_the_writer() {
    use gauntlet_history::{DrainEnd, DrainEnded, MissingSource};
    let end = DrainEnd::with_missing(vec![MissingSource {
        group: "g1".into(),
        what: "stream gauntlet".into(),
        answer: "stream not found".into(),
        first_answer: 1,
        confirmed: 2,
    }]);
    let mut w = HistoryWriter::new(Vec::new());
    let mut marker = Event::new(Actor::Harness, OpType::Info, "phase").value(json!("drained"));
    marker.drain = Some(end.to_json());
    w.append(&Event::new(Actor::Harness, OpType::Info, "phase").value(json!("drain")))
        .expect("write");
    w.append(&marker).expect("write");
    let text = String::from_utf8(w.into_inner()).expect("utf-8");
    assert!(
        text.contains(r#""value":"drained","drain":{"ended":"missing""#),
        "{text}"
    );
    let h = read_bytes("h.jsonl", text.as_bytes()).expect("reads");
    assert_eq!(h.drained, Some(1));
    assert_eq!(
        h.drain_end.as_ref().map(|e| e.ended),
        Some(DrainEnded::Missing)
    );
    assert_eq!(h.drain_end, Some(end));
    // A `drain` field anywhere but on the harness's events is not read.
    let client = r#"{"index":0,"time":0,"process":0,"type":"invoke","f":"send","value":{"key":"k","value":1},"drain":7}"#;
    assert!(read_bytes("h.jsonl", format!("{client}\n").as_bytes()).is_ok());
    // On the marker, a field that is not a drain ending is refused with its line.
    let bad = r#"{"index":0,"time":0,"process":"harness","type":"info","f":"phase","value":"drained","drain":{"ended":7}}"#;
    let (line, p) = problem(&format!("{bad}\n"));
    assert_eq!(line, 1);
    assert!(p.to_string().contains("drain"), "{p}");
}
