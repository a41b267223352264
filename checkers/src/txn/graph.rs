//! The dependency graph: a petgraph CSR over transaction indices with an edge
//! kind bit set per pair, strongly connected components of the graph cut to
//! some kinds, and a breadth-first search for the shortest cycle of a class.
//!
//! Tarjan's algorithm is written out iteratively here: petgraph's is
//! recursive, and a history's write-write chains are millions of edges long.
use super::spec::{accepts, step, Spec, KINDS};
use gauntlet_history::model::NONE;
use petgraph::csr::Csr;
use petgraph::Directed;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::VecDeque;
use std::time::Instant;

pub type Graph = Csr<(), u8, Directed, u32>;

/// Builds the graph from (from, to, kind) triples in any order; pairs are merged, kinds or-ed.
/// A counting sort by source, then a small sort per source; the merged list is
/// written back into `edges` (its pages are in memory already).
pub fn build(n: usize, mut edges: Vec<(u32, u32, u8)>) -> Graph {
    let mut start = vec![0usize; n + 1];
    for &(a, _, _) in &edges {
        start[a as usize + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut cursor = start.clone();
    let mut slots: Vec<(u32, u8)> = vec![(0, 0); edges.len()];
    for &(a, b, k) in &edges {
        let c = &mut cursor[a as usize];
        slots[*c] = (b, k);
        *c += 1;
    }
    drop(cursor);
    edges.clear();
    for a in 0..n {
        let out = &mut slots[start[a]..start[a + 1]];
        out.sort_unstable_by_key(|&(b, _)| b);
        let first = edges.len();
        for &(b, k) in out.iter() {
            let l = edges.len();
            if l > first && edges[l - 1].1 == b {
                edges[l - 1].2 |= k;
            } else {
                edges.push((a as u32, b, k));
            }
        }
    }
    drop(slots);
    let mut g: Graph = Csr::from_sorted_edges(&edges).unwrap_or_default();
    drop(edges);
    while g.node_count() < n {
        g.add_node(());
    }
    g
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
