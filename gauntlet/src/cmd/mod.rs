//! One module per subcommand.
pub mod bench;
pub mod bench_run;
pub mod check;
pub mod clean;
pub mod fuzz;
pub mod images;
pub mod lab;
pub mod matrix;
pub mod report;
pub mod run;
pub mod serve;
pub mod worker;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use std::fmt::Display;
use std::str::FromStr;

/// A value parser for a type with a fixed set of names: `--help` lists them, and
/// a wrong value is refused with the list. `T`'s own `FromStr` makes the value.
pub fn named<T>(names: impl IntoIterator<Item = &'static str>) -> impl TypedValueParser<Value = T>
where
    T: FromStr + Clone + Send + Sync + 'static,
    T::Err: Display,
{
    PossibleValuesParser::new(names).try_map(|s| s.parse::<T>().map_err(|e| e.to_string()))
}

/// A duration as scenarios write them: `30s`, `2m`, `500ms`, or plain seconds.
pub fn duration(s: &str) -> Result<std::time::Duration, String> {
    gauntlet_harness::run::parse_duration(s).map_err(|e| e.to_string())
}

/// The names of every broker.
pub fn brokers() -> [&'static str; 5] {
    gauntlet_harness::broker::BrokerKind::ALL.map(|b| b.name())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use gauntlet_harness::broker::BrokerKind;

    #[derive(Debug, Parser)]
    struct Probe {
        #[arg(long, value_parser = named::<BrokerKind>(brokers()))]
        broker: Option<BrokerKind>,
    }

    #[test]
    fn named_values_parse_to_their_type_and_refuse_the_rest_with_the_list() {
        let p = Probe::try_parse_from(["x", "--broker", "kafka"]).expect("kafka");
        assert_eq!(p.broker, Some(BrokerKind::Kafka));
        let e = Probe::try_parse_from(["x", "--broker", "kafkaa"]).expect_err("unknown");
        let text = e.to_string();
        for b in brokers() {
            assert!(text.contains(b), "{text}");
        }
    }
}
