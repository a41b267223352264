//! Redis: n1 is the primary, n2..nN start with `--replicaof n1 6379`. Append-only file
//! with `appendfsync always`, so an acknowledged write survives a SIGKILL of its node.
use crate::broker::*;

/// The Redis recipe: a primary (n1) and its replicas.
pub struct Redis;

const PORTS: &[PortSpec] = &[PortSpec {
    name: "client",
    port: 6379,
}];

impl Recipe for Redis {
    fn kind(&self) -> BrokerKind {
        BrokerKind::Redis
    }
    fn version(&self) -> &'static str {
        "7.0.15"
    }
    fn ports(&self) -> &'static [PortSpec] {
        PORTS
    }
    fn default_nodes(&self) -> usize {
        3
    }
    fn capabilities(&self, _flavour: Flavour) -> Capabilities {
        Capabilities {
            max_nodes: 9,
            durable_across_restart: true,
            replicated: true,
            transactions: false,
            process_faults: true,
            pause: true,
            net_admin_exec: true,
        }
    }
    fn node(&self, ctx: &ClusterContext, index: usize) -> NodePlan {
        let mut cmd: Vec<String> = [
            "redis-server",
            "--bind",
            "0.0.0.0",
            "--protected-mode",
            "no",
            "--port",
            "6379",
            "--dir",
            "/data",
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if index > 0 {
            cmd.extend(["--replicaof".into(), ctx.nodes[0].clone(), "6379".into()]);
        }
        NodePlan {
            entrypoint: Some(vec![
                "sh".into(),
                "-c".into(),
                "mkdir -p /data && exec \"$@\"".into(),
                "redis".into(),
            ]),
            cmd,
            env: Vec::new(),
            user: None,
        }
    }
    fn data_dir(&self, ctx: &ClusterContext) -> Option<DataDir> {
        // The append-only file, in parts under appendonlydir/ since Redis 7.
        (ctx.flavour == Flavour::Gauntlet).then_some(DataDir {
            path: "/data",
            files: &["appendonlydir/*.aof", "appendonlydir/*.rdb", "*.rdb"],
        })
    }
    fn node_ready(&self, _ctx: &ClusterContext, _index: usize) -> Probe {
        Probe::prints(Command::new(&["redis-cli", "ping"]), "PONG")
    }
    fn cluster_ready(&self, ctx: &ClusterContext) -> Vec<(usize, Probe)> {
        let mut probes = vec![(
            0,
            Probe::prints(
                Command::new(&["redis-cli", "info", "replication"]),
                &format!("connected_slaves:{}", ctx.len() - 1),
            ),
        )];
        for i in 1..ctx.len() {
            probes.push((
                i,
                Probe::prints(
                    Command::new(&["redis-cli", "info", "replication"]),
                    "master_link_status:up",
                ),
            ));
        }
        probes
    }
    fn role_probe(&self, role: gauntlet_nemesis::Role) -> Option<RoleProbe> {
        match role {
            // The node that says it is the master (n1 unless someone promoted a replica).
            gauntlet_nemesis::Role::Leader => Some(RoleProbe {
                command: Command::new(&["redis-cli", "info", "replication"]),
                parse: |node, out| {
                    out.lines()
                        .any(|l| l.trim() == "role:master")
                        .then(|| node.to_string())
                },
            }),
            // Coordinators are Kafka's.
            _ => None,
        }
    }
}
