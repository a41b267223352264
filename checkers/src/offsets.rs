//! inconsistent-offsets: one broker position (partition + offset, or id) holding two different values.
use crate::delivery::Ident;
use crate::found::Found;
use gauntlet_history::model::{History, Outcome, NONE, NO_OFFSET};
use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::{json, Value};

fn idents(partition: u32, offset: i64, id: u32) -> [Option<Ident>; 2] {
    [
        (offset != NO_OFFSET).then_some(Ident::Pos(partition, offset)),
        (id != NONE).then_some(Ident::Id(id)),
    ]
}

fn describe(h: &History, at: Ident) -> Value {
    match at {
        Ident::Pos(p, o) => {
            let (topic, part) = h.partition(p).unwrap_or((None, -1));
            json!({"topic": topic, "partition": if p == NONE { Value::Null } else { json!(part) }, "offset": o})
        }
        Ident::Id(id) => json!({"id": h.id_name(id)}),
        Ident::Unknown => Value::Null,
    }
}

pub(crate) fn check(h: &History, max: usize) -> Found {
    let mut found = Found::new(max);
    // position -> (value, op index that says so)
    let mut held: FxHashMap<Ident, (i64, u64)> = FxHashMap::default();
    let mut bad: FxHashSet<Ident> = FxHashSet::default();
    let mut see = |at: Ident, value: i64, op: u64, found: &mut Found| match held.get(&at) {
        None => {
            held.insert(at, (value, op));
        }
        Some(&(v0, op0)) if v0 != value => {
            if bad.insert(at) {
                found.hit(|| {
                    json!({
                        "position": describe(h, at),
                        "values": [v0, value],
                        "ops": [op0, op],
                    })
                });
            }
        }
        Some(_) => {}
    };
    for s in &h.sends {
        if s.outcome == Outcome::Ok {
            for at in idents(s.partition, s.offset, s.id).into_iter().flatten() {
                see(at, s.value, s.complete, &mut found);
            }
        }
    }
    for d in &h.deliveries {
        let op = h.polls[d.poll as usize].complete;
        for at in idents(d.partition, d.offset, d.id).into_iter().flatten() {
            see(at, d.value, op, &mut found);
        }
    }
    found
}
