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

/// The XADDs of the first, short pass of `redis-benchmark`, which measures its
/// rate so that the second pass can be sized to run the scenario's time: it has
/// no time limit of its own, and a fixed count ran it for 1.4 to 1.9 s of a
/// 10 s bench (2026-12-07: 500,000 XADDs at 263k to 363k/s), a third of the
/// stream and the AOF the producers' 10 s write, never an AOF rewrite.
const CALIBRATION_REQUESTS: u64 = 100_000;

/// The requests of the reference's second pass: as many as `per_s` takes in
/// `time`, at least the calibration's.
pub fn sized_requests(per_s: f64, time: Duration) -> u64 {
    let n = per_s * time.as_secs_f64();
    if n.is_finite() && n > CALIBRATION_REQUESTS as f64 {
        n.ceil() as u64
    } else {
        CALIBRATION_REQUESTS
    }
}

/// The `redis-benchmark` command line with Gauntlet's window: `clients`
/// connections (the producers), each with `pipeline` requests under way (the
/// in-flight sends), CSV output, and the producers' own XADD: the same stream,
/// fields and lengths (a key of the workload's, a value of as many digits as
/// the last of `requests` sends has). Until 2026-12-07 it sent `XADD
/// gauntlet-bench * f v`, 42 bytes to the producers' 80: Redis reads a
/// connection 16 KiB at a time and fsyncs once per read under `appendfsync
/// always`, so the short command put a whole 256-deep pipeline into each fsync
/// and ran 10-20% faster than the same window of the producers' command.
pub fn redis_benchmark_argv(requests: u64, clients: usize, pipeline: usize) -> Vec<String> {
    let mut argv: Vec<String> = [
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
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let value = i64::try_from(requests).unwrap_or(i64::MAX);
    argv.extend(gauntlet_workloads::drivers::redis::xadd_words("k1", value));
    argv
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
        // n1 is the primary: the node the producers write to.
        let node = ctx
            .deployment
            .nodes()
            .first()
            .cloned()
            .unwrap_or_else(|| "n1".into());
        let bench = |requests: u64| {
            let argv = redis_benchmark_argv(requests, producers, window);
            let node = node.clone();
            async move {
                let out = ctx
                    .deployment
                    .exec(
                        &node,
                        &Command::new(&argv),
                        time * 4 + Duration::from_secs(60),
                    )
                    .await
                    .map_err(|e| {
                        HarnessError::Scenario(format!("redis-benchmark in {node}: {e}"))
                    })?;
                let per_s = parse_redis_benchmark_csv(&out.stdout)
                    .filter(|_| out.success())
                    .ok_or_else(|| {
                        HarnessError::Scenario(format!(
                            "redis-benchmark in {node} printed no figure: {}",
                            out.combined()
                        ))
                    })?;
                Ok::<_, HarnessError>((argv, per_s))
            }
        };
        // A short pass for its rate, then the measured one, sized to run the
        // scenario's time on the stream the first pass began.
        let (_, first) = bench(CALIBRATION_REQUESTS).await?;
        let requests = sized_requests(first, time);
        let (argv, per_s) = bench(requests).await?;
        ReferenceFigure {
            what: format!(
                "{} (in {node}; {requests} requests, sized by a first pass of \
                 {CALIBRATION_REQUESTS} at {first:.0}/s to run about {time:?})",
                argv.join(" ")
            ),
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
    fn the_second_pass_is_sized_to_run_the_scenario_s_time() {
        let ten = Duration::from_secs(10);
        assert_eq!(sized_requests(300_000.0, ten), 3_000_000);
        assert_eq!(sized_requests(12_345.6, ten), 123_456);
        // Never fewer than the first pass, whatever it measured.
        assert_eq!(sized_requests(1.0, ten), CALIBRATION_REQUESTS);
        assert_eq!(sized_requests(f64::INFINITY, ten), CALIBRATION_REQUESTS);
        assert_eq!(sized_requests(f64::NAN, ten), CALIBRATION_REQUESTS);
    }

    #[test]
    fn the_redis_benchmark_command_runs_as_long_as_asked() {
        let argv = redis_benchmark_argv(400_000, 2, 64);
        assert_eq!(argv[0], "redis-benchmark");
        assert!(argv.windows(2).any(|w| w[0] == "-n" && w[1] == "400000"));
        assert!(argv.windows(2).any(|w| w[0] == "-c" && w[1] == "2"));
        assert!(argv.windows(2).any(|w| w[0] == "-P" && w[1] == "64"));
        // The producers' own command, a value as long as their last.
        assert_eq!(
            &argv[argv.len() - 7..],
            ["XADD", "gauntlet", "*", "key", "k1", "value", "400000"]
        );
    }
}
