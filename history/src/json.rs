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
    /// The byte offset in the line (0-based).
    pub offset: usize,
    /// What was expected, or what is wrong.
    pub what: String,
}

/// The result of a scanning step.
pub type JResult<T> = Result<T, JsonError>;

/// The type of the next value, judged by its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `{`.
    Object,
    /// `[`.
    Array,
    /// `"`.
    String,
    /// `-` or a digit.
    Number,
    /// `t` or `f`.
    Bool,
    /// `n`.
    Null,
}

/// A cursor over one line: reads JSON values in place, left to right.
pub struct Scanner<'a> {
    b: &'a [u8],
    /// The byte offset of the next unread byte.
    pub i: usize,
}

impl<'a> Scanner<'a> {
    /// A scanner at the start of `b`.
    pub fn new(b: &'a [u8]) -> Self {
        Scanner { b, i: 0 }
    }

    /// An error at the current offset.
    pub fn err<T>(&self, what: impl Into<String>) -> JResult<T> {
        Err(JsonError {
            offset: self.i,
            what: what.into(),
        })
    }

    /// Skips white space (space, tab, newline, carriage return).
    #[inline(always)]
    pub fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.i) {
            // Anything above the space is not white space: one compare in the common case.
            if c > b' ' || !(c == b' ' || c == b'\t' || c == b'\n' || c == b'\r') {
                break;
            }
            self.i += 1;
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

    /// The [`Kind`] of the next value (after white space); an error at any other byte or at the end of the line.
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

    /// The next key of an object as its place in `keys` ([`UNKNOWN_KEY`] for any
    /// other key), having consumed the `:`; `None` at `}`.
    ///
    /// The common case is one or two masked 16-byte compares: the search starts at
    /// `*at`, the place after the key found last, so a writer that always puts the
    /// keys in one order is matched on the first try. A key with white space around
    /// it, escapes or more than 13 bytes takes the general path ([`Scanner::next_key`]).
    #[inline]
    pub fn next_key_in(
        &mut self,
        first: &mut bool,
        keys: &[Hint],
        at: &mut usize,
    ) -> JResult<Option<usize>> {
        let b = self.b;
        if *first || b.get(self.i) == Some(&b',') {
            let start = if *first { self.i } else { self.i + 1 };
            // Near the end of the line, zeros stand in for the missing bytes (a key
            // pattern ends with `":`, which zeros never match).
            let mut w = [0u8; 16];
            if let Some(chunk) = b.get(start..start + 16) {
                w.copy_from_slice(chunk);
            } else if let Some(rest) = b.get(start..) {
                w[..rest.len()].copy_from_slice(rest);
            }
            {
                let lo = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
                let hi = u64::from_le_bytes([w[8], w[9], w[10], w[11], w[12], w[13], w[14], w[15]]);
                let n = keys.len();
                let mut j = if *at < n { *at } else { 0 };
                for _ in 0..n {
                    let h = &keys[j];
                    if lo & h.mask_lo == h.lo && hi & h.mask_hi == h.hi {
                        self.i = start + h.len;
                        *first = false;
                        *at = j + 1;
                        return Ok(Some(j));
                    }
                    j += 1;
                    if j == n {
                        j = 0;
                    }
                }
            }
        }
        match self.next_key(first)? {
            None => Ok(None),
            Some(k) => Ok(Some(
                keys.iter()
                    .position(|h| h.name == &*k)
                    .inspect(|&j| *at = j + 1)
                    .unwrap_or(UNKNOWN_KEY),
            )),
        }
    }

    /// Starts an array; call [`Scanner::next_elem`] until it returns `false`.
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
    #[inline(always)]
    pub fn i64(&mut self) -> Result<i64, IntError> {
        match self.i64_fast() {
            Some(v) => Ok(v),
            None => self.i64_slow(),
        }
    }

    /// Up to 18 plain digits (which cannot overflow), eight at a time; `None` for
    /// anything else (then [`Scanner::i64_slow`] decides).
    #[inline(always)]
    fn i64_fast(&mut self) -> Option<i64> {
        self.ws();
        let b = self.b;
        let start = self.i;
        let neg = b.get(start) == Some(&b'-');
        let digits_start = start + usize::from(neg);
        let mut i = digits_start;
        let mut v: u64 = 0;
        let mut whole = false;
        for _ in 0..2 {
            let Some(chunk) = b.get(i..i + 8) else { break };
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
            // Near the end of the line, or more than 16 digits: the rest one byte at a time.
            while i - digits_start < 18 {
                let Some(d) = b.get(i).map(|c| c.wrapping_sub(b'0')) else {
                    break;
                };
                if d > 9 {
                    break;
                }
                v = v * 10 + u64::from(d);
                i += 1;
            }
        }
        let n = i - digits_start;
        if n == 0
            || matches!(b.get(i), Some(b'0'..=b'9' | b'.' | b'e' | b'E'))
            || (b[digits_start] == b'0' && n > 1)
        {
            return None;
        }
        self.i = i;
        // At most 18 digits: fits in i64.
        let v = v as i64;
        Some(if neg { -v } else { v })
    }

    #[cold]
    #[inline(never)]
    fn i64_slow(&mut self) -> Result<i64, IntError> {
        let text = self.number_text().map_err(IntError::Json)?;
        if text.contains(['.', 'e', 'E']) {
            return Err(IntError::NotInteger(text.to_string()));
        }
        text.parse::<i64>()
            .map_err(|_| IntError::OutOfRange(text.to_string()))
    }

    /// Reads `true` or `false`.
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

    /// Reads `null`.
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
pub(crate) fn plain_run(b: &[u8], mut i: usize) -> usize {
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

pub(crate) const POW10: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// The number of leading ASCII digits in the eight bytes `w` (first byte lowest)
/// and their value.
#[inline]
pub(crate) fn swar_digits(w: u64) -> (usize, u64) {
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    let sub = w.wrapping_sub(ZEROS);
    // A byte is a digit when it is 0..=9 after the subtraction: no high nibble, and
    // none after adding 6 either. Borrows and carries only run upwards, so the
    // lowest flagged byte is exact.
    let bad = (sub | sub.wrapping_add(0x0606_0606_0606_0606)) & 0xF0F0_F0F0_F0F0_F0F0;
    let n = (bad.trailing_zeros() / 8) as usize;
    if n == 0 {
        return (0, 0);
    }
    // Keep the n digits, moved up so that the missing leading digits read as zeros.
    let mut d = sub << (8 * (8 - n));
    d = (d & 0x0F0F_0F0F_0F0F_0F0F).wrapping_mul(2561) >> 8;
    d = (d & 0x00FF_00FF_00FF_00FF).wrapping_mul(6_553_601) >> 16;
    d = (d & 0x0000_FFFF_0000_FFFF).wrapping_mul(42_949_672_960_001) >> 32;
    (n, d)
}

/// A key the reader expects next, as the bytes `"name":` packed for a masked compare.
#[derive(Debug, Clone, Copy)]
pub struct Hint {
    /// The key's name, without quotes.
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

/// What [`Scanner::next_key_in`] returns for a key that is not in its list.
pub const UNKNOWN_KEY: usize = usize::MAX;

/// Why an integer field could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IntError {
    /// The text is not valid JSON.
    Json(JsonError),
    /// A number with a fraction or an exponent (the text of it).
    NotInteger(String),
    /// An integer that does not fit in an `i64` (the text of it).
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
    fn integers_of_every_length_and_ending() {
        for n in 1..=19u32 {
            let v: i64 = (1..=n).fold(0i64, |acc, d| acc * 10 + i64::from(d % 10));
            for tail in ["", "}", ",\"x\":1}", "]", " "] {
                for sign in [1, -1] {
                    let text = format!("{}{tail}", v * sign);
                    let mut s = Scanner::new(text.as_bytes());
                    assert_eq!(s.i64().unwrap(), v * sign, "{text}");
                    assert_eq!(&text[s.i..], tail, "{text}");
                }
            }
        }
        for bad in ["00", "012345678", "-", "-x", "1.0", "123456789e3", "x1"] {
            assert!(Scanner::new(bad.as_bytes()).i64().is_err(), "{bad}");
        }
    }

    #[test]
    fn keys_are_found_in_any_order() {
        const KEYS: [Hint; 3] = [Hint::new("a"), Hint::new("bb"), Hint::new("value")];
        let text = br#"{"value":1,"zz":2,"a":3,"bb":4,"v\u0061lue":5 , "a" :6}"#;
        let mut s = Scanner::new(text);
        s.begin_object().unwrap();
        let (mut first, mut at, mut got) = (true, 0, Vec::new());
        while let Some(k) = s.next_key_in(&mut first, &KEYS, &mut at).unwrap() {
            got.push((k, s.i64().unwrap()));
        }
        s.end().unwrap();
        assert_eq!(
            got,
            vec![(2, 1), (UNKNOWN_KEY, 2), (0, 3), (1, 4), (2, 5), (0, 6)]
        );
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
