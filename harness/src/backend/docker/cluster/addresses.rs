//! The run's network with a subnet of its own and a fixed address for each
//! container on it, so that Gauntlet's clients can connect to the nodes
//! directly instead of through Docker's published ports, where `docker-proxy`
//! copies every byte (2026-12-07, `redis-benchmark` from the host with the
//! producers' window: 300k XADDs/s to the node's address, 255k through the
//! published port). A node keeps its address across a restart only when it
//! was given one: Docker hands a stopped container's address to the next
//! container that asks, and gives it another when it starts again.
//!
//! Docker gives a fixed address only on a network whose subnet was named when
//! it was created. Gauntlet does not choose subnets itself (it cannot see
//! every route a user's machine has): it creates the network, reads the
//! subnet Docker chose, and creates it again with that subnet named. Between
//! the two creations the subnet is free, so several runs starting together
//! would take each other's: the three steps run under a machine lock
//! ([`NETWORK_LOCK`]) that every Gauntlet process takes, and a network made
//! meanwhile by something else only costs another attempt.
use crate::error::{docker_err, Result};
use crate::machine_lock::MachineLock;
use bollard::models::{Ipam, IpamConfig, NetworkCreateRequest};
use bollard::Docker;
use std::collections::HashMap;
use std::net::Ipv4Addr;

/// How often the network is created again when another network (not
/// Gauntlet's) took its subnet between the two creations.
const ATTEMPTS: usize = 5;

/// The machine lock held while a run network is created.
const NETWORK_LOCK: &str = "docker-network";

/// An IPv4 subnet and the addresses handed out in it, in order from the
/// first after the gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Addresses {
    base: u32,
    prefix: u8,
    gateway: Option<Ipv4Addr>,
    next: u32,
}

impl Addresses {
    /// From Docker's `Subnet` (`172.18.0.0/16`) and `Gateway`; `None` for
    /// anything else (IPv6, a subnet too small for a run).
    pub(super) fn new(subnet: &str, gateway: Option<&str>) -> Option<Addresses> {
        let (ip, prefix) = subnet.split_once('/')?;
        let ip: Ipv4Addr = ip.parse().ok()?;
        let prefix: u8 = prefix.parse().ok()?;
        if !(8..=28).contains(&prefix) {
            return None;
        }
        let mask = u32::MAX << (32 - prefix);
        Some(Addresses {
            base: u32::from(ip) & mask,
            prefix,
            gateway: gateway.and_then(|g| g.parse().ok()),
            next: 2,
        })
    }

    /// The subnet as Docker writes it.
    pub(super) fn subnet(&self) -> String {
        format!("{}/{}", Ipv4Addr::from(self.base), self.prefix)
    }

    /// The next free address, from the subnet's second host address (Docker's
    /// gateway is the first): never the gateway's or the broadcast address;
    /// `None` once the subnet is used up.
    pub(super) fn assign(&mut self) -> Option<Ipv4Addr> {
        let size = 1u32 << (32 - self.prefix);
        while self.next < size - 1 {
            let ip = Ipv4Addr::from(self.base + self.next);
            self.next += 1;
            if Some(ip) != self.gateway {
                return Some(ip);
            }
        }
        None
    }
}

/// Creates the bridge network `name` with `labels` and a subnet named at its
/// creation; returns its id and the subnet's addresses. Where Docker reports
/// no IPv4 subnet, the network stays as Docker made it, with no addresses
/// (the nodes are then reached by their published ports only).
pub(super) async fn create_network(
    docker: &Docker,
    name: &str,
    labels: HashMap<String, String>,
) -> Result<(String, Option<Addresses>)> {
    let request = |ipam: Option<Ipam>| NetworkCreateRequest {
        name: name.to_string(),
        driver: Some("bridge".into()),
        labels: Some(labels.clone()),
        ipam,
        ..Default::default()
    };
    // Held to the end of the function: no other Gauntlet run creates a network
    // while this one's subnet is free between its two creations.
    let _lock = MachineLock::acquire(NETWORK_LOCK).await?;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let first = docker
            .create_network(request(None))
            .await
            .map_err(docker_err(format!("creating network {name}")))?;
        let inspected = docker
            .inspect_network(&first.id, None)
            .await
            .map_err(docker_err(format!("inspecting network {name}")))?;
        let chosen = inspected
            .ipam
            .and_then(|i| i.config)
            .unwrap_or_default()
            .into_iter()
            .find_map(|c| {
                let subnet = c.subnet?;
                let addrs = Addresses::new(&subnet, c.gateway.as_deref())?;
                Some((addrs, c.gateway))
            });
        let Some((addrs, gateway)) = chosen else {
            return Ok((first.id, None));
        };
        docker
            .remove_network(&first.id)
            .await
            .map_err(docker_err(format!(
                "removing network {name} to name its subnet"
            )))?;
        let ipam = Ipam {
            driver: Some("default".into()),
            config: Some(vec![IpamConfig {
                subnet: Some(addrs.subnet()),
                gateway,
                ..Default::default()
            }]),
            ..Default::default()
        };
        match docker.create_network(request(Some(ipam))).await {
            Ok(net) => return Ok((net.id, Some(addrs))),
            // Another network took the subnet in between: ask Docker again.
            Err(_) if attempt < ATTEMPTS => continue,
            Err(e) => {
                return Err(docker_err(format!(
                    "creating network {name} on subnet {}",
                    addrs.subnet()
                ))(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_skip_the_network_the_gateway_and_the_broadcast() {
        let mut a = Addresses::new("172.18.0.0/16", Some("172.18.0.1")).unwrap();
        assert_eq!(a.subnet(), "172.18.0.0/16");
        assert_eq!(a.assign(), Some(Ipv4Addr::new(172, 18, 0, 2)));
        assert_eq!(a.assign(), Some(Ipv4Addr::new(172, 18, 0, 3)));
        // A gateway elsewhere in the subnet is skipped where it falls.
        let mut b = Addresses::new("10.9.8.0/28", Some("10.9.8.3")).unwrap();
        let all: Vec<_> = std::iter::from_fn(|| b.assign()).collect();
        let want: Vec<_> = [2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]
            .map(|d| Ipv4Addr::new(10, 9, 8, d))
            .to_vec();
        // .0 is the network's, .1 left to Docker, .3 the gateway, .15 the broadcast.
        assert_eq!(all, want);
    }

    #[test]
    fn a_subnet_is_read_as_docker_writes_it_or_refused() {
        // A host part in the address is masked off.
        let a = Addresses::new("192.168.48.7/20", None).unwrap();
        assert_eq!(a.subnet(), "192.168.48.0/20");
        for bad in [
            "fd00::/64",
            "172.18.0.0",
            "172.18.0.0/30",
            "x/16",
            "10.0.0.0/4",
        ] {
            assert_eq!(Addresses::new(bad, None), None, "{bad}");
        }
    }
}
