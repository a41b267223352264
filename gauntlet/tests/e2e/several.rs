//! Faults on several nodes at once (docs/nemesis.md, "Several nodes at once"):
//! a majority of a NATS JetStream cluster killed together and started again.
use crate::common::*;
use std::time::Instant;

/// `kill-broker:majority` on three NATS nodes (R3 stream, at-least-once): the
/// schedule draws two nodes, both are SIGKILLed at once (the stream loses its
/// quorum), both are started again after 3 s, and the run drains.
#[test]
fn several_kill_broker_majority_on_nats_r3_takes_two_nodes_down_and_back() {
    let t = Instant::now();
    let r = run(
        "nats-majority",
        &[
            "--broker",
            "nats",
            "--time",
            "14s",
            "--rate",
            "50",
            "--seed",
            "9",
            "--nemesis",
            "kill-broker:majority",
        ],
    );
    report("nats R3 kill-broker:majority", &r, t);
    let events = nemesis_events(&r.dir);
    for e in &events {
        eprintln!("  nemesis {} {} {}", e["type"], e["f"], e["value"]);
    }
    let kill = events
        .iter()
        .find(|e| e["f"] == "kill" && e["type"] == "info")
        .expect("a kill");
    assert!(kill["value"].get("error").is_none(), "{kill}");
    let nodes: Vec<String> = kill["value"]["nodes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|n| n.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(nodes.len(), 2, "two nodes down at once: {kill}");
    assert_ne!(nodes[0], nodes[1], "{kill}");
    // Both started again, by the fault's own heal, without an error.
    let id = &kill["value"]["fault_id"];
    let start = events
        .iter()
        .find(|e| e["f"] == "start" && e["type"] == "info" && &e["value"]["fault_id"] == id)
        .expect("the kill's heal");
    assert!(start["value"].get("error").is_none(), "{start}");
    assert_eq!(start["value"]["nodes"], kill["value"]["nodes"], "{start}");
    let heal = events
        .iter()
        .find(|e| e["f"] == "heal-all" && e["type"] == "info")
        .expect("the final heal");
    assert_eq!(heal["value"]["problems"], serde_json::json!([]), "{heal}");
    // The schedule file names the nodes it drew (what --replay plays again).
    let schedule = std::fs::read_to_string(r.dir.join(gauntlet_report::folder::SCHEDULE))
        .expect("schedule.toml");
    assert!(
        schedule.contains("fault = \"kill-broker:majority\"")
            && schedule.contains(&format!("\"{}\"", nodes[0]))
            && schedule.contains(&format!("\"{}\"", nodes[1])),
        "{schedule}"
    );
    assert_eq!(r.verdict["stats"]["drained"], true, "{}", r.verdict);
    assert_eq!(count(&r, "lost"), 0, "{}", r.verdict["anomalies"]);
    no_leftovers(&r.dir);
}

/// `pause-kill` on three NATS nodes (R3): one node paused, another killed,
/// the third paused while the first resumes and the killed one starts, then
/// the third resumed; every step in the history with its node, in that order,
/// and the run drains.
#[test]
fn several_pause_kill_on_nats_r3_plays_jepsens_steps() {
    let t = Instant::now();
    let r = run_scenario(
        "nats-pause-kill",
        "name = \"nats-pause-kill\"\nbroker = \"nats\"\ntime = \"12s\"\nrate = 50.0\nseed = 4\n\
         nemesis = [\"pause-kill\"]\nnemesis-interval = \"2s\"\nnemesis-duration = \"3s\"\n",
        &[],
    );
    report("nats R3 pause-kill", &r, t);
    let events = nemesis_events(&r.dir);
    for e in &events {
        eprintln!("  nemesis {} {} {}", e["type"], e["f"], e["value"]);
    }
    // Each step as the nemesis began it (its invoke), in order, with the node its
    // info event names when it was done. The order is that of the invokes: a
    // kill on a loaded machine can take longer than the 500 ms to the next pause,
    // so the steps may be done in another order than they were begun.
    let done = |e: &serde_json::Value| {
        events
            .iter()
            .find(|i| {
                i["type"] == "info"
                    && i["f"] == e["f"]
                    && i["value"]["fault_id"] == e["value"]["fault_id"]
            })
            .unwrap_or_else(|| panic!("step never done: {e}"))
    };
    let steps: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["type"] == "invoke" && e["f"] != "heal-all")
        .map(|e| {
            let info = done(e);
            assert!(info["value"].get("error").is_none(), "{info}");
            (
                e["f"].as_str().unwrap_or_default().to_string(),
                info["value"]["node"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    let fs: Vec<&str> = steps.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        fs,
        ["pause", "kill", "pause", "resume", "start", "resume"],
        "{steps:?}"
    );
    let (p1, crasher, p2) = (&steps[0].1, &steps[1].1, &steps[2].1);
    assert!(p1 != crasher && crasher != p2 && p1 != p2, "{steps:?}");
    assert_eq!((&steps[3].1, &steps[4].1, &steps[5].1), (p1, crasher, p2));
    let heal = events
        .iter()
        .find(|e| e["f"] == "heal-all" && e["type"] == "info")
        .expect("the final heal");
    assert_eq!(heal["value"]["problems"], serde_json::json!([]), "{heal}");
    assert_eq!(r.verdict["stats"]["drained"], true, "{}", r.verdict);
    no_leftovers(&r.dir);
}
