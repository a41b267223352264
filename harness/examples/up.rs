//! Bring a cluster up and hold it until Ctrl-C, which removes it:
//! `cargo run -p gauntlet-harness --example up -- rabbitmq 3`.
//! Prints each node's client endpoints, for trying a client or a fault by hand.
use gauntlet_harness::backend::docker::{self, DockerDeployment};
use gauntlet_harness::backend::ClusterSpec;
use gauntlet_harness::{BrokerKind, Deployment};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let broker: BrokerKind = args.next().unwrap_or_else(|| "redis".into()).parse()?;
    let nodes = args.next().map(|n| n.parse::<usize>()).transpose()?;
    let mut spec = ClusterSpec::new(broker).build_missing_image(true);
    spec.nodes = nodes;
    let run = spec.run_id.clone();
    let removed = docker::remove_on_ctrl_c(run.clone());
    let docker = docker::connect().await?;
    let dep = DockerDeployment::launch(&docker, spec).await?;
    println!("run {run}: {broker} is up");
    for e in dep.endpoints() {
        println!("  {} {} {}", e.node, e.port_name, e.addr());
    }
    println!("Ctrl-C removes it");
    // Held until Ctrl-C, which removes the run.
    match removed.await {
        Ok(Ok(())) => eprintln!("interrupted; run {run} removed"),
        Ok(Err(e)) => eprintln!("cleanup failed: {e} (run `gauntlet clean`)"),
        Err(e) => eprintln!("cleanup failed: {e} (run `gauntlet clean`)"),
    }
    std::process::exit(130);
}
