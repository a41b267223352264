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
//!
//! May import: `broker` only (its tests: `brokers`' other recipes).
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
mod tests;
