//! The dependency graph: a compressed sparse row graph over item indices with
//! an edge kind bit set per pair, strongly connected components of the graph
//! cut to some kinds, and a breadth-first search for the shortest cycle of a class.
//!
//! Tarjan's algorithm is written out iteratively here: a recursive one would
//! overflow the stack on a history's write-write chains, millions of edges long.
use super::spec::{accepts, step, Spec, KINDS};
use gauntlet_history::model::NONE;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::VecDeque;
use std::time::Instant;

/// Out-edges of node `v` are `targets[start[v]..start[v + 1]]`, sorted, each
/// target once, with their kinds (or-ed bits) at the same places of `kinds`.
#[derive(Debug, Default)]
pub struct Graph {
    start: Vec<usize>,
    targets: Vec<u32>,
    kinds: Vec<u8>,
}

impl Graph {
    /// Nodes.
    pub fn node_count(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    /// The targets of `v`'s out-edges, ascending.
    pub fn neighbors_slice(&self, v: u32) -> &[u32] {
        &self.targets[self.range(v)]
    }

    /// The kinds of `v`'s out-edges, in the order of [`Graph::neighbors_slice`].
    pub fn edges_slice(&self, v: u32) -> &[u8] {
        &self.kinds[self.range(v)]
    }

    fn range(&self, v: u32) -> std::ops::Range<usize> {
        let v = v as usize;
        match (self.start.get(v), self.start.get(v + 1)) {
            (Some(&a), Some(&b)) => a..b,
            _ => 0..0,
        }
    }
}

/// Builds the graph of `n` nodes from the (from, to, kind) triples that
/// `edges` emits, in any order; pairs are merged, kinds or-ed. `edges` runs
/// twice and must emit the same triples each time: once to count each node's
/// out-edges, once to put them in their place. So no list of triples (12
/// bytes an edge) and no copy of it is ever held: only the graph's own 5
/// bytes an edge, and its row starts.
pub fn build(n: usize, edges: impl Fn(&mut dyn FnMut(u32, u32, u8))) -> Graph {
    // start[a + 2] counts a's edges; after the prefix sum start[a + 1] is where
    // a's edges begin, and it moves along as they are placed, so that at the
    // end start[a] is where a's edges begin and start[n] is their number.
    let mut start = vec![0usize; n + 2];
    edges(&mut |a, _, _| {
        if let Some(c) = start.get_mut(a as usize + 2) {
            *c += 1;
        }
    });
    for i in 1..start.len() {
        start[i] += start[i - 1];
    }
    let total = start[n + 1];
    let mut targets = vec![0u32; total];
    let mut kinds = vec![0u8; total];
    edges(&mut |a, b, k| {
        if let Some(c) = start.get_mut(a as usize + 1) {
            if let (Some(t), Some(kk)) = (targets.get_mut(*c), kinds.get_mut(*c)) {
                *t = b;
                *kk = k;
                *c += 1;
            }
        }
    });
    start.pop();
    // Each node's edges by target, equal targets merged, moved down over the
    // places merging freed.
    let mut out: Vec<(u32, u8)> = Vec::new();
    let mut w = 0usize;
    for a in 0..n {
        let (lo, hi) = (start[a], start[a + 1]);
        start[a] = w;
        out.clear();
        out.extend(
            targets[lo..hi]
                .iter()
                .copied()
                .zip(kinds[lo..hi].iter().copied()),
        );
        out.sort_unstable_by_key(|&(b, _)| b);
        let first = w;
        for &(b, k) in &out {
            if w > first && targets[w - 1] == b {
                kinds[w - 1] |= k;
            } else {
                targets[w] = b;
                kinds[w] = k;
                w += 1;
            }
        }
    }
    start[n] = w;
    targets.truncate(w);
    targets.shrink_to_fit();
    kinds.truncate(w);
    kinds.shrink_to_fit();
    Graph {
        start,
        targets,
        kinds,
    }
}

/// Strongly connected components of the graph cut to edges with a kind in
/// `mask` and to `active` nodes: a component id per node, [`NONE`] for nodes
/// alone in theirs (no self edges exist) or inactive; and the number of components.
pub fn scc(g: &Graph, mask: u8, active: &[bool]) -> (Vec<u32>, u32) {
    let n = g.node_count();
    let mut index = vec![NONE; n];
    let mut low = vec![0u32; n];
    let mut on = vec![false; n];
    let mut comp = vec![NONE; n];
    let mut stack: Vec<u32> = Vec::new();
    let mut call: Vec<(u32, u32)> = Vec::new();
    let mut counter = 0u32;
    let mut comps = 0u32;
    for s in 0..n as u32 {
        if !active[s as usize] || index[s as usize] != NONE {
            continue;
        }
        index[s as usize] = counter;
        low[s as usize] = counter;
        counter += 1;
        stack.push(s);
        on[s as usize] = true;
        call.push((s, 0));
        while let Some(&(v, i)) = call.last() {
            let nb = g.neighbors_slice(v);
            if (i as usize) < nb.len() {
                if let Some(top) = call.last_mut() {
                    top.1 += 1;
                }
                let w = nb[i as usize];
                let k = g.edges_slice(v)[i as usize];
                if k & mask == 0 || !active[w as usize] {
                    continue;
                }
                if index[w as usize] == NONE {
                    index[w as usize] = counter;
                    low[w as usize] = counter;
                    counter += 1;
                    stack.push(w);
                    on[w as usize] = true;
                    call.push((w, 0));
                } else if on[w as usize] {
                    low[v as usize] = low[v as usize].min(index[w as usize]);
                }
            } else {
                call.pop();
                if let Some(&(p, _)) = call.last() {
                    low[p as usize] = low[p as usize].min(low[v as usize]);
                }
                if low[v as usize] == index[v as usize] {
                    let start = stack.iter().rposition(|&x| x == v).unwrap_or(0);
                    let members = stack.len() - start;
                    for &x in &stack[start..] {
                        on[x as usize] = false;
                        if members > 1 {
                            comp[x as usize] = comps;
                        }
                    }
                    if members > 1 {
                        comps += 1;
                    }
                    stack.truncate(start);
                }
            }
        }
    }
    (comp, comps)
}

/// The search ran out of time.
#[derive(Debug)]
pub struct Timeout;

/// One step of a cycle: from, to, the edge kind it uses.
pub type Step = (u32, u32, u8);

/// The shortest cycle of class `spec` through the anchor edge `a -> b` (of
/// kind `k0`), inside component `c` of `comp`; `None` when there is none.
#[allow(clippy::too_many_arguments)]
pub fn cycle_through(
    g: &Graph,
    spec: &Spec,
    comp: &[u32],
    c: u32,
    a: u32,
    b: u32,
    k0: u8,
    deadline: Instant,
) -> Result<Option<Vec<Step>>, Timeout> {
    // The search over (vertex, state) finds the shortest closed walk of the
    // class; a walk that passes a vertex twice is no cycle, so then search
    // again visiting each vertex once (and keep the result only if the class accepts it).
    if let Some(steps) = walk_through(g, spec, comp, c, a, b, k0, deadline, false)? {
        if simple(&steps) {
            return Ok(Some(steps));
        }
        return Ok(walk_through(g, spec, comp, c, a, b, k0, deadline, true)?.filter(|s| simple(s)));
    }
    Ok(None)
}

fn simple(steps: &[Step]) -> bool {
    let mut seen: Vec<u32> = steps.iter().map(|s| s.0).collect();
    seen.sort_unstable();
    seen.windows(2).all(|w| w[0] != w[1])
}

#[allow(clippy::too_many_arguments)]
fn walk_through(
    g: &Graph,
    spec: &Spec,
    comp: &[u32],
    c: u32,
    a: u32,
    b: u32,
    k0: u8,
    deadline: Instant,
    once: bool,
) -> Result<Option<Vec<Step>>, Timeout> {
    if Instant::now() > deadline {
        return Err(Timeout);
    }
    let Some(st0) = step(spec, 0, k0) else {
        return Ok(None);
    };
    // (node, state) -> (previous node, previous state, kind of the edge taken)
    let mut prev: FxHashMap<(u32, u8), (u32, u8, u8)> = FxHashMap::default();
    let mut queue: VecDeque<(u32, u8)> = VecDeque::new();
    let mut seen: FxHashSet<u32> = FxHashSet::default();
    prev.insert((b, st0), (a, 0, k0));
    queue.push_back((b, st0));
    let mut pops = 0u64;
    let mut end: Option<(u32, u8, u8, u8)> = None; // (last node, its state, kind into a, final state)
    'bfs: while let Some((v, st)) = queue.pop_front() {
        pops += 1;
        if pops.is_multiple_of(4096) && Instant::now() > deadline {
            return Err(Timeout);
        }
        let nb = g.neighbors_slice(v);
        let ks = g.edges_slice(v);
        for (&w, &bits) in nb.iter().zip(ks) {
            if comp[w as usize] != c {
                continue;
            }
            let usable = bits & spec.allowed;
            if usable == 0 {
                continue;
            }
            for k in KINDS {
                if usable & k == 0 {
                    continue;
                }
                let Some(st2) = step(spec, st, k) else {
                    continue;
                };
                if w == a {
                    if accepts(spec, st2) {
                        end = Some((v, st, k, st2));
                        break 'bfs;
                    }
                    continue;
                }
                if once && (w == b || !seen.insert(w)) {
                    continue;
                }
                if let std::collections::hash_map::Entry::Vacant(e) = prev.entry((w, st2)) {
                    e.insert((v, st, k));
                    queue.push_back((w, st2));
                }
            }
        }
    }
    let Some((last, last_st, k_last, _)) = end else {
        return Ok(None);
    };
    let mut steps = vec![(last, a, k_last)];
    let (mut v, mut st) = (last, last_st);
    while let Some(&(p, pst, k)) = prev.get(&(v, st)) {
        steps.push((p, v, k));
        if p == a && v == b && k == k0 && pst == 0 {
            break;
        }
        v = p;
        st = pst;
        if steps.len() > comp.len() * 16 + 2 {
            break;
        }
    }
    steps.reverse();
    Ok(Some(steps))
}
