//! The Kafka-protocol broker (tansu in Gauntlet's image) with rdkafka: the durable
//! cluster (three brokers on PostgreSQL, the default) and the memory build (one
//! node, by its image name). `kafka_semantics_of_the_local_build` (memory) and
//! `kafka_semantics_of_the_durable_cluster` measure which Kafka semantics each
//! honours and print the table that docs/brokers.md records.
use crate::common;
use gauntlet_harness::backend::docker::{self, DockerDeployment};
use gauntlet_harness::backend::ClusterSpec;
use gauntlet_harness::broker::BrokerExt;
use gauntlet_harness::brokers::kafka::MEMORY_IMAGE;
use gauntlet_harness::{BrokerKind, Deployment, NodeControl, RunId};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{CommitMode, Consumer, StreamConsumer};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::{ClientConfig, Message};
use std::time::Duration;

fn config(bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("socket.timeout.ms", "10000")
        .set("message.timeout.ms", "20000");
    c
}

async fn create_topic(bootstrap: &str, topic: &str) -> Result<(), String> {
    let admin: AdminClient<DefaultClientContext> =
        config(bootstrap).create().map_err(|e| e.to_string())?;
    let res = admin
        .create_topics(
            &[NewTopic::new(topic, 1, TopicReplication::Fixed(1))],
            &AdminOptions::new(),
        )
        .await
        .map_err(|e| e.to_string())?;
    for r in res {
        match r {
            Ok(_) => {}
            Err((_, rdkafka::types::RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((t, code)) => return Err(format!("create {t}: {code:?}")),
        }
    }
    Ok(())
}

async fn produce(p: &FutureProducer, topic: &str, body: &str) -> Result<i64, String> {
    p.send(
        FutureRecord::to(topic).key("k").payload(body),
        Duration::from_secs(20),
    )
    .await
    .map(|d| d.offset)
    .map_err(|(e, _)| e.to_string())
}

fn consumer(bootstrap: &str, group: &str, extra: &[(&str, &str)]) -> StreamConsumer {
    let mut c = config(bootstrap);
    c.set("group.id", group)
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .set("session.timeout.ms", "10000");
    for (k, v) in extra {
        c.set(*k, *v);
    }
    c.create().expect("consumer config")
}

/// Receive until `want` messages arrived or `within` passed.
async fn receive(c: &StreamConsumer, want: usize, within: Duration) -> Vec<String> {
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + within;
    while got.len() < want {
        match tokio::time::timeout_at(deadline, c.recv()).await {
            Ok(Ok(m)) => {
                got.push(String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned())
            }
            Ok(Err(e)) => eprintln!("recv: {e}"),
            Err(_) => break,
        }
    }
    got
}

fn producer(bootstrap: &str, extra: &[(&str, &str)]) -> FutureProducer {
    let mut c = config(bootstrap);
    c.set("acks", "all");
    for (k, v) in extra {
        c.set(*k, *v);
    }
    c.create().expect("producer config")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_build_round_trip_and_restart_forgets() {
    let dep = common::launch_image(BrokerKind::Kafka, None, Some(MEMORY_IMAGE)).await;
    assert_eq!(dep.nodes(), vec!["n1".to_string()]);
    assert!(dep.storage_node().is_none());
    let bootstrap = dep.addrs("kafka").join(",");
    common::retry("create topic", Duration::from_secs(60), || {
        create_topic(&bootstrap, "it")
    })
    .await;
    let p = producer(&bootstrap, &[]);
    common::retry("produce m1", Duration::from_secs(30), || {
        produce(&p, "it", "m1")
    })
    .await;
    let c = consumer(&bootstrap, "it-group", &[]);
    c.subscribe(&["it"]).expect("subscribe");
    assert_eq!(receive(&c, 1, Duration::from_secs(60)).await, vec!["m1"]);
    drop(c);
    drop(p);

    // Memory storage: the restarted node starts empty (see docs/brokers.md).
    common::kill_and_restart(&dep, "n1").await;
    common::retry("create topic again", Duration::from_secs(60), || {
        create_topic(&bootstrap, "it")
    })
    .await;
    let p = producer(&bootstrap, &[]);
    common::retry("produce m2", Duration::from_secs(30), || {
        produce(&p, "it", "m2")
    })
    .await;
    let c = consumer(&bootstrap, "it-group-2", &[]);
    c.subscribe(&["it"]).expect("subscribe");
    let got = receive(&c, 1, Duration::from_secs(60)).await;
    assert_eq!(got.last().map(String::as_str), Some("m2"), "got {got:?}");
    drop(c);
    drop(p);
    common::teardown(dep).await;
}

/// Transactions and read_committed, as rows of a semantics table: an aborted and
/// a committed transaction on `topic`, then what a read_committed consumer (group
/// `<group>-rc`) and a read_uncommitted one (`<group>-ru`) get.
async fn txn_probe(
    bs: &str,
    topic: &str,
    txn_id: &str,
    group: &str,
    table: &mut Vec<(&str, String)>,
) {
    create_topic(bs, topic).await.expect("create the txn topic");
    let pt = producer(
        bs,
        &[("transactional.id", txn_id), ("enable.idempotence", "true")],
    );
    let txn = async {
        pt.init_transactions(Duration::from_secs(20))
            .map_err(|e| format!("init: {e}"))?;
        pt.begin_transaction().map_err(|e| format!("begin: {e}"))?;
        produce(&pt, topic, "aborted").await?;
        pt.abort_transaction(Duration::from_secs(20))
            .map_err(|e| format!("abort: {e}"))?;
        pt.begin_transaction().map_err(|e| format!("begin: {e}"))?;
        produce(&pt, topic, "committed").await?;
        pt.commit_transaction(Duration::from_secs(20))
            .map_err(|e| format!("commit: {e}"))?;
        Ok::<_, String>(())
    }
    .await;
    table.push((
        "transactions (init/abort/commit)",
        match &txn {
            Ok(()) => "ok".into(),
            Err(e) => format!("error: {e}"),
        },
    ));
    if txn.is_err() {
        table.push((
            "read_committed hides aborted",
            "untested (no transactions)".into(),
        ));
        return;
    }
    for (level, suffix, row) in [
        ("read_committed", "rc", "read_committed hides aborted"),
        ("read_uncommitted", "ru", "read_uncommitted sees aborted"),
    ] {
        let c = consumer(
            bs,
            &format!("{group}-{suffix}"),
            &[("isolation.level", level)],
        );
        c.subscribe(&[topic]).expect("subscribe");
        let got = receive(&c, 2, Duration::from_secs(20)).await;
        table.push((row, format!("{level} consumer got {got:?}")));
    }
}

/// Measures, does not judge: prints one line per semantic. Fails only if the basics
/// (acks=all produce and a group consume) do not work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_semantics_of_the_local_build() {
    let dep = common::launch_image(BrokerKind::Kafka, None, Some(MEMORY_IMAGE)).await;
    let bs = dep.addrs("kafka").join(",");
    let mut table: Vec<(&str, String)> = Vec::new();

    // acks=all
    common::retry("create topic", Duration::from_secs(60), || {
        create_topic(&bs, "sem")
    })
    .await;
    let p = producer(&bs, &[]);
    let acks = produce(&p, "sem", "a1").await;
    assert!(acks.is_ok(), "acks=all produce: {acks:?}");
    table.push(("acks=all", format!("ok (offset {})", acks.unwrap_or(-1))));
    let p0 = producer(&bs, &[("acks", "0")]);
    table.push((
        "acks=0",
        match produce(&p0, "sem", "a0").await {
            Ok(_) => "ok".into(),
            Err(e) => format!("error: {e}"),
        },
    ));

    // idempotent producer
    let pi = producer(&bs, &[("enable.idempotence", "true")]);
    let r1 = produce(&pi, "sem", "i1").await;
    let r2 = produce(&pi, "sem", "i2").await;
    table.push((
        "idempotent producer",
        match (r1, r2) {
            (Ok(a), Ok(b)) => format!("ok (InitProducerId accepted; offsets {a}, {b})"),
            (a, b) => format!("error: {a:?} {b:?}"),
        },
    ));

    // consumer group: commit, then a second member of the group resumes after it.
    create_topic(&bs, "grp").await.expect("create grp");
    for m in ["g1", "g2", "g3"] {
        produce(&p, "grp", m).await.expect("produce grp");
    }
    let c1 = consumer(&bs, "sem-group", &[]);
    c1.subscribe(&["grp"]).expect("subscribe");
    let first = receive(&c1, 1, Duration::from_secs(60)).await;
    let commit = c1.commit_consumer_state(CommitMode::Sync);
    // Dropping c1 closes it (it leaves the group); c2's receive waits for the
    // group to hand it the partition, up to its deadline, not a fixed time.
    drop(c1);
    let c2 = consumer(&bs, "sem-group", &[]);
    c2.subscribe(&["grp"]).expect("subscribe");
    let rest = receive(&c2, 2, Duration::from_secs(60)).await;
    table.push((
        "consumer group commit + resume",
        format!(
            "first member got {first:?}, commit {:?}, next member got {rest:?}",
            commit.map_err(|e| e.to_string())
        ),
    ));
    assert_eq!(first, vec!["g1"], "group consume works");
    drop(c2);

    txn_probe(&bs, "txn", "gauntlet-sem", "sem", &mut table).await;

    // durability across SIGKILL + restart
    common::kill_and_restart(&dep, "n1").await;
    let c3 = consumer(&bs, "sem-after", &[]);
    let meta = c3.fetch_metadata(Some("sem"), Duration::from_secs(10));
    let after = match meta {
        Ok(_) => {
            c3.subscribe(&["sem"]).expect("subscribe");
            let got = receive(&c3, 1, Duration::from_secs(15)).await;
            format!("after SIGKILL + restart a consumer got {got:?} from topic sem")
        }
        Err(e) => format!("after SIGKILL + restart: metadata error {e}"),
    };
    table.push(("durability across restart", after));
    drop(c3);

    eprintln!("\n== Kafka semantics of the local build ({MEMORY_IMAGE}):");
    for (k, v) in &table {
        eprintln!("| {k} | {v} |");
    }
    drop(p);
    drop(p0);
    drop(pi);
    common::teardown(dep).await;
}

/// Every message of `topic` a fresh consumer group reads from the beginning within `within`.
async fn read_all(
    bs: &str,
    topic: &str,
    group: &str,
    want: usize,
    within: Duration,
) -> Vec<String> {
    let c = consumer(bs, group, &[]);
    c.subscribe(&[topic]).expect("subscribe");
    let got = receive(&c, want, within).await;
    drop(c);
    got
}

/// The durable cluster: three tansu brokers on one PostgreSQL. Asserts what a user
/// relies on (acknowledged records survive a SIGKILL and restart of a broker, of
/// every broker, and of PostgreSQL; any broker serves what another took) and
/// prints the semantics table of docs/brokers.md (second column).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_semantics_of_the_durable_cluster() {
    let dep = common::launch(BrokerKind::Kafka, None).await;
    assert_eq!(dep.nodes(), vec!["n1", "n2", "n3"]);
    assert_eq!(dep.storage_node().as_deref(), Some("storage"));
    let addrs = dep.addrs("kafka");
    assert_eq!(addrs.len(), 3);
    let bs = addrs.join(",");
    let mut table: Vec<(&str, String)> = Vec::new();

    common::retry("create topic", Duration::from_secs(60), || {
        create_topic(&bs, "dur")
    })
    .await;
    // acks=all through n1 only, read back through n3 only: one store behind all brokers.
    let p1 = producer(&addrs[0], &[]);
    let mut acked = Vec::new();
    for i in 0..5 {
        let m = format!("d{i}");
        let r = produce(&p1, "dur", &m).await;
        assert!(r.is_ok(), "acks=all produce through n1: {r:?}");
        acked.push(m);
    }
    drop(p1);
    let via_n3 = read_all(&addrs[2], "dur", "dur-n3", 5, Duration::from_secs(60)).await;
    table.push((
        "acks=all; produce via n1, consume via n3",
        format!("ok: n3 served {via_n3:?}"),
    ));
    let mut sorted = via_n3.clone();
    sorted.sort();
    assert_eq!(sorted, acked, "any broker serves what another took");

    let p0 = producer(&bs, &[("acks", "0")]);
    table.push((
        "acks=0",
        match produce(&p0, "dur", "z0").await {
            Ok(_) => "ok".into(),
            Err(e) => format!("error: {e}"),
        },
    ));
    drop(p0);
    let pi = producer(&bs, &[("enable.idempotence", "true")]);
    let (r1, r2) = (
        produce(&pi, "dur", "i1").await,
        produce(&pi, "dur", "i2").await,
    );
    table.push((
        "idempotent producer",
        match (r1, r2) {
            (Ok(a), Ok(b)) => format!("ok (offsets {a}, {b})"),
            (a, b) => format!("error: {a:?} {b:?}"),
        },
    ));
    drop(pi);

    txn_probe(&bs, "dtxn", "gauntlet-dur", "dur", &mut table).await;

    // Durability: one broker, every broker, then PostgreSQL, each SIGKILLed and restarted.
    common::kill_and_restart(&dep, "n1").await;
    let after_one = read_all(&bs, "dur", "dur-after-1", 5, Duration::from_secs(60)).await;
    table.push((
        "acknowledged records after SIGKILL + restart of one broker",
        format!(
            "{} of 5 read back",
            acked.iter().filter(|m| after_one.contains(m)).count()
        ),
    ));
    for n in ["n1", "n2", "n3"] {
        dep.kill(n).await.expect("kill");
    }
    for n in ["n1", "n2", "n3"] {
        dep.start(n).await.expect("start");
    }
    dep.wait_cluster_ready(Duration::from_secs(120))
        .await
        .expect("every broker back");
    let after_all = read_all(&bs, "dur", "dur-after-all", 5, Duration::from_secs(60)).await;
    table.push((
        "... of every broker",
        format!(
            "{} of 5 read back",
            acked.iter().filter(|m| after_all.contains(m)).count()
        ),
    ));
    common::kill_and_restart(&dep, "storage").await;
    let after_pg = common::retry(
        "read after the storage restart",
        Duration::from_secs(90),
        || {
            let bs = bs.clone();
            async move {
                let got = read_all(&bs, "dur", "dur-after-pg", 5, Duration::from_secs(20)).await;
                if got.len() >= 5 {
                    Ok(got)
                } else {
                    Err(format!("only {got:?}"))
                }
            }
        },
    )
    .await;
    table.push((
        "... of PostgreSQL (fsync=on, synchronous_commit=on)",
        format!(
            "{} of 5 read back",
            acked.iter().filter(|m| after_pg.contains(m)).count()
        ),
    ));
    eprintln!(
        "\n== Kafka semantics of the durable cluster ({}):",
        BrokerKind::Kafka.default_image()
    );
    for (k, v) in &table {
        eprintln!("| {k} | {v} |");
    }
    for got in [&after_one, &after_all, &after_pg] {
        for m in &acked {
            assert!(got.contains(m), "acknowledged {m} lost: read {got:?}");
        }
    }
    let logs_dir = common::logs_dir(dep.run_id());
    common::teardown(dep).await;
    assert!(
        logs_dir.join("storage.log").exists(),
        "the storage node's log is collected"
    );
}

/// Issue 17, bad input: a storage node that does not come up (here PostgreSQL
/// refuses a setting) fails the launch with an error that names the storage
/// node, shows the end of its log and says where the log of every node it
/// created was kept; no broker was started, and nothing of the run is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storage_node_that_does_not_start_fails_the_launch_naming_it() {
    let docker = docker::connect().await.expect("Docker Engine reachable");
    let run = RunId::from_name(&format!("test-kafka-nostorage-{}", RunId::generate()));
    let logs = common::logs_dir(&run);
    let mut spec = ClusterSpec::new(BrokerKind::Kafka)
        .run_id(run.clone())
        .logs_dir(logs.clone())
        .build_missing_image(true);
    spec.storage_env = vec!["GAUNTLET_PG_FSYNC=sometimes".into()];
    let msg = match DockerDeployment::launch(&docker, spec).await {
        Ok(_) => panic!("PostgreSQL started with fsync=sometimes"),
        Err(e) => e.to_string(),
    };
    eprintln!("{msg}");
    assert!(msg.contains("node storage exited"), "{msg}");
    assert!(
        msg.contains("parameter \"fsync\" requires a Boolean value"),
        "the log's tail says why: {msg}"
    );
    assert!(msg.contains(&logs.display().to_string()), "{msg}");
    assert!(logs.join("storage.log").exists());
    assert!(!logs.join("n1.log").exists(), "no broker was created");
    let left = docker::list_labelled(&docker, Some(&run))
        .await
        .expect("list labelled");
    assert!(left.is_empty(), "leftovers of run {run}: {left:?}");
}

/// Issue 17, faults: a broker that cannot reach PostgreSQL fails its readiness
/// with an error that names the broker: with PostgreSQL frozen it listens but
/// answers no Metadata (not ready, with the probe's output and its log); with
/// PostgreSQL gone it exits on start, and its log says it is the storage. Once
/// PostgreSQL is back, the same broker comes up again and serves what was
/// stored before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_that_cannot_reach_postgresql_fails_readiness_naming_it() {
    let dep = common::launch(BrokerKind::Kafka, None).await;
    let addrs = dep.addrs("kafka");
    let bs = addrs.join(",");
    common::retry("create topic", Duration::from_secs(60), || {
        create_topic(&bs, "reach")
    })
    .await;
    let p = producer(&bs, &[]);
    let stored = produce(&p, "reach", "before").await;
    assert!(stored.is_ok(), "{stored:?}");
    drop(p);

    // Storage frozen, broker running and listening: not ready (its readiness
    // asks for Metadata, which tansu reads from PostgreSQL).
    dep.pause("storage").await.expect("pause the storage node");
    let frozen = dep.wait_ready("n1", Duration::from_secs(12)).await;
    dep.unpause("storage")
        .await
        .expect("unpause the storage node");
    let msg = frozen.err().map(|e| e.to_string()).unwrap_or_default();
    eprintln!("{msg}");
    assert!(msg.contains("node n1 not ready"), "{msg}");

    // Storage gone: the restarted broker exits, and says why.
    dep.kill("storage").await.expect("kill the storage node");
    dep.kill("n1").await.expect("kill n1");
    dep.start("n1").await.expect("start n1");
    let msg = match dep.wait_ready("n1", Duration::from_secs(60)).await {
        Ok(()) => panic!("n1 ready without its storage"),
        Err(e) => e.to_string(),
    };
    eprintln!("{msg}");
    assert!(msg.contains("node n1 "), "names the broker: {msg}");
    assert!(
        msg.contains("Storage(Pool"),
        "the broker's log says it is the storage: {msg}"
    );

    dep.start("storage").await.expect("start the storage node");
    dep.wait_ready("storage", Duration::from_secs(60))
        .await
        .expect("storage back");
    dep.start("n1").await.expect("start n1 again");
    dep.wait_cluster_ready(Duration::from_secs(120))
        .await
        .expect("n1 back with its storage");
    let got = read_all(
        &addrs[0],
        "reach",
        "reach-after",
        1,
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(got, vec!["before".to_string()], "served through n1 again");
    common::teardown(dep).await;
}
