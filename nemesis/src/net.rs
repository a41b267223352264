//! Network changes on the nodes, as commands: what a partition, a netem delay and
//! their heal run inside a node. [`Cluster`](crate::Cluster)'s network methods run
//! these through `exec` by default; a backend whose nodes share a host's firewall
//! overrides them (every iptables and tc string of the nemesis is here).

/// The rules that drop what `node` receives from each of `ips` (and, with
/// `outbound`, what it sends to them).
pub fn drop_script(ips: &[String], outbound: bool) -> String {
    let mut rules: Vec<String> = Vec::new();
    for ip in ips {
        rules.push(format!("iptables -A INPUT -s {ip} -j DROP"));
        if outbound {
            rules.push(format!("iptables -A OUTPUT -d {ip} -j DROP"));
        }
    }
    if rules.is_empty() {
        "true".into()
    } else {
        rules.join(" && ")
    }
}

/// Removes every DROP rule the partitions added on a node.
pub const HEAL_SCRIPT: &str = "iptables -F INPUT && iptables -F OUTPUT";

/// Delays every packet a node sends by `ms`.
pub fn delay_script(ms: u32) -> String {
    format!("tc qdisc add dev eth0 root netem delay {ms}ms")
}

/// Removes a netem qdisc (and succeeds when there is none, or no `tc`).
pub const UNDELAY_SCRIPT: &str = "tc qdisc del dev eth0 root 2>/dev/null || true";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts() {
        let ips = ["10.0.0.2".to_string(), "10.0.0.3".to_string()];
        assert_eq!(
            drop_script(&ips, true),
            "iptables -A INPUT -s 10.0.0.2 -j DROP && iptables -A OUTPUT -d 10.0.0.2 -j DROP && \
             iptables -A INPUT -s 10.0.0.3 -j DROP && iptables -A OUTPUT -d 10.0.0.3 -j DROP"
        );
        assert_eq!(
            drop_script(&ips[..1], false),
            "iptables -A INPUT -s 10.0.0.2 -j DROP"
        );
        assert_eq!(drop_script(&[], true), "true");
        assert_eq!(
            delay_script(100),
            "tc qdisc add dev eth0 root netem delay 100ms"
        );
    }
}
