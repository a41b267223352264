//! Snapshot tests: the rendered report of the D5 example, byte for byte.
//! `UPDATE_SNAPSHOTS=1 cargo test -p gauntlet-report` rewrites the snapshots.
use crate::common;
use gauntlet_report::html::{render, HtmlOptions};
use std::path::PathBuf;

fn snapshot(name: &str, got: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, got).expect("write snapshot");
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with UPDATE_SNAPSHOTS=1 to create it",
            path.display()
        )
    });
    if want != got {
        let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
        let at = w
            .iter()
            .zip(&g)
            .position(|(a, b)| a != b)
            .unwrap_or(w.len().min(g.len()));
        panic!(
            "{name} differs from {} at line {}:\n want: {}\n  got: {}\n(UPDATE_SNAPSHOTS=1 rewrites it)",
            path.display(),
            at + 1,
            w.get(at).map_or("<end>", |l| &l[..l.len().min(300)]),
            g.get(at).map_or("<end>", |l| &l[..l.len().min(300)]),
        );
    }
}

#[test]
fn d5_html() {
    let (h, v) = common::d5();
    let opts = HtmlOptions {
        title: "d5-commit-before-processing",
        scenario_toml: Some("name = \"d5-commit-before-processing\"\nbroker = \"kafka\"\n[delivery]\nmode = \"at-least-once\"\n"),
        scenario: None,
    };
    let page = render(&h, &v, &opts);
    // Rendering is deterministic.
    assert_eq!(page, render(&h, &v, &opts));
    snapshot("d5.html", &page);
}

#[test]
fn d5_junit() {
    let (_, v) = common::d5();
    snapshot(
        "d5.junit.xml",
        &gauntlet_report::junit::junit_xml(&v, "d5-commit-before-processing"),
    );
}

#[test]
fn d5_verdict_json() {
    let (_, v) = common::d5();
    snapshot("d5.verdict.json", &gauntlet_report::verdict_json(&v));
}
