use super::*;

#[test]
fn each_fault_says_what_it_needs() {
    let n = |s: &str| FaultKind::from_str(s).expect("a fault").needs();
    assert_eq!(n("kill-consumer:before-ack"), Needs::default());
    assert_eq!(
        n("ack-loss"),
        Needs {
            proxy: true,
            ..Needs::default()
        }
    );
    assert!(n("kill-broker").process_faults && n("pause").process_faults);
    assert!(n("pause").pause && n("pause:leader").pause && !n("kill-broker").pause);
    assert_eq!(
        (n("partition").nodes, n("partition").net_admin),
        (2, Some("iptables"))
    );
    assert_eq!(n("partition:ring").nodes, 3);
    assert_eq!(n("netem:50").net_admin, Some("tc"));
    let r = n("restart-broker:txn-coordinator");
    assert!(r.process_faults && r.role == Some(Role::TxnCoordinator));
    let i = n("partition:storage");
    assert_eq!(
        (i.nodes, i.net_admin, i.role),
        (2, Some("iptables"), Some(Role::Storage))
    );
    assert_eq!(n("crash-producer").workload, Some("txn"));
    // The disk faults need Gauntlet's filesystem in the nodes, and process control.
    for d in ["power-loss", "power-loss:torn", "corrupt:truncate", "wipe"] {
        assert!(n(d).disk && n(d).process_faults, "{d}");
    }
    let p = n("power-loss:storage");
    assert!(p.disk && p.role == Some(Role::Storage));
    assert!(!n("kill-broker").disk && !n("restart-broker:mid-batch").disk);
}

#[test]
fn disk_faults_are_intervals_healed_by_a_start_and_name_their_disk_fault() {
    use crate::control::DiskFault;
    let k = |s: &str| FaultKind::from_str(s).expect("a fault");
    for (s, disk, history) in [
        (
            "power-loss",
            DiskFault::PowerLoss { torn: false },
            ("power-loss", "power-on"),
        ),
        (
            "power-loss:torn",
            DiskFault::PowerLoss { torn: true },
            ("power-loss", "power-on"),
        ),
        (
            "corrupt",
            DiskFault::Bitflip,
            ("corrupt", "corrupt-restarted"),
        ),
        (
            "corrupt:truncate",
            DiskFault::Truncate,
            ("corrupt", "corrupt-restarted"),
        ),
        ("wipe", DiskFault::Wipe, ("wipe", "wipe-restarted")),
    ] {
        let kind = k(s);
        assert_eq!(kind.disk(), Some(disk), "{s}");
        assert_eq!(kind.spec().ends, Ends::AtOnce, "{s}");
        assert_eq!(kind.spec().heal, Heal::StartNodes, "{s}");
        assert_eq!(history_names(kind), history, "{s}");
    }
    assert_eq!(k("corrupt").to_string(), "corrupt:bitflip");
    assert_eq!(
        k("power-loss:leader"),
        FaultKind::OnRole(NodeFault::PowerLoss, Role::Leader)
    );
    assert_eq!(k("kill-broker").disk(), None);
    assert!(FaultKind::from_str("corrupt:zeroes").is_err());
    assert!(FaultKind::from_str("wipe:all-of-it").is_err());
}

#[test]
fn every_syntax_listed_parses_and_every_fault_is_listed() {
    for s in syntax() {
        let base = s.split('[').next().unwrap_or(s);
        assert!(FaultKind::from_str(base).is_ok(), "{s}");
    }
    let e = FaultKind::from_str("kill-everything").expect_err("unknown");
    let text = e.to_string();
    assert!(
        text.contains("netem[:MS]")
            && text.contains("crash-producer")
            && text.contains("txn-coordinator, storage"),
        "{text}"
    );
    // Every entry of the table is the entry of the faults it parses.
    for spec in FAULTS {
        let name = if spec.syntax.is_empty() {
            format!("{}:ring", spec.name)
        } else {
            spec.name.to_string()
        };
        let k = FaultKind::from_str(&name).expect("parses");
        assert!(std::ptr::eq(k.spec(), spec), "{name}");
    }
}

#[test]
fn instants_and_intervals_come_from_the_table() {
    let spec = |s: &str| FaultKind::from_str(s).expect("a fault").spec();
    assert!(spec("kill-consumer:after-ack").instant());
    assert!(spec("crash-producer").instant());
    // A restart is an interval: from the kill until the node is ready again.
    assert!(!spec("restart-broker").instant());
    assert_eq!(spec("restart-broker:leader").ends, Ends::AtOnce);
    assert_eq!(spec("pause").ends, Ends::AfterDuration);
    assert_eq!(spec("latency").heal, Heal::PassLinks);
    assert_eq!(spec("partition:bridge").acts, Acts::Network);
    assert_eq!(spec("crash-producer").acts, Acts::Workload);
    assert_eq!(history_names(FaultKind::CrashProducer).0, "crash-producer");
    assert_eq!(
        history_names(FaultKind::from_str("kill-broker:leader").expect("fault")),
        ("kill", "start")
    );
}

#[test]
fn names_round_trip() {
    for s in [
        "power-loss",
        "power-loss:torn",
        "power-loss:storage",
        "corrupt:bitflip",
        "corrupt:truncate",
        "wipe",
        "kill-consumer",
        "kill-consumer:before-ack",
        "kill-consumer:after-ack",
        "kill-broker",
        "restart-broker",
        "restart-broker:mid-batch",
        "pause",
        "partition",
        "partition:halves",
        "partition:ring",
        "partition:bridge",
        "kill-broker:leader",
        "restart-broker:leader",
        "pause:leader",
        "partition:leader",
        "kill-broker:group-coordinator",
        "restart-broker:txn-coordinator",
        "pause:group-coordinator",
        "partition:txn-coordinator",
        "crash-producer",
    ] {
        assert_eq!(
            FaultKind::from_str(s)
                .map(|k| k.to_string())
                .ok()
                .as_deref(),
            Some(s)
        );
    }
    for (alias, name) in [
        ("kill", "kill-broker"),
        ("kill-consumer:after-commit", "kill-consumer:after-ack"),
        ("partition:isolate", "partition"),
        ("partition:majority", "partition:halves"),
        ("partition:majorities-ring", "partition:ring"),
    ] {
        assert_eq!(
            FaultKind::from_str(alias).map(|k| k.to_string()).ok(),
            Some(name.to_string())
        );
    }
    assert!(FaultKind::from_str("meteor").is_err());
    assert!(FaultKind::from_str("kill-consumer:leader").is_err());
    assert!(FaultKind::from_str("kill-broker:coordinator").is_err());
    assert!(FaultKind::from_str("kill:leader").is_err());
    assert!(FaultKind::from_str("crash-producer:x").is_err());
    for f in NodeFault::ALL {
        for r in Role::ALL {
            let k = FaultKind::OnRole(f, r);
            assert_eq!(FaultKind::from_str(&k.to_string()).ok(), Some(k));
        }
    }
}

#[test]
fn network_fault_names_round_trip_with_defaults() {
    for s in [
        "ack-loss",
        "partition-one-way",
        "client-partition",
        "latency:250",
        "jitter:40",
        "loss:10",
        "bandwidth:8",
        "reset",
        "blackhole",
        "netem:100",
    ] {
        let k = FaultKind::from_str(s).expect(s);
        assert_eq!(k.to_string(), s);
        let (start, end) = history_names(k);
        assert_eq!(end, format!("{start}-end"));
    }
    assert_eq!(
        FaultKind::from_str("latency").ok(),
        Some(FaultKind::Link(LinkFault::Latency { ms: 200 }))
    );
    assert_eq!(
        FaultKind::from_str("latency:200ms").ok(),
        Some(FaultKind::Link(LinkFault::Latency { ms: 200 }))
    );
    assert_eq!(
        FaultKind::from_str("loss").ok(),
        Some(FaultKind::Link(LinkFault::Loss { percent: 5 }))
    );
    assert_eq!(
        FaultKind::from_str("netem").ok(),
        Some(FaultKind::Netem { delay_ms: 100 })
    );
    for bad in [
        "latency:soon",
        "loss:150",
        "bandwidth:0",
        "ack-loss:x",
        "netem:x",
    ] {
        assert!(FaultKind::from_str(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_link_fault_without_an_argument_can_be_aimed_at_a_role() {
    // `client-partition:dedup-store`: the consumers cut off their dedup store (seed D7).
    let k = FaultKind::from_str("client-partition:dedup-store").expect("parse");
    assert_eq!(
        k,
        FaultKind::LinkOnRole(LinkFault::ClientPartition, Role::DedupStore)
    );
    assert_eq!(k.to_string(), "client-partition:dedup-store");
    let needs = k.needs();
    assert!(needs.proxy);
    assert_eq!(needs.role, Some(Role::DedupStore));
    // The history names and the heal are the link fault's.
    assert_eq!(
        history_names(k),
        history_names(FaultKind::Link(LinkFault::ClientPartition))
    );
    assert_eq!(k.spec().heal, Heal::PassLinks);
    for l in [
        LinkFault::AckLoss,
        LinkFault::OneWay,
        LinkFault::ClientPartition,
        LinkFault::Reset,
        LinkFault::Blackhole,
    ] {
        for r in Role::ALL {
            let k = FaultKind::LinkOnRole(l, r);
            assert_eq!(FaultKind::from_str(&k.to_string()).ok(), Some(k));
        }
    }
    // A link fault whose argument is its own (a delay, a share) takes no role.
    for bad in ["latency:dedup-store", "loss:leader", "client-partition:n1"] {
        assert!(FaultKind::from_str(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_fault_reads_and_writes_as_its_name() {
    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct S {
        nemesis: Vec<FaultKind>,
    }
    let s: S = toml::from_str("nemesis = [\"pause:leader\", \"latency:250ms\"]").expect("toml");
    assert_eq!(
        s.nemesis,
        vec![
            FaultKind::OnRole(NodeFault::Pause, Role::Leader),
            FaultKind::Link(LinkFault::Latency { ms: 250 })
        ]
    );
    assert_eq!(
        toml::to_string(&s).expect("toml"),
        "nemesis = [\"pause:leader\", \"latency:250\"]\n"
    );
    let e = toml::from_str::<S>("nemesis = [\"pause\", \"meteor\"]").expect_err("unknown");
    assert!(e.to_string().contains("unknown fault `meteor`"), "{e}");
}

#[test]
fn link_effects() {
    assert_eq!(
        LinkFault::AckLoss.effect(),
        LinkEffect {
            down: LinkToxic::Drop,
            busiest_link: true,
            ..LinkEffect::default()
        }
    );
    assert!(LinkFault::Reset.effect().reset_open && !LinkFault::Reset.effect().refuse);
    assert!(LinkFault::ClientPartition.effect().refuse);
    assert_eq!(LinkFault::Loss { percent: 7 }.effect().loss_percent, 7);
    assert_eq!(
        LinkFault::Bandwidth { kib_per_sec: 2 }.effect().up,
        LinkToxic::Bandwidth {
            bytes_per_sec: 2048
        }
    );
}

#[test]
fn counts_of_nodes_parse_display_and_say_how_many() {
    for s in [
        "kill-broker:minority",
        "kill-broker:majority",
        "kill-broker:all",
        "restart-broker:all",
        "restart-broker:majority",
        "pause:minority",
        "pause:majority",
        "pause:all",
    ] {
        let k = FaultKind::from_str(s).expect(s);
        assert!(matches!(k, FaultKind::OnNodes(..)), "{s}: {k:?}");
        assert_eq!(k.to_string(), s);
    }
    // Every node fault that takes counts takes every count, and round-trips.
    for f in NodeFault::ALL.into_iter().filter(|f| f.takes_counts()) {
        for c in Spread::ALL {
            let k = FaultKind::OnNodes(f, c);
            assert_eq!(FaultKind::from_str(&k.to_string()).ok(), Some(k), "{k}");
            // Its entry, needs and history names are the node fault's.
            assert!(std::ptr::eq(k.spec(), f.on_node().spec()));
            assert_eq!(k.needs(), f.on_node().needs());
        }
    }
    // The partition shapes keep their names: `partition:majority` is the halves.
    assert_eq!(
        FaultKind::from_str("partition:majority").ok(),
        Some(FaultKind::PartitionShape(Shape::Halves))
    );
    for bad in [
        "partition:minority",
        "partition:all",
        "kill-broker:most",
        "kill-consumer:all",
        "restart-broker:mid-batch:all",
    ] {
        assert!(FaultKind::from_str(bad).is_err(), "{bad}");
    }
    // minority (n-1)/2 (at least 1), majority n/2+1, all n.
    let counts: Vec<[usize; 3]> = (1..=7).map(|n| Spread::ALL.map(|c| c.count(n))).collect();
    assert_eq!(
        counts,
        [
            [1, 1, 1],
            [1, 2, 2],
            [1, 2, 3],
            [1, 3, 4],
            [2, 3, 5],
            [2, 4, 6],
            [3, 4, 7]
        ]
    );
    assert_eq!(Spread::Majority.count(0), 0);
}

#[test]
fn pause_kill_is_a_sequence_of_a_pause_and_a_crash() {
    let k = FaultKind::from_str("pause-kill").expect("pause-kill");
    assert_eq!(k, FaultKind::PauseKill(NodeFault::Kill));
    assert_eq!(k.to_string(), "pause-kill");
    assert_eq!(k.spec().acts, Acts::Sequence);
    assert_eq!(k.needs().nodes, 3);
    assert_eq!(
        k.expands_to(),
        vec![FaultKind::Pause, FaultKind::KillBroker]
    );
    let r = FaultKind::from_str("pause-kill:restart-broker").expect("a crash by restart");
    assert_eq!(r, FaultKind::PauseKill(NodeFault::Restart));
    assert_eq!(r.to_string(), "pause-kill:restart-broker");
    assert_eq!(
        FaultKind::from_str("pause-kill:kill-broker").ok(),
        Some(k),
        "the default crash, named"
    );
    for f in NodeFault::ALL.into_iter().filter(|f| f.crashes()) {
        let k = FaultKind::PauseKill(f);
        assert_eq!(FaultKind::from_str(&k.to_string()).ok(), Some(k));
    }
    // A pause or a partition is no crash.
    for bad in [
        "pause-kill:pause",
        "pause-kill:partition",
        "pause-kill:leader",
    ] {
        assert!(FaultKind::from_str(bad).is_err(), "{bad}");
    }
    // The unknown-fault error (and so --nemesis's help) lists the counts and crashes.
    let e = FaultKind::from_str("kill-broker:most")
        .expect_err("unknown")
        .to_string();
    assert!(
        e.contains("kill-broker[:ROLE|:COUNT]")
            && e.contains("pause-kill[:CRASH]")
            && e.contains("COUNT: minority, majority, all")
            && e.contains("CRASH: kill-broker, restart-broker"),
        "{e}"
    );
}

#[test]
fn add_partitions_takes_a_count_and_acts_on_the_topics_as_an_instant() {
    let k = |s: &str| FaultKind::from_str(s).expect(s);
    assert_eq!(
        k("add-partitions"),
        FaultKind::AddPartitions {
            added: topic::DEFAULT_ADDED
        }
    );
    assert_eq!(k("add-partitions:4"), FaultKind::AddPartitions { added: 4 });
    // The default count displays as the bare name; another as its argument.
    assert_eq!(k("add-partitions").to_string(), "add-partitions");
    assert_eq!(k("add-partitions:4").to_string(), "add-partitions:4");
    for bad in [
        "add-partitions:0",
        "add-partitions:65",
        "add-partitions:many",
    ] {
        assert!(FaultKind::from_str(bad).is_err(), "{bad}");
    }
    let spec = k("add-partitions").spec();
    assert!(spec.instant());
    assert_eq!(spec.acts, Acts::Topic);
    assert_eq!(spec.heal, Heal::Nothing);
    assert_eq!(spec.needs, NOTHING);
    assert!(!spec.plan.is_empty());
    assert_eq!(
        history_names(k("add-partitions:3")),
        ("add-partitions", "add-partitions-end")
    );
    assert!(syntax().contains(&"add-partitions[:N]"));
}
