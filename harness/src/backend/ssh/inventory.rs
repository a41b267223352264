//! `hosts.toml`: the machines an SSH run may touch, and how the broker runs
//! on them. Nothing outside this file is ever reached; no password is read
//! from it or written to it (OpenSSH's agent or an identity file authenticate).
//!
//! ```toml
//! [[host]]
//! address = "10.0.0.11"       # required; n1 is the first host, n2 the second, ...
//! port = 22                   # default 22
//! user = "gauntlet"           # default: ssh's own (the user's ~/.ssh/config)
//! identity = "~/.ssh/gauntlet_ed25519"   # optional
//! known_hosts = "strict"      # "strict" (default) or "accept-new"
//! known_hosts_file = "/etc/gauntlet/known_hosts"   # optional; ssh's own by default
//! interface = "eth0"          # for netem; default eth0
//! sudo = false                # true: iptables, tc and kill through `sudo -n`
//!
//! [broker]
//! kind = "redis"
//! mode = "installed"          # or "install"
//! pid = "pgrep -x redis-server"   # installed: prints the broker's pid
//! start = "redis-server /etc/redis/redis.conf --daemonize yes"
//! log = "/var/log/redis/redis-server.log"
//! ports = { client = 6379 }
//! ```
//!
//! May import: `error` only.
use crate::error::{HarnessError, Result};
use gauntlet_workloads::BrokerKind;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// How strictly a host's key is checked (OpenSSH's `StrictHostKeyChecking`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KnownHosts {
    /// The host's key must already be in known_hosts (`yes`).
    #[default]
    Strict,
    /// A host seen for the first time is added; a changed key is refused
    /// (`accept-new`).
    AcceptNew,
}

impl KnownHosts {
    /// The value of OpenSSH's `StrictHostKeyChecking` option.
    pub fn ssh_option(self) -> &'static str {
        match self {
            KnownHosts::Strict => "yes",
            KnownHosts::AcceptNew => "accept-new",
        }
    }
}

/// One machine of the inventory.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// Address (IP or name) that SSH and the clients connect to.
    pub address: String,
    /// SSH port.
    #[serde(default = "default_port")]
    pub port: u16,
    /// Login user; ssh's own choice when absent.
    #[serde(default)]
    pub user: Option<String>,
    /// Identity file (`-i`); the agent or ssh's defaults when absent.
    #[serde(default)]
    pub identity: Option<PathBuf>,
    /// Host key policy.
    #[serde(default)]
    pub known_hosts: KnownHosts,
    /// The known_hosts file to check keys against; ssh's own when absent.
    #[serde(default)]
    pub known_hosts_file: Option<PathBuf>,
    /// The network interface netem delays on.
    #[serde(default = "default_interface")]
    pub interface: String,
    /// Run iptables, tc and kill through `sudo -n` (a login that is not root).
    #[serde(default)]
    pub sudo: bool,
}

fn default_port() -> u16 {
    22
}

fn default_interface() -> String {
    "eth0".into()
}

/// How the broker gets onto the hosts.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "mode", rename_all = "kebab-case", deny_unknown_fields)]
pub enum BrokerSetup {
    /// The broker already runs there; Gauntlet only finds, stops and starts it.
    Installed {
        /// The broker.
        kind: String,
        /// A command that prints the broker's pid (one line).
        pid: String,
        /// A command that starts the broker again after a kill.
        start: String,
        /// The broker's log file.
        log: String,
        /// Client ports by the recipe's port names (`client`, `amqp`, `kafka`, ...).
        ports: BTreeMap<String, u16>,
    },
    /// Gauntlet installs the broker from the distribution's packages, forms the
    /// cluster, and removes its data at teardown.
    Install {
        /// The broker.
        kind: String,
    },
}

/// `hosts.toml`, read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inventory {
    /// The hosts; the i-th is node n(i+1).
    pub hosts: Vec<Host>,
    /// The broker's kind.
    pub broker: BrokerKind,
    /// How it gets there.
    pub setup: BrokerSetup,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    host: Vec<Host>,
    broker: BrokerSetup,
}

impl Inventory {
    /// Reads `path`.
    pub fn read(path: &Path) -> Result<Inventory> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            HarnessError::Scenario(format!("reading the inventory {}: {e}", path.display()))
        })?;
        Inventory::parse(&text)
            .map_err(|e| HarnessError::Scenario(format!("{}: {e}", path.display())))
    }

    /// Parses an inventory; the error says what is wrong, and where.
    pub fn parse(text: &str) -> std::result::Result<Inventory, String> {
        // Refused by name before anything else: a secret must not sit in a file
        // Gauntlet reads (and copies into run folders).
        if let Ok(v) = text.parse::<toml::Table>() {
            let hosts = v.get("host").and_then(|h| h.as_array());
            for (i, h) in hosts.into_iter().flatten().enumerate() {
                if h.get("password").is_some() {
                    return Err(format!(
                        "host {} has a password: Gauntlet reads none; use an SSH agent or an identity file",
                        i + 1
                    ));
                }
            }
        }
        let f: File = toml::from_str(text).map_err(|e| e.to_string())?;
        if f.host.is_empty() {
            return Err("no [[host]]: name at least one".into());
        }
        for (i, h) in f.host.iter().enumerate() {
            if h.address.trim().is_empty() || h.address.contains(char::is_whitespace) {
                return Err(format!(
                    "host {}: address {:?} is not an address",
                    i + 1,
                    h.address
                ));
            }
        }
        for (i, h) in f.host.iter().enumerate() {
            if f.host[..i]
                .iter()
                .any(|o| o.address == h.address && o.port == h.port)
            {
                return Err(format!(
                    "host {} ({}:{}) is listed twice",
                    i + 1,
                    h.address,
                    h.port
                ));
            }
        }
        let kind = match &f.broker {
            BrokerSetup::Installed { kind, .. } | BrokerSetup::Install { kind } => kind,
        };
        let broker = BrokerKind::from_str(kind).map_err(|e| format!("[broker] kind: {e}"))?;
        if let BrokerSetup::Installed {
            pid, start, ports, ..
        } = &f.broker
        {
            if pid.trim().is_empty() || start.trim().is_empty() {
                return Err(
                    "[broker] mode = \"installed\" needs `pid` and `start` commands".into(),
                );
            }
            if ports.is_empty() {
                return Err(
                    "[broker] mode = \"installed\" needs `ports` (the client ports)".into(),
                );
            }
        }
        Ok(Inventory {
            hosts: f.host,
            broker,
            setup: f.broker,
        })
    }

    /// The node names, n1..nN, in the order of the hosts.
    pub fn nodes(&self) -> Vec<String> {
        (1..=self.hosts.len()).map(|i| format!("n{i}")).collect()
    }

    /// The host of node `name`.
    pub fn host(&self, name: &str) -> Option<&Host> {
        let i: usize = name.strip_prefix('n')?.parse().ok()?;
        self.hosts.get(i.checked_sub(1)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REDIS: &str = r#"
[[host]]
address = "10.0.0.11"
user = "gauntlet"
identity = "/home/me/.ssh/id"

[[host]]
address = "10.0.0.12"
port = 2222
known_hosts = "accept-new"

[broker]
kind = "redis"
mode = "installed"
pid = "pgrep -x redis-server"
start = "redis-server /etc/redis/redis.conf --daemonize yes"
log = "/var/log/redis/redis-server.log"
ports = { client = 6379 }
"#;

    #[test]
    fn an_installed_broker_on_two_hosts() {
        let inv = Inventory::parse(REDIS).expect("valid");
        assert_eq!(inv.broker, BrokerKind::Redis);
        assert_eq!(inv.nodes(), vec!["n1", "n2"]);
        let n1 = inv.host("n1").expect("n1");
        assert_eq!(
            (
                n1.port,
                n1.user.as_deref(),
                n1.known_hosts,
                n1.interface.as_str()
            ),
            (22, Some("gauntlet"), KnownHosts::Strict, "eth0")
        );
        let n2 = inv.host("n2").expect("n2");
        assert_eq!((n2.port, n2.known_hosts.ssh_option()), (2222, "accept-new"));
        assert!(inv.host("n3").is_none() && inv.host("n0").is_none() && inv.host("x").is_none());
        match &inv.setup {
            BrokerSetup::Installed { ports, .. } => assert_eq!(ports["client"], 6379),
            s => panic!("{s:?}"),
        }
    }

    #[test]
    fn install_mode_needs_only_the_kind() {
        let inv = Inventory::parse(
            "[[host]]\naddress = \"h1\"\n[broker]\nkind = \"rabbitmq\"\nmode = \"install\"\n",
        )
        .expect("valid");
        assert_eq!(inv.broker, BrokerKind::RabbitMq);
        assert_eq!(
            inv.setup,
            BrokerSetup::Install {
                kind: "rabbitmq".into()
            }
        );
    }

    #[test]
    fn bad_inventories_say_what_is_wrong() {
        let cases = [
            (
                REDIS.replace("user = \"gauntlet\"", "password = \"hunter2\""),
                "host 1 has a password",
            ),
            (
                "[broker]\nkind = \"redis\"\nmode = \"install\"\n".to_string(),
                "no [[host]]",
            ),
            (
                REDIS
                    .replace("10.0.0.12", "10.0.0.11")
                    .replace("port = 2222\n", ""),
                "listed twice",
            ),
            (
                REDIS.replace("kind = \"redis\"", "kind = \"kafak\""),
                "[broker] kind",
            ),
            (
                REDIS.replace("mode = \"installed\"", "mode = \"borrowed\""),
                "borrowed",
            ),
            (
                REDIS.replace("known_hosts = \"accept-new\"", "known_hosts = \"off\""),
                "off",
            ),
            (
                REDIS.replace("ports = { client = 6379 }", "ports = {}"),
                "needs `ports`",
            ),
            (REDIS.replace("port = 2222", "prot = 2222"), "prot"),
            (
                REDIS.replace("address = \"10.0.0.11\"", "address = \"\""),
                "not an address",
            ),
        ];
        for (text, want) in cases {
            let e = Inventory::parse(&text).expect_err(want);
            assert!(e.contains(want), "{want:?} not in {e:?}");
        }
    }
}
