//! The fast path of the line parser: the exact layout Gauntlet's writer produces.
//!
//! [`crate::writer::write_line`] always puts the keys in one order
//! (`index`, `time`, `process`, `type`, `f`, `group`, `value`, `error`) with no
//! white space, and serde_json writes message objects with their keys sorted.
//! Matching that layout literally (a fixed-length compare per key, eight digits
//! at a time per integer) is several times cheaper than the general scanner,
//! which has to expect any key in any order.
//!
//! The contract is simple: [`parse`] returns `Some(op)` only for a line that is
//! valid JSON, that the general parser ([`crate::op::parse_op`]) accepts, and
//! for which it returns the same op; for everything else (other key orders,
//! white space, escapes, unusual values, every error) it returns `None` and the
//! general parser decides. A test checks this on generated and on mutated lines.
use crate::json::{plain_run, swar_digits, POW10};
use crate::op::{MicroOp, Msg, Op, OpType, Position, Process, Value, F};
use std::borrow::Cow;

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[inline(always)]
    fn byte(&mut self, c: u8) -> Option<()> {
        if self.peek() == Some(c) {
            self.i += 1;
            Some(())
        } else {
            None
        }
    }

    /// Consumes `pat` if the input continues with it.
    #[inline(always)]
    fn lit<const N: usize>(&mut self, pat: &[u8; N]) -> bool {
        match self.b.get(self.i..self.i + N) {
            Some(s) if s == pat => {
                self.i += N;
                true
            }
            _ => false,
        }
    }

    /// A JSON integer of at most 18 digits (no fraction, no exponent).
    #[inline(always)]
    fn int(&mut self) -> Option<i64> {
        let neg = self.peek() == Some(b'-');
        let start = self.i + usize::from(neg);
        let mut i = start;
        let mut v: u64 = 0;
        let mut whole = false;
        for _ in 0..2 {
            let Some(chunk) = self.b.get(i..i + 8) else {
                break;
            };
            let mut w = [0u8; 8];
            w.copy_from_slice(chunk);
            let (n, digits) = swar_digits(u64::from_le_bytes(w));
            v = v * POW10[n] + digits;
            i += n;
            if n < 8 {
                whole = true;
                break;
            }
        }
        if !whole {
            while i - start < 18 {
                let Some(d) = self.b.get(i).map(|c| c.wrapping_sub(b'0')) else {
                    break;
                };
                if d > 9 {
                    break;
                }
                v = v * 10 + u64::from(d);
                i += 1;
            }
        }
        let n = i - start;
        // What may follow a number in this layout; anything else is the general path's.
        let next_ok = matches!(self.b.get(i), Some(b',' | b'}' | b']'));
        if n == 0 || !next_ok || (n > 1 && self.b[start] == b'0') {
            return None;
        }
        self.i = i;
        let v = v as i64;
        Some(if neg { -v } else { v })
    }

    #[inline(always)]
    fn uint(&mut self) -> Option<u64> {
        if self.peek() == Some(b'-') {
            return None;
        }
        self.int().map(|v| v as u64)
    }

    /// A string without escapes, control characters or non-ASCII bytes.
    #[inline(always)]
    fn str(&mut self) -> Option<&'a str> {
        self.byte(b'"')?;
        let start = self.i;
        let end = plain_run(self.b, start);
        if self.b.get(end) != Some(&b'"') {
            return None;
        }
        self.i = end + 1;
        // SAFETY: `plain_run` stops at the first byte >= 0x80, so b[start..end] is
        // ASCII, which is valid UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(&self.b[start..end]) })
    }

    /// `,"name":` (or `"name":` for the first key), consumed when it is next.
    #[inline(always)]
    fn key<const N: usize>(&mut self, first: &mut bool, name: &[u8; N]) -> bool {
        let at = self.i;
        if !*first && self.byte(b',').is_none() {
            return false;
        }
        if self.lit(name) {
            *first = false;
            true
        } else {
            self.i = at;
            false
        }
    }

    /// A message object. Its keys may come in any order (serde_json sorts them;
    /// the contract's examples do not), and a key given twice counts with its last
    /// value, as in the general parser; a key this path does not know sends the
    /// line to the general parser.
    fn msg(&mut self) -> Option<Msg<'a>> {
        self.byte(b'{')?;
        let mut m = Msg::default();
        let mut have_value = false;
        loop {
            if self.lit(b"\"redelivered\":") {
                m.redelivered = if self.lit(b"true") {
                    true
                } else if self.lit(b"false") {
                    false
                } else {
                    return None;
                };
            } else {
                self.msg_key(&mut m, &mut have_value)?;
            }
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    break;
                }
                _ => return None,
            }
        }
        have_value.then_some(m)
    }

    /// One of a message's keys but `redelivered`, into `m`; `None` for any other key.
    #[inline(always)]
    fn msg_key(&mut self, m: &mut Msg<'a>, have_value: &mut bool) -> Option<()> {
        // The key's first letter picks the only key it can be.
        match self.b.get(self.i + 1)? {
            b'k' if self.lit(b"\"key\":") => m.key = Some(Cow::Borrowed(self.str()?)),
            b'o' if self.lit(b"\"offset\":") => m.offset = Some(self.int()?),
            b'p' if self.lit(b"\"partition\":") => m.partition = Some(self.int()?),
            b'v' if self.lit(b"\"value\":") => {
                m.value = self.int()?;
                *have_value = true;
            }
            b'i' if self.lit(b"\"id\":") => m.id = Some(Cow::Borrowed(self.str()?)),
            b'i' if self.lit(b"\"input\":") => m.input = Some(self.int()?),
            b't' if self.lit(b"\"topic\":") => m.topic = Some(Cow::Borrowed(self.str()?)),
            _ => return None,
        }
        Some(())
    }

    /// A JSON array of items read by `item`, in the writer's layout (no white space).
    #[inline(always)]
    fn list<T>(
        &mut self,
        capacity: usize,
        mut item: impl FnMut(&mut Self) -> Option<T>,
    ) -> Option<Vec<T>> {
        self.byte(b'[')?;
        let mut out = Vec::with_capacity(capacity);
        if self.byte(b']').is_some() {
            return Some(out);
        }
        loop {
            out.push(item(self)?);
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(out);
                }
                _ => return None,
            }
        }
    }

    fn msgs(&mut self) -> Option<Vec<Msg<'a>>> {
        self.list(4, Self::msg)
    }

    fn ints(&mut self) -> Option<Vec<i64>> {
        self.list(0, Self::int)
    }

    /// A commit's positions, `{"offset","partition"[,"topic"]}` each.
    fn position(&mut self) -> Option<Position<'a>> {
        self.byte(b'{')?;
        let mut first = true;
        if !self.key(&mut first, b"\"offset\":") {
            return None;
        }
        let offset = self.int()?;
        if !self.key(&mut first, b"\"partition\":") {
            return None;
        }
        let partition = self.int()?;
        let topic = if self.key(&mut first, b"\"topic\":") {
            Some(Cow::Borrowed(self.str()?))
        } else {
            None
        };
        self.byte(b'}')?;
        Some(Position {
            topic,
            partition,
            offset,
        })
    }

    fn positions(&mut self) -> Option<Vec<Position<'a>>> {
        self.list(0, Self::position)
    }

    /// A transaction's micro-op, in serde_json's sorted-key layout:
    /// `{"f":"send",<message keys>}` or `{"f":"poll"[,"messages":[...]]}`. The general
    /// parser reads any key on either kind; this path takes only the keys that
    /// kind uses (a repeated one counts with its last value, as there).
    fn micro_op(&mut self) -> Option<MicroOp<'a>> {
        if self.lit(b"{\"f\":\"send\"") {
            let mut m = Msg::default();
            let mut have_value = false;
            while self.byte(b',').is_some() {
                self.msg_key(&mut m, &mut have_value)?;
            }
            self.byte(b'}')?;
            have_value.then_some(MicroOp::Send(m))
        } else if self.lit(b"{\"f\":\"poll\"") {
            let mut messages = Vec::new();
            while self.byte(b',').is_some() {
                if !self.lit(b"\"messages\":") {
                    return None;
                }
                messages = self.msgs()?;
            }
            self.byte(b'}')?;
            Some(MicroOp::Poll(messages))
        } else {
            None
        }
    }

    fn micro_ops(&mut self) -> Option<Vec<MicroOp<'a>>> {
        self.list(4, Self::micro_op)
    }
}

/// Parses a line in the writer's exact layout; `None` leaves it to the general parser.
#[inline]
pub(crate) fn parse(line: &[u8]) -> Option<Op<'_>> {
    let mut end = 0;
    let op = parse_prefix(line, &mut end)?;
    (end == line.len()).then_some(op)
}

/// The op of the line at the start of `buf` when it takes the fast path and ends
/// with `\n` or `\r\n` inside `buf`; `next` is set to where the next line starts. The
/// reader calls this before it looks for the newline: the parser finds the end of the
/// line itself, so the bytes are scanned once. Everything else (white space, a line
/// cut at the end of the buffer) gives `None`, and the reader takes its general path.
///
/// Same as splitting at the first `\n`, dropping one `\r` before it (as the reader
/// does) and calling [`parse`]: no value the fast path accepts holds a `\r` or `\n`
/// (strings stop at control characters), so the first `\n` is the one after the
/// closing brace.
#[inline(always)]
pub(crate) fn parse_line<'a>(buf: &'a [u8], next: &mut usize) -> Option<Op<'a>> {
    let op = parse_prefix(buf, next)?;
    let eol = match buf.get(*next..) {
        Some([b'\n', ..]) => 1,
        Some([b'\r', b'\n', ..]) => 2,
        _ => return None,
    };
    *next += eol;
    Some(op)
}

/// Parses one op from the start of `line`; `end` is set to the position after its
/// `}`. (An out parameter: returning a pair made the op be copied once more.)
#[inline(always)]
fn parse_prefix<'a>(line: &'a [u8], end: &mut usize) -> Option<Op<'a>> {
    let mut c = Cursor { b: line, i: 0 };
    if !c.lit(b"{\"index\":") {
        return None;
    }
    let index = c.uint()?;
    if !c.lit(b",\"time\":") {
        return None;
    }
    let time = c.uint()?;
    if !c.lit(b",\"process\":") {
        return None;
    }
    // Only clients: nemesis and harness lines are few and take the general path.
    let process = c.uint()?;
    if !c.lit(b",\"type\":\"") {
        return None;
    }
    let kind = if c.lit(b"invoke\"") {
        OpType::Invoke
    } else if c.lit(b"ok\"") {
        OpType::Ok
    } else if c.lit(b"fail\"") {
        OpType::Fail
    } else if c.lit(b"info\"") {
        OpType::Info
    } else {
        return None;
    };
    if !c.lit(b",\"f\":") {
        return None;
    }
    let f = match c.str()? {
        "send" => F::Send,
        "poll" => F::Poll,
        "ack" => F::Ack,
        "commit" => F::Commit,
        "txn" => F::Txn,
        _ => return None,
    };
    let group = if c.lit(b",\"group\":") {
        Some(Cow::Borrowed(c.str()?))
    } else {
        None
    };
    let producer = if c.lit(b",\"producer\":") {
        Some(c.uint()?)
    } else {
        None
    };
    let value = if c.lit(b",\"value\":") {
        if c.lit(b"null") {
            Value::None
        } else {
            match (&f, kind) {
                (F::Send, OpType::Invoke | OpType::Ok) => Value::Send(c.msg()?),
                (F::Poll, OpType::Ok) => Value::Messages(c.msgs()?),
                (F::Ack, OpType::Invoke | OpType::Ok) => Value::Values(c.ints()?),
                (F::Commit, OpType::Invoke | OpType::Ok) => Value::Positions(c.positions()?),
                (F::Txn, _) => Value::Txn(c.micro_ops()?),
                _ => return None,
            }
        }
    } else {
        Value::None
    };
    let error = if c.lit(b",\"error\":") {
        Some(Cow::Borrowed(c.str()?))
    } else {
        None
    };
    if !c.lit(b"}") {
        return None;
    }
    // The general parser refuses these (a send must say what it sends).
    if kind == OpType::Invoke && matches!(f, F::Send | F::Txn) && value == Value::None {
        return None;
    }
    *end = c.i;
    Some(Op {
        index,
        time,
        process: Process::Client(process),
        kind,
        f,
        group,
        producer,
        value,
        error,
        drain: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::parse_op;
    use crate::rng::Rng;
    // Only bytes come from the test kit: its history types are another copy
    // of this crate's (see history/Cargo.toml).
    use gauntlet_testkit::queue_gen::{generate, GenConfig};

    /// Every line the fast path takes, the general parser takes too, with the same op.
    fn agree(line: &[u8]) -> bool {
        // What the reader sees: the line, its newline and the start of the next one.
        let mut buf = line.to_vec();
        buf.extend_from_slice(b"\n{\"index\":");
        let mut next = 0;
        let in_buffer = parse_line(&buf, &mut next).map(|op| (op, next));
        match parse(line) {
            Some(op) => {
                assert_eq!(
                    crate::op::parse_general(line).as_ref(),
                    Ok(&op),
                    "{}",
                    String::from_utf8_lossy(line)
                );
                assert_eq!(
                    in_buffer,
                    Some((op.clone(), line.len() + 1)),
                    "{}",
                    String::from_utf8_lossy(line)
                );
                // Cut before its newline, the line is left to the general path.
                assert_eq!(parse_line(line, &mut next), None);
                // Ended by `\r\n`, it is taken the same, both bytes with it.
                let mut crlf = line.to_vec();
                crlf.extend_from_slice(b"\r\n{");
                assert_eq!(
                    parse_line(&crlf, &mut next).map(|op| (op, next)),
                    Some((op, line.len() + 2)),
                    "{}",
                    String::from_utf8_lossy(line)
                );
                // A `\r` not followed by `\n` is the general path's.
                crlf.truncate(line.len() + 1);
                assert_eq!(parse_line(&crlf, &mut next), None);
                true
            }
            None => {
                // A line with no newline inside it can only be taken whole, or
                // without the one `\r` the reader drops before a newline.
                if !line.contains(&b'\n') {
                    let without_cr = line.strip_suffix(b"\r").and_then(parse);
                    assert_eq!(
                        in_buffer.map(|(op, _)| op),
                        without_cr,
                        "{}",
                        String::from_utf8_lossy(line)
                    );
                }
                false
            }
        }
    }

    #[test]
    fn generated_lines_take_the_fast_path_and_agree() {
        let mut out = Vec::new();
        let cfg = GenConfig {
            ops: 20_000,
            ..GenConfig::default()
        };
        generate(&cfg, &mut out).unwrap();
        let (mut fast, mut all) = (0, 0);
        for line in out.split(|&c| c == b'\n').filter(|l| !l.is_empty()) {
            all += 1;
            if agree(line) {
                fast += 1;
            }
        }
        // Everything but nemesis, harness and subscribe/assign lines.
        assert!(
            fast * 10 > all * 9,
            "{fast} of {all} lines on the fast path"
        );
    }

    fn txn_lines(txns: u64) -> Vec<u8> {
        let cfg = gauntlet_testkit::txn_gen::TxnGenConfig {
            txns,
            ..Default::default()
        };
        gauntlet_testkit::txn_gen::generate_txns_vec(&cfg).0
    }

    #[test]
    fn generated_txn_lines_take_the_fast_path_and_agree() {
        let out = txn_lines(5_000);
        let (mut fast, mut all) = (0, 0);
        for line in out.split(|&c| c == b'\n').filter(|l| !l.is_empty()) {
            all += 1;
            if agree(line) {
                fast += 1;
            }
        }
        assert!(all > 9_000, "{all} lines");
        assert!(
            fast * 100 > all * 99,
            "{fast} of {all} lines on the fast path"
        );
    }

    #[test]
    fn hand_written_lines() {
        for line in [
            r#"{"index":1,"time":91000,"process":0,"type":"ok","f":"send","value":{"key":"k1","offset":0,"partition":0,"value":1}}"#,
            r#"{"index":4,"time":120000,"process":4,"type":"ok","f":"poll","group":"g1","value":[{"id":"m-1","key":"k1","redelivered":true,"topic":"t","value":-1}]}"#,
            r#"{"index":4,"time":120000,"process":4,"type":"ok","f":"commit","value":[{"offset":3,"partition":0},{"offset":5,"partition":1,"topic":"t"}]}"#,
            r#"{"index":4,"time":120000,"process":4,"type":"ok","f":"ack","value":[1,2,3]}"#,
            r#"{"index":4,"time":120000,"process":4,"type":"info","f":"send","error":"timeout"}"#,
            r#"{"index":4,"time":120000,"process":4,"type":"ok","f":"poll","value":[]}"#,
            r#"{"index":1,"time":91000,"process":0,"type":"ok","f":"send","value":{"key":"k1","value":1,"partition":0,"offset":0}}"#,
            r#"{"index":1,"time":91000,"process":0,"type":"ok","f":"send","value":{"value":1,"key":"k1","value":2}}"#,
            r#"{"index":1,"time":91000,"process":3,"type":"invoke","f":"send","producer":1,"value":{"key":"k1","value":1}}"#,
            r#"{"index":2,"time":9,"process":1,"type":"invoke","f":"txn","value":[{"f":"poll"},{"f":"send","key":"3","value":7}]}"#,
            r#"{"index":3,"time":9,"process":1,"type":"ok","f":"txn","value":[{"f":"poll","messages":[{"key":"3","offset":4,"partition":3,"value":6}]},{"f":"send","key":"3","offset":5,"partition":3,"value":7}]}"#,
            r#"{"index":3,"time":9,"process":1,"type":"fail","f":"txn","value":[{"f":"poll","messages":[]},{"f":"send","value":7,"key":"3"}],"error":"aborted"}"#,
            r#"{"index":3,"time":9,"process":1,"type":"info","f":"txn","value":null}"#,
            r#"{"index":3,"time":9,"process":1,"type":"ok","f":"txn","value":[]}"#,
        ] {
            assert!(agree(line.as_bytes()), "{line}");
        }
        for line in [
            r#"{"index":1, "time":91000,"process":0,"type":"invoke","f":"poll"}"#,
            r#"{"index":01,"time":91000,"process":0,"type":"invoke","f":"poll"}"#,
            r#"{"index":1,"time":91000,"process":0,"type":"invoke","f":"send"}"#,
            r#"{"index":1,"time":91000,"process":0,"type":"invoke","f":"poll"} "#,
            r#"{"index":1,"time":91000,"process":0,"type":"invoke","f":"poll"}}"#,
            r#"{"index":1,"time":1.5,"process":0,"type":"invoke","f":"poll"}"#,
            r#"{"index":1,"time":1,"process":0,"type":"invoke","f":"p\u006fll"}"#,
            r#"{"index":1,"time":1,"process":"nemesis","type":"info","f":"kill"}"#,
            r#"{"index":1,"time":1,"process":0,"type":"invoke","f":"send","value":{"key":"a","value":1},"value":{"key":"a","value":2}}"#,
            r#"{"index":1,"time":1,"process":0,"type":"invoke","f":"send","value":{"key":"a","vals":1,"value":1}}"#,
            r#"{"index":1,"time":1,"process":0,"type":"invoke","f":"send","value":{"key":"a"}}"#,
            r#"{"index":1,"time":1,"process":0,"type":"invoke","f":"send","value":{}}"#,
            r#"{"index":1,"time":1,"process":0,"type":"invoke","f":"txn"}"#,
            r#"{"index":1,"time":1,"process":0,"type":"invoke","f":"txn","value":[{"f":"send","key":"a"}]}"#,
            r#"{"index":1,"time":1,"process":0,"type":"invoke","f":"txn","value":[{"key":"a","f":"send","value":1}]}"#,
            r#"{"index":1,"time":1,"process":0,"type":"invoke","f":"txn","value":[{"f":"send","redelivered":true,"value":1}]}"#,
            r#"{"index":1,"time":1,"process":0,"type":"invoke","f":"txn","value":[{"f":"poll","key":"a"}]}"#,
            r#"{"index":1,"time":1,"process":0,"type":"invoke","f":"txn","value":[{"f":"read"}]}"#,
        ] {
            assert!(!agree(line.as_bytes()), "fast path took {line}");
        }
    }

    #[test]
    fn mutated_lines_never_disagree() {
        let mut out = Vec::new();
        let cfg = GenConfig {
            ops: 3_000,
            ..GenConfig::default()
        };
        generate(&cfg, &mut out).unwrap();
        out.extend_from_slice(&txn_lines(500));
        let lines: Vec<&[u8]> = out
            .split(|&c| c == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        let mut rng = Rng::new(7);
        const BYTES: &[u8] = b"{}[]\":,0123456789-.eE \\tnul\x01\xc3a";
        for round in 0..60_000u64 {
            let mut line = lines[(round as usize) % lines.len()].to_vec();
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(line.len() as u64 + 1) as usize;
                let b = BYTES[rng.below(BYTES.len() as u64) as usize];
                match rng.below(3) {
                    0 if at < line.len() => line[at] = b,
                    1 => line.insert(at, b),
                    _ if at < line.len() => {
                        line.remove(at);
                    }
                    _ => {}
                }
            }
            agree(&line);
            // And whatever the fast path refuses, the general parser still judges.
            let _ = parse_op(&line);
        }
    }
}
