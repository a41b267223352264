//! A stable sort of indices by an integer key, linear in their number.
//!
//! The checkers sort sends by op index (invoke or completion): keys are below a
//! few tens of millions, so a least-significant-digit radix sort does it in two
//! or three passes where a comparison sort takes twenty.

/// Sorts `items` by `key(item)`, keeping items with equal keys in their order.
pub(crate) fn sort_by_key(items: &mut Vec<u32>, key: impl Fn(u32) -> u64) {
    const BITS: u32 = 11;
    const BUCKETS: usize = 1 << BITS;
    let n = items.len();
    if n < 512 {
        items.sort_by_key(|&i| key(i));
        return;
    }
    let mut keys: Vec<u64> = items.iter().map(|&i| key(i)).collect();
    if keys.windows(2).all(|w| w[0] <= w[1]) {
        return;
    }
    let max = keys.iter().copied().max().unwrap_or(0);
    let bits = u64::BITS - max.leading_zeros();
    let mut items_tmp = vec![0u32; n];
    let mut keys_tmp = vec![0u64; n];
    let mut shift = 0;
    while shift < bits {
        let mut start = [0usize; BUCKETS];
        for &k in &keys {
            start[((k >> shift) as usize) & (BUCKETS - 1)] += 1;
        }
        let mut acc = 0;
        for c in start.iter_mut() {
            let here = *c;
            *c = acc;
            acc += here;
        }
        for (&item, &k) in items.iter().zip(&keys) {
            let b = ((k >> shift) as usize) & (BUCKETS - 1);
            items_tmp[start[b]] = item;
            keys_tmp[start[b]] = k;
            start[b] += 1;
        }
        std::mem::swap(items, &mut items_tmp);
        std::mem::swap(&mut keys, &mut keys_tmp);
        shift += BITS;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_stably_like_the_standard_sort() {
        let mut rng = gauntlet_history::rng::Rng::new(1);
        for (n, spread) in [
            (10, 5u64),
            (1000, 7),
            (5000, 1 << 30),
            (5000, u64::MAX),
            (3000, 1),
        ] {
            let keys: Vec<u64> = (0..n).map(|_| rng.below(spread)).collect();
            let mut a: Vec<u32> = (0..n as u32).collect();
            let mut b = a.clone();
            sort_by_key(&mut a, |i| keys[i as usize]);
            b.sort_by_key(|&i| keys[i as usize]);
            assert_eq!(a, b, "n {n} spread {spread}");
        }
        let mut sorted: Vec<u32> = (0..2000).collect();
        sort_by_key(&mut sorted, u64::from);
        assert_eq!(sorted, (0..2000).collect::<Vec<u32>>());
    }
}
