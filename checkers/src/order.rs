//! Ordering anomalies read from each consumer's first receipts: key-order,
//! producer-order and gap; and partition-order from every delivery with an
//! offset (`docs/checkers.md`).
use crate::delivery::Index;
use crate::found::Found;
use crate::table::{ShortLists, Table2};
use crate::verdict::evidence::{Gap, KeyOrder, MessageRef, PartitionOrder, ProducerOrder, Skipped};
use crate::verdict::Example;
use gauntlet_history::model::{History, Outcome, NONE, NO_OFFSET, NO_OP};
use rustc_hash::{FxHashMap, FxHashSet};

pub(crate) struct Findings {
    pub key_order: Found,
    pub producer_order: Found,
    pub gap: Found,
    pub partition_order: Found,
    /// Some delivery carried an offset (else partition order is unknown).
    pub has_offsets: bool,
}

/// Each (producer, key)'s sends by producer position.
struct Positions {
    /// [send]: its (producer, key) pair.
    pair_of_send: Vec<u32>,
    pairs: usize,
    start: Vec<u32>,
    sends: Vec<u32>,
}

impl Positions {
    fn build(h: &History) -> Positions {
        // [process]: key -> pair. One small map per producer: the producers at work
        // keep theirs in cache (one map for all is probed at random in long histories).
        let mut pair_of: Vec<FxHashMap<u32, u32>> = vec![FxHashMap::default(); h.processes.len()];
        let mut pair_of_send = Vec::with_capacity(h.sends.len());
        let mut counts: Vec<u32> = Vec::new();
        for s in &h.sends {
            let next = counts.len() as u32;
            let pair = *pair_of[s.producer as usize].entry(s.key).or_insert(next);
            if pair == next {
                counts.push(0);
            }
            counts[pair as usize] += 1;
            pair_of_send.push(pair);
        }
        let mut start = Vec::with_capacity(counts.len() + 1);
        let mut acc = 0u32;
        for c in &counts {
            start.push(acc);
            acc += c;
        }
        start.push(acc);
        let mut sends = vec![NONE; h.sends.len()];
        for (i, s) in h.sends.iter().enumerate() {
            let pair = pair_of_send[i] as usize;
            sends[(start[pair] + s.position) as usize] = i as u32;
        }
        Positions {
            pair_of_send,
            pairs: counts.len(),
            start,
            sends,
        }
    }

    fn of(&self, pair: u32) -> &[u32] {
        let a = self.start[pair as usize] as usize;
        let b = self.start[pair as usize + 1] as usize;
        &self.sends[a..b]
    }
}

#[derive(Clone, Copy)]
struct PkState {
    last_pos: u32,
    max_pos: u32,
    max_del: u32,
}

#[derive(Clone, Copy)]
struct KeyState {
    max_invoke: u64,
    max_del: u32,
}

/// The message of delivery `di`, as the order anomalies name it.
pub(crate) fn msg_ref(h: &History, di: u32) -> MessageRef {
    let d = &h.deliveries[di as usize];
    let poll = &h.polls[d.poll as usize];
    let mut m = MessageRef {
        delivered_by: poll.complete,
        offset: (d.offset != NO_OFFSET).then_some(d.offset),
        position: None,
        process: None,
        producer: None,
        send_complete: None,
        send_invoke: None,
        value: d.value,
    };
    if d.send != NONE {
        let s = &h.sends[d.send as usize];
        m.send_invoke = Some(s.invoke);
        m.send_complete = (s.complete != NO_OP).then_some(s.complete);
        m.producer = Some(h.process_number(s.producer));
        if s.process != s.producer {
            // A slot of a shared producer client: the producer is named by its first process.
            m.process = Some(h.process_number(s.process));
        }
        m.position = Some(s.position);
    }
    m
}

pub(crate) fn check(h: &History, idx: &Index, max: usize) -> Findings {
    let positions = Positions::build(h);
    let mut key_order = Found::new(max);
    let mut producer_order = Found::new(max);
    let mut gap = Found::new(max);
    let mut keys_violated: FxHashSet<u32> = FxHashSet::default();
    let mut producers_violated: FxHashSet<u32> = FxHashSet::default();
    // State per consumer and key, (producer, key) pair or producer: dense tables
    // while they stay within a few cells per delivery, hash maps beyond.
    let n_proc = h.processes.len();
    let budget = (1 << 16).max(2 * h.deliveries.len());
    const NO_PK: PkState = PkState {
        last_pos: NONE,
        max_pos: NONE,
        max_del: NONE,
    };
    const NO_KEY: KeyState = KeyState {
        max_invoke: 0,
        max_del: NONE,
    };
    let mut by_key = Table2::new(n_proc, h.keys.len(), NO_KEY, budget);
    let mut by_pk = ShortLists::new(positions.pairs);
    let mut by_producer = ShortLists::new(n_proc);
    // (group slot, pair) -> every position below this one is accounted for.
    let mut settled: FxHashMap<(u32, u32), u32> = FxHashMap::default();

    for (di, d) in h.deliveries.iter().enumerate() {
        if !idx.first_receipt[di] {
            continue;
        }
        let di = di as u32;
        let send = &h.sends[d.send as usize];
        let poll = &h.polls[d.poll as usize];
        let c = poll.process;
        let slot = idx.slot_of_group[poll.group as usize];

        // Key order: same producer by position, any producer by realtime.
        let pair = positions.pair_of_send[d.send as usize];
        let pk = by_pk.get_mut(pair, c, NO_PK);
        let ks = by_key.get_mut(c, send.key, NO_KEY);
        let mut before: Option<u32> = None;
        if pk.max_pos != NONE && send.position < pk.max_pos {
            before = Some(pk.max_del);
        } else if ks.max_del != NONE
            && send.outcome == Outcome::Ok
            && send.complete != NO_OP
            && ks.max_invoke > send.complete
        {
            before = Some(ks.max_del);
        }
        if let Some(m2) = before {
            if keys_violated.insert(send.key) {
                key_order.hit(|| {
                    Example::KeyOrder(KeyOrder {
                        consumer: h.process_number(c),
                        group: h.group_name(poll.group).to_string(),
                        key: h.key_name(send.key).to_string(),
                        received_first: msg_ref(h, m2),
                        sent_first: msg_ref(h, di),
                    })
                });
            }
        }
        if ks.max_del == NONE || send.invoke > ks.max_invoke {
            ks.max_invoke = send.invoke;
            ks.max_del = di;
        }

        // Gap: positions jumped over that were written and the group had not been given.
        let last: i64 = if pk.last_pos == NONE {
            -1
        } else {
            i64::from(pk.last_pos)
        };
        let i = i64::from(send.position);
        if i > last + 1 {
            let sends = positions.of(pair);
            // Given to the group already: earlier in file order (this batch included), or by
            // another poll that was under way before this one completed.
            let given = |s: u32| {
                let ep = idx.earliest_poll[slot as usize][s as usize];
                idx.first[slot as usize][s as usize] < di
                    || (ep != NONE && ep != d.poll && h.polls[ep as usize].invoke < poll.complete)
            };
            let written = |s: u32| idx.written[s as usize];
            let ptr = settled.entry((slot, pair)).or_insert(0);
            while (*ptr as usize) < sends.len() {
                let s = sends[*ptr as usize];
                if written(s) && !given(s) {
                    break;
                }
                *ptr += 1;
            }
            let from = (last + 1).max(i64::from(*ptr));
            let mut missing: Vec<Skipped> = Vec::new();
            let mut n_missing = 0u64;
            for pos in from..i {
                let s = sends[pos as usize];
                if written(s) && !given(s) {
                    n_missing += 1;
                    if missing.len() < 10 {
                        let x = &h.sends[s as usize];
                        missing.push(Skipped {
                            later_delivered: idx.first[slot as usize][s as usize] != NONE,
                            position: pos,
                            send_invoke: x.invoke,
                            value: x.value,
                        });
                    }
                }
            }
            if n_missing > 0 {
                gap.group_hit(h.group_name(poll.group));
                gap.hit(|| {
                    Example::Gap(Gap {
                        after_position: (last >= 0).then_some(last),
                        consumer: h.process_number(c),
                        group: h.group_name(poll.group).to_string(),
                        key: h.key_name(send.key).to_string(),
                        missing,
                        missing_count: n_missing,
                        producer: h.process_number(send.producer),
                        received: msg_ref(h, di),
                    })
                });
            }
        }
        pk.last_pos = send.position;
        if pk.max_pos == NONE || send.position > pk.max_pos {
            pk.max_pos = send.position;
            pk.max_del = di;
        }

        // Producer order across keys.
        let ps = by_producer.get_mut(send.producer, c, (NONE, NONE));
        if ps.0 != NONE && send.seq < ps.0 {
            let m2 = ps.1;
            if producers_violated.insert(send.producer) {
                producer_order.hit(|| {
                    Example::ProducerOrder(ProducerOrder {
                        consumer: h.process_number(c),
                        group: h.group_name(poll.group).to_string(),
                        producer: h.process_number(send.producer),
                        received_first: msg_ref(h, m2),
                        sent_first: msg_ref(h, di),
                    })
                });
            }
        }
        if ps.0 == NONE || send.seq > ps.0 {
            *ps = (send.seq, di);
        }
    }

    // Partition order, over every delivery with an offset.
    // Any reset restarts it, whatever partitions it names: a consumer that is
    // assigned a partition again may start over at its committed offset.
    let mut resets: Vec<Vec<u64>> = vec![Vec::new(); h.processes.len()];
    for r in &h.resets {
        resets[r.process as usize].push(r.index);
    }
    let mut partition_order = Found::new(max);
    let mut partitions_violated: FxHashSet<u32> = FxHashSet::default();
    // (consumer, partition) -> (epoch, last offset, delivery), or NO_LAST.
    const NO_LAST: (u32, i64, u32) = (u32::MAX, 0, NONE);
    let mut last_offset = Table2::new(n_proc, h.partitions.len() + 1, NO_LAST, budget);
    let mut has_offsets = false;
    for (di, d) in h.deliveries.iter().enumerate() {
        if d.offset == NO_OFFSET {
            continue;
        }
        has_offsets = true;
        let poll = &h.polls[d.poll as usize];
        let c = poll.process;
        let epoch = resets[c as usize].partition_point(|&r| r < poll.invoke) as u32;
        let part = if d.partition == NONE {
            h.partitions.len() as u32
        } else {
            d.partition
        };
        let st = last_offset.get_mut(c, part, NO_LAST);
        match st {
            st if st.0 == epoch => {
                if d.offset <= st.1 && partitions_violated.insert(d.partition) {
                    let prev = st.2;
                    partition_order.hit(|| {
                        let (topic, part) = h.partition(d.partition).unwrap_or((None, -1));
                        Example::PartitionOrder(PartitionOrder {
                            consumer: h.process_number(c),
                            earlier: msg_ref(h, prev),
                            group: h.group_name(poll.group).to_string(),
                            later: msg_ref(h, di as u32),
                            partition: (d.partition != NONE).then_some(part),
                            topic: topic.map(str::to_string),
                        })
                    });
                }
                *st = (epoch, d.offset, di as u32);
            }
            st => *st = (epoch, d.offset, di as u32),
        }
    }
    key_order.count = keys_violated.len() as u64;
    producer_order.count = producers_violated.len() as u64;
    partition_order.count = partitions_violated.len() as u64;
    Findings {
        key_order,
        producer_order,
        gap,
        partition_order,
        has_offsets,
    }
}
