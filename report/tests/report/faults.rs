//! Faults drawn as they were: an instant fault is a mark, a healed fault an
//! interval from start to heal, and one still open at the end says so in words.
use gauntlet_checkers::CheckOptions;
use gauntlet_report::html::{render, HtmlOptions};

/// A history with a consumer kill (an instant), a broker kill healed by its
/// start and a partition nothing healed; one send and its delivery around them.
fn page(instant_flag: bool) -> String {
    let flag = if instant_flag {
        r#","instant":true"#
    } else {
        ""
    };
    let s = 1_000_000_000u64;
    let lines = [
        r#"{"index":0,"time":0,"process":0,"type":"invoke","f":"send","value":{"key":"k","value":1}}"#
            .to_string(),
        format!(
            r#"{{"index":1,"time":{},"process":0,"type":"ok","f":"send","value":{{"key":"k","value":1,"partition":0,"offset":0}}}}"#,
            s / 10
        ),
        format!(
            r#"{{"index":2,"time":{},"process":"nemesis","type":"invoke","f":"kill-consumer","value":{{"fault":"kill-consumer","target":"","fault_id":0{flag}}}}}"#,
            s
        ),
        format!(
            r#"{{"index":3,"time":{},"process":"nemesis","type":"info","f":"kill-consumer","value":{{"process":4,"fault_id":0{flag}}}}}"#,
            s + 1000
        ),
        format!(
            r#"{{"index":4,"time":{},"process":"nemesis","type":"invoke","f":"kill","value":{{"fault":"kill-broker","target":"n2","fault_id":1}}}}"#,
            2 * s
        ),
        format!(
            r#"{{"index":5,"time":{},"process":"nemesis","type":"info","f":"kill","value":{{"node":"n2","fault_id":1}}}}"#,
            2 * s + 1000
        ),
        format!(
            r#"{{"index":6,"time":{},"process":"nemesis","type":"invoke","f":"start","value":{{"target":"n2","fault_id":1}}}}"#,
            4 * s
        ),
        format!(
            r#"{{"index":7,"time":{},"process":"nemesis","type":"info","f":"start","value":{{"node":"n2","fault_id":1}}}}"#,
            4 * s + 1000
        ),
        format!(
            r#"{{"index":8,"time":{},"process":"nemesis","type":"invoke","f":"partition","value":{{"fault":"partition","target":"n1","fault_id":2}}}}"#,
            6 * s
        ),
        format!(
            r#"{{"index":9,"time":{},"process":"nemesis","type":"info","f":"partition","value":{{"nodes":["n1"],"fault_id":2}}}}"#,
            6 * s + 1000
        ),
        format!(
            r#"{{"index":10,"time":{},"process":5,"type":"invoke","f":"poll"}}"#,
            7 * s
        ),
        format!(
            r#"{{"index":11,"time":{},"process":5,"type":"ok","f":"poll","value":[{{"key":"k","value":1,"partition":0,"offset":0}}]}}"#,
            8 * s
        ),
    ];
    let text = lines.join("\n") + "\n";
    let h = gauntlet_history::read_bytes("faults.jsonl", text.as_bytes()).expect("history");
    let v = gauntlet_checkers::check(&h, &CheckOptions::default());
    render(
        &h,
        &v,
        &HtmlOptions {
            title: "faults",
            scenario_toml: None,
            scenario: None,
        },
    )
}

#[test]
fn an_instant_a_healed_fault_and_one_open_at_the_end() {
    for flag in [true, false] {
        let p = page(flag);
        assert!(
            p.contains("2 faults with a duration (1 healed, 1 still open at the end of the history) and 1 instant event (drawn as marks)"),
            "instant flag {flag}: {}",
            &p[p.find("<section id=\"faults\">").unwrap_or(0)..][..600]
        );
        // The open fault in words, and its row.
        let at = p.find("<b>Never ended").unwrap_or(0);
        assert!(p.contains("<b>Never ended:</b> partition n1 (op 8, from 6.00 s); shaded to the end of the history."), "{}", &p[at..at + 400]);
        assert!(p.contains("<td>6.00 s to the end</td><td>partition</td><td>n1</td><td class=\"n\">8</td><td>never ended: still open at the end of the history, 2.00 s after it started</td>"));
        // The healed one, from start to heal.
        assert!(p.contains("<td>2.00 s to 4.00 s</td><td>kill</td><td>n2</td><td class=\"n\">4</td><td>ended by start (op 6) after 2.00 s</td>"));
        // The consumer kill: a mark, not an interval.
        let row = if flag {
            // The mark is the info, which names the consumer's process.
            "<td>1.00 s</td><td>kill-consumer</td><td>4</td><td class=\"n\">3</td><td>instant</td>"
        } else {
            "<td>1.00 s</td><td>kill-consumer</td><td></td><td class=\"n\">2</td><td>instant</td>"
        };
        assert!(p.contains(row), "instant flag {flag}");
        assert!(p.contains("open at end</text>"));
    }
}

/// A power loss of two nodes and a corruption of one: each is marked on the
/// timeline where it happened, node by node, with what it dropped or changed.
#[test]
fn a_power_loss_and_a_corruption_are_marked_on_the_timeline_with_what_they_did_per_node() {
    let s = 1_000_000_000u64;
    let lines = [
        r#"{"index":0,"time":0,"process":0,"type":"invoke","f":"send","value":{"key":"k","value":1}}"#
            .to_string(),
        format!(
            r#"{{"index":1,"time":{},"process":0,"type":"ok","f":"send","value":{{"key":"k","value":1,"partition":0,"offset":0}}}}"#,
            s / 10
        ),
        format!(
            r#"{{"index":2,"time":{},"process":"nemesis","type":"invoke","f":"power-loss","value":{{"fault":"power-loss:all","fault_id":0}}}}"#,
            s
        ),
        format!(
            r#"{{"index":3,"time":{},"process":"nemesis","type":"info","f":"power-loss","value":{{"nodes":["n1","n2"],"fault_id":0,"each":[{{"node":"n1","disk":{{"fault":"power-loss","pending_files":2,"dropped_bytes":5000,"kept_bytes":0}}}},{{"node":"n2","disk":{{"fault":"power-loss","pending_files":0,"dropped_bytes":0,"kept_bytes":0}}}}]}}}}"#,
            s + 1000
        ),
        format!(
            r#"{{"index":4,"time":{},"process":"nemesis","type":"invoke","f":"corrupt","value":{{"fault":"corrupt:bitflip","target":"n3","fault_id":1}}}}"#,
            3 * s
        ),
        format!(
            r#"{{"index":5,"time":{},"process":"nemesis","type":"info","f":"corrupt","value":{{"node":"n3","fault_id":1,"disk":{{"fault":"corrupt:bitflip","changes":[{{"path":"jetstream/1.blk","offset":40,"bit":3}}]}}}}}}"#,
            3 * s + 1000
        ),
        format!(
            r#"{{"index":6,"time":{},"process":5,"type":"invoke","f":"poll"}}"#,
            4 * s
        ),
        format!(
            r#"{{"index":7,"time":{},"process":5,"type":"ok","f":"poll","value":[{{"key":"k","value":1,"partition":0,"offset":0}}]}}"#,
            5 * s
        ),
    ];
    let text = lines.join("\n") + "\n";
    let h = gauntlet_history::read_bytes("disk.jsonl", text.as_bytes()).expect("history");
    let v = gauntlet_checkers::check(&h, &CheckOptions::default());
    let p = render(
        &h,
        &v,
        &HtmlOptions {
            title: "disk",
            scenario_toml: None,
            scenario: None,
        },
    );
    let timeline = &p[p.find("<svg id=\"timeline\"").expect("timeline")..];
    let timeline = &timeline[..timeline.find("</svg>").expect("end of timeline")];
    for marker in [
        "<title>power-loss on n1 (op 3): dropped 4.9 KiB of unsynced writes in 2 files</title>",
        "<title>power-loss on n2 (op 3): nothing was waiting for an fsync: nothing dropped</title>",
        "<title>corrupt:bitflip on n3 (op 5): flipped 1 bit: bit 3 of byte 40 of jetstream/1.blk</title>",
    ] {
        assert!(timeline.contains(marker), "{marker} not in {timeline}");
    }
    assert_eq!(timeline.matches("class=\"disk\"").count(), 3);
}
