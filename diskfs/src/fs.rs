//! The FUSE filesystem: metadata passed through to the backing directory at
//! once, file data held in per-file pending-write logs until it is durable
//! (`docs/nemesis.md`, "Disk faults: what a power loss keeps").

use std::collections::HashMap;
use std::ffi::{CString, OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};

use crate::log::PendingLog;

const TTL: Duration = Duration::from_secs(1);
const ROOT: u64 = 1;

/// One file's data that is not durable yet.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) log: PendingLog,
    /// A writable descriptor of the backing file (a copy of the writer's).
    pub(crate) file: File,
    /// The order of the file's last write among all files.
    pub(crate) last_seq: u64,
    pub(crate) last_write: SystemTime,
}

#[derive(Debug)]
struct Node {
    /// Relative to the backing root; None once unlinked.
    path: Option<PathBuf>,
    key: (u64, u64),
    lookups: u64,
}

#[derive(Debug)]
enum Handle {
    File {
        file: File,
        sync: bool,
    },
    /// `read`: a readdir has been served (offset 0 again is a rewind).
    Dir {
        entries: Vec<(OsString, FileType, u64)>,
        read: bool,
    },
}

/// A pending file handed out by [`State::take_pending`].
#[derive(Debug)]
pub(crate) struct TakenFile {
    pub(crate) path: String,
    pub(crate) pending: Pending,
}

/// Everything the filesystem knows, behind one lock.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) backing: PathBuf,
    nodes: HashMap<u64, Node>,
    by_key: HashMap<(u64, u64), u64>,
    next_ino: u64,
    handles: HashMap<u64, Handle>,
    next_fh: u64,
    files: HashMap<u64, Pending>,
    seq: u64,
    /// Set by a fault: no more data is taken.
    pub(crate) frozen: bool,
}

type Res<T> = Result<T, Errno>;

fn cpath(p: &Path) -> Res<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| Errno::EINVAL)
}

fn last_os_err() -> Errno {
    Errno::from(std::io::Error::last_os_error())
}

fn time(secs: i64, nsecs: i64) -> SystemTime {
    let nsecs = nsecs.clamp(0, 999_999_999) as u32;
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nsecs)
    } else {
        UNIX_EPOCH - Duration::new(secs.unsigned_abs(), 0) + Duration::new(0, nsecs)
    }
}

fn kind_of(meta: &fs::Metadata) -> FileType {
    FileType::from_std(meta.file_type()).unwrap_or(FileType::RegularFile)
}

/// Open flags the backing descriptor must not get: the mount decides offsets
/// (no O_APPEND), creation and truncation are done apart.
fn backing_flags(flags: i32) -> i32 {
    flags
        & !(libc::O_ACCMODE
            | libc::O_CREAT
            | libc::O_EXCL
            | libc::O_TRUNC
            | libc::O_APPEND
            | libc::O_NOCTTY
            | libc::O_DIRECT)
}

fn open_options(flags: i32) -> OpenOptions {
    let mut o = OpenOptions::new();
    match flags & libc::O_ACCMODE {
        libc::O_RDONLY => o.read(true),
        // A write-only handle reads too: the daemon reads the backing file.
        _ => o.read(true).write(true),
    };
    o.custom_flags(backing_flags(flags) | libc::O_CLOEXEC);
    o
}

impl State {
    pub(crate) fn new(backing: PathBuf) -> Res<State> {
        let meta = fs::symlink_metadata(&backing).map_err(Errno::from)?;
        let mut nodes = HashMap::new();
        let key = (meta.dev(), meta.ino());
        nodes.insert(
            ROOT,
            Node {
                path: Some(PathBuf::new()),
                key,
                lookups: 1,
            },
        );
        let mut by_key = HashMap::new();
        by_key.insert(key, ROOT);
        Ok(State {
            backing,
            nodes,
            by_key,
            next_ino: 2,
            handles: HashMap::new(),
            next_fh: 1,
            files: HashMap::new(),
            seq: 0,
            frozen: false,
        })
    }

    fn full(&self, rel: &Path) -> PathBuf {
        if rel.as_os_str().is_empty() {
            self.backing.clone()
        } else {
            self.backing.join(rel)
        }
    }

    fn rel(&self, ino: u64) -> Res<PathBuf> {
        self.nodes
            .get(&ino)
            .and_then(|n| n.path.clone())
            .ok_or(Errno::ENOENT)
    }

    fn child(&self, parent: u64, name: &OsStr) -> Res<PathBuf> {
        Ok(self.rel(parent)?.join(name))
    }

    /// Files with pending writes and their bytes (unlinked ones left out).
    pub(crate) fn pending_summary(&self) -> (u64, u64) {
        let mut files = 0;
        let mut bytes = 0;
        for (ino, p) in &self.files {
            if self.nodes.get(ino).is_some_and(|n| n.path.is_some()) {
                files += 1;
                bytes += p.log.bytes();
            }
        }
        (files, bytes)
    }

    /// Hands out every pending file (by path; unlinked ones are dropped).
    pub(crate) fn take_pending(&mut self) -> Vec<TakenFile> {
        let mut out = Vec::new();
        for (ino, pending) in self.files.drain() {
            let path = self.nodes.get(&ino).and_then(|n| n.path.clone());
            if let Some(path) = path {
                if pending
                    .file
                    .metadata()
                    .map(|m| m.nlink() > 0)
                    .unwrap_or(false)
                {
                    out.push(TakenFile {
                        path: path.to_string_lossy().into_owned(),
                        pending,
                    });
                }
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }

    fn remember(&mut self, rel: PathBuf, meta: &fs::Metadata) -> u64 {
        let key = (meta.dev(), meta.ino());
        if let Some(&ino) = self.by_key.get(&key) {
            if let Some(n) = self.nodes.get_mut(&ino) {
                n.path = Some(rel);
                n.lookups += 1;
                return ino;
            }
        }
        let ino = self.next_ino;
        self.next_ino += 1;
        self.nodes.insert(
            ino,
            Node {
                path: Some(rel),
                key,
                lookups: 1,
            },
        );
        self.by_key.insert(key, ino);
        ino
    }

    /// A name is gone from the backing directory: `meta` was its object.
    fn gone(&mut self, rel: &Path, meta: &fs::Metadata) {
        let key = (meta.dev(), meta.ino());
        if let Some(&ino) = self.by_key.get(&key) {
            if let Some(n) = self.nodes.get_mut(&ino) {
                if n.path.as_deref() == Some(rel) {
                    n.path = None;
                }
            }
            if meta.is_dir() || meta.nlink() <= 1 {
                self.by_key.remove(&key);
            }
        }
    }

    fn attr(&self, ino: u64, meta: &fs::Metadata) -> FileAttr {
        let mut size = meta.size();
        let mut mtime = time(meta.mtime(), meta.mtime_nsec());
        if let Some(p) = self.files.get(&ino) {
            size = p.log.size_over(size);
            mtime = mtime.max(p.last_write);
        }
        FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: meta.blocks().max(size.div_ceil(512)),
            atime: time(meta.atime(), meta.atime_nsec()),
            mtime,
            ctime: time(meta.ctime(), meta.ctime_nsec()),
            crtime: UNIX_EPOCH,
            kind: kind_of(meta),
            perm: (meta.mode() & 0o7777) as u16,
            nlink: meta.nlink() as u32,
            uid: meta.uid(),
            gid: meta.gid(),
            rdev: meta.rdev() as u32,
            blksize: meta.blksize() as u32,
            flags: 0,
        }
    }

    fn meta_of(&self, ino: u64, fh: Option<FileHandle>) -> Res<fs::Metadata> {
        if let Some(Handle::File { file, .. }) = fh.and_then(|f| self.handles.get(&f.0)) {
            return file.metadata().map_err(Errno::from);
        }
        let rel = self.rel(ino)?;
        fs::symlink_metadata(self.full(&rel)).map_err(Errno::from)
    }

    fn lookup(&mut self, parent: u64, name: &OsStr) -> Res<FileAttr> {
        let rel = self.child(parent, name)?;
        let meta = fs::symlink_metadata(self.full(&rel)).map_err(Errno::from)?;
        let ino = self.remember(rel, &meta);
        Ok(self.attr(ino, &meta))
    }

    /// The owner a new object gets: the caller, with the group of a
    /// set-group-id parent directory.
    fn owner_for(&self, parent: u64, req: &Request) -> Res<(u32, u32, bool)> {
        let pmeta = fs::metadata(self.full(&self.rel(parent)?)).map_err(Errno::from)?;
        if pmeta.mode() & libc::S_ISGID != 0 {
            Ok((req.uid(), pmeta.gid(), true))
        } else {
            Ok((req.uid(), req.gid(), false))
        }
    }

    fn chown_path(&self, full: &Path, uid: u32, gid: u32) -> Res<()> {
        let c = cpath(full)?;
        // SAFETY: c is a valid NUL-terminated path.
        if unsafe { libc::lchown(c.as_ptr(), uid, gid) } != 0 {
            return Err(last_os_err());
        }
        Ok(())
    }

    fn new_handle(&mut self, h: Handle) -> u64 {
        let fh = self.next_fh;
        self.next_fh += 1;
        self.handles.insert(fh, h);
        fh
    }

    /// Writes a file's pending data to its backing file, in write order.
    pub(crate) fn write_through(&mut self, ino: u64) -> Res<()> {
        if let Some(mut p) = self.files.remove(&ino) {
            for w in p.log.take() {
                p.file
                    .write_all_at(&w.data, w.offset)
                    .map_err(Errno::from)?;
            }
            // A node the kernel has forgotten was kept only for its data.
            self.forget(ino, 0);
        }
        Ok(())
    }

    fn read(&self, ino: u64, fh: u64, offset: u64, size: u32) -> Res<Vec<u8>> {
        let Some(Handle::File { file, .. }) = self.handles.get(&fh) else {
            return Err(Errno::EBADF);
        };
        let bsize = file.metadata().map_err(Errno::from)?.len();
        let pending = self.files.get(&ino);
        let fsize = pending.map_or(bsize, |p| p.log.size_over(bsize));
        if offset >= fsize {
            return Ok(Vec::new());
        }
        let n = (size as u64).min(fsize - offset) as usize;
        let mut buf = vec![0u8; n];
        if offset < bsize {
            let want = ((bsize - offset) as usize).min(n);
            let mut done = 0;
            while done < want {
                match file.read_at(&mut buf[done..want], offset + done as u64) {
                    Ok(0) => break,
                    Ok(k) => done += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(Errno::from(e)),
                }
            }
        }
        if let Some(p) = pending {
            p.log.overlay(offset, &mut buf);
        }
        Ok(buf)
    }

    fn write(&mut self, ino: u64, fh: u64, offset: u64, data: &[u8], flags: i32) -> Res<u32> {
        if self.frozen {
            return Err(Errno::EIO);
        }
        let Some(Handle::File { file, sync, .. }) = self.handles.get(&fh) else {
            return Err(Errno::EBADF);
        };
        let sync = *sync || flags & libc::O_DSYNC != 0;
        self.seq += 1;
        let seq = self.seq;
        let p = match self.files.entry(ino) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(Pending {
                log: PendingLog::default(),
                file: file.try_clone().map_err(Errno::from)?,
                last_seq: seq,
                last_write: SystemTime::now(),
            }),
        };
        p.log.push(offset, data);
        p.last_seq = seq;
        p.last_write = SystemTime::now();
        if sync {
            self.write_through(ino)?;
        }
        Ok(data.len() as u32)
    }

    #[allow(clippy::too_many_arguments)]
    fn setattr(
        &mut self,
        ino: u64,
        fh: Option<FileHandle>,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
    ) -> Res<FileAttr> {
        let file = match fh.and_then(|f| self.handles.get(&f.0)) {
            Some(Handle::File { file, .. }) => Some(file.try_clone().map_err(Errno::from)?),
            _ => None,
        };
        let full = match self.rel(ino) {
            Ok(rel) => Some(self.full(&rel)),
            Err(e) if file.is_none() => return Err(e),
            Err(_) => None,
        };
        if let Some(mode) = mode {
            let perm = fs::Permissions::from_mode(mode & 0o7777);
            match (&file, &full) {
                (Some(f), _) => f.set_permissions(perm).map_err(Errno::from)?,
                (None, Some(p)) => fs::set_permissions(p, perm).map_err(Errno::from)?,
                _ => return Err(Errno::ENOENT),
            }
        }
        if uid.is_some() || gid.is_some() {
            let (u, g) = (uid.unwrap_or(u32::MAX), gid.unwrap_or(u32::MAX));
            match (&file, &full) {
                // SAFETY: a valid descriptor owned by `f`.
                (Some(f), _) => {
                    if unsafe { libc::fchown(f.as_raw_fd(), u, g) } != 0 {
                        return Err(last_os_err());
                    }
                }
                (None, Some(p)) => self.chown_path(p, u, g)?,
                _ => return Err(Errno::ENOENT),
            }
        }
        if let Some(size) = size {
            match (&file, &full) {
                (Some(f), _) => f.set_len(size).map_err(Errno::from)?,
                (None, Some(p)) => OpenOptions::new()
                    .write(true)
                    .open(p)
                    .and_then(|f| f.set_len(size))
                    .map_err(Errno::from)?,
                _ => return Err(Errno::ENOENT),
            }
            if let Some(p) = self.files.get_mut(&ino) {
                p.log.truncate(size);
                if p.log.is_empty() {
                    self.files.remove(&ino);
                }
            }
        }
        if atime.is_some() || mtime.is_some() {
            let ts = |t: Option<TimeOrNow>| match t {
                None => libc::timespec {
                    tv_sec: 0,
                    tv_nsec: libc::UTIME_OMIT,
                },
                Some(TimeOrNow::Now) => libc::timespec {
                    tv_sec: 0,
                    tv_nsec: libc::UTIME_NOW,
                },
                Some(TimeOrNow::SpecificTime(t)) => {
                    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
                    libc::timespec {
                        tv_sec: d.as_secs() as libc::time_t,
                        tv_nsec: d.subsec_nanos() as libc::c_long,
                    }
                }
            };
            let times = [ts(atime), ts(mtime)];
            let rc = match (&file, &full) {
                // SAFETY: valid descriptor and a two-element array.
                (Some(f), _) => unsafe { libc::futimens(f.as_raw_fd(), times.as_ptr()) },
                (None, Some(p)) => {
                    let c = cpath(p)?;
                    // SAFETY: valid path and a two-element array.
                    unsafe {
                        libc::utimensat(
                            libc::AT_FDCWD,
                            c.as_ptr(),
                            times.as_ptr(),
                            libc::AT_SYMLINK_NOFOLLOW,
                        )
                    }
                }
                _ => return Err(Errno::ENOENT),
            };
            if rc != 0 {
                return Err(last_os_err());
            }
            // The mtime set wins over the time of pending writes.
            if let Some(p) = self.files.get_mut(&ino) {
                p.last_write = UNIX_EPOCH;
            }
        }
        let meta = self.meta_of(ino, fh)?;
        Ok(self.attr(ino, &meta))
    }

    fn create(
        &mut self,
        req: &Request,
        parent: u64,
        name: &OsStr,
        mode: u32,
        flags: i32,
    ) -> Res<(FileAttr, u64)> {
        let rel = self.child(parent, name)?;
        let full = self.full(&rel);
        let (uid, gid, _) = self.owner_for(parent, req)?;
        let mut o = open_options(flags);
        o.write(true).mode(mode & 0o7777);
        let file = match o.clone().create_new(true).open(&full) {
            Ok(f) => {
                f.set_permissions(fs::Permissions::from_mode(mode & 0o7777))
                    .map_err(Errno::from)?;
                // SAFETY: a valid descriptor owned by `f`.
                if unsafe { libc::fchown(f.as_raw_fd(), uid, gid) } != 0 {
                    return Err(last_os_err());
                }
                f
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::AlreadyExists && flags & libc::O_EXCL == 0 =>
            {
                let f = open_options(flags).open(&full).map_err(Errno::from)?;
                if flags & libc::O_TRUNC != 0 {
                    f.set_len(0).map_err(Errno::from)?;
                }
                f
            }
            Err(e) => return Err(Errno::from(e)),
        };
        let meta = file.metadata().map_err(Errno::from)?;
        let ino = self.remember(rel, &meta);
        if flags & libc::O_TRUNC != 0 {
            self.files.remove(&ino);
        }
        let attr = self.attr(ino, &meta);
        let fh = self.new_handle(Handle::File {
            file,
            sync: flags & libc::O_DSYNC != 0,
        });
        Ok((attr, fh))
    }

    fn open(&mut self, ino: u64, flags: i32) -> Res<u64> {
        let full = self.full(&self.rel(ino)?);
        let file = open_options(flags).open(&full).map_err(Errno::from)?;
        if flags & libc::O_TRUNC != 0 && flags & libc::O_ACCMODE != libc::O_RDONLY {
            file.set_len(0).map_err(Errno::from)?;
            self.files.remove(&ino);
        }
        Ok(self.new_handle(Handle::File {
            file,
            sync: flags & libc::O_DSYNC != 0,
        }))
    }

    fn mknod_like(
        &mut self,
        req: &Request,
        parent: u64,
        name: &OsStr,
        make: impl FnOnce(&Path) -> Res<()>,
        mode: Option<u32>,
    ) -> Res<FileAttr> {
        let rel = self.child(parent, name)?;
        let full = self.full(&rel);
        let (uid, gid, sgid) = self.owner_for(parent, req)?;
        make(&full)?;
        let meta = fs::symlink_metadata(&full).map_err(Errno::from)?;
        if let Some(mode) = mode {
            let mut m = mode & 0o7777;
            if sgid && meta.is_dir() {
                m |= libc::S_ISGID;
            }
            fs::set_permissions(&full, fs::Permissions::from_mode(m)).map_err(Errno::from)?;
        }
        self.chown_path(&full, uid, gid)?;
        self.lookup(parent, name)
    }

    fn unlink(&mut self, parent: u64, name: &OsStr, dir: bool) -> Res<()> {
        let rel = self.child(parent, name)?;
        let full = self.full(&rel);
        let meta = fs::symlink_metadata(&full).map_err(Errno::from)?;
        if dir {
            fs::remove_dir(&full).map_err(Errno::from)?;
        } else {
            fs::remove_file(&full).map_err(Errno::from)?;
        }
        self.gone(&rel, &meta);
        Ok(())
    }

    fn rename(
        &mut self,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
    ) -> Res<()> {
        let old = self.child(parent, name)?;
        let new = self.child(newparent, newname)?;
        let (fo, fnew) = (self.full(&old), self.full(&new));
        let replaced = fs::symlink_metadata(&fnew).ok();
        if flags == 0 {
            fs::rename(&fo, &fnew).map_err(Errno::from)?;
        } else {
            let (a, b) = (cpath(&fo)?, cpath(&fnew)?);
            // SAFETY: valid paths.
            let rc = unsafe {
                libc::renameat2(
                    libc::AT_FDCWD,
                    a.as_ptr(),
                    libc::AT_FDCWD,
                    b.as_ptr(),
                    flags,
                )
            };
            if rc != 0 {
                return Err(last_os_err());
            }
        }
        let exchange = flags & libc::RENAME_EXCHANGE != 0;
        if let (Some(meta), false) = (&replaced, exchange) {
            self.gone(&new, meta);
        }
        for n in self.nodes.values_mut() {
            let Some(p) = &n.path else { continue };
            if let Ok(rest) = p.strip_prefix(&old) {
                n.path = Some(if rest.as_os_str().is_empty() {
                    new.clone()
                } else {
                    new.join(rest)
                });
            } else if exchange {
                if let Ok(rest) = p.strip_prefix(&new) {
                    n.path = Some(if rest.as_os_str().is_empty() {
                        old.clone()
                    } else {
                        old.join(rest)
                    });
                }
            }
        }
        Ok(())
    }

    fn forget(&mut self, ino: u64, n: u64) {
        if ino == ROOT {
            return;
        }
        let remove = match self.nodes.get_mut(&ino) {
            Some(node) => {
                node.lookups = node.lookups.saturating_sub(n);
                node.lookups == 0 && !self.files.contains_key(&ino)
            }
            None => false,
        };
        if remove {
            if let Some(node) = self.nodes.remove(&ino) {
                if self.by_key.get(&node.key) == Some(&ino) {
                    self.by_key.remove(&node.key);
                }
            }
        }
    }

    fn opendir(&mut self, ino: u64) -> Res<u64> {
        let entries = self.dir_entries(ino)?;
        Ok(self.new_handle(Handle::Dir {
            entries,
            read: false,
        }))
    }

    /// The directory's entries as the backing directory has them now.
    fn dir_entries(&self, ino: u64) -> Res<Vec<(OsString, FileType, u64)>> {
        let full = self.full(&self.rel(ino)?);
        let mut entries = vec![
            (OsString::from("."), FileType::Directory, ino),
            (OsString::from(".."), FileType::Directory, ROOT),
        ];
        for e in fs::read_dir(&full).map_err(Errno::from)? {
            let e = e.map_err(Errno::from)?;
            let kind = e
                .file_type()
                .ok()
                .and_then(FileType::from_std)
                .unwrap_or(FileType::RegularFile);
            use std::os::unix::fs::DirEntryExt;
            entries.push((e.file_name(), kind, e.ino()));
        }
        Ok(entries)
    }
}

/// The filesystem the kernel talks to; the daemon shares its state.
#[derive(Debug, Clone)]
pub(crate) struct DiskFs {
    pub(crate) state: Arc<Mutex<State>>,
}

impl DiskFs {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }
}

/// Locks the state (a panic elsewhere ends the daemon, so poison is moot).
pub(crate) fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

impl Filesystem for DiskFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.lock().lookup(parent.0, name) {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.lock().forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        let st = self.lock();
        match st.meta_of(ino.0, fh) {
            Ok(meta) => reply.attr(&TTL, &st.attr(ino.0, &meta)),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        match self
            .lock()
            .setattr(ino.0, fh, mode, uid, gid, size, atime, mtime)
        {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let st = self.lock();
        match st
            .rel(ino.0)
            .and_then(|r| fs::read_link(st.full(&r)).map_err(Errno::from))
        {
            Ok(target) => reply.data(target.as_os_str().as_bytes()),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let make = |full: &Path| -> Res<()> {
            let c = cpath(full)?;
            // SAFETY: a valid path.
            if unsafe { libc::mknod(c.as_ptr(), mode, rdev as libc::dev_t) } != 0 {
                return Err(last_os_err());
            }
            Ok(())
        };
        match self
            .lock()
            .mknod_like(req, parent.0, name, make, Some(mode))
        {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        let make = |full: &Path| fs::create_dir(full).map_err(Errno::from);
        match self
            .lock()
            .mknod_like(req, parent.0, name, make, Some(mode))
        {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.lock().unlink(parent.0, name, false) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.lock().unlink(parent.0, name, true) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let make = |full: &Path| std::os::unix::fs::symlink(target, full).map_err(Errno::from);
        match self.lock().mknod_like(req, parent.0, link_name, make, None) {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        match self
            .lock()
            .rename(parent.0, name, newparent.0, newname, flags.bits())
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let mut st = self.lock();
        let res = (|| {
            let src = st.full(&st.rel(ino.0)?);
            let dst = st.full(&st.child(newparent.0, newname)?);
            fs::hard_link(&src, &dst).map_err(Errno::from)?;
            st.lookup(newparent.0, newname)
        })();
        match res {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        match self.lock().open(ino.0, flags.0) {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match self.lock().read(ino.0, fh.0, offset, size) {
            Ok(buf) => reply.data(&buf),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        match self.lock().write(ino.0, fh.0, offset, data, flags.0) {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.lock().handles.remove(&fh.0);
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let mut st = self.lock();
        if st.frozen {
            return reply.error(Errno::EIO);
        }
        match st.write_through(ino.0) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.lock().opendir(ino.0) {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let mut st = self.lock();
        let rewound = matches!(st.handles.get(&fh.0), Some(Handle::Dir { read: true, .. }));
        if offset == 0 && rewound {
            // A rewound directory stream reads the directory again.
            match st.dir_entries(ino.0) {
                Ok(entries) => {
                    st.handles.insert(
                        fh.0,
                        Handle::Dir {
                            entries,
                            read: false,
                        },
                    );
                }
                Err(e) => return reply.error(e),
            }
        }
        let Some(Handle::Dir { entries, read }) = st.handles.get_mut(&fh.0) else {
            return reply.error(Errno::EBADF);
        };
        *read = true;
        for (i, (name, kind, ino)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(*ino), (i + 1) as u64, *kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.lock().handles.remove(&fh.0);
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let backing = self.lock().backing.clone();
        let Ok(c) = cpath(&backing) else {
            return reply.error(Errno::EINVAL);
        };
        // SAFETY: zeroed statvfs is a valid out-parameter.
        let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: valid path and out-parameter.
        if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
            return reply.error(last_os_err());
        }
        reply.statfs(
            s.f_blocks,
            s.f_bfree,
            s.f_bavail,
            s.f_files,
            s.f_ffree,
            s.f_bsize as u32,
            s.f_namemax as u32,
            s.f_frsize as u32,
        );
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
        reply.ok();
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        match self.lock().create(req, parent.0, name, mode, flags) {
            Ok((attr, fh)) => reply.created(
                &TTL,
                &attr,
                Generation(0),
                FileHandle(fh),
                FopenFlags::empty(),
            ),
            Err(e) => reply.error(e),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        if mode & !libc::FALLOC_FL_KEEP_SIZE != 0 {
            return reply.error(Errno::EOPNOTSUPP);
        }
        let st = self.lock();
        let Some(Handle::File { file, .. }) = st.handles.get(&fh.0) else {
            return reply.error(Errno::EBADF);
        };
        // SAFETY: a valid descriptor owned by the handle.
        let rc = unsafe {
            libc::fallocate(
                file.as_raw_fd(),
                mode,
                offset as libc::off_t,
                length as libc::off_t,
            )
        };
        if rc != 0 {
            return reply.error(last_os_err());
        }
        reply.ok();
    }
}
