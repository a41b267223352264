//! The run folder: `results/<scenario>/<timestamp>/`.
use crate::error::HarnessError;
use gauntlet_report::folder;
use std::path::{Path, PathBuf};

/// The time now, UTC, as `YYYYmmddTHHMMSS` (run folder names).
pub fn timestamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    // UTC, as YYYYmmddTHHMMSS (civil-from-days, no time zone database needed).
    let days = (secs / 86400) as i64;
    let rem = secs % 86400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

pub(super) fn io(what: &str, path: &Path) -> impl FnOnce(std::io::Error) -> HarnessError {
    let what = format!("{what} {}", path.display());
    move |e| HarnessError::RunFolder(format!("{what}: {e}"))
}

/// A new run folder.
#[derive(Debug)]
pub(super) struct RunFolder {
    /// `<results>/<scenario>/<stamp>`.
    pub(super) dir: PathBuf,
    /// The folder's name, the time it was made ([`timestamp`]).
    pub(super) stamp: String,
}

/// Makes `<results>/<name>/<timestamp>/` with `nodes/` and the effective
/// `scenario.toml`, and points `<results>/<name>/latest` at it. A folder is
/// never shared: a run that starts in the same second as another of the same
/// scenario (several runs side by side) gets `<timestamp>-2`, `-3`, ...
pub(super) fn create(
    results: &Path,
    name: &str,
    scenario_toml: &str,
) -> Result<RunFolder, HarnessError> {
    create_at(results, name, scenario_toml, &timestamp())
}

fn create_at(
    results: &Path,
    name: &str,
    scenario_toml: &str,
    stamp: &str,
) -> Result<RunFolder, HarnessError> {
    let base = results.join(name);
    std::fs::create_dir_all(&base).map_err(io("creating", &base))?;
    let mut n = 1;
    let (dir, stamp) = loop {
        let stamp = match n {
            1 => stamp.to_string(),
            _ => format!("{stamp}-{n}"),
        };
        let dir = base.join(&stamp);
        match std::fs::create_dir(&dir) {
            Ok(()) => break (dir, stamp),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
            Err(e) => return Err(io("creating", &dir)(e)),
        }
    };
    std::fs::create_dir(dir.join(folder::NODES)).map_err(io("creating", &dir))?;
    std::fs::write(dir.join(folder::SCENARIO), scenario_toml).map_err(io("writing", &dir))?;
    // The link is made beside and renamed over `latest`: a reader never finds
    // it missing, and runs that start together each leave a valid one.
    #[cfg(unix)]
    {
        let latest = base.join("latest");
        let fresh = base.join(format!(".latest-{}-{stamp}", std::process::id()));
        let _ = std::fs::remove_file(&fresh);
        if std::os::unix::fs::symlink(&stamp, &fresh).is_ok()
            && std::fs::rename(&fresh, &latest).is_err()
        {
            let _ = std::fs::remove_file(&fresh);
        }
    }
    Ok(RunFolder { dir, stamp })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_folder_holds_the_scenario_and_latest_points_at_the_newest() {
        let tmp = std::env::temp_dir().join(format!("gauntlet-folder-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let a = create_at(&tmp, "s", "name = \"s\"\n", "20261206T010203").expect("first");
        assert_eq!(a.dir, tmp.join("s").join("20261206T010203"));
        assert!(a.dir.join(folder::NODES).is_dir());
        assert_eq!(
            std::fs::read_to_string(a.dir.join(folder::SCENARIO))
                .ok()
                .as_deref(),
            Some("name = \"s\"\n")
        );
        let b = create_at(&tmp, "s", "name = \"s\"\n", "20261206T010204").expect("second");
        let latest = std::fs::read_link(tmp.join("s").join("latest")).expect("latest");
        assert_eq!(latest, PathBuf::from("20261206T010204"));
        assert!(a.dir.is_dir() && b.dir.is_dir(), "the older run is kept");
        // A results path that is a file: a clear error naming it.
        let file = tmp.join("plain-file");
        std::fs::write(&file, "x").expect("file");
        let e = create_at(&file, "s", "", "20261206T010205").expect_err("not a folder");
        assert!(e.to_string().contains("plain-file"), "{e}");
        let _ = std::fs::remove_dir_all(&tmp);
    }

    #[test]
    fn runs_started_in_the_same_second_get_folders_of_their_own() {
        let tmp = std::env::temp_dir().join(format!("gauntlet-folder-same-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let stamp = "20261207T101010";
        // Several runs at once, as parallel runs of one scenario start them.
        let made: Vec<RunFolder> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| create_at(&tmp, "s", "", stamp).expect("folder")))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("join"))
                .collect()
        });
        let mut stamps: Vec<&str> = made.iter().map(|f| f.stamp.as_str()).collect();
        stamps.sort();
        let mut want: Vec<String> = vec![stamp.to_string()];
        want.extend((2..=8).map(|n| format!("{stamp}-{n}")));
        want.sort();
        assert_eq!(stamps, want);
        for f in &made {
            assert_eq!(f.dir, tmp.join("s").join(&f.stamp));
        }
        // `latest` names one of them, and no temporary link is left beside it.
        let latest = std::fs::read_link(tmp.join("s").join("latest")).expect("latest");
        assert!(
            want.iter().any(|w| latest.as_os_str() == w.as_str()),
            "{latest:?}"
        );
        let names: Vec<String> = std::fs::read_dir(tmp.join("s"))
            .expect("list")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 9, "{names:?}");
        let _ = std::fs::remove_dir_all(&tmp);
    }

    #[test]
    fn timestamps_are_utc_civil_time() {
        let t = timestamp();
        assert_eq!(t.len(), 15, "{t}");
        assert_eq!(&t[8..9], "T");
        assert!(t[..8]
            .chars()
            .chain(t[9..].chars())
            .all(|c| c.is_ascii_digit()));
    }
}
