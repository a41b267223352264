//! Gauntlet's filesystem in the nodes (the `gauntlet-diskfs` binary, crate
//! `diskfs/`): where the harness finds it, how a node's start is wrapped by
//! it, and the commands that do the disk faults (docs/nemesis.md, "Disk
//! faults"). Only a run that schedules a disk fault mounts it.
//!
//! May import: `broker`, `error`; never a backend.
use crate::broker::DataDir;
use crate::error::HarnessError;
use gauntlet_nemesis::{Command, DiskFault};
use std::path::{Path, PathBuf};

/// The binary's name, beside `gauntlet`'s in the build's folder.
pub const BINARY: &str = "gauntlet-diskfs";
/// The environment variable that names the binary, before any other place.
pub const ENV: &str = "GAUNTLET_DISKFS";
/// Where the binary is in a node (a read-only bind mount).
pub const IN_NODE: &str = "/gauntlet/diskfs";
/// The directory in a node that stands for its disk (the backing directory).
pub const BACKING: &str = "/gauntlet-disk";
/// The line the filesystem prints, on stderr, when it fails itself: a harness
/// failure, never a finding about the broker.
pub const FAILED: &str = gauntlet_diskfs::FAILED_PREFIX;

/// The filesystem's binary: `$GAUNTLET_DISKFS`, else `gauntlet-diskfs` in the
/// folder of the running executable or its parent (a test binary lives in
/// `target/<profile>/deps/`).
pub fn binary() -> Result<PathBuf, HarnessError> {
    if let Some(p) = std::env::var_os(ENV) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(HarnessError::Scenario(format!(
                "{ENV}={} is not a file",
                p.display()
            )))
        };
    }
    let exe = std::env::current_exe()
        .map_err(|e| HarnessError::Scenario(format!("locating the running executable: {e}")))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    for d in [Some(dir), dir.parent()].into_iter().flatten() {
        let p = d.join(BINARY);
        if p.is_file() {
            return Ok(p);
        }
    }
    Err(HarnessError::Scenario(format!(
        "a disk fault needs Gauntlet's filesystem, and {BINARY} is not beside {} \
         (build it: `cargo build -p gauntlet-diskfs`, with --release for a release \
         build; or set {ENV})",
        exe.display()
    )))
}

/// The command that builds the binary beside a `gauntlet` built from this
/// source tree (`<target>/<profile>/gauntlet`), when that tree is still
/// there: the workspace and the cargo build of it.
pub fn build_command() -> Option<(PathBuf, Vec<String>)> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    if !workspace.join("diskfs").join("Cargo.toml").is_file() {
        return None;
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    let profile = dir.file_name()?.to_str()?.to_string();
    if profile != "debug" && profile != "release" {
        return None;
    }
    let target = dir.parent()?;
    let args = vec![
        "build".to_string(),
        "--quiet".to_string(),
        "--locked".to_string(),
        "-p".to_string(),
        "gauntlet-diskfs".to_string(),
        "--profile".to_string(),
        if profile == "debug" {
            "dev".into()
        } else {
            profile
        },
        "--target-dir".to_string(),
        target.display().to_string(),
    ];
    Some((workspace.to_path_buf(), args))
}

/// [`binary`], built first from the source tree when it is missing and the
/// tree is there ([`build_command`]); `building` is told the command.
pub fn binary_or_build(building: impl FnOnce(String)) -> Result<PathBuf, HarnessError> {
    if let Ok(p) = binary() {
        return Ok(p);
    }
    if std::env::var_os(ENV).is_some() {
        return binary();
    }
    let Some((workspace, args)) = build_command() else {
        return binary();
    };
    building(format!("cargo {}", args.join(" ")));
    let out = std::process::Command::new("cargo")
        .args(&args)
        .current_dir(&workspace)
        .output()
        .map_err(|e| HarnessError::Scenario(format!("running cargo to build {BINARY}: {e}")))?;
    if !out.status.success() {
        return Err(HarnessError::Scenario(format!(
            "building {BINARY} failed (cargo {}):\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    binary()
}

/// The entry point of a node whose data is mounted: the filesystem's `run`
/// over `data`, then the node's own entry point (the command follows it).
pub fn wrap(entrypoint: &[String], data: &DataDir) -> Vec<String> {
    let mut argv: Vec<String> = [
        IN_NODE,
        "run",
        "--backing",
        BACKING,
        "--mount",
        data.path,
        "--container",
        "--",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    argv.extend(entrypoint.iter().cloned());
    argv
}

/// The command, run in a mounted node, that does `fault` (drawing from `seed`)
/// on the files of `data`.
pub fn command(fault: DiskFault, seed: u64, data: &DataDir) -> Command {
    let seed = seed.to_string();
    let files = data.files.join(",");
    let args: Vec<&str> = match fault {
        DiskFault::PowerLoss { torn: false } => vec!["power-loss"],
        DiskFault::PowerLoss { torn: true } => vec!["power-loss", "--torn", "--seed", &seed],
        DiskFault::Bitflip => vec![
            "corrupt",
            "--bitflip",
            "3",
            "--files",
            &files,
            "--seed",
            &seed,
        ],
        DiskFault::Truncate => vec!["corrupt", "--truncate", "--files", &files, "--seed", &seed],
        DiskFault::Wipe => vec!["wipe"],
    };
    let mut argv = vec![IN_NODE];
    argv.extend(args);
    Command::new(&argv)
}

/// The crash of a mounted node (`kill-broker`): its processes killed, and what
/// it wrote kept, as the OS keeps a crashed process's writes.
pub fn crash() -> Command {
    Command::new(&[IN_NODE, "crash"])
}

/// The filesystem's own failure in a node's log, if it printed one.
pub fn failure_in(log: &str) -> Option<String> {
    log.lines()
        .find_map(|l| l.split_once(FAILED).map(|(_, why)| why.trim().to_string()))
}

/// The filesystem's own failure in the node logs a run collected
/// (`<dir>/<node>.log`), as the error that names the node.
pub fn failure_in_logs(dir: &Path) -> Option<HarnessError> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    logs.into_iter().find_map(|p| {
        let text = std::fs::read_to_string(&p).ok()?;
        let why = failure_in(&text)?;
        let node = p.file_stem()?.to_string_lossy().into_owned();
        Some(HarnessError::DiskFs { node, why })
    })
}

/// The report the filesystem printed (one JSON object on a line of `stdout`).
pub fn report(stdout: &str) -> Option<serde_json::Value> {
    stdout
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l.trim()).ok())
        .find(serde_json::Value::is_object)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATA: DataDir = DataDir {
        path: "/data",
        files: &["a/*.blk", "b/**"],
    };

    #[test]
    fn a_mounted_node_starts_under_the_filesystem_then_its_own_entry_point() {
        let argv = wrap(&["sh".into(), "-c".into()], &DATA);
        assert_eq!(
            argv.join(" "),
            "/gauntlet/diskfs run --backing /gauntlet-disk --mount /data --container -- sh -c"
        );
    }

    #[test]
    fn each_disk_fault_is_one_command_with_the_recipes_files_and_the_seed() {
        let c = |f| command(f, 7, &DATA).display();
        assert_eq!(
            c(DiskFault::PowerLoss { torn: false }),
            "/gauntlet/diskfs power-loss"
        );
        assert_eq!(
            c(DiskFault::PowerLoss { torn: true }),
            "/gauntlet/diskfs power-loss --torn --seed 7"
        );
        assert_eq!(
            c(DiskFault::Bitflip),
            "/gauntlet/diskfs corrupt --bitflip 3 --files a/*.blk,b/** --seed 7"
        );
        assert_eq!(
            c(DiskFault::Truncate),
            "/gauntlet/diskfs corrupt --truncate --files a/*.blk,b/** --seed 7"
        );
        assert_eq!(c(DiskFault::Wipe), "/gauntlet/diskfs wipe");
    }

    #[test]
    fn the_filesystems_own_failure_and_report_are_read_from_what_it_printed() {
        let log = "1:M 06 Dec ready\ngauntlet-diskfs: FAILED: mount: permission denied\n";
        assert_eq!(failure_in(log).as_deref(), Some("mount: permission denied"));
        assert_eq!(failure_in("all good\n"), None);
        let out = "noise\n{\"fault\":\"power-loss\",\"dropped_bytes\":12}\n";
        assert_eq!(
            report(out).and_then(|r| r["dropped_bytes"].as_u64()),
            Some(12)
        );
        assert_eq!(report("not json"), None);
    }

    #[test]
    fn the_filesystems_failure_is_found_in_the_collected_node_logs() {
        let dir = std::env::temp_dir().join(format!("gauntlet-diskfs-logs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join("n1.log"), "ready\n").expect("write");
        assert!(failure_in_logs(&dir).is_none());
        std::fs::write(
            dir.join("n2.log"),
            "x\ngauntlet-diskfs: FAILED: panic: boom\n",
        )
        .expect("write");
        let e = failure_in_logs(&dir).expect("found").to_string();
        assert!(e.contains("failed in node n2: panic: boom"), "{e}");
        assert!(failure_in_logs(&dir.join("none")).is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
