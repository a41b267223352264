//! State per pair of small ids (consumer x key, consumer x partition, ...): a
//! dense table where the pairs are few enough, one small hash map per row where
//! they are not.
//!
//! The per-delivery loops of the order checkers look state up by two ids for
//! every message; a table is one multiply and one load where a hash map is a
//! hash, a probe and a compare, and the ids are dense by construction. In long
//! histories the rows (consumers) come and go: a map per row keeps the state of
//! the consumers at work small and in cache, where one map for all would be
//! probed at random.
use rustc_hash::FxHashMap;

pub(crate) enum Table2<V> {
    Dense { cols: usize, cells: Vec<V> },
    Rows(Vec<FxHashMap<u32, V>>),
}

impl<V: Copy> Table2<V> {
    /// A table for rows x cols pairs; dense when that is at most `budget` cells.
    pub(crate) fn new(rows: usize, cols: usize, empty: V, budget: usize) -> Table2<V> {
        match rows.checked_mul(cols) {
            Some(n) if n <= budget => Table2::Dense {
                cols,
                cells: vec![empty; n],
            },
            _ => Table2::Rows((0..rows).map(|_| FxHashMap::default()).collect()),
        }
    }

    /// The state of (row, col), `empty` when it was never set.
    #[inline]
    pub(crate) fn get_mut(&mut self, row: u32, col: u32, empty: V) -> &mut V {
        match self {
            Table2::Dense { cols, cells } => &mut cells[row as usize * *cols + col as usize],
            Table2::Rows(rows) => rows[row as usize].entry(col).or_insert(empty),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_and_sparse_agree() {
        let mut dense = Table2::new(10, 7, 0u32, 1000);
        let mut sparse = Table2::new(10, 7, 0u32, 10);
        assert!(matches!(dense, Table2::Dense { .. }));
        assert!(matches!(sparse, Table2::Rows(_)));
        for (r, c) in [(0, 0), (9, 6), (3, 4), (9, 6), (0, 6)] {
            *dense.get_mut(r, c, 0) += r * 10 + c;
            *sparse.get_mut(r, c, 0) += r * 10 + c;
        }
        for r in 0..10 {
            for c in 0..7 {
                assert_eq!(*dense.get_mut(r, c, 0), *sparse.get_mut(r, c, 0));
            }
        }
        assert_eq!(*dense.get_mut(9, 6, 0), 192);
    }
}

/// State per (major, minor) id where each major id (a producer's key, a
/// producer) meets only a few minor ids (consumers), and only for a while: a
/// short list per major id, its nodes in one arena in the order they were made.
/// The majors at work have their nodes close together and recent, so a lookup
/// stays in cache however long the history is.
pub(crate) struct ShortLists<V> {
    head: Vec<u32>,
    nodes: Vec<(u32, u32, V)>,
}

impl<V: Copy> ShortLists<V> {
    pub(crate) fn new(majors: usize) -> ShortLists<V> {
        ShortLists {
            head: vec![u32::MAX; majors],
            nodes: Vec::new(),
        }
    }

    /// The state of (major, minor), made `empty` on first use.
    #[inline]
    pub(crate) fn get_mut(&mut self, major: u32, minor: u32, empty: V) -> &mut V {
        let mut at = self.head[major as usize];
        while at != u32::MAX {
            if self.nodes[at as usize].0 == minor {
                return &mut self.nodes[at as usize].2;
            }
            at = self.nodes[at as usize].1;
        }
        let new = self.nodes.len() as u32;
        self.nodes.push((minor, self.head[major as usize], empty));
        self.head[major as usize] = new;
        &mut self.nodes[new as usize].2
    }
}

#[cfg(test)]
mod short_list_tests {
    use super::*;

    #[test]
    fn lists_keep_each_pair_apart() {
        let mut l = ShortLists::new(4);
        for (major, minor) in [(0, 1), (0, 2), (3, 1), (0, 1), (3, 1), (2, 9)] {
            *l.get_mut(major, minor, 0u32) += 1;
        }
        assert_eq!(*l.get_mut(0, 1, 0), 2);
        assert_eq!(*l.get_mut(0, 2, 0), 1);
        assert_eq!(*l.get_mut(3, 1, 0), 2);
        assert_eq!(*l.get_mut(2, 9, 0), 1);
        assert_eq!(*l.get_mut(1, 1, 0), 0);
    }
}
