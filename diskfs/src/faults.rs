//! What a fault does once the daemon has it: kill the node's processes,
//! settle the pending writes (drop, keep a torn prefix, or write through) and
//! change the backing files (bit flips, a cut, a wipe).

use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::fs::TakenFile;
use crate::glob;
use crate::log::{kept_by, torn_cut, Write};
use crate::report::{Change, FileReport, Report};
use crate::rng::Rng;
use crate::DiskfsError;

/// One process as `/proc/<pid>/stat` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: i32,
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
}

/// Parses `/proc/<pid>/stat` (the command name may hold spaces and parens).
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let mut rest = text.get(close + 1..)?.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    let pgrp = rest.next()?.parse().ok()?;
    Some(ProcStat {
        pid,
        state,
        ppid,
        pgrp,
    })
}

/// Every process in `/proc` that is not a zombie.
pub fn processes() -> Vec<ProcStat> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if let Some(st) = fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|t| parse_stat(&t))
        {
            if st.state != 'Z' && st.state != 'X' {
                out.push(st);
            }
        }
    }
    out
}

fn ancestors(procs: &HashMap<i32, ProcStat>, pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let mut cur = pid;
    while let Some(p) = procs.get(&cur) {
        if p.ppid <= 1 || out.contains(&p.ppid) {
            break;
        }
        out.push(p.ppid);
        cur = p.ppid;
    }
    out
}

/// The pids a kill takes: in a container, all but pid 1, `me`, the peer and
/// the peer's ancestors; otherwise the child's process group and the child's
/// descendants.
pub fn victims(
    procs: &[ProcStat],
    me: i32,
    container: bool,
    child: i32,
    peer: Option<i32>,
) -> Vec<i32> {
    let by_pid: HashMap<i32, ProcStat> = procs.iter().map(|p| (p.pid, *p)).collect();
    let mut out: Vec<i32> = if container {
        let mut spared = vec![1, me];
        if let Some(peer) = peer {
            spared.push(peer);
            spared.extend(ancestors(&by_pid, peer));
        }
        procs
            .iter()
            .map(|p| p.pid)
            .filter(|pid| !spared.contains(pid))
            .collect()
    } else {
        procs
            .iter()
            .filter(|p| {
                p.pid != me
                    && (p.pid == child
                        || p.pgrp == child
                        || ancestors(&by_pid, p.pid).contains(&child))
            })
            .map(|p| p.pid)
            .collect()
    };
    out.sort_unstable();
    out
}

/// SIGKILLs `pids` (and the child's group), then waits until they are gone.
pub fn kill_and_wait(pids: &[i32], group: Option<i32>, deadline: Duration) -> Vec<i32> {
    if let Some(g) = group {
        // SAFETY: kill(2) with a negative pid signals the group.
        unsafe { libc::kill(-g, libc::SIGKILL) };
    }
    for &pid in pids {
        // SAFETY: kill(2) takes any pid.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let start = Instant::now();
    let mut left: Vec<i32> = pids.to_vec();
    while !left.is_empty() && start.elapsed() < deadline {
        left.retain(|pid| {
            fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|t| parse_stat(&t))
                .is_some_and(|st| st.state != 'Z' && st.state != 'X')
        });
        if !left.is_empty() {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    left
}

/// Waits until `pid` has left `/proc` (exited and reaped), up to `deadline`.
pub fn wait_gone(pid: i32, deadline: Duration) -> bool {
    let start = Instant::now();
    while Path::new(&format!("/proc/{pid}")).exists() {
        if start.elapsed() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    true
}

/// How a fault settles the pending writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// Power loss: drop everything.
    Drop,
    /// Torn power loss: a seeded prefix of each file's writes.
    Torn(u64),
    /// Process crash: write everything through.
    Keep,
}

fn write_all(file: &std::fs::File, writes: &[Write], path: &str) -> Result<(), DiskfsError> {
    for w in writes {
        file.write_all_at(&w.data, w.offset)
            .map_err(|e| DiskfsError::io("writing through", path, e))?;
    }
    Ok(())
}

/// Settles the pending files and fills the report's pending figures.
pub(crate) fn settle(
    mut taken: Vec<TakenFile>,
    how: Settle,
    report: &mut Report,
) -> Result<(), DiskfsError> {
    taken.sort_by(|a, b| a.path.cmp(&b.path));
    let mut rng = match how {
        Settle::Torn(seed) => Some(Rng::new(seed)),
        _ => None,
    };
    let mut to_write: Vec<(u64, usize, Vec<Write>)> = Vec::new();
    for (i, t) in taken.iter_mut().enumerate() {
        let writes = t.pending.log.take();
        let pending: u64 = writes.iter().map(|w| w.data.len() as u64).sum();
        let n_writes = writes.len() as u64;
        let (kept, writes_kept) = match (how, rng.as_mut()) {
            (Settle::Drop, _) => (Vec::new(), 0),
            (Settle::Keep, _) => {
                let n = writes.len() as u64;
                (writes, n)
            }
            (Settle::Torn(_), Some(rng)) => {
                let cut = torn_cut(&writes, rng);
                let kept = kept_by(&writes, cut);
                let n = kept.len() as u64;
                (kept, n)
            }
            (Settle::Torn(_), None) => (Vec::new(), 0),
        };
        let kept_bytes: u64 = kept.iter().map(|w| w.data.len() as u64).sum();
        report.files.push(FileReport {
            path: t.path.clone(),
            pending_bytes: pending,
            kept_bytes,
            dropped_bytes: pending - kept_bytes,
            writes: n_writes,
            writes_kept,
        });
        report.pending_files += 1;
        report.pending_bytes += pending;
        report.kept_bytes += kept_bytes;
        report.dropped_bytes += pending - kept_bytes;
        to_write.push((t.pending.last_seq, i, kept));
    }
    // Written in the order of each file's last write, so mtimes keep it.
    to_write.sort_by_key(|(seq, _, _)| *seq);
    for (_, i, kept) in &to_write {
        write_all(&taken[*i].pending.file, kept, &taken[*i].path)?;
    }
    Ok(())
}

/// Regular files under `root`, by relative path, with their sizes and mtimes.
pub fn walk(root: &Path) -> Result<Vec<(String, u64, i128)>, DiskfsError> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let rd = fs::read_dir(&dir).map_err(|e| DiskfsError::io("reading directory", &dir, e))?;
        for e in rd {
            let e = e.map_err(|e| DiskfsError::io("reading directory", &dir, e))?;
            let p = e.path();
            let meta = fs::symlink_metadata(&p).map_err(|e| DiskfsError::io("stat", &p, e))?;
            if meta.is_dir() {
                stack.push(p);
            } else if meta.is_file() {
                let rel = p
                    .strip_prefix(root)
                    .map(|r| r.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let mtime = meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128;
                out.push((rel, meta.len(), mtime));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Flips `n` distinct bits in the non-empty files matching `globs`.
pub fn bitflip(
    root: &Path,
    globs: &[String],
    n: u64,
    seed: u64,
) -> Result<Vec<Change>, DiskfsError> {
    let files: Vec<(String, u64)> = walk(root)?
        .into_iter()
        .filter(|(p, size, _)| *size > 0 && glob::matches_any(globs, p))
        .map(|(p, s, _)| (p, s))
        .collect();
    let total: u64 = files.iter().map(|(_, s)| s).sum();
    let n = n.min(total.saturating_mul(8));
    let mut rng = Rng::new(seed);
    let mut chosen: Vec<(usize, u64, u8)> = Vec::new();
    while (chosen.len() as u64) < n {
        // A file by weight of its size, then a byte in it, then a bit.
        let mut at = rng.below(total);
        let mut fi = 0;
        while at >= files[fi].1 {
            at -= files[fi].1;
            fi += 1;
        }
        let bit = rng.below(8) as u8;
        if !chosen.contains(&(fi, at, bit)) {
            chosen.push((fi, at, bit));
        }
    }
    let mut changes = Vec::new();
    for (fi, offset, bit) in chosen {
        let path = &files[fi].0;
        let full = root.join(path);
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&full)
            .map_err(|e| DiskfsError::io("opening for a bit flip", &full, e))?;
        let mut b = [0u8; 1];
        f.read_exact_at(&mut b, offset)
            .map_err(|e| DiskfsError::io("reading for a bit flip", &full, e))?;
        b[0] ^= 1 << bit;
        f.write_all_at(&b, offset)
            .map_err(|e| DiskfsError::io("flipping a bit in", &full, e))?;
        changes.push(Change::Bitflip {
            path: path.clone(),
            offset,
            bit,
        });
    }
    Ok(changes)
}

/// Cuts the newest non-empty file matching `globs` to a length in `[0, size)`.
pub fn truncate_newest(
    root: &Path,
    globs: &[String],
    seed: u64,
) -> Result<Vec<Change>, DiskfsError> {
    let newest = walk(root)?
        .into_iter()
        .filter(|(p, size, _)| *size > 0 && glob::matches_any(globs, p))
        .max_by(|a, b| a.2.cmp(&b.2).then_with(|| a.0.cmp(&b.0)));
    let Some((path, size, _)) = newest else {
        return Ok(Vec::new());
    };
    let to_size = Rng::new(seed).below(size);
    let full = root.join(&path);
    OpenOptions::new()
        .write(true)
        .open(&full)
        .and_then(|f| f.set_len(to_size))
        .map_err(|e| DiskfsError::io("truncating", &full, e))?;
    Ok(vec![Change::Truncate {
        path,
        from_size: size,
        to_size,
    }])
}

/// Removes everything inside `root` (not `root` itself).
pub fn wipe(root: &Path) -> Result<Vec<Change>, DiskfsError> {
    let changes = walk(root)?
        .into_iter()
        .map(|(path, size, _)| Change::Removed {
            path,
            removed_bytes: size,
        })
        .collect();
    let rd = fs::read_dir(root).map_err(|e| DiskfsError::io("reading directory", root, e))?;
    for e in rd {
        let e = e.map_err(|e| DiskfsError::io("reading directory", root, e))?;
        let p = e.path();
        let is_dir = fs::symlink_metadata(&p)
            .map(|m| m.is_dir())
            .unwrap_or(false);
        let res = if is_dir {
            fs::remove_dir_all(&p)
        } else {
            fs::remove_file(&p)
        };
        res.map_err(|e| DiskfsError::io("removing", &p, e))?;
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse_with_odd_names() {
        let st = parse_stat("42 (my (odd) name) S 7 42 42 0 -1").unwrap_or(ProcStat {
            pid: 0,
            state: '?',
            ppid: 0,
            pgrp: 0,
        });
        assert_eq!(
            st,
            ProcStat {
                pid: 42,
                state: 'S',
                ppid: 7,
                pgrp: 42
            }
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!(
            "gauntlet-diskfs-unit-{name}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).expect("scratch dir");
        d
    }

    fn taken(dir: &Path, rel: &str, writes: &[(u64, &[u8])], seq: u64) -> TakenFile {
        let file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(dir.join(rel))
            .expect("scratch file");
        let mut log = crate::log::PendingLog::default();
        for (o, d) in writes {
            log.push(*o, d);
        }
        TakenFile {
            path: rel.into(),
            pending: crate::fs::Pending {
                log,
                file,
                last_seq: seq,
                last_write: std::time::SystemTime::now(),
            },
        }
    }

    fn empty_report() -> Report {
        Report::new("t", Vec::new(), None)
    }

    #[test]
    fn settle_counts_what_it_keeps_and_drops() {
        let dir = scratch("settle");
        let files = |dir: &Path| {
            vec![
                taken(dir, "b", &[(0, b"hello"), (5, b" world")], 2),
                taken(dir, "a", &[(0, b"xx"), (10, b"yy"), (20, b"zz")], 1),
            ]
        };
        let mut keep = empty_report();
        settle(files(&dir), Settle::Keep, &mut keep).expect("keep");
        assert_eq!(
            (
                keep.pending_files,
                keep.pending_bytes,
                keep.kept_bytes,
                keep.dropped_bytes
            ),
            (2, 17, 17, 0)
        );
        assert_eq!(keep.files[0].path, "a", "by path");
        assert_eq!((keep.files[0].writes, keep.files[0].writes_kept), (3, 3));
        assert_eq!(
            (keep.files[1].writes, keep.files[1].writes_kept),
            (1, 1),
            "appends merge"
        );
        assert_eq!(fs::read(dir.join("b")).expect("b"), b"hello world");
        assert_eq!(fs::read(dir.join("a")).expect("a").len(), 22);

        let mut drop = empty_report();
        settle(files(&dir), Settle::Drop, &mut drop).expect("drop");
        assert_eq!((drop.kept_bytes, drop.dropped_bytes), (0, 17));
        assert_eq!(drop.files[1].dropped_bytes, 11);
        assert_eq!(fs::read(dir.join("b")).expect("b"), b"");

        let mut torn = empty_report();
        settle(files(&dir), Settle::Torn(5), &mut torn).expect("torn");
        assert_eq!(torn.kept_bytes + torn.dropped_bytes, 17);
        for f in &torn.files {
            assert!(f.kept_bytes < f.pending_bytes, "{f:?}");
            assert_eq!(f.kept_bytes + f.dropped_bytes, f.pending_bytes);
        }
        let b = fs::read(dir.join("b")).expect("b");
        assert_eq!(b.len() as u64, torn.files[1].kept_bytes);
        assert!(b"hello world".starts_with(&b));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn bitflip_truncate_and_wipe_on_a_directory() {
        let dir = scratch("corrupt");
        fs::create_dir_all(dir.join("d/e")).expect("mkdir");
        fs::write(dir.join("d/e/1.blk"), [0u8; 64]).expect("write");
        fs::write(dir.join("d/0.blk"), [0u8; 0]).expect("write");
        fs::write(dir.join("x.txt"), [0u8; 64]).expect("write");
        let flips = bitflip(&dir, &["**/*.blk".into()], 10, 9).expect("bitflip");
        assert_eq!(flips.len(), 10);
        let after = fs::read(dir.join("d/e/1.blk")).expect("read");
        assert_eq!(after.iter().map(|b| b.count_ones()).sum::<u32>(), 10);
        assert_eq!(fs::read(dir.join("x.txt")).expect("read"), [0u8; 64]);
        // More bits than the files hold: every bit once.
        fs::write(dir.join("d/e/1.blk"), [0u8; 1]).expect("write");
        assert_eq!(
            bitflip(&dir, &["**/*.blk".into()], 100, 1)
                .expect("bitflip")
                .len(),
            8
        );
        assert!(bitflip(&dir, &["none".into()], 3, 1)
            .expect("bitflip")
            .is_empty());
        let cut = truncate_newest(&dir, &["**".into()], 4).expect("cut");
        assert_eq!(cut.len(), 1);
        let removed = wipe(&dir).expect("wipe");
        assert_eq!(removed.len(), 3);
        assert_eq!(fs::read_dir(&dir).expect("read_dir").count(), 0);
        let _ = fs::remove_dir_all(&dir);
    }

    fn p(pid: i32, ppid: i32, pgrp: i32) -> ProcStat {
        ProcStat {
            pid,
            state: 'S',
            ppid,
            pgrp,
        }
    }

    #[test]
    fn victims_in_a_container_spare_init_me_and_the_asking_client() {
        // 1 init, 2 me, 3 broker, 4 broker's child, 10 sh -c (parent 0), 11 client.
        let procs = [
            p(1, 0, 1),
            p(2, 1, 1),
            p(3, 2, 3),
            p(4, 3, 3),
            p(10, 0, 10),
            p(11, 10, 10),
        ];
        assert_eq!(victims(&procs, 2, true, 3, Some(11)), vec![3, 4]);
        assert_eq!(victims(&procs, 2, true, 3, None), vec![3, 4, 10, 11]);
    }

    #[test]
    fn victims_without_container_are_the_childs_group_and_descendants() {
        // 50 me, 51 child (group 51), 52 its child in the group, 53 a setsid grandchild, 60 unrelated.
        let procs = [
            p(50, 1, 50),
            p(51, 50, 51),
            p(52, 51, 51),
            p(53, 52, 53),
            p(60, 1, 60),
        ];
        assert_eq!(victims(&procs, 50, false, 51, None), vec![51, 52, 53]);
    }
}
