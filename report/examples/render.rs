//! Reads a history, checks it and renders the HTML report and JUnit, printing
//! how long each step took and how big the page is:
//! `cargo run --release -p gauntlet-report --example render -- HISTORY OUT.html`
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(input), Some(out)) = (args.next(), args.next()) else {
        eprintln!("usage: render HISTORY OUT.html");
        std::process::exit(2);
    };
    let t = Instant::now();
    let h = gauntlet_history::read_path(&input)?;
    let read = t.elapsed();
    let t = Instant::now();
    let v = gauntlet_checkers::check(&h, &Default::default());
    let check = t.elapsed();
    let t = Instant::now();
    let page = gauntlet_report::html::render(
        &h,
        &v,
        &gauntlet_report::html::HtmlOptions {
            title: &input,
            scenario_toml: None,
            scenario: None,
        },
    );
    let render = t.elapsed();
    let t = Instant::now();
    let junit = gauntlet_report::junit::junit_xml(&v, &input);
    let junit_t = t.elapsed();
    std::fs::write(&out, &page)?;
    println!(
        "{input}: {} ops; read {read:.2?}, check {check:.2?}, render HTML {render:.2?} ({} bytes), JUnit {junit_t:.2?} ({} bytes); verdict {}",
        h.counts.ops,
        page.len(),
        junit.len(),
        v.valid.name()
    );
    Ok(())
}
