//! How a run's final drain ended: the `drain` field of the `drained` marker
//! (docs/history-format.md, "How the drain ended").
//!
//! A drain that could not finish (timeouts, refused connections, a node down)
//! writes no `drained` marker at all, so the two endings here are the two in
//! which the broker answered for everything it holds: every group read its
//! stream, queue or topic to the end, or the broker said, and still said a
//! while later, that the stream, queue or topic does not exist. In both an
//! acknowledged send that no group read is `lost`.
use serde::{Deserialize, Serialize};

/// How the drain ended (the marker's `drain.ended`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DrainEnded {
    /// Every group read what it was given to the end (a few empty polls in a row).
    CaughtUp,
    /// At least one group's stream, queue or topic did not exist, by the
    /// broker's own answer, confirmed a while later; the other groups caught up.
    Missing,
}

/// A stream, queue or topic the broker answered does not exist (the marker's
/// `drain.missing[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissingSource {
    /// The consumer group whose drain got the answer.
    pub group: String,
    /// What was missing, in words: `stream gauntlet`, `queue q1`.
    pub what: String,
    /// The broker's answer, as its client library gave it.
    pub answer: String,
    /// Nanoseconds since the run started at which the drain got the answer first.
    pub first_answer: u64,
    /// Nanoseconds since the run started of the last answer, the one that
    /// confirmed it (the same answer, at least the confirmation window later).
    pub confirmed: u64,
}

/// The marker's `drain` field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrainEnd {
    /// How it ended.
    pub ended: DrainEnded,
    /// What the broker answered does not exist (empty when every group caught up).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<MissingSource>,
}

impl DrainEnd {
    /// Every group caught up.
    pub fn caught_up() -> Self {
        DrainEnd {
            ended: DrainEnded::CaughtUp,
            missing: Vec::new(),
        }
    }

    /// The ending of a drain in which these groups found their source missing
    /// (every other group caught up); [`DrainEnd::caught_up`] when there are none.
    pub fn with_missing(missing: Vec<MissingSource>) -> Self {
        if missing.is_empty() {
            return Self::caught_up();
        }
        DrainEnd {
            ended: DrainEnded::Missing,
            missing,
        }
    }

    /// The field as JSON, as the recorder writes it.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_reads_back_as_written() {
        let end = DrainEnd::with_missing(vec![MissingSource {
            group: "g1".into(),
            what: "stream gauntlet".into(),
            answer: "stream not found".into(),
            first_answer: 5,
            confirmed: 9,
        }]);
        let json = end.to_json();
        assert_eq!(json["ended"], "missing");
        assert_eq!(json["missing"][0]["what"], "stream gauntlet");
        assert_eq!(serde_json::from_value::<DrainEnd>(json).unwrap(), end);
        assert_eq!(
            DrainEnd::caught_up().to_json(),
            serde_json::json!({"ended": "caught-up"})
        );
        assert_eq!(DrainEnd::with_missing(vec![]), DrainEnd::caught_up());
    }
}
