//! Redis: n1 is the primary, n2..nN start with `--replicaof n1 6379`. Append-only file
//! with `appendfsync always` by default, so an acknowledged write survives a SIGKILL
//! of its node (and a power loss); the scenario's `[redis]` table changes both
//! (`appendonly`, `appendfsync`: [`RedisDurability`]).
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
        let mut cmd = server_args();
        let aof = ctx.durability.redis;
        cmd.extend([
            "--appendonly".into(),
            if aof.appendonly { "yes" } else { "no" }.into(),
            "--appendfsync".into(),
            aof.appendfsync.name().into(),
        ]);
        if index > 0 {
            cmd.extend(["--replicaof".into(), ctx.nodes[0].clone(), "6379".into()]);
        }
        redis_node(cmd)
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
    fn check_durability(&self, ctx: &ClusterContext) -> Result<(), String> {
        match ctx.durability.nats_sync {
            None => Ok(()),
            Some(_) => {
                Err("[nats] sync-interval is NATS's setting, and the broker is redis".into())
            }
        }
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

/// The idempotent consumers' dedup store (seed D7): one Redis node of
/// Gauntlet's Redis image beside the broker, never a replica, with its
/// append-only file synced on every write (`appendfsync always`), so a mark it
/// acknowledged survives a SIGKILL of the node. How it starts, and when it is ready.
pub fn dedup_store_plan() -> (NodePlan, Probe) {
    let mut cmd = server_args();
    cmd.extend(["--appendonly", "yes", "--appendfsync", "always"].map(String::from));
    (
        redis_node(cmd),
        Probe::prints(Command::new(&["redis-cli", "ping"]), "PONG"),
    )
}

/// What every Redis node of Gauntlet's starts with: `redis-server` on port
/// 6379 of every interface, its data in `/data`.
fn server_args() -> Vec<String> {
    [
        "redis-server",
        "--bind",
        "0.0.0.0",
        "--protected-mode",
        "no",
        "--port",
        "6379",
        "--dir",
        "/data",
    ]
    .map(String::from)
    .to_vec()
}

/// A node that runs `redis-server` with `cmd`, its data directory made first.
fn redis_node(cmd: Vec<String>) -> NodePlan {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(durability: Durability) -> ClusterContext {
        let mut c = ClusterContext::for_image(Flavour::Gauntlet, "gauntlet/redis:7.0.15");
        c.nodes = vec!["n1".into(), "n2".into()];
        c.durability = durability;
        c
    }

    fn line(plan: &NodePlan) -> String {
        plan.cmd.join(" ")
    }

    #[test]
    fn the_default_is_the_command_line_of_before_the_settings() {
        let c = ctx(Durability::default());
        assert_eq!(
            line(&Redis.node(&c, 0)),
            "redis-server --bind 0.0.0.0 --protected-mode no --port 6379 --dir /data \
             --appendonly yes --appendfsync always"
        );
        assert_eq!(
            line(&Redis.node(&c, 1)),
            "redis-server --bind 0.0.0.0 --protected-mode no --port 6379 --dir /data \
             --appendonly yes --appendfsync always --replicaof n1 6379"
        );
        assert_eq!(Redis.check_durability(&c), Ok(()));
    }

    #[test]
    fn each_setting_reaches_every_nodes_command_line() {
        for (appendonly, appendfsync, want) in [
            (
                true,
                AppendFsync::Everysec,
                "--appendonly yes --appendfsync everysec",
            ),
            (true, AppendFsync::No, "--appendonly yes --appendfsync no"),
            (
                false,
                AppendFsync::Always,
                "--appendonly no --appendfsync always",
            ),
        ] {
            let c = ctx(Durability {
                redis: RedisDurability {
                    appendonly,
                    appendfsync,
                },
                nats_sync: None,
            });
            for i in 0..2 {
                let l = line(&Redis.node(&c, i));
                assert!(l.contains(want), "{l}");
                assert_eq!(l.matches("--appendfsync").count(), 1, "{l}");
            }
        }
    }

    #[test]
    fn a_nats_setting_is_refused() {
        let c = ctx(Durability {
            nats_sync: Some(SyncInterval::Always),
            ..Durability::default()
        });
        let e = Redis.check_durability(&c).expect_err("refused");
        assert!(e.contains("sync-interval"), "{e}");
    }
}
