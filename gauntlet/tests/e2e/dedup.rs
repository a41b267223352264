//! Seed D7: the idempotent consumer's dedup store goes down. Consumers remember
//! what they processed in a Redis node of their own beside the broker; the
//! nemesis kills that node for 6 s and, during the outage, kills two consumers
//! between processing and acknowledging. Fail-open applies what comes back
//! twice (`duplicate-processing`); fail-closed holds it back (`parked`) and
//! applies everything exactly once after the store is back.
use super::common::*;
use std::time::Instant;

/// `fault` on the dedup store from 2 s to 8 s; consumers killed before their ack at 3 s and 5 s.
fn outage(name: &str, fault: &str) -> String {
    schedule_file(
        name,
        &[
            (2_000, 6_000, fault, "dedup-store", 0),
            (3_000, 0, "kill-consumer:before-ack", "n1", 1),
            (5_000, 0, "kill-consumer:before-ack", "n1", 2),
        ],
    )
    .display()
    .to_string()
}

fn scenario(name: &str, broker: &str, policy: &str) -> String {
    scenario_with(name, broker, "after", policy, "60s")
}

fn scenario_with(name: &str, broker: &str, mark: &str, policy: &str, ttl: &str) -> String {
    format!(
        r#"name = "{name}"
broker = "{broker}"
nodes = 1
time = "16s"
rate = 40
expect = ["at-least-once", "exactly-once-processing"]

[queue]
consumers = 2
batch = 8
processing-ms = 5

[dedup]
mark = "{mark}"
policy = "{policy}"
ttl = "{ttl}"
"#
    )
}

/// What a dedup run showed, printed with `--no-capture`.
fn figures(label: &str, r: &Run, t: Instant) {
    report(label, r, t);
    let store_faults: Vec<String> = nemesis_events(&r.dir)
        .iter()
        .filter(|e| e["type"] == "info")
        .map(|e| format!("{} {}", e["f"], e["value"]["node"]))
        .collect();
    eprintln!(
        "{label}: duplicate-processing {}, lost-processing {}, parked {}, lost {}, \
         exactly-once-processing {}; nemesis: {}",
        count(r, "duplicate-processing"),
        count(r, "lost-processing"),
        count(r, "parked"),
        count(r, "lost"),
        r.verdict["guarantees"]["exactly-once-processing"],
        store_faults.join(", ")
    );
}

fn effects_in(r: &Run) -> usize {
    history_events(&r.dir.join(gauntlet_report::folder::HISTORY))
        .iter()
        .filter(|e| e["f"] == "effect" && e["type"] == "ok")
        .count()
}

/// The history has the fault on the dedup store (a kill or a pause).
fn the_store_was_killed(r: &Run) {
    let events = nemesis_events(&r.dir);
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "info" && e["value"]["node"] == "dedup-store"),
        "no fault on the dedup store in {events:?}"
    );
}

/// Fail-open under `fault` on the dedup store: what comes back during the outage
/// is applied twice (`duplicate-processing`), nothing acknowledged is lost.
fn fail_open(broker: &str, fault: &str) {
    let tag = fault.replace(':', "-");
    let t = Instant::now();
    let open = run_scenario(
        &format!("{broker}-dedup-open-{tag}"),
        &scenario(&format!("{broker}-dedup-fail-open"), broker, "fail-open"),
        &["--replay", &outage(&format!("{broker}-open-{tag}"), fault)],
    );
    figures(&format!("{broker} dedup fail-open, {fault}"), &open, t);
    assert_run_folder(&open.dir);
    no_leftovers(&open.dir);
    the_store_was_killed(&open);
    assert!(effects_in(&open) > 0, "no effect recorded");
    assert!(
        count(&open, "duplicate-processing") > 0,
        "fail-open with redeliveries during the outage applied nothing twice: {}",
        open.verdict
    );
    assert_eq!(
        open.verdict["guarantees"]["exactly-once-processing"],
        "violated"
    );
    assert_eq!(open.code, 1, "fail-open must be invalid");
    assert_eq!(count(&open, "lost"), 0, "{}", open.verdict);
}

/// Fail-closed under the same fault: what the store cannot vouch for is held
/// back (`parked`) and everything is applied exactly once.
fn fail_closed(broker: &str, fault: &str) {
    let tag = fault.replace(':', "-");
    let t = Instant::now();
    let closed = run_scenario(
        &format!("{broker}-dedup-closed-{tag}"),
        &scenario(
            &format!("{broker}-dedup-fail-closed"),
            broker,
            "fail-closed",
        ),
        &[
            "--replay",
            &outage(&format!("{broker}-closed-{tag}"), fault),
        ],
    );
    figures(&format!("{broker} dedup fail-closed, {fault}"), &closed, t);
    assert_run_folder(&closed.dir);
    no_leftovers(&closed.dir);
    the_store_was_killed(&closed);
    assert!(effects_in(&closed) > 0, "no effect recorded");
    assert_eq!(
        count(&closed, "duplicate-processing"),
        0,
        "{}",
        closed.verdict
    );
    assert_eq!(count(&closed, "lost-processing"), 0, "{}", closed.verdict);
    assert_eq!(count(&closed, "lost"), 0, "{}", closed.verdict);
    assert!(
        count(&closed, "parked") > 0,
        "fail-closed held nothing back while the store was down: {}",
        closed.verdict
    );
    assert_eq!(
        closed.verdict["guarantees"]["exactly-once-processing"],
        "holds"
    );
    assert_eq!(
        closed.code, 0,
        "fail-closed must be valid: {}",
        closed.verdict
    );
}

/// The dedup store killed for 6 s.
const STORE_DOWN: &str = "kill-broker:dedup-store";

/// Redis Streams: fail-open processes twice, fail-closed exactly once.
mod dedup_store_down_redis_fail_open_duplicates_fail_closed_does_not {
    #[test]
    fn fail_open() {
        super::fail_open("redis", super::STORE_DOWN);
    }

    #[test]
    fn fail_closed() {
        super::fail_closed("redis", super::STORE_DOWN);
    }
}

/// A `[dedup]` table on a broker the idempotent consumer was not made for is
/// refused before anything starts, naming the setting and the broker.
#[test]
fn dedup_on_nats_is_refused_before_the_run() {
    let file = std::env::temp_dir().join(format!(
        "gauntlet-e2e-{}-dedup-nats.toml",
        std::process::id()
    ));
    std::fs::write(&file, scenario("nats-dedup", "nats", "fail-closed")).expect("write");
    let (code, stderr) = run_refused("dedup-nats", &[&file.display().to_string()]);
    eprintln!("refused with exit {code}: {stderr}");
    assert_ne!(code, 0);
    assert!(
        stderr.contains("[dedup]") && stderr.contains("nats"),
        "{stderr}"
    );
}

/// RabbitMQ (the queue type of the default delivery settings; held-back messages
/// are nacked with requeue): the same two runs.
mod dedup_store_down_rabbitmq_fail_open_duplicates_fail_closed_does_not {
    #[test]
    fn fail_open() {
        super::fail_open("rabbitmq", super::STORE_DOWN);
    }

    #[test]
    fn fail_closed() {
        super::fail_closed("rabbitmq", super::STORE_DOWN);
    }
}

/// Mark before (a claim), fail-closed, the store paused from 2 s to 6 s: a claim
/// that timed out was still done when the store was resumed, so the message it
/// held back comes back `seen` and its effect is never applied
/// (`lost-processing`). Mark after (a check) under the same pause loses nothing.
mod dedup_store_paused_mark_before_loses_effects_mark_after_does_not_redis {
    use super::*;

    fn schedule(name: &str) -> String {
        schedule_file(
            name,
            &[(2_000, 4_000, "pause:dedup-store", "dedup-store", 0)],
        )
        .display()
        .to_string()
    }

    #[test]
    fn mark_before_loses_effects() {
        let t = Instant::now();
        let before = run_scenario(
            "redis-dedup-before-pause",
            &scenario_with(
                "redis-dedup-before-pause",
                "redis",
                "before",
                "fail-closed",
                "60s",
            ),
            &["--replay", &schedule("before-pause")],
        );
        figures(
            "redis dedup mark-before fail-closed, store paused",
            &before,
            t,
        );
        assert_run_folder(&before.dir);
        no_leftovers(&before.dir);
        the_store_was_killed(&before);
        assert!(
            count(&before, "lost-processing") > 0,
            "no claim that timed out was applied late: {}",
            before.verdict
        );
        assert_eq!(
            count(&before, "duplicate-processing"),
            0,
            "{}",
            before.verdict
        );
        assert_eq!(count(&before, "lost"), 0, "{}", before.verdict);
        assert_eq!(before.code, 1, "mark-before must be invalid here");
    }

    #[test]
    fn mark_after_does_not() {
        let t = Instant::now();
        let after = run_scenario(
            "redis-dedup-after-pause",
            &scenario_with(
                "redis-dedup-after-pause",
                "redis",
                "after",
                "fail-closed",
                "60s",
            ),
            &["--replay", &schedule("after-pause")],
        );
        figures(
            "redis dedup mark-after fail-closed, store paused",
            &after,
            t,
        );
        no_leftovers(&after.dir);
        assert!(count(&after, "parked") > 0, "{}", after.verdict);
        assert_eq!(count(&after, "lost-processing"), 0, "{}", after.verdict);
        assert_eq!(
            count(&after, "duplicate-processing"),
            0,
            "{}",
            after.verdict
        );
        assert_eq!(after.code, 0, "mark-after must be valid: {}", after.verdict);
    }
}

/// Fail-closed with a durable store but a mark that lives 1 s, under Redis's
/// 5 s redelivery delay: consumers killed before their ack leave marked
/// batches, the marks expire before the batches come back, and they are
/// applied again (`duplicate-processing`), with no store fault at all.
#[test]
fn dedup_ttl_shorter_than_the_redelivery_delay_duplicates_redis() {
    let t = Instant::now();
    let schedule = schedule_file(
        "short-ttl",
        &[
            (3_000, 0, "kill-consumer:before-ack", "n1", 1),
            (6_000, 0, "kill-consumer:before-ack", "n1", 2),
        ],
    );
    let r = run_scenario(
        "redis-dedup-short-ttl",
        &scenario_with(
            "redis-dedup-short-ttl",
            "redis",
            "after",
            "fail-closed",
            "1s",
        ),
        &["--replay", &schedule.display().to_string()],
    );
    figures("redis dedup fail-closed, ttl 1s", &r, t);
    no_leftovers(&r.dir);
    assert!(
        count(&r, "duplicate-processing") > 0,
        "marks that expired before the redelivery let nothing through twice: {}",
        r.verdict
    );
    assert_eq!(count(&r, "lost"), 0, "{}", r.verdict);
    assert_eq!(r.code, 1);
}

/// The consumers' link to their store cut at the harness's proxy (the store
/// itself up: the consumers run beside Gauntlet, so a partition between nodes
/// would cut nothing): `client-partition:dedup-store` (the role resolved when the
/// fault fires, as `--nemesis` and a scenario spell it) refuses the
/// consumers' connections to it. The same two runs on Redis Streams.
mod dedup_store_link_cut_redis_fail_open_duplicates_fail_closed_does_not {
    #[test]
    fn fail_open() {
        super::fail_open("redis", "client-partition:dedup-store");
    }

    #[test]
    fn fail_closed() {
        super::fail_closed("redis", "client-partition:dedup-store");
    }
}

/// Mark before: consumers killed between the claim (the store marked the
/// value) and the effect; the message comes back, the store says `seen`, and
/// its effect is never applied (`lost-processing`). Mark after, killed at the
/// same point (after the check, before the effect), applies it when it comes
/// back: nothing lost.
mod dedup_consumer_killed_before_the_effect_mark_before_loses_it_mark_after_does_not_redis {
    use super::*;

    fn schedule(name: &str) -> String {
        schedule_file(
            name,
            &[
                (3_000, 0, "kill-consumer:before-effect", "n1", 1),
                (6_000, 0, "kill-consumer:before-effect", "n1", 2),
            ],
        )
        .display()
        .to_string()
    }

    #[test]
    fn mark_before_loses_it() {
        let t = Instant::now();
        let before = run_scenario(
            "redis-dedup-before-kill",
            &scenario_with(
                "redis-dedup-before-kill",
                "redis",
                "before",
                "fail-closed",
                "60s",
            ),
            &["--replay", &schedule("before-kill")],
        );
        figures(
            "redis dedup mark-before, killed before the effect",
            &before,
            t,
        );
        assert_run_folder(&before.dir);
        no_leftovers(&before.dir);
        let stalled = nemesis_events(&before.dir)
            .iter()
            .filter(|e| e["f"] == "kill-consumer" && e["value"]["stalled"] == true)
            .count();
        assert!(stalled > 0, "no consumer stalled before an effect");
        assert!(
            count(&before, "lost-processing") > 0,
            "a claim without its effect went unnoticed: {}",
            before.verdict
        );
        assert_eq!(count(&before, "lost"), 0, "{}", before.verdict);
        assert_eq!(before.code, 1);
    }

    #[test]
    fn mark_after_does_not() {
        let t = Instant::now();
        let after = run_scenario(
            "redis-dedup-after-kill",
            &scenario_with(
                "redis-dedup-after-kill",
                "redis",
                "after",
                "fail-closed",
                "60s",
            ),
            &["--replay", &schedule("after-kill")],
        );
        figures(
            "redis dedup mark-after, killed before the effect",
            &after,
            t,
        );
        no_leftovers(&after.dir);
        assert_eq!(count(&after, "lost-processing"), 0, "{}", after.verdict);
        assert_eq!(
            count(&after, "duplicate-processing"),
            0,
            "{}",
            after.verdict
        );
        assert_eq!(after.code, 0, "{}", after.verdict);
    }
}
