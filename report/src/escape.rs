//! Escaping for HTML and XML text and attributes, and cutting long text.
//!
//! Everything that comes from a history (keys, groups, error strings, nemesis
//! values, example JSON) goes through [`html`] before it reaches a page, so a
//! payload such as `<script>alert(1)</script>` is shown as text and stays inert.
use std::borrow::Cow;

/// Escapes text for HTML element content and double- or single-quoted attributes.
pub fn html(s: &str) -> Cow<'_, str> {
    if !s.bytes().any(|b| {
        matches!(b, b'<' | b'>' | b'&' | b'"' | b'\'') || b < 0x20 && b != b'\n' && b != b'\t'
    }) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if (c as u32) < 0x20 => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Escapes text for XML content and attributes (XML 1.0: control characters other
/// than tab, newline and carriage return are not allowed at all, so they become U+FFFD).
pub fn xml(s: &str) -> Cow<'_, str> {
    // The same set as HTML, with `&apos;`-free quoting.
    html(s)
}

/// Cuts `s` to at most `max` characters, saying how much was left out.
pub fn cut(s: &str, max: usize) -> Cow<'_, str> {
    match s.char_indices().nth(max) {
        None => Cow::Borrowed(s),
        Some((at, _)) => {
            let rest = s[at..].chars().count();
            Cow::Owned(format!("{} ... ({rest} more characters)", &s[..at]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_controls() {
        assert_eq!(
            html("<script>alert(1)</script>"),
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        );
        assert_eq!(html("a\"b'c&d"), "a&quot;b&#39;c&amp;d");
        assert_eq!(html("x\u{1}y"), "x\u{FFFD}y");
        assert!(matches!(html("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn cuts_on_characters() {
        assert_eq!(cut("abc", 5), "abc");
        assert_eq!(cut("äöüß", 2), "äö ... (2 more characters)");
    }
}
