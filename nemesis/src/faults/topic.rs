//! `add-partitions[:N]` (seed O4): add `N` partitions (2 unless named) to every
//! topic of the run (every topic but the internal ones, whose names start with
//! `_`), while the workload runs. An instant: nothing heals it.
//!
//! How, by broker (`docs/nemesis.md`, "add-partitions"):
//! - tansu on PostgreSQL (the cluster has a storage node): tansu 0.6.0 has no
//!   CreatePartitions (it does not advertise the API), but it reads a topic's
//!   partition count from its storage on every Metadata request. The fault adds
//!   the partitions there, in one transaction on the storage node: the new
//!   `topition` rows and their `watermark` rows (what tansu's CreateTopics would
//!   have made for them), then the topic's `partitions`. Its history value says
//!   so (`"via": "storage"`): it is a change made beside the broker, not a
//!   request the broker honoured.
//! - the official images (apache/kafka, Redpanda; no storage node): the broker's
//!   own CreatePartitions, through its tool on the first node
//!   (`kafka-topics.sh --alter --partitions`, `rpk topic add-partitions`), on the
//!   internal listener (`"via": "create-partitions"`).
//!
//! Either way the script prints one line per topic, `topic|before|after`, which
//! becomes the event's `topics`.
use super::{failed, FaultKind};
use crate::control::Command;
use crate::{Cluster, NemesisError};
use serde_json::{json, Value};
use std::time::Duration;

/// Partitions added when the fault names no count.
pub const DEFAULT_ADDED: u32 = 2;

/// At most this many partitions are added at once (a typo should not make thousands).
pub const MAX_ADDED: u32 = 64;

/// The transaction that adds `added` partitions to every topic in tansu 0.6.0's
/// PostgreSQL schema (`harness/src/brokers/tansu-pg-schema.sql`), printing
/// `topic|before|after` per topic (psql `-qAt -F '|'`).
pub fn tansu_sql(added: u32) -> String {
    format!(
        r"begin;
create temporary table gauntlet_grown on commit drop as
  select id, name, partitions as old_count, partitions + {added} as new_count
  from topic where not is_internal and name not like '\_%';
insert into topition (topic, partition)
  select g.id, p from gauntlet_grown g, generate_series(g.old_count, g.new_count - 1) p
  on conflict (topic, partition) do nothing;
insert into watermark (topition)
  select tp.id from topition tp join gauntlet_grown g on tp.topic = g.id
  where tp.partition >= g.old_count
  on conflict (topition) do nothing;
update topic set partitions = g.new_count, last_updated = current_timestamp
  from gauntlet_grown g where topic.id = g.id;
select name, old_count, new_count from gauntlet_grown order by name;
commit;
"
    )
}

/// The storage node's script: [`tansu_sql`] through the node's psql, on its
/// local socket (as the storage node's start script applies the schema).
pub fn tansu_script(added: u32) -> String {
    format!(
        "set -eu
P=$(ls /usr/lib/postgresql/*/bin/psql 2>/dev/null | tail -n 1)
[ -n \"$P\" ] || P=psql
\"$P\" -qAt -F '|' -h /tmp -U postgres -v ON_ERROR_STOP=1 <<'GAUNTLET_SQL'
{}GAUNTLET_SQL
",
        tansu_sql(added)
    )
}

/// The official images' script: CreatePartitions through the image's own tool,
/// on the internal listener, for every topic whose name does not start with `_`.
pub fn official_script(added: u32) -> String {
    format!(
        r#"set -eu
N={added}
b=127.0.0.1:19092
if [ -x /opt/kafka/bin/kafka-topics.sh ]; then
  K=/opt/kafka/bin/kafka-topics.sh
  for t in $("$K" --bootstrap-server "$b" --list --exclude-internal | grep -v '^_' || true); do
    old=$("$K" --bootstrap-server "$b" --describe --topic "$t" | sed -n 's/.*PartitionCount: *\([0-9][0-9]*\).*/\1/p' | head -n 1)
    [ -n "$old" ] || {{ echo "no partition count for topic $t" >&2; exit 1; }}
    "$K" --bootstrap-server "$b" --alter --topic "$t" --partitions $((old + N)) >&2
    echo "$t|$old|$((old + N))"
  done
elif command -v rpk >/dev/null 2>&1; then
  for t in $(rpk topic list -X brokers="$b" | awk 'NR > 1 {{ print $1 }}' | grep -v '^_' || true); do
    old=$(rpk topic describe -p -X brokers="$b" "$t" | awk 'NR > 1 && $1 ~ /^[0-9]+$/' | wc -l)
    rpk topic add-partitions -X brokers="$b" "$t" --num "$N" >&2
    echo "$t|$old|$((old + N))"
  done
else
  echo "no kafka-topics.sh and no rpk in this node: it cannot ask for CreatePartitions" >&2
  exit 1
fi
"#
    )
}

/// The scripts' `topic|before|after` lines as the event's `topics`; lines of
/// another shape are skipped.
pub fn parse_topics(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter_map(|l| {
            let mut f = l.trim().split('|');
            let (t, a, b) = (f.next()?, f.next()?, f.next()?);
            if f.next().is_some() || t.is_empty() {
                return None;
            }
            let (a, b) = (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?);
            Some(json!({"topic": t, "partitions_before": a, "partitions_after": b}))
        })
        .collect()
}

/// The fault's body: on the storage node when the cluster has one (tansu on
/// PostgreSQL), else on the first broker node through CreatePartitions.
pub async fn add_partitions(
    cluster: &Cluster<'_>,
    kind: FaultKind,
    added: u32,
) -> Result<Value, NemesisError> {
    let (node, script, via) = match cluster.storage_node() {
        Some(s) => (s, tansu_script(added), "storage"),
        None => {
            let first = cluster.nodes().into_iter().next().ok_or_else(|| {
                failed(
                    kind,
                    "-",
                    "the cluster has no broker node to ask for CreatePartitions",
                )
            })?;
            (first, official_script(added), "create-partitions")
        }
    };
    let out = cluster
        .control
        .exec(&node, &Command::shell(script), Duration::from_secs(60))
        .await
        .map_err(|e| failed(kind, &node, e))?;
    if !out.success() {
        return Err(failed(
            kind,
            &node,
            format!("exited {}: {}", out.exit_code, out.combined().trim()),
        ));
    }
    let topics = parse_topics(&out.stdout);
    if topics.is_empty() {
        return Err(failed(
            kind,
            &node,
            format!(
                "no topic to add partitions to (it printed {:?})",
                out.combined().trim()
            ),
        ));
    }
    let note = if via == "storage" {
        "tansu 0.6.0 has no CreatePartitions: the partitions were added in its PostgreSQL \
         storage, which it reads on every Metadata request"
    } else {
        "the broker's CreatePartitions, through its own tool"
    };
    Ok(json!({
        "node": node,
        "via": via,
        "added": added,
        "topics": topics,
        "note": note,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_storage_transaction_adds_rows_watermarks_and_the_count_in_one_transaction() {
        let sql = tansu_sql(3);
        assert!(sql.starts_with("begin;"));
        assert!(sql.trim_end().ends_with("commit;"));
        assert!(sql.contains("partitions + 3 as new_count"));
        // The rows tansu's CreateTopics makes for each partition, then the count.
        let topition = sql.find("insert into topition").expect("topition rows");
        let watermark = sql.find("insert into watermark").expect("watermark rows");
        let update = sql.find("update topic set partitions").expect("the count");
        assert!(topition < watermark && watermark < update);
        assert!(sql.contains("not is_internal"));
        let script = tansu_script(3);
        assert!(script.contains("-v ON_ERROR_STOP=1"));
        assert!(script.contains("-h /tmp -U postgres"));
        assert!(script.contains("<<'GAUNTLET_SQL'\nbegin;"));
        assert!(script.trim_end().ends_with("GAUNTLET_SQL"));
    }

    #[test]
    fn the_official_script_asks_each_image_s_tool_for_create_partitions() {
        let s = official_script(2);
        assert!(s.contains("N=2\n"));
        // apache/kafka: the count after is the count before plus N (--partitions is a total).
        assert!(s.contains("--alter --topic \"$t\" --partitions $((old + N))"));
        assert!(s.contains("PartitionCount"));
        assert!(s.contains("--exclude-internal"));
        // Redpanda: rpk adds N.
        assert!(s.contains("rpk topic add-partitions -X brokers=\"$b\" \"$t\" --num \"$N\""));
        // The internal listener, as the role probes use it.
        assert!(s.contains("b=127.0.0.1:19092"));
        assert!(s.contains("exit 1"));
    }

    #[test]
    fn the_topics_printed_become_the_event_s_topics() {
        let t = parse_topics("gauntlet|3|5\nnoise\n|1|2\nx|a|3\nother|1|2|3\n");
        assert_eq!(
            t,
            vec![json!({"topic": "gauntlet", "partitions_before": 3, "partitions_after": 5})]
        );
        assert!(parse_topics("").is_empty());
    }
}
