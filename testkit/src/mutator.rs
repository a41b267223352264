//! The byte mutator of the fuzz tests and `gauntlet fuzz`: it turns a valid
//! history into a hostile one, deterministically in its [`Rng`].
use gauntlet_history::rng::Rng;

/// Mutates a history's bytes the way fuzzing needs: byte flips, insertions and
/// deletions, truncations, line swaps and duplications, JSON-aware splices (deep
/// nesting, huge numbers, long strings, odd values in a field). Deterministic in `rng`.
pub fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        mutate_once(rng, &mut out);
    }
    out
}

const TOKENS: [&[u8]; 24] = [
    b"null",
    b"true",
    b"false",
    b"-1",
    b"0",
    b"1e400",
    b"-0",
    b"9223372036854775807",
    b"9223372036854775808",
    b"-9223372036854775809",
    b"18446744073709551616",
    b"1.5",
    b"\"\"",
    b"\"\\u0000\"",
    b"\"\\ud800\"",
    b"\"\\uDBFF\\uDFFF\"",
    b"[]",
    b"{}",
    b"\"nemesis\"",
    b"\"harness\"",
    b"\"drained\"",
    b"\"invoke\"",
    b"\"ok\"",
    b"\"send\"",
];

const FIELDS: [&[u8]; 12] = [
    b"\"index\":",
    b"\"time\":",
    b"\"process\":",
    b"\"type\":",
    b"\"f\":",
    b"\"value\":",
    b"\"group\":",
    b"\"partition\":",
    b"\"offset\":",
    b"\"key\":",
    b"\"id\":",
    b"\"redelivered\":",
];

fn line_bounds(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        if c == b'\n' {
            out.push((start, i + 1));
            start = i + 1;
        }
    }
    if start < b.len() {
        out.push((start, b.len()));
    }
    out
}

fn mutate_once(rng: &mut Rng, b: &mut Vec<u8>) {
    let len = b.len() as u64;
    let at = |rng: &mut Rng| rng.below(len + 1) as usize;
    match rng.below(16) {
        0 | 1 => {
            if len > 0 {
                let i = rng.below(len) as usize;
                b[i] ^= 1 << rng.below(8);
            }
        }
        2 => {
            if len > 0 {
                let i = rng.below(len) as usize;
                b[i] = *rng.pick(b"{}[]\",:0123456789-.eE\\ntfu\n \x00\xff");
            }
        }
        3 => {
            let i = at(rng);
            b.truncate(i);
        }
        4 => {
            if len > 0 {
                let i = rng.below(len) as usize;
                let n = (rng.range(1, 16) as usize).min(b.len() - i);
                b.drain(i..i + n);
            }
        }
        5 | 6 => {
            // Replace the token at a random place by a nasty one.
            let i = at(rng);
            let tok = rng.pick(&TOKENS);
            let end = b[i..]
                .iter()
                .position(|c| matches!(c, b',' | b'}' | b']' | b'\n'))
                .map_or(b.len(), |p| i + p);
            b.splice(i..end, tok.iter().copied());
        }
        7 => {
            // Put a nasty value right after a field name.
            let f = rng.pick(&FIELDS);
            if let Some(pos) = find(b, f, rng) {
                let i = pos + f.len();
                let end = b[i..]
                    .iter()
                    .position(|c| matches!(c, b',' | b'}' | b'\n'))
                    .map_or(b.len(), |p| i + p);
                let tok = rng.pick(&TOKENS);
                b.splice(i..end, tok.iter().copied());
            }
        }
        8 => {
            // Deep nesting.
            let depth = rng.range(1, 200) as usize;
            let i = at(rng);
            let mut s = vec![b'['; depth];
            if rng.chance(0.7) {
                s.extend(std::iter::repeat_n(b']', depth));
            }
            b.splice(i..i, s);
        }
        9 => {
            // A huge number.
            let n = rng.range(19, 400) as usize;
            let i = at(rng);
            let s: Vec<u8> = (0..n).map(|k| b'1' + (k % 9) as u8).collect();
            b.splice(i..i, s);
        }
        10 => {
            // A long string (sometimes with escapes).
            let n = rng.range(100, 100_000) as usize;
            let i = at(rng);
            let mut s = vec![b'"'];
            let esc = rng.chance(0.3);
            for k in 0..n {
                if esc && k % 7 == 0 {
                    s.extend_from_slice(b"\\u00e9");
                } else {
                    s.push(b'a' + (k % 26) as u8);
                }
            }
            s.push(b'"');
            b.splice(i..i, s);
        }
        11 | 12 => {
            // Swap two lines.
            let lines = line_bounds(b);
            if lines.len() >= 2 {
                let x = rng.below(lines.len() as u64) as usize;
                let y = rng.below(lines.len() as u64) as usize;
                let (x, y) = (x.min(y), x.max(y));
                if x != y {
                    let (a, b2) = (lines[x], lines[y]);
                    let mut n = Vec::with_capacity(b.len());
                    n.extend_from_slice(&b[..a.0]);
                    n.extend_from_slice(&b[b2.0..b2.1]);
                    n.extend_from_slice(&b[a.1..b2.0]);
                    n.extend_from_slice(&b[a.0..a.1]);
                    n.extend_from_slice(&b[b2.1..]);
                    *b = n;
                }
            }
        }
        13 => {
            // Duplicate or delete a line.
            let lines = line_bounds(b);
            if !lines.is_empty() {
                let (s, e) = lines[rng.below(lines.len() as u64) as usize];
                if rng.chance(0.5) {
                    let l = b[s..e].to_vec();
                    b.splice(e..e, l);
                } else {
                    b.drain(s..e);
                }
            }
        }
        14 => {
            // Copy a random chunk somewhere else.
            if len > 0 {
                let s = rng.below(len) as usize;
                let n = (rng.range(1, 64) as usize).min(b.len() - s);
                let chunk = b[s..s + n].to_vec();
                let i = at(rng);
                b.splice(i..i, chunk);
            }
        }
        _ => {
            // Change a number a little (a value sent twice, an index going back, ...).
            let f: &[u8] = FIELDS[rng.below(FIELDS.len() as u64) as usize];
            if let Some(pos) = find(b, f, rng) {
                let mut i = pos;
                while i < b.len() && b[i] != b':' {
                    i += 1;
                }
                i += 1;
                if i < b.len() && b[i].is_ascii_digit() {
                    let d = b[i] - b'0';
                    b[i] = b'0' + (d + 1 + rng.below(8) as u8) % 10;
                }
            }
        }
    }
}

/// A random occurrence of `pat` in `b`.
fn find(b: &[u8], pat: &[u8], rng: &mut Rng) -> Option<usize> {
    if b.len() < pat.len() {
        return None;
    }
    let start = rng.below(b.len() as u64) as usize;
    let hit = |from: usize, to: usize| {
        (from..to.min(b.len() - pat.len() + 1)).find(|&i| &b[i..i + pat.len()] == pat)
    };
    hit(start, b.len()).or_else(|| hit(0, start))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue_gen::{generate_vec, GenConfig};

    #[test]
    fn mutate_is_deterministic() {
        let (bytes, _) = generate_vec(&GenConfig::default());
        let a = mutate(&mut Rng::new(7), &bytes);
        let b = mutate(&mut Rng::new(7), &bytes);
        assert_eq!(a, b);
    }
}
