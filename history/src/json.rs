//! A small, strict, zero-copy JSON scanner for one history line.
//!
//! Why not serde: a history is read once, line by line, into a compact model,
//! and the reader is the hot path of `gauntlet check` (millions of lines). A
//! scanner that knows the shape it wants reads the fields it needs straight
//! into typed values and skips the rest, validating everything it passes over.
//! It never recurses deeper than [`MAX_DEPTH`] and never allocates except to
//! unescape a string that has escapes.
use std::borrow::Cow;

/// Nesting deeper than this is rejected (keeps a hostile line from overflowing the stack).
pub const MAX_DEPTH: usize = 64;

/// A scanning error: byte offset in the line and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    pub offset: usize,
    pub what: String,
}

pub type JResult<T> = Result<T, JsonError>;

/// The type of the next value, judged by its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Object,
    Array,
    String,
    Number,
    Bool,
    Null,
}

pub struct Scanner<'a> {
    b: &'a [u8],
    pub i: usize,
}

impl<'a> Scanner<'a> {
    pub fn new(b: &'a [u8]) -> Self {
        Scanner { b, i: 0 }
    }

    pub fn err<T>(&self, what: impl Into<String>) -> JResult<T> {
        Err(JsonError {
            offset: self.i,
            what: what.into(),
        })
    }

    #[inline]
    pub fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.i) {
            if c == b' ' || c == b'\t' || c == b'\n' || c == b'\r' {
                self.i += 1;
            } else {
                break;
            }
        }
    }

    #[inline]
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    /// After the top-level value: only white space may follow.
    pub fn end(&mut self) -> JResult<()> {
        match self.peek() {
            None => Ok(()),
            Some(_) => self.err("trailing characters after the JSON value"),
        }
    }

    pub fn kind(&mut self) -> JResult<Kind> {
        match self.peek() {
            Some(b'{') => Ok(Kind::Object),
            Some(b'[') => Ok(Kind::Array),
            Some(b'"') => Ok(Kind::String),
            Some(b'-' | b'0'..=b'9') => Ok(Kind::Number),
            Some(b't' | b'f') => Ok(Kind::Bool),
            Some(b'n') => Ok(Kind::Null),
            Some(c) => self.err(format!("unexpected character {:?}", c as char)),
            None => self.err("unexpected end of line"),
        }
    }

    /// Whether a number starts here (after white space).
    #[inline]
    pub fn at_number(&mut self) -> bool {
        matches!(self.peek(), Some(b'-' | b'0'..=b'9'))
    }

    #[inline]
    fn eat(&mut self, c: u8) -> JResult<()> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            self.err(format!("expected '{}'", c as char))
        }
    }

    /// Starts an object; call [`Scanner::next_key`] until it returns `None`.
    pub fn begin_object(&mut self) -> JResult<()> {
        self.eat(b'{')
    }

    /// The next key of an object (having consumed the `:`), or `None` at `}`.
    /// `first` tells whether this is the first key (no comma before it).
    pub fn next_key(&mut self, first: &mut bool) -> JResult<Option<Cow<'a, str>>> {
        match self.peek() {
            Some(b'}') => {
                self.i += 1;
                return Ok(None);
            }
            Some(b',') if !*first => {
                self.i += 1;
            }
            Some(_) if *first => {}
            _ => return self.err("expected ',' or '}'"),
        }
        *first = false;
        if self.peek() != Some(b'"') {
            return self.err("expected a string key");
        }
        let k = self.string()?;
        self.eat(b':')?;
        Ok(Some(k))
    }

    /// As [`Scanner::next_key`], but first tries the keys the writer puts next
    /// (`hints`): the common case is two masked 8-byte compares.
    #[inline]
    pub fn next_key_hinted(
        &mut self,
        first: &mut bool,
        hints: &[Hint],
    ) -> JResult<Option<Cow<'a, str>>> {
        let b = self.b;
        if *first || b.get(self.i) == Some(&b',') {
            let at = if *first { self.i } else { self.i + 1 };
            if let Some(chunk) = b.get(at..at + 16) {
                let mut w = [0u8; 16];
                w.copy_from_slice(chunk);
                let lo = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
                let hi = u64::from_le_bytes([w[8], w[9], w[10], w[11], w[12], w[13], w[14], w[15]]);
                for h in hints {
                    if lo & h.mask_lo == h.lo && hi & h.mask_hi == h.hi {
                        self.i = at + h.len;
                        *first = false;
                        return Ok(Some(Cow::Borrowed(h.name)));
                    }
                }
            } else {
                for h in hints {
                    let n = h.name.len();
                    if b.len() >= at + 3 + n
                        && b[at] == b'"'
                        && short_eq(&b[at + 1..at + 1 + n], h.name.as_bytes())
                        && b[at + 1 + n] == b'"'
                        && b[at + 2 + n] == b':'
                    {
                        self.i = at + h.len;
                        *first = false;
                        return Ok(Some(Cow::Borrowed(h.name)));
                    }
                }
            }
        }
        self.next_key(first)
    }

    pub fn begin_array(&mut self) -> JResult<()> {
        self.eat(b'[')
    }

    /// Whether the array has another element (consuming the `,` or `]`).
    pub fn next_elem(&mut self, first: &mut bool) -> JResult<bool> {
        match self.peek() {
            Some(b']') => {
                self.i += 1;
                Ok(false)
            }
            Some(b',') if !*first => {
                self.i += 1;
                Ok(true)
            }
            Some(_) if *first => {
                *first = false;
                Ok(true)
            }
            _ => self.err("expected ',' or ']'"),
        }
    }

    /// A string value, borrowed when it has no escapes.
    #[inline]
    pub fn string(&mut self) -> JResult<Cow<'a, str>> {
        self.eat(b'"')?;
        let start = self.i;
        let b = self.b;
        let end = plain_run(b, start);
        if b.get(end) == Some(&b'"') {
            self.i = end + 1;
            // SAFETY: `plain_run` stops at the first byte >= 0x80, so b[start..end] is ASCII,
            // which is valid UTF-8.
            return Ok(Cow::Borrowed(unsafe {
                std::str::from_utf8_unchecked(&b[start..end])
            }));
        }
        // Escapes, control characters, non-ASCII text or no closing quote.
        self.string_slow().map(Cow::Owned)
    }

    fn string_slow(&mut self) -> JResult<String> {
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(&c) = self.b.get(self.i) else {
                return self.err("unterminated string");
            };
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let Some(&e) = self.b.get(self.i) else {
                        return self.err("unterminated escape");
                    };
                    self.i += 1;
                    match e {
                        b'"' => out.push(b'"'),
                        b'\\' => out.push(b'\\'),
                        b'/' => out.push(b'/'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            let ch = if (0xD800..0xDC00).contains(&hi) {
                                if self.b.get(self.i) != Some(&b'\\')
                                    || self.b.get(self.i + 1) != Some(&b'u')
                                {
                                    return self.err("lone surrogate in \\u escape");
                                }
                                self.i += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return self.err("bad low surrogate in \\u escape");
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else if (0xDC00..0xE000).contains(&hi) {
                                return self.err("lone surrogate in \\u escape");
                            } else {
                                hi
                            };
                            let Some(ch) = char::from_u32(ch) else {
                                return self.err("bad \\u escape");
                            };
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => {
                            self.i -= 1;
                            return self.err("bad escape");
                        }
                    }
                }
                c if c < 0x20 => {
                    self.i -= 1;
                    return self.err("control character in string");
                }
                c => out.push(c),
            }
        }
        String::from_utf8(out).or_else(|_| self.err("string is not valid UTF-8"))
    }

    fn hex4(&mut self) -> JResult<u32> {
        let Some(h) = self.b.get(self.i..self.i + 4) else {
            return self.err("short \\u escape");
        };
        let mut v = 0u32;
        for &c in h {
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => return self.err("bad hex digit in \\u escape"),
            };
            v = v * 16 + u32::from(d);
        }
        self.i += 4;
        Ok(v)
    }

    /// Validates a JSON number and returns its text.
    fn number_text(&mut self) -> JResult<&'a str> {
        self.ws();
        let start = self.i;
        let b = self.b;
        let mut i = self.i;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        match b.get(i) {
            Some(b'0') => {
                i += 1;
                if matches!(b.get(i), Some(b'0'..=b'9')) {
                    self.i = i;
                    return self.err("bad number: leading zero");
                }
            }
            Some(b'1'..=b'9') => {
                while matches!(b.get(i), Some(b'0'..=b'9')) {
                    i += 1;
                }
            }
            _ => {
                self.i = i;
                return self.err("bad number");
            }
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            if !matches!(b.get(i), Some(b'0'..=b'9')) {
                self.i = i;
                return self.err("bad number");
            }
            while matches!(b.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            if !matches!(b.get(i), Some(b'0'..=b'9')) {
                self.i = i;
                return self.err("bad number");
            }
            while matches!(b.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
        }
        self.i = i;
        // Only ASCII bytes were accepted above.
        std::str::from_utf8(&b[start..i]).or_else(|_| self.err("bad number"))
    }

    /// An integer that fits in i64. Fractions and exponents are refused.
    #[inline]
    pub fn i64(&mut self) -> Result<i64, IntError> {
        self.ws();
        // Fast path: plain digits.
        let b = self.b;
        let start = self.i;
        let mut i = start;
        let neg = b.get(i) == Some(&b'-');
        if neg {
            i += 1;
        }
        let digits_start = i;
        let mut v: i64 = 0;
        // At most 18 digits here, which cannot overflow; longer numbers take the slow path.
        let end = (digits_start + 18).min(b.len());
        while i < end {
            let d = b[i].wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            v = v * 10 + i64::from(d);
            i += 1;
        }
        let simple = i > digits_start
            && !matches!(b.get(i), Some(b'0'..=b'9' | b'.' | b'e' | b'E'))
            && !(b[digits_start] == b'0' && i - digits_start > 1);
        if simple {
            self.i = i;
            return Ok(if neg { -v } else { v });
        }
        self.i = start;
        let text = self.number_text().map_err(IntError::Json)?;
        if text.contains(['.', 'e', 'E']) {
            return Err(IntError::NotInteger(text.to_string()));
        }
        text.parse::<i64>()
            .map_err(|_| IntError::OutOfRange(text.to_string()))
    }

    pub fn bool(&mut self) -> JResult<bool> {
        self.ws();
        if self.b[self.i..].starts_with(b"true") {
            self.i += 4;
            Ok(true)
        } else if self.b[self.i..].starts_with(b"false") {
            self.i += 5;
            Ok(false)
        } else {
            self.err("expected true or false")
        }
    }

    pub fn null(&mut self) -> JResult<()> {
        self.ws();
        if self.b[self.i..].starts_with(b"null") {
            self.i += 4;
            Ok(())
        } else {
            self.err("expected null")
        }
    }

    /// Skips one value of any type, validating it; returns its raw text.
    pub fn skip(&mut self) -> JResult<&'a str> {
        self.ws();
        let start = self.i;
        self.skip_at(0)?;
        std::str::from_utf8(&self.b[start..self.i]).or_else(|_| self.err("not valid UTF-8"))
    }

    fn skip_at(&mut self, depth: usize) -> JResult<()> {
        if depth >= MAX_DEPTH {
            return self.err(format!("nested deeper than {MAX_DEPTH} levels"));
        }
        match self.kind()? {
            Kind::Object => {
                self.begin_object()?;
                let mut first = true;
                while self.next_key(&mut first)?.is_some() {
                    self.skip_at(depth + 1)?;
                }
                Ok(())
            }
            Kind::Array => {
                self.begin_array()?;
                let mut first = true;
                while self.next_elem(&mut first)? {
                    self.skip_at(depth + 1)?;
                }
                Ok(())
            }
            Kind::String => self.string().map(|_| ()),
            Kind::Number => self.number_text().map(|_| ()),
            Kind::Bool => self.bool().map(|_| ()),
            Kind::Null => self.null(),
        }
    }
}

/// The end of the run of plain ASCII string bytes starting at `i`: the index of
/// the first byte that is `"`, `\\`, a control character or >= 0x80 (or the length).
/// Eight bytes at a time with the classic "has a zero byte" bit trick.
#[inline]
fn plain_run(b: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(chunk) = b.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let q = w ^ (ONES * u64::from(b'"'));
        let bs = w ^ (ONES * u64::from(b'\\'));
        let special = ((q.wrapping_sub(ONES) & !q)
            | (bs.wrapping_sub(ONES) & !bs)
            | (w.wrapping_sub(ONES * 0x20) & !w)
            | w)
            & HIGH;
        if special != 0 {
            // The lowest flagged byte is exact (borrows only run upwards).
            return i + (special.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&c) = b.get(i) {
        if c == b'"' || c == b'\\' || !(0x20..0x80).contains(&c) {
            break;
        }
        i += 1;
    }
    i
}

/// A key the reader expects next, as the bytes `"name":` packed for a masked compare.
#[derive(Debug, Clone, Copy)]
pub struct Hint {
    pub name: &'static str,
    /// Length of `"name":`.
    len: usize,
    lo: u64,
    hi: u64,
    mask_lo: u64,
    mask_hi: u64,
}

impl Hint {
    /// `name` must be at most 13 bytes of plain ASCII (so that `"name":` fits in 16).
    pub const fn new(name: &'static str) -> Hint {
        let n = name.len();
        assert!(n <= 13, "hint too long");
        let mut pat = [0u8; 16];
        let mut mask = [0u8; 16];
        pat[0] = b'"';
        let mut i = 0;
        while i < n {
            pat[1 + i] = name.as_bytes()[i];
            i += 1;
        }
        pat[1 + n] = b'"';
        pat[2 + n] = b':';
        let len = n + 3;
        let mut j = 0;
        while j < len {
            mask[j] = 0xff;
            j += 1;
        }
        Hint {
            name,
            len,
            lo: u64::from_le_bytes([
                pat[0], pat[1], pat[2], pat[3], pat[4], pat[5], pat[6], pat[7],
            ]),
            hi: u64::from_le_bytes([
                pat[8], pat[9], pat[10], pat[11], pat[12], pat[13], pat[14], pat[15],
            ]),
            mask_lo: u64::from_le_bytes([
                mask[0], mask[1], mask[2], mask[3], mask[4], mask[5], mask[6], mask[7],
            ]),
            mask_hi: u64::from_le_bytes([
                mask[8], mask[9], mask[10], mask[11], mask[12], mask[13], mask[14], mask[15],
            ]),
        }
    }
}

/// Byte equality for short keys, inlined (a call to memcmp costs more than the compare).
#[inline]
fn short_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// Why an integer field could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IntError {
    Json(JsonError),
    NotInteger(String),
    OutOfRange(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_with_and_without_escapes() {
        let mut s = Scanner::new(br#""abc" "a\"b\u00e9\ud83d\ude00\n""#);
        assert_eq!(s.string().unwrap(), "abc");
        assert_eq!(s.string().unwrap(), "a\"b\u{e9}\u{1F600}\n");
        s.end().unwrap();
    }

    #[test]
    fn bad_strings_are_refused() {
        for bad in [
            &br#""abc"#[..],
            br#""\x""#,
            br#""\ud800""#,
            b"\"a\x01\"",
            br#""\u12""#,
        ] {
            assert!(
                Scanner::new(bad).string().is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn integers() {
        for (text, v) in [
            ("0", 0),
            ("-5", -5),
            ("123456789012345678", 123456789012345678i64),
        ] {
            assert_eq!(Scanner::new(text.as_bytes()).i64().unwrap(), v);
        }
        assert_eq!(
            Scanner::new(b"9223372036854775807").i64().unwrap(),
            i64::MAX
        );
        assert!(matches!(
            Scanner::new(b"1.5").i64(),
            Err(IntError::NotInteger(_))
        ));
        assert!(matches!(
            Scanner::new(b"1e3").i64(),
            Err(IntError::NotInteger(_))
        ));
        assert!(matches!(
            Scanner::new(b"99999999999999999999").i64(),
            Err(IntError::OutOfRange(_))
        ));
        assert!(matches!(Scanner::new(b"01").i64(), Err(IntError::Json(_))));
        assert!(matches!(Scanner::new(b"-").i64(), Err(IntError::Json(_))));
    }

    #[test]
    fn skip_validates_and_bounds_depth() {
        let mut s = Scanner::new(br#"{"a":[1,2.5e3,{"b":null}],"c":true} "#);
        assert_eq!(s.skip().unwrap(), r#"{"a":[1,2.5e3,{"b":null}],"c":true}"#);
        s.end().unwrap();
        assert!(Scanner::new(b"[1,]").skip().is_err());
        assert!(Scanner::new(b"{\"a\" 1}").skip().is_err());
        let deep = "[".repeat(1000);
        assert!(Scanner::new(deep.as_bytes()).skip().is_err());
    }
}
