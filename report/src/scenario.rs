//! What the report shows about a run's scenario, read leniently from its
//! `scenario.toml` (no TOML parser: the report needs two or three values and
//! must never fail on a file it does not understand), and the figures the seed
//! documents quote for each delivery and ordering mode.

/// The delivery modes whose costs the delivery document quotes.
pub const DELIVERY_FIGURES: [SeedFigure; 4] = [
    SeedFigure {
        mode: "at-most-once",
        throughput: "1.0x",
        p99: "~2 ms",
    },
    SeedFigure {
        mode: "at-least-once",
        throughput: "~0.85x",
        p99: "~10 ms",
    },
    SeedFigure {
        mode: "idempotent",
        throughput: "~0.82x",
        p99: "~12 ms",
    },
    SeedFigure {
        mode: "transactional",
        throughput: "~0.65-0.75x",
        p99: "~25-50 ms",
    },
];

/// The ordering levels whose throughput the ordering document quotes (3 brokers).
pub const ORDERING_FIGURES: [SeedFigure; 3] = [
    SeedFigure {
        mode: "unordered",
        throughput: "~2M msg/s",
        p99: "",
    },
    SeedFigure {
        mode: "per-partition",
        throughput: "~1M msg/s",
        p99: "",
    },
    SeedFigure {
        mode: "total",
        throughput: "~50K msg/s",
        p99: "",
    },
];

/// One row of the seed documents' cost tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeedFigure {
    /// The mode's name as the document writes it.
    pub mode: &'static str,
    /// Relative (delivery) or absolute (ordering) throughput as the document writes it.
    pub throughput: &'static str,
    /// The p99 latency as the document writes it ("" where it quotes none).
    pub p99: &'static str,
}

/// What the report found in a scenario file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScenarioInfo {
    /// `name`, as written.
    pub name: Option<String>,
    /// The broker (`broker`, or `[broker] kind`), as written.
    pub broker: Option<String>,
    /// As written in the file.
    pub delivery_raw: Option<String>,
    /// One of [`DELIVERY_FIGURES`]' modes, when the written mode maps to one.
    pub delivery: Option<&'static str>,
    /// The ordering as written in the file.
    pub ordering_raw: Option<String>,
    /// One of [`ORDERING_FIGURES`]' modes, when the written ordering maps to one.
    pub ordering: Option<&'static str>,
}

impl ScenarioInfo {
    /// What a typed scenario says (Gauntlet's own runs): its name, broker, delivery
    /// mode and the guarantees it claims, by name; the ordering is the strongest
    /// order among them.
    pub fn from_parts(name: &str, broker: &str, mode: &str, expect: &[&str]) -> ScenarioInfo {
        let order = ["total-order", "partition-order", "key-order"]
            .into_iter()
            .find(|o| expect.contains(o));
        ScenarioInfo {
            name: Some(name.to_string()),
            broker: Some(broker.to_string()),
            delivery_raw: Some(mode.to_string()),
            delivery: normalize_delivery(mode),
            ordering_raw: order.map(|o| format!("{o} (claimed)")),
            ordering: order.and_then(normalize_ordering),
        }
    }
}

/// Maps a delivery setting as people write it to a mode of the delivery document.
pub fn normalize_delivery(s: &str) -> Option<&'static str> {
    let t = s.trim().to_ascii_lowercase().replace(['_', ' '], "-");
    Some(match t.as_str() {
        "at-most-once" | "amo" | "acks-0" | "acks=0" | "fire-and-forget" => "at-most-once",
        "at-least-once" | "alo" | "acks-all" | "acks=all" | "manual-ack" => "at-least-once",
        "idempotent" | "idempotence" | "idempotent-producer" => "idempotent",
        "transactional" | "transactions" | "txn" | "exactly-once" | "eos" => "transactional",
        _ => return None,
    })
}

/// Maps an ordering setting to a level of the ordering document.
pub fn normalize_ordering(s: &str) -> Option<&'static str> {
    let t = s.trim().to_ascii_lowercase().replace(['_', ' '], "-");
    Some(match t.as_str() {
        "none" | "unordered" | "any" => "unordered",
        "per-partition" | "partition" | "partition-order" | "per-key" | "key" | "key-order" => {
            "per-partition"
        }
        "total" | "total-order" | "global" => "total",
        _ => return None,
    })
}

fn unquote(v: &str) -> Option<String> {
    let v = v.trim();
    // Drop a trailing comment outside the quotes.
    for q in ['"', '\''] {
        if let Some(rest) = v.strip_prefix(q) {
            return rest.find(q).map(|end| rest[..end].to_string());
        }
    }
    let bare = v.split('#').next().unwrap_or("").trim();
    (!bare.is_empty() && !bare.starts_with('[') && !bare.starts_with('{')).then(|| bare.to_string())
}

/// Reads what it can: `name`, `broker`, the delivery mode (`[delivery] mode`,
/// `delivery = "..."`, `delivery_mode`, `semantics`, `guarantee`) and the
/// ordering (`[ordering] mode`, `ordering = "..."`, in files written elsewhere;
/// else the strongest order among the guarantees a Gauntlet scenario claims,
/// `expect = [..., "key-order"]`). Unknown text is ignored.
pub fn parse(toml: &str) -> ScenarioInfo {
    let mut info = ScenarioInfo::default();
    let mut section = String::new();
    let mut expect: Option<String> = None;
    // `expect = [...]`, possibly over several lines.
    let mut in_expect = false;
    for line in toml.lines() {
        let line = line.trim();
        if in_expect {
            expect.get_or_insert_with(String::new).push_str(line);
            in_expect = !line.contains(']');
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(s) = line.strip_prefix('[') {
            section = s
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let key = k.trim().trim_matches('"').to_ascii_lowercase();
        if key == "expect" && (section.is_empty() || section == "scenario") && expect.is_none() {
            expect = Some(v.to_string());
            in_expect = !v.contains(']');
            continue;
        }
        let Some(val) = unquote(v) else { continue };
        let top = section.is_empty() || section == "scenario";
        match (section.as_str(), key.as_str()) {
            (_, "name") if top && info.name.is_none() => info.name = Some(val),
            (_, "broker") if info.broker.is_none() && (top || section == "broker") => {
                info.broker = Some(val)
            }
            ("broker", "kind" | "type") if info.broker.is_none() => info.broker = Some(val),
            ("delivery", "mode" | "guarantee" | "semantics")
            | (_, "delivery" | "delivery_mode" | "delivery-mode" | "semantics")
                if info.delivery_raw.is_none() =>
            {
                info.delivery = normalize_delivery(&val);
                info.delivery_raw = Some(val);
            }
            ("ordering", "mode" | "level") | (_, "ordering" | "order")
                if info.ordering_raw.is_none() =>
            {
                info.ordering = normalize_ordering(&val);
                info.ordering_raw = Some(val);
            }
            _ => {}
        }
    }
    if info.ordering_raw.is_none() {
        if let Some(order) = expect.as_deref().and_then(strongest_order) {
            info.ordering = normalize_ordering(order);
            info.ordering_raw = Some(format!("{order} (claimed)"));
        }
    }
    info
}

/// The strongest ordering guarantee named in a scenario's `expect` list (its raw
/// text, `["at-least-once", "key-order"]`).
fn strongest_order(expect: &str) -> Option<&'static str> {
    ["total-order", "partition-order", "key-order"]
        .into_iter()
        .find(|g| expect.contains(&format!("\"{g}\"")) || expect.contains(&format!("'{g}'")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typed_scenario_says_the_same_as_its_file() {
        let typed = ScenarioInfo::from_parts(
            "x",
            "kafka",
            "exactly-once",
            &["exactly-once", "key-order", "total-order"],
        );
        assert_eq!(typed.delivery, Some("transactional"));
        assert_eq!(typed.ordering, Some("total"));
        let file = parse(
            "name = \"x\"\nbroker = \"kafka\"\nexpect = [\n    \"exactly-once\",\n    \"key-order\",\n    \"total-order\",\n]\n[delivery]\nmode = \"exactly-once\"\n",
        );
        assert_eq!(typed, file);
    }

    #[test]
    fn a_gauntlet_scenario_s_ordering_is_the_strongest_it_claims() {
        let one_line = parse("name = \"x\"\nexpect = [\"at-least-once\", \"key-order\"]\n");
        assert_eq!(one_line.ordering, Some("per-partition"));
        assert_eq!(
            one_line.ordering_raw.as_deref(),
            Some("key-order (claimed)")
        );
        // As `Scenario::to_toml` writes it: one value per line.
        let pretty = parse(
            "name = \"x\"\nexpect = [\n    \"exactly-once\",\n    \"total-order\",\n]\nrate = 5\n[delivery]\nmode = \"idempotent\"\n",
        );
        assert_eq!(pretty.ordering, Some("total"));
        assert_eq!(pretty.delivery, Some("idempotent"));
        assert_eq!(parse("expect = [\"at-least-once\"]\n").ordering, None);
        // A written ordering wins.
        let both = parse("ordering = \"unordered\"\nexpect = [\"key-order\"]\n");
        assert_eq!(both.ordering, Some("unordered"));
    }

    #[test]
    fn reads_delivery_and_ordering_leniently() {
        let s = parse(
            "name = \"d5\" # seed D5\nbroker = 'kafka'\n[delivery]\nmode = \"at_least_once\"\n[ordering]\nlevel = \"per-key\"\n",
        );
        assert_eq!(s.name.as_deref(), Some("d5"));
        assert_eq!(s.broker.as_deref(), Some("kafka"));
        assert_eq!(s.delivery, Some("at-least-once"));
        assert_eq!(s.ordering, Some("per-partition"));
        let s = parse("delivery = \"weird\"\n[[nemesis]]\nf = \"kill\"\n");
        assert_eq!(s.delivery_raw.as_deref(), Some("weird"));
        assert_eq!(s.delivery, None);
        assert_eq!(parse("garbage [[[ = = =").delivery, None);
    }
}
