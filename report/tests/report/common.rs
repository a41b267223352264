//! Helpers shared by the report tests.
#![allow(dead_code)]
use gauntlet_checkers::{CheckOptions, Guarantee, Verdict};
use gauntlet_history::History;
use std::path::{Path, PathBuf};

pub const PAYLOAD: &str = "<script>alert(1)</script>";

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("report/ has a parent")
        .to_path_buf()
}

pub fn d5() -> (History, Verdict) {
    let h = gauntlet_history::read_path(repo().join("examples/d5-commit-before-processing.jsonl"))
        .expect("the D5 example reads");
    let v = gauntlet_checkers::check(&h, &CheckOptions::default());
    (h, v)
}

/// A fresh, empty folder under the system temp folder.
pub fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gauntlet-report-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp folder");
    d
}

/// A history whose keys, groups, nemesis names and values carry markup.
pub fn hostile_jsonl() -> String {
    let k1 = serde_json::to_string(PAYLOAD).unwrap();
    let k2 = serde_json::to_string(
        "<img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">",
    )
    .unwrap();
    let k3 = serde_json::to_string("\"><svg onload=alert(1)>").unwrap();
    let g = serde_json::to_string("<b onmouseover=alert(1)>g&amp;</b>").unwrap();
    let nem = serde_json::to_string("</title><script>document.title='PWNED'</script>").unwrap();
    [
        format!(r#"{{"index":0,"time":0,"process":0,"type":"invoke","f":"send","value":{{"key":{k1},"value":1}}}}"#),
        format!(r#"{{"index":1,"time":1000,"process":0,"type":"ok","f":"send","value":{{"key":{k1},"value":1,"partition":0,"offset":0}}}}"#),
        format!(r#"{{"index":2,"time":2000,"process":0,"type":"invoke","f":"send","value":{{"key":{k2},"value":2}}}}"#),
        format!(r#"{{"index":3,"time":3000,"process":0,"type":"ok","f":"send","value":{{"key":{k2},"value":2,"partition":1,"offset":0}}}}"#),
        format!(r#"{{"index":4,"time":4000,"process":"nemesis","type":"info","f":{k1},"value":{{"node":{nem}}}}}"#),
        format!(r#"{{"index":5,"time":5000,"process":5,"type":"invoke","f":"poll","group":{g}}}"#),
        format!(r#"{{"index":6,"time":6000,"process":5,"type":"ok","f":"poll","group":{g},"value":[{{"key":{k1},"value":1,"partition":0,"offset":0}},{{"key":{k3},"value":99,"partition":7,"offset":3}}]}}"#),
        format!(r#"{{"index":7,"time":7000,"process":0,"type":"invoke","f":"send","value":{{"key":{k3},"value":3}}}}"#),
        format!(r#"{{"index":8,"time":8000,"process":0,"type":"info","f":"send","value":{{"key":{k3},"value":3}},"error":{k1}}}"#),
        format!(r#"{{"index":9,"time":9000,"process":"nemesis","type":"info","f":"heal","value":{nem}}}"#),
        r#"{"index":10,"time":10000,"process":"harness","type":"info","f":"phase","value":"drained"}"#.to_string(),
    ]
    .join("\n")
        + "\n"
}

pub fn hostile() -> (History, Verdict) {
    let h = gauntlet_history::read_bytes("hostile.jsonl", hostile_jsonl().as_bytes())
        .expect("the hostile history reads");
    let v = gauntlet_checkers::check(
        &h,
        &CheckOptions {
            expect: vec![Guarantee::AtLeastOnce, Guarantee::KeyOrder],
            ..CheckOptions::default()
        },
    );
    (h, v)
}

/// A synthetic history of about `ops` ops: producers, two groups, a few faults, some losses.
pub fn big_jsonl(ops: u64) -> Vec<u8> {
    use std::io::Write;
    let mut out = Vec::with_capacity(ops as usize * 110);
    let mut index = 0u64;
    let mut t = 0u64;
    let producers = 8u64;
    let sends = ops / 4;
    let mut offsets = [0i64; 16];
    let mut stored: Vec<(u64, u64, i64)> = Vec::new();
    for v in 1..=sends {
        let p = v % producers;
        let key = v % 64;
        let part = (key % 16) as usize;
        t += 700;
        writeln!(out, r#"{{"index":{index},"time":{t},"process":{p},"type":"invoke","f":"send","value":{{"key":"k{key}","value":{v}}}}}"#).unwrap();
        index += 1;
        t += 300 + (v * 7919) % 5000;
        let off = offsets[part];
        offsets[part] += 1;
        writeln!(out, r#"{{"index":{index},"time":{t},"process":{p},"type":"ok","f":"send","value":{{"key":"k{key}","value":{v},"partition":{part},"offset":{off}}}}}"#).unwrap();
        index += 1;
        // 1 in 1000 is never delivered to g1.
        stored.push((v, key, off));
        if v % 50_000 == 0 {
            let f = if (v / 50_000) % 2 == 1 {
                "partition"
            } else {
                "heal"
            };
            writeln!(out, r#"{{"index":{index},"time":{t},"process":"nemesis","type":"info","f":"{f}","value":{{"nodes":["n1","n2"]}}}}"#).unwrap();
            index += 1;
        }
        if stored.len() == 100 || v == sends {
            for (g, c) in [("g1", 100u64), ("g2", 200u64)] {
                t += 100;
                writeln!(out, r#"{{"index":{index},"time":{t},"process":{c},"type":"invoke","f":"poll","group":"{g}"}}"#).unwrap();
                index += 1;
                t += 100;
                let msgs: Vec<String> = stored
                    .iter()
                    .filter(|(v, _, _)| g == "g2" || v % 1000 != 7)
                    .map(|(v, key, off)| {
                        format!(
                            r#"{{"key":"k{key}","value":{v},"partition":{},"offset":{off}}}"#,
                            key % 16
                        )
                    })
                    .collect();
                writeln!(out, r#"{{"index":{index},"time":{t},"process":{c},"type":"ok","f":"poll","group":"{g}","value":[{}]}}"#, msgs.join(",")).unwrap();
                index += 1;
            }
            stored.clear();
        }
    }
    t += 1000;
    writeln!(out, r#"{{"index":{index},"time":{t},"process":"harness","type":"info","f":"phase","value":"drained"}}"#).unwrap();
    out
}
