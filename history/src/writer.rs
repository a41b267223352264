//! The history writer the recorder uses: one line per event, written and flushed as it happens.
use crate::op::OpType;
use std::borrow::Cow;
use std::io::{self, Write};
use std::path::Path;
use std::time::Instant;

/// Who an event is from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// A client, by process number: `"process": n`.
    Client(u64),
    /// The fault injector: `"process": "nemesis"`.
    Nemesis,
    /// The harness (phase markers): `"process": "harness"`.
    Harness,
}

/// One event to record; the writer stamps `index` and `time`.
#[derive(Debug, Clone)]
pub struct Event {
    /// `process`: who did it.
    pub process: Actor,
    /// `type`: `invoke`, `ok`, `fail` or `info`.
    pub kind: OpType,
    /// `f`: the function (`send`, `poll`, ..., a fault's name, `phase`); a
    /// constant name costs no allocation.
    pub f: Cow<'static, str>,
    /// `group`: the consumer group of a `poll`, `ack` or `commit`; `None` is the default group.
    pub group: Option<String>,
    /// Extension: the logical producer of a send invoke, when several processes
    /// share one producer client (a pipelined producer). Absent: the process.
    pub producer: Option<u64>,
    /// `value`; `None` writes no `value`.
    pub value: Option<Payload>,
    /// `error`: the error text of a `fail` or `info`.
    pub error: Option<String>,
    /// Extension, on the `drained` marker only: how the drain ended
    /// ([`crate::DrainEnd`]), written after `error`.
    pub drain: Option<serde_json::Value>,
}

/// An event's `value`.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    /// Any JSON.
    Json(serde_json::Value),
    /// One message, written as the object `{"key", "value"}` with `partition`,
    /// `offset` and `id` where set: the same line as the JSON object of those
    /// fields, without building one (the hot path of a send's invoke and completion).
    Message(Message),
}

/// A message of a send's invoke or completion (`docs/history-format.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// `key`.
    pub key: String,
    /// `value`.
    pub value: i64,
    /// `partition`, where the broker gave one.
    pub partition: Option<i64>,
    /// `offset`, where the broker gave one.
    pub offset: Option<i64>,
    /// `id`: the broker's message id, where it gave one.
    pub id: Option<String>,
}

impl Message {
    /// A message with its key and value only (a send's invoke).
    pub fn new(key: impl Into<String>, value: i64) -> Self {
        Message {
            key: key.into(),
            value,
            partition: None,
            offset: None,
            id: None,
        }
    }

    /// Writes the JSON object, its fields in the order `serde_json` gives an object
    /// of them (sorted by name), so the line is byte for byte the same.
    fn write_json(&self, buf: &mut Vec<u8>) -> io::Result<()> {
        buf.push(b'{');
        if let Some(id) = &self.id {
            buf.extend_from_slice(b"\"id\":");
            serde_json::to_writer(&mut *buf, id)?;
            buf.push(b',');
        }
        buf.extend_from_slice(b"\"key\":");
        serde_json::to_writer(&mut *buf, &self.key)?;
        if let Some(o) = self.offset {
            write!(buf, ",\"offset\":{o}")?;
        }
        if let Some(p) = self.partition {
            write!(buf, ",\"partition\":{p}")?;
        }
        write!(buf, ",\"value\":{}}}", self.value)
    }
}

impl Event {
    /// An event with no `group`, `producer`, `value` or `error`.
    pub fn new(process: Actor, kind: OpType, f: impl Into<Cow<'static, str>>) -> Self {
        Event {
            process,
            kind,
            f: f.into(),
            group: None,
            producer: None,
            value: None,
            error: None,
            drain: None,
        }
    }
    /// This event with `value` set.
    pub fn value(mut self, v: serde_json::Value) -> Self {
        self.value = Some(Payload::Json(v));
        self
    }
    /// This event with one message as its `value`.
    pub fn message(mut self, m: Message) -> Self {
        self.value = Some(Payload::Message(m));
        self
    }
    /// This event with `group` set.
    pub fn group(mut self, g: impl Into<String>) -> Self {
        self.group = Some(g.into());
        self
    }
    /// This event with `producer` set.
    pub fn producer(mut self, p: u64) -> Self {
        self.producer = Some(p);
        self
    }
    /// This event with `error` set.
    pub fn error(mut self, e: impl Into<String>) -> Self {
        self.error = Some(e.into());
        self
    }
}

/// Appends events as JSON Lines. Every line goes out in one `write` and is
/// flushed at once, so a writer killed with -9 leaves whole lines behind (at
/// worst the last one cut, which the reader leaves out with a warning).
pub struct HistoryWriter<W: Write> {
    out: W,
    next_index: u64,
    start: Instant,
    last_time: u64,
    line: Vec<u8>,
}

impl HistoryWriter<std::fs::File> {
    /// Creates (truncates) a history file.
    pub fn create(path: impl AsRef<Path>) -> io::Result<Self> {
        Ok(Self::new(std::fs::File::create(path)?))
    }
}

impl<W: Write> HistoryWriter<W> {
    /// A writer that appends to `out`; its first event gets index 0, and its clock starts now.
    pub fn new(out: W) -> Self {
        HistoryWriter {
            out,
            next_index: 0,
            start: Instant::now(),
            last_time: 0,
            line: Vec::with_capacity(256),
        }
    }

    /// Nanoseconds since the writer was created: the `time` an event appended now gets.
    pub fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos())
            .unwrap_or(u64::MAX)
            .max(self.last_time)
    }

    /// Records an event now (nanoseconds since the writer was created); returns its index.
    pub fn append(&mut self, e: &Event) -> io::Result<u64> {
        let now = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.append_at(now, e)
    }

    /// Records an event at a given time (clamped so time never goes back); returns its index.
    pub fn append_at(&mut self, time: u64, e: &Event) -> io::Result<u64> {
        self.append_all_at(time, std::slice::from_ref(e))
    }

    /// Records several events now, as one write (their lines in order, the same
    /// time for each); returns the index of the first. When the write fails,
    /// part of the batch may be in the output (a prefix of its lines, the last
    /// one possibly cut) and no index is taken.
    pub fn append_all(&mut self, events: &[Event]) -> io::Result<u64> {
        let now = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.append_all_at(now, events)
    }

    /// [`HistoryWriter::append_all`] at a given time (clamped so time never goes back).
    fn append_all_at(&mut self, time: u64, events: &[Event]) -> io::Result<u64> {
        let time = time.max(self.last_time);
        let first = self.next_index;
        self.line.clear();
        for (i, e) in events.iter().enumerate() {
            write_line(&mut self.line, first + i as u64, time, e)?;
        }
        self.out.write_all(&self.line)?;
        self.out.flush()?;
        self.next_index += events.len() as u64;
        self.last_time = time;
        Ok(first)
    }

    /// Ends the writer and gives back its output.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Formats one event as a line of the v1 contract, field order as in its examples.
pub fn write_line(buf: &mut Vec<u8>, index: u64, time: u64, e: &Event) -> io::Result<()> {
    write!(buf, "{{\"index\":{index},\"time\":{time},\"process\":")?;
    match &e.process {
        Actor::Client(p) => write!(buf, "{p}")?,
        Actor::Nemesis => buf.extend_from_slice(b"\"nemesis\""),
        Actor::Harness => buf.extend_from_slice(b"\"harness\""),
    }
    write!(buf, ",\"type\":\"{}\",\"f\":", e.kind.as_str())?;
    serde_json::to_writer(&mut *buf, e.f.as_ref())?;
    if let Some(g) = &e.group {
        buf.extend_from_slice(b",\"group\":");
        serde_json::to_writer(&mut *buf, g)?;
    }
    if let Some(p) = e.producer {
        write!(buf, ",\"producer\":{p}")?;
    }
    match &e.value {
        Some(Payload::Json(v)) => {
            buf.extend_from_slice(b",\"value\":");
            serde_json::to_writer(&mut *buf, v)?;
        }
        Some(Payload::Message(m)) => {
            buf.extend_from_slice(b",\"value\":");
            m.write_json(buf)?;
        }
        None => {}
    }
    if let Some(err) = &e.error {
        buf.extend_from_slice(b",\"error\":");
        serde_json::to_writer(&mut *buf, err)?;
    }
    if let Some(d) = &e.drain {
        buf.extend_from_slice(b",\"drain\":");
        serde_json::to_writer(&mut *buf, d)?;
    }
    buf.extend_from_slice(b"}\n");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Actor, Event, OpType};

    #[test]
    fn a_message_is_written_byte_for_byte_as_its_json_object() {
        let cases = [
            (
                Message::new("k1", 7),
                serde_json::json!({"key": "k1", "value": 7}),
            ),
            (
                Message {
                    partition: Some(2),
                    offset: Some(-1),
                    ..Message::new("k \"q\" \u{e9}", -3)
                },
                serde_json::json!({"key": "k \"q\" \u{e9}", "value": -3, "partition": 2, "offset": -1}),
            ),
            (
                Message {
                    id: Some("1733-0".into()),
                    ..Message::new("k2", i64::MAX)
                },
                serde_json::json!({"key": "k2", "value": i64::MAX, "id": "1733-0"}),
            ),
            (
                Message {
                    partition: Some(0),
                    offset: Some(9),
                    id: Some("m\n".into()),
                    ..Message::new("", 0)
                },
                serde_json::json!({"key": "", "value": 0, "partition": 0, "offset": 9, "id": "m\n"}),
            ),
        ];
        for (m, v) in cases {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let e = Event::new(Actor::Client(3), OpType::Ok, "send").producer(1);
            write_line(&mut a, 5, 6, &e.clone().message(m)).expect("message");
            write_line(&mut b, 5, 6, &e.value(v)).expect("json");
            assert_eq!(String::from_utf8_lossy(&a), String::from_utf8_lossy(&b));
        }
    }

    #[test]
    fn a_batch_is_the_same_lines_as_one_by_one_with_consecutive_indexes() {
        let ev = |p: u64, kind: OpType| {
            Event::new(Actor::Client(p), kind, "send")
                .value(serde_json::json!({"key": "k1", "value": p}))
        };
        let mut w = HistoryWriter::new(Vec::new());
        assert_eq!(w.append(&ev(0, OpType::Invoke)).expect("one"), 0);
        let batch = [
            ev(1, OpType::Invoke),
            ev(2, OpType::Invoke),
            ev(0, OpType::Ok),
        ];
        assert_eq!(w.append_all(&batch).expect("batch"), 1);
        assert_eq!(w.append(&ev(1, OpType::Ok)).expect("after"), 4);
        assert_eq!(w.append_all(&[]).expect("empty"), 5);
        let text = String::from_utf8(w.into_inner()).expect("utf8");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("json line"))
            .collect();
        assert_eq!(lines.len(), 5);
        for (i, l) in lines.iter().enumerate() {
            assert_eq!(l["index"], i as u64);
        }
        assert_eq!(
            lines[1]["time"], lines[3]["time"],
            "a batch is written at one time"
        );
        assert!(lines[4]["time"].as_u64() >= lines[3]["time"].as_u64());
        assert_eq!(lines[3]["type"], "ok");
        assert_eq!(lines[2]["process"], 2);
    }
}
