//! What Gauntlet generates for the official images, against their documented
//! conventions.
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
        durability: Durability::default(),
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
        &"KAFKA_ADVERTISED_LISTENERS=EXTERNAL://127.0.0.1:45002,INTERNAL://n2:19092".to_string()
    ));
    let e = node(&c, 0).env;
    assert!(e.contains(
        &"KAFKA_ADVERTISED_LISTENERS=EXTERNAL://127.0.0.1:39001,INTERNAL://n1:19092".to_string()
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
