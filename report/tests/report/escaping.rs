//! Markup in a history (keys, groups, nemesis names and values) is shown as text.
use crate::common::{self, PAYLOAD};
use gauntlet_report::html::{render, HtmlOptions};

#[test]
fn payloads_stay_inert_in_html() {
    let (h, v) = common::hostile();
    assert!(v.count(gauntlet_checkers::AnomalyKind::Lost) > 0);
    let page = render(
        &h,
        &v,
        &HtmlOptions {
            title: PAYLOAD,
            scenario_toml: Some("name = \"<script>alert(1)</script>\"\n[delivery]\nmode = \"</td><script>x</script>\"\n"),
            scenario: None,
        },
    );
    // The report has no script of its own, so any `<script` would be injected.
    assert!(
        !page.to_ascii_lowercase().contains("<script"),
        "a raw <script> tag"
    );
    for raw in ["<img", "<svg onload", "<b onmouseover", "</title><script"] {
        assert!(!page.contains(raw), "raw {raw} in the page");
    }
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(page.contains("&lt;img src=x onerror="));
    // Group names, escaped, in the anomaly table.
    assert!(page.contains("&lt;b onmouseover=alert(1)&gt;g&amp;amp;&lt;/b&gt;"));
}

#[test]
fn payloads_stay_inert_in_junit_and_index() {
    let (_, v) = common::hostile();
    let xml = gauntlet_report::junit::junit_xml(&v, PAYLOAD);
    assert!(!xml.contains("<script"));
    assert!(xml.contains("&lt;script&gt;"));
    let dir = common::tmp("escaping-index");
    let run = dir.join("<script>alert(1)<").join("t&1");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("verdict.json"), gauntlet_report::verdict_json(&v)).unwrap();
    let page = gauntlet_report::index::index_html(&gauntlet_report::index::scan(&dir), PAYLOAD);
    assert!(!page.contains("<script"));
    assert!(page.contains("&lt;script&gt;alert(1)&lt;"));
    assert!(page.contains("href=\"/%3Cscript%3Ealert%281%29%3C/t%261/verdict.json\""));
}
