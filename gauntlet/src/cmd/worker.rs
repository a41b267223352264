//! `gauntlet worker`: one consumer as its own OS process (started by `gauntlet run`).
//!
//! It reports every op as a JSON line on stdout; the harness stamps index, time
//! and process number and records it. Closing its stdin asks it to finish the
//! op under way and exit; SIGKILL (the nemesis) leaves that op without completion.
use clap::Args;
use gauntlet_workloads::log::{run_log_worker, LogWorker, Membership};
use gauntlet_workloads::queue::{
    connect_consumer, connect_drain_consumer, run_consumer, ConsumerConfig, DrainSource, WireEvent,
    MISSING, MISSING_CONFIRM,
};
use gauntlet_workloads::stall::{Stall, StallPoint};
use gauntlet_workloads::worker_call::{LogSlot, WorkerCall};
use gauntlet_workloads::{BrokerKind, Delivery};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

/// The arguments [`WorkerCall::to_args`] writes; [`WorkerArgs::call`] reads them back.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    #[arg(long, value_parser = super::named::<BrokerKind>(super::brokers()))]
    pub broker: BrokerKind,
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
    #[arg(long, default_value = "queue", value_parser = ["queue", "log"])]
    pub workload: String,
    /// Log workload: subscribe (group membership) or assign (a fixed share of partitions).
    #[arg(long, default_value = "subscribe", value_parser = super::named::<Membership>(Membership::ALL.map(|m| m.name())))]
    pub membership: Membership,
    /// Log workload with `assign`: this worker's slot among `--slots`.
    #[arg(long, default_value_t = 0)]
    pub slot: usize,
    #[arg(long, default_value_t = 1)]
    pub slots: usize,
    /// The dedup store and how the consumer uses it, as JSON (seed D7).
    #[arg(long)]
    pub dedup: Option<String>,
}

impl WorkerArgs {
    /// The call these arguments describe.
    pub fn call(&self) -> anyhow::Result<WorkerCall> {
        let delivery: Delivery = serde_json::from_str(&self.delivery)
            .map_err(|e| anyhow::anyhow!("--delivery is not a delivery table: {e}"))?;
        let dedup = match &self.dedup {
            Some(d) => Some(
                serde_json::from_str(d)
                    .map_err(|e| anyhow::anyhow!("--dedup is not a dedup setting: {e}"))?,
            ),
            None => None,
        };
        Ok(WorkerCall {
            dedup,
            broker: self.broker,
            addrs: self.addrs.clone(),
            group: self.group.clone(),
            process: self.process,
            delivery,
            batch: self.batch,
            processing_ms: self.processing_ms,
            drain: self.drain,
            log: (self.workload == "log").then_some(LogSlot {
                membership: self.membership,
                slot: self.slot,
                slots: self.slots,
            }),
        })
    }
}

/// stdin: a [`StallPoint::command`] line arms a stall; EOF means stop.
fn watch_stdin() -> (Arc<AtomicBool>, Arc<Stall>) {
    let stop = Arc::new(AtomicBool::new(false));
    let stall = Arc::new(Stall::new());
    let (s2, st2) = (stop.clone(), stall.clone());
    tokio::spawn(async move {
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(point) = StallPoint::from_command(&line) {
                st2.arm(point);
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
    args: &WorkerCall,
    slot: LogSlot,
    settings: &gauntlet_workloads::Resolved,
) -> anyhow::Result<i32> {
    if args.broker != BrokerKind::Kafka {
        anyhow::bail!("the log workload runs on kafka, not {}", args.broker);
    }
    let w = LogWorker {
        bootstrap: args.addrs.join(","),
        group: args.group.clone(),
        membership: slot.membership,
        slot: slot.slot,
        slots: slot.slots,
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

/// Messages per poll of a drain worker at least.
const DRAIN_BATCH: usize = 256;

pub fn run(args: WorkerArgs) -> anyhow::Result<i32> {
    let args = args.call()?;
    let settings = args.delivery.resolve();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = rt.block_on(async move {
        if let Some(slot) = args.log {
            return run_log(&args, slot, &settings).await;
        }
        // The stream exists (the harness created it); its replicas are the harness's.
        let driver = gauntlet_workloads::driver_for(
            args.broker,
            &args.addrs,
            settings.clone(),
            args.drain,
            None,
        )?;
        let patience = Duration::from_secs(30);
        let mut consumer = if args.drain {
            match connect_drain_consumer(
                &*driver,
                &args.group,
                args.process,
                patience,
                MISSING_CONFIRM,
            )
            .await?
            {
                DrainSource::Ready(c) => c,
                DrainSource::Missing(answer) => {
                    // The broker's final word: the harness writes it on the
                    // `drained` marker, and nothing is left to read.
                    emitter()(WireEvent {
                        kind: MISSING.into(),
                        f: "drain".into(),
                        group: Some(args.group.clone()),
                        value: serde_json::to_value(&answer).ok(),
                        error: None,
                    });
                    return anyhow::Ok(0);
                }
            }
        } else {
            connect_consumer(&*driver, &args.group, args.process, patience).await?
        };
        let (stop, stall) = watch_stdin();
        let cfg = ConsumerConfig {
            group: args.group.clone(),
            // The drain reads what is left as fast as it can: a backlog of a
            // run at full rate is hundreds of thousands of messages.
            batch: if args.drain {
                args.batch.max(DRAIN_BATCH)
            } else {
                args.batch
            },
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
        match &args.dedup {
            Some(d) => {
                gauntlet_workloads::dedup::run_dedup_consumer(
                    &mut *consumer,
                    &cfg,
                    d,
                    &stop,
                    &stall,
                    &mut emit,
                )
                .await
            }
            None => run_consumer(&mut *consumer, &cfg, &stop, &stall, &mut emit).await,
        }
        anyhow::Ok(0)
    });
    // The stdin reader sits in a blocking read: do not wait for it (a drain worker's
    // stdin stays open, and dropping the runtime would wait for ever).
    rt.shutdown_background();
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(subcommand)]
        cmd: Sub,
    }
    #[derive(Debug, clap::Subcommand)]
    enum Sub {
        Worker(WorkerArgs),
    }

    /// What the harness writes is what the worker reads.
    fn round_trip(call: &WorkerCall) -> WorkerCall {
        let argv = std::iter::once("gauntlet".to_string()).chain(call.to_args());
        let Sub::Worker(args) = Cli::try_parse_from(argv).expect("parses").cmd;
        args.call().expect("a call")
    }

    #[test]
    fn the_harness_arguments_parse_back_to_the_same_call() {
        let mut call = WorkerCall {
            broker: BrokerKind::Redis,
            addrs: vec!["127.0.0.1:1".into(), "127.0.0.1:2".into()],
            group: "g1".into(),
            process: 7,
            delivery: Delivery {
                mode: gauntlet_workloads::Mode::AtMostOnce,
                acks: Some("1".into()),
                retries: Some(10),
                ..Delivery::default()
            },
            batch: 5,
            processing_ms: 3,
            drain: false,
            log: None,
            dedup: None,
        };
        assert_eq!(round_trip(&call), call);
        call.dedup = Some(gauntlet_workloads::dedup::DedupCall {
            addr: "127.0.0.1:3".into(),
            mark: gauntlet_workloads::dedup::Mark::Before,
            policy: gauntlet_workloads::dedup::Policy::FailOpen,
            ttl_ms: 60_000,
        });
        assert_eq!(round_trip(&call), call);
        call.drain = true;
        call.broker = BrokerKind::Kafka;
        call.log = Some(LogSlot {
            membership: Membership::Assign,
            slot: 1,
            slots: 3,
        });
        assert_eq!(round_trip(&call), call);
    }
}
