//! A strict reader of Jepsen's `history.edn` (the Kafka workload of
//! `jepsen.tests.kafka`): the EDN subset those files use, with errors that
//! name the file, line and column.
//!
//! Each op is a map (or a `#jepsen.history.Op{...}` record) with `:index`,
//! `:time`, `:type`, `:process`, `:f` and `:value`. Micro-ops are
//! `[:send k v]` (completed: `[:send k [offset v]]`) and `[:poll]`
//! (completed: `[:poll {k [[offset v] ...], ...}]`). A Jepsen key names one
//! topic-partition, so it becomes both the key and the partition. Jepsen's
//! values are unique per key only, while the contract wants them unique in the
//! run: value `v` of key `k` becomes `k * 1_000_000_000 + v`.
//!
//! When the history has any `:txn` op, every `:send` and `:poll` op is a
//! transaction too (Jepsen's transactional runs). Otherwise the micro-ops say
//! what an op is, not its `:f`: two sends, or a send and a poll, make a
//! transaction, one send a send, polls only a poll (a `:poll` op carrying a
//! `:send` is a send); a completion with none is what its invoke was.
use crate::error::{HistoryError, Problem};
use crate::model::{Builder, History};
use crate::op::{MicroOp, Msg, Op, OpType, Process, Value, F};
use rustc_hash::FxHashMap;
use std::borrow::Cow;
use std::path::Path;

/// Values of one key must stay below this to be made run-unique.
pub const VALUE_SPAN: i64 = 1_000_000_000;

/// An EDN value.
#[derive(Debug, Clone, PartialEq)]
pub enum Edn {
    /// `nil`.
    Nil,
    /// `true` or `false`.
    Bool(bool),
    /// An integer (a trailing `N` is allowed).
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A string, unescaped.
    Str(String),
    /// A character (`\a`, `\newline`, `\space`, `\tab`, `\return`).
    Char(char),
    /// A keyword, without its leading `:`.
    Keyword(String),
    /// A symbol: a token that is not `nil`, `true`, `false` or a number.
    Symbol(String),
    /// A list, `( ... )`.
    List(Vec<Edn>),
    /// A vector, `[ ... ]`.
    Vector(Vec<Edn>),
    /// A map, `{ ... }`, as key-value pairs in the order written.
    Map(Vec<(Edn, Edn)>),
    /// A set, `#{ ... }`, in the order written.
    Set(Vec<Edn>),
    /// A tagged form, `#tag form` (such as `#jepsen.history.Op{...}`): the tag without `#`, and the form.
    Tagged(String, Box<Edn>),
}

impl Edn {
    fn get(&self, key: &str) -> Option<&Edn> {
        match self {
            Edn::Map(kv) => kv.iter().find_map(|(k, v)| match k {
                Edn::Keyword(s) if s == key => Some(v),
                _ => None,
            }),
            Edn::Tagged(_, inner) => inner.get(key),
            _ => None,
        }
    }
    fn is_map(&self) -> bool {
        match self {
            Edn::Map(_) => true,
            Edn::Tagged(_, inner) => inner.is_map(),
            _ => false,
        }
    }
    /// As EDN text (for error messages kept in ops).
    pub fn to_text(&self) -> String {
        fn seq(out: &mut String, open: &str, xs: &[Edn], close: &str) {
            out.push_str(open);
            for (i, x) in xs.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(&x.to_text());
            }
            out.push_str(close);
        }
        let mut out = String::new();
        match self {
            Edn::Nil => out.push_str("nil"),
            Edn::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Edn::Int(i) => out.push_str(&i.to_string()),
            Edn::Float(f) => out.push_str(&f.to_string()),
            Edn::Str(s) => out.push_str(s),
            Edn::Char(c) => out.push(*c),
            Edn::Keyword(k) => {
                out.push(':');
                out.push_str(k)
            }
            Edn::Symbol(s) => out.push_str(s),
            Edn::List(xs) => seq(&mut out, "(", xs, ")"),
            Edn::Vector(xs) => seq(&mut out, "[", xs, "]"),
            Edn::Set(xs) => seq(&mut out, "#{", xs, "}"),
            Edn::Map(kv) => {
                out.push('{');
                for (i, (k, v)) in kv.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(&k.to_text());
                    out.push(' ');
                    out.push_str(&v.to_text());
                }
                out.push('}');
            }
            Edn::Tagged(t, v) => {
                out.push('#');
                out.push_str(t);
                out.push_str(&v.to_text());
            }
        }
        out
    }
}

/// A syntax error at a 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdnError {
    /// The 1-based line.
    pub line: u64,
    /// The 1-based column, in bytes.
    pub column: usize,
    /// What is wrong.
    pub what: String,
}

/// The EDN parser over a whole text.
pub struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    line: u64,
    line_start: usize,
}

const DEPTH: usize = 512;

fn is_delim(c: u8) -> bool {
    c.is_ascii_whitespace()
        || matches!(
            c,
            b',' | b'(' | b')' | b'[' | b']' | b'{' | b'}' | b'"' | b';'
        )
}

impl<'a> Parser<'a> {
    /// A parser at the start of `s`.
    pub fn new(s: &'a [u8]) -> Self {
        Parser {
            s,
            i: 0,
            line: 1,
            line_start: 0,
        }
    }

    fn err(&self, what: impl Into<String>) -> EdnError {
        EdnError {
            line: self.line,
            column: self.i - self.line_start + 1,
            what: what.into(),
        }
    }

    /// The line the next form starts on.
    pub fn line(&self) -> u64 {
        self.line
    }

    fn skip_ws(&mut self) {
        while self.i < self.s.len() {
            match self.s[self.i] {
                b'\n' => {
                    self.i += 1;
                    self.line += 1;
                    self.line_start = self.i;
                }
                c if c.is_ascii_whitespace() || c == b',' => self.i += 1,
                b';' => {
                    while self.i < self.s.len() && self.s[self.i] != b'\n' {
                        self.i += 1;
                    }
                }
                _ => break,
            }
        }
    }

    /// Skips whitespace; true at the end of the text.
    pub fn at_end(&mut self) -> bool {
        self.skip_ws();
        self.i >= self.s.len()
    }

    fn token(&mut self) -> &'a str {
        let start = self.i;
        while self.i < self.s.len() && !is_delim(self.s[self.i]) {
            self.i += 1;
        }
        std::str::from_utf8(&self.s[start..self.i]).unwrap_or("")
    }

    /// Reads the next form.
    pub fn form(&mut self) -> Result<Edn, EdnError> {
        self.form_at(0)
    }

    fn seq(&mut self, close: u8, depth: usize) -> Result<Vec<Edn>, EdnError> {
        let mut out = Vec::new();
        loop {
            self.skip_ws();
            match self.s.get(self.i) {
                None => return Err(self.err(format!("missing `{}`", close as char))),
                Some(&c) if c == close => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b')' | b']' | b'}') => {
                    return Err(self.err(format!(
                        "`{}` where `{}` was expected",
                        self.s[self.i] as char, close as char
                    )))
                }
                Some(b'#') if self.s.get(self.i + 1) == Some(&b'_') => {
                    self.i += 2;
                    self.form_at(depth + 1)?;
                }
                Some(_) => out.push(self.form_at(depth + 1)?),
            }
        }
    }

    fn form_at(&mut self, depth: usize) -> Result<Edn, EdnError> {
        if depth > DEPTH {
            return Err(self.err("nested too deeply"));
        }
        self.skip_ws();
        let Some(&c) = self.s.get(self.i) else {
            return Err(self.err("unexpected end of the file"));
        };
        match c {
            b'(' => {
                self.i += 1;
                Ok(Edn::List(self.seq(b')', depth)?))
            }
            b'[' => {
                self.i += 1;
                Ok(Edn::Vector(self.seq(b']', depth)?))
            }
            b'{' => {
                self.i += 1;
                let at = self.err("");
                let xs = self.seq(b'}', depth)?;
                if xs.len() % 2 != 0 {
                    return Err(EdnError {
                        what: "a map needs an even number of forms".into(),
                        ..at
                    });
                }
                let mut kv = Vec::with_capacity(xs.len() / 2);
                let mut it = xs.into_iter();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    kv.push((k, v));
                }
                Ok(Edn::Map(kv))
            }
            b')' | b']' | b'}' => Err(self.err(format!("unexpected `{}`", c as char))),
            b'"' => self.string(),
            b'\\' => {
                self.i += 1;
                let t = self.token();
                let ch = match t {
                    "newline" => '\n',
                    "space" => ' ',
                    "tab" => '\t',
                    "return" => '\r',
                    _ => {
                        let mut cs = t.chars();
                        match (cs.next(), cs.next()) {
                            (Some(ch), None) => ch,
                            _ => return Err(self.err(format!("unknown character `\\{t}`"))),
                        }
                    }
                };
                Ok(Edn::Char(ch))
            }
            b'#' => {
                self.i += 1;
                match self.s.get(self.i) {
                    Some(b'{') => {
                        self.i += 1;
                        Ok(Edn::Set(self.seq(b'}', depth)?))
                    }
                    Some(b'_') => {
                        self.i += 1;
                        self.form_at(depth + 1)?;
                        self.form_at(depth)
                    }
                    Some(c) if c.is_ascii_alphabetic() => {
                        let tag = self.token().to_string();
                        let v = self.form_at(depth + 1)?;
                        Ok(Edn::Tagged(tag, Box::new(v)))
                    }
                    _ => Err(self.err("`#` must start a set, a tag or a discard")),
                }
            }
            b':' => {
                self.i += 1;
                let t = self.token();
                if t.is_empty() {
                    return Err(self.err("empty keyword"));
                }
                Ok(Edn::Keyword(t.to_string()))
            }
            _ => {
                let t = self.token();
                if t.is_empty() {
                    return Err(self.err(format!("unexpected `{}`", c as char)));
                }
                Self::atom(t).ok_or_else(|| self.err(format!("cannot read `{t}`")))
            }
        }
    }

    fn atom(t: &str) -> Option<Edn> {
        match t {
            "nil" => return Some(Edn::Nil),
            "true" => return Some(Edn::Bool(true)),
            "false" => return Some(Edn::Bool(false)),
            _ => {}
        }
        let b = t.as_bytes();
        let numeric = b[0].is_ascii_digit()
            || (matches!(b[0], b'-' | b'+') && b.len() > 1 && b[1].is_ascii_digit());
        if !numeric {
            return Some(Edn::Symbol(t.to_string()));
        }
        let int = t.strip_suffix('N').unwrap_or(t);
        if let Ok(i) = int.parse::<i64>() {
            return Some(Edn::Int(i));
        }
        let fl = t.strip_suffix('M').unwrap_or(t);
        fl.parse::<f64>().ok().map(Edn::Float)
    }

    fn string(&mut self) -> Result<Edn, EdnError> {
        self.i += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(&c) = self.s.get(self.i) else {
                return Err(self.err("string not closed"));
            };
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let Some(&e) = self.s.get(self.i) else {
                        return Err(self.err("string not closed"));
                    };
                    self.i += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'r' => out.push(b'\r'),
                        b'"' => out.push(b'"'),
                        b'\\' => out.push(b'\\'),
                        b'u' => {
                            let hex = self
                                .s
                                .get(self.i..self.i + 4)
                                .and_then(|h| std::str::from_utf8(h).ok())
                                .and_then(|h| u32::from_str_radix(h, 16).ok())
                                .and_then(char::from_u32)
                                .ok_or_else(|| self.err("bad \\u escape"))?;
                            self.i += 4;
                            let mut b = [0u8; 4];
                            out.extend_from_slice(hex.encode_utf8(&mut b).as_bytes());
                        }
                        _ => return Err(self.err(format!("bad escape `\\{}`", e as char))),
                    }
                }
                b'\n' => {
                    out.push(c);
                    self.line += 1;
                    self.line_start = self.i;
                }
                _ => out.push(c),
            }
        }
        String::from_utf8(out)
            .map(Edn::Str)
            .map_err(|_| self.err("string is not UTF-8"))
    }
}

/// Whether a file looks like EDN: named `.edn`, or its first form starts
/// with `{:`, `#`, `[` or `(` (a JSON Lines history starts with `{"`).
pub fn looks_like(path: &Path, head: &[u8]) -> bool {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("edn"))
    {
        return true;
    }
    let mut it = head
        .iter()
        .copied()
        .filter(|c| !c.is_ascii_whitespace() && *c != b',');
    match it.next() {
        Some(b'#' | b'[' | b'(' | b';') => true,
        Some(b'{') => it.next() == Some(b':'),
        _ => false,
    }
}

fn bad(what: impl Into<String>) -> Problem {
    Problem::Edn {
        column: 0,
        what: what.into(),
    }
}

fn kw(e: &Edn) -> Option<&str> {
    match e {
        Edn::Keyword(k) => Some(k),
        _ => None,
    }
}

fn int(e: &Edn) -> Option<i64> {
    match e {
        Edn::Int(i) => Some(*i),
        _ => None,
    }
}

fn items(e: &Edn) -> Option<&[Edn]> {
    match e {
        Edn::Vector(xs) | Edn::List(xs) => Some(xs),
        _ => None,
    }
}

fn unique(key: i64, value: i64) -> Result<i64, Problem> {
    if !(0..VALUE_SPAN).contains(&value) || !(0..9_000_000_000).contains(&key) {
        return Err(bad(format!(
            "key {key} value {value}: Gauntlet needs 0 <= value < {VALUE_SPAN} and 0 <= key < 9e9 to make values unique in the run"
        )));
    }
    Ok(key * VALUE_SPAN + value)
}

fn msg(key: i64, offset: Option<i64>, value: i64) -> Result<Msg<'static>, Problem> {
    Ok(Msg {
        key: Some(Cow::Owned(key.to_string())),
        value: unique(key, value)?,
        topic: None,
        partition: Some(key),
        offset,
        id: None,
        redelivered: false,
        input: None,
    })
}

/// `[:send k v]`, `[:send k [offset v]]`, `[:poll]`, `[:poll {k [[o v] ...]}]`.
fn micro(e: &Edn) -> Result<MicroOp<'static>, Problem> {
    let xs = items(e).ok_or_else(|| bad("a micro-op must be a vector"))?;
    match xs.first().and_then(kw) {
        Some("send") => {
            let k = xs
                .get(1)
                .and_then(int)
                .ok_or_else(|| bad("[:send k v] needs an integer key"))?;
            match xs.get(2) {
                Some(Edn::Int(v)) => Ok(MicroOp::Send(msg(k, None, *v)?)),
                Some(pair @ Edn::Vector(_)) => {
                    let p = items(pair).unwrap_or(&[]);
                    let off = match p.first() {
                        Some(Edn::Int(o)) => Some(*o),
                        Some(Edn::Nil) | None => None,
                        _ => {
                            return Err(bad(
                                "[:send k [offset v]]: offset must be an integer or nil",
                            ))
                        }
                    };
                    let v = p
                        .get(1)
                        .and_then(int)
                        .ok_or_else(|| bad("[:send k [offset v]] needs an integer value"))?;
                    Ok(MicroOp::Send(msg(k, off, v)?))
                }
                _ => Err(bad("[:send k v] needs a value")),
            }
        }
        Some("poll") => {
            let mut ms = Vec::new();
            match xs.get(1) {
                None | Some(Edn::Nil) => {}
                Some(Edn::Map(kv)) => {
                    for (k, pairs) in kv {
                        let k = int(k).ok_or_else(|| bad("a poll's keys must be integers"))?;
                        for pair in items(pairs)
                            .ok_or_else(|| bad("a poll's key maps to a vector of [offset value]"))?
                        {
                            let p = items(pair)
                                .ok_or_else(|| bad("a poll's entries are [offset value]"))?;
                            let off = p.first().and_then(int);
                            let v = p.get(1).and_then(int).ok_or_else(|| {
                                bad("a poll's entries are [offset value] with an integer value")
                            })?;
                            ms.push(msg(k, off, v)?);
                        }
                    }
                }
                Some(_) => {
                    return Err(bad(
                        "[:poll m]: m must be a map of key to [[offset value] ...]",
                    ))
                }
            }
            Ok(MicroOp::Poll(ms))
        }
        _ => Err(bad("a micro-op is [:send ...] or [:poll ...]")),
    }
}

/// What a `:send`, `:poll` or `:txn` op is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Send,
    Poll,
    Txn,
}

/// One Jepsen op as a Gauntlet op; `shapes` holds what each process's pending
/// invoke was read as.
fn op(
    e: &Edn,
    seq: u64,
    txn_mode: bool,
    shapes: &mut FxHashMap<u64, Shape>,
) -> Result<Op<'static>, Problem> {
    if !e.is_map() {
        return Err(bad("an op must be a map"));
    }
    let index = match e.get("index") {
        Some(Edn::Int(i)) if *i >= 0 => *i as u64,
        None => seq,
        _ => return Err(bad(":index must be a non-negative integer")),
    };
    let time = match e.get("time") {
        Some(Edn::Int(t)) if *t >= 0 => *t as u64,
        None => 0,
        _ => return Err(bad(":time must be a non-negative integer")),
    };
    let kind = match e.get("type").and_then(kw) {
        Some("invoke") => OpType::Invoke,
        Some("ok") => OpType::Ok,
        Some("fail") => OpType::Fail,
        Some("info") => OpType::Info,
        _ => return Err(bad(":type must be :invoke, :ok, :fail or :info")),
    };
    let process = match e.get("process") {
        Some(Edn::Int(p)) if *p >= 0 => Process::Client(*p as u64),
        Some(Edn::Keyword(k)) if k == "nemesis" => Process::Nemesis,
        Some(other) => Process::Other(Cow::Owned(other.to_text())),
        None => return Err(Problem::MissingField("process")),
    };
    let fname = match e.get("f") {
        Some(Edn::Keyword(k)) | Some(Edn::Symbol(k)) => k.clone(),
        Some(other) => other.to_text(),
        None => return Err(Problem::MissingField("f")),
    };
    let error = e.get("error").map(|x| Cow::Owned(x.to_text()));
    let client = matches!(process, Process::Client(_));
    let mops = |v: Option<&Edn>| -> Result<Vec<MicroOp<'static>>, Problem> {
        match v {
            None | Some(Edn::Nil) => Ok(Vec::new()),
            Some(v) => items(v)
                .ok_or_else(|| bad(":value must be a vector of micro-ops"))?
                .iter()
                .map(micro)
                .collect(),
        }
    };
    let (f, value) = match (client, fname.as_str()) {
        (true, "send" | "poll" | "txn") => {
            let ms = mops(e.get("value"))?;
            let sends = ms.iter().filter(|m| matches!(m, MicroOp::Send(_))).count();
            let polls = ms.len() - sends;
            let pnum = match process {
                Process::Client(p) => p,
                _ => u64::MAX,
            };
            // The micro-ops say what the op is, not its `:f` (a `:poll` op may
            // carry a `:send`); a completion without any is what its invoke was.
            let shape = if txn_mode || fname == "txn" || sends > 1 || (sends == 1 && polls > 0) {
                Shape::Txn
            } else if sends == 1 {
                Shape::Send
            } else if polls > 0 {
                Shape::Poll
            } else if let Some(&s) = shapes.get(&pnum).filter(|_| kind != OpType::Invoke) {
                s
            } else if fname == "send" {
                Shape::Send
            } else {
                Shape::Poll
            };
            if kind == OpType::Invoke {
                shapes.insert(pnum, shape);
            } else {
                shapes.remove(&pnum);
            }
            match shape {
                Shape::Txn => (F::Txn, Value::Txn(ms)),
                Shape::Send => match ms.into_iter().next() {
                    Some(MicroOp::Send(m)) => (F::Send, Value::Send(m)),
                    _ if kind == OpType::Invoke => {
                        return Err(bad("a :send invoke needs [[:send k v]]"))
                    }
                    _ => (F::Send, Value::None),
                },
                Shape::Poll => {
                    let mut all = Vec::new();
                    for m in ms {
                        if let MicroOp::Poll(xs) = m {
                            all.extend(xs);
                        }
                    }
                    if kind == OpType::Invoke {
                        (F::Poll, Value::None)
                    } else {
                        (F::Poll, Value::Messages(all))
                    }
                }
            }
        }
        (true, f @ ("assign" | "subscribe")) => {
            let keys = match e.get("value") {
                Some(v) if !matches!(v, Edn::Nil) => items(v)
                    .ok_or_else(|| bad(format!(":{f} takes a vector of keys")))?
                    .iter()
                    .map(|k| int(k).ok_or_else(|| bad(format!(":{f}: keys must be integers"))))
                    .collect::<Result<Vec<i64>, Problem>>()?,
                _ => Vec::new(),
            };
            let f = if f == "assign" {
                F::Assign
            } else {
                F::Subscribe
            };
            (f, Value::Partitions(keys))
        }
        _ => (F::Other(Cow::Owned(fname.clone())), Value::None),
    };
    Ok(Op {
        index,
        time,
        process,
        kind,
        f,
        group: None,
        producer: None,
        value,
        error,
        drain: None,
    })
}

/// Reads a Jepsen Kafka `history.edn` held in memory; `name` stands for the file in errors.
pub fn read_bytes(name: &Path, data: &[u8]) -> Result<History, HistoryError> {
    let line_err = |line: u64, problem: Problem| HistoryError::Line {
        path: name.to_path_buf(),
        line,
        problem,
    };
    let txn_mode = memchr::memmem::find(data, b":f :txn").is_some();
    let mut p = Parser::new(data);
    let mut b = Builder::new();
    let mut seq = 0u64;
    let mut shapes = FxHashMap::default();
    let mut feed = |e: &Edn, line: u64, b: &mut Builder| -> Result<(), HistoryError> {
        let o = op(e, seq, txn_mode, &mut shapes).map_err(|pr| line_err(line, pr))?;
        seq += 1;
        b.push(&o, line).map_err(|pr| line_err(line, pr))
    };
    while !p.at_end() {
        let line = p.line();
        let form = p.form().map_err(|e| {
            line_err(
                e.line,
                Problem::Edn {
                    column: e.column,
                    what: e.what,
                },
            )
        })?;
        match &form {
            Edn::Vector(xs) | Edn::List(xs) if xs.iter().all(Edn::is_map) => {
                for x in xs {
                    feed(x, line, &mut b)?;
                }
            }
            _ => feed(&form, line, &mut b)?,
        }
    }
    Ok(b.finish())
}

/// Reads a Jepsen Kafka `history.edn` file.
pub fn read_path(path: &Path) -> Result<History, HistoryError> {
    let data = std::fs::read(path).map_err(|source| HistoryError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    read_bytes(path, &data)
}
