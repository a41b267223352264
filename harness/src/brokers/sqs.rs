//! An SQS-compatible server: moto's server mode, one node, state in memory.
use crate::broker::*;

/// The SQS recipe: one moto server.
pub struct Moto;

const PORTS: &[PortSpec] = &[PortSpec {
    name: "http",
    port: 5000,
}];

impl Recipe for Moto {
    fn kind(&self) -> BrokerKind {
        BrokerKind::Sqs
    }
    fn version(&self) -> &'static str {
        "moto-5.2.5"
    }
    fn ports(&self) -> &'static [PortSpec] {
        PORTS
    }
    fn default_nodes(&self) -> usize {
        1
    }
    fn capabilities(&self, _flavour: Flavour) -> Capabilities {
        Capabilities {
            max_nodes: 1,
            durable_across_restart: false,
            replicated: false,
            transactions: false,
            process_faults: true,
            pause: true,
            net_admin_exec: true,
        }
    }
    fn node(&self, ctx: &ClusterContext, _index: usize) -> NodePlan {
        let entry = match ctx.flavour {
            Flavour::Gauntlet => "/opt/moto/bin/moto_server",
            Flavour::Official => "moto_server",
        };
        NodePlan {
            entrypoint: Some(vec![entry.into()]),
            cmd: vec!["-H".into(), "0.0.0.0".into(), "-p".into(), "5000".into()],
            env: Vec::new(),
            user: None,
        }
    }
    fn node_ready(&self, _ctx: &ClusterContext, _index: usize) -> Probe {
        Probe::http("http", "/moto-api/", None)
    }
}
