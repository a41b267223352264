//! `gauntlet worker`: one consumer as its own OS process (started by `gauntlet run`).
//!
//! It reports every op as a JSON line on stdout; the harness stamps index, time
//! and process number and records it. Closing its stdin asks it to finish the
//! op under way and exit; SIGKILL (the nemesis) leaves that op without completion.
use clap::Args;
use gauntlet_workloads::log::{run_log_worker, LogWorker, Membership};
use gauntlet_workloads::queue::{
    connect_consumer, run_consumer, ConsumerConfig, STALL_AFTER_ACK, STALL_BEFORE_ACK, STALL_NONE,
};
use gauntlet_workloads::Delivery;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

#[derive(Debug, Args)]
pub struct WorkerArgs {
    #[arg(long)]
    pub broker: String,
    /// host:port of each node's client port, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub addrs: Vec<String>,
    #[arg(long)]
    pub group: String,
    /// This worker's process number in the history.
    #[arg(long)]
    pub process: u64,
    /// The scenario's `[delivery]` table as JSON.
    #[arg(long, default_value = "{}")]
    pub delivery: String,
    #[arg(long, default_value_t = 16)]
    pub batch: usize,
    #[arg(long, default_value_t = 1)]
    pub processing_ms: u64,
    /// Final drain: take over everything pending, exit after 3 empty polls in a row.
    #[arg(long)]
    pub drain: bool,
    /// The workload: queue, or log (Kafka protocol: partitions, offsets, commits).
    #[arg(long, default_value = "queue")]
    pub workload: String,
    /// Log workload: subscribe (group membership) or assign (a fixed share of partitions).
    #[arg(long, default_value = "subscribe")]
    pub membership: String,
    /// Log workload with `assign`: this worker's slot among `--slots`.
    #[arg(long, default_value_t = 0)]
    pub slot: usize,
    #[arg(long, default_value_t = 1)]
    pub slots: usize,
}

/// stdin: `stall:before-ack` / `stall:after-ack` lines arm a stall; EOF means stop.
fn watch_stdin() -> (Arc<AtomicBool>, Arc<AtomicU8>) {
    let stop = Arc::new(AtomicBool::new(false));
    let stall = Arc::new(AtomicU8::new(STALL_NONE));
    let (s2, st2) = (stop.clone(), stall.clone());
    tokio::spawn(async move {
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            match line.trim() {
                "stall:before-ack" => st2.store(STALL_BEFORE_ACK, Ordering::Relaxed),
                "stall:after-ack" => st2.store(STALL_AFTER_ACK, Ordering::Relaxed),
                _ => {}
            }
        }
        s2.store(true, Ordering::Relaxed);
    });
    (stop, stall)
}

fn emitter() -> impl FnMut(gauntlet_workloads::queue::WireEvent) {
    let out = std::io::stdout();
    move |e| {
        if let Ok(line) = serde_json::to_string(&e) {
            let mut o = out.lock();
            let _ = writeln!(o, "{line}");
            let _ = o.flush();
        }
    }
}

/// A consumer of the log workload.
async fn run_log(
    args: &WorkerArgs,
    settings: &gauntlet_workloads::Resolved,
) -> anyhow::Result<i32> {
    if args.broker != "kafka" {
        anyhow::bail!("the log workload runs on kafka, not {}", args.broker);
    }
    let membership: Membership = args.membership.parse().map_err(anyhow::Error::msg)?;
    let w = LogWorker {
        bootstrap: args.addrs.join(","),
        group: args.group.clone(),
        membership,
        slot: args.slot,
        slots: args.slots,
        batch: args.batch,
        wait: if args.drain {
            Duration::from_secs(1)
        } else {
            Duration::from_millis(500)
        },
        processing: Duration::from_millis(if args.drain { 0 } else { args.processing_ms }),
        drain: args.drain,
    };
    let (stop, stall) = watch_stdin();
    let mut emit = emitter();
    run_log_worker(&w, settings, &stop, &stall, &mut emit).await?;
    Ok(0)
}

pub fn run(args: WorkerArgs) -> anyhow::Result<i32> {
    let delivery: Delivery = serde_json::from_str(&args.delivery)
        .map_err(|e| anyhow::anyhow!("--delivery is not a delivery table: {e}"))?;
    let settings = delivery.resolve();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = rt.block_on(async move {
        if args.workload == "log" {
            return run_log(&args, &settings).await;
        }
        let driver = gauntlet_workloads::driver_for(
            &args.broker,
            &args.addrs,
            settings.clone(),
            args.drain,
        )?;
        let mut consumer =
            connect_consumer(&*driver, &args.group, args.process, Duration::from_secs(30)).await?;
        let (stop, stall) = watch_stdin();
        let cfg = ConsumerConfig {
            group: args.group.clone(),
            batch: args.batch,
            wait: if args.drain {
                Duration::from_secs(1)
            } else {
                Duration::from_millis(500)
            },
            processing: Duration::from_millis(if args.drain { 0 } else { args.processing_ms }),
            ack_point: settings.ack_point,
            drain_after_empty: args.drain.then_some(3),
        };
        let mut emit = emitter();
        run_consumer(&mut *consumer, &cfg, &stop, &stall, &mut emit).await;
        anyhow::Ok(0)
    });
    // The stdin reader sits in a blocking read: do not wait for it (a drain worker's
    // stdin stays open, and dropping the runtime would wait for ever).
    rt.shutdown_background();
    result
}
