//! A large history renders to a bounded page, quickly.
use crate::common;
use gauntlet_report::html::{render, HtmlOptions};
use std::time::Instant;

#[test]
fn page_size_is_bounded() {
    // About 200k ops in a debug build; `gauntlet check --html` on 1M and 10M ops is measured by hand.
    let data = common::big_jsonl(400_000);
    let h = gauntlet_history::read_bytes("big", &data).unwrap();
    let v = gauntlet_checkers::check(&h, &Default::default());
    assert!(v.count(gauntlet_checkers::AnomalyKind::Lost) > 0);
    let t = Instant::now();
    let page = render(
        &h,
        &v,
        &HtmlOptions {
            title: "big",
            scenario_toml: None,
            scenario: None,
        },
    );
    let took = t.elapsed();
    eprintln!(
        "{} ops: {} bytes of HTML in {:.2?}",
        h.counts.ops,
        page.len(),
        took
    );
    assert!(page.len() < 5_000_000, "{} bytes", page.len());
    assert!(page.contains("sent position against received position"));
    // A small history's page is not much smaller: the size does not follow the history.
    let (h2, v2) = common::d5();
    let small = render(&h2, &v2, &HtmlOptions::default());
    assert!(
        page.len() < small.len() * 20,
        "{} vs {}",
        page.len(),
        small.len()
    );
}
