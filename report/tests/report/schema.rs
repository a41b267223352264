//! The checker's verdicts validate against docs/verdict.schema.json.
//!
//! A small structural validator for the keywords the schema uses (type, const,
//! enum, properties, required, additionalProperties, items, uniqueItems,
//! minimum, oneOf, $ref to #/$defs): no dependency, and it refuses any other
//! keyword so the schema cannot grow past what the test checks.
use crate::common;
use serde_json::Value;

const KNOWN: [&str; 17] = [
    "$schema",
    "$id",
    "$defs",
    "$ref",
    "title",
    "description",
    "type",
    "const",
    "enum",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "uniqueItems",
    "minimum",
    "oneOf",
    "anyOf",
];

fn schema() -> Value {
    let text = std::fs::read_to_string(common::repo().join("docs/verdict.schema.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn type_ok(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "null" => v.is_null(),
        other => panic!("unknown type {other}"),
    }
}

fn validate(root: &Value, s: &Value, v: &Value, at: &str, errs: &mut Vec<String>) {
    let Some(s) = s.as_object() else { return };
    for k in s.keys() {
        assert!(
            KNOWN.contains(&k.as_str()),
            "schema keyword {k} at {at} is not checked"
        );
    }
    if let Some(r) = s.get("$ref").and_then(|r| r.as_str()) {
        let name = r.strip_prefix("#/$defs/").expect("local $ref");
        validate(root, &root["$defs"][name], v, at, errs);
    }
    if let Some(t) = s.get("type") {
        let ok = match t {
            Value::String(t) => type_ok(t, v),
            Value::Array(ts) => ts.iter().any(|t| type_ok(t.as_str().unwrap(), v)),
            _ => panic!("bad type"),
        };
        if !ok {
            errs.push(format!("{at}: {v} is not of type {t}"));
            return;
        }
    }
    if let Some(c) = s.get("const") {
        if c != v {
            errs.push(format!("{at}: {v} != {c}"));
        }
    }
    if let Some(e) = s.get("enum").and_then(|e| e.as_array()) {
        if !e.contains(v) {
            errs.push(format!("{at}: {v} not in {e:?}"));
        }
    }
    if let (Some(m), Some(x)) = (s.get("minimum").and_then(|m| m.as_f64()), v.as_f64()) {
        if x < m {
            errs.push(format!("{at}: {x} < {m}"));
        }
    }
    for (kw, need) in [("oneOf", 1usize), ("anyOf", 0)] {
        if let Some(alts) = s.get(kw).and_then(|a| a.as_array()) {
            let ok = alts
                .iter()
                .filter(|a| {
                    let mut e = Vec::new();
                    validate(root, a, v, at, &mut e);
                    e.is_empty()
                })
                .count();
            if (need == 1 && ok != 1) || (need == 0 && ok == 0) {
                errs.push(format!("{at}: {v} matches {ok} of {kw}"));
            }
        }
    }
    if let Some(o) = v.as_object() {
        for r in s
            .get("required")
            .and_then(|r| r.as_array())
            .into_iter()
            .flatten()
        {
            let r = r.as_str().unwrap();
            if !o.contains_key(r) {
                errs.push(format!("{at}: missing {r}"));
            }
        }
        let props = s.get("properties").and_then(|p| p.as_object());
        for (k, x) in o {
            let sub = format!("{at}/{k}");
            match props.and_then(|p| p.get(k)) {
                Some(ps) => validate(root, ps, x, &sub, errs),
                None => match s.get("additionalProperties") {
                    Some(Value::Bool(false)) => errs.push(format!("{sub}: not allowed")),
                    Some(ap @ Value::Object(_)) => validate(root, ap, x, &sub, errs),
                    _ => {}
                },
            }
        }
    }
    if let Some(a) = v.as_array() {
        if let Some(items) = s.get("items") {
            for (i, x) in a.iter().enumerate() {
                validate(root, items, x, &format!("{at}/{i}"), errs);
            }
        }
        if s.get("uniqueItems") == Some(&Value::Bool(true)) {
            for (i, x) in a.iter().enumerate() {
                if a[..i].contains(x) {
                    errs.push(format!("{at}: {x} repeated"));
                }
            }
        }
    }
}

fn errors(v: &Value) -> Vec<String> {
    let root = schema();
    let mut errs = Vec::new();
    validate(&root, &root, v, "", &mut errs);
    errs
}

#[test]
fn schema_is_versioned_draft_2020_12() {
    let s = schema();
    assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert!(s["$id"].as_str().unwrap().contains("v1"));
}

#[test]
fn verdicts_of_several_histories_validate() {
    let mut verdicts = vec![common::d5().1, common::hostile().1];
    let h = gauntlet_history::read_path(common::repo().join("examples/clean-at-least-once.jsonl"))
        .unwrap();
    verdicts.push(gauntlet_checkers::check(&h, &Default::default()));
    let h = gauntlet_history::read_bytes("big", &common::big_jsonl(20_000)).unwrap();
    verdicts.push(gauntlet_checkers::check(&h, &Default::default()));
    // Nothing at all: no latency, unknown orders.
    let h = gauntlet_history::read_bytes("empty", b"").unwrap();
    verdicts.push(gauntlet_checkers::check(&h, &Default::default()));
    for v in &verdicts {
        let json: Value = serde_json::from_str(&gauntlet_report::verdict_json(v)).unwrap();
        let errs = errors(&json);
        assert!(errs.is_empty(), "{errs:#?}");
    }
}

#[test]
fn schema_rejects_what_is_not_a_verdict() {
    let (_, v) = common::d5();
    let good: Value = serde_json::from_str(&gauntlet_report::verdict_json(&v)).unwrap();
    let mut bad = good.clone();
    bad["valid"] = Value::from("maybe");
    assert!(!errors(&bad).is_empty());
    let mut bad = good.clone();
    bad["guarantees"]["key-order"] = Value::from("fine");
    assert!(!errors(&bad).is_empty());
    let mut bad = good.clone();
    bad["anomalies"].as_object_mut().unwrap().remove("lost");
    assert!(!errors(&bad).is_empty());
    let mut bad = good;
    bad["stats"]["ops"] = Value::from(-1);
    assert!(!errors(&bad).is_empty());
}

/// A history of idempotent consumers (seed D7): its verdict has the processing
/// anomalies and the exactly-once-processing guarantee, and still validates.
#[test]
fn a_verdict_with_processing_anomalies_validates() {
    let lines = [
        r#"{"index":0,"time":0,"process":0,"type":"invoke","f":"send","value":{"key":"k","value":1}}"#,
        r#"{"index":1,"time":1,"process":0,"type":"ok","f":"send","value":{"key":"k","value":1}}"#,
        r#"{"index":2,"time":2,"process":5,"type":"invoke","f":"poll","group":"g1"}"#,
        r#"{"index":3,"time":3,"process":5,"type":"ok","f":"poll","group":"g1","value":[{"key":"k","value":1}]}"#,
        r#"{"index":4,"time":4,"process":5,"type":"invoke","f":"dedup","group":"g1","value":{"value":1,"step":"claim"}}"#,
        r#"{"index":5,"time":5,"process":5,"type":"fail","f":"dedup","group":"g1","value":{"value":1,"step":"claim","answer":"unavailable"},"error":"refused"}"#,
        r#"{"index":6,"time":6,"process":5,"type":"invoke","f":"effect","group":"g1","value":1}"#,
        r#"{"index":7,"time":7,"process":5,"type":"ok","f":"effect","group":"g1","value":1}"#,
        r#"{"index":8,"time":8,"process":6,"type":"invoke","f":"poll","group":"g1"}"#,
        r#"{"index":9,"time":9,"process":6,"type":"ok","f":"poll","group":"g1","value":[{"key":"k","value":1}]}"#,
        r#"{"index":10,"time":10,"process":6,"type":"invoke","f":"effect","group":"g1","value":1}"#,
        r#"{"index":11,"time":11,"process":6,"type":"ok","f":"effect","group":"g1","value":1}"#,
        r#"{"index":12,"time":12,"process":"harness","type":"info","f":"phase","value":"drained"}"#,
    ];
    let text = lines.join("\n") + "\n";
    let h = gauntlet_history::read_bytes("d7", text.as_bytes()).unwrap();
    let v = gauntlet_checkers::check(
        &h,
        &gauntlet_checkers::CheckOptions {
            expect: vec![gauntlet_checkers::Guarantee::ExactlyOnceProcessing],
            max_examples: 10,
        },
    );
    let json: Value = serde_json::from_str(&gauntlet_report::verdict_json(&v)).unwrap();
    assert_eq!(json["anomalies"]["duplicate-processing"]["count"], 1);
    assert_eq!(json["guarantees"]["exactly-once-processing"], "violated");
    let errs = errors(&json);
    assert!(errs.is_empty(), "{errs:#?}");
    // The report puts the example in words.
    let e = &v.anomalies[&gauntlet_checkers::AnomalyKind::DuplicateProcessing].examples[0];
    let s =
        gauntlet_report::sentence::sentence(gauntlet_checkers::AnomalyKind::DuplicateProcessing, e);
    assert!(s.contains("applied 2 times"), "{s}");
}
