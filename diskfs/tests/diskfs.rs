//! The filesystem on its own, no broker: each test starts the real binary with
//! `run` over temporary directories, drives files through the mount, calls a
//! fault and inspects the backing directory (and a second mount).

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use gauntlet_diskfs::{Change, Report, Status};

const BIN: &str = env!("CARGO_BIN_EXE_gauntlet-diskfs");
const DEADLINE: Duration = Duration::from_secs(20);

/// Whether FUSE can be mounted here; under CI=true it must.
fn fuse_or_skip() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let why = if !Path::new("/dev/fuse").exists() {
        Some("no /dev/fuse")
    } else if !root {
        Some("not root (the mount needs CAP_SYS_ADMIN)")
    } else {
        None
    };
    match why {
        None => true,
        Some(why) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "FUSE is required under CI=true: {why}"
            );
            println!("SKIPPED: {why}");
            false
        }
    }
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// Temporary directories, removed on drop.
struct Dirs {
    root: PathBuf,
    backing: PathBuf,
    mount: PathBuf,
    socket: PathBuf,
}

impl Dirs {
    fn new(name: &str) -> Dirs {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let root =
            std::env::temp_dir().join(format!("gauntlet-diskfs-{name}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).expect("temp dir");
        Dirs {
            backing: root.join("backing"),
            mount: root.join("mount"),
            socket: root.join("ctl.sock"),
            root,
        }
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.mount).output();
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// A running daemon; unmounts and kills it (by pid) on drop.
struct Daemon<'a> {
    dirs: &'a Dirs,
    child: Option<Child>,
    log: PathBuf,
}

impl<'a> Daemon<'a> {
    fn start(dirs: &'a Dirs, cmd: &[&str]) -> Daemon<'a> {
        let log = dirs.root.join(format!(
            "daemon-{}.log",
            COUNTER.fetch_add(1, Ordering::SeqCst)
        ));
        let err = File::create(&log).expect("log file");
        let child = Command::new(BIN)
            .arg("run")
            .arg("--backing")
            .arg(&dirs.backing)
            .arg("--mount")
            .arg(&dirs.mount)
            .arg("--socket")
            .arg(&dirs.socket)
            .arg("--")
            .args(cmd)
            .stdin(Stdio::null())
            .stderr(err)
            .spawn()
            .expect("start gauntlet-diskfs run");
        let mut d = Daemon {
            dirs,
            child: Some(child),
            log,
        };
        let start = Instant::now();
        loop {
            let text = fs::read_to_string(&d.log).unwrap_or_default();
            if text.contains("gauntlet-diskfs: mounted") && d.dirs.socket.exists() {
                println!("mounted after {:?}", start.elapsed());
                break;
            }
            if let Some(Ok(Some(status))) = d.child.as_mut().map(|c| c.try_wait()) {
                if text.contains("gauntlet-diskfs: mounted") {
                    println!("mounted, and already exited {status}");
                    break;
                }
                panic!("daemon exited {status} before mounting: {text}");
            }
            assert!(
                start.elapsed() < DEADLINE,
                "not mounted after {:?}: {text}",
                start.elapsed()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        d
    }

    fn m(&self, rel: &str) -> PathBuf {
        self.dirs.mount.join(rel)
    }

    fn b(&self, rel: &str) -> PathBuf {
        self.dirs.backing.join(rel)
    }

    fn client(&self, args: &[&str]) -> std::process::Output {
        Command::new(BIN)
            .args(args)
            .arg("--socket")
            .arg(&self.dirs.socket)
            .output()
            .expect("run the client")
    }

    fn status(&self) -> Status {
        let out = self.client(&["status"]);
        assert!(
            out.status.success(),
            "status: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("Status JSON")
    }

    /// Runs a fault; waits for the daemon to exit 137 and the mount to end.
    fn fault(&mut self, args: &[&str]) -> Report {
        let out = self.client(args);
        assert!(
            out.status.success(),
            "{args:?}: {} {}",
            String::from_utf8_lossy(&out.stderr),
            fs::read_to_string(&self.log).unwrap_or_default()
        );
        let report: Report = serde_json::from_slice(&out.stdout).expect("Report JSON");
        assert_eq!(self.wait(), Some(137), "the daemon's exit after {args:?}");
        report
    }

    /// Waits for the daemon's exit code.
    fn wait(&mut self) -> Option<i32> {
        let start = Instant::now();
        let child = self.child.as_mut()?;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                println!("daemon exited {status} after {:?}", start.elapsed());
                self.child = None;
                return status.code();
            }
            assert!(
                start.elapsed() < DEADLINE,
                "daemon still running after {:?}",
                start.elapsed()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Daemon<'_> {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(&self.dirs.mount)
            .output();
        if let Some(mut c) = self.child.take() {
            // The daemon's child runs in its own process group: end it too.
            let daemon = c.id() as i32;
            for p in gauntlet_diskfs::faults::processes() {
                if p.ppid == daemon && p.pgrp == p.pid {
                    // SAFETY: signalling the group of a child of our daemon.
                    unsafe { libc::kill(-p.pgrp, libc::SIGKILL) };
                }
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn read(p: &Path) -> Vec<u8> {
    fs::read(p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
}

fn file_report<'r>(r: &'r Report, path: &str) -> &'r gauntlet_diskfs::FileReport {
    r.files
        .iter()
        .find(|f| f.path == path)
        .unwrap_or_else(|| panic!("no {path} in {r:?}"))
}

#[test]
fn written_not_synced_is_gone_and_fsynced_stays() {
    if !fuse_or_skip() {
        return;
    }
    let dirs = Dirs::new("basic");
    let mut d = Daemon::start(&dirs, &["sleep", "1000"]);
    fs::write(d.m("lost"), b"never synced").expect("write lost");
    let mut f = File::create(d.m("kept")).expect("create kept");
    f.write_all(b"durable").expect("write");
    f.sync_all().expect("fsync");
    f.write_all(b"+more").expect("write more");
    drop(f);
    assert_eq!(read(&d.m("kept")), b"durable+more");
    let st = d.status();
    assert_eq!((st.pending_files, st.pending_bytes), (2, 12 + 5));
    let r = d.fault(&["power-loss"]);
    assert_eq!(r.fault, "power-loss");
    assert_eq!(r.killed.len(), 1, "{r:?}");
    assert_eq!(
        (
            r.pending_files,
            r.pending_bytes,
            r.dropped_bytes,
            r.kept_bytes
        ),
        (2, 17, 17, 0)
    );
    assert_eq!(file_report(&r, "lost").dropped_bytes, 12);
    assert_eq!(r.seed, None);
    // Created and never synced: it survives, empty.
    assert_eq!(read(&d.b("lost")), b"");
    assert_eq!(read(&d.b("kept")), b"durable");

    // A second mount serves what survived.
    let d2 = Daemon::start(&dirs, &["sleep", "1000"]);
    assert_eq!(read(&d2.m("kept")), b"durable");
    assert_eq!(fs::metadata(d2.m("lost")).expect("stat").len(), 0);
}

#[test]
fn fdatasync_and_o_dsync_make_data_durable() {
    if !fuse_or_skip() {
        return;
    }
    let dirs = Dirs::new("dsync");
    let mut d = Daemon::start(&dirs, &["sleep", "1000"]);
    let mut f = File::create(d.m("datasync")).expect("create");
    f.write_all(b"by fdatasync").expect("write");
    f.sync_data().expect("fdatasync");
    let mut g = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .custom_flags(libc::O_DSYNC)
        .open(d.m("dsync"))
        .expect("open O_DSYNC");
    g.write_all(b"by O_DSYNC").expect("write");
    let mut s = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .custom_flags(libc::O_SYNC)
        .open(d.m("sync"))
        .expect("open O_SYNC");
    s.write_all(b"by O_SYNC").expect("write");
    assert_eq!(d.status().pending_bytes, 0);
    drop((f, g, s));
    let r = d.fault(&["power-loss"]);
    assert_eq!(r.pending_bytes, 0, "{r:?}");
    assert_eq!(read(&d.b("datasync")), b"by fdatasync");
    assert_eq!(read(&d.b("dsync")), b"by O_DSYNC");
    assert_eq!(read(&d.b("sync")), b"by O_SYNC");
}

#[test]
fn overwrite_in_place_comes_back_as_the_old_bytes() {
    if !fuse_or_skip() {
        return;
    }
    let dirs = Dirs::new("overwrite");
    let mut d = Daemon::start(&dirs, &["sleep", "1000"]);
    let f = File::create(d.m("f")).expect("create");
    f.write_all_at(b"AAAAAAAA", 0).expect("write");
    f.sync_all().expect("fsync");
    f.write_all_at(b"BB", 2).expect("overwrite");
    drop(f);
    // Read-your-writes through the mount; the disk still has the old bytes.
    assert_eq!(read(&d.m("f")), b"AABBAAAA");
    assert_eq!(read(&d.b("f")), b"AAAAAAAA");
    d.fault(&["power-loss"]);
    assert_eq!(read(&d.b("f")), b"AAAAAAAA");
}

#[test]
fn reads_serve_pending_writes_and_the_size_includes_them() {
    if !fuse_or_skip() {
        return;
    }
    let dirs = Dirs::new("ryw");
    let mut d = Daemon::start(&dirs, &["sleep", "1000"]);
    let f = File::create(d.m("sparse")).expect("create");
    f.write_all_at(b"x", 100).expect("write");
    assert_eq!(f.metadata().expect("fstat").len(), 101);
    assert_eq!(fs::metadata(d.m("sparse")).expect("stat").len(), 101);
    assert_eq!(fs::metadata(d.b("sparse")).expect("stat").len(), 0);
    let mut buf = Vec::new();
    File::open(d.m("sparse"))
        .expect("open")
        .read_to_end(&mut buf)
        .expect("read");
    let mut want = vec![0u8; 100];
    want.push(b'x');
    assert_eq!(buf, want);
    drop(f);
    // O_APPEND: the kernel puts each write at the size the mount serves.
    for part in [&b"one"[..], b"two"] {
        let mut a = OpenOptions::new()
            .create(true)
            .append(true)
            .open(d.m("appended"))
            .expect("open O_APPEND");
        a.write_all(part).expect("append");
    }
    assert_eq!(read(&d.m("appended")), b"onetwo");
    let r = d.fault(&["crash"]);
    assert_eq!(r.kept_bytes, 1 + 6);
    assert_eq!(read(&d.b("sparse")), want);
    assert_eq!(read(&d.b("appended")), b"onetwo");
}

#[test]
fn a_new_backing_root_takes_the_mount_points_owner_and_mode() {
    if !fuse_or_skip() {
        return;
    }
    let dirs = Dirs::new("rootmode");
    fs::create_dir(&dirs.mount).expect("mkdir");
    fs::set_permissions(&dirs.mount, fs::Permissions::from_mode(0o700)).expect("chmod");
    std::os::unix::fs::chown(&dirs.mount, Some(100), Some(102)).expect("chown");
    let d = Daemon::start(&dirs, &["sleep", "1000"]);
    let b = fs::metadata(&dirs.backing).expect("stat backing");
    assert_eq!((b.uid(), b.gid(), b.mode() & 0o7777), (100, 102, 0o700));
    // The mount's root is the backing root.
    let m = fs::metadata(&dirs.mount).expect("stat mount");
    assert_eq!((m.uid(), m.gid(), m.mode() & 0o7777), (100, 102, 0o700));
    drop(d);
    let fresh = Dirs::new("rootmode-fresh");
    let _d = Daemon::start(&fresh, &["sleep", "1000"]);
    let b = fs::metadata(&fresh.backing).expect("stat backing");
    assert_eq!((b.uid(), b.gid(), b.mode() & 0o7777), (0, 0, 0o755));
}

#[test]
fn rename_without_a_directory_fsync_survives_with_only_its_synced_data() {
    if !fuse_or_skip() {
        return;
    }
    let dirs = Dirs::new("rename");
    let mut d = Daemon::start(&dirs, &["sleep", "1000"]);
    fs::create_dir(d.m("dir")).expect("mkdir");
    let mut f = File::create(d.m("dir/synced.tmp")).expect("create");
    f.write_all(b"synced").expect("write");
    f.sync_all().expect("fsync");
    drop(f);
    fs::rename(d.m("dir/synced.tmp"), d.m("dir/synced")).expect("rename");
    let mut g = File::create(d.m("dir/unsynced.tmp")).expect("create");
    g.write_all(b"unsynced").expect("write");
    drop(g);
    fs::rename(d.m("dir/unsynced.tmp"), d.m("dir/unsynced")).expect("rename");
    assert_eq!(read(&d.m("dir/unsynced")), b"unsynced");
    let r = d.fault(&["power-loss"]);
    // The report names the file by its new name.
    assert_eq!(file_report(&r, "dir/unsynced").dropped_bytes, 8);
    assert_eq!(read(&d.b("dir/synced")), b"synced");
    assert_eq!(read(&d.b("dir/unsynced")), b"");
    assert!(!d.b("dir/synced.tmp").exists());
    assert!(!d.b("dir/unsynced.tmp").exists());
}

#[test]
fn truncate_is_durable_at_once_and_cuts_pending_writes() {
    if !fuse_or_skip() {
        return;
    }
    let dirs = Dirs::new("truncate");
    let mut d = Daemon::start(&dirs, &["sleep", "1000"]);
    let f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(d.m("t"))
        .expect("create");
    f.write_all_at(b"0123456789", 0).expect("write");
    f.sync_all().expect("fsync");
    f.write_all_at(b"abcdef", 10).expect("write pending");
    f.set_len(12).expect("ftruncate");
    assert_eq!(d.status().pending_bytes, 2);
    assert_eq!(read(&d.m("t")), b"0123456789ab");
    f.set_len(4).expect("ftruncate");
    assert_eq!(d.status().pending_bytes, 0);
    // Truncation reached the disk at once, without an fsync.
    assert_eq!(read(&d.b("t")), b"0123");
    f.write_all_at(b"zz", 4).expect("write pending");
    drop(f);
    d.fault(&["power-loss"]);
    assert_eq!(read(&d.b("t")), b"0123");
}

/// 16 appends of 4 KiB (merged into one pending write) to `log`, and three
/// writes with gaps to `gaps`; then a torn power loss with `seed`.
fn torn_run(name: &str, seed: &str) -> (Report, Vec<u8>, Vec<u8>, Vec<u8>) {
    let dirs = Dirs::new(name);
    let mut d = Daemon::start(&dirs, &["sleep", "1000"]);
    let written: Vec<u8> = (0..16 * 4096u32).map(|i| (i % 251) as u8).collect();
    let mut f = File::create(d.m("log")).expect("create");
    for chunk in written.chunks(4096) {
        f.write_all(chunk).expect("append");
    }
    let g = File::create(d.m("gaps")).expect("create");
    for k in 0..3u64 {
        g.write_all_at(&[b'a' + k as u8; 1000], k * 2000)
            .expect("write");
    }
    drop((f, g));
    let r = d.fault(&["power-loss", "--torn", "--seed", seed]);
    let log = read(&d.b("log"));
    let gaps = read(&d.b("gaps"));
    (r, written, log, gaps)
}

#[test]
fn torn_power_loss_keeps_a_seeded_prefix_of_each_files_writes() {
    if !fuse_or_skip() {
        return;
    }
    let (r, written, log, gaps) = torn_run("torn", "7");
    assert_eq!(r.fault, "power-loss:torn");
    assert_eq!(r.seed, Some(7));
    let lf = file_report(&r, "log");
    assert_eq!((lf.writes, lf.pending_bytes), (1, written.len() as u64));
    assert!(lf.kept_bytes < lf.pending_bytes);
    assert_eq!(log.len() as u64, lf.kept_bytes);
    assert!(
        written.starts_with(&log),
        "the kept bytes are a prefix of the written ones"
    );
    let gf = file_report(&r, "gaps");
    assert_eq!((gf.writes, gf.pending_bytes), (3, 3000));
    // The writes kept: the first whole ones, then a prefix of the next.
    let whole = (gf.kept_bytes / 1000) as usize;
    let partial = (gf.kept_bytes % 1000) as usize;
    let mut want = Vec::new();
    for k in 0..whole {
        want.resize(k * 2000, 0);
        want.extend(std::iter::repeat_n(b'a' + k as u8, 1000));
    }
    if partial > 0 {
        want.resize(whole * 2000, 0);
        want.extend(std::iter::repeat_n(b'a' + whole as u8, partial));
    }
    assert_eq!(
        gaps, want,
        "gaps file after keeping {} bytes",
        gf.kept_bytes
    );
    assert_eq!(gf.writes_kept, (whole + usize::from(partial > 0)) as u64);
    assert_eq!(r.kept_bytes, lf.kept_bytes + gf.kept_bytes);
    assert_eq!(r.dropped_bytes + r.kept_bytes, r.pending_bytes);
    // The same seed, the same cut.
    let (again, _, log2, gaps2) = torn_run("torn-again", "7");
    assert_eq!((again.files, log2, gaps2), (r.files, log, gaps));
}

#[test]
fn crash_keeps_everything() {
    if !fuse_or_skip() {
        return;
    }
    let dirs = Dirs::new("crash");
    let mut d = Daemon::start(&dirs, &["sleep", "1000"]);
    fs::create_dir_all(d.m("a/b")).expect("mkdir");
    fs::write(d.m("a/b/f"), b"kept by a crash").expect("write");
    fs::write(d.m("g"), b"too").expect("write");
    let mut names: Vec<String> = fs::read_dir(d.m(""))
        .expect("readdir through the mount")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a", "g"]);
    let r = d.fault(&["crash"]);
    assert_eq!(r.fault, "crash");
    assert_eq!((r.pending_files, r.kept_bytes, r.dropped_bytes), (2, 18, 0));
    assert_eq!(file_report(&r, "a/b/f").writes_kept, 1);
    assert_eq!(read(&d.b("a/b/f")), b"kept by a crash");
    assert_eq!(read(&d.b("g")), b"too");
}

fn bits_differing(a: &[u8], b: &[u8]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

#[test]
fn bitflip_changes_exactly_n_bits_in_matching_files() {
    if !fuse_or_skip() {
        return;
    }
    let dirs = Dirs::new("bitflip");
    let mut d = Daemon::start(&dirs, &["sleep", "1000"]);
    fs::create_dir(d.m("data")).expect("mkdir");
    let blk1: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
    let blk2 = vec![0u8; 100];
    fs::write(d.m("data/1.blk"), &blk1).expect("write");
    fs::write(d.m("data/2.blk"), &blk2).expect("write");
    fs::write(d.m("data/empty.blk"), b"").expect("write");
    fs::write(d.m("other.txt"), b"untouched").expect("write");
    let r = d.fault(&[
        "corrupt",
        "--bitflip",
        "6",
        "--files",
        "data/*.blk,nomatch/**",
        "--seed",
        "3",
    ]);
    assert_eq!(r.fault, "corrupt:bitflip");
    assert_eq!(r.seed, Some(3));
    assert_eq!(r.kept_bytes, 4096 + 100 + 9, "written through first");
    assert_eq!(r.changes.len(), 6, "{r:?}");
    let after1 = read(&d.b("data/1.blk"));
    let after2 = read(&d.b("data/2.blk"));
    assert_eq!(
        bits_differing(&blk1, &after1) + bits_differing(&blk2, &after2),
        6
    );
    assert_eq!(read(&d.b("other.txt")), b"untouched");
    for c in &r.changes {
        let Change::Bitflip { path, offset, bit } = c else {
            panic!("not a bit flip: {c:?}");
        };
        let (before, after) = match path.as_str() {
            "data/1.blk" => (&blk1, &after1),
            "data/2.blk" => (&blk2, &after2),
            p => panic!("flipped in {p}"),
        };
        let o = *offset as usize;
        assert_ne!((before[o] ^ after[o]) & (1 << bit), 0, "{c:?}");
    }
}

#[test]
fn corrupt_truncate_cuts_the_newest_matching_file() {
    if !fuse_or_skip() {
        return;
    }
    let dirs = Dirs::new("cut");
    let mut d = Daemon::start(&dirs, &["sleep", "1000"]);
    for name in ["old.log", "new.log", "newest.other"] {
        let mut f = File::create(d.m(name)).expect("create");
        f.write_all(&[b'x'; 1000]).expect("write");
        f.sync_all().expect("fsync");
    }
    let r = d.fault(&["corrupt", "--truncate", "--files", "*.log", "--seed", "11"]);
    assert_eq!(r.fault, "corrupt:truncate");
    let [Change::Truncate {
        path,
        from_size,
        to_size,
    }] = r.changes.as_slice()
    else {
        panic!("one cut expected: {r:?}");
    };
    assert_eq!((path.as_str(), *from_size), ("new.log", 1000));
    assert!(*to_size < 1000);
    assert_eq!(fs::metadata(d.b("new.log")).expect("stat").len(), *to_size);
    assert_eq!(fs::metadata(d.b("old.log")).expect("stat").len(), 1000);
    assert_eq!(fs::metadata(d.b("newest.other")).expect("stat").len(), 1000);
}

#[test]
fn corrupt_with_no_matching_file_changes_nothing() {
    if !fuse_or_skip() {
        return;
    }
    let dirs = Dirs::new("nomatch");
    let mut d = Daemon::start(&dirs, &["sleep", "1000"]);
    fs::write(d.m("a"), b"a").expect("write");
    let r = d.fault(&["corrupt", "--truncate", "--files", "*.none"]);
    assert!(r.changes.is_empty());
    assert!(r.seed.is_some(), "a drawn seed is reported");
    assert_eq!(read(&d.b("a")), b"a");
}

#[test]
fn wipe_empties_the_backing_root_but_keeps_it() {
    if !fuse_or_skip() {
        return;
    }
    let dirs = Dirs::new("wipe");
    fs::create_dir_all(&dirs.backing).expect("mkdir");
    fs::set_permissions(&dirs.backing, fs::Permissions::from_mode(0o750)).expect("chmod");
    std::os::unix::fs::chown(&dirs.backing, Some(4321), Some(4321)).expect("chown");
    let mut d = Daemon::start(&dirs, &["sleep", "1000"]);
    fs::create_dir_all(d.m("x/y")).expect("mkdir");
    fs::write(d.m("x/y/f"), b"12345").expect("write");
    fs::write(d.m("g"), b"1").expect("write");
    let r = d.fault(&["wipe"]);
    assert_eq!(r.fault, "wipe");
    assert_eq!(r.dropped_bytes, 6);
    let mut removed: Vec<(String, u64)> = r
        .changes
        .iter()
        .map(|c| match c {
            Change::Removed {
                path,
                removed_bytes,
            } => (path.clone(), *removed_bytes),
            other => panic!("not a removal: {other:?}"),
        })
        .collect();
    removed.sort();
    // Pending writes were dropped before the wipe: both files were empty on disk.
    assert_eq!(removed, vec![("g".into(), 0), ("x/y/f".into(), 0)]);
    assert_eq!(fs::read_dir(&dirs.backing).expect("read_dir").count(), 0);
    let meta = fs::metadata(&dirs.backing).expect("stat");
    assert_eq!(
        (meta.mode() & 0o7777, meta.uid(), meta.gid()),
        (0o750, 4321, 4321)
    );
}

#[test]
fn files_belong_to_the_user_who_creates_them() {
    if !fuse_or_skip() {
        return;
    }
    let dirs = Dirs::new("owner");
    let d = Daemon::start(&dirs, &["sleep", "1000"]);
    fs::create_dir(d.m("shared")).expect("mkdir");
    fs::set_permissions(d.m("shared"), fs::Permissions::from_mode(0o777)).expect("chmod");
    let script = format!(
        "umask 077 && echo hi > {0}/f && mkdir {0}/d && test -O {0}/f",
        d.m("shared").display()
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .uid(4242)
        .gid(4343)
        .output()
        .expect("run as 4242");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let f = fs::metadata(d.b("shared/f")).expect("stat f");
    assert_eq!((f.uid(), f.gid(), f.mode() & 0o777), (4242, 4343, 0o600));
    let dm = fs::metadata(d.b("shared/d")).expect("stat d");
    assert_eq!((dm.uid(), dm.gid(), dm.mode() & 0o777), (4242, 4343, 0o700));
    // The kernel checks permissions: another user cannot read the 0600 file.
    let denied = Command::new("cat")
        .arg(d.m("shared/f"))
        .uid(4444)
        .gid(4444)
        .output()
        .expect("run as 4444");
    assert!(!denied.status.success());
}

#[test]
fn a_graceful_exit_writes_everything_through_with_the_childs_code() {
    if !fuse_or_skip() {
        return;
    }
    let dirs = Dirs::new("exit");
    let script = format!("printf unsynced > {}/f; exit 3", dirs.mount.display());
    let mut d = Daemon::start(&dirs, &["sh", "-c", &script]);
    assert_eq!(d.wait(), Some(3));
    assert_eq!(read(&d.b("f")), b"unsynced");
    assert!(!dirs.socket.exists());
}

#[test]
fn sigterm_is_forwarded_and_ends_gracefully() {
    if !fuse_or_skip() {
        return;
    }
    let dirs = Dirs::new("term");
    let mut d = Daemon::start(&dirs, &["sleep", "1000"]);
    fs::write(d.m("f"), b"kept").expect("write");
    let pid = d.child.as_ref().map(|c| c.id() as i32).unwrap_or(0);
    // SAFETY: signalling the daemon this test started.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    assert_eq!(d.wait(), Some(128 + libc::SIGTERM));
    assert_eq!(read(&d.b("f")), b"kept");
}

#[test]
fn bad_arguments_are_refused_with_exit_2() {
    for args in [
        vec!["corrupt", "--files", "x"],
        vec!["corrupt", "--bitflip", "many", "--files", "x"],
        vec!["power-loss", "--seed", "3"],
        vec!["run", "--backing", "/tmp/x"],
        vec!["frobnicate"],
    ] {
        let out = Command::new(BIN).args(&args).output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?} says why");
    }
    let comm = fs::read_to_string("/proc/1/comm").unwrap_or_default();
    if comm.trim() != "docker-init" && comm.trim() != "tini" {
        let out = Command::new(BIN)
            .args([
                "run",
                "--backing",
                "/nonexistent/b",
                "--mount",
                "/nonexistent/m",
                "--container",
                "--",
                "true",
            ])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("--container refused"));
    }
    let out = Command::new(BIN)
        .args(["status", "--socket", "/nonexistent/sock"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_mount_point_that_is_not_a_directory_is_the_filesystems_own_failure() {
    if !fuse_or_skip() {
        return;
    }
    let dirs = Dirs::new("refused");
    // The mount point is a regular file (FUSE would mount over it: refused first).
    fs::write(&dirs.mount, b"not a directory").expect("write");
    let out = Command::new(BIN)
        .arg("run")
        .arg("--backing")
        .arg(&dirs.backing)
        .arg("--mount")
        .arg(&dirs.mount)
        .arg("--socket")
        .arg(&dirs.socket)
        .args(["--", "true"])
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(86), "{err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("gauntlet-diskfs: FAILED: ")),
        "{err}"
    );
}

#[test]
fn bench_prints_both_sides_and_the_ratio() {
    if !fuse_or_skip() {
        return;
    }
    let dirs = Dirs::new("bench");
    let out = Command::new(BIN)
        .arg("bench")
        .arg("--dir")
        .arg(&dirs.root)
        .args(["--mb", "1"])
        .output()
        .expect("bench");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in ["direct:", "mounted:", "fsyncs/s", "ratio (mounted/direct):"] {
        assert!(text.contains(want), "{want} missing in {text}");
    }
    let left: Vec<_> = fs::read_dir(&dirs.root)
        .expect("read_dir")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "bench leaves nothing behind: {left:?}");
}
