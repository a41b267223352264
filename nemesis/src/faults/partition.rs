//! Partitions between nodes: one node isolated (`partition`), and the shapes of
//! Jepsen's nemesis (`partition:halves|ring|bridge`) from a grudge. Done with
//! [`Cluster::drop_traffic`], healed with [`heal_network`].
use super::{failed, FaultKind};
use crate::{Cluster, NemesisError};
use gauntlet_history::rng::Rng;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The shapes of [`FaultKind::PartitionShape`], after Jepsen's `nemesis.clj`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Two halves, the smaller (minority) and the larger (majority); shuffled.
    Halves,
    /// Majorities ring: every node sees a majority, no two nodes the same one.
    Ring,
    /// Two halves joined by one node that sees both (and both see it).
    Bridge,
}

impl Shape {
    /// Its name after `partition:`.
    pub fn name(self) -> &'static str {
        match self {
            Shape::Halves => "halves",
            Shape::Ring => "ring",
            Shape::Bridge => "bridge",
        }
    }
}

/// `partition`: isolates `target` from every other node, both directions, on
/// the isolated node and on every other node.
pub(super) async fn isolate(
    cluster: &Cluster<'_>,
    kind: FaultKind,
    target: &str,
) -> Result<Value, NemesisError> {
    let others: Vec<String> = cluster
        .nodes()
        .into_iter()
        .filter(|n| n != target)
        .collect();
    if others.is_empty() {
        return Err(NemesisError::Unsupported {
            fault: kind.to_string(),
            why: "a partition needs at least two nodes".into(),
        });
    }
    let mut ips = Vec::new();
    for n in &others {
        ips.push(cluster.node_ip(n).await?);
    }
    // Both directions, on the isolated node and on every other node.
    cluster
        .drop_traffic(target, &ips, true)
        .await
        .map_err(|e| failed(kind, target, e))?;
    let me = cluster.node_ip(target).await?;
    for n in &others {
        cluster
            .drop_traffic(n, std::slice::from_ref(&me), true)
            .await?;
    }
    Ok(json!({"isolated": target, "from": others}))
}

/// Who drops whose packets: node -> the nodes it drops packets *from* (Jepsen's grudge).
pub type Grudge = BTreeMap<String, BTreeSet<String>>;

/// Every node of a component drops every node outside it (Jepsen's `complete-grudge`).
pub fn complete_grudge(components: &[Vec<String>]) -> Grudge {
    let universe: BTreeSet<String> = components.iter().flatten().cloned().collect();
    let mut g = Grudge::new();
    for c in components {
        let mine: BTreeSet<String> = c.iter().cloned().collect();
        for n in c {
            g.insert(n.clone(), universe.difference(&mine).cloned().collect());
        }
    }
    g
}

/// `nodes` shuffled by the seeded `pick` (Fisher-Yates over `gauntlet_history::rng`,
/// started where the nemesis's own SplitMix64 started: the same pick gives the
/// same order as it always did).
fn shuffled(nodes: &[String], pick: u64) -> Vec<String> {
    let mut v = nodes.to_vec();
    let mut rng = Rng::new(pick ^ 0x7061_7274_6974_696F ^ RNG_SEED_MASK);
    for i in (1..v.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
    v
}

/// What `Rng::new` mixes into its seed: undone here, so a generator starts
/// from the state the nemesis's schedules and grudges always started from.
pub(crate) const RNG_SEED_MASK: u64 = 0x5DEE_CE66_D1CE_4E5B;

/// The grudge of a shape over `nodes`, the nodes shuffled by `pick` first (the same
/// pick gives the same grudge). Every shape needs at least three nodes.
pub fn grudge(shape: Shape, nodes: &[String], pick: u64) -> Result<Grudge, NemesisError> {
    if nodes.len() < 3 {
        return Err(NemesisError::Unsupported {
            fault: FaultKind::PartitionShape(shape).to_string(),
            why: format!(
                "needs at least three nodes, the cluster has {}",
                nodes.len()
            ),
        });
    }
    let v = shuffled(nodes, pick);
    let n = v.len();
    // Jepsen's `bisect`: the smaller half first.
    let (small, large) = v.split_at(n / 2);
    Ok(match shape {
        Shape::Halves => complete_grudge(&[small.to_vec(), large.to_vec()]),
        Shape::Bridge => {
            let bridge = large[0].clone();
            let mut g = complete_grudge(&[small.to_vec(), large.to_vec()]);
            g.remove(&bridge);
            for drops in g.values_mut() {
                drops.remove(&bridge);
            }
            g
        }
        Shape::Ring => {
            let majority = n / 2 + 1;
            let all: BTreeSet<String> = v.iter().cloned().collect();
            (0..n)
                .map(|i| {
                    let sees: BTreeSet<String> =
                        (0..majority).map(|k| v[(i + k) % n].clone()).collect();
                    (v[i].clone(), all.difference(&sees).cloned().collect())
                })
                .collect()
        }
    })
}

/// Cuts the network as `grudge` says: on each node, its packets from each node it
/// holds a grudge against are dropped (iptables INPUT). Healed by [`heal_network`].
pub async fn apply_grudge(
    cluster: &Cluster<'_>,
    kind: FaultKind,
    grudge: &Grudge,
) -> Result<(), NemesisError> {
    let mut ips = BTreeMap::new();
    for n in cluster.nodes() {
        ips.insert(n.clone(), cluster.node_ip(&n).await?);
    }
    for (node, drops) in grudge {
        if drops.is_empty() {
            continue;
        }
        let mut from = Vec::new();
        for d in drops {
            let ip = ips
                .get(d)
                .ok_or_else(|| failed(kind, node, format!("no node {d}")))?;
            from.push(ip.clone());
        }
        cluster
            .drop_traffic(node, &from, false)
            .await
            .map_err(|e| failed(kind, node, e))?;
    }
    Ok(())
}

/// Removes every DROP rule the partitions added, on every node.
pub async fn heal_network(cluster: &Cluster<'_>) -> Result<(), NemesisError> {
    for n in cluster.nodes().into_iter().chain(cluster.storage_node()) {
        cluster.heal_traffic(&n).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn names(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    fn set(xs: &[&str]) -> BTreeSet<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    /// What each node still hears: every node minus the ones it drops.
    fn hears(g: &Grudge, nodes: &[String], n: &str) -> BTreeSet<String> {
        let all: BTreeSet<String> = nodes.iter().cloned().collect();
        match g.get(n) {
            Some(d) => all.difference(d).cloned().collect(),
            None => all,
        }
    }

    #[test]
    fn complete_grudge_cuts_between_components_only() {
        let g = complete_grudge(&[vec!["a".into()], vec!["b".into(), "c".into()]]);
        assert_eq!(g["a"], set(&["b", "c"]));
        assert_eq!(g["b"], set(&["a"]));
        assert_eq!(g["c"], set(&["a"]));
    }

    #[test]
    fn halves_are_a_minority_and_a_majority_cut_both_ways() {
        for n in [3, 4, 5, 7] {
            let nodes = names(n);
            for pick in 0..50 {
                let g = grudge(Shape::Halves, &nodes, pick).expect("grudge");
                assert_eq!(g.len(), n);
                let mut sizes: Vec<usize> =
                    nodes.iter().map(|x| hears(&g, &nodes, x).len()).collect();
                sizes.sort_unstable();
                let minority = n / 2;
                assert!(
                    sizes[..minority].iter().all(|&s| s == minority),
                    "{n} {pick} {g:?}"
                );
                assert!(
                    sizes[minority..].iter().all(|&s| s == n - minority),
                    "{n} {pick} {g:?}"
                );
                // Symmetric: a drops b iff b drops a.
                for (a, drops) in &g {
                    for b in drops {
                        assert!(g[b].contains(a), "{a} drops {b} but not back: {g:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn ring_gives_every_node_a_distinct_majority() {
        for n in [3, 5, 6, 7] {
            let nodes = names(n);
            for pick in 0..50 {
                let g = grudge(Shape::Ring, &nodes, pick).expect("grudge");
                let seen: BTreeSet<BTreeSet<String>> =
                    nodes.iter().map(|x| hears(&g, &nodes, x)).collect();
                assert_eq!(seen.len(), n, "two nodes see the same majority: {g:?}");
                for x in &nodes {
                    let h = hears(&g, &nodes, x);
                    assert_eq!(h.len(), n / 2 + 1, "{x} in {g:?}");
                    assert!(h.contains(x));
                }
            }
        }
        // Three nodes: each drops exactly one other, and no two drop the same one.
        let g = grudge(Shape::Ring, &names(3), 1).expect("grudge");
        let dropped: BTreeSet<&String> = g.values().flatten().collect();
        assert!(g.values().all(|d| d.len() == 1));
        assert_eq!(dropped.len(), 3);
    }

    #[test]
    fn bridge_joins_two_halves_through_one_node() {
        for n in [3, 5, 7] {
            let nodes = names(n);
            for pick in 0..50 {
                let g = grudge(Shape::Bridge, &nodes, pick).expect("grudge");
                let bridges: Vec<&String> = nodes
                    .iter()
                    .filter(|x| hears(&g, &nodes, x).len() == n)
                    .collect();
                assert_eq!(bridges.len(), 1, "{g:?}");
                let bridge = bridges[0];
                assert!(
                    g.values().all(|d| !d.contains(bridge)),
                    "someone drops the bridge: {g:?}"
                );
                // The others form two sides that cannot hear each other.
                let side = |x: &String| hears(&g, &nodes, x);
                let others: Vec<&String> = nodes.iter().filter(|x| *x != bridge).collect();
                let sides: BTreeSet<BTreeSet<String>> = others.iter().map(|x| side(x)).collect();
                assert_eq!(sides.len(), 2, "{g:?}");
                // Each side hears itself and the bridge; the two sides hold every other node.
                let total: usize = sides.iter().map(|s| s.len() - 1).sum();
                assert_eq!(total, n - 1, "{g:?}");
            }
        }
    }

    /// The grudges of the code before the shared generator (its own
    /// SplitMix64), kept in `tests/golden/grudges.txt`.
    #[test]
    fn grudges_are_the_same_as_before_for_the_same_pick() {
        let mut out = String::new();
        for n in [3usize, 5, 6] {
            for shape in [Shape::Halves, Shape::Ring, Shape::Bridge] {
                for pick in [0u64, 1, 7, 419, 856, 927, 999] {
                    let g = grudge(shape, &names(n), pick).expect("grudge");
                    out.push_str(&format!(
                        "{n} {shape:?} {pick} {}\n",
                        serde_json::to_string(&g).expect("json")
                    ));
                }
            }
        }
        assert_eq!(out, include_str!("../../tests/golden/grudges.txt"));
    }

    #[test]
    fn grudges_are_seeded_and_need_three_nodes() {
        let nodes = names(5);
        for shape in [Shape::Halves, Shape::Ring, Shape::Bridge] {
            assert_eq!(grudge(shape, &nodes, 7).ok(), grudge(shape, &nodes, 7).ok());
            let distinct: BTreeSet<Vec<(String, Vec<String>)>> = (0..20)
                .map(|p| {
                    grudge(shape, &nodes, p)
                        .expect("grudge")
                        .into_iter()
                        .map(|(k, v)| (k, v.into_iter().collect()))
                        .collect()
                })
                .collect();
            assert!(distinct.len() > 1, "{shape:?}: the pick changes nothing");
            let e = grudge(shape, &names(2), 0).expect_err("two nodes");
            assert!(e.to_string().contains("at least three nodes"), "{e}");
        }
    }
}
