//! `gauntlet-diskfs bench`: what the filesystem costs a writer that appends
//! 4 KiB at a time and fsyncs every 16 writes.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::daemon::{mount, unmount};
use crate::DiskfsError;

/// One side of the bench.
#[derive(Debug, Clone, Copy)]
pub struct Figures {
    pub mib_per_s: f64,
    pub fsyncs_per_s: f64,
    pub elapsed: Duration,
}

/// Both sides.
#[derive(Debug, Clone, Copy)]
pub struct BenchResult {
    pub mib: u64,
    /// Directly in the directory, with the fsyncs.
    pub direct: Figures,
    /// Through the mount, with the fsyncs (which write through to the
    /// backing file and do not flush the device).
    pub mounted: Figures,
    /// Directly, without any fsync: the page cache alone, for the cost of
    /// FUSE itself.
    pub direct_nosync: Figures,
}

impl BenchResult {
    /// Throughput through the mount over throughput without it.
    pub fn ratio(&self) -> f64 {
        self.mounted.mib_per_s / self.direct.mib_per_s
    }
}

const BLOCK: usize = 4096;
const SYNC_EVERY: u64 = 16;

fn write_file(path: &Path, mib: u64, sync: bool) -> Result<Figures, DiskfsError> {
    let mut f: File = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(path)
        .map_err(|e| DiskfsError::io("creating", path, e))?;
    let block = vec![0x5au8; BLOCK];
    let writes = mib * 1024 * 1024 / BLOCK as u64;
    let mut fsyncs = 0u64;
    let start = Instant::now();
    for i in 1..=writes {
        f.write_all(&block)
            .map_err(|e| DiskfsError::io("writing", path, e))?;
        if sync && i % SYNC_EVERY == 0 {
            f.sync_all()
                .map_err(|e| DiskfsError::io("fsyncing", path, e))?;
            fsyncs += 1;
        }
    }
    f.sync_all()
        .map_err(|e| DiskfsError::io("fsyncing", path, e))?;
    let elapsed = start.elapsed();
    let secs = elapsed.as_secs_f64().max(1e-9);
    Ok(Figures {
        mib_per_s: mib as f64 / secs,
        fsyncs_per_s: fsyncs as f64 / secs,
        elapsed,
    })
}

/// Runs both sides in `dir` and removes what it made.
pub fn bench(dir: &Path, mib: u64) -> Result<BenchResult, DiskfsError> {
    if mib == 0 {
        return Err(DiskfsError::Usage("bench: --mb must be at least 1".into()));
    }
    fs::create_dir_all(dir).map_err(|e| DiskfsError::io("creating", dir, e))?;
    let direct_file = dir.join("gauntlet-diskfs-bench.dat");
    let direct = write_file(&direct_file, mib, true);
    let _ = fs::remove_file(&direct_file);
    let direct = direct?;
    let direct_nosync = write_file(&direct_file, mib, false);
    let _ = fs::remove_file(&direct_file);
    let direct_nosync = direct_nosync?;

    let backing = dir.join("gauntlet-diskfs-bench-backing");
    let mnt = dir.join("gauntlet-diskfs-bench-mount");
    for d in [&backing, &mnt] {
        fs::create_dir_all(d).map_err(|e| DiskfsError::io("creating", d, e))?;
    }
    let mounted = mount(&backing, &mnt)?;
    let figures = write_file(&mnt.join("bench.dat"), mib, true);
    let _ = fs::remove_file(mnt.join("bench.dat"));
    let unmounted = unmount(&mnt);
    let _ = mounted.thread.join();
    let _ = fs::remove_dir_all(&backing);
    let _ = fs::remove_dir(&mnt);
    unmounted?;
    Ok(BenchResult {
        mib,
        direct,
        mounted: figures?,
        direct_nosync,
    })
}
