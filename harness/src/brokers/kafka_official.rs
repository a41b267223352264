//! The official Kafka-protocol images, for users whose machine can pull them:
//! `--broker kafka --image apache/kafka:3.9` (Apache Kafka, KRaft) and
//! `--image redpandadata/redpanda:<tag>` (Redpanda). Both are `Flavour::Official`;
//! [`Convention::of_image`] tells them apart by name.
//!
//! No registry is reachable here, so nothing in this module has run against the real
//! images. The unit tests check what Gauntlet generates (command, environment,
//! probes) against the conventions the images document:
//!
//! - apache/kafka (JVM image, `docker/` in apache/kafka): properties come from
//!   `KAFKA_*` variables (`.` -> `_`, `_` -> `__`, `-` -> `___`); once any is given
//!   the packaged defaults are not used, so every KRaft setting is given (the
//!   combined-mode cluster example: node id, process roles, listeners, advertised
//!   listeners, protocol map, inter-broker and controller listener names, quorum
//!   voters, log dirs, replication factors of the internal topics); the `launch`
//!   script formats the log dirs with `CLUSTER_ID` (a 22-character base64url UUID)
//!   when `KAFKA_PROCESS_ROLES` is set. The image is eclipse-temurin on Alpine with
//!   Kafka's scripts in `/opt/kafka/bin`: no python3, no iptables.
//! - redpandadata/redpanda: the entry point runs `rpk` with the command's
//!   arguments, so the command is `redpanda start <flags>`, with the flags of the
//!   three-broker Docker Compose lab (named Kafka listeners, `--rpc-addr`,
//!   `--advertise-rpc-addr`, `--seeds` pointing at the first broker, `--smp`,
//!   `--memory`). With `developer_mode: true` (rpk's default configuration),
//!   `rpk redpanda start` applies the `dev-container` mode (`--unsafe-bypass-fsync`,
//!   `write_caching_default: true`) to every flag not given; Gauntlet gives
//!   `--unsafe-bypass-fsync=false` and `write_caching_default=false`, because a
//!   chaos test of durability must not run on a broker that skips fsync.
//!
//! Ports, for both: the client listener is 9092, the port published as `kafka`,
//! advertised to clients as [`ClusterContext::client_endpoint`] (the host port, or
//! the proxy in front of the node). Everything else stays on the run's network,
//! where nodes reach each other by name (n1..nN): an internal Kafka listener on
//! [`INTERNAL_PORT`] advertised as the node's name (brokers talk over it in Apache
//! Kafka; tools inside the nodes use it in both), the KRaft controller on
//! [`CONTROLLER_PORT`], Redpanda's RPC on [`RPC_PORT`].
use crate::broker::*;

/// The Kafka listener clients use: published on the host as `kafka`.
pub const CLIENT_PORT: u16 = 9092;
/// The Kafka listener on the run's network, advertised as the node's name.
pub const INTERNAL_PORT: u16 = 19092;
/// Apache Kafka's KRaft controller listener (the voters' port).
pub const CONTROLLER_PORT: u16 = 9093;
/// Redpanda's internal RPC port (its default).
pub const RPC_PORT: u16 = 33145;
/// The KRaft cluster id: a UUID in base64url without padding, 22 characters (the
/// 16 bytes `gauntlet-kraft01`). Each run's nodes are new, so one id serves all.
pub const CLUSTER_ID: &str = "Z2F1bnRsZXQta3JhZnQwMQ";
/// Apache Kafka's log directory: the data volume the image declares and gives to its
/// user (`appuser`); it survives a restart of the container and goes with it.
pub const KAFKA_LOG_DIRS: &str = "/var/lib/kafka/data";
/// Where the apache/kafka image keeps Kafka's scripts.
pub const KAFKA_BIN: &str = "/opt/kafka/bin";

/// Whose conventions an official Kafka-protocol image follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Convention {
    /// `apache/kafka` (the JVM image): configured through `KAFKA_*` variables.
    ApacheKafka,
    /// `redpandadata/redpanda`: configured through `redpanda start` flags.
    Redpanda,
}

impl Convention {
    /// An image whose name contains `redpanda` (`redpandadata/redpanda:v26.1.14`,
    /// `docker.redpanda.com/redpandadata/redpanda`) is Redpanda; any other is taken to
    /// be apache/kafka.
    pub fn of_image(image: &str) -> Self {
        if image.to_ascii_lowercase().contains("redpanda") {
            Convention::Redpanda
        } else {
            Convention::ApacheKafka
        }
    }
}

/// What a cluster of either official image can do. Both keep acknowledged data on
/// disk across a SIGKILL and restart and replicate it; neither image has iptables or
/// tc, so faults that need NET_ADMIN inside the node need Gauntlet's images.
pub fn capabilities() -> Capabilities {
    Capabilities {
        max_nodes: 9,
        durable_across_restart: true,
        replicated: true,
        transactions: true,
        process_faults: true,
        pause: true,
        net_admin_exec: false,
    }
}

/// How to start node `index` (0-based) of the deployment `ctx` plans.
pub fn node(ctx: &ClusterContext, index: usize) -> NodePlan {
    match Convention::of_image(&ctx.image) {
        Convention::ApacheKafka => apache_kafka_node(ctx, index),
        Convention::Redpanda => redpanda_node(ctx, index),
    }
}

/// When a node alone is up: its Kafka API answers on the internal listener, asked
/// with the image's own tool.
pub fn node_ready(ctx: &ClusterContext) -> Probe {
    let bootstrap = format!("127.0.0.1:{INTERNAL_PORT}");
    match Convention::of_image(&ctx.image) {
        Convention::ApacheKafka => Probe::exits_zero(Command::new(&[
            format!("{KAFKA_BIN}/kafka-broker-api-versions.sh"),
            "--bootstrap-server".into(),
            bootstrap,
        ])),
        Convention::Redpanda => Probe::exits_zero(Command::new(&[
            "rpk".into(),
            "cluster".into(),
            "info".into(),
            "-X".into(),
            format!("brokers={bootstrap}"),
        ])),
    }
}

/// The name of node `index`, which is also its hostname on the run's network.
fn name(ctx: &ClusterContext, index: usize) -> String {
    ctx.nodes
        .get(index)
        .cloned()
        .unwrap_or_else(|| format!("n{}", index + 1))
}

/// Where clients reach node `index`'s Kafka listener.
fn client_address(ctx: &ClusterContext, index: usize) -> String {
    let (host, port) = ctx
        .client_endpoint(index, "kafka")
        .unwrap_or_else(|| ("127.0.0.1".into(), CLIENT_PORT));
    format!("{host}:{port}")
}

/// Replicas of the internal topics (offsets, transaction state): Kafka's 3, or fewer
/// when the cluster is smaller.
fn internal_replicas(ctx: &ClusterContext) -> usize {
    ctx.len().clamp(1, 3)
}

/// apache/kafka: every node a KRaft controller and broker (combined mode), every
/// node a voter.
fn apache_kafka_node(ctx: &ClusterContext, index: usize) -> NodePlan {
    let voters: Vec<String> = (0..ctx.len().max(1))
        .map(|i| format!("{}@{}:{CONTROLLER_PORT}", i + 1, name(ctx, i)))
        .collect();
    let replicas = internal_replicas(ctx);
    NodePlan {
        entrypoint: None,
        cmd: Vec::new(),
        env: vec![
            format!("KAFKA_NODE_ID={}", index + 1),
            "KAFKA_PROCESS_ROLES=broker,controller".into(),
            format!(
                "KAFKA_LISTENERS=EXTERNAL://0.0.0.0:{CLIENT_PORT},INTERNAL://0.0.0.0:{INTERNAL_PORT},CONTROLLER://0.0.0.0:{CONTROLLER_PORT}"
            ),
            format!(
                "KAFKA_ADVERTISED_LISTENERS=EXTERNAL://{},INTERNAL://{}:{INTERNAL_PORT}",
                client_address(ctx, index),
                name(ctx, index)
            ),
            "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=EXTERNAL:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT".into(),
            "KAFKA_INTER_BROKER_LISTENER_NAME=INTERNAL".into(),
            "KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER".into(),
            format!("KAFKA_CONTROLLER_QUORUM_VOTERS={}", voters.join(",")),
            format!("KAFKA_LOG_DIRS={KAFKA_LOG_DIRS}"),
            format!("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR={replicas}"),
            format!("KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR={replicas}"),
            format!(
                "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR={}",
                replicas.saturating_sub(1).max(1)
            ),
            "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0".into(),
            format!("CLUSTER_ID={CLUSTER_ID}"),
        ],
        user: None,
    }
}

/// redpandadata/redpanda: `redpanda start` (run by the image's `rpk` entry point);
/// the first node starts the cluster, the others join it through it.
fn redpanda_node(ctx: &ClusterContext, index: usize) -> NodePlan {
    let me = name(ctx, index);
    let mut cmd: Vec<String> = vec![
        "redpanda".into(),
        "start".into(),
        "--node-id".into(),
        (index + 1).to_string(),
        "--kafka-addr".into(),
        format!("internal://0.0.0.0:{INTERNAL_PORT},external://0.0.0.0:{CLIENT_PORT}"),
        "--advertise-kafka-addr".into(),
        format!(
            "internal://{me}:{INTERNAL_PORT},external://{}",
            client_address(ctx, index)
        ),
        "--rpc-addr".into(),
        format!("0.0.0.0:{RPC_PORT}"),
        "--advertise-rpc-addr".into(),
        format!("{me}:{RPC_PORT}"),
    ];
    if index > 0 {
        cmd.push("--seeds".into());
        cmd.push(format!("{}:{RPC_PORT}", name(ctx, 0)));
    }
    cmd.extend(
        [
            "--smp",
            "1",
            "--memory",
            "1G",
            "--reserve-memory",
            "0M",
            "--overprovisioned",
            "--check=false",
            "--unsafe-bypass-fsync=false",
            "--set",
            "redpanda.write_caching_default=false",
            "--default-log-level=info",
        ]
        .map(String::from),
    );
    NodePlan {
        entrypoint: None,
        cmd,
        env: Vec::new(),
        user: None,
    }
}

/// The awk program that turns what the official images' tools print about a
/// coordinator into the line the Python probe prints, `19092 <node id> <host>
/// 19092` (the internal listener, whose host is the node's name). It reads:
/// `kafka-consumer-groups.sh --describe --state` (`<group> <host>:<port> (<id>) ...`),
/// `kafka-transactions.sh describe` and `rpk cluster txn describe` (a row whose
/// second field is the transactional id `t` and whose first is the coordinator's
/// id), and `rpk group describe -s` (`COORDINATOR-NODE <id>`, `COORDINATOR <id>` in
/// older rpk). Node `k` is `nk` in both official plans. Exits 1 when nothing names
/// a coordinator.
pub const COORDINATOR_AWK: &str = r#"{
  for (i = 1; i < NF; i++)
    if ($(i + 1) ~ /^\([0-9]+\)$/ && $i ~ /:[0-9]+$/) {
      h = $i; sub(/:[0-9]+$/, "", h); id = $(i + 1); gsub(/[()]/, "", id)
      print "19092", id, h, "19092"; found = 1; exit
    }
  if (($1 == "COORDINATOR" || $1 == "COORDINATOR-NODE") && $2 ~ /^[0-9]+$/) {
    print "19092", $2, "n" $2, "19092"; found = 1; exit
  }
  if (t != "" && $2 == t && $1 ~ /^[0-9]+$/) {
    print "19092", $1, "n" $1, "19092"; found = 1; exit
  }
}
END { exit !found }"#;

/// The shell script behind [`coordinator_command`]: `$1` is the Python probe, `$2`
/// the key type (0 group, 1 transactional id).
const COORDINATOR_SH: &str = r#"if command -v python3 >/dev/null 2>&1; then exec python3 -c "$1" "$2"; fi
b=127.0.0.1:19092
t=
if [ "$2" = 1 ]; then t=$GAUNTLET_TXN_ID; fi
if [ -x /opt/kafka/bin/kafka-transactions.sh ]; then
  if [ "$2" = 1 ]; then /opt/kafka/bin/kafka-transactions.sh --bootstrap-server "$b" describe --transactional-id "$GAUNTLET_TXN_ID"
  else /opt/kafka/bin/kafka-consumer-groups.sh --bootstrap-server "$b" --describe --group "$GAUNTLET_GROUP" --state; fi
elif command -v rpk >/dev/null 2>&1; then
  if [ "$2" = 1 ]; then rpk cluster txn describe -X brokers="$b" "$GAUNTLET_TXN_ID"
  else rpk group describe -s -X brokers="$b" "$GAUNTLET_GROUP"; fi
else
  echo "no python3, Kafka scripts or rpk in this node" >&2
fi | awk -v t="$t" "$3""#;

/// A coordinator probe that runs in every Kafka image Gauntlet plans for, for the
/// role probe of the Kafka recipe (the official images have no python3). It runs
/// `python_probe` (the FindCoordinator request, printing `<listener port> <node id>
/// <host> <port>`) where python3 exists, as in Gauntlet's image; elsewhere it asks
/// the image's own tools (`kafka-consumer-groups.sh` / `kafka-transactions.sh` in
/// apache/kafka, `rpk` in Redpanda) on the internal listener and prints the same
/// line through [`COORDINATOR_AWK`]. `key_type`: "0" for the group in
/// `GAUNTLET_GROUP`, "1" for the transactional id in `GAUNTLET_TXN_ID`.
pub fn coordinator_command(python_probe: &str, key_type: &str) -> Command {
    Command::new(&[
        "sh",
        "-c",
        COORDINATOR_SH,
        "gauntlet-role",
        python_probe,
        key_type,
        COORDINATOR_AWK,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const APACHE: &str = "apache/kafka:3.9";
    /// The tag the Redpanda documentation names as current (26.1 docs).
    const REDPANDA: &str = "redpandadata/redpanda:v26.1.14";

    /// A context as the Docker backend builds it: nodes n1..nN, each with its
    /// `kafka` port published on 127.0.0.1, ports 39001, 39002, ...
    fn ctx(image: &str, nodes: usize) -> ClusterContext {
        ClusterContext {
            nodes: (1..=nodes).map(|i| format!("n{i}")).collect(),
            host_endpoints: (0..nodes)
                .map(|i| BTreeMap::from([("kafka", ("127.0.0.1".to_string(), 39001 + i as u16))]))
                .collect(),
            client_endpoints: vec![BTreeMap::new(); nodes],
            flavour: ImageRef::named(image).flavour,
            secret: "gauntletcookie1".into(),
            image: image.into(),
            storage: None,
        }
    }

    fn env(plan: &NodePlan) -> Vec<&str> {
        plan.env.iter().map(String::as_str).collect()
    }

    #[test]
    fn the_images_are_official_and_told_apart_by_name() {
        for image in [
            APACHE,
            REDPANDA,
            "docker.redpanda.com/redpandadata/redpanda:v26.1.14",
        ] {
            assert_eq!(ImageRef::named(image).flavour, Flavour::Official, "{image}");
        }
        assert_eq!(Convention::of_image(APACHE), Convention::ApacheKafka);
        assert_eq!(
            Convention::of_image("apache/kafka:latest"),
            Convention::ApacheKafka
        );
        assert_eq!(Convention::of_image(REDPANDA), Convention::Redpanda);
        assert_eq!(
            Convention::of_image("docker.redpanda.com/redpandadata/redpanda:v26.1.14"),
            Convention::Redpanda
        );
    }

    #[test]
    fn apache_kafka_one_node() {
        let c = ctx(APACHE, 1);
        let plan = node(&c, 0);
        assert_eq!(plan.entrypoint, None, "the image's own entry point runs");
        assert!(
            plan.cmd.is_empty(),
            "and its own command (/etc/kafka/docker/run)"
        );
        assert_eq!(plan.user, None);
        assert_eq!(
            env(&plan),
            [
                "KAFKA_NODE_ID=1",
                "KAFKA_PROCESS_ROLES=broker,controller",
                "KAFKA_LISTENERS=EXTERNAL://0.0.0.0:9092,INTERNAL://0.0.0.0:19092,CONTROLLER://0.0.0.0:9093",
                "KAFKA_ADVERTISED_LISTENERS=EXTERNAL://127.0.0.1:39001,INTERNAL://n1:19092",
                "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=EXTERNAL:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
                "KAFKA_INTER_BROKER_LISTENER_NAME=INTERNAL",
                "KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
                "KAFKA_CONTROLLER_QUORUM_VOTERS=1@n1:9093",
                "KAFKA_LOG_DIRS=/var/lib/kafka/data",
                "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR=1",
                "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR=1",
                "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR=1",
                "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0",
                "CLUSTER_ID=Z2F1bnRsZXQta3JhZnQwMQ",
            ]
        );
    }

    #[test]
    fn apache_kafka_three_nodes() {
        let c = ctx(APACHE, 3);
        for i in 0..3 {
            let plan = node(&c, i);
            let e = env(&plan);
            let n = i + 1;
            assert_eq!(e[0], format!("KAFKA_NODE_ID={n}"));
            assert!(e.contains(&"KAFKA_CONTROLLER_QUORUM_VOTERS=1@n1:9093,2@n2:9093,3@n3:9093"));
            let advertised = format!(
                "KAFKA_ADVERTISED_LISTENERS=EXTERNAL://127.0.0.1:{},INTERNAL://n{n}:19092",
                39000 + n
            );
            assert!(e.contains(&advertised.as_str()), "{e:?}");
            for fixed in [
                "KAFKA_PROCESS_ROLES=broker,controller",
                "KAFKA_INTER_BROKER_LISTENER_NAME=INTERNAL",
                "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR=3",
                "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR=3",
                "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR=2",
                "CLUSTER_ID=Z2F1bnRsZXQta3JhZnQwMQ",
            ] {
                assert!(e.contains(&fixed), "{fixed} missing from node {n}");
            }
        }
        // Five nodes: every node votes, the internal topics stay at Kafka's 3.
        let c = ctx(APACHE, 5);
        let e = node(&c, 4).env;
        assert!(e.contains(&"KAFKA_NODE_ID=5".to_string()));
        assert!(e.contains(
            &"KAFKA_CONTROLLER_QUORUM_VOTERS=1@n1:9093,2@n2:9093,3@n3:9093,4@n4:9093,5@n5:9093"
                .to_string()
        ));
        assert!(e.contains(&"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR=3".to_string()));
    }

    #[test]
    fn apache_kafka_env_names_the_properties_it_means() {
        // The image maps KAFKA_X_Y to x.y (and `__` to `_`, `___` to `-`); every
        // variable here is one of these properties, or the image's CLUSTER_ID.
        let c = ctx(APACHE, 3);
        let props: Vec<String> = node(&c, 0)
            .env
            .iter()
            .filter_map(|kv| kv.split_once('='))
            .filter_map(|(k, _)| k.strip_prefix("KAFKA_"))
            .map(|k| {
                k.to_ascii_lowercase()
                    .replace("___", "-")
                    .replace("__", "\u{0}")
                    .replace('_', ".")
                    .replace('\u{0}', "_")
            })
            .collect();
        assert_eq!(
            props,
            [
                "node.id",
                "process.roles",
                "listeners",
                "advertised.listeners",
                "listener.security.protocol.map",
                "inter.broker.listener.name",
                "controller.listener.names",
                "controller.quorum.voters",
                "log.dirs",
                "offsets.topic.replication.factor",
                "transaction.state.log.replication.factor",
                "transaction.state.log.min.isr",
                "group.initial.rebalance.delay.ms",
            ]
        );
        // Every listener has a protocol, the controller is not advertised (clients do
        // not talk to controllers), and the advertised ones are names, not 0.0.0.0.
        let get = |k: &str| {
            node(&c, 0)
                .env
                .iter()
                .find_map(|kv| kv.strip_prefix(&format!("{k}=")).map(str::to_string))
                .unwrap_or_default()
        };
        let names = |v: String| -> Vec<String> {
            v.split(',')
                .filter_map(|l| l.split_once(':').map(|(n, _)| n.to_string()))
                .collect()
        };
        assert_eq!(
            names(get("KAFKA_LISTENERS")),
            names(get("KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"))
        );
        let advertised = get("KAFKA_ADVERTISED_LISTENERS");
        assert!(!advertised.contains("CONTROLLER") && !advertised.contains("0.0.0.0"));
    }

    #[test]
    fn the_cluster_id_is_a_kraft_uuid() {
        // Kafka's Uuid.fromString: base64url, no padding, 16 bytes.
        fn b64url(c: u8) -> Option<u32> {
            match c {
                b'A'..=b'Z' => Some((c - b'A') as u32),
                b'a'..=b'z' => Some((c - b'a') as u32 + 26),
                b'0'..=b'9' => Some((c - b'0') as u32 + 52),
                b'-' => Some(62),
                b'_' => Some(63),
                _ => None,
            }
        }
        assert_eq!(CLUSTER_ID.len(), 22);
        let mut bits = 0u32;
        let mut n = 0;
        let mut bytes = Vec::new();
        for c in CLUSTER_ID.bytes() {
            let v = b64url(c).expect("base64url alphabet");
            bits = (bits << 6) | v;
            n += 6;
            if n >= 8 {
                n -= 8;
                bytes.push((bits >> n) as u8);
                bits &= (1 << n) - 1;
            }
        }
        assert_eq!(bits, 0, "canonical: the 4 bits left over are zero");
        assert_eq!(bytes, b"gauntlet-kraft01");
    }

    #[test]
    fn apache_kafka_advertises_the_proxy_when_the_run_has_one() {
        let mut c = ctx(APACHE, 3);
        c.client_endpoints[1].insert("kafka", ("127.0.0.1".into(), 45002));
        let e = node(&c, 1).env;
        assert!(e.contains(
            &"KAFKA_ADVERTISED_LISTENERS=EXTERNAL://127.0.0.1:45002,INTERNAL://n2:19092"
                .to_string()
        ));
        let e = node(&c, 0).env;
        assert!(e.contains(
            &"KAFKA_ADVERTISED_LISTENERS=EXTERNAL://127.0.0.1:39001,INTERNAL://n1:19092"
                .to_string()
        ));
    }

    /// What every Redpanda node gets after its addresses and seeds.
    const REDPANDA_TAIL: [&str; 12] = [
        "--smp",
        "1",
        "--memory",
        "1G",
        "--reserve-memory",
        "0M",
        "--overprovisioned",
        "--check=false",
        "--unsafe-bypass-fsync=false",
        "--set",
        "redpanda.write_caching_default=false",
        "--default-log-level=info",
    ];

    #[test]
    fn redpanda_one_node() {
        let c = ctx(REDPANDA, 1);
        let plan = node(&c, 0);
        assert_eq!(plan.entrypoint, None, "the image's entry point runs rpk");
        assert!(plan.env.is_empty());
        assert_eq!(plan.user, None);
        let mut want = vec![
            "redpanda",
            "start",
            "--node-id",
            "1",
            "--kafka-addr",
            "internal://0.0.0.0:19092,external://0.0.0.0:9092",
            "--advertise-kafka-addr",
            "internal://n1:19092,external://127.0.0.1:39001",
            "--rpc-addr",
            "0.0.0.0:33145",
            "--advertise-rpc-addr",
            "n1:33145",
        ];
        want.extend(REDPANDA_TAIL);
        assert_eq!(plan.cmd, want);
    }

    #[test]
    fn redpanda_three_nodes() {
        let c = ctx(REDPANDA, 3);
        for i in 0..3 {
            let n = i + 1;
            let mut want: Vec<String> = [
                "redpanda".to_string(),
                "start".into(),
                "--node-id".into(),
                n.to_string(),
                "--kafka-addr".into(),
                "internal://0.0.0.0:19092,external://0.0.0.0:9092".into(),
                "--advertise-kafka-addr".into(),
                format!("internal://n{n}:19092,external://127.0.0.1:{}", 39000 + n),
                "--rpc-addr".into(),
                "0.0.0.0:33145".into(),
                "--advertise-rpc-addr".into(),
                format!("n{n}:33145"),
            ]
            .to_vec();
            // n1 starts the cluster (no seeds); the others join through it.
            if i > 0 {
                want.extend(["--seeds".to_string(), "n1:33145".into()]);
            }
            want.extend(REDPANDA_TAIL.map(String::from));
            assert_eq!(node(&c, i).cmd, want, "node n{n}");
        }
    }

    #[test]
    fn redpanda_never_skips_fsync() {
        // The image's dev-container defaults apply only to flags not given.
        let cmd = node(&ctx(REDPANDA, 3), 2).cmd;
        assert!(cmd.iter().any(|a| a == "--unsafe-bypass-fsync=false"));
        assert!(!cmd.iter().any(|a| a == "--mode" || a == "dev-container"));
        let set = cmd.iter().position(|a| a == "--set").expect("--set");
        assert_eq!(cmd[set + 1], "redpanda.write_caching_default=false");
    }

    #[test]
    fn readiness_asks_the_image_own_tool_on_the_internal_listener() {
        assert_eq!(
            node_ready(&ctx(APACHE, 3)),
            Probe::exits_zero(Command::new(&[
                "/opt/kafka/bin/kafka-broker-api-versions.sh",
                "--bootstrap-server",
                "127.0.0.1:19092",
            ]))
        );
        assert_eq!(
            node_ready(&ctx(REDPANDA, 3)),
            Probe::exits_zero(Command::new(&[
                "rpk",
                "cluster",
                "info",
                "-X",
                "brokers=127.0.0.1:19092",
            ]))
        );
        // Neither asks python3, which neither image has.
        for image in [APACHE, REDPANDA] {
            let Probe::Exec { command, .. } = node_ready(&ctx(image, 1)) else {
                panic!("an exec probe");
            };
            assert!(!command.argv.iter().any(|a| a.contains("python")));
        }
    }

    #[test]
    fn capabilities_say_what_the_official_images_offer() {
        let caps = capabilities();
        assert!(caps.durable_across_restart && caps.replicated && caps.transactions);
        assert!(caps.process_faults);
        assert!(!caps.net_admin_exec, "no iptables or tc in either image");
        assert_eq!(caps.max_nodes, 9);
    }

    #[test]
    fn the_coordinator_command_runs_anywhere_python3_or_not() {
        let c = coordinator_command("print(1)", "1");
        assert_eq!(c.argv[..2], ["sh", "-c"]);
        assert_eq!(
            c.argv[3..],
            ["gauntlet-role", "print(1)", "1", COORDINATOR_AWK]
        );
        let script = &c.argv[2];
        for tool in [
            "exec python3 -c \"$1\" \"$2\"",
            "/opt/kafka/bin/kafka-consumer-groups.sh --bootstrap-server \"$b\" --describe --group \"$GAUNTLET_GROUP\" --state",
            "/opt/kafka/bin/kafka-transactions.sh --bootstrap-server \"$b\" describe --transactional-id \"$GAUNTLET_TXN_ID\"",
            "rpk group describe -s -X brokers=\"$b\" \"$GAUNTLET_GROUP\"",
            "rpk cluster txn describe -X brokers=\"$b\" \"$GAUNTLET_TXN_ID\"",
        ] {
            assert!(script.contains(tool), "{tool}");
        }
    }

    /// Runs the awk program on `input` the way the script does; (stdout, success).
    fn awk(t: &str, input: &str) -> (String, bool) {
        use std::io::Write;
        let mut child = std::process::Command::new("awk")
            .args(["-v", &format!("t={t}"), COORDINATOR_AWK])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("awk runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write");
        let out = child.wait_with_output().expect("awk ends");
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            out.status.success(),
        )
    }

    #[test]
    fn the_tools_answers_become_the_probe_line() {
        // kafka-consumer-groups.sh --describe --state (host:port (id), over the
        // internal listener: the host is the node's name).
        let groups = "\nGROUP           COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE           #MEMBERS\n\
                      gauntlet.g1     n2:19092 (2)              range                Stable          2\n";
        assert_eq!(awk("", groups), ("19092 2 n2 19092\n".into(), true));
        // kafka-transactions.sh describe.
        let txn = "CoordinatorId\tTransactionalId\tProducerId\tProducerEpoch\tTransactionState\tTransactionTimeoutMs\tCurrentTransactionStartTimeMs\tTransactionDurationMs\tTopicPartitions\n\
                   3\tgauntlet-txn\t1000\t0\tOngoing\t60000\t1764740000000\t120\tt-0\n";
        assert_eq!(
            awk("gauntlet-txn", txn),
            ("19092 3 n3 19092\n".into(), true)
        );
        // rpk group describe -s (COORDINATOR-NODE; COORDINATOR in older rpk).
        let rpk_group = "GROUP                  gauntlet.g1\nCOORDINATOR-NODE       1\n\
                         COORDINATOR-PARTITION  __consumer_offsets/7\nSTATE                  Stable\n";
        assert_eq!(awk("", rpk_group), ("19092 1 n1 19092\n".into(), true));
        let old = "GROUP        gauntlet.g1\nCOORDINATOR  3\nSTATE        Stable\n";
        assert_eq!(awk("", old), ("19092 3 n3 19092\n".into(), true));
        // rpk cluster txn describe.
        let rpk_txn = "COORDINATOR  TRANSACTIONAL-ID  PRODUCER-ID  PRODUCER-EPOCH  STATE    START-TIMESTAMP  TIMEOUT  TOPICS\n\
                       2            gauntlet-txn      3            0               Ongoing  -                1m0s     t\n";
        assert_eq!(
            awk("gauntlet-txn", rpk_txn),
            ("19092 2 n2 19092\n".into(), true)
        );
        // Nothing named: no line, a failure (the role probe asks the next node).
        assert_eq!(
            awk("", "Consumer group 'gauntlet.g1' does not exist.\n"),
            (String::new(), false)
        );
        assert_eq!(awk("gauntlet-txn", ""), (String::new(), false));
        // A group row with no coordinator yet (id -1) names nothing.
        let none = "GROUP COORDINATOR (ID)\ngauntlet.g1 n2:19092 (-1) range Stable 0\n";
        assert_eq!(awk("", none), (String::new(), false));
    }
}
