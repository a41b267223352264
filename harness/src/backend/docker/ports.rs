//! The host ports a Docker deployment publishes its nodes' client ports on.
//!
//! May import: `error`.
use crate::error::{HarnessError, Result};

/// `count` distinct ports on 127.0.0.1 that are free now. Chosen by us rather than
/// by Docker so that a node keeps its host port across restarts; each is held
/// until all are chosen (a port dropped and asked for again can come back), and
/// they are taken below the kernel's ephemeral range where it leaves room, so
/// that no outgoing connection of this machine takes one before Docker binds it.
pub(super) fn free_ports(count: usize) -> Result<Vec<u16>> {
    let (lo, _) = ephemeral_range();
    let mut held: Vec<std::net::TcpListener> = Vec::with_capacity(count);
    let mut rng = gauntlet_history::rng::Rng::new(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
            ^ u64::from(std::process::id()),
    );
    let mut tries = 0;
    while held.len() < count && tries < 2000 && lo > 11_000 {
        tries += 1;
        let port = rng.range(10_000, u64::from(lo) - 1) as u16;
        if let Ok(l) = std::net::TcpListener::bind(("127.0.0.1", port)) {
            held.push(l);
        }
    }
    while held.len() < count {
        held.push(std::net::TcpListener::bind("127.0.0.1:0").map_err(HarnessError::NoPort)?);
    }
    held.iter()
        .map(|l| {
            l.local_addr()
                .map(|a| a.port())
                .map_err(HarnessError::NoPort)
        })
        .collect()
}

/// The kernel's range of ephemeral ports (outgoing connections, bind to port 0).
fn ephemeral_range() -> (u16, u16) {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| {
            let mut it = s.split_whitespace().filter_map(|x| x.parse::<u16>().ok());
            Some((it.next()?, it.next()?))
        })
        .unwrap_or((32_768, 60_999))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_ports_are_distinct_free_and_below_the_ephemeral_range() {
        let (lo, hi) = ephemeral_range();
        assert!(lo <= hi, "{lo} {hi}");
        for _ in 0..20 {
            let ports = free_ports(12).expect("ports");
            let distinct: std::collections::BTreeSet<u16> = ports.iter().copied().collect();
            assert_eq!(distinct.len(), 12, "{ports:?}");
            if lo > 11_000 {
                assert!(
                    ports.iter().all(|&p| (10_000..lo).contains(&p)),
                    "{ports:?}"
                );
            }
            // Released once chosen: Docker can bind them.
            for p in ports {
                assert!(std::net::TcpListener::bind(("127.0.0.1", p)).is_ok(), "{p}");
            }
        }
    }
}
