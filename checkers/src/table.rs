//! State per pair of small ids (consumer x key, consumer x partition, ...): a
//! dense table where the pairs are few enough, a hash map where they are not.
//!
//! The per-delivery loops of the order checkers look state up by two ids for
//! every message; a table is one multiply and one load where a hash map is a
//! hash, a probe and a compare, and the ids are dense by construction.
use rustc_hash::FxHashMap;

pub(crate) enum Table2<V> {
    Dense { cols: usize, cells: Vec<V> },
    Sparse(FxHashMap<(u32, u32), V>),
}

impl<V: Copy> Table2<V> {
    /// A table for rows x cols pairs; dense when that is at most `budget` cells.
    pub(crate) fn new(rows: usize, cols: usize, empty: V, budget: usize) -> Table2<V> {
        match rows.checked_mul(cols) {
            Some(n) if n <= budget => Table2::Dense {
                cols,
                cells: vec![empty; n],
            },
            _ => Table2::Sparse(FxHashMap::default()),
        }
    }

    /// The state of (row, col), `empty` when it was never set.
    #[inline]
    pub(crate) fn get_mut(&mut self, row: u32, col: u32, empty: V) -> &mut V {
        match self {
            Table2::Dense { cols, cells } => &mut cells[row as usize * *cols + col as usize],
            Table2::Sparse(map) => map.entry((row, col)).or_insert(empty),
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
        assert!(matches!(sparse, Table2::Sparse(_)));
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
