//! NATS with JetStream: every node lists every node's route (`nats://nK:6222`), so
//! the mesh forms as soon as the nodes can resolve each other.
//!
//! JetStream's `sync_interval` has no command-line flag: when the scenario sets
//! it (`[nats] sync-interval`), each node's entry point is `sh -c`, which writes
//! [`CONFIG_FILE`] (`jetstream { sync_interval: ... }`) and then execs nats-server
//! with `-c` that file and the same flags as without it. The official image has
//! no shell, so it refuses the setting ([`Recipe::check_durability`]).
use crate::broker::*;

/// The configuration file a node with `sync_interval` set is started with.
pub const CONFIG_FILE: &str = "/etc/gauntlet-nats.conf";

/// The configuration file's text for `sync`.
pub fn config_text(sync: SyncInterval) -> String {
    format!(
        "jetstream {{\n  sync_interval: \"{}\"\n}}\n",
        sync.config_value()
    )
}

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
        let entrypoint = match ctx.durability.nats_sync {
            None => vec![entry.into()],
            // The text has no single quote: it is quoted whole for the shell.
            Some(sync) => vec![
                "sh".into(),
                "-c".into(),
                format!(
                    "printf '%s' '{}' > {CONFIG_FILE} && exec {entry} -c {CONFIG_FILE} \"$@\"",
                    config_text(sync)
                ),
                "nats-server".into(),
            ],
        };
        NodePlan {
            entrypoint: Some(entrypoint),
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
    fn check_durability(&self, ctx: &ClusterContext) -> Result<(), String> {
        if ctx.durability.redis != RedisDurability::default() {
            return Err("[redis] sets Redis's append-only file, and the broker is nats".into());
        }
        match (ctx.durability.nats_sync, ctx.flavour) {
            (Some(_), Flavour::Official) => Err(format!(
                "[nats] sync-interval is written to a configuration file by `sh` when the node \
                 starts, and the official image {} has no shell: use Gauntlet's image \
                 (no `image`), or leave sync-interval out",
                ctx.image
            )),
            _ => Ok(()),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(flavour: Flavour, image: &str, sync: Option<SyncInterval>) -> ClusterContext {
        let mut c = ClusterContext::for_image(flavour, image);
        c.nodes = vec!["n1".into(), "n2".into(), "n3".into()];
        c.durability.nats_sync = sync;
        c
    }

    const FLAGS: &str = "-n n2 -js -sd /data/jetstream -p 4222 -m 8222 --cluster_name gauntlet \
                         --cluster nats://0.0.0.0:6222 \
                         --routes nats://n1:6222,nats://n2:6222,nats://n3:6222";

    #[test]
    fn without_sync_interval_the_node_is_started_as_before_the_setting() {
        for (flavour, image, entry) in [
            (
                Flavour::Gauntlet,
                "gauntlet/nats:2.15.1",
                "/usr/local/bin/nats-server",
            ),
            (Flavour::Official, "nats:2.10", "/nats-server"),
        ] {
            let c = ctx(flavour, image, None);
            let plan = Nats.node(&c, 1);
            assert_eq!(plan.entrypoint, Some(vec![entry.to_string()]));
            assert_eq!(plan.cmd.join(" "), FLAGS);
            assert_eq!(Nats.check_durability(&c), Ok(()));
        }
    }

    #[test]
    fn sync_interval_is_written_to_a_config_file_the_server_reads() {
        for (sync, value) in [
            (SyncInterval::Always, "always"),
            (
                SyncInterval::Every(std::time::Duration::from_secs(10)),
                "10s",
            ),
            (
                SyncInterval::Every(std::time::Duration::from_secs(120)),
                "120s",
            ),
            (
                SyncInterval::Every(std::time::Duration::from_millis(1500)),
                "1500ms",
            ),
        ] {
            assert_eq!(
                config_text(sync),
                format!("jetstream {{\n  sync_interval: \"{value}\"\n}}\n")
            );
            let c = ctx(Flavour::Gauntlet, "gauntlet/nats:2.15.1", Some(sync));
            let plan = Nats.node(&c, 1);
            let entry = plan.entrypoint.clone().expect("an entry point");
            assert_eq!(entry.len(), 4, "{entry:?}");
            assert_eq!(entry[..2], ["sh".to_string(), "-c".to_string()]);
            assert_eq!(
                entry[2],
                format!(
                    "printf '%s' 'jetstream {{\n  sync_interval: \"{value}\"\n}}\n' \
                     > /etc/gauntlet-nats.conf && exec /usr/local/bin/nats-server \
                     -c /etc/gauntlet-nats.conf \"$@\""
                )
            );
            // The flags are the same as without the setting ($0 is the name).
            assert_eq!(entry[3], "nats-server");
            assert_eq!(plan.cmd.join(" "), FLAGS);
            assert_eq!(Nats.check_durability(&c), Ok(()));
        }
    }

    #[test]
    fn the_config_file_is_what_sh_writes() {
        // The script's printf writes the text as it is: run it through a real sh.
        let dir = std::env::temp_dir().join(format!("gauntlet-nats-conf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join("nats.conf");
        let text = config_text(SyncInterval::Always);
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s' '{text}' > {}", file.display()))
            .output()
            .expect("sh runs");
        assert!(out.status.success(), "{out:?}");
        let written = std::fs::read_to_string(&file).expect("the file");
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(written, "jetstream {\n  sync_interval: \"always\"\n}\n");
    }

    #[test]
    fn the_official_image_refuses_sync_interval_and_redis_settings_are_refused() {
        let c = ctx(Flavour::Official, "nats:2.10", Some(SyncInterval::Always));
        let e = Nats.check_durability(&c).expect_err("refused");
        assert!(
            e.contains("sync-interval") && e.contains("nats:2.10"),
            "{e}"
        );
        let mut c = ctx(Flavour::Gauntlet, "gauntlet/nats:2.15.1", None);
        c.durability.redis.appendfsync = AppendFsync::Everysec;
        let e = Nats.check_durability(&c).expect_err("refused");
        assert!(e.contains("[redis]"), "{e}");
    }
}
