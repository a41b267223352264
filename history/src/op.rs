//! One history event, borrowed from its line, and the parser of one line.
use crate::error::Problem;
use crate::json::{Hint, IntError, JsonError, Kind, Scanner};

// The keys of each object, in the order the writer puts them (the reader tries
// the one after the last key found first); a key's place in its list is its id.
const OP_KEYS: [Hint; 10] = [
    Hint::new("index"),
    Hint::new("time"),
    Hint::new("process"),
    Hint::new("type"),
    Hint::new("f"),
    Hint::new("group"),
    Hint::new("producer"),
    Hint::new("value"),
    Hint::new("error"),
    Hint::new("drain"),
];
const K_INDEX: usize = 0;
const K_TIME: usize = 1;
const K_PROCESS: usize = 2;
const K_TYPE: usize = 3;
const K_F: usize = 4;
const K_GROUP: usize = 5;
const K_PRODUCER: usize = 6;
const K_VALUE: usize = 7;
const K_ERROR: usize = 8;
const K_DRAIN: usize = 9;

// Messages and micro-ops: the writer's maps are sorted by key.
const MSG_KEYS: [Hint; 10] = [
    Hint::new("f"),
    Hint::new("id"),
    Hint::new("input"),
    Hint::new("key"),
    Hint::new("messages"),
    Hint::new("offset"),
    Hint::new("partition"),
    Hint::new("redelivered"),
    Hint::new("topic"),
    Hint::new("value"),
];
const M_F: usize = 0;
const M_ID: usize = 1;
const M_INPUT: usize = 2;
const M_KEY: usize = 3;
const M_MESSAGES: usize = 4;
const M_OFFSET: usize = 5;
const M_PARTITION: usize = 6;
const M_REDELIVERED: usize = 7;
const M_TOPIC: usize = 8;
const M_VALUE: usize = 9;
use std::borrow::Cow;

/// Who did an op.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Process<'a> {
    /// A client (producer or consumer). A client that crashed comes back under a new number.
    Client(u64),
    /// The fault injector.
    Nemesis,
    /// The harness (phase markers).
    Harness,
    /// Any other named actor; kept, not checked.
    Other(Cow<'a, str>),
}

/// How an op ended, or that it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpType {
    /// Started.
    Invoke,
    /// Definitely took effect.
    Ok,
    /// Definitely did not take effect.
    Fail,
    /// Unknown: timeout, crash, connection lost.
    Info,
}

impl OpType {
    /// The name as written in a history: `invoke`, `ok`, `fail` or `info`.
    pub fn as_str(self) -> &'static str {
        match self {
            OpType::Invoke => "invoke",
            OpType::Ok => "ok",
            OpType::Fail => "fail",
            OpType::Info => "info",
        }
    }
}

/// The function of an op.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum F<'a> {
    /// `send`: a producer sends one message.
    Send,
    /// `poll`: a consumer takes messages.
    Poll,
    /// `ack`: a consumer acknowledges values.
    Ack,
    /// `commit`: a consumer commits positions.
    Commit,
    /// `txn`: a transaction of sends and polls.
    Txn,
    /// `subscribe`: a consumer subscribes (a reset).
    Subscribe,
    /// `assign`: a consumer is assigned partitions (a reset).
    Assign,
    /// Consumer moved its position (extension: resets order tracking like assign).
    Seek,
    /// The harness's phase marker.
    Phase,
    /// A nemesis fault name, or a client function this version does not know.
    Other(Cow<'a, str>),
}

impl F<'_> {
    /// The name as written in a history.
    pub fn name(&self) -> &str {
        match self {
            F::Other(s) => s,
            known => known.static_name().unwrap_or(""),
        }
    }

    /// The name of a function this version knows, without borrowing the line.
    pub fn static_name(&self) -> Option<&'static str> {
        Some(match self {
            F::Send => "send",
            F::Poll => "poll",
            F::Ack => "ack",
            F::Commit => "commit",
            F::Txn => "txn",
            F::Subscribe => "subscribe",
            F::Assign => "assign",
            F::Seek => "seek",
            F::Phase => "phase",
            F::Other(_) => return None,
        })
    }

    fn from_str(s: Cow<'_, str>) -> F<'_> {
        match &*s {
            "send" => F::Send,
            "poll" => F::Poll,
            "ack" => F::Ack,
            "commit" => F::Commit,
            "txn" => F::Txn,
            "subscribe" => F::Subscribe,
            "assign" => F::Assign,
            "seek" => F::Seek,
            "phase" => F::Phase,
            _ => F::Other(s),
        }
    }
}

/// A message as sent or delivered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Msg<'a> {
    /// The message's key; `None` where the line gives none.
    pub key: Option<Cow<'a, str>>,
    /// The value: it names one logical message in the run.
    pub value: i64,
    /// Extension: the topic, stream or queue, where a history spans several.
    pub topic: Option<Cow<'a, str>>,
    /// The partition, where the broker gives one.
    pub partition: Option<i64>,
    /// The offset in the partition, where the broker gives one.
    pub offset: Option<i64>,
    /// A broker message id (string or integer in the file; kept as text).
    pub id: Option<Cow<'a, str>>,
    /// The broker flagged this delivery as a redelivery (`"redelivered": true`).
    pub redelivered: bool,
    /// Extension (the two-hop workload): on a transformer's send, the value of
    /// the input message it was made from.
    pub input: Option<i64>,
}

/// One micro-op of a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MicroOp<'a> {
    /// A send of one message (`{"f":"send","key","value"}`).
    Send(Msg<'a>),
    /// `messages` is empty in an invoke.
    Poll(Vec<Msg<'a>>),
}

/// A committed position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position<'a> {
    /// The topic (extension), where the history names one.
    pub topic: Option<Cow<'a, str>>,
    /// The partition.
    pub partition: i64,
    /// The offset committed.
    pub offset: i64,
}

/// The `value` of an op, typed by its `f`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value<'a> {
    /// Absent or null.
    None,
    /// A send's message: `{"key","value"}`, and its position on an `ok` completion.
    Send(Msg<'a>),
    /// A poll's delivered messages, in delivery order.
    Messages(Vec<Msg<'a>>),
    /// An ack's acknowledged values.
    Values(Vec<i64>),
    /// A commit's positions: a list of `{"partition","offset"}`.
    Positions(Vec<Position<'a>>),
    /// A transaction's micro-ops, in the order listed.
    Txn(Vec<MicroOp<'a>>),
    /// A harness phase: `"drain"` or `"drained"`.
    Phase(Cow<'a, str>),
    /// Anything else (nemesis values, subscribe/assign), as raw JSON text.
    Raw(&'a str),
    /// The partitions an `assign` or `subscribe` of a Jepsen EDN history names (its keys).
    Partitions(Vec<i64>),
}

/// One event of a history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op<'a> {
    /// `index`: strictly increasing down the file.
    pub index: u64,
    /// `time`: nanoseconds since the run started; never decreases.
    pub time: u64,
    /// `process`: who did it.
    pub process: Process<'a>,
    /// `type`: `invoke`, `ok`, `fail` or `info`.
    pub kind: OpType,
    /// `f`: what was done.
    pub f: F<'a>,
    /// `group`: the consumer group of a `poll`, `ack` or `commit`; `None` is the default group.
    pub group: Option<Cow<'a, str>>,
    /// Extension: the logical producer of a send (several processes may share one
    /// producer client); `None` means the process itself.
    pub producer: Option<u64>,
    /// `value`, read according to `f` and `type`.
    pub value: Value<'a>,
    /// `error`: the error text of a `fail` or `info`.
    pub error: Option<Cow<'a, str>>,
    /// Extension, read on harness events only: the `drain` field of the
    /// `drained` marker, as raw JSON text ([`crate::DrainEnd`]).
    pub drain: Option<&'a str>,
}

fn json(e: JsonError) -> Problem {
    Problem::Json {
        column: e.offset + 1,
        what: e.what,
    }
}

fn int(field: &'static str, e: IntError) -> Problem {
    match e {
        IntError::Json(e) => json(e),
        IntError::NotInteger(t) => Problem::bad(field, format!("{t} is not an integer")),
        IntError::OutOfRange(t) => Problem::bad(field, format!("{t} does not fit in 64 bits")),
    }
}

fn uint(s: &mut Scanner<'_>, field: &'static str) -> Result<u64, Problem> {
    if !s.at_number() {
        return Err(Problem::bad(field, "expected a non-negative integer"));
    }
    let v = s.i64().map_err(|e| int(field, e))?;
    u64::try_from(v).map_err(|_| Problem::bad(field, format!("{v} is negative")))
}

fn integer(s: &mut Scanner<'_>, field: &'static str) -> Result<i64, Problem> {
    if !s.at_number() {
        return Err(Problem::bad(field, "expected an integer"));
    }
    s.i64().map_err(|e| int(field, e))
}

/// A string, or an integer kept as text (keys and ids); `None` for null.
fn text<'a>(s: &mut Scanner<'a>, field: &'static str) -> Result<Option<Cow<'a, str>>, Problem> {
    match s.kind().map_err(json)? {
        Kind::String => Ok(Some(s.string().map_err(json)?)),
        Kind::Number => Ok(Some(Cow::Owned(integer(s, field)?.to_string()))),
        Kind::Null => {
            s.null().map_err(json)?;
            Ok(None)
        }
        _ => Err(Problem::bad(field, "expected a string")),
    }
}

fn opt_string<'a>(
    s: &mut Scanner<'a>,
    field: &'static str,
) -> Result<Option<Cow<'a, str>>, Problem> {
    match s.kind().map_err(json)? {
        Kind::String => Ok(Some(s.string().map_err(json)?)),
        Kind::Null => {
            s.null().map_err(json)?;
            Ok(None)
        }
        _ => Err(Problem::bad(field, "expected a string")),
    }
}

/// `{"key","value",...}`; `what` names the place for errors.
fn msg<'a>(s: &mut Scanner<'a>, what: &'static str) -> Result<Msg<'a>, Problem> {
    if s.kind().map_err(json)? != Kind::Object {
        return Err(Problem::bad(what, "expected an object {\"key\",\"value\"}"));
    }
    s.begin_object().map_err(json)?;
    let mut m = Msg::default();
    let mut have_value = false;
    let mut first = true;
    let mut at = M_KEY;
    while let Some(k) = s
        .next_key_in(&mut first, &MSG_KEYS, &mut at)
        .map_err(json)?
    {
        match k {
            M_VALUE => {
                m.value = integer(s, "value")?;
                have_value = true;
            }
            M_KEY => m.key = text(s, "key")?,
            M_PARTITION => m.partition = nullable_int(s, "partition")?,
            M_OFFSET => m.offset = nullable_int(s, "offset")?,
            M_ID => m.id = text(s, "id")?,
            M_TOPIC => m.topic = opt_string(s, "topic")?,
            M_INPUT => m.input = nullable_int(s, "input")?,
            M_REDELIVERED => {
                m.redelivered = match s.kind().map_err(json)? {
                    Kind::Bool => s.bool().map_err(json)?,
                    Kind::Null => {
                        s.null().map_err(json)?;
                        false
                    }
                    _ => return Err(Problem::bad("redelivered", "expected true or false")),
                }
            }
            _ => {
                s.skip().map_err(json)?;
            }
        }
    }
    if !have_value {
        return Err(Problem::MissingField(match what {
            "value" => "value.value",
            _ => "message value",
        }));
    }
    Ok(m)
}

fn nullable_int(s: &mut Scanner<'_>, field: &'static str) -> Result<Option<i64>, Problem> {
    if s.kind().map_err(json)? == Kind::Null {
        s.null().map_err(json)?;
        return Ok(None);
    }
    integer(s, field).map(Some)
}

fn msgs<'a>(s: &mut Scanner<'a>, what: &'static str) -> Result<Vec<Msg<'a>>, Problem> {
    match s.kind().map_err(json)? {
        Kind::Null => {
            s.null().map_err(json)?;
            return Ok(Vec::new());
        }
        Kind::Array => {}
        _ => return Err(Problem::bad(what, "expected a list of messages")),
    }
    s.begin_array().map_err(json)?;
    let mut out = Vec::new();
    let mut first = true;
    while s.next_elem(&mut first).map_err(json)? {
        out.push(msg(s, what)?);
    }
    Ok(out)
}

fn values(s: &mut Scanner<'_>) -> Result<Vec<i64>, Problem> {
    if s.kind().map_err(json)? != Kind::Array {
        return Err(Problem::bad(
            "value",
            "expected a list of acknowledged values",
        ));
    }
    s.begin_array().map_err(json)?;
    let mut out = Vec::new();
    let mut first = true;
    while s.next_elem(&mut first).map_err(json)? {
        out.push(integer(s, "value")?);
    }
    Ok(out)
}

fn positions<'a>(s: &mut Scanner<'a>) -> Result<Vec<Position<'a>>, Problem> {
    if s.kind().map_err(json)? != Kind::Array {
        return Err(Problem::bad(
            "value",
            "expected a list of {\"partition\",\"offset\"}",
        ));
    }
    s.begin_array().map_err(json)?;
    let mut out = Vec::new();
    let mut first = true;
    while s.next_elem(&mut first).map_err(json)? {
        if s.kind().map_err(json)? != Kind::Object {
            return Err(Problem::bad("value", "expected {\"partition\",\"offset\"}"));
        }
        s.begin_object().map_err(json)?;
        let (mut topic, mut partition, mut offset) = (None, None, None);
        let (mut f2, mut at) = (true, M_OFFSET);
        while let Some(k) = s.next_key_in(&mut f2, &MSG_KEYS, &mut at).map_err(json)? {
            match k {
                M_PARTITION => partition = Some(integer(s, "partition")?),
                M_OFFSET => offset = Some(integer(s, "offset")?),
                M_TOPIC => topic = opt_string(s, "topic")?,
                _ => {
                    s.skip().map_err(json)?;
                }
            }
        }
        out.push(Position {
            topic,
            partition: match partition {
                Some(x) => x,
                None => return Err(Problem::MissingField("partition")),
            },
            offset: match offset {
                Some(x) => x,
                None => return Err(Problem::MissingField("offset")),
            },
        });
    }
    Ok(out)
}

fn micro_ops<'a>(s: &mut Scanner<'a>) -> Result<Vec<MicroOp<'a>>, Problem> {
    if s.kind().map_err(json)? != Kind::Array {
        return Err(Problem::bad("value", "expected a list of micro-ops"));
    }
    s.begin_array().map_err(json)?;
    let mut out = Vec::new();
    let mut first = true;
    while s.next_elem(&mut first).map_err(json)? {
        if s.kind().map_err(json)? != Kind::Object {
            return Err(Problem::bad("value", "expected a micro-op object"));
        }
        s.begin_object().map_err(json)?;
        let mut f: Option<Cow<'a, str>> = None;
        let mut m = Msg::default();
        let mut have_value = false;
        let mut messages = Vec::new();
        let (mut f2, mut at) = (true, M_F);
        while let Some(k) = s.next_key_in(&mut f2, &MSG_KEYS, &mut at).map_err(json)? {
            match k {
                M_F => f = opt_string(s, "f")?,
                M_KEY => m.key = text(s, "key")?,
                M_VALUE => {
                    m.value = integer(s, "value")?;
                    have_value = true;
                }
                M_PARTITION => m.partition = nullable_int(s, "partition")?,
                M_OFFSET => m.offset = nullable_int(s, "offset")?,
                M_ID => m.id = text(s, "id")?,
                M_TOPIC => m.topic = opt_string(s, "topic")?,
                M_MESSAGES => messages = msgs(s, "messages")?,
                _ => {
                    s.skip().map_err(json)?;
                }
            }
        }
        match f.as_deref() {
            Some("send") if have_value => out.push(MicroOp::Send(m)),
            Some("send") => return Err(Problem::MissingField("micro-op value")),
            Some("poll") => out.push(MicroOp::Poll(messages)),
            Some(other) => {
                return Err(Problem::bad(
                    "value",
                    format!("unknown micro-op `{other}` (expected send or poll)"),
                ))
            }
            None => return Err(Problem::MissingField("micro-op f")),
        }
    }
    Ok(out)
}

/// Reads `value` given what the op is.
fn typed_value<'a>(
    s: &mut Scanner<'a>,
    f: &F<'a>,
    kind: OpType,
    client: bool,
) -> Result<Value<'a>, Problem> {
    if s.kind().map_err(json)? == Kind::Null {
        s.null().map_err(json)?;
        return Ok(Value::None);
    }
    if !client {
        if *f == F::Phase {
            return match s.kind().map_err(json)? {
                Kind::String => Ok(Value::Phase(s.string().map_err(json)?)),
                _ => Ok(Value::Raw(s.skip().map_err(json)?)),
            };
        }
        return Ok(Value::Raw(s.skip().map_err(json)?));
    }
    match (f, kind) {
        (F::Send, OpType::Invoke | OpType::Ok) => Ok(Value::Send(msg(s, "value")?)),
        (F::Poll, OpType::Ok) => Ok(Value::Messages(msgs(s, "value")?)),
        (F::Ack, OpType::Invoke | OpType::Ok) => Ok(Value::Values(values(s)?)),
        (F::Commit, OpType::Invoke | OpType::Ok) => Ok(Value::Positions(positions(s)?)),
        (F::Txn, OpType::Invoke | OpType::Ok | OpType::Fail | OpType::Info) => {
            Ok(Value::Txn(micro_ops(s)?))
        }
        _ => Ok(Value::Raw(s.skip().map_err(json)?)),
    }
}

/// Parses one line (without its newline) into an op.
///
/// Lines in the exact layout of Gauntlet's writer take a fast path
/// (`history/src/fast.rs`); every other line, and every error, the general one.
#[inline]
pub fn parse_op(line: &[u8]) -> Result<Op<'_>, Problem> {
    match crate::fast::parse(line) {
        Some(op) => Ok(op),
        None => parse_general(line),
    }
}

/// The general parser: any key order, white space and escapes, with the errors.
pub(crate) fn parse_general(line: &[u8]) -> Result<Op<'_>, Problem> {
    let mut s = Scanner::new(line);
    if s.kind().map_err(json)? != Kind::Object {
        return Err(Problem::Json {
            column: s.i + 1,
            what: "a history line must be a JSON object".into(),
        });
    }
    s.begin_object().map_err(json)?;
    let mut index = None;
    let mut time = None;
    let mut process = None;
    let mut kind = None;
    let mut f: Option<F<'_>> = None;
    let mut group = None;
    let mut producer = None;
    let mut error = None;
    let mut drain = None;
    let mut value: Option<Value<'_>> = None;
    let mut value_at: Option<usize> = None;
    let mut first = true;
    let mut at = K_INDEX;
    while let Some(k) = s.next_key_in(&mut first, &OP_KEYS, &mut at).map_err(json)? {
        match k {
            K_INDEX => index = Some(uint(&mut s, "index")?),
            K_TIME => time = Some(uint(&mut s, "time")?),
            K_PROCESS => {
                process = Some(match s.kind().map_err(json)? {
                    Kind::Number => Process::Client(uint(&mut s, "process")?),
                    Kind::String => {
                        let p = s.string().map_err(json)?;
                        match &*p {
                            "nemesis" => Process::Nemesis,
                            "harness" => Process::Harness,
                            _ => Process::Other(p),
                        }
                    }
                    _ => {
                        return Err(Problem::bad(
                            "process",
                            "expected an integer, \"nemesis\" or \"harness\"",
                        ))
                    }
                })
            }
            K_TYPE => {
                let t = match s.kind().map_err(json)? {
                    Kind::String => s.string().map_err(json)?,
                    _ => return Err(Problem::bad("type", "expected a string")),
                };
                kind = Some(match &*t {
                    "invoke" => OpType::Invoke,
                    "ok" => OpType::Ok,
                    "fail" => OpType::Fail,
                    "info" => OpType::Info,
                    other => {
                        return Err(Problem::bad(
                            "type",
                            format!("`{other}` is not one of invoke, ok, fail, info"),
                        ))
                    }
                });
            }
            K_F => {
                let name = match s.kind().map_err(json)? {
                    Kind::String => s.string().map_err(json)?,
                    _ => return Err(Problem::bad("f", "expected a string")),
                };
                f = Some(F::from_str(name));
            }
            K_GROUP => group = text(&mut s, "group")?,
            K_PRODUCER => {
                producer = match s.kind().map_err(json)? {
                    Kind::Number => Some(uint(&mut s, "producer")?),
                    Kind::Null => {
                        s.null().map_err(json)?;
                        None
                    }
                    _ => return Err(Problem::bad("producer", "expected an integer")),
                }
            }
            K_ERROR => {
                error = match s.kind().map_err(json)? {
                    Kind::String => Some(s.string().map_err(json)?),
                    Kind::Null => {
                        s.null().map_err(json)?;
                        None
                    }
                    _ => Some(Cow::Borrowed(s.skip().map_err(json)?)),
                }
            }
            K_DRAIN => drain = Some(s.skip().map_err(json)?),
            K_VALUE => match (&f, kind, &process) {
                // The usual field order (f and type before value): read it typed at once.
                (Some(f), Some(kind), Some(p)) => {
                    value = Some(typed_value(
                        &mut s,
                        f,
                        kind,
                        matches!(p, Process::Client(_)),
                    )?)
                }
                _ => {
                    s.ws();
                    value_at = Some(s.i);
                    s.skip().map_err(json)?;
                }
            },
            _ => {
                s.skip().map_err(json)?;
            }
        }
    }
    s.end().map_err(json)?;
    let Some(index) = index else {
        return Err(Problem::MissingField("index"));
    };
    let Some(time) = time else {
        return Err(Problem::MissingField("time"));
    };
    let Some(process) = process else {
        return Err(Problem::MissingField("process"));
    };
    let Some(kind) = kind else {
        return Err(Problem::MissingField("type"));
    };
    let Some(f) = f else {
        return Err(Problem::MissingField("f"));
    };
    let client = matches!(process, Process::Client(_));
    let value = match (value, value_at) {
        (Some(v), _) => v,
        (None, Some(at)) => {
            let mut s2 = Scanner::new(line);
            s2.i = at;
            typed_value(&mut s2, &f, kind, client)?
        }
        (None, None) => Value::None,
    };
    let drain = drain.filter(|_| process == Process::Harness);
    if client && kind == OpType::Invoke {
        match (&f, &value) {
            (F::Send, Value::None) => return Err(Problem::MissingField("value")),
            (F::Txn, Value::None) => return Err(Problem::MissingField("value")),
            _ => {}
        }
    }
    Ok(Op {
        index,
        time,
        process,
        kind,
        f,
        group,
        producer,
        value,
        error,
        drain,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_contract_examples() {
        let op = parse_op(br#"{"index":1,"time":91000,"process":0,"type":"ok","f":"send","value":{"key":"k1","value":1,"partition":0,"offset":0}}"#).unwrap();
        assert_eq!(op.index, 1);
        assert_eq!(op.process, Process::Client(0));
        assert_eq!(op.kind, OpType::Ok);
        let Value::Send(m) = op.value else { panic!() };
        assert_eq!(
            (m.key.as_deref(), m.value, m.partition, m.offset),
            (Some("k1"), 1, Some(0), Some(0))
        );

        let op = parse_op(br#"{"index":4,"time":120000,"process":4,"type":"ok","f":"poll","group":"g1","value":[{"key":"k1","value":1,"partition":0,"offset":0}]}"#).unwrap();
        assert_eq!(op.group.as_deref(), Some("g1"));
        let Value::Messages(ms) = op.value else {
            panic!()
        };
        assert_eq!(ms.len(), 1);

        let op = parse_op(br#"{"index":5,"time":130000,"process":"harness","type":"info","f":"phase","value":"drained"}"#).unwrap();
        assert_eq!(op.value, Value::Phase("drained".into()));
        let op = parse_op(br#"{"index":2,"time":95000,"process":"nemesis","type":"info","f":"kill","value":{"node":"n2"}}"#).unwrap();
        assert_eq!(op.value, Value::Raw(r#"{"node":"n2"}"#));
    }

    #[test]
    fn value_before_f_is_read_too() {
        let op = parse_op(br#"{"value":{"key":"a","value":7},"f":"send","type":"invoke","process":3,"time":1,"index":0}"#).unwrap();
        let Value::Send(m) = op.value else { panic!() };
        assert_eq!(m.value, 7);
    }

    #[test]
    fn problems_are_named() {
        assert_eq!(
            parse_op(br#"{"time":1,"process":0,"type":"invoke","f":"poll"}"#),
            Err(Problem::MissingField("index"))
        );
        assert!(matches!(
            parse_op(br#"{"index":0,"time":1,"process":0,"type":"done","f":"poll"}"#),
            Err(Problem::BadField { field: "type", .. })
        ));
        assert_eq!(
            parse_op(br#"{"index":0,"time":1,"process":0,"type":"invoke","f":"send"}"#),
            Err(Problem::MissingField("value"))
        );
        assert_eq!(
            parse_op(br#"{"index":0,"time":1,"process":0,"type":"invoke","f":"send","value":{"key":"a"}}"#),
            Err(Problem::MissingField("value.value"))
        );
        assert!(matches!(
            parse_op(br#"{"index":0,"time":1.5,"process":0,"type":"invoke","f":"poll"}"#),
            Err(Problem::BadField { field: "time", .. })
        ));
        assert!(matches!(
            parse_op(br#"{"index":0,"#),
            Err(Problem::Json { .. })
        ));
        assert!(matches!(parse_op(br#"[1]"#), Err(Problem::Json { .. })));
    }
}
