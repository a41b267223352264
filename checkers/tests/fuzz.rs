//! Fuzzing the reader and the checker on stable Rust: proptest over arbitrary bytes and
//! over mutated valid histories (byte flips, truncations, line swaps, deep nesting,
//! huge numbers, long strings; `gauntlet_testkit::mutate`).
//!
//! Properties: reading never panics; every error's text is `NAME:LINE: what` with a
//! line that exists; whenever the read succeeds, `check` does not panic (no pass of it:
//! the verdict keeps a pass's panic as `unjudged`) and its verdict serialises. Modest
//! case counts by default (`PROPTEST_CASES=N` raises them); the long-running mode is
//! `gauntlet fuzz --seconds 600`.
use gauntlet_checkers::{check, CheckOptions, UnjudgedReason};
use gauntlet_history::{read_bytes, HistoryError};
use gauntlet_testkit::queue_gen::{generate_vec, GenConfig, Injection, Mode};
use gauntlet_testkit::{mutate, Rng};
use proptest::prelude::*;

const NAME: &str = "fuzz.jsonl";

/// Reads and checks `input`; `Err` says which property broke.
fn judge(input: &[u8]) -> Result<(), String> {
    let lines = input.iter().filter(|&&c| c == b'\n').count() as u64 + 1;
    match read_bytes(NAME, input) {
        Ok(h) => {
            let v = check(&h, &CheckOptions::default());
            // The checker keeps a pass's panic in the verdict: still a failure.
            if let Some(u) = v
                .unjudged
                .iter()
                .find(|u| u.reason == UnjudgedReason::CheckerPanicked)
            {
                return Err(format!("panic: {}", u.detail));
            }
            serde_json::to_string(&v).map_err(|e| format!("verdict does not serialise: {e}"))?;
            Ok(())
        }
        Err(e) => {
            let text = e.to_string();
            let rest = text
                .strip_prefix(NAME)
                .and_then(|r| r.strip_prefix(':'))
                .ok_or_else(|| format!("error does not start with `{NAME}:`: {text}"))?;
            match &e {
                HistoryError::Line { line, .. } => {
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    let after = &rest[digits.len()..];
                    if digits.is_empty() || !after.starts_with(": ") || after.len() <= 2 {
                        return Err(format!("error is not `{NAME}:LINE: what`: {text}"));
                    }
                    if digits.parse::<u64>().ok() != Some(*line) || *line == 0 || *line > lines {
                        return Err(format!("line {line} of {lines} lines: {text}"));
                    }
                }
                HistoryError::Io { .. } if !rest.starts_with(' ') => {
                    return Err(format!("io error is not `{NAME}: what`: {text}"));
                }
                _ => {}
            }
            Ok(())
        }
    }
}

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn seed_history(seed: u64, mode: Mode, ops: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let injections = (0..rng.below(4))
        .map(|_| *rng.pick(&Injection::ALL))
        .collect();
    let cfg = GenConfig {
        seed,
        mode,
        ops,
        groups: 1 + rng.below(3) as u32,
        consumers: 1 + rng.below(3) as u32,
        drained: rng.chance(0.8),
        injections,
        ..GenConfig::default()
    };
    generate_vec(&cfg).0
}

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![Just(Mode::Offsets), Just(Mode::Ids), Just(Mode::Bare)]
}

/// Lines that look like history lines: fields and values picked from the contract's words.
fn line() -> impl Strategy<Value = String> {
    let field = prop_oneof![
        Just("index"),
        Just("time"),
        Just("process"),
        Just("type"),
        Just("f"),
        Just("value"),
        Just("group"),
        Just("error"),
        Just("key"),
        Just("partition"),
        Just("offset"),
        Just("id"),
        Just("messages"),
        Just("redelivered"),
    ];
    let leaf = prop_oneof![
        (0i64..6).prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        Just("\"invoke\"".to_string()),
        Just("\"ok\"".to_string()),
        Just("\"fail\"".to_string()),
        Just("\"info\"".to_string()),
        Just("\"send\"".to_string()),
        Just("\"poll\"".to_string()),
        Just("\"txn\"".to_string()),
        Just("\"assign\"".to_string()),
        Just("\"phase\"".to_string()),
        Just("\"drained\"".to_string()),
        Just("\"nemesis\"".to_string()),
        Just("\"harness\"".to_string()),
        Just("null".to_string()),
        Just("true".to_string()),
        Just("1e99".to_string()),
        Just("\"\\ud800\"".to_string()),
        "[a-z]{0,6}".prop_map(|s| format!("\"{s}\"")),
    ];
    let value = leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("key"),
                        Just("value"),
                        Just("partition"),
                        Just("offset"),
                        Just("f"),
                        Just("id"),
                        Just("messages")
                    ],
                    inner
                ),
                0..4
            )
            .prop_map(|v| {
                let kv: Vec<String> = v.into_iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                format!("{{{}}}", kv.join(","))
            }),
        ]
    });
    prop::collection::vec((field, value), 0..9).prop_map(|kv| {
        let kv: Vec<String> = kv
            .into_iter()
            .map(|(k, v)| format!("\"{k}\":{v}"))
            .collect();
        format!("{{{}}}", kv.join(","))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(256), ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(input in prop::collection::vec(any::<u8>(), 0..2048)) {
        judge(&input).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn history_like_lines_never_panic(lines in prop::collection::vec(line(), 0..24)) {
        let text = lines.join("\n");
        judge(text.as_bytes()).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn mutated_histories_never_panic(seed in any::<u64>(), mode in mode(), ops in 0u64..300, rounds in 1u32..4) {
        let mut input = seed_history(seed, mode, ops);
        let mut rng = Rng::new(seed ^ 0xF0F0);
        for _ in 0..rounds {
            input = mutate(&mut rng, &input);
            judge(&input).map_err(TestCaseError::fail)?;
        }
    }
}

#[test]
fn valid_generated_histories_read_and_check() {
    for seed in 0..20 {
        for mode in [Mode::Offsets, Mode::Ids, Mode::Bare] {
            let input = seed_history(seed, mode, 200);
            assert!(read_bytes(NAME, &input).is_ok());
            judge(&input).unwrap();
        }
    }
}

#[test]
fn hostile_lines_are_errors_with_their_line() {
    let ok = br#"{"index":0,"time":0,"process":0,"type":"invoke","f":"send","value":{"key":"k","value":1}}"#;
    let deep = format!(
        r#"{{"index":1,"time":1,"process":"nemesis","type":"info","f":"kill","value":{}{}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let huge = format!(
        r#"{{"index":1,"time":{},"process":0,"type":"ok","f":"send"}}"#,
        "9".repeat(10_000)
    );
    let long = format!(
        r#"{{"index":1,"time":1,"process":0,"type":"ok","f":"send","error":"{}"}}"#,
        "é\\n".repeat(200_000)
    );
    let long_key = format!(
        r#"{{"index":1,"time":1,"process":1,"type":"invoke","f":"send","value":{{"key":"{}","value":2}}}}"#,
        "k".repeat(1_000_000)
    );
    for (second, want_err) in [
        (deep.as_str(), true),
        (huge.as_str(), true),
        (long.as_str(), false),
        (long_key.as_str(), false),
    ] {
        let mut input = ok.to_vec();
        input.push(b'\n');
        input.extend_from_slice(second.as_bytes());
        input.push(b'\n');
        judge(&input).unwrap();
        match read_bytes(NAME, &input) {
            Err(e) => {
                assert!(want_err, "{e}");
                assert_eq!(e.line(), Some(2), "{e}");
            }
            Ok(_) => assert!(!want_err, "expected an error"),
        }
    }
}
