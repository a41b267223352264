//! `gauntlet-diskfs run`: mount, supervise the broker, take faults on the
//! control socket.

use std::ffi::OsString;
use std::fs;
use std::io::{BufRead, BufReader, Read as _, Write as _};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use fuser::{Config, MountOption, Session, SessionACL};

use crate::faults::{self, Settle};
use crate::fs::{lock, DiskFs, State};
use crate::report::{Reply, Report, Request, Status};
use crate::rng::clock_seed;
use crate::{DiskfsError, EXIT_FAILED, EXIT_FAULT, FAILED_PREFIX};

/// What `run` is given.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub backing: PathBuf,
    pub mount: PathBuf,
    pub socket: PathBuf,
    pub container: bool,
    pub cmd: Vec<OsString>,
}

/// The mount point a failure unmounts (set once mounted).
static MOUNTED: OnceLock<PathBuf> = OnceLock::new();

/// The supervised child's process group (0 until it runs).
static CHILD_GROUP: AtomicI32 = AtomicI32::new(0);

/// Prints the failure line, kills the child's group (it cannot go on without
/// its filesystem), unmounts if mounted, exits 86.
pub fn fail(reason: &str) -> ! {
    eprintln!("{FAILED_PREFIX}{reason}");
    let group = CHILD_GROUP.load(Ordering::SeqCst);
    if group > 0 {
        // SAFETY: kill(2) with a negative pid signals the group.
        unsafe { libc::kill(-group, libc::SIGKILL) };
    }
    if let Some(m) = MOUNTED.get() {
        let _ = unmount(m);
    }
    std::process::exit(EXIT_FAILED)
}

/// A panic anywhere in the daemon is its own failure.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let reason = format!("panic: {info}").replace('\n', " ");
        fail(&reason)
    }));
}

/// Ends the mount: a plain unmount, lazily (MNT_DETACH) when busy.
pub fn unmount(mount: &Path) -> Result<(), DiskfsError> {
    let c = std::ffi::CString::new(mount.as_os_str().as_encoded_bytes())
        .map_err(|_| DiskfsError::Usage(format!("mount point {} has a NUL", mount.display())))?;
    // SAFETY: a valid path.
    if unsafe { libc::umount2(c.as_ptr(), 0) } == 0 {
        return Ok(());
    }
    // SAFETY: a valid path.
    if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } == 0 {
        return Ok(());
    }
    Err(DiskfsError::io(
        "unmounting",
        mount,
        std::io::Error::last_os_error(),
    ))
}

/// A mounted filesystem: its state and the thread serving the kernel.
pub(crate) struct Mounted {
    pub(crate) state: Arc<Mutex<State>>,
    pub(crate) thread: JoinHandle<std::io::Result<()>>,
}

/// Mounts `mount` over `backing` (both must exist) and serves it on a thread.
pub(crate) fn mount(backing: &Path, mount: &Path) -> Result<Mounted, DiskfsError> {
    let backing = backing
        .canonicalize()
        .map_err(|e| DiskfsError::io("resolving backing directory", backing, e))?;
    let state = State::new(backing.clone()).map_err(|e| DiskfsError::Mount {
        mount: mount.to_path_buf(),
        backing: backing.clone(),
        source: std::io::Error::from_raw_os_error(e.code()),
    })?;
    let state = Arc::new(Mutex::new(state));
    let fs = DiskFs {
        state: state.clone(),
    };
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName("gauntlet-diskfs".into()),
        MountOption::Subtype("gauntlet-diskfs".into()),
        MountOption::DefaultPermissions,
    ];
    config.acl = SessionACL::All;
    let session = Session::new(fs, mount, &config).map_err(|source| DiskfsError::Mount {
        mount: mount.to_path_buf(),
        backing: backing.clone(),
        source,
    })?;
    let thread = std::thread::Builder::new()
        .name("diskfs-fuse".into())
        .spawn(move || session.run())
        .map_err(|source| DiskfsError::Mount {
            mount: mount.to_path_buf(),
            backing,
            source,
        })?;
    Ok(Mounted { state, thread })
}

/// Creates the mount point and the backing root if missing; a new backing
/// root takes the mount point's owner and mode (if it existed), else root 0755.
pub fn prepare_dirs(backing: &Path, mount: &Path) -> Result<(), DiskfsError> {
    let mount_meta = fs::metadata(mount).ok();
    if mount_meta.as_ref().is_some_and(|m| !m.is_dir()) {
        return Err(DiskfsError::io(
            "mount point",
            mount,
            std::io::Error::from_raw_os_error(libc::ENOTDIR),
        ));
    }
    if mount_meta.is_none() {
        fs::create_dir_all(mount).map_err(|e| DiskfsError::io("creating mount point", mount, e))?;
    }
    if fs::metadata(backing).is_err() {
        fs::create_dir_all(backing)
            .map_err(|e| DiskfsError::io("creating backing directory", backing, e))?;
        let (uid, gid, mode) = match &mount_meta {
            Some(m) => (m.uid(), m.gid(), m.mode() & 0o7777),
            None => (0, 0, 0o755),
        };
        fs::set_permissions(backing, fs::Permissions::from_mode(mode))
            .map_err(|e| DiskfsError::io("setting the mode of", backing, e))?;
        std::os::unix::fs::chown(backing, Some(uid), Some(gid))
            .map_err(|e| DiskfsError::io("setting the owner of", backing, e))?;
    }
    Ok(())
}

fn signal_set() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset fill a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

fn peer_pid(stream: &UnixStream) -> Option<i32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: a valid socket and an out-parameter of the right size.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            &mut cred as *mut libc::ucred as *mut libc::c_void,
            &mut len,
        )
    };
    (rc == 0 && cred.pid > 0).then_some(cred.pid)
}

struct Daemon {
    opts: RunOptions,
    state: Arc<Mutex<State>>,
    child_pid: i32,
    /// Claimed by whoever ends the daemon first: a fault or the child's exit.
    ending: AtomicBool,
}

impl Daemon {
    fn status(&self) -> Status {
        let (pending_files, pending_bytes) = lock(&self.state).pending_summary();
        Status {
            mounted: true,
            mount: self.opts.mount.display().to_string(),
            backing: self.opts.backing.display().to_string(),
            pending_files,
            pending_bytes,
            child_pid: self.child_pid,
        }
    }

    fn fault(&self, req: &Request, peer: Option<i32>) -> Result<Report, DiskfsError> {
        let me = std::process::id() as i32;
        let procs = faults::processes();
        let pids = faults::victims(&procs, me, self.opts.container, self.child_pid, peer);
        let group = (!self.opts.container).then_some(self.child_pid);
        let left = faults::kill_and_wait(&pids, group, Duration::from_secs(10));
        if !left.is_empty() {
            eprintln!("gauntlet-diskfs: still alive 10 s after SIGKILL: {left:?}");
        }
        let taken = {
            let mut st = lock(&self.state);
            st.frozen = true;
            st.take_pending()
        };
        let (fault, settle, seed) = match req {
            Request::PowerLoss { torn: false, .. } => ("power-loss", Settle::Drop, None),
            Request::PowerLoss { torn: true, seed } => {
                let s = seed.unwrap_or_else(clock_seed);
                ("power-loss:torn", Settle::Torn(s), Some(s))
            }
            Request::Crash => ("crash", Settle::Keep, None),
            Request::CorruptBitflip { seed, .. } => (
                "corrupt:bitflip",
                Settle::Keep,
                Some(seed.unwrap_or_else(clock_seed)),
            ),
            Request::CorruptTruncate { seed, .. } => (
                "corrupt:truncate",
                Settle::Keep,
                Some(seed.unwrap_or_else(clock_seed)),
            ),
            Request::Wipe => ("wipe", Settle::Drop, None),
            Request::Status => return Err(DiskfsError::Protocol("status is not a fault".into())),
        };
        let mut report = Report::new(fault, pids, seed);
        faults::settle(taken, settle, &mut report)?;
        let root = &lock(&self.state).backing.clone();
        report.changes = match req {
            Request::CorruptBitflip { bits, files, .. } => {
                faults::bitflip(root, files, *bits, seed.unwrap_or(0))?
            }
            Request::CorruptTruncate { files, .. } => {
                faults::truncate_newest(root, files, seed.unwrap_or(0))?
            }
            Request::Wipe => faults::wipe(root)?,
            _ => Vec::new(),
        };
        Ok(report)
    }

    fn serve(&self, stream: UnixStream) {
        let peer = peer_pid(&stream);
        let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
        let mut line = String::new();
        let read = BufReader::new(&stream).read_line(&mut line);
        let req: Result<Request, String> = match read {
            Ok(_) => {
                serde_json::from_str(line.trim()).map_err(|e| format!("bad request {line:?}: {e}"))
            }
            Err(e) => Err(format!("reading the request: {e}")),
        };
        let reply = |r: &Reply| {
            let mut s = serde_json::to_string(r)
                .unwrap_or_else(|_| r#"{"error":"unprintable reply"}"#.into());
            s.push('\n');
            let mut w = &stream;
            let _ = w.write_all(s.as_bytes()).and_then(|_| w.flush());
        };
        let req = match req {
            Ok(r) => r,
            Err(e) => return reply(&Reply::Error(e)),
        };
        if req == Request::Status {
            return reply(&Reply::Status(self.status()));
        }
        if self
            .ending
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return reply(&Reply::Error("the daemon is already ending".into()));
        }
        match self.fault(&req, peer) {
            Ok(report) => {
                reply(&Reply::Report(report));
                let _ = stream.shutdown(std::net::Shutdown::Write);
                // The daemon's exit may end the whole container: let the client
                // exit first, so whoever ran it (docker exec) sees its code.
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut sink = [0u8; 64];
                while matches!((&stream).read(&mut sink), Ok(n) if n > 0) {}
                if let Some(pid) = peer {
                    faults::wait_gone(pid, Duration::from_secs(5));
                }
                let _ = unmount(&self.opts.mount);
                let _ = fs::remove_file(&self.opts.socket);
                std::process::exit(EXIT_FAULT);
            }
            Err(e) => {
                reply(&Reply::Error(e.to_string()));
                let _ = stream.shutdown(std::net::Shutdown::Both);
                fail(&format!("fault {req:?}: {e}"));
            }
        }
    }
}

/// Runs the daemon; returns the exit code for a graceful end.
pub fn run(opts: RunOptions) -> Result<i32, DiskfsError> {
    if opts.cmd.is_empty() {
        return Err(DiskfsError::Usage("run: no command after --".into()));
    }
    if opts.container {
        let comm = fs::read_to_string("/proc/1/comm").unwrap_or_default();
        let comm = comm.trim();
        if comm != "docker-init" && comm != "tini" {
            return Err(DiskfsError::NotContainer(comm.to_string()));
        }
    }
    prepare_dirs(&opts.backing, &opts.mount)?;
    // Signals are taken by one thread; every thread inherits this mask, the
    // child gets it cleared before exec.
    let set = signal_set();
    // SAFETY: a valid set; this thread's mask.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };

    let mounted = mount(&opts.backing, &opts.mount)?;
    let mount_point = opts
        .mount
        .canonicalize()
        .unwrap_or_else(|_| opts.mount.clone());
    let _ = MOUNTED.set(mount_point.clone());
    eprintln!(
        "gauntlet-diskfs: mounted {} over {}",
        opts.mount.display(),
        opts.backing.display()
    );

    let _ = fs::remove_file(&opts.socket);
    let listener = UnixListener::bind(&opts.socket).map_err(|source| DiskfsError::Socket {
        path: opts.socket.clone(),
        source,
    });
    let listener = match listener {
        Ok(l) => l,
        Err(e) => {
            let _ = unmount(&mount_point);
            return Err(e);
        }
    };

    let mut cmd = Command::new(&opts.cmd[0]);
    cmd.args(&opts.cmd[1..]).process_group(0);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let set = signal_set();
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            Ok(())
        });
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(source) => {
            let _ = unmount(&mount_point);
            let _ = fs::remove_file(&opts.socket);
            return Err(DiskfsError::Child {
                cmd: opts.cmd[0].to_string_lossy().into_owned(),
                source,
            });
        }
    };
    let child_pid = child.id() as i32;
    CHILD_GROUP.store(child_pid, Ordering::SeqCst);
    let daemon = Arc::new(Daemon {
        opts: RunOptions {
            mount: mount_point.clone(),
            ..opts.clone()
        },
        state: mounted.state.clone(),
        child_pid,
        ending: AtomicBool::new(false),
    });

    // Signals to the child.
    std::thread::Builder::new()
        .name("diskfs-signals".into())
        .spawn(move || loop {
            let mut sig: libc::c_int = 0;
            // SAFETY: a valid set and out-parameter.
            if unsafe { libc::sigwait(&set, &mut sig) } == 0 {
                // SAFETY: kill(2) takes any pid.
                unsafe { libc::kill(child_pid, sig) };
            }
        })
        .map_err(|e| DiskfsError::io("starting the signal thread", &opts.mount, e))?;

    // The control socket.
    let d = daemon.clone();
    std::thread::Builder::new()
        .name("diskfs-control".into())
        .spawn(move || {
            for stream in listener.incoming() {
                match stream {
                    Ok(s) => d.serve(s),
                    Err(e) => fail(&format!("control socket {}: {e}", d.opts.socket.display())),
                }
            }
        })
        .map_err(|e| DiskfsError::io("starting the control thread", &opts.mount, e))?;

    // The mount ending by itself is a failure.
    let d = daemon.clone();
    let fuse_thread = mounted.thread;
    std::thread::Builder::new()
        .name("diskfs-watch".into())
        .spawn(move || {
            let res = fuse_thread.join();
            if !d.ending.load(Ordering::SeqCst) {
                // SAFETY: kill(2) with a negative pid signals the group.
                unsafe { libc::kill(-d.child_pid, libc::SIGKILL) };
                let why = match res {
                    Ok(Ok(())) => "the mount ended while the broker ran".to_string(),
                    Ok(Err(e)) => format!("the filesystem stopped: {e}"),
                    Err(_) => "the filesystem thread panicked".to_string(),
                };
                fail(&why);
            }
        })
        .map_err(|e| DiskfsError::io("starting the watch thread", &opts.mount, e))?;

    let status = child.wait().map_err(|source| DiskfsError::Child {
        cmd: opts.cmd[0].to_string_lossy().into_owned(),
        source,
    })?;
    if daemon
        .ending
        .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        // A fault is ending the daemon; it exits the process.
        loop {
            std::thread::park();
        }
    }
    let code = status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    let taken = {
        let mut st = lock(&daemon.state);
        st.frozen = true;
        st.take_pending()
    };
    let mut report = Report::new("exit", Vec::new(), None);
    faults::settle(taken, Settle::Keep, &mut report)?;
    unmount(&mount_point)?;
    let _ = fs::remove_file(&opts.socket);
    Ok(code)
}
