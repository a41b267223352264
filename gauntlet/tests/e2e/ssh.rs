//! The SSH backend for real (issue 19), on Gauntlet's SSH lab (`gauntlet lab
//! up`): three containers from Gauntlet's SSH host image (OpenSSH's server and
//! Redis from Debian), each with a key generated for the lab, and from then on
//! treated only as SSH hosts: their addresses, port 22, the key and a
//! known_hosts file filled by `ssh-keyscan` (strict checking). Redis is started
//! on them over SSH (`mode = "installed"`: n1 primary, n2 and n3 its
//! replicas), then `gauntlet run --hosts` drives them: a run with
//! kill-consumer, partition and restart-broker stays valid, the at-most-once
//! negative control is caught, `--plan` prints the commands and changes nothing,
//! Ctrl-C heals the hosts before the run exits, and `gauntlet heal --hosts`
//! undoes a partition that a SIGKILLed Gauntlet left.
use crate::common::{count, no_leftovers, report, results_dir, schedule_file, wait_for, Run};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Gauntlet's SSH lab (`gauntlet lab up`): three machines in containers, used
/// only as SSH hosts; removed (`gauntlet lab down`) when dropped.
struct Hosts {
    dir: PathBuf,
    ips: Vec<String>,
}

impl Hosts {
    fn start(name: &str, broker: &str) -> Hosts {
        let dir = results_dir(&format!("ssh-lab-{name}"));
        let out = Command::new(env!("CARGO_BIN_EXE_gauntlet"))
            .args(["lab", "up", "--broker", broker, "--dir"])
            .arg(&dir)
            .output()
            .expect("gauntlet lab up");
        assert!(out.status.success(), "gauntlet lab up: {out:?}");
        let ips = std::fs::read_to_string(dir.join("addresses"))
            .expect("addresses")
            .lines()
            .map(str::to_string)
            .collect();
        Hosts { dir, ips }
    }

    /// Runs `script` on host `i` (0-based) over SSH, as Gauntlet would.
    fn ssh(&self, i: usize, script: &str) -> Output {
        Command::new("ssh")
            .args([
                "-o",
                "BatchMode=yes",
                "-o",
                "StrictHostKeyChecking=yes",
                "-o",
            ])
            .arg(format!(
                "UserKnownHostsFile={}",
                self.dir.join("known_hosts").display()
            ))
            .arg("-i")
            .arg(self.dir.join("id"))
            .args(["-l", "root", &self.ips[i], "--", script])
            .output()
            .expect("ssh")
    }

    fn ssh_ok(&self, i: usize, script: &str) -> String {
        let out = self.ssh(i, script);
        assert!(
            out.status.success(),
            "{script} on {}: {}",
            self.ips[i],
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn inventory(&self) -> PathBuf {
        self.dir.join("hosts.toml")
    }

    /// Whether host `i` has Gauntlet's iptables chain.
    fn has_chain(&self, i: usize) -> bool {
        self.ssh(i, "iptables -S GAUNTLET").status.success()
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        let _ = Command::new(env!("CARGO_BIN_EXE_gauntlet"))
            .args(["lab", "down", "--dir"])
            .arg(&self.dir)
            .output();
    }
}

/// `gauntlet run --hosts INVENTORY ARGS...`, read as every e2e run is.
fn gauntlet_run(name: &str, inventory: &Path, args: &[&str]) -> Run {
    let inventory = inventory.display().to_string();
    let mut all = vec!["--hosts", inventory.as_str()];
    all.extend_from_slice(args);
    crate::common::run(name, &all)
}

#[test]
fn redis_on_ssh_hosts_faults_negative_control_and_heal_after_a_killed_run() {
    let t = Instant::now();
    let hosts = Hosts::start("redis", "redis");
    let inventory = hosts.inventory();

    // 1. The seed's faults over SSH, each once from an explicit schedule: the
    // consumer killed before its ack, a node cut off from the others, the
    // primary restarted in the middle of a batch. At-least-once holds.
    let schedule = schedule_file(
        "ssh-redis",
        &[
            (3_000, 0, "kill-consumer:before-ack", "n1", 1),
            (6_000, 3_000, "partition", "n2", 2),
            (12_000, 0, "restart-broker:mid-batch", "n1", 3),
        ],
    );
    let replay = schedule.display().to_string();
    let r = gauntlet_run(
        "ssh-redis",
        &inventory,
        &[
            "--broker", "redis", "--replay", &replay, "--time", "16s", "--rate", "50",
        ],
    );
    let _ = std::fs::remove_file(&schedule);
    report("ssh redis kill-consumer+partition+restart-broker", &r, t);
    assert_eq!(r.code, 0, "{}", r.verdict);
    assert_eq!(count(&r, "lost"), 0, "{}", r.verdict["anomalies"]);
    let events = crate::common::nemesis_events(&r.dir);
    let info = |f: &str| {
        events
            .iter()
            .find(|e| e["f"] == f && e["type"] == "info")
            .cloned()
            .unwrap_or_else(|| panic!("no {f} in {events:?}"))
    };
    assert_eq!(info("kill-consumer")["value"]["stalled"], true);
    assert_eq!(info("partition")["value"]["isolated"], "n2");
    assert_eq!(info("restart")["value"]["mid_batch"], true);
    assert_eq!(info("restarted")["value"]["node"], "n1");
    assert_eq!(info("heal-all")["value"]["problems"], serde_json::json!([]));
    assert!(
        r.dir.join("nodes").join("n3.log").is_file(),
        "the hosts' logs"
    );
    assert!((0..3).all(|i| !hosts.has_chain(i)), "healed at the end");

    // 1b. The client proxy beside Gauntlet and leader targeting work against
    // SSH hosts as against containers: acknowledgements dropped on n1's link,
    // then the primary (found by the recipe's role probe, over SSH) killed.
    let schedule = schedule_file(
        "ssh-redis-proxy",
        &[
            (3_000, 3_000, "ack-loss", "n1", 1),
            (8_000, 2_000, "kill-broker:leader", "n2", 2),
        ],
    );
    let replay = schedule.display().to_string();
    let r = gauntlet_run(
        "ssh-redis-proxy",
        &inventory,
        &[
            "--broker", "redis", "--replay", &replay, "--time", "14s", "--rate", "40",
        ],
    );
    let _ = std::fs::remove_file(&schedule);
    report("ssh redis ack-loss + kill-broker:leader", &r, t);
    assert_eq!(r.code, 0, "{}", r.verdict);
    assert_eq!(count(&r, "lost"), 0, "{}", r.verdict["anomalies"]);
    let events = crate::common::nemesis_events(&r.dir);
    let dropped = events
        .iter()
        .filter(|e| e["f"] == "ack-loss-end")
        .filter_map(|e| e["value"]["healed"]["stats"]["n1"]["dropped_down"].as_u64())
        .sum::<u64>();
    assert!(dropped > 0, "no acknowledgement dropped: {events:?}");
    let kill = events
        .iter()
        .find(|e| e["f"] == "kill" && e["type"] == "info")
        .unwrap_or_else(|| panic!("no kill in {events:?}"));
    assert_eq!(kill["value"]["role"], "leader");
    assert_eq!(kill["value"]["node"], "n1", "the primary");

    // 2. The negative control: acknowledged before processing, killed while
    // processing: lost, caught.
    let r = gauntlet_run(
        "ssh-redis-d5",
        &inventory,
        &[
            "--broker",
            "redis",
            "--mode",
            "at-most-once",
            "--nemesis",
            "kill-consumer:after-ack",
            "--time",
            "14s",
            "--rate",
            "50",
        ],
    );
    report("ssh redis at-most-once kill-consumer:after-ack", &r, t);
    assert_eq!(r.code, 1, "{}", r.verdict);
    assert!(count(&r, "lost") > 0, "{}", r.verdict["anomalies"]);

    // 3. --plan prints every command and runs none: the hosts' rules and
    // processes are as they were.
    let state = |hosts: &Hosts| -> Vec<String> {
        (0..3)
            .map(|i| hosts.ssh_ok(i, "pgrep -x redis-server; iptables -S; tc qdisc show"))
            .collect()
    };
    let before = state(&hosts);
    let out = Command::new(env!("CARGO_BIN_EXE_gauntlet"))
        .arg("run")
        .arg("--hosts")
        .arg(&inventory)
        .args([
            "--broker",
            "redis",
            "--nemesis",
            "partition,pause,restart-broker",
            "--time",
            "30s",
            "--plan",
        ])
        .output()
        .expect("gauntlet run --plan");
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    for want in [
        "iptables -A GAUNTLET",
        "kill -STOP",
        "restart-broker on ",
        "kill -KILL",
        "# at the end",
    ] {
        assert!(plan.contains(want), "{want} not in the plan:\n{plan}");
    }
    assert_eq!(state(&hosts), before, "--plan changed a host");

    // 4. Ctrl-C in the middle of a partition: the run heals every host before
    // it exits (130).
    let partitioned_run = |name: &str| {
        let child = Command::new(env!("CARGO_BIN_EXE_gauntlet"))
            .arg("run")
            .arg("--hosts")
            .arg(&inventory)
            .args([
                "--broker",
                "redis",
                "--nemesis",
                "partition",
                "--time",
                "60s",
            ])
            .arg("--results")
            .arg(results_dir(name))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start gauntlet");
        // The deployment over SSH comes first: generous on a loaded machine.
        let partitioned = wait_for(
            &format!("{name}: a host partitioned"),
            Duration::from_secs(180),
            || (0..3).find(|&i| hosts.has_chain(i)),
        );
        (child, partitioned)
    };
    let (mut child, _) = partitioned_run("ssh-interrupted");
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(sent.success());
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert!((0..3).all(|i| !hosts.has_chain(i)), "healed on Ctrl-C");

    // 5. Gauntlet SIGKILLed in the middle of a partition leaves the rule behind;
    // `gauntlet heal --hosts` removes it and the hosts reach each other again.
    let (mut child, partitioned) = partitioned_run("ssh-killed");
    let _ = child.kill();
    let _ = child.wait();
    assert!(hosts.has_chain(partitioned), "the killed run left its rule");
    let out = Command::new(env!("CARGO_BIN_EXE_gauntlet"))
        .arg("heal")
        .arg("--hosts")
        .arg(&inventory)
        .output()
        .expect("gauntlet heal");
    assert!(out.status.success(), "{out:?}");
    assert!((0..3).all(|i| !hosts.has_chain(i)), "healed");
    for (i, j) in [(0, 1), (1, 2), (2, 0)] {
        let pong = hosts.ssh_ok(i, &format!("redis-cli -h {} ping", hosts.ips[j]));
        assert_eq!(
            pong.trim(),
            "PONG",
            "{} reaches {}",
            hosts.ips[i],
            hosts.ips[j]
        );
    }
    // The hosts' own rules were never touched.
    for i in 0..3 {
        let rules = hosts.ssh_ok(i, "iptables -S");
        assert!(!rules.contains("GAUNTLET"), "{rules}");
    }
    no_leftovers(&r.dir);
}

/// `mode = "install"` (issue 19): Gauntlet installs NATS on the three hosts from
/// the distribution's package (Debian bookworm's nats-server, from the image's
/// apt cache: no address outside this machine is reached), writes each node's
/// configuration, forms the JetStream cluster, runs the faults, and at teardown
/// removes what it wrote. `--plan` first lists the install and installs nothing.
#[test]
fn nats_installed_by_gauntlet_on_ssh_hosts() {
    let t = Instant::now();
    let hosts = Hosts::start("nats", "nats");
    let inventory = hosts.inventory();
    let installed = |i: usize| hosts.ssh(i, "command -v nats-server").status.success();
    assert!(
        !installed(0),
        "the image has the package cached, not installed"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_gauntlet"))
        .arg("run")
        .arg("--hosts")
        .arg(&inventory)
        .args(["--broker", "nats", "--nemesis", "partition", "--plan"])
        .output()
        .expect("gauntlet run --plan");
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(plan.contains("apt-get install -y -q nats-server"), "{plan}");
    assert!(plan.contains("server_name: n2"), "{plan}");
    assert!((0..3).all(|i| !installed(i)), "--plan installed nothing");

    let schedule = schedule_file(
        "ssh-nats",
        &[
            (3_000, 0, "kill-consumer:before-ack", "n1", 1),
            (6_000, 3_000, "partition", "n2", 2),
            (12_000, 0, "restart-broker:mid-batch", "n3", 3),
        ],
    );
    let replay = schedule.display().to_string();
    let r = gauntlet_run(
        "ssh-nats",
        &inventory,
        &[
            "--broker",
            "nats",
            "--mode",
            "idempotent",
            "--replay",
            &replay,
            "--time",
            "20s",
            "--rate",
            "50",
        ],
    );
    let _ = std::fs::remove_file(&schedule);
    report(
        "ssh nats (install) kill-consumer+partition+restart-broker",
        &r,
        t,
    );
    assert_eq!(r.code, 0, "{}", r.verdict);
    assert_eq!(count(&r, "lost"), 0, "{}", r.verdict["anomalies"]);
    assert!(
        r.dir.join("nodes").join("n2.log").is_file(),
        "the nodes' logs"
    );
    for i in 0..3 {
        assert!(installed(i), "the package stays on host {i}");
        let left = hosts.ssh_ok(
            i,
            "pgrep -f '^nats-server -c' || true; ls /var/lib/gauntlet /etc/gauntlet 2>/dev/null || true",
        );
        assert_eq!(
            left.trim(),
            "",
            "host {i}: the broker and its data are gone"
        );
    }

    // The negative control on what Gauntlet installed: acknowledged before
    // processing, killed while processing.
    let r = gauntlet_run(
        "ssh-nats-d5",
        &inventory,
        &[
            "--broker",
            "nats",
            "--mode",
            "at-most-once",
            "--nemesis",
            "kill-consumer:after-ack",
            "--time",
            "14s",
            "--rate",
            "50",
        ],
    );
    report(
        "ssh nats (install) at-most-once kill-consumer:after-ack",
        &r,
        t,
    );
    assert_eq!(r.code, 1, "{}", r.verdict);
    assert!(count(&r, "lost") > 0, "{}", r.verdict["anomalies"]);
}
