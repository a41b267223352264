//! Seed O6, hot keys and hot partitions: not a violation, information. One key
//! taking most of the sends makes one Kafka partition hot; its consumer falls
//! behind while the others idle. The verdict's `stats.flow` and the report show
//! it, hottest first; with the keys drawn uniformly nothing stands out.
use crate::common::*;
use serde_json::Value;
use std::time::Instant;

/// (name, share, lag p50 in ms, lag p99 in ms) of each row of a `stats.flow` table.
fn rows(v: &Value, table: &str) -> Vec<(String, f64, f64, f64)> {
    v["stats"]["flow"][table]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|r| {
                    (
                        r["name"].as_str().unwrap_or("?").to_string(),
                        r["share"].as_f64().unwrap_or(0.0),
                        r["lag_ns"]["p50"].as_f64().unwrap_or(0.0) / 1e6,
                        r["lag_ns"]["p99"].as_f64().unwrap_or(0.0) / 1e6,
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn show(label: &str, r: &Run) {
    for table in ["keys", "partitions"] {
        let line: Vec<String> = rows(&r.verdict, table)
            .iter()
            .map(|(n, s, p50, p99)| {
                format!("{n} {:.0}% lag p50 {p50:.0} ms p99 {p99:.0} ms", s * 100.0)
            })
            .collect();
        eprintln!("{label} {table}: {}", line.join(", "));
    }
}

#[test]
fn o6_kafka_hot_key_makes_a_hot_partition_whose_consumer_lags() {
    let t = Instant::now();
    let scenario = include_str!("../../../ci/scenarios/kafka-hot-key.toml");
    let (hot, uniform) = side_by_side(
        || run_scenario("o6-hot", scenario, &[]),
        || run_scenario("o6-uniform", scenario, &["--key-distribution", "uniform"]),
    );
    report("O6 kafka hot:0.9", &hot, t);
    show("O6 hot:0.9", &hot);
    report("O6 kafka uniform", &uniform, t);
    show("O6 uniform", &uniform);

    // Information, not a violation: both runs are valid.
    assert_eq!(hot.code, 0, "{}", hot.verdict["anomalies"]);
    assert_eq!(uniform.code, 0, "{}", uniform.verdict["anomalies"]);

    // The hot key is first, with about 90% of the sends; its partition too.
    let (hk, hp) = (rows(&hot.verdict, "keys"), rows(&hot.verdict, "partitions"));
    assert_eq!(hk.len(), 8, "{hk:?}");
    assert_eq!(hk[0].0, "k0", "{hk:?}");
    assert!(hk[0].1 > 0.8, "{hk:?}");
    assert!(hp[0].1 > 0.8, "{hp:?}");
    // Its consumer falls behind: the hot partition's median lag is many times the
    // coolest partition's (processing 25 ms per message: 40/s a consumer, and the
    // hot partition gets about 54/s). Medians: the first messages of every
    // partition wait alike for the group to form.
    let coolest = hp.last().map_or(0.0, |p| p.2);
    assert!(
        hp.len() >= 2 && hp[0].2 > 4.0 * coolest.max(25.0),
        "hot partition p50 {} ms, coolest {coolest} ms: {hp:?}",
        hp[0].2
    );

    // Uniform: no key over a quarter of the sends, and no partition lags like the
    // hot one did.
    let (uk, up) = (
        rows(&uniform.verdict, "keys"),
        rows(&uniform.verdict, "partitions"),
    );
    assert!(uk.iter().all(|k| k.1 < 0.25), "{uk:?}");
    assert!(
        up.iter().all(|p| p.2 * 4.0 < hp[0].2),
        "uniform partitions {up:?} against the hot one {hp:?}"
    );
    // Lag over time covers every send, with the hottest key's lag beside it.
    let buckets = hot.verdict["stats"]["flow"]["lag_over_time"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let sent: u64 = buckets.iter().filter_map(|b| b["sent"].as_u64()).sum();
    assert_eq!(Some(sent), hot.verdict["stats"]["sends"].as_u64());
    let series: Vec<f64> = buckets
        .iter()
        .map(|b| b["hottest_key_lag_ns"]["p50"].as_f64().unwrap_or(0.0) / 1e6)
        .collect();
    eprintln!("O6 hot:0.9 hottest key's lag p50 per bucket (ms): {series:.0?}");
    assert!(
        series.iter().filter(|&&x| x > 0.0).count() >= 4,
        "{series:?}"
    );
    let html = std::fs::read_to_string(hot.dir.join(gauntlet_report::folder::REPORT))
        .expect("report.html");
    assert!(html.contains("id=\"flow\"") && html.contains("id=\"lag\""));
    assert_run_folder(&hot.dir);
}
