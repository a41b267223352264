//! Node control and cleanup, on a one-node Redis (the quickest broker to start):
//! pause/unpause, stop/start/restart, exec with NET_ADMIN, and that the run's
//! label is what cleanup goes by (a leaked deployment goes, unlabelled objects stay).
use crate::common;
use gauntlet_harness::backend::docker::{self, DockerDeployment};
use gauntlet_harness::backend::ClusterSpec;
use gauntlet_harness::{BrokerKind, Command, Deployment, NodeControl, RunId};
use std::time::Duration;

async fn ping(addr: &str) -> Result<String, String> {
    let client = redis::Client::open(format!("redis://{addr}/")).map_err(|e| e.to_string())?;
    let fut = async {
        let mut c = client.get_multiplexed_async_connection().await?;
        redis::cmd("PING").query_async::<String>(&mut c).await
    };
    match tokio::time::timeout(Duration::from_secs(2), fut).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => Err("timed out".into()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_stop_restart_and_exec_with_net_admin() {
    let dep = common::launch(BrokerKind::Redis, Some(1)).await;
    let addr = dep.addrs("client")[0].clone();
    assert_eq!(
        common::retry("ping", Duration::from_secs(60), || ping(&addr)).await,
        "PONG"
    );

    dep.pause("n1").await.expect("pause");
    assert!(ping(&addr).await.is_err(), "a paused node does not answer");
    dep.unpause("n1").await.expect("unpause");
    assert_eq!(
        common::retry("ping after unpause", Duration::from_secs(60), || ping(
            &addr
        ))
        .await,
        "PONG"
    );

    dep.stop("n1", Duration::from_secs(5)).await.expect("stop");
    assert!(ping(&addr).await.is_err(), "a stopped node does not answer");
    dep.start("n1").await.expect("start");
    dep.wait_ready("n1", Duration::from_secs(60))
        .await
        .expect("ready after start");
    dep.restart("n1", Duration::from_secs(5))
        .await
        .expect("restart");
    dep.wait_ready("n1", Duration::from_secs(60))
        .await
        .expect("ready after restart");
    assert_eq!(
        common::retry(
            "ping after restart, same host port",
            Duration::from_secs(60),
            || ping(&addr)
        )
        .await,
        "PONG"
    );

    // iptables inside the node needs NET_ADMIN, which every node has.
    let drop_rule = [
        "iptables", "-A", "INPUT", "-p", "tcp", "--dport", "6379", "-j", "DROP",
    ];
    let out = dep
        .exec("n1", &Command::new(&drop_rule), Duration::from_secs(20))
        .await
        .expect("exec");
    assert!(out.success(), "iptables DROP: {}", out.combined());
    assert!(ping(&addr).await.is_err(), "traffic dropped by iptables");
    let undo = [
        "iptables", "-D", "INPUT", "-p", "tcp", "--dport", "6379", "-j", "DROP",
    ];
    let out = dep
        .exec("n1", &Command::new(&undo), Duration::from_secs(20))
        .await
        .expect("exec");
    assert!(out.success(), "iptables -D: {}", out.combined());
    assert_eq!(
        common::retry("ping after heal", Duration::from_secs(60), || ping(&addr)).await,
        "PONG"
    );
    let out = dep
        .exec(
            "n1",
            &Command::new(&["tc", "qdisc", "show"]),
            Duration::from_secs(20),
        )
        .await
        .expect("exec tc");
    assert!(out.success(), "tc: {}", out.combined());
    let out = dep
        .exec(
            "n1",
            &Command::shell("echo $0 >&2; exit 3"),
            Duration::from_secs(20),
        )
        .await
        .expect("exec");
    assert_eq!((out.exit_code, out.stderr.trim()), (3, "sh"));

    common::teardown(dep).await;
}

/// The `role:` line of `INFO replication` at `addr`.
async fn role(addr: &str) -> Result<String, String> {
    let client = redis::Client::open(format!("redis://{addr}/")).map_err(|e| e.to_string())?;
    let fut = async {
        let mut c = client.get_multiplexed_async_connection().await?;
        redis::cmd("INFO")
            .arg("replication")
            .query_async::<String>(&mut c)
            .await
    };
    let info = match tokio::time::timeout(Duration::from_secs(2), fut).await {
        Ok(r) => r.map_err(|e| e.to_string())?,
        Err(_) => return Err("timed out".into()),
    };
    info.lines()
        .find_map(|l| l.strip_prefix("role:"))
        .map(|r| r.trim().to_string())
        .ok_or_else(|| format!("no role in {info:?}"))
}

/// The clients reach each node at its own address on the run's network, not
/// through `docker-proxy`, and a node keeps that address when it is killed and
/// started again, even when another node restarts first and Docker would have
/// given it the first one's address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_reach_each_node_at_its_own_address_across_kills() {
    let dep = common::launch(BrokerKind::Redis, Some(2)).await;
    let addrs = dep.addrs("client");
    eprintln!("client endpoints: {addrs:?}");
    assert_eq!(addrs.len(), 2);
    assert!(
        addrs.iter().all(|a| !a.starts_with("127.")),
        "the nodes' own addresses, not the published ports: {addrs:?}"
    );
    assert_ne!(addrs[0], addrs[1]);
    let wait_role = |i: usize, want: &'static str| {
        let addr = addrs[i].clone();
        async move {
            common::retry(
                &format!("n{} at {addr} answers role:{want}", i + 1),
                Duration::from_secs(120),
                || {
                    let addr = addr.clone();
                    async move {
                        match role(&addr).await {
                            Ok(r) if r == want => Ok(r),
                            Ok(r) => Err(format!("role:{r}")),
                            Err(e) => Err(e),
                        }
                    }
                },
            )
            .await
        }
    };
    wait_role(0, "master").await;
    wait_role(1, "slave").await;
    // Both down, the replica started first: with addresses Docker hands out as
    // it goes, n2 would take the lower address, n1's.
    dep.kill("n1").await.expect("kill n1");
    dep.kill("n2").await.expect("kill n2");
    dep.start("n2").await.expect("start n2");
    dep.start("n1").await.expect("start n1");
    dep.wait_cluster_ready(Duration::from_secs(120))
        .await
        .expect("ready after the restarts");
    assert_eq!(dep.addrs("client"), addrs, "the endpoints do not change");
    wait_role(0, "master").await;
    wait_role(1, "slave").await;
    common::teardown(dep).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleanup_goes_by_the_run_label_only() {
    let docker = docker::connect().await.expect("Docker Engine reachable");
    let run = RunId::from_name(&format!("test-clean-{}", RunId::generate()));
    // An unlabelled network that merely shares the name prefix must survive.
    let bystander = format!("gauntlet-{run}-bystander");
    let created = docker
        .create_network(bollard::models::NetworkCreateRequest {
            name: bystander.clone(),
            ..Default::default()
        })
        .await
        .expect("create unlabelled network");

    let spec = ClusterSpec::new(BrokerKind::Redis)
        .nodes(1)
        .run_id(run.clone());
    let dep = DockerDeployment::launch(&docker, spec)
        .await
        .expect("launch");
    // A crashed run: the deployment is never torn down nor dropped.
    std::mem::forget(dep);
    let left = docker::list_labelled(&docker, Some(&run))
        .await
        .expect("list");
    assert_eq!(
        (left.containers.len(), left.networks.len()),
        (1, 1),
        "{left:?}"
    );

    let removed = docker::remove_labelled(&docker, Some(&run))
        .await
        .expect("clean");
    assert_eq!((removed.containers.len(), removed.networks.len()), (1, 1));
    assert!(docker::list_labelled(&docker, Some(&run))
        .await
        .expect("list")
        .is_empty());
    let still = docker
        .inspect_network(
            &created.id,
            None::<bollard::query_parameters::InspectNetworkOptions>,
        )
        .await;
    assert!(still.is_ok(), "the unlabelled network was left alone");
    docker
        .remove_network(&created.id)
        .await
        .expect("remove the bystander");
}

/// Several deployments launched at the same moment, as parallel runs start them:
/// each gets a network of its own with a subnet of its own (created, read and
/// created again with the subnet named, under the machine lock), host ports no
/// other takes, containers that answer, and each is torn down whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_launches_at_once_get_networks_subnets_and_ports_of_their_own() {
    const AT_ONCE: usize = 4;
    let deps = futures_util::future::join_all(
        (0..AT_ONCE).map(|_| common::launch(BrokerKind::Redis, Some(1))),
    )
    .await;
    let docker = docker::connect().await.expect("Docker Engine reachable");
    let (mut subnets, mut ports) = (Vec::new(), Vec::new());
    for dep in &deps {
        let objects = docker::list_labelled(&docker, Some(dep.run_id()))
            .await
            .expect("list labelled");
        assert_eq!(objects.networks.len(), 1, "{objects:?}");
        let net = docker
            .inspect_network(&objects.networks[0].0, None)
            .await
            .expect("inspect network");
        let named: Vec<String> = net
            .ipam
            .and_then(|i| i.config)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|c| c.subnet)
            .collect();
        assert_eq!(
            named.len(),
            1,
            "the run network names its subnet: {named:?}"
        );
        subnets.extend(named);
        for (id, _) in &objects.containers {
            let c = docker
                .inspect_container(id, None)
                .await
                .expect("inspect container");
            let bound = c
                .host_config
                .and_then(|h| h.port_bindings)
                .unwrap_or_default();
            ports.extend(
                bound
                    .into_values()
                    .flatten()
                    .flatten()
                    .filter_map(|b| b.host_port),
            );
        }
        let addr = dep.addrs("client")[0].clone();
        assert_eq!(
            common::retry("ping", Duration::from_secs(60), || ping(&addr)).await,
            "PONG"
        );
    }
    eprintln!("subnets {subnets:?}, host ports {ports:?}");
    let distinct = |v: &[String]| v.iter().collect::<std::collections::BTreeSet<_>>().len();
    assert_eq!(distinct(&subnets), AT_ONCE, "{subnets:?}");
    assert!(ports.len() >= AT_ONCE, "{ports:?}");
    assert_eq!(distinct(&ports), ports.len(), "{ports:?}");
    for dep in deps {
        common::teardown(dep).await;
    }
}
