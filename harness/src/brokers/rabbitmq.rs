//! RabbitMQ: every node starts with the run's Erlang cookie and the whole node list
//! as its peers (classic-config peer discovery), so the nodes form the cluster as
//! they boot: one takes the discovery lock and starts the cluster, the others join
//! it. No `stop_app`/`join_cluster`/`start_app` round after boot, which cost two
//! extra application restarts, one node after the other. Quorum queues and
//! streams need nothing more.
use crate::broker::*;

/// The RabbitMQ recipe: nodes that form the cluster as they boot.
pub struct RabbitMq;

const PORTS: &[PortSpec] = &[PortSpec {
    name: "amqp",
    port: 5672,
}];

/// `rabbitmqctl ...` as the rabbitmq user, as the Debian package expects.
fn ctl(args: &str) -> Command {
    Command::shell(format!("rabbitmqctl {args}"))
        .user("rabbitmq")
        .env("HOME=/var/lib/rabbitmq")
}

/// The node's rabbitmq.conf additions: guest may log in from the host (the published
/// port is on 127.0.0.1 only), and with more than one node, the peers to form a
/// cluster with. Peer discovery runs only on a blank node's first boot; a node
/// restarted by a fault rejoins from its own database.
fn config(ctx: &ClusterContext) -> String {
    let mut c = String::from("loopback_users.guest = false\nlisteners.tcp.default = 5672\n");
    if ctx.len() > 1 {
        c.push_str("cluster_formation.peer_discovery_backend = classic_config\n");
        for (i, n) in ctx.nodes.iter().enumerate() {
            c.push_str(&format!(
                "cluster_formation.classic_config.nodes.{} = rabbit@{n}\n",
                i + 1
            ));
        }
    }
    c
}

impl Recipe for RabbitMq {
    fn kind(&self) -> BrokerKind {
        BrokerKind::RabbitMq
    }
    fn version(&self) -> &'static str {
        "3.10.8"
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
        // guest may log in from the host (the published port is on 127.0.0.1 only).
        let prepare = format!(
            "set -e; c=/var/lib/rabbitmq/.erlang.cookie; printf %s '{secret}' > $c; \
             chown rabbitmq:rabbitmq $c; chmod 400 $c; \
             mkdir -p /etc/rabbitmq/conf.d; \
             printf '{conf}' > /etc/rabbitmq/conf.d/90-gauntlet.conf",
            secret = ctx.secret,
            conf = config(ctx).replace('\n', "\\n"),
        );
        let start = match ctx.flavour {
            Flavour::Gauntlet => {
                "cd /var/lib/rabbitmq; exec setpriv --reuid=rabbitmq --regid=rabbitmq --init-groups \
                 /usr/lib/rabbitmq/bin/rabbitmq-server"
            }
            Flavour::Official => "exec docker-entrypoint.sh rabbitmq-server",
        };
        NodePlan {
            entrypoint: Some(vec!["sh".into(), "-c".into()]),
            cmd: vec![format!("{prepare}; {start}")],
            env: vec![
                "HOME=/var/lib/rabbitmq".into(),
                "RABBITMQ_LOGS=-".into(),
                format!("RABBITMQ_NODENAME=rabbit@{}", ctx.nodes[index]),
                // Idle Erlang schedulers spin by default; three nodes on two cores
                // then starve each other (and the rabbitmqctl calls that join them).
                "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=+sbwt none +sbwtdcpu none +sbwtdio none"
                    .into(),
            ],
            user: None,
        }
    }
    fn data_dir(&self, ctx: &ClusterContext) -> Option<DataDir> {
        // The node's database: quorum queues' write-ahead log and segments,
        // the metadata store, classic queues' message store.
        (ctx.flavour == Flavour::Gauntlet).then_some(DataDir {
            path: "/var/lib/rabbitmq",
            files: &[
                "mnesia/**/*.wal",
                "mnesia/**/*.segment",
                "mnesia/**/*.rdq",
                "mnesia/**/*.idx",
            ],
        })
    }
    fn node_ready(&self, _ctx: &ClusterContext, _index: usize) -> Probe {
        // The AMQP listener opens at the end of boot, once the node has joined its
        // cluster. A TCP connect costs nothing, where each `rabbitmqctl` call boots an
        // Erlang VM for seconds of CPU, taken from the nodes that are booting.
        Probe::exits_zero(Command::new(&[
            "bash",
            "-c",
            "exec 3<>/dev/tcp/127.0.0.1/5672",
        ]))
    }
    fn cluster_ready(&self, ctx: &ClusterContext) -> Vec<(usize, Probe)> {
        vec![(
            0,
            Probe::prints(
                ctl("-q eval 'length(rabbit_nodes:all_running()).'"),
                &ctx.len().to_string(),
            ),
        )]
    }
    fn role_probe(&self, role: gauntlet_nemesis::Role) -> Option<RoleProbe> {
        match role {
            // The leader of the first quorum queue (the queue workload's `gauntlet.<group>`),
            // or, for a classic queue, the node that hosts it (its process id names the node).
            gauntlet_nemesis::Role::Leader => Some(RoleProbe {
                command: ctl("-q --timeout 10 list_queues name type leader pid"),
                parse: |_node, out| {
                    out.lines().find_map(|l| {
                        let f: Vec<&str> = l.split_whitespace().collect();
                        let at = match f.as_slice() {
                            [_, "quorum", leader, ..] => *leader,
                            [_, "classic", .., pid] => pid.trim_start_matches('<'),
                            _ => return None,
                        };
                        let host = at.strip_prefix("rabbit@")?;
                        let host = host.split(['.', '>']).next()?;
                        (!host.is_empty()).then(|| host.to_string())
                    })
                },
            }),
            // Coordinators are Kafka's.
            _ => None,
        }
    }
    fn ready_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(120)
    }
}
