//! What Gauntlet runs on an SSH host, as shell text: every command of the SSH
//! backend is built here, so `--plan` can print exactly what would run.
//!
//! May import: this backend's inventory only.
use super::inventory::Host;

/// Gauntlet's own iptables chain on a host, jumped to from INPUT and OUTPUT:
/// a heal flushes and removes it and never touches the host's own rules.
pub const CHAIN: &str = "GAUNTLET";

/// Quotes `s` for a POSIX shell (single quotes; a single quote inside is closed,
/// escaped and reopened).
pub fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `script` with `sudo -n` in front when the host says so (a login that is not
/// root but may run iptables, tc and kill through sudo without a password).
pub fn privileged(host: &Host, script: &str) -> String {
    if host.sudo {
        format!("sudo -n sh -c {}", quote(script))
    } else {
        script.to_string()
    }
}

/// The `ssh` command line that runs `script` on `host`: batch mode (never a
/// password prompt), the host's key policy, one master connection per host
/// shared by every command of the run (`ControlMaster`, under `control_dir`).
pub fn ssh_argv(host: &Host, control_dir: &str, script: &str) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "ssh".into(),
        "-o".into(),
        "BatchMode=yes".into(),
        "-o".into(),
        format!("StrictHostKeyChecking={}", host.known_hosts.ssh_option()),
        "-o".into(),
        "ControlMaster=auto".into(),
        "-o".into(),
        format!("ControlPath={control_dir}/%C"),
        "-o".into(),
        "ControlPersist=60".into(),
        "-o".into(),
        "ConnectTimeout=10".into(),
        "-p".into(),
        host.port.to_string(),
    ];
    if let Some(f) = &host.known_hosts_file {
        a.push("-o".into());
        a.push(format!("UserKnownHostsFile={}", f.display()));
    }
    if let Some(id) = &host.identity {
        a.push("-i".into());
        a.push(id.display().to_string());
        a.push("-o".into());
        a.push("IdentitiesOnly=yes".into());
    }
    if let Some(u) = &host.user {
        a.push("-l".into());
        a.push(u.clone());
    }
    a.push(host.address.clone());
    a.push("--".into());
    // ssh joins what follows into one line for the remote shell: one quoted word.
    a.push(format!("sh -c {}", quote(script)));
    a
}

/// The broker's pid, from the inventory's command; fails when there is none.
fn pid_of(pid_cmd: &str) -> String {
    format!(
        "p=$({pid_cmd} | head -n 1); [ -n \"$p\" ] || {{ echo 'no broker process' >&2; exit 3; }}"
    )
}

/// SIGKILL of the broker.
pub fn kill(pid_cmd: &str) -> String {
    format!("{} && kill -KILL \"$p\"", pid_of(pid_cmd))
}

/// SIGTERM, up to `grace_s` seconds for it to end, then SIGKILL.
pub fn stop(pid_cmd: &str, grace_s: u64) -> String {
    format!(
        "{} && kill -TERM \"$p\" && i=0 && while kill -0 \"$p\" 2>/dev/null && [ $i -lt {grace_s} ]; do sleep 1; i=$((i+1)); done; kill -KILL \"$p\" 2>/dev/null; true",
        pid_of(pid_cmd)
    )
}

/// SIGSTOP (`pause`) or SIGCONT (`unpause`) of the broker.
pub fn signal(pid_cmd: &str, sig: &str) -> String {
    format!("{} && kill -{sig} \"$p\"", pid_of(pid_cmd))
}

/// Creates Gauntlet's chain when missing and jumps to it from INPUT and OUTPUT once.
fn chain_setup() -> String {
    format!(
        "(iptables -N {CHAIN} 2>/dev/null || true) && \
         (iptables -C INPUT -j {CHAIN} 2>/dev/null || iptables -I INPUT -j {CHAIN}) && \
         (iptables -C OUTPUT -j {CHAIN} 2>/dev/null || iptables -I OUTPUT -j {CHAIN})"
    )
}

/// Drops what the host receives from each of `ips` (and with `outbound`, what
/// it sends to them), in Gauntlet's chain.
pub fn drop_traffic(ips: &[String], outbound: bool) -> String {
    let mut s = chain_setup();
    for ip in ips {
        s.push_str(&format!(" && iptables -A {CHAIN} -s {ip} -j DROP"));
        if outbound {
            s.push_str(&format!(" && iptables -A {CHAIN} -d {ip} -j DROP"));
        }
    }
    s
}

/// Removes Gauntlet's chain and its jumps; succeeds when there is none.
pub fn heal_traffic() -> String {
    format!(
        "(iptables -D INPUT -j {CHAIN} 2>/dev/null; iptables -D OUTPUT -j {CHAIN} 2>/dev/null; \
         iptables -F {CHAIN} 2>/dev/null; iptables -X {CHAIN} 2>/dev/null; true)"
    )
}

/// Delays what the host sends on `interface` by `ms` (netem).
pub fn add_delay(interface: &str, ms: u32) -> String {
    format!(
        "tc qdisc add dev {} root netem delay {ms}ms",
        quote(interface)
    )
}

/// Removes the netem qdisc; succeeds when there is none.
pub fn remove_delay(interface: &str) -> String {
    format!(
        "tc qdisc del dev {} root netem 2>/dev/null || true",
        quote(interface)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::ssh::inventory::KnownHosts;

    fn host() -> Host {
        Host {
            address: "10.0.0.11".into(),
            port: 2222,
            user: Some("ops".into()),
            identity: Some("/keys/id".into()),
            known_hosts: KnownHosts::Strict,
            known_hosts_file: Some("/keys/known".into()),
            interface: "ens3".into(),
            sudo: false,
        }
    }

    #[test]
    fn quoting_survives_the_remote_shell() {
        assert_eq!(quote("pgrep"), "pgrep");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        // Through a real shell: what it prints is what was quoted.
        for s in ["a b", "it's", "$HOME `x` \"y\"", "x;y&&z"] {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", quote(s)))
                .output()
                .expect("sh");
            assert_eq!(String::from_utf8_lossy(&out.stdout), s);
        }
    }

    #[test]
    fn the_ssh_line_never_prompts_and_keeps_the_key_policy() {
        let a = ssh_argv(&host(), "/run/g", "kill -KILL 7");
        let line = a.join(" ");
        assert!(
            line.starts_with("ssh -o BatchMode=yes -o StrictHostKeyChecking=yes "),
            "{line}"
        );
        assert!(
            line.contains("-o ControlMaster=auto -o ControlPath=/run/g/%C"),
            "{line}"
        );
        assert!(
            line.contains(
                "-p 2222 -o UserKnownHostsFile=/keys/known -i /keys/id -o IdentitiesOnly=yes -l ops 10.0.0.11 --"
            ),
            "{line}"
        );
        assert_eq!(a.last().map(String::as_str), Some("sh -c 'kill -KILL 7'"));
        let mut h = host();
        h.known_hosts = KnownHosts::AcceptNew;
        h.identity = None;
        h.user = None;
        let line = ssh_argv(&h, "/run/g", "true").join(" ");
        assert!(line.contains("StrictHostKeyChecking=accept-new"), "{line}");
        assert!(!line.contains(" -i ") && !line.contains(" -l "), "{line}");
    }

    #[test]
    fn partitions_live_in_gauntlets_chain_and_the_heal_removes_only_it() {
        let d = drop_traffic(&["10.0.0.12".into()], true);
        assert!(d.contains("iptables -N GAUNTLET"), "{d}");
        assert!(
            d.contains(
                "(iptables -C INPUT -j GAUNTLET 2>/dev/null || iptables -I INPUT -j GAUNTLET)"
            ),
            "{d}"
        );
        assert!(d.ends_with("iptables -A GAUNTLET -s 10.0.0.12 -j DROP && iptables -A GAUNTLET -d 10.0.0.12 -j DROP"), "{d}");
        let h = heal_traffic();
        assert!(
            !h.contains("-F INPUT") && !h.contains("-F OUTPUT"),
            "never the host's own rules: {h}"
        );
        assert!(h.contains("iptables -X GAUNTLET"), "{h}");
    }

    #[test]
    fn process_faults_find_the_broker_first() {
        let k = kill("pgrep -x redis-server");
        assert!(
            k.starts_with("p=$(pgrep -x redis-server | head -n 1);"),
            "{k}"
        );
        assert!(k.ends_with("&& kill -KILL \"$p\""), "{k}");
        assert!(signal("pgrep -x x", "STOP").ends_with("kill -STOP \"$p\""));
        assert!(stop("pgrep -x x", 5).contains("[ $i -lt 5 ]"));
        let mut h = host();
        h.sudo = true;
        assert_eq!(
            privileged(&h, "kill -KILL 7"),
            "sudo -n sh -c 'kill -KILL 7'"
        );
        assert_eq!(
            add_delay("ens3", 100),
            "tc qdisc add dev ens3 root netem delay 100ms"
        );
    }

    #[test]
    fn the_scripts_are_valid_shell() {
        for s in [
            kill("pgrep -x redis-server"),
            stop("pgrep -x redis-server", 3),
            signal("pgrep -x redis-server", "CONT"),
            drop_traffic(&["10.0.0.12".into(), "10.0.0.13".into()], false),
            heal_traffic(),
            add_delay("eth0", 50),
            remove_delay("eth0"),
        ] {
            let out = std::process::Command::new("sh")
                .arg("-n")
                .arg("-c")
                .arg(&s)
                .output()
                .expect("sh");
            assert!(
                out.status.success(),
                "{s}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
