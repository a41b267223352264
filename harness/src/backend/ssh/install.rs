//! `mode = "install"`: Gauntlet installs the broker on the hosts from the
//! distribution's packages, writes its configuration under `/etc/gauntlet/`,
//! starts it, and at teardown stops it and removes its data, configuration and
//! log (the package stays), as Jepsen's `db` setup does. NATS JetStream only,
//! so far.
//!
//! May import: this backend's commands and inventory, `broker` (the recipes'
//! probes).
use super::commands::quote;
use super::inventory::Inventory;
use crate::broker::{BrokerKind, Probe};
use std::collections::BTreeMap;

/// How Gauntlet installs, runs and removes one broker on a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallPlan {
    /// Installs the package when the broker's program is missing.
    pub install: String,
    /// Writes the node's configuration.
    pub configure: String,
    /// Starts the broker in the background, detached from the SSH session.
    pub start: String,
    /// Prints the broker's pid.
    pub pid: String,
    /// The broker's log.
    pub log: String,
    /// Stops it and removes what Gauntlet wrote (data, configuration, log).
    pub remove: String,
    /// Client ports by the recipe's port names.
    pub ports: BTreeMap<String, u16>,
}

const NATS_CONF: &str = "/etc/gauntlet/nats-server.conf";
const NATS_DATA: &str = "/var/lib/gauntlet/nats";
const NATS_LOG: &str = "/var/log/gauntlet/nats-server.log";

/// The plan for node `index` (0-based) of `inventory`, or `None` when Gauntlet
/// cannot install this broker yet.
pub fn plan(inventory: &Inventory, index: usize) -> Option<InstallPlan> {
    match inventory.broker {
        BrokerKind::Nats => Some(nats(inventory, index)),
        _ => None,
    }
}

/// What the cluster Gauntlet installed must show before the run starts, per
/// node index: NATS routes to every other node (counted: Debian's 2.9 names
/// no peer in `/routez`), then a healthy JetStream (`/healthz`, which needs
/// a meta leader).
pub fn cluster_probes(inventory: &Inventory) -> Vec<(usize, Probe)> {
    let n = inventory.hosts.len();
    match inventory.broker {
        BrokerKind::Nats if n > 1 => (0..n)
            .flat_map(|i| {
                [
                    (
                        i,
                        Probe::http(
                            "monitor",
                            "/routez",
                            Some(&format!("\"num_routes\": {}", n - 1)),
                        ),
                    ),
                    (i, Probe::http("monitor", "/healthz", None)),
                ]
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The brokers `mode = "install"` supports.
pub const SUPPORTED: &[BrokerKind] = &[BrokerKind::Nats];

fn apt_install(package: &str, program: &str) -> String {
    format!(
        "command -v {program} >/dev/null || {{ apt-cache show {package} >/dev/null 2>&1 || apt-get update -q; \
         DEBIAN_FRONTEND=noninteractive apt-get install -y -q {package}; }}"
    )
}

fn nats(inventory: &Inventory, index: usize) -> InstallPlan {
    let routes: Vec<String> = inventory
        .hosts
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != index)
        .map(|(_, h)| format!("nats://{}:6222", h.address))
        .collect();
    let mut conf = format!(
        "server_name: n{}\nlisten: 0.0.0.0:4222\nhttp: 0.0.0.0:8222\njetstream {{ store_dir: \"{NATS_DATA}\" }}\n",
        index + 1
    );
    if !routes.is_empty() {
        conf.push_str(&format!(
            "cluster {{ name: gauntlet, listen: 0.0.0.0:6222, routes: [{}] }}\n",
            routes.join(", ")
        ));
    }
    InstallPlan {
        install: apt_install("nats-server", "nats-server"),
        configure: format!(
            "install -d /etc/gauntlet {NATS_DATA} /var/log/gauntlet && printf '%s' {} > {NATS_CONF}",
            quote(&conf)
        ),
        start: format!(
            "setsid nats-server -c {NATS_CONF} -l {NATS_LOG} </dev/null >/dev/null 2>&1 &"
        ),
        pid: format!("pgrep -f '^nats-server -c {NATS_CONF}'"),
        log: NATS_LOG.into(),
        remove: format!(
            "pkill -KILL -f '^nats-server -c {NATS_CONF}'; rm -rf {NATS_DATA} {NATS_CONF} {NATS_LOG}; rmdir /etc/gauntlet /var/lib/gauntlet /var/log/gauntlet 2>/dev/null; true"
        ),
        ports: BTreeMap::from([("client".to_string(), 4222), ("monitor".to_string(), 8222)]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nats_nodes_route_to_each_other_by_the_inventorys_addresses() {
        let inv = Inventory::parse(
            "[[host]]\naddress = \"10.0.0.1\"\n[[host]]\naddress = \"10.0.0.2\"\n[[host]]\naddress = \"10.0.0.3\"\n\
             [broker]\nkind = \"nats\"\nmode = \"install\"\n",
        )
        .expect("inventory");
        let p = plan(&inv, 1).expect("nats");
        assert!(p.configure.contains("server_name: n2"), "{}", p.configure);
        assert!(
            p.configure
                .contains("routes: [nats://10.0.0.1:6222, nats://10.0.0.3:6222]"),
            "{}",
            p.configure
        );
        assert!(p.install.contains("apt-get install -y -q nats-server"));
        assert_eq!(p.ports["client"], 4222);
        for s in [&p.install, &p.configure, &p.start, &p.pid, &p.remove] {
            let out = std::process::Command::new("sh")
                .args(["-n", "-c", s])
                .output()
                .expect("sh");
            assert!(out.status.success(), "{s}");
        }
        let redis = Inventory::parse(
            "[[host]]\naddress = \"h\"\n[broker]\nkind = \"redis\"\nmode = \"install\"\n",
        )
        .expect("inventory");
        assert!(plan(&redis, 0).is_none());
    }
}
