//! Locks that every Gauntlet process on this machine shares, for what several
//! runs started together would otherwise race for: building an image that is
//! missing, creating a run network with a subnet of its own, and the host
//! ports published for the nodes.
//!
//! Each lock is an exclusive `flock` on a file in [`lock_dir`]. The kernel
//! releases it when the file is closed, so a process that crashes or is
//! SIGKILLed never leaves a lock held: the next process takes it at once.
//! The files themselves stay (empty), so that two processes always lock the
//! same inode.
//!
//! May import: `error`.
use crate::error::{io_err, HarnessError, Result};
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

/// The directory of the lock files: `$GAUNTLET_LOCK_DIR`, or `gauntlet-locks`
/// in the system's temporary directory (one for the machine, as Docker's
/// networks, images and host ports are the machine's).
pub fn lock_dir() -> PathBuf {
    std::env::var_os("GAUNTLET_LOCK_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("gauntlet-locks"))
}

/// An exclusive lock held until it is dropped.
#[derive(Debug)]
pub struct MachineLock {
    _file: File,
    path: PathBuf,
}

impl MachineLock {
    /// Waits until the lock `name` (a file name, e.g. `images`) is free and takes it.
    /// The wait blocks a thread of its own, never the async runtime's.
    pub async fn acquire(name: &str) -> Result<MachineLock> {
        let path = lock_path(name)?;
        tokio::task::spawn_blocking(move || {
            let file = open(&path)?;
            file.lock()
                .map_err(io_err(format!("locking {}", path.display())))?;
            Ok(MachineLock { _file: file, path })
        })
        .await
        .map_err(|e| HarnessError::Io {
            what: "waiting for a machine lock".into(),
            source: std::io::Error::other(e.to_string()),
        })?
    }

    /// [`MachineLock::acquire`], calling `held` with the lock's file first when
    /// another holds it (to tell the user what the wait is for).
    pub async fn acquire_or_tell(name: &str, held: impl FnOnce(&Path)) -> Result<MachineLock> {
        if let Some(lock) = MachineLock::try_acquire(name)? {
            return Ok(lock);
        }
        held(&lock_path(name)?);
        MachineLock::acquire(name).await
    }

    /// Takes the lock `name` if it is free now; `None` when another process
    /// (or another handle of this one) holds it.
    pub fn try_acquire(name: &str) -> Result<Option<MachineLock>> {
        let path = lock_path(name)?;
        let file = open(&path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(MachineLock { _file: file, path })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(io_err(format!("locking {}", path.display()))(e)),
        }
    }

    /// The lock's file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn lock_path(name: &str) -> Result<PathBuf> {
    let dir = lock_dir();
    if !dir.is_dir() {
        std::fs::create_dir_all(&dir).map_err(io_err(format!("creating {}", dir.display())))?;
        // Every user's Gauntlet locks here: writable by all, files kept by their owner.
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777));
    }
    Ok(dir.join(format!("{name}.lock")))
}

fn open(path: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(io_err(format!("opening {}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_held_lock_is_refused_to_others_until_dropped() {
        let name = format!("test-{}-held", std::process::id());
        let held = MachineLock::acquire(&name).await.expect("acquire");
        assert!(held.path().ends_with(format!("{name}.lock")));
        assert!(MachineLock::try_acquire(&name).expect("try").is_none());
        // A waiter gets it as soon as the holder lets go.
        let waiter = tokio::spawn({
            let name = name.clone();
            async move { MachineLock::acquire(&name).await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!waiter.is_finished(), "took a lock that was held");
        drop(held);
        let second = waiter.await.expect("join").expect("acquire after drop");
        drop(second);
        assert!(MachineLock::try_acquire(&name).expect("try").is_some());
        let _ = std::fs::remove_file(lock_dir().join(format!("{name}.lock")));
    }

    #[tokio::test]
    async fn a_waiter_is_told_only_when_the_lock_is_held() {
        let name = format!("test-{}-told", std::process::id());
        let mut told = Vec::new();
        let free = MachineLock::acquire_or_tell(&name, |p| told.push(p.to_path_buf()))
            .await
            .expect("free lock");
        assert!(told.is_empty(), "told of a wait that did not happen");
        let waiter = tokio::spawn({
            let name = name.clone();
            async move {
                let mut told = Vec::new();
                let lock =
                    MachineLock::acquire_or_tell(&name, |p| told.push(p.to_path_buf())).await;
                (lock, told)
            }
        });
        // The waiter ends only once the holder lets go.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        drop(free);
        let (lock, told) = waiter.await.expect("join");
        assert!(lock.is_ok());
        assert_eq!(told, vec![lock_dir().join(format!("{name}.lock"))]);
        let _ = std::fs::remove_file(lock_dir().join(format!("{name}.lock")));
    }
}
