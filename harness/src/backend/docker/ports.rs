//! The host ports a Docker deployment publishes its nodes' client ports on.
//!
//! May import: `machine_lock`, `error`.
use crate::error::{HarnessError, Result};
use crate::machine_lock::MachineLock;

/// Ports are leased in blocks of this many: one lock file a block.
const BLOCK: u16 = 32;

/// Host ports chosen for one deployment, and the machine locks of the blocks
/// they were chosen in: held as long as the deployment lives, so that no other
/// Gauntlet process on the machine chooses them (a node stopped for a fault
/// leaves its port unbound, and must find it free when it starts again).
#[derive(Debug, Default)]
pub(super) struct HostPorts {
    /// The ports, distinct.
    pub(super) ports: Vec<u16>,
    _leases: Vec<MachineLock>,
}

/// `count` distinct ports on 127.0.0.1 that are free now. Chosen by us rather than
/// by Docker so that a node keeps its host port across restarts; each is held
/// until all are chosen (a port dropped and asked for again can come back), and
/// they are taken below the kernel's ephemeral range where it leaves room, so
/// that no outgoing connection of this machine takes one before Docker binds it.
/// Between the choice and Docker's bind, another run could choose the same
/// port: each is taken in a block of [`BLOCK`] ports whose machine lock this
/// deployment holds, and no other Gauntlet process chooses in a held block.
pub(super) fn free_ports(count: usize) -> Result<HostPorts> {
    let (lo, _) = ephemeral_range();
    let mut held: Vec<std::net::TcpListener> = Vec::with_capacity(count);
    let mut leases = Vec::new();
    let mut rng = gauntlet_history::rng::Rng::new(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
            ^ u64::from(std::process::id()),
    );
    // Whole blocks from 10,000 up to the ephemeral range.
    let (first, last) = (10_000 / BLOCK + 1, lo / BLOCK);
    let mut tries = 0;
    while held.len() < count && tries < 200 && last > first + 1 {
        tries += 1;
        let block = rng.range(u64::from(first), u64::from(last - 1)) as u16;
        let Some(lease) = MachineLock::try_acquire(&format!("port-block-{block}"))? else {
            continue;
        };
        let before = held.len();
        for port in block * BLOCK..(block + 1) * BLOCK {
            if held.len() == count {
                break;
            }
            if let Ok(l) = std::net::TcpListener::bind(("127.0.0.1", port)) {
                held.push(l);
            }
        }
        if held.len() > before {
            leases.push(lease);
        }
    }
    while held.len() < count {
        held.push(std::net::TcpListener::bind("127.0.0.1:0").map_err(HarnessError::NoPort)?);
    }
    let ports = held
        .iter()
        .map(|l| {
            l.local_addr()
                .map(|a| a.port())
                .map_err(HarnessError::NoPort)
        })
        .collect::<Result<Vec<u16>>>()?;
    Ok(HostPorts {
        ports,
        _leases: leases,
    })
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
            let chosen = free_ports(12).expect("ports");
            let ports = chosen.ports.clone();
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

    #[test]
    fn ports_leased_by_one_deployment_are_never_chosen_by_another() {
        let (lo, _) = ephemeral_range();
        if lo <= 11_000 {
            return;
        }
        // Many deployments at once, as parallel runs hold them: no port twice.
        let all: Vec<HostPorts> = (0..40).map(|_| free_ports(16).expect("ports")).collect();
        let mut seen = std::collections::BTreeSet::new();
        for d in &all {
            for p in &d.ports {
                assert!(seen.insert(*p), "port {p} chosen twice");
            }
        }
        // Once a deployment is gone, its blocks are free again.
        drop(all);
        let again = free_ports(4).expect("ports");
        assert_eq!(again.ports.len(), 4);
    }
}
