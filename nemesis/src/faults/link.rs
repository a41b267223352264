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

    /// Its argument, as `--nemesis` writes it after the name (`latency:250`).
    pub(super) fn arg(self) -> Option<String> {
        match self {
            LinkFault::Latency { ms } | LinkFault::Jitter { ms } => Some(ms.to_string()),
            LinkFault::Loss { percent } => Some(percent.to_string()),
            LinkFault::Bandwidth { kib_per_sec } => Some(kib_per_sec.to_string()),
            _ => None,
        }
    }

    /// What the proxy does to the link while the fault lasts.
    pub fn effect(self) -> LinkEffect {
        let both = |t: LinkToxic| LinkEffect {
            up: t,
            down: t,
            ..LinkEffect::default()
        };
        match self {
            LinkFault::AckLoss => LinkEffect {
                down: LinkToxic::Drop,
                busiest_link: true,
                ..LinkEffect::default()
            },
            LinkFault::OneWay => LinkEffect {
                up: LinkToxic::Drop,
                ..LinkEffect::default()
            },
            LinkFault::ClientPartition => LinkEffect {
                refuse: true,
                reset_open: true,
                ..LinkEffect::default()
            },
            LinkFault::Latency { ms } => both(LinkToxic::Delay {
                latency_ms: ms,
                jitter_ms: 0,
            }),
            LinkFault::Jitter { ms } => both(LinkToxic::Delay {
                latency_ms: 0,
                jitter_ms: ms,
            }),
            LinkFault::Loss { percent } => LinkEffect {
                loss_percent: percent,
                ..LinkEffect::default()
            },
            LinkFault::Bandwidth { kib_per_sec } => both(LinkToxic::Bandwidth {
                bytes_per_sec: u64::from(kib_per_sec) * 1024,
            }),
            LinkFault::Reset => LinkEffect {
                reset_open: true,
                ..LinkEffect::default()
            },
            LinkFault::Blackhole => both(LinkToxic::Drop),
        }
    }
}

impl fmt::Display for LinkFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())?;
        match self.arg() {
            Some(a) => write!(f, ":{a}"),
            None => Ok(()),
        }
    }
}

/// What the proxy does to one direction of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LinkToxic {
    /// Copy the bytes as they come.
    #[default]
    Pass,
    /// Hold each chunk `latency_ms + uniform(0..=jitter_ms)`.
    Delay {
        /// Added to every chunk.
        latency_ms: u32,
        /// The most added on top, drawn per chunk (seeded).
        jitter_ms: u32,
    },
    /// Discard the bytes.
    Drop,
    /// At most this many bytes per second.
    Bandwidth {
        /// Bytes per second.
        bytes_per_sec: u64,
    },
}

/// What a link fault does to the link it hits: the proxy's state while it
/// lasts, and how its link is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkEffect {
    /// Client -> broker.
    pub up: LinkToxic,
    /// Broker -> client.
    pub down: LinkToxic,
    /// Percent chance that a chunk is lost (and its connection reset).
    pub loss_percent: u32,
    /// New connections are reset at once.
    pub refuse: bool,
    /// The open connections are reset when the fault starts.
    pub reset_open: bool,
    /// Always the link clients send the most through (`ack-loss`: its point is
    /// the replies to records), not the scheduled node's when that carries a
    /// fair share.
    pub busiest_link: bool,
}
