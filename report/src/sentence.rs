//! Each anomaly example as a sentence a person reads.
//!
//! The sentence says what happened with the example's own facts (values, keys,
//! consumers, positions) and names the ops that prove it by their `index` in
//! the history, so a reader can find them; the report keeps the example's JSON
//! one click away. An example of another Gauntlet's verdict that this one
//! cannot type ([`Example::Untyped`]) gets a sentence that says so.
use gauntlet_checkers::verdict::evidence::{
    DeliveryRef, MessageRef, Position, TxnObject, TxnOp, Versions,
};
use gauntlet_checkers::verdict::Example;
use gauntlet_checkers::AnomalyKind;

/// The example of an anomaly of `kind`, as a sentence.
pub fn sentence(kind: AnomalyKind, e: &Example) -> String {
    use AnomalyKind as A;
    match e {
        Example::Missing(m) => {
            let send = match m.send_ok {
                Some(ok) => format!("sent at op {}, ok at op {ok}", m.send_invoke),
                None => format!(
                    "sent at op {}, which ended {}, written as {} shows",
                    m.send_invoke,
                    m.send_outcome.as_deref().unwrap_or("without an answer"),
                    m.proven_by.as_deref().unwrap_or("a read")
                ),
            };
            let groups = list(m.groups.iter().map(|g| group(g)));
            let proof = if let Some(d) = m.drained {
                format!(", though the drain that ended the run read everything left (op {d})")
            } else if let Some(h) = &m.higher_offset_delivered {
                format!(
                    ": it is at offset {} of {}, and {} was given offset {} there{}",
                    opt(m.offset),
                    partition(h.topic.as_deref(), m.partition),
                    consumer_of(h),
                    opt(h.offset),
                    by_poll(h.delivered_by)
                )
            } else {
                String::new()
            };
            match kind {
                A::Unseen => format!(
                    "message {} of key {} ({send}) has not been delivered to {groups} \
                     yet; no drain marks the end of the run, so it may still come",
                    m.value,
                    key(&m.key)
                ),
                _ => format!(
                    "message {} of key {} ({send}) was never delivered to {groups}{proof}",
                    m.value,
                    key(&m.key)
                ),
            }
        }
        Example::Unexpected(u) => format!(
            "message {} of key {} was delivered to {}{}{}, but no send of it was ever invoked",
            u.value,
            key(&u.key),
            consumer_of(&u.delivery),
            at(&u.delivery),
            by_poll(u.delivery.delivered_by)
        ),
        Example::Outcome(o) => {
            let ended = match (kind, o.send_completion) {
                (A::AbortedRead, Some(c)) => format!("failed at op {c}"),
                (A::AbortedRead, None) => "failed".to_string(),
                (_, Some(c)) => format!("ended with an unknown outcome at op {c}"),
                (_, None) => "never completed".to_string(),
            };
            let what = if o.in_txn {
                "its transaction's send"
            } else {
                "its send"
            };
            let tail = if kind == A::AbortedRead {
                ""
            } else {
                ": it was written after all"
            };
            format!(
                "message {} of key {} was delivered to {}{}{}, though {what} (invoked at op {}) {ended}{tail}",
                o.value,
                key(&o.key),
                consumer_of(&o.delivery),
                at(&o.delivery),
                by_poll(o.delivery.delivered_by),
                o.send_invoke
            )
        }
        Example::Repeated(r) => {
            let shown = list(
                r.deliveries
                    .iter()
                    .map(|d| format!("{}{}{}", consumer_of(d), at(d), by_poll(d.delivered_by))),
            );
            let sent = format!("sent at op {}", r.send_invoke);
            if kind == A::DuplicateWrite {
                let how = if r.deliveries.is_empty() {
                    "its send's acknowledgement and a read name different ones; no poll \
                     delivered it"
                        .to_string()
                } else {
                    format!(
                        "it was delivered {} time{}: {shown}",
                        r.deliveries.len(),
                        plural(r.deliveries.len())
                    )
                };
                format!(
                    "message {} of key {} ({sent}) was stored at more than one position; {how}",
                    r.value,
                    key(&r.key),
                )
            } else {
                format!(
                    "message {} of key {} ({sent}) was delivered {} times: {shown}",
                    r.value,
                    key(&r.key),
                    r.deliveries.len()
                )
            }
        }
        Example::Gap(g) => {
            let skipped = list(g.missing.iter().map(|s| {
                format!(
                    "{} (position {}{})",
                    s.value,
                    s.position,
                    if s.later_delivered {
                        ", delivered later"
                    } else {
                        ""
                    }
                )
            }));
            let more = g.missing_count.saturating_sub(g.missing.len() as u64);
            format!(
                "consumer {} of {} received message {} of key {} from producer {}{}, {}, \
                 skipping {} written message{} of that producer and key: {skipped}{}",
                g.consumer,
                group(&g.group),
                g.received.value,
                key(&g.key),
                g.producer,
                match g.received.position {
                    Some(p) => format!(" (position {p}, poll op {})", g.received.delivered_by),
                    None => by_poll(g.received.delivered_by),
                },
                match g.after_position {
                    Some(p) => format!("after position {p}"),
                    None => "the first it received of that producer and key".to_string(),
                },
                g.missing_count,
                plural(g.missing_count as usize),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            )
        }
        Example::KeyOrder(k) => format!(
            "message {} of key {} was delivered to consumer {}{}, after message {}, which was \
             sent after it{}",
            k.sent_first.value,
            key(&k.key),
            k.consumer,
            msg_at(&k.sent_first),
            k.received_first.value,
            sent_after(&k.sent_first, &k.received_first)
        ),
        Example::ProducerOrder(p) => format!(
            "message {} of producer {} was delivered to consumer {}{}, after message {}, which \
             the producer sent after it{}",
            p.sent_first.value,
            p.producer,
            p.consumer,
            msg_at(&p.sent_first),
            p.received_first.value,
            sent_after(&p.sent_first, &p.received_first)
        ),
        Example::PartitionOrder(p) => format!(
            "consumer {} of {} received offset {} of {} (message {}, poll op {}) after offset \
             {} (message {}, poll op {}), with no reset between",
            p.consumer,
            group(&p.group),
            opt(p.later.offset),
            partition(p.topic.as_deref(), p.partition),
            p.later.value,
            p.later.delivered_by,
            opt(p.earlier.offset),
            p.earlier.value,
            p.earlier.delivered_by
        ),
        Example::TotalOrderPair(t) => format!(
            "consumer {} of {} received message {}{} before message {}{}, though message {}'s \
             send was invoked at op {}, after message {}'s send was ok at op {}{}",
            t.consumer,
            group(&t.group),
            t.second.value,
            by_poll(t.second.delivered_by),
            t.first.value,
            by_poll(t.first.delivered_by),
            t.second.value,
            t.second.send_invoke,
            t.first.value,
            t.first.send_ok,
            if t.pairs_here > 1 {
                format!(" ({} such pairs end at this delivery)", t.pairs_here)
            } else {
                String::new()
            }
        ),
        Example::TotalOrderSplit(t) => format!(
            "consumers {} and {} of {} received messages {} and {} in opposite orders \
             ({} then {}, and {} then {}), and neither send came before the other (invoked at \
             ops {} and {})",
            t.consumers[0],
            t.consumers[1],
            group(&t.group),
            t.values[0],
            t.values[1],
            t.orders[0][0],
            t.orders[0][1],
            t.orders[1][0],
            t.orders[1][1],
            t.send_invokes[0],
            t.send_invokes[1]
        ),
        Example::Inconsistent(i) => {
            let pos = match &i.position {
                Position::Offset(o) => {
                    format!(
                        "offset {} of {}",
                        o.offset,
                        partition(o.topic.as_deref(), o.partition)
                    )
                }
                Position::Id(x) => format!("message id {}", x.id.as_deref().unwrap_or("?")),
            };
            let claims = list(
                i.values
                    .iter()
                    .zip(i.ops.iter().map(Some).chain(std::iter::repeat(None)))
                    .map(|(v, op)| match op {
                        Some(op) => format!("{v} (op {op})"),
                        None => v.to_string(),
                    }),
            );
            format!(
                "{pos} held {} different values: {claims}",
                count_word(i.values.len())
            )
        }
        Example::Cycle(c) => {
            let names = list(
                c.cycle
                    .iter()
                    .map(|t| format!("{} = {}", t.name.as_deref().unwrap_or("T?"), txn_op(t))),
            );
            let chain = list(
                c.steps
                    .iter()
                    .map(|s| format!("{} < {} ({})", s.from, s.to, s.edge)),
            );
            format!(
                "{} ops in a cycle: {chain}; where {names} (the explanation proves each edge)",
                c.cycle.len()
            )
        }
        Example::G1b(g) => format!(
            "{} read {} from {}, which {} wrote, then read {} past {}, that transaction's next \
             write there, without reading it",
            txn_op(&g.reader),
            g.read,
            object(g.object.as_ref()),
            txn_op(&g.writer),
            g.then_read,
            g.missed
        ),
        Example::Precommitted(p) => format!(
            "{} read {} from {}, a value it sent itself, before it committed",
            txn_op(&p.op),
            p.value,
            object(p.object.as_ref())
        ),
        Example::Versions(v) => versions(kind, v),
        Example::Processed(p) => processed(kind, p),
        Example::RepartitionKeyOrder(r) => format!(
            "message {} of key {} was sent before the add-partitions that completed at op {} and stored on \
             {}; message {}, sent after it, went to {}; {} received message {} (consumer {}{}) \
             before message {} (consumer {}{})",
            r.sent_first.value,
            key(&r.key),
            r.change,
            partition(None, r.old_partition),
            r.received_first.value,
            partition(None, r.new_partition),
            group(&r.group),
            r.received_first.value,
            r.received_first_by,
            msg_at(&r.received_first),
            r.sent_first.value,
            r.sent_first_by,
            msg_at(&r.sent_first)
        ),
        Example::Untyped(_) => {
            "an example this report cannot put in words (from the verdict of another Gauntlet): \
             see its record"
                .to_string()
        }
        Example::TwoHopLost(l) => {
            let how = match l.at.as_str() {
                "first-hop" => "no transformer read it".to_string(),
                "transformer" => format!(
                    "a transformer read it (poll op {}) and sent no output of it that was written",
                    op_or(l.read_by)
                ),
                _ => format!(
                    "its output{} {} written and never delivered",
                    list(l.outputs.iter().map(|o| format!(
                        " {} (sent by transformer {} at op {})",
                        o.value, o.transformer, o.send_invoke
                    ))),
                    if l.outputs.len() > 1 { "were" } else { "was" }
                ),
            };
            format!(
                "input {} of key {} (sent at op {}) reached no consumer by the drain (op {}): {how}",
                l.value,
                key(&l.key),
                l.send_invoke,
                l.drained
            )
        }
        Example::TwoHopDuplicate(d) => format!(
            "input {} of key {} (sent at op {}) was transformed {} times: outputs {}",
            d.value,
            key(&d.key),
            d.send_invoke,
            d.outputs.len(),
            list(d.outputs.iter().map(|o| format!(
                "{} (transformer {}, send op {})",
                o.value, o.transformer, o.send_invoke
            )))
        ),
        Example::TwoHopOrder(o) => {
            let (f2, f1) = (&o.received_first, &o.sent_first);
            let why = match o.broke_at.as_str() {
                "input" => format!(
                    "already out of order when read: input {} was read (poll op {}) before \
                     input {} (poll op {})",
                    f2.input,
                    op_or(f2.read_by),
                    f1.input,
                    op_or(f1.read_by)
                ),
                "transformer" => format!(
                    "read in order, then sent in the other order by the transformers (output \
                     {} at op {} by transformer {}, output {} at op {} by transformer {})",
                    f2.value,
                    f2.send_invoke,
                    f2.transformer,
                    f1.value,
                    f1.send_invoke,
                    f1.transformer
                ),
                "second-hop" => format!(
                    "read and sent in order (send ops {} then {}), reordered by the second hop",
                    f1.send_invoke, f2.send_invoke
                ),
                _ => "the read of an input is not in the history".to_string(),
            };
            format!(
                "consumer {} received output {} (of input {}) at poll op {} before output {} \
                 (of input {}) at poll op {}, though producer {} sent input {} of key {} first: \
                 {why}",
                o.consumer,
                f2.value,
                f2.input,
                op_or(f2.delivered_by),
                f1.value,
                f1.input,
                op_or(f1.delivered_by),
                o.producer,
                f1.input,
                key(&o.key)
            )
        }
    }
}

/// A message and what its idempotent consumers did with it (seed D7).
fn processed(kind: AnomalyKind, p: &gauntlet_checkers::verdict::processing::Processed) -> String {
    use AnomalyKind as A;
    let ops = |v: &[u64]| list(v.iter().map(|o| format!("op {o}")));
    let delivered = if p.delivered_by.is_empty() {
        "never delivered".to_string()
    } else {
        format!("delivered by the polls ending at {}", ops(&p.delivered_by))
    };
    let answers = if p.answers.is_empty() {
        String::new()
    } else {
        format!("; the dedup store answered {}", p.answers.join(", "))
    };
    let to = group(&p.group);
    match kind {
        A::DuplicateProcessing => format!(
            "message {} had its effect applied {} times in {to} ({}), {delivered}{answers}",
            p.value,
            p.effects.len(),
            ops(&p.effects)
        ),
        A::LostProcessing => format!(
            "message {} was {delivered} to {to}, and its effect was never applied, though the \
             drain read everything left{answers}",
            p.value
        ),
        _ => format!(
            "message {} was held back by its consumer in {to} (the dedup store did not answer), \
             {delivered}{answers}",
            p.value
        ),
    }
}

fn versions(kind: AnomalyKind, v: &Versions) -> String {
    use AnomalyKind as A;
    let obj = object(v.object.as_ref());
    let [v1, v2] = v.values;
    let skipped = match &v.skipped {
        Some(s) if !s.is_empty() => format!(", skipping {}", list(s.iter().map(|x| x.to_string()))),
        _ => String::new(),
    };
    let rel = match v.delta {
        d if d > 1 => format!("{d} versions after {v1}"),
        1 => format!("the version after {v1}"),
        0 => format!("the same version as {v1}"),
        d => format!("{} version{} before {v1}", -d, plural((-d) as usize)),
    };
    let sends = matches!(
        kind,
        A::NonmonotonicSend | A::IntSendSkip | A::IntNonmonotonicSend
    );
    if let Some(op) = &v.op {
        let (verb, prep) = if sends {
            ("sent", "to")
        } else {
            ("read", "from")
        };
        return format!(
            "within one op, {} {verb} {v1} and then {v2} {prep} {obj}, {rel}{skipped}",
            txn_op(op)
        );
    }
    let (earlier, later) = match &v.ops {
        Some([a, b]) => (earlier_op(a), txn_op(b)),
        None => ("an earlier op".to_string(), "an op".to_string()),
    };
    if sends {
        format!("{later} sent {v2} to {obj}, {rel}, which {earlier} had sent there last")
    } else {
        format!(
            "{later} first read {v2} from {obj}, {rel}, which {earlier} had read there last{skipped}"
        )
    }
}

/// "the default group" or "group NAME".
fn group(g: &str) -> String {
    if g.is_empty() {
        "the default group".to_string()
    } else {
        format!("group {g}")
    }
}

fn key(k: &str) -> String {
    if k.is_empty() {
        "(none)".to_string()
    } else {
        k.to_string()
    }
}

fn partition(topic: Option<&str>, p: Option<i64>) -> String {
    match (topic, p) {
        (Some(t), Some(p)) => format!("partition {t}/{p}"),
        (None, Some(p)) => format!("partition {p}"),
        (Some(t), None) => format!("topic {t}"),
        (None, None) => "an unnamed partition".to_string(),
    }
}

fn object(o: Option<&TxnObject>) -> String {
    match o {
        Some(o) => partition(o.topic.as_deref(), Some(o.partition)),
        None => "an unknown partition".to_string(),
    }
}

fn op_or(x: Option<u64>) -> String {
    x.map_or_else(|| "?".to_string(), |x| x.to_string())
}

fn opt(x: Option<i64>) -> String {
    x.map_or_else(|| "?".to_string(), |x| x.to_string())
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn count_word(n: usize) -> String {
    match n {
        2 => "two".to_string(),
        3 => "three".to_string(),
        n => n.to_string(),
    }
}

/// "a, b and c".
fn list(items: impl Iterator<Item = String>) -> String {
    let v: Vec<String> = items.collect();
    match v.len() {
        0 => "none".to_string(),
        1 => v[0].clone(),
        n => format!("{} and {}", v[..n - 1].join(", "), v[n - 1]),
    }
}

fn consumer_of(d: &DeliveryRef) -> String {
    if d.group.is_empty() {
        format!("consumer {}", d.consumer)
    } else {
        format!("consumer {} of group {}", d.consumer, d.group)
    }
}

fn by_poll(op: u64) -> String {
    format!(" (poll op {op})")
}

/// Where a delivery was: " at offset O of partition P", or " as message id I".
fn at(d: &DeliveryRef) -> String {
    match (d.offset, &d.id) {
        (Some(o), _) => format!(
            " at offset {o} of {}",
            partition(d.topic.as_deref(), d.partition)
        ),
        (None, Some(id)) => format!(" as message id {id}"),
        (None, None) => String::new(),
    }
}

fn msg_at(m: &MessageRef) -> String {
    match m.offset {
        Some(o) => format!(" at offset {o}{}", by_poll(m.delivered_by)),
        None => by_poll(m.delivered_by),
    }
}

/// Why `later` was sent after `first`: the ops of their sends.
fn sent_after(first: &MessageRef, later: &MessageRef) -> String {
    match (first.send_invoke, later.send_invoke) {
        (Some(a), Some(b)) if b > a => {
            format!(" (its send invoked at op {b}, this one's at op {a})")
        }
        _ => String::new(),
    }
}

/// "its earlier poll (ops 2-3)": an op of the process just named.
fn earlier_op(t: &TxnOp) -> String {
    let what = match t.f.as_str() {
        "txn" => "transaction",
        other => other,
    };
    match t.complete {
        Some(c) => format!("its earlier {what} (ops {}-{c})", t.invoke),
        None => format!("its earlier {what} (op {}, never completed)", t.invoke),
    }
}

fn txn_op(t: &TxnOp) -> String {
    let what = match t.f.as_str() {
        "txn" => "the transaction",
        "send" => "the send",
        "poll" => "the poll",
        other => other,
    };
    let done = match t.complete {
        Some(c) => format!("ops {}-{c}", t.invoke),
        None => format!("op {}, never completed", t.invoke),
    };
    format!("{what} of process {} ({done}, {})", t.process, t.outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn say(kind: AnomalyKind, j: serde_json::Value) -> String {
        let e = Example::typed(kind, j);
        assert!(!matches!(e, Example::Untyped(_)), "{e:?} did not type");
        sentence(kind, &e)
    }

    fn msg(
        value: i64,
        delivered_by: u64,
        offset: i64,
        invoke: u64,
        complete: u64,
    ) -> serde_json::Value {
        json!({"delivered_by": delivered_by, "offset": offset, "position": 0, "producer": 1,
               "send_complete": complete, "send_invoke": invoke, "value": value})
    }

    #[test]
    fn key_order_says_which_message_came_after_which() {
        let j = json!({"consumer": 4, "group": "", "key": "k2",
                       "received_first": msg(601, 1200, 68, 1100, 1105),
                       "sent_first": msg(585, 1203, 69, 1090, 1095)});
        assert_eq!(
            say(AnomalyKind::KeyOrder, j),
            "message 585 of key k2 was delivered to consumer 4 at offset 69 (poll op 1203), \
             after message 601, which was sent after it (its send invoked at op 1100, this \
             one's at op 1090)"
        );
    }

    #[test]
    fn lost_says_what_proves_the_loss() {
        let drained = json!({"drained": 90, "groups": ["g1"], "key": "k0", "send_invoke": 3,
                             "send_ok": 5, "value": 7});
        assert_eq!(
            say(AnomalyKind::Lost, drained),
            "message 7 of key k0 (sent at op 3, ok at op 5) was never delivered to group g1, \
             though the drain that ended the run read everything left (op 90)"
        );
        let skipped = json!({"groups": [""], "key": "k0", "send_invoke": 3, "send_ok": 5,
            "value": 7, "partition": 0, "offset": 4,
            "higher_offset_delivered": {"consumer": 2, "delivered_by": 40, "group": "",
                                        "offset": 9, "partition": 0}});
        assert_eq!(
            say(AnomalyKind::Lost, skipped),
            "message 7 of key k0 (sent at op 3, ok at op 5) was never delivered to the default \
             group: it is at offset 4 of partition 0, and consumer 2 was given offset 9 there \
             (poll op 40)"
        );
        let unseen = json!({"groups": ["a", "b"], "key": "k1", "send_invoke": 3, "send_ok": null,
            "send_outcome": "info", "proven_by": "a read of it", "value": 8});
        assert_eq!(
            say(AnomalyKind::Unseen, unseen),
            "message 8 of key k1 (sent at op 3, which ended info, written as a read of it \
             shows) has not been delivered to group a and group b yet; no drain marks the end \
             of the run, so it may still come"
        );
    }

    #[test]
    fn integrity_anomalies_in_words() {
        let d =
            json!({"consumer": 1, "delivered_by": 12, "group": "g", "offset": 3, "partition": 0});
        assert_eq!(
            say(
                AnomalyKind::Unexpected,
                json!({"delivery": d, "key": "k", "value": 99})
            ),
            "message 99 of key k was delivered to consumer 1 of group g at offset 3 of \
             partition 0 (poll op 12), but no send of it was ever invoked"
        );
        assert_eq!(
            say(
                AnomalyKind::AbortedRead,
                json!({"delivery": d, "in_txn": false, "key": "k", "send_completion": 6,
                       "send_invoke": 4, "value": 5})
            ),
            "message 5 of key k was delivered to consumer 1 of group g at offset 3 of \
             partition 0 (poll op 12), though its send (invoked at op 4) failed at op 6"
        );
        assert_eq!(
            say(
                AnomalyKind::InconsistentOffsets,
                json!({"ops": [1, 5], "position": {"offset": 0, "partition": 0, "topic": null},
                       "values": [0, 1]})
            ),
            "offset 0 of partition 0 held two different values: 0 (op 1) and 1 (op 5)"
        );
    }

    #[test]
    fn order_and_transaction_anomalies_in_words() {
        assert_eq!(
            say(
                AnomalyKind::TotalOrder,
                json!({"consumer": 10, "group": "g1", "pairs_here": 1,
                       "first": {"delivered_by": 1201, "send_ok": 3, "value": 2},
                       "second": {"delivered_by": 1190, "send_invoke": 7, "value": 4}})
            ),
            "consumer 10 of group g1 received message 4 (poll op 1190) before message 2 (poll \
             op 1201), though message 4's send was invoked at op 7, after message 2's send was \
             ok at op 3"
        );
        let op = |p: u64, i: u64, c: u64| json!({"complete": c, "f": "poll", "invoke": i, "process": p, "type": "ok"});
        assert_eq!(
            say(
                AnomalyKind::PollSkip,
                json!({"delta": 2, "object": {"partition": 0}, "ops": [op(1, 2, 3), op(1, 8, 9)],
                       "skipped": [11], "values": [10, 12]})
            ),
            "the poll of process 1 (ops 8-9, ok) first read 12 from partition 0, 2 versions \
             after 10, which its earlier poll (ops 2-3) had read there last, skipping 11"
        );
        assert_eq!(
            sentence(AnomalyKind::Gap, &Example::Untyped(json!({"x": 1}))),
            "an example this report cannot put in words (from the verdict of another Gauntlet): \
             see its record"
        );
    }
}
