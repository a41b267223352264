//! Faults on the path between the clients and one node, done by the harness's TCP
//! proxy: their names, parameters and history names. The proxy itself (what each
//! does to the bytes) is the harness's.
use std::fmt;

/// A fault on the path between the clients and one node, done by the harness's TCP
/// proxy (no change inside the node). Directions: requests are client -> broker,
/// replies broker -> client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkFault {
    /// Replies dropped, requests pass (seed D2): the broker stores, the client never
    /// hears so, times out and retries.
    AckLoss,
    /// Requests dropped, replies pass (seed D1): what the client sends never arrives.
    OneWay,
    /// The clients are cut off the node: open connections reset, new ones refused.
    ClientPartition,
    /// Every chunk held MS more, both directions.
    Latency {
        /// Milliseconds added to each chunk.
        ms: u32,
    },
    /// Every chunk held a uniform 0..=MS more (seeded), both directions, order kept.
    Jitter {
        /// The most milliseconds added to a chunk.
        ms: u32,
    },
    /// Each chunk lost with PCT % probability, and its connection reset.
    Loss {
        /// The chance, 0..=100, that a chunk is lost.
        percent: u32,
    },
    /// At most KIB KiB/s each way.
    Bandwidth {
        /// KiB per second each way; at least 1.
        kib_per_sec: u32,
    },
    /// Every open connection closed with RST (new ones work).
    Reset,
    /// Connections accepted, nothing forwarded either way.
    Blackhole,
}

impl LinkFault {
    pub(super) fn parse(s: &str) -> Option<LinkFault> {
        let (name, arg) = match s.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (s, None),
        };
        let num = |default: u32| -> Option<u32> {
            match arg {
                None => Some(default),
                Some(a) => a.trim_end_matches("ms").parse().ok(),
            }
        };
        let plain = |f: LinkFault| arg.is_none().then_some(f);
        match name {
            "ack-loss" => plain(LinkFault::AckLoss),
            "partition-one-way" => plain(LinkFault::OneWay),
            "client-partition" => plain(LinkFault::ClientPartition),
            "latency" => num(200).map(|ms| LinkFault::Latency { ms }),
            "jitter" => num(100).map(|ms| LinkFault::Jitter { ms }),
            "loss" => num(5)
                .filter(|p| *p <= 100)
                .map(|percent| LinkFault::Loss { percent }),
            "bandwidth" => num(16)
                .filter(|k| *k > 0)
                .map(|kib_per_sec| LinkFault::Bandwidth { kib_per_sec }),
            "reset" => plain(LinkFault::Reset),
            "blackhole" => plain(LinkFault::Blackhole),
            _ => None,
        }
    }

    /// The name recorded in the history when the fault starts (its end is `<name>-end`).
    pub fn name(self) -> &'static str {
        match self {
            LinkFault::AckLoss => "ack-loss",
            LinkFault::OneWay => "partition-one-way",
            LinkFault::ClientPartition => "client-partition",
            LinkFault::Latency { .. } => "latency",
            LinkFault::Jitter { .. } => "jitter",
            LinkFault::Loss { .. } => "loss",
            LinkFault::Bandwidth { .. } => "bandwidth",
            LinkFault::Reset => "reset",
            LinkFault::Blackhole => "blackhole",
        }
    }
}

impl fmt::Display for LinkFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkFault::Latency { ms } | LinkFault::Jitter { ms } => {
                write!(f, "{}:{ms}", self.name())
            }
            LinkFault::Loss { percent } => write!(f, "loss:{percent}"),
            LinkFault::Bandwidth { kib_per_sec } => write!(f, "bandwidth:{kib_per_sec}"),
            _ => f.write_str(self.name()),
        }
    }
}

pub(super) fn history_names(l: LinkFault) -> (&'static str, &'static str) {
    match l {
        LinkFault::AckLoss => ("ack-loss", "ack-loss-end"),
        LinkFault::OneWay => ("partition-one-way", "partition-one-way-end"),
        LinkFault::ClientPartition => ("client-partition", "client-partition-end"),
        LinkFault::Latency { .. } => ("latency", "latency-end"),
        LinkFault::Jitter { .. } => ("jitter", "jitter-end"),
        LinkFault::Loss { .. } => ("loss", "loss-end"),
        LinkFault::Bandwidth { .. } => ("bandwidth", "bandwidth-end"),
        LinkFault::Reset => ("reset", "reset-end"),
        LinkFault::Blackhole => ("blackhole", "blackhole-end"),
    }
}
