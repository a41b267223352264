//! The glob matcher for `corrupt --files`: paths relative to the backing root,
//! `/`-separated; `*` any characters within a component, `?` one character,
//! `**` (a whole component) any number of components.

/// Whether `path` matches `pattern`.
pub fn matches(pattern: &str, path: &str) -> bool {
    let pat: Vec<&str> = pattern.split('/').filter(|c| !c.is_empty()).collect();
    let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    match_components(&pat, &comps)
}

/// Whether `path` matches any of `patterns`.
pub fn matches_any(patterns: &[String], path: &str) -> bool {
    patterns.iter().any(|p| matches(p, path))
}

fn match_components(pat: &[&str], comps: &[&str]) -> bool {
    match pat.first() {
        None => comps.is_empty(),
        Some(&"**") => (0..=comps.len()).any(|skip| match_components(&pat[1..], &comps[skip..])),
        Some(p) => match comps.first() {
            Some(c) => {
                match_component(p.as_bytes(), c.as_bytes())
                    && match_components(&pat[1..], &comps[1..])
            }
            None => false,
        },
    }
}

fn match_component(p: &[u8], s: &[u8]) -> bool {
    // Iterative wildcard match with backtracking to the last `*`.
    let (mut pi, mut si) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, si));
            pi += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == b'*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn star_stays_in_a_component() {
        assert!(matches("*.blk", "1.blk"));
        assert!(!matches("*.blk", "d/1.blk"));
        assert!(matches("d/*.blk", "d/1.blk"));
        assert!(matches("d/*", "d/x"));
        assert!(!matches("d/*", "d"));
        assert!(matches("a*b*c", "aXXbYc"));
        assert!(!matches("a*b*c", "aXXbYcd"));
    }

    #[test]
    fn double_star_spans_components() {
        assert!(matches("**/*.blk", "1.blk"));
        assert!(matches("**/*.blk", "jetstream/$G/streams/s/msgs/1.blk"));
        assert!(matches("jetstream/**", "jetstream/a/b"));
        assert!(matches("**", "anything/at/all"));
        assert!(matches("a/**/z", "a/z"));
        assert!(matches("a/**/z", "a/b/c/z"));
        assert!(!matches("a/**/z", "b/z"));
    }

    #[test]
    fn question_mark_is_one_character() {
        assert!(matches("wal?", "wal1"));
        assert!(!matches("wal?", "wal"));
        assert!(!matches("wal?", "wal12"));
        assert!(matches(
            "appendonly.aof.?.incr.aof",
            "appendonly.aof.1.incr.aof"
        ));
    }
}
