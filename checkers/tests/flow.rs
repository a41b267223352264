//! `stats.flow` (seed O6): throughput and lag per key and per partition.
use gauntlet_checkers::{check, CheckOptions, Latency};
use gauntlet_history::read_bytes;

/// Builds a JSONL history: `sends` are (key, value, partition, invoke ns, ok ns),
/// then one poll per (time ns, values delivered).
fn history(sends: &[(&str, i64, i64, u64, u64)], polls: &[(u64, Vec<i64>)]) -> String {
    let mut ev: Vec<(u64, String)> = Vec::new();
    for (p, &(k, v, part, at, ok)) in sends.iter().enumerate() {
        ev.push((
            at,
            format!(
                r#""process":{p},"type":"invoke","f":"send","value":{{"key":"{k}","value":{v}}}"#
            ),
        ));
        ev.push((
            ok,
            format!(r#""process":{p},"type":"ok","f":"send","value":{{"key":"{k}","value":{v},"partition":{part},"offset":{v}}}"#),
        ));
    }
    for (i, (at, values)) in polls.iter().enumerate() {
        let msgs: Vec<String> = values
            .iter()
            .map(|v| {
                let &(k, _, part, _, _) = sends.iter().find(|s| s.1 == *v).expect("sent");
                format!(r#"{{"key":"{k}","value":{v},"partition":{part},"offset":{v}}}"#)
            })
            .collect();
        let p = 1000 + i;
        ev.push((
            at - 1,
            format!(r#""process":{p},"type":"invoke","f":"poll""#),
        ));
        ev.push((
            *at,
            format!(
                r#""process":{p},"type":"ok","f":"poll","value":[{}]"#,
                msgs.join(",")
            ),
        ));
    }
    ev.sort_by_key(|e| e.0);
    ev.iter()
        .enumerate()
        .map(|(i, (t, rest))| format!("{{\"index\":{i},\"time\":{t},{rest}}}\n"))
        .collect()
}

const MS: u64 = 1_000_000;

#[test]
fn hand_written_per_key_and_partition() {
    // x: three sends on partition 0, lags 10, 20 and 30 ms (x=2 delivered twice:
    // the first delivery counts); y: one send on partition 1, lag 5 ms; z: one
    // send never delivered.
    let sends = [
        ("x", 1, 0, 0, MS),
        ("x", 2, 0, 1_000 * MS, 1_001 * MS),
        ("y", 3, 1, 1_500 * MS, 1_501 * MS),
        ("x", 4, 0, 2_000 * MS, 2_001 * MS),
        ("z", 5, 1, 2_500 * MS, 3_000 * MS),
    ];
    let polls = [
        (10 * MS, vec![1]),
        (1_020 * MS, vec![2]),
        (1_505 * MS, vec![3]),
        (2_030 * MS, vec![4, 2]),
    ];
    let h = read_bytes("flow.jsonl", history(&sends, &polls).as_bytes()).expect("history");
    let v = check(&h, &CheckOptions::default());
    let f = v.stats.flow.expect("flow");
    assert_eq!(f.window_s, 3.0);
    let names: Vec<&str> = f.keys.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["x", "y", "z"], "hottest first");
    let x = &f.keys[0];
    assert_eq!((x.sends, x.sends_ok, x.delivered), (3, 3, 3));
    assert_eq!(x.share, 0.6);
    assert_eq!(x.sends_ok_per_s, 1.0);
    assert_eq!(
        x.lag_ns,
        Some(Latency {
            p50: 20 * MS,
            p99: 30 * MS,
            max: 30 * MS
        })
    );
    assert_eq!(f.keys[1].lag_ns.map(|l| l.max), Some(5 * MS));
    assert_eq!((f.keys[2].delivered, f.keys[2].lag_ns), (0, None));
    let parts: Vec<(&str, u64, u64)> = f
        .partitions
        .iter()
        .map(|r| (r.name.as_str(), r.sends, r.delivered))
        .collect();
    assert_eq!(parts, [("0", 3, 3), ("1", 2, 1)]);
    // 3 s of sending: one-second buckets, by the send's invoke.
    let b: Vec<(u64, u64, u64)> = f
        .lag_over_time
        .iter()
        .map(|b| (b.start_ms, b.sent, b.delivered))
        .collect();
    assert_eq!(b, [(0, 1, 1), (1_000, 2, 2), (2_000, 2, 1), (3_000, 0, 0)]);
    assert_eq!(f.lag_over_time[1].lag_ns.map(|l| l.max), Some(20 * MS));
    assert_eq!(
        f.lag_over_time[1].hottest_key_lag_ns.map(|l| l.max),
        Some(20 * MS),
        "x's send at 1 s; y's is not the hottest key's"
    );
    assert_eq!(f.lag_over_time[3].lag_ns, None);
}

#[test]
fn generated_skew_with_exact_counts() {
    // 40 keys; key i gets 40 - i sends (820 in all), each delivered (i + 1) ms
    // after its invoke; partitions: key i % 4.
    let mut sends = Vec::new();
    let mut polls = Vec::new();
    let mut v = 0;
    for i in 0..40u64 {
        for j in 0..(40 - i) {
            v += 1;
            let at = (j * 40 + i) * MS;
            let key: &'static str = Box::leak(format!("k{i}").into_boxed_str());
            sends.push((key, v, (i % 4) as i64, at, at + MS / 2));
            polls.push((at + (i + 1) * MS, vec![v]));
        }
    }
    polls.sort_by_key(|p| p.0);
    let h = read_bytes("gen.jsonl", history(&sends, &polls).as_bytes()).expect("history");
    let f = check(&h, &CheckOptions::default())
        .stats
        .flow
        .expect("flow");
    assert_eq!(f.keys.len(), 32);
    assert_eq!(f.keys_not_listed, 8);
    for (i, row) in f.keys.iter().enumerate() {
        assert_eq!(row.name, format!("k{i}"));
        assert_eq!((row.sends, row.delivered), (40 - i as u64, 40 - i as u64));
        let lag = row.lag_ns.expect("delivered");
        assert_eq!(
            (lag.p50, lag.max),
            ((i as u64 + 1) * MS, (i as u64 + 1) * MS)
        );
    }
    // Partition p holds keys p, p+4, ...: 0 is the hottest.
    let parts: Vec<(String, u64)> = f
        .partitions
        .iter()
        .map(|r| (r.name.clone(), r.sends))
        .collect();
    let want: Vec<(String, u64)> = (0..4u64)
        .map(|p| (p.to_string(), (0..10).map(|n| 40 - (p + 4 * n)).sum()))
        .collect();
    assert_eq!(parts, want);
    let total: u64 = f.lag_over_time.iter().map(|b| b.sent).sum();
    assert_eq!(total, 820);
    assert!(f.lag_over_time.len() <= 61, "{}", f.lag_over_time.len());
}

#[test]
fn a_history_without_sends_has_no_flow() {
    let text = "{\"index\":0,\"time\":0,\"process\":0,\"type\":\"invoke\",\"f\":\"poll\"}\n\
                {\"index\":1,\"time\":5,\"process\":0,\"type\":\"ok\",\"f\":\"poll\",\"value\":[]}\n";
    let h = read_bytes("bare.jsonl", text.as_bytes()).expect("history");
    assert_eq!(check(&h, &CheckOptions::default()).stats.flow, None);
}
