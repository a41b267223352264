//! Errors of reading a history: always with the file, the line and what is wrong.
use std::fmt;
use std::path::PathBuf;

/// Why a history could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// One line is not a valid op.
    #[error("{path}:{line}: {problem}")]
    Line {
        path: PathBuf,
        line: u64,
        problem: Problem,
    },
}

impl HistoryError {
    /// The 1-based line number, where the error is about one line.
    pub fn line(&self) -> Option<u64> {
        match self {
            HistoryError::Line { line, .. } => Some(*line),
            HistoryError::Io { .. } => None,
        }
    }
}

/// What is wrong with one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// Not valid JSON; `column` is 1-based (bytes).
    #[error("column {column}: bad JSON: {what}")]
    Json { column: usize, what: String },
    /// Not valid EDN, or not a Jepsen op (`column` 0 when it is about the whole form).
    #[error("column {column}: {what}")]
    Edn { column: usize, what: String },
    #[error("line is longer than {limit} bytes")]
    LineTooLong { limit: usize },
    #[error("missing field `{0}`")]
    MissingField(&'static str),
    #[error("field `{field}`: {what}")]
    BadField { field: &'static str, what: String },
    #[error("index {index} is not greater than the previous index {previous}")]
    IndexNotIncreasing { index: u64, previous: u64 },
    #[error("time {time} is earlier than the previous time {previous}")]
    TimeWentBack { time: u64, previous: u64 },
    #[error("{kind} `{f}` of process {process} has no invoke before it")]
    CompletionWithoutInvoke {
        kind: &'static str,
        f: String,
        process: u64,
    },
    #[error("{kind} `{f}` of process {process} does not match its pending invoke `{pending}` (line {pending_line})")]
    CompletionMismatch {
        kind: &'static str,
        f: String,
        process: u64,
        pending: String,
        pending_line: u64,
    },
    #[error("process {process} invoked `{f}` while its `{pending}` from line {pending_line} is still pending")]
    InvokeWhilePending {
        process: u64,
        f: String,
        pending: String,
        pending_line: u64,
    },
    #[error("value {value} is sent again by another process or inside a transaction (first sent by op {first_index}); a value names one message, and only a bare send of the same process may send it again (a retry)")]
    ValueSentTwice { value: i64, first_index: u64 },
}

impl Problem {
    pub(crate) fn bad(field: &'static str, what: impl fmt::Display) -> Problem {
        Problem::BadField {
            field,
            what: what.to_string(),
        }
    }
}
