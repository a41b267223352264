//! The reference of `gauntlet bench run` ([`BenchPart::Reference`]): what the
//! broker takes without Gauntlet's recording, on the same deployment. The
//! broker's own benchmark tool where its image has one (`redis-benchmark`, in
//! the node, against the same Redis with the same persistence settings), else
//! [`bare_producers`]: the same client library with the same producers and
//! window, no recording.
//!
//! [`BenchPart::Reference`]: super::context::BenchPart::Reference
//! [`bare_producers`]: gauntlet_workloads::queue::bare_producers
use super::context::{Driven, Figures, ReferenceFigure, RunContext};
use crate::broker::BrokerKind;
use crate::error::HarnessError;
use gauntlet_nemesis::Command;
use std::sync::Arc;
use std::time::Duration;

/// XADDs per second `redis-benchmark` is expected to reach here at most: its
/// request count is this times the scenario's time, so it runs about that long
/// or less (it has no time limit of its own).
const REDIS_BENCHMARK_RATE: u64 = 50_000;

/// The `redis-benchmark` command line with Gauntlet's window: `clients`
/// connections (the producers), each with `pipeline` requests under way (the
/// in-flight sends), XADDs of one small entry to a stream of its own, CSV output.
pub fn redis_benchmark_argv(requests: u64, clients: usize, pipeline: usize) -> Vec<String> {
    [
        "redis-benchmark",
        "-h",
        "127.0.0.1",
        "-p",
        "6379",
        "-c",
        &clients.max(1).to_string(),
        "-P",
        &pipeline.max(1).to_string(),
        "-n",
        &requests.to_string(),
        "--csv",
        "XADD",
        "gauntlet-bench",
        "*",
        "f",
        "v",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Requests per second from `redis-benchmark --csv`'s output: the header line,
/// then `"<test>","<rps>",...`.
pub fn parse_redis_benchmark_csv(out: &str) -> Option<f64> {
    out.lines()
        .filter(|l| !l.starts_with("\"test\""))
        .find_map(|l| {
            let mut fields = l.split(',');
            fields.next()?;
            fields.next()?.trim_matches('"').parse::<f64>().ok()
        })
}

/// Runs the reference for the scenario's time and says what it reached.
pub(super) async fn run(
    ctx: &RunContext<'_>,
    driver: Arc<dyn gauntlet_workloads::Driver>,
    time: Duration,
) -> Result<Driven, HarnessError> {
    let scenario = ctx.scenario;
    let (producers, window) = (
        scenario.queue.producers.max(1),
        scenario.queue.in_flight.max(1),
    );
    let figure = if ctx.deployment.broker() == BrokerKind::Redis && scenario.image.is_none() {
        let requests = REDIS_BENCHMARK_RATE * time.as_secs().max(1);
        let argv = redis_benchmark_argv(requests, producers, window);
        // n1 is the primary: the node the producers write to.
        let node = ctx
            .deployment
            .nodes()
            .first()
            .cloned()
            .unwrap_or_else(|| "n1".into());
        let out = ctx
            .deployment
            .exec(
                &node,
                &Command::new(&argv),
                time * 4 + Duration::from_secs(60),
            )
            .await
            .map_err(|e| HarnessError::Scenario(format!("redis-benchmark in {node}: {e}")))?;
        let per_s = parse_redis_benchmark_csv(&out.stdout)
            .filter(|_| out.success())
            .ok_or_else(|| {
                HarnessError::Scenario(format!(
                    "redis-benchmark in {node} printed no figure: {}",
                    out.combined()
                ))
            })?;
        ReferenceFigure {
            what: format!("{} (in {node})", argv.join(" ")),
            per_s,
        }
    } else {
        let (producers, window) = (
            scenario.queue.producers.max(1),
            scenario.queue.in_flight.max(1),
        );
        let (acked, took) =
            gauntlet_workloads::queue::bare_producers(driver, producers, window, time).await;
        ReferenceFigure {
            what: format!(
                "bare loop of Gauntlet's {} client: {producers} producer(s), {window} send(s) in flight each, no recording",
                ctx.deployment.broker()
            ),
            per_s: acked as f64 / took.as_secs_f64().max(1e-9),
        }
    };
    Ok(Driven {
        sends: 0,
        figures: Figures {
            workload_time: time,
            reference: Some(figure),
            ..Figures::default()
        },
        write_failure: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_requests_per_second_of_redis_benchmark_csv() {
        let out = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n\
                   \"XADD gauntlet-bench * f v\",\"41554.30\",\"1.150\",\"0.216\",\"1.087\",\"1.719\",\"2.207\",\"9.855\"\n";
        assert_eq!(parse_redis_benchmark_csv(out), Some(41554.30));
        assert_eq!(parse_redis_benchmark_csv("\"test\",\"rps\"\n"), None);
        assert_eq!(parse_redis_benchmark_csv(""), None);
    }

    #[test]
    fn the_redis_benchmark_command_runs_as_long_as_asked() {
        let argv = redis_benchmark_argv(400_000, 2, 64);
        assert_eq!(argv[0], "redis-benchmark");
        assert!(argv.windows(2).any(|w| w[0] == "-n" && w[1] == "400000"));
        assert!(argv.windows(2).any(|w| w[0] == "-c" && w[1] == "2"));
        assert!(argv.windows(2).any(|w| w[0] == "-P" && w[1] == "64"));
        assert_eq!(
            &argv[argv.len() - 5..],
            ["XADD", "gauntlet-bench", "*", "f", "v"]
        );
    }
}
