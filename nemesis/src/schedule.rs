//! Fault schedules: generated from a seed (the same seed, faults and times give
//! the same schedule) or read from a file; every run writes the one it used, so
//! `gauntlet run --replay <run>/schedule.toml` repeats it.
use crate::faults::partition::RNG_SEED_MASK;
use crate::faults::{Acts, Ends, FaultKind, Heal, NodeFault, Spread};
use crate::NemesisError;
use gauntlet_history::rng::Rng;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One fault at one moment, on one or several targets. Faults of a schedule may
/// overlap in time (a generated schedule's only with `nemesis-concurrency`
/// above 1, and a `pause-kill`'s own).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawFault", into = "RawFault")]
pub struct ScheduledFault {
    /// Milliseconds after the workload starts.
    pub at_ms: u64,
    /// How long the fault lasts before it is healed, in milliseconds.
    pub duration_ms: u64,
    /// The fault (written as its name, as on the command line).
    pub fault: FaultKind,
    /// The nodes it targets: one as a rule (`target = "n1"` in TOML), several
    /// as `targets = ["n1", "n2"]`.
    pub targets: Vec<String>,
    /// Which consumer a kill-consumer fault picks (modulo the number of consumers).
    pub pick: u64,
}

/// [`ScheduledFault`] as TOML spells it: `target` for one node (every schedule
/// written so far), `targets` for several.
#[derive(Serialize, Deserialize)]
struct RawFault {
    at_ms: u64,
    duration_ms: u64,
    fault: FaultKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    target: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    targets: Option<Vec<String>>,
    pick: u64,
}

impl TryFrom<RawFault> for ScheduledFault {
    type Error = String;
    fn try_from(r: RawFault) -> Result<Self, String> {
        let targets = match (r.target, r.targets) {
            (Some(t), None) => vec![t],
            (None, Some(ts)) if !ts.is_empty() => ts,
            (None, Some(_)) => return Err("`targets` is empty".into()),
            (Some(_), Some(_)) => return Err("both `target` and `targets`: give one".into()),
            (None, None) => return Err("missing field `target`".into()),
        };
        Ok(ScheduledFault {
            at_ms: r.at_ms,
            duration_ms: r.duration_ms,
            fault: r.fault,
            targets,
            pick: r.pick,
        })
    }
}

impl From<ScheduledFault> for RawFault {
    fn from(f: ScheduledFault) -> Self {
        let (target, targets) = match <[String; 1]>::try_from(f.targets) {
            Ok([one]) => (Some(one), None),
            Err(many) => (None, Some(many)),
        };
        RawFault {
            at_ms: f.at_ms,
            duration_ms: f.duration_ms,
            fault: f.fault,
            target,
            targets,
            pick: f.pick,
        }
    }
}

impl ScheduledFault {
    /// The fault's kind.
    pub fn kind(&self) -> FaultKind {
        self.fault
    }
    /// The targets as one line: `n1`, or `n1+n2`.
    pub fn targets_line(&self) -> String {
        self.targets.join("+")
    }
    /// When the schedule means it to end, in milliseconds after the start.
    pub fn end_ms(&self) -> u64 {
        self.at_ms + self.duration_ms
    }
}

/// A whole schedule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    /// The seed the schedule was generated from (kept in the file when replayed).
    pub seed: u64,
    /// The faults, one `[[fault]]` table each in TOML, in the order of `at_ms`.
    #[serde(default, rename = "fault")]
    pub faults: Vec<ScheduledFault>,
}

/// How a generated schedule is paced: over a workload of `time`, a fault every
/// `interval` (jittered by up to a quarter), each lasting `duration` (or 0 for
/// a fault its table entry heals at once or lets heal by itself), at most
/// `concurrency` on at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacing {
    /// How long the workload runs: no fault ends after it.
    pub time: Duration,
    /// Between one fault's end and the next one's start (`concurrency` 1), or
    /// between one fault's start and the next one's (above 1).
    pub interval: Duration,
    /// How long a fault lasts before it is healed.
    pub duration: Duration,
    /// How many drawn faults may be on at once (`nemesis-concurrency`): 1 (or
    /// 0), one after the other, as every schedule before it.
    pub concurrency: usize,
}

/// The gap between the steps of a `pause-kill` (docs/nemesis.md): the crash,
/// the pause of the rest, the minority's resume and the crashed node's start
/// come in that order, this far apart.
pub const PAUSE_KILL_STEP_MS: u64 = 500;

/// What a drawn fault holds while it is on, for a schedule whose faults
/// overlap: faults on at once never hold the same thing.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Hold {
    /// Nothing another fault could undo (a consumer kill).
    Nothing,
    /// The client proxy: one heal passes every link.
    Proxy,
    /// These nodes (indices into the schedule's nodes).
    Nodes(Vec<usize>),
    /// Every node: a partition (one heal flushes every node's rules), a fault
    /// aimed at a role (its node is found when it fires), a sequence.
    Every,
}

/// A drawn fault on: until when, and what it holds.
struct Open {
    end: u64,
    hold: Hold,
}

/// What a fault of `kind` holds on `n` nodes: `Nodes` with how many.
fn needs_held(kind: FaultKind, n: usize) -> (Option<usize>, Hold) {
    let spec = kind.spec();
    match (kind, spec.acts) {
        (_, Acts::Consumer | Acts::Workload | Acts::Topic) => (None, Hold::Nothing),
        (_, Acts::ClientProxy) => (None, Hold::Proxy),
        (_, Acts::Network | Acts::Sequence) | (FaultKind::OnRole(..), _) => (None, Hold::Every),
        (_, Acts::Nodes) if spec.heal == Heal::FlushNetwork => (None, Hold::Every),
        (FaultKind::OnNodes(_, spread), Acts::Nodes) => (Some(spread.count(n)), Hold::Nothing),
        (_, Acts::Nodes) => (Some(1), Hold::Nothing),
    }
}

/// Whether a fault holding `hold` (or `k` nodes) may start while `open` are on.
fn fits(open: &[&Open], k: Option<usize>, hold: &Hold, n: usize, concurrency: usize) -> bool {
    if open.len() >= concurrency {
        return false;
    }
    let held: usize = open
        .iter()
        .map(|o| match &o.hold {
            Hold::Nodes(v) => v.len(),
            Hold::Every => n,
            Hold::Nothing | Hold::Proxy => 0,
        })
        .sum();
    match (k, hold) {
        (Some(k), _) => held + k <= n,
        (None, Hold::Every) => held == 0,
        (None, Hold::Proxy) => !open.iter().any(|o| o.hold == Hold::Proxy),
        (None, _) => true,
    }
}

/// `k` node indices out of `free` (in node order), the first `free[first %
/// len]`, the rest drawn from `rng`; in node order.
fn draw_nodes(rng: &mut Rng, free: &[usize], first: u64, k: usize) -> Vec<usize> {
    if free.is_empty() || k == 0 {
        return Vec::new();
    }
    if k >= free.len() {
        return free.to_vec();
    }
    let mut rest = free.to_vec();
    let mut chosen = vec![rest.remove((first % rest.len() as u64) as usize)];
    while chosen.len() < k {
        let j = (rng.next_u64() % rest.len() as u64) as usize;
        chosen.push(rest.remove(j));
    }
    chosen.sort_unstable();
    chosen
}

/// Jepsen's `pause-kill` over `n` nodes shuffled by `rng`, from `at`, each
/// phase lasting `duration` (docs/nemesis.md): a minority (`(n-1)/2`) paused;
/// after `duration`, the next node crashed, the rest paused, the minority
/// resumed, the crashed node started; after `duration` more, the rest resumed.
/// The faults, and when the last ends.
fn pause_kill(
    rng: &mut Rng,
    crash: NodeFault,
    nodes: &[String],
    at: u64,
    duration: u64,
    pick: u64,
) -> (Vec<ScheduledFault>, u64) {
    let n = nodes.len();
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    let minority = Spread::Minority.count(n);
    let names = |ix: &[usize]| -> Vec<String> {
        let mut ix = ix.to_vec();
        ix.sort_unstable();
        ix.iter().map(|&i| nodes[i].clone()).collect()
    };
    let (part1, rest) = order.split_at(minority.min(n));
    let (crasher, part2) = rest.split_at(1.min(rest.len()));
    let step = PAUSE_KILL_STEP_MS;
    let crash_kind = crash.on_node();
    let crash_ms = match crash_kind.spec().ends {
        Ends::AfterDuration => 3 * step,
        Ends::Itself | Ends::AtOnce => 0,
    };
    let faults = vec![
        ScheduledFault {
            at_ms: at,
            duration_ms: duration + 2 * step,
            fault: FaultKind::Pause,
            targets: names(part1),
            pick,
        },
        ScheduledFault {
            at_ms: at + duration,
            duration_ms: crash_ms,
            fault: crash_kind,
            targets: names(crasher),
            pick,
        },
        ScheduledFault {
            at_ms: at + duration + step,
            duration_ms: duration + 2 * step,
            fault: FaultKind::Pause,
            targets: names(part2),
            pick,
        },
    ];
    let end = faults
        .iter()
        .map(ScheduledFault::end_ms)
        .max()
        .unwrap_or(at);
    (faults, end)
}

impl Schedule {
    /// Faults drawn from `kinds` every `interval` (jittered by up to a quarter),
    /// each lasting `duration` (or 0 for a fault its table entry heals at once or
    /// lets heal by itself), over a workload of length `time`, on `nodes`; the next
    /// fault comes after the previous one's end, so drawn faults never overlap
    /// (a `pause-kill`'s own faults do). Faults the workload does itself
    /// (`crash-producer`) are not drawn.
    pub fn generate(
        seed: u64,
        kinds: &[FaultKind],
        nodes: &[String],
        time: Duration,
        interval: Duration,
        duration: Duration,
    ) -> Schedule {
        Schedule::paced(
            seed,
            kinds,
            nodes,
            Pacing {
                time,
                interval,
                duration,
                concurrency: 1,
            },
        )
    }

    /// [`Schedule::generate`] with faults that may overlap: with
    /// `pacing.concurrency` above 1, the next fault is drawn `interval` after
    /// the previous one's start (not its end), and starts then unless that
    /// would put more than `concurrency` faults on at once, or make it hold
    /// what a fault still on holds (a node, the proxy, or every node: see
    /// docs/nemesis.md); then it starts when the faults on have let go of
    /// enough. A fault on nodes draws its nodes among those no fault on holds.
    /// With `concurrency` 1 it is [`Schedule::generate`], draw for draw.
    pub fn paced(seed: u64, kinds: &[FaultKind], nodes: &[String], pacing: Pacing) -> Schedule {
        let kinds: Vec<FaultKind> = kinds
            .iter()
            .copied()
            .filter(|k| k.spec().acts != Acts::Workload)
            .collect();
        // The state the nemesis's SplitMix64 always started from (schedules
        // written and documented seeds depend on it).
        let mut rng = Rng::new(seed ^ 0x006E_656D_6573_6973 ^ RNG_SEED_MASK);
        let mut faults = Vec::new();
        let (time, interval, duration) = (
            pacing.time.as_millis() as u64,
            pacing.interval.as_millis().max(1) as u64,
            pacing.duration.as_millis() as u64,
        );
        let n = nodes.len();
        let overlap = pacing.concurrency > 1;
        let mut open: Vec<Open> = Vec::new();
        let mut at = interval;
        while !kinds.is_empty() && n > 0 && at + duration < time {
            let jitter = rng.next_u64() % (interval / 4 + 1);
            let kind = kinds[(rng.next_u64() % kinds.len() as u64) as usize];
            let first = rng.next_u64();
            let target = nodes[(first % n as u64) as usize].clone();
            let dur = match kind.spec().ends {
                Ends::Itself | Ends::AtOnce => 0,
                Ends::AfterDuration => duration,
            };
            let pick = rng.next_u64() % 1000;
            let (k, hold) = needs_held(kind, n);
            // When it starts: at its time, or (overlapping) once the faults on
            // let it.
            let mut start = at + jitter;
            let mut free: Vec<usize> = (0..n).collect();
            if overlap {
                open.retain(|o| o.end > start);
                let mut ends: Vec<u64> = open.iter().map(|o| o.end).collect();
                ends.sort_unstable();
                for t in std::iter::once(start).chain(ends) {
                    let on: Vec<&Open> = open.iter().filter(|o| o.end > t).collect();
                    if fits(&on, k, &hold, n, pacing.concurrency) {
                        start = t;
                        free.retain(|i| {
                            !on.iter().any(|o| match &o.hold {
                                Hold::Nodes(v) => v.contains(i),
                                _ => false,
                            })
                        });
                        break;
                    }
                }
                open.retain(|o| o.end > start);
            }
            let (drawn, end) = match kind {
                FaultKind::PauseKill(crash) => {
                    if n < 3 {
                        // Refused before a run (it needs three nodes); drawn as nothing.
                        at += interval;
                        continue;
                    }
                    pause_kill(&mut rng, crash, nodes, start, duration, pick)
                }
                _ => {
                    let targets = match (kind, overlap) {
                        // Today's draw, unchanged: one node of all.
                        (FaultKind::OnNodes(..), false) | (_, true) => {
                            let free = if overlap {
                                free.clone()
                            } else {
                                (0..n).collect()
                            };
                            let ix = match (k, overlap) {
                                (Some(k), _) => draw_nodes(&mut rng, &free, first, k),
                                // What holds every node or none is aimed by the draw.
                                (None, _) => {
                                    draw_nodes(&mut rng, &(0..n).collect::<Vec<_>>(), first, 1)
                                }
                            };
                            ix.iter().map(|&i| nodes[i].clone()).collect()
                        }
                        (_, false) => vec![target],
                    };
                    (
                        vec![ScheduledFault {
                            at_ms: start,
                            duration_ms: dur,
                            fault: kind,
                            targets,
                            pick,
                        }],
                        start + dur,
                    )
                }
            };
            // No fault ends after the workload (a one-at-a-time schedule's
            // single faults keep the old rule: they start before it ends).
            if end >= time && (overlap || matches!(kind, FaultKind::PauseKill(_))) {
                break;
            }
            if overlap {
                let hold = match (&hold, k) {
                    (_, Some(_)) => Hold::Nodes(
                        drawn
                            .iter()
                            .flat_map(|f| &f.targets)
                            .filter_map(|t| nodes.iter().position(|x| x == t))
                            .collect(),
                    ),
                    (h, None) => h.clone(),
                };
                open.push(Open { end, hold });
                at = start + interval;
            } else {
                at += interval + (end - (at + jitter));
            }
            faults.extend(drawn);
        }
        Schedule { seed, faults }
    }

    /// Reads a schedule from TOML (a run's `schedule.toml`); a fault name that
    /// does not parse refuses the whole file (the error says which entry).
    pub fn from_toml(text: &str) -> Result<Schedule, NemesisError> {
        let s: Schedule =
            toml::from_str(text).map_err(|e| NemesisError::Schedule(e.to_string()))?;
        if let Some((i, f)) = s
            .faults
            .iter()
            .enumerate()
            .find(|(_, f)| f.fault.spec().acts == Acts::Sequence)
        {
            return Err(NemesisError::Schedule(format!(
                "fault {} (`{}`) is a sequence, which a generated schedule expands into \
                 its faults on named nodes; list those faults instead",
                i + 1,
                f.fault
            )));
        }
        Ok(s)
    }

    /// The schedule as TOML, as a run writes it to `schedule.toml`.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn nodes(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    #[test]
    fn same_seed_same_schedule_and_round_trip() {
        let kinds = [
            FaultKind::KillBroker,
            FaultKind::Partition,
            FaultKind::Pause,
        ];
        let gen = |seed| {
            Schedule::generate(
                seed,
                &kinds,
                &nodes(3),
                Duration::from_secs(60),
                Duration::from_secs(5),
                Duration::from_secs(3),
            )
        };
        let (a, b, c) = (gen(7), gen(7), gen(8));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.faults.len() >= 5);
        // Generated faults never overlap (the type allows it: see below).
        assert!(a.faults.windows(2).all(|w| w[0].end_ms() <= w[1].at_ms));
        assert!(a.faults.iter().all(|f| f.end_ms() < 60_000));
        assert_eq!(Schedule::from_toml(&a.to_toml()).ok(), Some(a));
    }

    /// The schedules of the code before the fault table and the shared
    /// generator (its own SplitMix64), kept in `tests/golden/schedules.toml`:
    /// the default run's seed 27 and two others over every family of fault.
    #[test]
    fn schedules_are_the_same_as_before_for_the_same_seed() {
        type Case = (u64, &'static [&'static str], usize, u64, u64, u64);
        let cases: [Case; 3] = [
            (
                27,
                &["kill-consumer:before-ack", "restart-broker:mid-batch"],
                3,
                20,
                5,
                3,
            ),
            (
                5,
                &[
                    "partition",
                    "pause",
                    "kill-broker",
                    "restart-broker:mid-batch",
                    "partition:ring",
                    "netem:50",
                    "kill-consumer:after-ack",
                    "ack-loss",
                    "kill-broker:leader",
                    "restart-broker:txn-coordinator",
                ],
                3,
                120,
                4,
                2,
            ),
            (
                123_456_789,
                &[
                    "latency:250",
                    "loss:10",
                    "partition:halves",
                    "pause:leader",
                    "kill-consumer",
                ],
                5,
                90,
                3,
                1,
            ),
        ];
        let mut out = String::new();
        for (seed, names, n, time, interval, dur) in cases {
            let kinds: Vec<FaultKind> = names
                .iter()
                .map(|s| FaultKind::from_str(s).expect("a fault"))
                .collect();
            let s = Schedule::generate(
                seed,
                &kinds,
                &nodes(n),
                Duration::from_secs(time),
                Duration::from_secs(interval),
                Duration::from_secs(dur),
            );
            out.push_str(&format!("# seed {seed}\n{}", s.to_toml()));
        }
        assert_eq!(out, include_str!("../tests/golden/schedules.toml"));
    }

    #[test]
    fn crash_producer_is_never_drawn_and_draws_nothing_else_differently() {
        let with = Schedule::generate(
            27,
            &[
                FaultKind::from_str("kill-consumer:before-ack").expect("fault"),
                FaultKind::CrashProducer,
                FaultKind::from_str("restart-broker:mid-batch").expect("fault"),
            ],
            &nodes(3),
            Duration::from_secs(20),
            Duration::from_secs(5),
            Duration::from_secs(3),
        );
        let without = Schedule::generate(
            27,
            &[
                FaultKind::from_str("kill-consumer:before-ack").expect("fault"),
                FaultKind::from_str("restart-broker:mid-batch").expect("fault"),
            ],
            &nodes(3),
            Duration::from_secs(20),
            Duration::from_secs(5),
            Duration::from_secs(3),
        );
        assert_eq!(with, without);
        let only = Schedule::generate(
            1,
            &[FaultKind::CrashProducer],
            &nodes(3),
            Duration::from_secs(20),
            Duration::from_secs(5),
            Duration::from_secs(3),
        );
        assert!(only.faults.is_empty());
    }

    #[test]
    fn several_targets_and_overlapping_faults_round_trip() {
        let text = "seed = 3\n\n[[fault]]\nat_ms = 100\nduration_ms = 500\nfault = \"pause\"\n\
                    targets = [\"n1\", \"n2\"]\npick = 1\n\n[[fault]]\nat_ms = 200\n\
                    duration_ms = 100\nfault = \"kill-broker\"\ntarget = \"n3\"\npick = 2\n";
        let s = Schedule::from_toml(text).expect("schedule");
        assert_eq!(
            s.faults[0].targets,
            vec!["n1".to_string(), "n2".to_string()]
        );
        assert_eq!(s.faults[0].fault, FaultKind::Pause);
        assert_eq!(s.faults[1].targets, vec!["n3".to_string()]);
        assert!(s.faults[1].at_ms < s.faults[0].end_ms(), "they overlap");
        assert_eq!(Schedule::from_toml(&s.to_toml()).ok(), Some(s.clone()));
        assert!(
            s.to_toml().contains("target = \"n3\""),
            "one target stays `target`"
        );
    }

    #[test]
    fn a_schedule_with_a_name_it_cannot_read_is_refused_not_thinned() {
        let text =
            "seed = 3\n\n[[fault]]\nat_ms = 100\nduration_ms = 0\nfault = \"kill-consumer\"\n\
                    target = \"n1\"\npick = 1\n\n[[fault]]\nat_ms = 200\nduration_ms = 100\n\
                    fault = \"meteor-strike\"\ntarget = \"n3\"\npick = 2\n";
        let e = Schedule::from_toml(text).expect_err("refused").to_string();
        assert!(e.contains("unknown fault `meteor-strike`"), "{e}");
        assert!(e.contains("line 13"), "the entry is named: {e}");
        let both = "seed = 3\n[[fault]]\nat_ms = 1\nduration_ms = 0\nfault = \"pause\"\n\
                    target = \"n1\"\ntargets = [\"n2\"]\npick = 1\n";
        let e = Schedule::from_toml(both).expect_err("refused").to_string();
        assert!(e.contains("both `target` and `targets`"), "{e}");
    }

    fn kinds(names: &[&str]) -> Vec<FaultKind> {
        names
            .iter()
            .map(|s| FaultKind::from_str(s).expect("a fault"))
            .collect()
    }

    fn paced(seed: u64, names: &[&str], n: usize, secs: [u64; 3], concurrency: usize) -> Schedule {
        Schedule::paced(
            seed,
            &kinds(names),
            &nodes(n),
            Pacing {
                time: Duration::from_secs(secs[0]),
                interval: Duration::from_secs(secs[1]),
                duration: Duration::from_secs(secs[2]),
                concurrency,
            },
        )
    }

    /// (at, fault, targets) of each fault.
    fn lines(s: &Schedule) -> Vec<(u64, String, String)> {
        s.faults
            .iter()
            .map(|f| (f.at_ms, f.fault.to_string(), f.targets_line()))
            .collect()
    }

    #[test]
    fn a_count_of_nodes_is_drawn_when_the_schedule_is_and_named_in_it() {
        let s = paced(
            7,
            &[
                "kill-broker:majority",
                "pause:minority",
                "restart-broker:all",
            ],
            3,
            [30, 5, 3],
            1,
        );
        let l = |at, f: &str, t: &str| (at, f.to_string(), t.to_string());
        assert_eq!(
            lines(&s),
            [
                l(6074, "restart-broker:all", "n1+n2+n3"),
                l(10826, "pause:minority", "n2"),
                l(18335, "kill-broker:majority", "n1+n3"),
                l(27053, "kill-broker:majority", "n1+n3"),
            ]
        );
        let text = s.to_toml();
        assert!(
            text.contains("targets = [\n    \"n1\",\n    \"n3\",\n]"),
            "{text}"
        );
        assert_eq!(
            Schedule::from_toml(&text).ok(),
            Some(s.clone()),
            "replayed as drawn"
        );
        // On five nodes: as many distinct nodes as the count says, in node order.
        let five = paced(
            11,
            &["kill-broker:minority", "pause:majority", "kill-broker:all"],
            5,
            [120, 3, 2],
            1,
        );
        assert!(five.faults.len() > 20, "{}", five.faults.len());
        for f in &five.faults {
            let want = match f.fault {
                FaultKind::OnNodes(_, spread) => spread.count(5),
                other => panic!("drew {other}"),
            };
            let mut sorted = f.targets.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!((f.targets.len(), &sorted), (want, &f.targets), "{f:?}");
        }
        // Every node is drawn into a minority at some point (the draw is not stuck).
        for n in nodes(5) {
            assert!(
                five.faults.iter().any(
                    |f| f.fault.to_string() == "kill-broker:minority" && f.targets.contains(&n)
                ),
                "{n}"
            );
        }
    }

    #[test]
    fn concurrency_one_is_the_old_schedule_and_above_one_lets_faults_overlap_apart() {
        let names = [
            "kill-broker",
            "pause",
            "pause:minority",
            "partition:halves",
            "partition",
            "kill-broker:leader",
            "kill-consumer",
            "latency",
            "ack-loss",
        ];
        // One at a time: Schedule::generate, draw for draw, and nothing overlaps.
        let one = paced(7, &names, 5, [120, 1, 4], 1);
        let old = Schedule::generate(
            7,
            &kinds(&names),
            &nodes(5),
            Duration::from_secs(120),
            Duration::from_secs(1),
            Duration::from_secs(4),
        );
        assert_eq!(one, old);
        assert!(one.faults.windows(2).all(|w| w[0].end_ms() <= w[1].at_ms));
        // Three at once: faults overlap, and the same seed draws the same.
        let three = paced(7, &names, 5, [120, 1, 4], 3);
        assert_eq!(three, paced(7, &names, 5, [120, 1, 4], 3));
        assert_ne!(three, paced(8, &names, 5, [120, 1, 4], 3));
        assert!(three.faults.iter().all(|f| f.end_ms() < 120_000));
        let overlapping =
            |a: &ScheduledFault, b: &ScheduledFault| a.at_ms < b.end_ms() && b.at_ms < a.end_ms();
        let every = |f: &ScheduledFault| {
            matches!(f.fault.spec().acts, Acts::Network)
                || matches!(f.fault, FaultKind::OnRole(..))
                || f.fault.spec().heal == Heal::FlushNetwork
        };
        let on_nodes = |f: &ScheduledFault| f.fault.spec().acts == Acts::Nodes;
        let proxy = |f: &ScheduledFault| f.fault.spec().acts == Acts::ClientProxy;
        let mut pairs = 0;
        for (i, a) in three.faults.iter().enumerate() {
            let at_once = three
                .faults
                .iter()
                .filter(|b| b.at_ms <= a.at_ms && a.at_ms < b.end_ms())
                .count();
            assert!(at_once <= 3, "{a:?}: {at_once} on at once");
            for b in &three.faults[i + 1..] {
                if !overlapping(a, b) {
                    continue;
                }
                pairs += 1;
                assert!(
                    !((every(a) && on_nodes(b)) || (on_nodes(a) && every(b))),
                    "{a:?} {b:?}"
                );
                assert!(
                    !(proxy(a) && proxy(b)),
                    "one heal passes every link: {a:?} {b:?}"
                );
                if on_nodes(a) && on_nodes(b) {
                    assert!(
                        a.targets.iter().all(|t| !b.targets.contains(t)),
                        "never the same node: {a:?} {b:?}"
                    );
                }
            }
        }
        assert!(pairs >= 10, "faults overlap: {pairs} pairs");
        // Partitions are serialised: none overlaps another.
        let parts: Vec<&ScheduledFault> = three
            .faults
            .iter()
            .filter(|f| f.fault.spec().heal == Heal::FlushNetwork)
            .collect();
        assert!(parts.len() >= 5, "{}", parts.len());
        assert!(parts.windows(2).all(|w| w[0].end_ms() <= w[1].at_ms));
    }

    #[test]
    fn pause_kill_expands_into_jepsens_steps_on_named_nodes() {
        let step = PAUSE_KILL_STEP_MS;
        for (n, minority) in [(3, 1), (5, 2), (7, 3)] {
            let s = paced(3, &["pause-kill"], n, [60, 5, 3], 1);
            assert!(
                s.faults.len() >= 6 && s.faults.len().is_multiple_of(3),
                "{s:?}"
            );
            for seq in s.faults.chunks(3) {
                let [p1, crash, p2] = seq else { unreachable!() };
                let t = p1.at_ms;
                assert_eq!(
                    (p1.fault, crash.fault, p2.fault),
                    (FaultKind::Pause, FaultKind::KillBroker, FaultKind::Pause)
                );
                assert_eq!(
                    (p1.targets.len(), crash.targets.len(), p2.targets.len()),
                    (minority, 1, n - minority - 1)
                );
                let mut all: Vec<&String> = seq.iter().flat_map(|f| &f.targets).collect();
                all.sort();
                all.dedup();
                assert_eq!(all.len(), n, "every node once: {seq:?}");
                // Pause the minority; after the duration crash the next node,
                // pause the rest, resume the minority, start the crashed node;
                // after the duration again resume the rest.
                assert_eq!(crash.at_ms, t + 3000);
                assert_eq!(p2.at_ms, t + 3000 + step);
                assert_eq!(p1.end_ms(), t + 3000 + 2 * step);
                assert_eq!(crash.end_ms(), t + 3000 + 3 * step);
                assert_eq!(p2.end_ms(), t + 6000 + 3 * step);
                assert!(p2.end_ms() < 60_000);
            }
            // Another seed draws other nodes (in some sequence).
            let other = paced(4, &["pause-kill"], n, [60, 5, 3], 1);
            assert_ne!(lines(&s), lines(&other));
        }
        let s = paced(3, &["pause-kill"], 3, [60, 5, 3], 1);
        let l = |at, f: &str, t: &str| (at, f.to_string(), t.to_string());
        assert_eq!(
            lines(&s)[..3],
            [
                l(6_235, "pause", "n3"),
                l(9_235, "kill-broker", "n2"),
                l(9_735, "pause", "n1"),
            ]
        );
        // The crash may be another node fault that crashes: a restart heals at once.
        let r = paced(3, &["pause-kill:restart-broker"], 3, [60, 5, 3], 1);
        assert_eq!(r.faults[1].fault.to_string(), "restart-broker");
        assert_eq!(r.faults[1].duration_ms, 0);
        // Fewer than three nodes: nothing (a run refuses it before, with the reason).
        assert!(paced(3, &["pause-kill"], 2, [60, 5, 3], 1)
            .faults
            .is_empty());
        // A schedule file names the faults, never the sequence.
        let text = "seed = 1\n[[fault]]\nat_ms = 1\nduration_ms = 0\nfault = \"pause-kill\"\n\
                    target = \"n1\"\npick = 1\n";
        let e = Schedule::from_toml(text).expect_err("refused").to_string();
        assert!(e.contains("fault 1 (`pause-kill`) is a sequence"), "{e}");
        assert_eq!(Schedule::from_toml(&s.to_toml()).ok(), Some(s));
    }
}
