//! NATS with JetStream: every node lists every node's route (`nats://nK:6222`), so
//! the mesh forms as soon as the nodes can resolve each other.
use crate::broker::*;

/// The NATS recipe: a JetStream cluster whose nodes route to each other.
pub struct Nats;

const PORTS: &[PortSpec] = &[
    PortSpec {
        name: "client",
        port: 4222,
    },
    PortSpec {
        name: "monitor",
        port: 8222,
    },
];

impl Recipe for Nats {
    fn kind(&self) -> BrokerKind {
        BrokerKind::Nats
    }
    fn version(&self) -> &'static str {
        "2.15.1"
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
            "-n",
            &ctx.nodes[index],
            "-js",
            "-sd",
            "/data/jetstream",
            "-p",
            "4222",
            "-m",
            "8222",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if ctx.len() > 1 {
            let routes: Vec<String> = ctx
                .nodes
                .iter()
                .map(|n| format!("nats://{n}:6222"))
                .collect();
            cmd.extend([
                "--cluster_name".into(),
                "gauntlet".into(),
                "--cluster".into(),
                "nats://0.0.0.0:6222".into(),
                "--routes".into(),
                routes.join(","),
            ]);
        }
        let entry = match ctx.flavour {
            Flavour::Gauntlet => "/usr/local/bin/nats-server",
            Flavour::Official => "/nats-server",
        };
        NodePlan {
            entrypoint: Some(vec![entry.into()]),
            cmd,
            env: Vec::new(),
            user: None,
        }
    }
    fn data_dir(&self, ctx: &ClusterContext) -> Option<DataDir> {
        // JetStream's file store: message blocks and their indexes, streams'
        // and consumers' state, and the Raft logs of the replicated ones.
        (ctx.flavour == Flavour::Gauntlet).then_some(DataDir {
            path: "/data",
            files: &[
                "jetstream/**/*.blk",
                "jetstream/**/index.db",
                "jetstream/**/*.idx",
                "jetstream/**/o.dat",
            ],
        })
    }
    fn node_ready(&self, _ctx: &ClusterContext, _index: usize) -> Probe {
        Probe::http("monitor", "/healthz?js-enabled-only=true", None)
    }
    fn cluster_ready(&self, ctx: &ClusterContext) -> Vec<(usize, Probe)> {
        if ctx.len() < 2 {
            return Vec::new();
        }
        // Route pooling makes several routes per peer: look for each peer by name.
        let mut probes = Vec::new();
        for i in 0..ctx.len() {
            for (j, peer) in ctx.nodes.iter().enumerate() {
                if i != j {
                    let want = format!("\"remote_name\": \"{peer}\"");
                    probes.push((i, Probe::http("monitor", "/routez", Some(&want))));
                }
            }
            probes.push((i, Probe::http("monitor", "/healthz", None)));
        }
        probes
    }
    fn role_probe(&self, role: gauntlet_nemesis::Role) -> Option<RoleProbe> {
        match role {
            // The stream's leader, from the node's own monitoring endpoint (/jsz). The
            // queue workload has one stream; with several, the first listed.
            gauntlet_nemesis::Role::Leader => Some(RoleProbe {
                command: Command::new(&[
                    "python3",
                    "-c",
                    "import json,urllib.request as u; \
                     d=json.load(u.urlopen('http://127.0.0.1:8222/jsz?streams=true',timeout=5)); \
                     [print((s.get('cluster') or {}).get('leader') or '') \
                     for a in d.get('account_details') or [] for s in a.get('stream_detail') or []]",
                ]),
                parse: |_node, out| {
                    out.lines()
                        .map(str::trim)
                        .find(|l| !l.is_empty())
                        .map(str::to_string)
                },
            }),
            // Coordinators are Kafka's.
            _ => None,
        }
    }
}
