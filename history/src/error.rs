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
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// One line is not a valid op.
    #[error("{path}:{line}: {problem}")]
    Line {
        /// The file.
        path: PathBuf,
        /// The 1-based line number.
        line: u64,
        /// What is wrong with the line.
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
    Json {
        /// The 1-based column (bytes) where the JSON stops being valid.
        column: usize,
        /// What the JSON parser said.
        what: String,
    },
    /// Not valid EDN, or not a Jepsen op (`column` 0 when it is about the whole form).
    #[error("column {column}: {what}")]
    Edn {
        /// The 1-based column (bytes), or 0 when the problem is the whole form.
        column: usize,
        /// What is wrong.
        what: String,
    },
    /// The line is longer than the reader takes ([`MAX_LINE`](crate::reader::MAX_LINE)).
    #[error("line is longer than {limit} bytes")]
    LineTooLong {
        /// The limit, in bytes.
        limit: usize,
    },
    /// A required field is absent (its name).
    #[error("missing field `{0}`")]
    MissingField(&'static str),
    /// A field is present but its value is wrong.
    #[error("field `{field}`: {what}")]
    BadField {
        /// The field's name.
        field: &'static str,
        /// What is wrong with it.
        what: String,
    },
    /// The `index` is not greater than the previous line's (it must increase strictly).
    #[error("index {index} is not greater than the previous index {previous}")]
    IndexNotIncreasing {
        /// This line's `index`.
        index: u64,
        /// The previous line's `index`.
        previous: u64,
    },
    /// The `time` is earlier than the previous line's (it must never decrease).
    #[error("time {time} is earlier than the previous time {previous}")]
    TimeWentBack {
        /// This line's `time`.
        time: u64,
        /// The previous line's `time`.
        previous: u64,
    },
    /// A completion (`ok`, `fail`, `info`) of a process that has no op in flight.
    #[error("{kind} `{f}` of process {process} has no invoke before it")]
    CompletionWithoutInvoke {
        /// The completion's `type`.
        kind: &'static str,
        /// The completion's `f`.
        f: String,
        /// The process number.
        process: u64,
    },
    /// A completion whose `f` is not the `f` of its process's pending invoke.
    #[error("{kind} `{f}` of process {process} does not match its pending invoke `{pending}` (line {pending_line})")]
    CompletionMismatch {
        /// The completion's `type`.
        kind: &'static str,
        /// The completion's `f`.
        f: String,
        /// The process number.
        process: u64,
        /// The `f` of the pending invoke.
        pending: String,
        /// The line of the pending invoke.
        pending_line: u64,
    },
    /// An invoke of a process that already has an op in flight (a client has one op at a time).
    #[error("process {process} invoked `{f}` while its `{pending}` from line {pending_line} is still pending")]
    InvokeWhilePending {
        /// The process number.
        process: u64,
        /// The new invoke's `f`.
        f: String,
        /// The `f` of the op still in flight.
        pending: String,
        /// The line of the op still in flight.
        pending_line: u64,
    },
    /// A value sent again other than as a retry: by another process, inside a `txn`, or after a `txn` sent it.
    #[error("value {value} is sent again by another process or inside a transaction (first sent by op {first_index}); a value names one message, and only a bare send of the same process may send it again (a retry)")]
    ValueSentTwice {
        /// The value.
        value: i64,
        /// The op index of the invoke that first sent it.
        first_index: u64,
    },
}

impl Problem {
    pub(crate) fn bad(field: &'static str, what: impl fmt::Display) -> Problem {
        Problem::BadField {
            field,
            what: what.to_string(),
        }
    }
}
