//! The anomaly classes of the cycle search, as data: which edge kinds a cycle
//! of each class may use and which it must contain (Elle's
//! `elle.txn/base-cycle-anomaly-specs`, restated for this checker; see
//! `docs/txn.md`).
use crate::verdict::AnomalyKind;

/// Write-write: T1 wrote a version of an object, T2 the next one (ignoring versions no transaction in the graph wrote).
pub const WW: u8 = 1;
/// Write-read: T2 read a version T1 wrote.
pub const WR: u8 = 2;
/// Read-write (anti-dependency): T1's last read of an object was a version, T2 wrote the next one.
pub const RW: u8 = 4;
/// T1 and T2 ran on the same process, T1 first.
pub const PROCESS: u8 = 8;
/// T1 completed before T2 was invoked.
pub const REALTIME: u8 = 16;
/// The data edges: ww, wr and rw.
pub const DATA: u8 = WW | WR | RW;
/// The order edges: process and realtime.
pub const ORDER: u8 = PROCESS | REALTIME;
/// Every edge kind.
pub const ALL: u8 = DATA | ORDER;

/// Edge kinds in the order explanations prefer them.
pub const KINDS: [u8; 5] = [WW, WR, RW, PROCESS, REALTIME];

/// The name of one edge kind as examples write it (`ww`, `wr`, `rw`, `process`, `realtime`; `?` for anything else).
pub fn kind_name(k: u8) -> &'static str {
    match k {
        WW => "ww",
        WR => "wr",
        RW => "rw",
        PROCESS => "process",
        REALTIME => "realtime",
        _ => "?",
    }
}

/// One anomaly class.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// The anomaly a cycle of this class is counted as.
    pub kind: AnomalyKind,
    /// Edge kinds the cycle may use.
    pub allowed: u8,
    /// The search starts from an edge of one of these kinds (so the cycle contains one).
    pub anchor: u8,
    /// The cycle must contain at least one edge of these kinds.
    pub required: u8,
    /// Edges of these kinds appear exactly once.
    pub single: u8,
    /// Edges of these kinds appear at least twice.
    pub multiple: u8,
    /// Components are the strongly connected components of the graph cut to
    /// these kinds; a cycle lies inside one. Where `allowed` is this mask (and
    /// nothing is `single` or `multiple`), an anchor inside a component lies
    /// on a cycle for certain, so the first search succeeds.
    pub scc: u8,
    /// Whether the search is inside the data graph (ww, wr, rw) or the whole graph.
    pub data_only: bool,
}

/// Every class searched, weakest first. A class with `data_only` breaks
/// serializability; the `-realtime` ones need a process or realtime edge and
/// break only strict serializability.
pub const SPECS: [Spec; 8] = [
    Spec {
        kind: AnomalyKind::G0,
        allowed: WW,
        anchor: WW,
        required: 0,
        single: 0,
        multiple: 0,
        scc: WW,
        data_only: true,
    },
    Spec {
        kind: AnomalyKind::G1c,
        allowed: WW | WR,
        anchor: WR,
        required: WR,
        single: 0,
        multiple: 0,
        scc: WW | WR,
        data_only: true,
    },
    Spec {
        kind: AnomalyKind::GSingle,
        allowed: DATA,
        anchor: RW,
        required: 0,
        single: RW,
        multiple: 0,
        scc: DATA,
        data_only: true,
    },
    Spec {
        kind: AnomalyKind::G2,
        allowed: DATA,
        anchor: RW,
        required: 0,
        single: 0,
        multiple: RW,
        scc: DATA,
        data_only: true,
    },
    Spec {
        kind: AnomalyKind::G0Realtime,
        allowed: WW | ORDER,
        anchor: ORDER,
        required: 0,
        single: 0,
        multiple: 0,
        scc: WW | ORDER,
        data_only: false,
    },
    Spec {
        kind: AnomalyKind::G1cRealtime,
        allowed: WW | WR | ORDER,
        anchor: ORDER,
        required: WR,
        single: 0,
        multiple: 0,
        scc: WW | WR | ORDER,
        data_only: false,
    },
    Spec {
        kind: AnomalyKind::GSingleRealtime,
        allowed: ALL,
        anchor: ORDER,
        required: 0,
        single: RW,
        multiple: 0,
        scc: ALL,
        data_only: false,
    },
    Spec {
        kind: AnomalyKind::G2Realtime,
        allowed: ALL,
        anchor: ORDER,
        required: 0,
        single: 0,
        multiple: RW,
        scc: ALL,
        data_only: false,
    },
];

/// Search state along a path: bit 0 a required edge seen, bit 1 the single
/// edge seen, bits 2-3 how many multiple edges (0, 1, 2 = two or more).
pub fn step(spec: &Spec, st: u8, k: u8) -> Option<u8> {
    let mut st = st;
    if k & spec.required != 0 {
        st |= 1;
    }
    if k & spec.single != 0 {
        if st & 2 != 0 {
            return None;
        }
        st |= 2;
    }
    if k & spec.multiple != 0 {
        let m = ((st >> 2) & 3).saturating_add(1).min(2);
        st = (st & 3) | (m << 2);
    }
    Some(st)
}

/// Whether a closed path in state `st` is a cycle of the class.
pub fn accepts(spec: &Spec, st: u8) -> bool {
    (spec.required == 0 || st & 1 != 0)
        && (spec.single == 0 || st & 2 != 0)
        && (spec.multiple == 0 || (st >> 2) & 3 >= 2)
}

#[cfg(test)]
mod tests {
    use super::SPECS;

    /// The search keeps one cut's components at a time: classes that share a
    /// cut must come one after the other.
    #[test]
    fn classes_of_one_cut_are_adjacent() {
        for (i, a) in SPECS.iter().enumerate() {
            for (j, b) in SPECS.iter().enumerate().skip(i + 1) {
                if a.scc == b.scc {
                    assert!(
                        SPECS[i..=j].iter().all(|s| s.scc == a.scc),
                        "{} and {} share a cut but are not adjacent",
                        a.kind,
                        b.kind
                    );
                }
            }
        }
    }
}
