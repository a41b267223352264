//! Where a consumer's order tracking starts over: after an `assign`,
//! `subscribe` or `seek` that resets the partition (`docs/checkers.md`,
//! "Reset").
//!
//! A consumer's **epoch** in a partition at an op is the number of its resets
//! of that partition invoked before the op; two reads are compared only within
//! one epoch.
use gauntlet_history::model::{History, ResetScope};

/// The resets of every consumer, for epoch look-ups.
pub(crate) struct Epochs<'a> {
    h: &'a History,
    /// [process]: indices into `History::resets`, in op order.
    by_process: Vec<Vec<u32>>,
    /// [process]: every reset of it resets all partitions.
    whole: Vec<bool>,
}

impl<'a> Epochs<'a> {
    pub fn new(h: &'a History) -> Self {
        let n = h.processes.len();
        let mut by_process: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut whole = vec![true; n];
        for (i, r) in h.resets.iter().enumerate() {
            if let Some(list) = by_process.get_mut(r.process as usize) {
                list.push(i as u32);
                whole[r.process as usize] &= r.scope == ResetScope::All;
            }
        }
        for list in &mut by_process {
            list.sort_by_key(|&i| h.resets[i as usize].index);
        }
        Epochs {
            h,
            by_process,
            whole,
        }
    }

    /// The epoch of `process` in `partition` (a partition id, or `NONE`) for an op invoked at `index`.
    pub fn epoch(&self, process: u32, partition: u32, index: u64) -> u32 {
        let Some(list) = self.by_process.get(process as usize) else {
            return 0;
        };
        let resets = &self.h.resets;
        let n = list.partition_point(|&i| resets[i as usize].index < index);
        if self.whole[process as usize] {
            return n as u32;
        }
        list[..n]
            .iter()
            .filter(|&&i| self.h.resets_partition(&resets[i as usize], partition))
            .count() as u32
    }
}
