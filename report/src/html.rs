//! The self-contained HTML report: one file, inline CSS and inline SVG drawn
//! here, no script, no network, no external program.
//!
//! Whatever the size of the history the page stays small: every plot is drawn
//! from a bounded number of buckets or points ([`MAX_POINTS`], [`TIMELINE_COLUMNS`],
//! [`MAX_LANES`]), every table stops at [`MAX_ROWS`] rows and says how many
//! were left out, and long text is cut. All text that comes from the history
//! or the scenario is escaped ([`crate::escape::html`]).
use crate::escape::{cut, html as esc};
use crate::nemesis::{self, Faults};
use crate::scenario::{self, ScenarioInfo, DELIVERY_FIGURES, ORDERING_FIGURES};
use crate::sentence::sentence;
use gauntlet_checkers::{breaks, AnomalyKind, Status, Validity, Verdict};
use gauntlet_history::model::{History, Outcome, NONE, NO_OP};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Points per plotted series, at most.
pub const MAX_POINTS: usize = 2000;
/// Rows per table, at most.
pub const MAX_ROWS: usize = 500;
/// Time columns of the per-process timeline.
pub const TIMELINE_COLUMNS: usize = 500;
/// Process lanes of the timeline, at most (the busiest ones are shown).
pub const MAX_LANES: usize = 48;
/// Time buckets of the throughput and latency plots.
pub const BUCKETS: usize = 300;
/// Examples shown per anomaly type, at most.
pub const MAX_EXAMPLES: usize = 20;
/// Characters of one example's record (its JSON) and of its sentence, at most:
/// a bound for keys and names of any length.
pub const MAX_EXAMPLE_CHARS: usize = 4000;
/// Keys with anomalies that get a sent/received plot, at most.
pub const MAX_KEY_PLOTS: usize = 4;
/// Characters of the scenario file shown, at most.
pub const MAX_SCENARIO_CHARS: usize = 20_000;

/// What the page shows besides the history and the verdict.
#[derive(Debug, Clone, Copy, Default)]
pub struct HtmlOptions<'a> {
    /// Names the run or the file (shown in the title).
    pub title: &'a str,
    /// The run's effective scenario, when there is one.
    pub scenario_toml: Option<&'a str>,
    /// What the scenario says, from its typed form; read leniently from
    /// `scenario_toml` when absent.
    pub scenario: Option<&'a scenario::ScenarioInfo>,
}

const CSS: &str = r#"
:root{--ok:#1a7f37;--bad:#cf222e;--unk:#9a6700;--ink:#1f2328;--mute:#656d76;--line:#d0d7de;--bg:#f6f8fa;--fault:#ffb3b3}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--ink);background:#fff}
main{max-width:1280px;margin:0 auto;padding:20px 28px 60px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:17px;margin:28px 0 8px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:14px;margin:14px 0 4px}
.sub{color:var(--mute);margin:0 0 12px}
header{display:flex;gap:20px;align-items:center;flex-wrap:wrap;padding:14px 18px;background:var(--bg);border:1px solid var(--line);border-radius:8px}
.verdict{font-size:26px;font-weight:700;padding:6px 18px;border-radius:6px;color:#fff;letter-spacing:.5px}
.v-valid{background:var(--ok)}.v-invalid{background:var(--bad)}.v-unknown{background:var(--unk)}
table{border-collapse:collapse;margin:6px 0 4px;min-width:50%}
th,td{border:1px solid var(--line);padding:4px 10px;text-align:left;vertical-align:top}
th{background:var(--bg);font-weight:600}
td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.zero td{color:var(--mute)}
.holds{color:var(--ok);font-weight:600}.violated{color:var(--bad);font-weight:700}.unknown{color:var(--unk);font-weight:600}
.tag{display:inline-block;white-space:nowrap;font-size:12px;padding:0 6px;border-radius:10px;border:1px solid var(--line);color:var(--mute);margin:1px 2px}
.tag.bad{border-color:var(--bad);color:var(--bad)}
details summary{cursor:pointer;color:#0969da}
ol.ex{margin:6px 0;padding-left:22px}ol.ex li{margin:6px 0}details.record summary{font-size:12px}
pre{background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:8px 10px;overflow:auto;max-height:420px;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:pre-wrap;word-break:break-all}
code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.note{color:var(--mute);font-size:13px;margin:4px 0}
svg{display:block;max-width:100%;height:auto;background:#fff;border:1px solid var(--line);border-radius:6px;margin:6px 0}
svg text{font:11px system-ui,sans-serif;fill:#444}
svg .grid{stroke:#eaeef2;stroke-width:1}
svg .axis{stroke:#8c959f;stroke-width:1}
svg .fault{fill:var(--fault);opacity:.35}
svg .fault-iv{fill:#cf222e;opacity:.25}
svg .open-end{font-size:9px;fill:#cf222e}
svg .instant{stroke:#cf222e;stroke-width:1.5;stroke-dasharray:3 2}
svg .disk{fill:#8250df;stroke:#fff;stroke-width:.8}
svg .lane{fill:#f6f8fa}
.s-ok{fill:#0969da}.s-poll{fill:#2da44e}.s-info{fill:#bf8700}.s-fail{fill:#cf222e}.s-miss{fill:#cf222e}
i.s-ok{background:#0969da}i.s-poll{background:#2da44e}i.s-info{background:#bf8700}i.s-fail,i.s-miss{background:#cf222e}
.legend span{display:inline-block;margin-right:14px;font-size:12px}
.legend i{display:inline-block;width:12px;height:10px;margin-right:4px;vertical-align:-1px;border-radius:2px}
.grid2{display:grid;grid-template-columns:1fr 1fr;gap:14px}
@media (max-width:900px){.grid2{grid-template-columns:1fr}}
"#;

fn status_class(s: Status) -> &'static str {
    match s {
        Status::Holds => "holds",
        Status::Violated => "violated",
        Status::Unknown => "unknown",
    }
}

fn validity_class(v: Validity) -> &'static str {
    match v {
        Validity::True => "v-valid",
        Validity::False => "v-invalid",
        Validity::Unknown => "v-unknown",
    }
}

/// A duration in nanoseconds, readable.
pub fn fmt_ns(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// A count or rate, readable (1.2K, 3.4M).
pub fn fmt_num(x: f64) -> String {
    let a = x.abs();
    if a >= 1e9 {
        format!("{:.2}G", x / 1e9)
    } else if a >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}K", x / 1e3)
    } else if a >= 100.0 || x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

/// Round tick steps for an axis from 0 to `max`.
fn ticks(max: f64, want: usize) -> Vec<f64> {
    if max.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) || !max.is_finite() {
        return vec![0.0];
    }
    let raw = max / want.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let mut out = Vec::new();
    let mut t = 0.0;
    while t <= max * 1.0001 {
        out.push(t);
        t += step;
        if out.len() > 50 {
            break;
        }
    }
    out
}

/// Maps history time to x pixels.
#[derive(Clone, Copy)]
struct TimeAxis {
    t0: u64,
    span: f64,
    left: f64,
    width: f64,
}

impl TimeAxis {
    fn new(h: &History, left: f64, width: f64) -> TimeAxis {
        let t0 = h.counts.first_time;
        let span = h.counts.last_time.saturating_sub(t0).max(1) as f64;
        TimeAxis {
            t0,
            span,
            left,
            width,
        }
    }
    fn frac(&self, t: u64) -> f64 {
        (t.saturating_sub(self.t0) as f64 / self.span).clamp(0.0, 1.0)
    }
    fn x(&self, t: u64) -> f64 {
        self.left + self.frac(t) * self.width
    }
    fn col(&self, t: u64, cols: usize) -> usize {
        ((self.frac(t) * cols as f64) as usize).min(cols - 1)
    }
    /// Vertical grid and time labels (seconds since the first op).
    fn draw(&self, out: &mut String, top: f64, bottom: f64) {
        let secs = self.span / 1e9;
        for t in ticks(secs, 8) {
            let x = self.left + t / secs * self.width;
            let _ = write!(
                out,
                r#"<line class="grid" x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{bottom:.1}"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                bottom + 13.0,
                fmt_secs(t, secs)
            );
        }
    }
}

fn fmt_secs(t: f64, span: f64) -> String {
    if span >= 10.0 {
        format!("{t:.0}s")
    } else if span >= 0.1 {
        format!("{t:.2}s")
    } else {
        fmt_ns(t * 1e9)
    }
}

/// Shaded fault intervals and dashed lines at instant fault events.
fn draw_faults(
    out: &mut String,
    h: &History,
    faults: &Faults,
    ax: &TimeAxis,
    top: f64,
    bottom: f64,
    lane: Option<(f64, f64)>,
) {
    // The union of the fault intervals, shaded once (overlaps do not darken).
    let end_of = |iv: &nemesis::Interval| iv.end_time.unwrap_or(h.counts.last_time);
    let mut spans: Vec<(u64, u64)> = faults
        .intervals
        .iter()
        .map(|iv| (iv.start_time, end_of(iv)))
        .collect();
    spans.sort_unstable();
    let mut union: Vec<(u64, u64)> = Vec::new();
    for (a, b) in spans {
        match union.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => union.push((a, b)),
        }
    }
    let hgt = bottom - top;
    for &(a, b) in union.iter().take(MAX_ROWS) {
        let (x0, x1) = (ax.x(a), ax.x(b));
        let _ = write!(
            out,
            r#"<rect class="fault" x="{x0:.1}" y="{top:.1}" width="{:.1}" height="{hgt:.1}"><title>faults active</title></rect>"#,
            (x1 - x0).max(1.5)
        );
    }
    // Each interval in the nemesis lane, with what it was.
    if let Some((ly, lh)) = lane {
        for iv in faults.intervals.iter().take(MAX_ROWS) {
            let x0 = ax.x(iv.start_time);
            let x1 = ax.x(end_of(iv));
            let label = match (&iv.end_f, iv.end_index) {
                (Some(f), Some(i)) => format!(
                    "{} {} (op {}) until {} (op {})",
                    iv.f, iv.target, iv.start_index, f, i
                ),
                _ => format!(
                    "{} {} (op {}), never ended: still open at the end of the history",
                    iv.f, iv.target, iv.start_index
                ),
            };
            let _ = write!(
                out,
                r#"<rect class="fault-iv" x="{x0:.1}" y="{ly:.1}" width="{:.1}" height="{lh:.1}"><title>{}</title></rect>"#,
                (x1 - x0).max(1.5),
                esc(&cut(&label, 200))
            );
        }
        if faults.open_at_end().next().is_some() {
            let _ = write!(
                out,
                r#"<text class="open-end" x="{:.1}" y="{:.1}" text-anchor="end">open at end</text>"#,
                ax.x(h.counts.last_time) - 3.0,
                ly + lh - 1.5
            );
        }
    }
    for &i in faults.instants.iter().take(MAX_ROWS) {
        let Some(e) = h.nemesis.get(i) else { continue };
        let x = ax.x(e.time);
        let label = format!("{} {} (op {})", e.f, cut(&e.value, 160), e.index);
        let _ = write!(
            out,
            r#"<line class="instant" x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{bottom:.1}"><title>{}</title></line>"#,
            esc(&label)
        );
        if e.f == crate::repartition::F {
            // The moment a partition count changed (seed O4) is named on the plot.
            let _ = write!(
                out,
                r#"<text class="open-end" x="{:.1}" y="{:.1}">{}</text>"#,
                x + 3.0,
                top + 10.0,
                crate::repartition::LABEL
            );
        }
    }
    // What each disk fault dropped or changed, node by node, where it happened: a
    // marker on the nemesis lane (or the plot's top) whose title says it in words.
    let y = lane.map_or(top, |(ly, _)| ly);
    for d in crate::disk::effects(&h.nemesis).iter().take(MAX_ROWS) {
        let x = ax.x(d.time);
        let label = format!("{} on {} (op {}): {}", d.fault, d.node, d.index, d.words);
        let _ = write!(
            out,
            r#"<path class="disk" d="M{x:.1},{y:.1}l4.5,5l-4.5,5l-4.5,-5z"><title>{}</title></path>"#,
            esc(&cut(&label, 400))
        );
    }
}

/// Renders the report page.
pub fn render(h: &History, v: &Verdict, opts: &HtmlOptions<'_>) -> String {
    let mut out = String::with_capacity(256 << 10);
    let faults = nemesis::faults(&h.nemesis);
    let info = match opts.scenario {
        Some(i) => i.clone(),
        None => opts.scenario_toml.map(scenario::parse).unwrap_or_default(),
    };
    let title = if opts.title.is_empty() {
        "history"
    } else {
        opts.title
    };
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\
         <title>Gauntlet: {}</title><style>{CSS}</style></head><body><main>\n",
        esc(&cut(title, 200))
    );
    header(&mut out, v, title);
    out.push('\n');
    guarantees(&mut out, v);
    anomalies(&mut out, v);
    timeline(&mut out, h, v, &faults);
    rates(&mut out, h, &faults);
    flow_section(&mut out, h, v, &faults);
    key_plots(&mut out, h, v);
    fault_table(&mut out, h, &faults);
    let t0 = h.counts.first_time;
    crate::repartition::section(&mut out, h, &|t| fmt_ns(t.saturating_sub(t0) as f64));
    scenario_section(&mut out, v, &info, opts.scenario_toml);
    stats_section(&mut out, v);
    out.push_str("</main></body></html>\n");
    out
}

fn header(out: &mut String, v: &Verdict, title: &str) {
    let s = &v.stats;
    let expected: Vec<&str> = v.expected.iter().map(|g| g.name()).collect();
    let _ = write!(
        out,
        r#"<header><div id="verdict" class="verdict {}">{}</div><div><h1>{}</h1><p class="sub">judged against <b>{}</b> &middot; {} ops &middot; {} sends ({} ok, {} fail, {} info) &middot; {} deliveries &middot; {} group(s) &middot; {} &middot; {}</p></div></header>"#,
        validity_class(v.valid),
        v.valid.name().to_uppercase(),
        esc(&cut(title, 200)),
        if expected.is_empty() {
            "no guarantee".to_string()
        } else {
            expected.join(", ")
        },
        s.ops,
        s.sends,
        s.sends_ok,
        s.sends_fail,
        s.sends_info,
        s.delivered,
        s.groups,
        fmt_ns(s.duration_ns as f64),
        if s.drained {
            "drained"
        } else {
            "no drained marker"
        }
    );
    if let Some(i) = &v.incomplete {
        let what = match i.reason {
            gauntlet_checkers::IncompleteReason::Interrupted => "Run interrupted",
            gauntlet_checkers::IncompleteReason::HistoryWriteFailed => {
                "History incomplete, not judged"
            }
        };
        let _ = write!(
            out,
            r#"<p id="incomplete" class="note"><b>{what}</b>: {}</p>"#,
            esc(&cut(&i.detail, 500))
        );
    }
}

fn guarantees(out: &mut String, v: &Verdict) {
    out.push_str(r#"<section id="guarantees"><h2>Guarantees</h2><table><tr><th>guarantee</th><th>claimed</th><th>verdict</th><th>broken by</th></tr>"#);
    for g in v.guarantee_list() {
        let st = v.status(g);
        let by: Vec<String> = breaks(g)
            .iter()
            .filter(|&&k| v.count(k) > 0)
            .map(|&k| format!("<span class=\"tag bad\">{} {}</span>", k.name(), v.count(k)))
            .collect();
        let _ = write!(
            out,
            r#"<tr><td>{}</td><td>{}</td><td class="{}">{}</td><td>{}</td></tr>"#,
            g.name(),
            if v.expected.contains(&g) { "yes" } else { "" },
            status_class(st),
            if st == Status::Violated {
                "VIOLATED"
            } else {
                st.name()
            },
            by.join(" ")
        );
    }
    out.push_str("</table></section>\n");
}

fn anomaly_role(v: &Verdict, k: AnomalyKind) -> String {
    if k.is_integrity() {
        return "<span class=\"tag bad\">integrity</span>".into();
    }
    if k.is_informational() {
        return "<span class=\"tag\">information</span>".into();
    }
    if k == AnomalyKind::Unseen {
        return "<span class=\"tag\">makes at-least-once unknown</span>".into();
    }
    if k == AnomalyKind::Gap {
        return "<span class=\"tag\">order evidence (reorder or loss)</span>".into();
    }
    let gs: Vec<String> = v
        .guarantee_list()
        .iter()
        .filter(|g| breaks(**g).contains(&k))
        .map(|g| {
            let cls = if v.expected.contains(g) {
                "tag bad"
            } else {
                "tag"
            };
            format!("<span class=\"{cls}\">breaks {}</span>", g.name())
        })
        .collect();
    if gs.is_empty() {
        "<span class=\"tag\">ordering detail</span>".into()
    } else {
        gs.join(" ")
    }
}

fn anomalies(out: &mut String, v: &Verdict) {
    out.push_str(r#"<section id="anomalies"><h2>Anomalies</h2><p class="note">Counts are distinct values (or the unit given). Each example is said in words, naming ops by their <code>index</code> in the history; open a row to see them, and an example's record for its JSON as in verdict.json.</p><table><tr><th>anomaly</th><th>count</th><th>unit</th><th>role</th><th>by group</th><th>evidence</th></tr>"#);
    for k in v.kinds() {
        let a = v.anomalies.get(&k);
        let count = a.map_or(0, |a| a.count);
        let groups = a
            .map(|a| {
                let mut s = String::new();
                for (g, n) in a.by_group.iter().take(20) {
                    let name = if g.is_empty() { "(default)" } else { g };
                    let _ = write!(s, "<span class=\"tag\">{} {n}</span>", esc(&cut(name, 60)));
                }
                if a.by_group.len() > 20 {
                    let _ = write!(s, " {} more groups not shown", a.by_group.len() - 20);
                }
                // Where each was: a two-hop anomaly where it left the pipeline or
                // broke, a lost message where it was among its group's reads.
                for (place, n) in &a.by_place {
                    let _ = write!(s, "<span class=\"tag\">{} {n}</span>", esc(&cut(place, 60)));
                }
                s
            })
            .unwrap_or_default();
        let mut evidence = String::new();
        if let Some(a) = a.filter(|a| !a.examples.is_empty()) {
            let _ = write!(
                evidence,
                "<details><summary>{} example(s): {}</summary><ol class=\"ex\">",
                a.examples.len(),
                esc(&cut(&sentence(k, &a.examples[0]), MAX_EXAMPLE_CHARS))
            );
            for e in a.examples.iter().take(MAX_EXAMPLES) {
                let pretty = serde_json::to_string_pretty(e).unwrap_or_default();
                let _ = write!(
                    evidence,
                    "<li>{}<details class=\"record\"><summary>record</summary><pre>{}</pre></details></li>",
                    esc(&cut(&sentence(k, e), MAX_EXAMPLE_CHARS)),
                    esc(&cut(&pretty, MAX_EXAMPLE_CHARS))
                );
            }
            evidence.push_str("</ol>");
            if a.examples.len() > MAX_EXAMPLES {
                let _ = write!(
                    evidence,
                    "<p class=\"note\">{} more examples not shown (see verdict.json)</p>",
                    a.examples.len() - MAX_EXAMPLES
                );
            }
            if (a.examples.len() as u64) < count {
                let _ = write!(
                    evidence,
                    "<p class=\"note\">{} more not kept by the checker</p>",
                    count - a.examples.len() as u64
                );
            }
            evidence.push_str("</details>");
        }
        let _ = write!(
            out,
            r#"<tr id="anomaly-{name}" class="{cls}"><td>{name}</td><td class="n">{count}</td><td>{unit}</td><td>{role}</td><td>{groups}</td><td>{evidence}</td></tr>"#,
            name = k.name(),
            cls = if count == 0 { "zero" } else { "found" },
            unit = k.unit(),
            role = anomaly_role(v, k),
        );
    }
    out.push_str("</table></section>\n");
}

/// Judged groups: those that polled, or the default group when none did.
fn judged_groups(h: &History) -> Vec<u32> {
    let mut seen = vec![false; h.groups.len().max(1)];
    for p in &h.polls {
        if let Some(s) = seen.get_mut(p.group as usize) {
            *s = true;
        }
    }
    let g: Vec<u32> = (0..seen.len() as u32)
        .filter(|&i| seen[i as usize])
        .collect();
    if g.is_empty() {
        vec![0]
    } else {
        g
    }
}

/// Sends that ended `ok` and were never delivered to at least one judged group.
fn missing_sends(h: &History) -> Vec<u32> {
    let groups = judged_groups(h);
    let mut slot = vec![NONE; h.groups.len().max(1)];
    for (i, &g) in groups.iter().enumerate() {
        slot[g as usize] = i as u32;
    }
    let n = h.sends.len();
    let mut got = vec![vec![false; n]; groups.len()];
    for d in &h.deliveries {
        if d.send == NONE {
            continue;
        }
        let g = h.polls[d.poll as usize].group;
        let s = slot.get(g as usize).copied().unwrap_or(NONE);
        if s != NONE {
            got[s as usize][d.send as usize] = true;
        }
    }
    (0..n as u32)
        .filter(|&i| {
            h.sends[i as usize].outcome == Outcome::Ok && got.iter().any(|g| !g[i as usize])
        })
        .collect()
}

const LANE_H: f64 = 14.0;
const LEFT: f64 = 110.0;
const PLOT_W: f64 = 1070.0;
const SVG_W: f64 = 1200.0;

fn timeline(out: &mut String, h: &History, v: &Verdict, faults: &Faults) {
    let cols = TIMELINE_COLUMNS;
    let nproc = h.processes.len();
    // Busiest processes first, shown in process-number order.
    let mut ops = vec![0u64; nproc];
    for s in &h.sends {
        if let Some(o) = ops.get_mut(s.process as usize) {
            *o += 1;
        }
    }
    for p in &h.polls {
        if let Some(o) = ops.get_mut(p.process as usize) {
            *o += 1;
        }
    }
    let mut chosen: Vec<u32> = (0..nproc as u32).collect();
    chosen.sort_by_key(|&p| (std::cmp::Reverse(ops[p as usize]), h.process_number(p)));
    let left_out = chosen.len().saturating_sub(MAX_LANES);
    let left_out_ops: u64 = chosen
        .iter()
        .skip(MAX_LANES)
        .map(|&p| ops[p as usize])
        .sum();
    chosen.truncate(MAX_LANES);
    chosen.sort_by_key(|&p| h.process_number(p));
    let mut lane_of = vec![usize::MAX; nproc];
    for (i, &p) in chosen.iter().enumerate() {
        lane_of[p as usize] = i;
    }
    // Per lane and column: 1 poll, 2 send ok, 4 send info, 8 send fail.
    let mut cells = vec![0u8; chosen.len() * cols];
    let ax = TimeAxis::new(h, LEFT, PLOT_W);
    for s in &h.sends {
        let lane = lane_of
            .get(s.process as usize)
            .copied()
            .unwrap_or(usize::MAX);
        if lane == usize::MAX {
            continue;
        }
        let bit = match s.outcome {
            Outcome::Ok => 2,
            Outcome::Info => 4,
            Outcome::Fail => 8,
        };
        let a = ax.col(s.invoke_time, cols);
        let b = if s.complete == NO_OP {
            a
        } else {
            ax.col(s.complete_time, cols).max(a)
        };
        for c in &mut cells[lane * cols + a..=lane * cols + b] {
            *c |= bit;
        }
    }
    for p in &h.polls {
        let lane = lane_of
            .get(p.process as usize)
            .copied()
            .unwrap_or(usize::MAX);
        if lane != usize::MAX {
            cells[lane * cols + ax.col(p.complete_time, cols)] |= 1;
        }
    }
    let missing = if v.count(AnomalyKind::Lost) + v.count(AnomalyKind::Unseen) > 0 {
        missing_sends(h)
    } else {
        Vec::new()
    };
    // Aggregate lanes: every send and every poll, whatever its process.
    let mut all_sends = vec![0u8; cols];
    let mut all_polls = vec![0u8; cols];
    let mut all_bad = vec![0u8; cols];
    for s in &h.sends {
        let bit = match s.outcome {
            Outcome::Ok => 2,
            Outcome::Info => 4,
            Outcome::Fail => 8,
        };
        let c = ax.col(s.invoke_time, cols);
        if bit == 2 {
            all_sends[c] |= 2;
        } else {
            all_bad[c] |= bit;
        }
    }
    for p in &h.polls {
        all_polls[ax.col(p.complete_time, cols)] |= 1;
    }
    let mut miss_cols = vec![false; cols];
    for &s in &missing {
        miss_cols[ax.col(h.sends[s as usize].invoke_time, cols)] = true;
    }
    // Lanes: nemesis, missing (when any), all sends ok, all sends fail/info, all polls, then each process.
    let extra = 4 + usize::from(!missing.is_empty());
    let lanes = chosen.len() + extra;
    let top = 10.0;
    let bottom = top + lanes as f64 * LANE_H;
    let height = bottom + 24.0;
    out.push_str(r#"<section id="timeline-section"><h2>Timeline</h2><p class="note">Operations over time: all processes together, then each process. Shaded: some fault is active; the nemesis lane shows each fault (hover for what it was); dashed lines are instant faults and events; a fault that never ended is shaded to the end and named under Faults.</p>"#);
    out.push_str(r#"<p class="legend"><span><i class="s-ok"></i>send ok</span><span><i class="s-info"></i>send info (unknown)</span><span><i class="s-fail"></i>send fail</span><span><i class="s-poll"></i>poll ok</span><span><i style="background:#ffb3b3"></i>fault</span>"#);
    if !missing.is_empty() {
        out.push_str(
            r#"<span><i class="s-miss"></i>send of a message never delivered to a group</span>"#,
        );
    }
    out.push_str("</p>");
    let _ = write!(
        out,
        r#"<svg id="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {SVG_W} {height:.0}" width="{SVG_W}" height="{height:.0}" role="img" aria-label="timeline of operations per process">"#
    );
    for i in 0..lanes {
        if i % 2 == 0 {
            let _ = write!(
                out,
                r#"<rect class="lane" x="{LEFT}" y="{:.1}" width="{PLOT_W}" height="{LANE_H}"/>"#,
                top + i as f64 * LANE_H
            );
        }
    }
    ax.draw(out, top, bottom);
    draw_faults(
        out,
        h,
        faults,
        &ax,
        top,
        bottom,
        Some((top + 2.0, LANE_H - 4.0)),
    );
    let cw = PLOT_W / cols as f64;
    let label = |out: &mut String, i: usize, text: &str| {
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT - 6.0,
            top + i as f64 * LANE_H + LANE_H - 3.5,
            esc(text)
        );
    };
    label(out, 0, "nemesis");
    for &i in &faults.instants {
        if let Some(e) = h.nemesis.get(i) {
            let x = ax.x(e.time);
            let _ = write!(
                out,
                r#"<path class="s-fail" d="M{:.1} {:.1}l4 8h-8z"/>"#,
                x,
                top + 3.0
            );
        }
    }
    for iv in faults.intervals.iter().take(MAX_ROWS) {
        let x = ax.x(iv.start_time);
        let _ = write!(
            out,
            r#"<path class="s-fail" d="M{:.1} {:.1}l4 8h-8z"/>"#,
            x,
            top + 3.0
        );
    }
    if !missing.is_empty() {
        label(out, 1, "never delivered");
        run_rects(
            out,
            &miss_cols
                .iter()
                .map(|&m| u8::from(m) * 16)
                .collect::<Vec<_>>(),
            top + LANE_H,
            cw,
        );
    }
    let agg = extra - 3;
    for (i, (name, cells)) in [
        ("sends ok", &all_sends),
        ("sends fail/info", &all_bad),
        ("polls", &all_polls),
    ]
    .into_iter()
    .enumerate()
    {
        label(out, agg + i, name);
        run_rects(out, cells, top + (agg + i) as f64 * LANE_H, cw);
    }
    for (i, &p) in chosen.iter().enumerate() {
        let lane = i + extra;
        label(out, lane, &format!("p{}", h.process_number(p)));
        run_rects(
            out,
            &cells[i * cols..(i + 1) * cols],
            top + lane as f64 * LANE_H,
            cw,
        );
    }
    let _ = write!(
        out,
        r#"<line class="axis" x1="{LEFT}" y1="{bottom:.1}" x2="{:.1}" y2="{bottom:.1}"/></svg>"#,
        LEFT + PLOT_W
    );
    if left_out > 0 {
        let _ = write!(
            out,
            "<p class=\"note\">{left_out} more processes not shown ({left_out_ops} ops); the {MAX_LANES} busiest are.</p>"
        );
    }
    let _ = writeln!(
        out,
        "<p class=\"note\">{} processes, {} time columns of {} each.</p></section>",
        nproc,
        cols,
        fmt_ns(ax.span / cols as f64)
    );
}

/// One rect per run of equal, non-empty cells.
fn run_rects(out: &mut String, cells: &[u8], y: f64, cw: f64) {
    let class = |c: u8| {
        if c & 16 != 0 {
            Some("s-miss")
        } else if c & 8 != 0 {
            Some("s-fail")
        } else if c & 4 != 0 {
            Some("s-info")
        } else if c & 2 != 0 {
            Some("s-ok")
        } else if c & 1 != 0 {
            Some("s-poll")
        } else {
            None
        }
    };
    let mut i = 0;
    while i < cells.len() {
        let c = class(cells[i]);
        let mut j = i + 1;
        while j < cells.len() && class(cells[j]) == c {
            j += 1;
        }
        if let Some(cls) = c {
            let _ = write!(
                out,
                r#"<rect class="{cls}" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}"/>"#,
                LEFT + i as f64 * cw,
                y + 2.0,
                (j - i) as f64 * cw,
                LANE_H - 4.0
            );
        }
        i = j;
    }
}

/// A log-scale histogram of latencies: about 12% resolution, fixed size.
struct LogHist {
    bins: Vec<u32>,
    n: u64,
}

const HIST_BINS: usize = 16 + 60 * 8;

impl LogHist {
    fn new() -> Self {
        LogHist {
            bins: vec![0; HIST_BINS],
            n: 0,
        }
    }
    fn bin(v: u64) -> usize {
        if v < 16 {
            return v as usize;
        }
        let e = 63 - v.leading_zeros() as usize;
        let sub = ((v >> (e - 3)) & 7) as usize;
        (16 + (e - 4) * 8 + sub).min(HIST_BINS - 1)
    }
    fn low(bin: usize) -> f64 {
        if bin < 16 {
            return bin as f64;
        }
        let e = (bin - 16) / 8 + 4;
        let sub = (bin - 16) % 8;
        ((8 + sub) as f64) * 2f64.powi(e as i32 - 3)
    }
    fn add(&mut self, v: u64) {
        self.bins[Self::bin(v)] += 1;
        self.n += 1;
    }
    fn quantile(&self, q: f64) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((self.n as f64 * q).ceil() as u64).clamp(1, self.n);
        let mut seen = 0u64;
        for (i, &c) in self.bins.iter().enumerate() {
            seen += u64::from(c);
            if seen >= rank {
                // The middle of the bin.
                let lo = Self::low(i);
                let hi = if i + 1 < HIST_BINS {
                    Self::low(i + 1)
                } else {
                    lo
                };
                return Some((lo + hi) / 2.0);
            }
        }
        None
    }
}

struct Series<'a> {
    name: &'a str,
    color: &'a str,
    values: Vec<Option<f64>>,
}

/// A line chart over time with faults shaded.
fn line_chart(
    out: &mut String,
    h: &History,
    faults: &Faults,
    id: &str,
    title: &str,
    unit: &dyn Fn(f64) -> String,
    series: &[Series<'_>],
) {
    let (w, hgt) = (580.0, 240.0);
    let (left, right, top, bottom) = (64.0, 12.0, 24.0, 210.0);
    let pw = w - left - right;
    let ax = TimeAxis::new(h, left, pw);
    let max = series
        .iter()
        .flat_map(|s| s.values.iter().flatten())
        .fold(0.0f64, |a, &b| a.max(b));
    let ymax = ticks(max, 4)
        .last()
        .copied()
        .unwrap_or(1.0)
        .max(max)
        .max(1e-9);
    let y = |v: f64| bottom - v / ymax * (bottom - top);
    let _ = write!(
        out,
        r#"<div><h3>{}</h3><svg id="{id}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {hgt}" width="{w}" height="{hgt}" role="img" aria-label="{}">"#,
        esc(title),
        esc(title)
    );
    draw_faults(out, h, faults, &ax, top, bottom, None);
    for t in ticks(max, 4) {
        let yy = y(t);
        let _ = write!(
            out,
            r#"<line class="grid" x1="{left}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            left + pw,
            left - 4.0,
            yy + 4.0,
            esc(&unit(t))
        );
    }
    ax.draw(out, top, bottom);
    let mut lx = left;
    for s in series {
        let n = s.values.len().max(1);
        let step = s.values.len().div_ceil(MAX_POINTS).max(1);
        let mut d = String::new();
        let mut pen = false;
        for (i, v) in s.values.iter().enumerate().step_by(step) {
            match v {
                Some(v) => {
                    let x = left + (i as f64 + 0.5) / n as f64 * pw;
                    let _ = write!(d, "{}{x:.1} {:.1}", if pen { "L" } else { "M" }, y(*v));
                    pen = true;
                }
                None => pen = false,
            }
        }
        let _ = write!(
            out,
            r#"<path d="{d}" fill="none" stroke="{}" stroke-width="1.6"/><rect x="{lx:.1}" y="6" width="10" height="10" fill="{}"/><text x="{:.1}" y="15">{}</text>"#,
            s.color,
            s.color,
            lx + 14.0,
            esc(s.name)
        );
        lx += 24.0 + 7.0 * s.name.len() as f64;
    }
    let _ = write!(
        out,
        r#"<line class="axis" x1="{left}" y1="{bottom}" x2="{:.1}" y2="{bottom}"/></svg></div>"#,
        left + pw
    );
}

fn rates(out: &mut String, h: &History, faults: &Faults) {
    let ax = TimeAxis::new(h, 0.0, 1.0);
    let n = BUCKETS;
    let bucket_s = ax.span / n as f64 / 1e9;
    let mut sent = vec![0u64; n];
    let mut delivered = vec![0u64; n];
    let mut lat: Vec<LogHist> = (0..n).map(|_| LogHist::new()).collect();
    for s in &h.sends {
        if s.outcome == Outcome::Ok && s.complete != NO_OP {
            let b = ax.col(s.complete_time, n);
            sent[b] += 1;
            lat[b].add(s.complete_time.saturating_sub(s.invoke_time));
        }
    }
    for p in &h.polls {
        delivered[ax.col(p.complete_time, n)] += u64::from(p.count);
    }
    let rate = |v: &[u64]| -> Vec<Option<f64>> {
        v.iter()
            .map(|&c| Some(c as f64 / bucket_s.max(1e-12)))
            .collect()
    };
    out.push_str(r#"<section id="rates"><h2>Throughput and latency</h2>"#);
    let _ = write!(
        out,
        "<p class=\"note\">{n} time buckets of {}; latency is of sends that ended ok, invoke to completion, by completion time (p50/p99 per bucket from a log histogram, about 12% resolution). Faults shaded.</p><div class=\"grid2\">",
        fmt_ns(bucket_s * 1e9)
    );
    line_chart(
        out,
        h,
        faults,
        "throughput",
        "Throughput (messages/s)",
        &|x| fmt_num(x),
        &[
            Series {
                name: "sends ok/s",
                color: "#0969da",
                values: rate(&sent),
            },
            Series {
                name: "deliveries/s",
                color: "#2da44e",
                values: rate(&delivered),
            },
        ],
    );
    line_chart(
        out,
        h,
        faults,
        "latency",
        "Send latency",
        &|x| fmt_ns(x),
        &[
            Series {
                name: "p50",
                color: "#8250df",
                values: lat.iter().map(|l| l.quantile(0.5)).collect(),
            },
            Series {
                name: "p99",
                color: "#bf3989",
                values: lat.iter().map(|l| l.quantile(0.99)).collect(),
            },
        ],
    );
    out.push_str("</div></section>\n");
}

fn lag_cell(l: Option<gauntlet_checkers::Latency>) -> String {
    l.map(|l| {
        format!(
            "{} / {} / {}",
            fmt_ns(l.p50 as f64),
            fmt_ns(l.p99 as f64),
            fmt_ns(l.max as f64)
        )
    })
    .unwrap_or_else(|| "-".into())
}

fn flow_table(out: &mut String, what: &str, rows: &[gauntlet_checkers::FlowRow], more: u64) {
    let _ = write!(
        out,
        "<table class=\"flow\"><tr><th>{what}</th><th>sends</th><th>share</th><th>ok/s</th><th>delivered</th><th>lag p50 / p99 / max</th></tr>"
    );
    for r in rows {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{:.1}%</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&cut(&r.name, 80)),
            r.sends,
            r.share * 100.0,
            fmt_num(r.sends_ok_per_s),
            r.delivered,
            lag_cell(r.lag_ns)
        );
    }
    if more > 0 {
        let _ = write!(
            out,
            "<tr><td colspan=\"6\">{more} more {what}s, cooler, not listed</td></tr>"
        );
    }
    out.push_str("</table>");
}

/// Seed O6: throughput and consumer lag per key and per partition, the hottest
/// first (from `stats.flow`), and lag over time on the report's time axis.
fn flow_section(out: &mut String, h: &History, v: &Verdict, faults: &Faults) {
    let Some(f) = &v.stats.flow else { return };
    out.push_str(r#"<section id="flow"><h2>Keys and partitions: throughput and consumer lag</h2><p class="note">Information, not a violation (seed O6): how the sends spread over keys and partitions, and how long each message waited. Lag is from the send's invoke to the end of the poll that first delivered it to any group; messages never delivered have none. Hottest (most sends) first; rates over the sending window"#);
    let _ = write!(
        out,
        " ({}).</p><div class=\"grid2\"><div>",
        fmt_ns(f.window_s * 1e9)
    );
    flow_table(out, "key", &f.keys, f.keys_not_listed);
    out.push_str("</div><div>");
    if f.partitions.is_empty() {
        out.push_str("<p class=\"note\">The broker named no partitions.</p>");
    } else {
        flow_table(out, "partition", &f.partitions, f.partitions_not_listed);
    }
    out.push_str("</div>");
    // Lag over time, by the send's invoke, on the time axis of the other charts.
    let ax = TimeAxis::new(h, 0.0, 1.0);
    let n = BUCKETS;
    let hottest = f.keys.first().and_then(|r| h.keys.get(&r.name));
    let mut all: Vec<LogHist> = (0..n).map(|_| LogHist::new()).collect();
    let mut hot: Vec<LogHist> = (0..n).map(|_| LogHist::new()).collect();
    let mut seen = vec![false; h.sends.len()];
    for d in &h.deliveries {
        if d.send == NONE || std::mem::replace(&mut seen[d.send as usize], true) {
            continue;
        }
        let s = &h.sends[d.send as usize];
        let lag = h.polls[d.poll as usize]
            .complete_time
            .saturating_sub(s.invoke_time);
        let b = ax.col(s.invoke_time, n);
        all[b].add(lag);
        if Some(s.key) == hottest {
            hot[b].add(lag);
        }
    }
    let hot_name = format!(
        "{} p99",
        f.keys.first().map(|r| cut(&r.name, 20)).unwrap_or_default()
    );
    line_chart(
        out,
        h,
        faults,
        "lag",
        "Consumer lag over time (by send invoke)",
        &|x| fmt_ns(x),
        &[
            Series {
                name: "p50",
                color: "#0969da",
                values: all.iter().map(|l| l.quantile(0.5)).collect(),
            },
            Series {
                name: "p99",
                color: "#bf3989",
                values: all.iter().map(|l| l.quantile(0.99)).collect(),
            },
            Series {
                name: &hot_name,
                color: "#d1242f",
                values: hot.iter().map(|l| l.quantile(0.99)).collect(),
            },
        ],
    );
    out.push_str("</div></section>\n");
}

/// (key, group) pairs named by anomaly examples, first found first.
fn anomaly_keys(h: &History, v: &Verdict) -> Vec<(u32, u32, Vec<&'static str>)> {
    let mut found: Vec<(u32, u32, Vec<&'static str>)> = Vec::new();
    let mut default_group: Option<u32> = None;
    for k in AnomalyKind::ALL {
        if k.is_informational() {
            continue;
        }
        let Some(a) = v.anomalies.get(&k) else {
            continue;
        };
        for e in &a.examples {
            let Some(key) = e.key() else {
                continue;
            };
            let group = e.group();
            let Some(kid) = h.keys.get(key) else { continue };
            let gid = match group.and_then(|g| h.groups.get(g)) {
                Some(g) => g,
                None => *default_group
                    .get_or_insert_with(|| judged_groups(h).first().copied().unwrap_or(0)),
            };
            if let Some(f) = found.iter_mut().find(|f| f.0 == kid && f.1 == gid) {
                if !f.2.contains(&k.name()) {
                    f.2.push(k.name());
                }
            } else if found.len() < MAX_KEY_PLOTS {
                found.push((kid, gid, vec![k.name()]));
            }
        }
    }
    found
}

fn key_plots(out: &mut String, h: &History, v: &Verdict) {
    let pairs = anomaly_keys(h, v);
    if pairs.is_empty() {
        return;
    }
    out.push_str(r#"<section id="keys"><h2>Keys with anomalies: sent position against received position</h2><p class="note">x: the n-th delivery of the key to the group (every delivery counts); y: the message's place among the key's sends, in invoke order. In order and without loss the points lie on the diagonal. Red marks at the right edge: sends that ended ok and never reached the group; orange: a value received again.</p><div class="grid2">"#);
    // Sent position of each send of the chosen keys.
    let mut rank = vec![NONE; h.sends.len()];
    let mut next: BTreeMap<u32, u32> = pairs.iter().map(|p| (p.0, 0)).collect();
    for (i, s) in h.sends.iter().enumerate() {
        if let Some(n) = next.get_mut(&s.key) {
            rank[i] = *n;
            *n += 1;
        }
    }
    for (key, group, kinds) in &pairs {
        let mut pts: Vec<(u32, u32, bool)> = Vec::new();
        let mut seen = vec![false; h.sends.len()];
        for d in &h.deliveries {
            if d.key != *key || d.send == NONE {
                continue;
            }
            if h.polls[d.poll as usize].group != *group {
                continue;
            }
            let again = std::mem::replace(&mut seen[d.send as usize], true);
            pts.push((pts.len() as u32, rank[d.send as usize], again));
        }
        let missing: Vec<u32> = h
            .sends
            .iter()
            .enumerate()
            .filter(|(i, s)| s.key == *key && s.outcome == Outcome::Ok && !seen[*i])
            .map(|(i, _)| rank[i])
            .collect();
        let sent_n = next.get(key).copied().unwrap_or(0).max(1);
        let recv_n = (pts.len() as u32).max(1);
        let (w, hgt) = (580.0, 300.0);
        let (left, top, pw, ph) = (56.0, 14.0, 480.0, 250.0);
        let xs = |r: u32| left + f64::from(r) / f64::from(recv_n) * pw;
        let ys = |s: u32| top + ph - f64::from(s) / f64::from(sent_n) * ph;
        let gname = h.group_name(*group);
        let _ = write!(
            out,
            r#"<div><h3>key <code>{}</code>, group <code>{}</code> ({})</h3><svg class="keyplot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {hgt}" width="{w}" height="{hgt}" role="img" aria-label="sent against received positions">"#,
            esc(&cut(h.key_name(*key), 80)),
            esc(&cut(if gname.is_empty() { "(default)" } else { gname }, 80)),
            kinds.join(", ")
        );
        for t in ticks(f64::from(sent_n), 4) {
            let y = top + ph - t / f64::from(sent_n) * ph;
            let _ = write!(
                out,
                r#"<line class="grid" x1="{left}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                left + pw,
                left - 4.0,
                y + 4.0,
                fmt_num(t)
            );
        }
        for t in ticks(f64::from(recv_n), 5) {
            let x = left + t / f64::from(recv_n) * pw;
            let _ = write!(
                out,
                r#"<line class="grid" x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{:.1}"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                top + ph,
                top + ph + 13.0,
                fmt_num(t)
            );
        }
        let _ = write!(
            out,
            r##"<line x1="{left}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#8c959f" stroke-dasharray="4 3"/><text x="{:.1}" y="{:.1}" text-anchor="middle">received position</text><text x="12" y="{:.1}" transform="rotate(-90 12 {:.1})" text-anchor="middle">sent position</text>"##,
            top + ph,
            xs(sent_n.min(recv_n)),
            ys(sent_n.min(recv_n)),
            left + pw / 2.0,
            top + ph + 28.0,
            top + ph / 2.0,
            top + ph / 2.0
        );
        let step = pts.len().div_ceil(MAX_POINTS).max(1);
        let mut d_ok = String::new();
        let mut d_again = String::new();
        for &(x, y, again) in pts.iter().step_by(step) {
            let d = if again { &mut d_again } else { &mut d_ok };
            let _ = write!(d, "M{:.1} {:.1}h2v2h-2z", xs(x) - 1.0, ys(y) - 1.0);
        }
        // Sampled: repeated receipts must not disappear in the stride.
        if step > 1 {
            for &(x, y, _) in pts.iter().filter(|p| p.2).take(MAX_POINTS / 4) {
                let _ = write!(d_again, "M{:.1} {:.1}h2v2h-2z", xs(x) - 1.0, ys(y) - 1.0);
            }
        }
        let mstep = missing.len().div_ceil(MAX_POINTS / 2).max(1);
        let mut d_miss = String::new();
        for &y in missing.iter().step_by(mstep) {
            let _ = write!(d_miss, "M{:.1} {:.1}h8v2h-8z", left + pw + 8.0, ys(y) - 1.0);
        }
        let _ = write!(
            out,
            r##"<path d="{d_ok}" fill="#0969da"/><path d="{d_again}" fill="#bf8700"/><path d="{d_miss}" fill="#cf222e"/></svg>"##
        );
        let shown = pts.len().div_ceil(step);
        let _ = write!(
            out,
            "<p class=\"note\">{} deliveries{}, {} sends ok never delivered to the group.</p></div>",
            pts.len(),
            if step > 1 {
                format!(" ({shown} shown, 1 in {step}; {} more not shown)", pts.len() - shown)
            } else {
                String::new()
            },
            missing.len()
        );
    }
    out.push_str("</div></section>\n");
}

/// A fault still open at the end, in words: "partition n1 (op 7, from 6.0s)".
fn open_words(iv: &nemesis::Interval, at: &dyn Fn(u64) -> String) -> String {
    let target = if iv.target.is_empty() {
        String::new()
    } else {
        format!(" {}", cut(&iv.target, 120))
    };
    format!(
        "{}{target} (op {}, from {})",
        cut(&iv.f, 80),
        iv.start_index,
        at(iv.start_time)
    )
}

/// What each disk fault dropped or changed, node by node (power losses,
/// corruptions, wipes: `crate::disk`).
fn disk_table(out: &mut String, h: &History, at: &dyn Fn(u64) -> String) {
    let effects = crate::disk::effects(&h.nemesis);
    if effects.is_empty() {
        return;
    }
    out.push_str("<h3>What the disk faults did</h3><table class=\"disk-faults\"><tr><th>when</th><th>fault</th><th>node</th><th>op</th><th>what it dropped or changed</th></tr>");
    for d in effects.iter().take(MAX_ROWS) {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            esc(&at(d.time)),
            esc(&cut(&d.fault, 80)),
            esc(&cut(&d.node, 80)),
            d.index,
            esc(&cut(&d.words, 600))
        );
    }
    out.push_str("</table>");
}

fn fault_table(out: &mut String, h: &History, faults: &Faults) {
    out.push_str(r#"<section id="faults"><h2>Faults</h2>"#);
    if h.nemesis.is_empty() {
        out.push_str("<p class=\"note\">No nemesis events in this history.</p></section>\n");
        return;
    }
    let t0 = h.counts.first_time;
    let at = |t: u64| fmt_ns(t.saturating_sub(t0) as f64);
    let open: Vec<&nemesis::Interval> = faults.open_at_end().collect();
    let _ = write!(
        out,
        "<p class=\"note\">{} nemesis events: {} fault{} with a duration ({} healed, {} still open at the end of the history) and {} instant event{} (drawn as marks). A fault lasts from its event to the one that ends it (kill to start, pause to resume, partition to heal, start-X to stop-X, a value with <code>\"end\": true</code>); a start whose value says <code>\"instant\": true</code>, or a consumer kill, is an instant.</p>",
        h.nemesis.len(),
        faults.intervals.len(),
        if faults.intervals.len() == 1 { "" } else { "s" },
        faults.intervals.len() - open.len(),
        open.len(),
        faults.instants.len(),
        if faults.instants.len() == 1 { "" } else { "s" },
    );
    if !open.is_empty() {
        let names: Vec<String> = open.iter().take(20).map(|iv| open_words(iv, &at)).collect();
        let _ = write!(
            out,
            "<p class=\"open-faults\"><b>Never ended:</b> {}{}; shaded to the end of the history.</p>",
            esc(&names.join("; ")),
            if open.len() > 20 {
                format!(" and {} more", open.len() - 20)
            } else {
                String::new()
            }
        );
    }
    // Every fault and instant, in time order.
    let mut rows: Vec<(u64, String)> = Vec::new();
    for iv in &faults.intervals {
        let (span, how) = match (iv.end_time, iv.end_index, &iv.end_f) {
            (Some(t), Some(i), Some(f)) => (
                format!("{} to {}", at(iv.start_time), at(t)),
                format!(
                    "ended by {f} (op {i}) after {}",
                    fmt_ns(t.saturating_sub(iv.start_time) as f64)
                ),
            ),
            _ => (
                format!("{} to the end", at(iv.start_time)),
                format!(
                    "never ended: still open at the end of the history, {} after it started",
                    fmt_ns(h.counts.last_time.saturating_sub(iv.start_time) as f64)
                ),
            ),
        };
        rows.push((
            iv.start_time,
            format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
                esc(&span),
                esc(&cut(&iv.f, 80)),
                esc(&cut(&iv.target, 120)),
                iv.start_index,
                esc(&how)
            ),
        ));
    }
    for &i in &faults.instants {
        let Some(e) = h.nemesis.get(i) else { continue };
        rows.push((
            e.time,
            format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>instant</td></tr>",
                esc(&at(e.time)),
                esc(&cut(&e.f, 80)),
                esc(&cut(&nemesis::target_of(&e.value), 120)),
                e.index
            ),
        ));
    }
    rows.sort_by_key(|r| r.0);
    disk_table(out, h, &at);
    out.push_str("<table class=\"fault-list\"><tr><th>when</th><th>fault</th><th>target</th><th>op</th><th>how it ended</th></tr>");
    for (_, r) in rows.iter().take(MAX_ROWS) {
        out.push_str(r);
    }
    out.push_str("</table>");
    if rows.len() > MAX_ROWS {
        let _ = write!(
            out,
            "<p class=\"note\">{} more not shown.</p>",
            rows.len() - MAX_ROWS
        );
    }
    out.push_str("<details><summary>nemesis events</summary><table><tr><th>index</th><th>time</th><th>type</th><th>f</th><th>value</th></tr>");
    for e in h.nemesis.iter().take(MAX_ROWS) {
        let _ = write!(
            out,
            "<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            e.index,
            fmt_ns(e.time.saturating_sub(t0) as f64),
            e.kind.as_str(),
            esc(&cut(&e.f, 80)),
            esc(&cut(&e.value, 300))
        );
    }
    out.push_str("</table>");
    if h.nemesis.len() > MAX_ROWS {
        let _ = write!(
            out,
            "<p class=\"note\">{} more not shown.</p>",
            h.nemesis.len() - MAX_ROWS
        );
    }
    out.push_str("</details></section>\n");
}

fn scenario_section(out: &mut String, v: &Verdict, info: &ScenarioInfo, toml: Option<&str>) {
    out.push_str(r#"<section id="scenario"><h2>Scenario and costs</h2>"#);
    let show = |x: &Option<String>| {
        x.as_deref()
            .map(|s| format!("<code>{}</code>", esc(&cut(s, 120))))
            .unwrap_or_else(|| "unknown".into())
    };
    let _ = write!(
        out,
        "<table><tr><th>scenario</th><td>{}</td></tr><tr><th>broker</th><td>{}</td></tr><tr><th>delivery mode</th><td>{}</td></tr><tr><th>ordering</th><td>{}</td></tr></table>",
        if toml.is_none() {
            "none (a checked history, not a run)".to_string()
        } else {
            show(&info.name)
        },
        show(&info.broker),
        show(&info.delivery_raw),
        show(&info.ordering_raw)
    );
    let s = &v.stats;
    let measured_tp = format!("{} msg/s", fmt_num(s.sends_ok_per_s));
    let measured_p99 = s
        .send_latency_ns
        .map(|l| fmt_ns(l.p99 as f64))
        .unwrap_or_else(|| "-".into());
    let measured_p50 = s
        .send_latency_ns
        .map(|l| fmt_ns(l.p50 as f64))
        .unwrap_or_else(|| "-".into());
    let delivered_rate = if s.duration_ns > 0 {
        s.delivered as f64 / (s.duration_ns as f64 / 1e9)
    } else {
        0.0
    };
    let _ = write!(
        out,
        "<p>Measured in this run: <b>{measured_tp}</b> sends ok, {} msg/s delivered, send latency p50 <b>{measured_p50}</b>, p99 <b>{measured_p99}</b>.</p>",
        fmt_num(delivered_rate)
    );
    out.push_str("<h3>Delivery modes (the delivery document's relative Kafka figures)</h3><table><tr><th>mode</th><th>document: throughput</th><th>document: p99</th><th>this run: throughput</th><th>this run: p99</th></tr>");
    for f in DELIVERY_FIGURES {
        let this = info.delivery == Some(f.mode);
        let _ = write!(
            out,
            "<tr{}><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            if this {
                " class=\"found\" style=\"font-weight:600\""
            } else {
                ""
            },
            f.mode,
            if this { " (this run)" } else { "" },
            f.throughput,
            f.p99,
            if this { measured_tp.as_str() } else { "" },
            if this { measured_p99.as_str() } else { "" }
        );
    }
    if info.delivery.is_none() {
        let _ = write!(
            out,
            "<tr><td>this run (mode {})</td><td></td><td></td><td>{measured_tp}</td><td>{measured_p99}</td></tr>",
            info.delivery_raw
                .as_deref()
                .map(|m| format!("<code>{}</code> not in the document", esc(&cut(m, 60))))
                .unwrap_or_else(|| "unknown".into())
        );
    }
    out.push_str("</table><p class=\"note\">The document's throughput is relative to at-most-once on the same cluster; to compare, hold this run's absolute figures against an at-most-once run of the same scenario.</p>");
    out.push_str("<h3>Ordering levels (the ordering document, 3 brokers)</h3><table><tr><th>ordering</th><th>document: throughput</th><th>this run</th></tr>");
    for f in ORDERING_FIGURES {
        let this = info.ordering == Some(f.mode);
        let _ = write!(
            out,
            "<tr><td>{}{}</td><td>{}</td><td>{}</td></tr>",
            f.mode,
            if this { " (this run)" } else { "" },
            f.throughput,
            if this { measured_tp.as_str() } else { "" }
        );
    }
    out.push_str("</table>");
    if let Some(t) = toml {
        let _ = write!(
            out,
            "<details><summary>scenario.toml</summary><pre>{}</pre></details>",
            esc(&cut(t, MAX_SCENARIO_CHARS))
        );
    }
    out.push_str("</section>\n");
}

fn stats_section(out: &mut String, v: &Verdict) {
    let s = &v.stats;
    out.push_str(r#"<section id="stats"><h2>Figures</h2><table>"#);
    let rows: [(&str, String); 14] = [
        ("ops", s.ops.to_string()),
        ("sends", s.sends.to_string()),
        (
            "sends ok / fail / info",
            format!("{} / {} / {}", s.sends_ok, s.sends_fail, s.sends_info),
        ),
        ("deliveries", s.delivered.to_string()),
        (
            "distinct values delivered",
            s.delivered_distinct.to_string(),
        ),
        ("polls", s.polls.to_string()),
        ("groups", s.groups.to_string()),
        ("keys", s.keys.to_string()),
        ("clients (process numbers)", s.clients.to_string()),
        ("nemesis events", s.nemesis_events.to_string()),
        ("drained", s.drained.to_string()),
        ("duration", fmt_ns(s.duration_ns as f64)),
        ("sends ok per second", fmt_num(s.sends_ok_per_s)),
        (
            "send latency p50 / p99 / max",
            s.send_latency_ns
                .map(|l| {
                    format!(
                        "{} / {} / {}",
                        fmt_ns(l.p50 as f64),
                        fmt_ns(l.p99 as f64),
                        fmt_ns(l.max as f64)
                    )
                })
                .unwrap_or_else(|| "-".into()),
        ),
    ];
    for (k, val) in rows {
        let _ = write!(out, "<tr><th>{k}</th><td>{val}</td></tr>");
    }
    out.push_str("</table>");
    if !v.warnings.is_empty() {
        out.push_str("<h3>Warnings</h3><ul>");
        for w in v.warnings.iter().take(50) {
            let _ = write!(out, "<li>{}</li>", esc(&cut(w, 500)));
        }
        out.push_str("</ul>");
        if v.warnings.len() > 50 {
            let _ = write!(
                out,
                "<p class=\"note\">{} more not shown.</p>",
                v.warnings.len() - 50
            );
        }
    }
    out.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_hist_quantiles_are_close() {
        let mut h = LogHist::new();
        for v in 1..=10_000u64 {
            h.add(v * 1000);
        }
        let p50 = h.quantile(0.5).unwrap();
        let p99 = h.quantile(0.99).unwrap();
        assert!((p50 / 5e6 - 1.0).abs() < 0.13, "{p50}");
        assert!((p99 / 9.9e6 - 1.0).abs() < 0.13, "{p99}");
        assert_eq!(LogHist::new().quantile(0.5), None);
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(ticks(10.0, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(ticks(0.0, 5), vec![0.0]);
        assert_eq!(fmt_num(1234567.0), "1.23M");
        assert_eq!(fmt_ns(2_500_000.0), "2.50 ms");
    }
}
