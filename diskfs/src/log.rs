//! The pending-write log of one file: the data written through the mount and
//! not yet durable, in write order (pure; no I/O).

use crate::rng::Rng;

/// One pending write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    pub offset: u64,
    pub data: Vec<u8>,
}

impl Write {
    pub fn end(&self) -> u64 {
        self.offset + self.data.len() as u64
    }
}

/// The pending writes of one file, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PendingLog {
    writes: Vec<Write>,
    bytes: u64,
    end: u64,
}

impl PendingLog {
    /// Appends a write; one that starts exactly where the previous one ended
    /// is merged into it.
    pub fn push(&mut self, offset: u64, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        self.bytes += data.len() as u64;
        match self.writes.last_mut() {
            Some(last) if last.end() == offset => last.data.extend_from_slice(data),
            _ => self.writes.push(Write {
                offset,
                data: data.to_vec(),
            }),
        }
        self.end = self.end.max(offset + data.len() as u64);
    }

    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    /// Bytes pending (a byte written twice counts twice).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Where the last pending byte ends (0 when empty).
    pub fn end(&self) -> u64 {
        self.end
    }

    pub fn writes(&self) -> &[Write] {
        &self.writes
    }

    /// The file's size as read through the mount.
    pub fn size_over(&self, backing_size: u64) -> u64 {
        backing_size.max(self.end)
    }

    /// Lays the pending writes, in order, over `buf`, which holds the file's
    /// bytes from `offset` on.
    pub fn overlay(&self, offset: u64, buf: &mut [u8]) {
        let buf_end = offset + buf.len() as u64;
        for w in &self.writes {
            let start = w.offset.max(offset);
            let end = w.end().min(buf_end);
            if start >= end {
                continue;
            }
            let src = (start - w.offset) as usize..(end - w.offset) as usize;
            let dst = (start - offset) as usize..(end - offset) as usize;
            buf[dst].copy_from_slice(&w.data[src]);
        }
    }

    /// The file was cut to `size`: pending writes beyond it go.
    pub fn truncate(&mut self, size: u64) {
        self.writes.retain(|w| w.offset < size);
        for w in &mut self.writes {
            if w.end() > size {
                w.data.truncate((size - w.offset) as usize);
            }
        }
        self.bytes = self.writes.iter().map(|w| w.data.len() as u64).sum();
        self.end = self.writes.iter().map(Write::end).max().unwrap_or(0);
    }

    /// Empties the log, handing back its writes.
    pub fn take(&mut self) -> Vec<Write> {
        self.bytes = 0;
        self.end = 0;
        std::mem::take(&mut self.writes)
    }
}

/// Where a torn write cuts a file's pending writes: the first `whole` writes
/// are kept whole, then `partial` bytes of the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TornCut {
    pub whole: usize,
    pub partial: u64,
}

/// Draws a torn cut: `whole` uniform in `[0, writes)`, `partial` uniform in
/// `[0, length of write whole+1)`, so at least one byte is always lost.
pub fn torn_cut(writes: &[Write], rng: &mut Rng) -> TornCut {
    if writes.is_empty() {
        return TornCut {
            whole: 0,
            partial: 0,
        };
    }
    let whole = rng.below(writes.len() as u64) as usize;
    let partial = rng.below(writes[whole].data.len() as u64);
    TornCut { whole, partial }
}

/// The pieces a cut keeps, in write order (the last one maybe a prefix).
pub fn kept_by(writes: &[Write], cut: TornCut) -> Vec<Write> {
    let mut kept: Vec<Write> = writes.iter().take(cut.whole).cloned().collect();
    if let Some(w) = writes.get(cut.whole) {
        if cut.partial > 0 {
            kept.push(Write {
                offset: w.offset,
                data: w.data[..(cut.partial as usize).min(w.data.len())].to_vec(),
            });
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_coalesce_and_gaps_do_not() {
        let mut l = PendingLog::default();
        l.push(0, b"abc");
        l.push(3, b"def");
        l.push(10, b"x");
        l.push(2, b"Z");
        assert_eq!(l.writes().len(), 3);
        assert_eq!(l.writes()[0].data, b"abcdef");
        assert_eq!(l.bytes(), 8);
        assert_eq!(l.end(), 11);
        assert_eq!(l.size_over(4), 11);
        assert_eq!(l.size_over(20), 20);
    }

    #[test]
    fn overlay_applies_in_order_over_the_backing_bytes() {
        let mut l = PendingLog::default();
        l.push(2, b"XXXX");
        l.push(4, b"yy"); // merged: starts where the first ended? no: first ends at 6
        l.push(0, b"A");
        let mut buf = *b"0123456789";
        l.overlay(0, &mut buf);
        assert_eq!(&buf, b"A1XXyy6789");
        let mut mid = *b"3456";
        l.overlay(3, &mut mid);
        assert_eq!(&mid, b"Xyy6");
        let mut none = *b"89";
        l.overlay(8, &mut none);
        assert_eq!(&none, b"89");
    }

    #[test]
    fn truncate_trims_and_drops() {
        let mut l = PendingLog::default();
        l.push(0, b"hello");
        l.push(10, b"world");
        l.truncate(3);
        assert_eq!(
            l.writes(),
            &[Write {
                offset: 0,
                data: b"hel".to_vec()
            }]
        );
        assert_eq!(l.bytes(), 3);
        assert_eq!(l.end(), 3);
        l.truncate(0);
        assert!(l.is_empty());
        assert_eq!(l.end(), 0);
    }

    #[test]
    fn torn_cut_keeps_a_strict_prefix_and_is_seeded() {
        let mut l = PendingLog::default();
        l.push(0, b"aaaa");
        l.push(100, b"bbbb");
        l.push(200, b"cccc");
        for seed in 0..200 {
            let cut = torn_cut(l.writes(), &mut Rng::new(seed));
            assert_eq!(cut, torn_cut(l.writes(), &mut Rng::new(seed)));
            assert!(cut.whole < 3);
            assert!(cut.partial < 4);
            let kept = kept_by(l.writes(), cut);
            let kept_bytes: u64 = kept.iter().map(|w| w.data.len() as u64).sum();
            assert_eq!(kept_bytes, 4 * cut.whole as u64 + cut.partial);
            assert!(kept_bytes < l.bytes());
            for (k, w) in kept.iter().enumerate() {
                assert_eq!(w.offset, l.writes()[k].offset);
                assert!(l.writes()[k].data.starts_with(&w.data));
            }
        }
    }

    #[test]
    fn take_empties() {
        let mut l = PendingLog::default();
        l.push(5, b"xy");
        let w = l.take();
        assert_eq!(w.len(), 1);
        assert!(l.is_empty());
        assert_eq!(l.bytes(), 0);
    }
}
