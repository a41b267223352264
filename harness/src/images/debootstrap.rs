//! A rootfs made with debootstrap and its chroot script, cached on disk; the
//! host's Debian mirror; running a build step with its output logged.
//!
//! May import: `images::{rootfs, options}`, `error`.
use super::options::{BuildOptions, Progress};
use super::rootfs::{rootfs_hash, Rootfs, SUITE};
use crate::error::{io_err, HarnessError, Result};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The cached rootfs, made with debootstrap and the chroot script if missing.
pub(super) async fn ensure_rootfs(
    r: &Rootfs,
    opts: &BuildOptions,
    progress: &dyn Progress,
) -> Result<PathBuf> {
    let hash = rootfs_hash(r);
    let short = &hash[..12];
    let name = r.name;
    let suite = r.suite;
    let dir = opts.cache_dir.join(format!("{name}-{short}"));
    let done = opts.cache_dir.join(format!("{name}-{short}.done"));
    if done.exists() && dir.is_dir() && !opts.force {
        progress.line(&format!("{name}: cached at {}", dir.display()));
        return Ok(dir);
    }
    if !is_root() {
        return Err(HarnessError::BuildPrerequisite {
            what: "root".into(),
            detail: "debootstrap and chroot must run as root (or build the images once as root)"
                .into(),
        });
    }
    tokio::fs::create_dir_all(&opts.cache_dir)
        .await
        .map_err(io_err(format!("creating {}", opts.cache_dir.display())))?;
    let _ = tokio::fs::remove_file(&done).await;
    if dir.exists() {
        tokio::fs::remove_dir_all(&dir)
            .await
            .map_err(io_err(format!(
                "removing the partial rootfs {}",
                dir.display()
            )))?;
    }
    // The host's mirror for its own suite serves the other suites of the archive.
    let mirror = match &opts.mirror {
        Some(m) => m.clone(),
        None => apt_mirror(SUITE).ok_or_else(|| HarnessError::BuildPrerequisite {
            what: "a Debian mirror".into(),
            detail: format!(
                "no apt source for {SUITE} in /etc/apt/sources.list(.d); set GAUNTLET_DEBIAN_MIRROR"
            ),
        })?,
    };
    let log = opts.cache_dir.join(format!("build-{short}.log"));
    let t = Instant::now();
    progress.line(&format!(
        "{name}: debootstrap {suite} with {} packages (a few minutes; log: {})",
        r.packages.len(),
        log.display()
    ));
    if !on_path("debootstrap") {
        // A fresh machine: take debootstrap from Debian's packages (we are root here).
        progress.line(&format!("{name}: installing debootstrap (apt-get)"));
        run_logged("apt-get", &["update", "-q"], &[], &log, progress).await?;
        run_logged(
            "apt-get",
            &["install", "-y", "-q", "debootstrap"],
            &[("DEBIAN_FRONTEND", "noninteractive")],
            &log,
            progress,
        )
        .await?;
    }
    let dir_s = dir.to_string_lossy().into_owned();
    let include = format!("--include={}", r.packages.join(","));
    run_logged(
        "debootstrap",
        &["--variant=minbase", &include, suite, &dir_s, &mirror],
        &[],
        &log,
        progress,
    )
    .await?;
    progress.line(&format!(
        "{name}: debootstrap done in {:.0}s",
        t.elapsed().as_secs_f64()
    ));

    // The chroot reaches PyPI through the host's network, resolver and CA bundle.
    let t = Instant::now();
    progress.line(&format!("{name}: adding {}", r.adds));
    copy_into(Path::new("/etc/resolv.conf"), &dir.join("etc/resolv.conf")).await?;
    let host_ca = Path::new("/etc/ssl/certs/ca-certificates.crt");
    let mut env = vec![
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_string(),
        "HOME=/root".to_string(),
        "PIP_DISABLE_PIP_VERSION_CHECK=1".to_string(),
        "PIP_DEFAULT_TIMEOUT=180".to_string(),
    ];
    if host_ca.exists() {
        copy_into(host_ca, &dir.join("tmp/gauntlet-host-ca.crt")).await?;
        env.push("PIP_CERT=/tmp/gauntlet-host-ca.crt".to_string());
    }
    for key in ["PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST"] {
        if let Ok(v) = std::env::var(key) {
            env.push(format!("{key}={v}"));
        }
    }
    let mut args = vec![dir_s.clone(), "/usr/bin/env".into(), "-i".into()];
    args.extend(env);
    args.extend(["sh".into(), "-c".into(), r.script.into()]);
    let args_ref: Vec<&str> = args.iter().map(String::as_str).collect();
    run_logged("chroot", &args_ref, &[], &log, progress).await?;
    let _ = tokio::fs::remove_file(dir.join("tmp/gauntlet-host-ca.crt")).await;
    tokio::fs::write(dir.join("etc/resolv.conf"), "")
        .await
        .map_err(io_err("clearing the rootfs resolv.conf"))?;
    progress.line(&format!(
        "{name}: done in {:.0}s",
        t.elapsed().as_secs_f64()
    ));
    tokio::fs::write(&done, &hash)
        .await
        .map_err(io_err(format!("writing {}", done.display())))?;
    Ok(dir)
}

pub(super) async fn copy_into(from: &Path, to: &Path) -> Result<()> {
    // The target may be a dangling symlink inside the rootfs; replace it.
    let _ = tokio::fs::remove_file(to).await;
    tokio::fs::copy(from, to)
        .await
        .map(|_| ())
        .map_err(io_err(format!(
            "copying {} to {}",
            from.display(),
            to.display()
        )))
}

pub(super) fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// Whether `program` is found in a folder of PATH.
pub(super) fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
        || ["/usr/sbin", "/sbin"]
            .iter()
            .any(|d| Path::new(d).join(program).is_file())
}

/// Run a program with its output appended to `log`, printing a heartbeat with the
/// log's last line every 20 s; on failure, the error carries the log's tail.
pub(super) async fn run_logged(
    program: &str,
    args: &[&str],
    env: &[(&str, &str)],
    log: &Path,
    progress: &dyn Progress,
) -> Result<()> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(io_err(format!("opening {}", log.display())))?;
    let file2 = file
        .try_clone()
        .map_err(io_err(format!("opening {}", log.display())))?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(file2)
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().map_err(|e| HarnessError::BuildPrerequisite {
        what: program.to_string(),
        detail: format!("cannot start it: {e}"),
    })?;
    let started = Instant::now();
    let status = loop {
        match tokio::time::timeout(Duration::from_secs(20), child.wait()).await {
            Ok(r) => break r.map_err(io_err(format!("waiting for {program}")))?,
            Err(_) => progress.line(&format!(
                "  {program}: {:.0}s, {}",
                started.elapsed().as_secs_f64(),
                last_line(log)
            )),
        }
    };
    if status.success() {
        Ok(())
    } else {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        Err(HarnessError::BuildStep {
            step: program.to_string(),
            detail: format!("{status}; last lines:\n{}", tail.join("\n")),
            log: log.to_path_buf(),
        })
    }
}

pub(super) fn last_line(log: &Path) -> String {
    std::fs::read_to_string(log)
        .ok()
        .and_then(|s| {
            s.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::to_string)
        })
        .unwrap_or_default()
}

/// The Debian mirror the host's apt uses for `suite` (first match), from
/// /etc/apt/sources.list and /etc/apt/sources.list.d/ (one-line and deb822 forms).
pub fn apt_mirror(suite: &str) -> Option<String> {
    let mut files = vec![PathBuf::from("/etc/apt/sources.list")];
    if let Ok(rd) = std::fs::read_dir("/etc/apt/sources.list.d") {
        let mut more: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        more.sort();
        files.extend(more);
    }
    files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .find_map(|text| mirror_in(&text, suite))
}

/// The first `deb` source for `suite` with component `main` in one sources file.
pub fn mirror_in(text: &str, suite: &str) -> Option<String> {
    // One-line form: deb [opts] URI SUITE COMPONENTS...
    for line in text.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("deb ") else {
            continue;
        };
        let mut rest = rest.trim();
        if rest.starts_with('[') {
            rest = rest.split_once(']').map_or("", |(_, r)| r.trim());
        }
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() >= 3 && fields[1] == suite && fields[2..].contains(&"main") {
            return Some(fields[0].to_string());
        }
    }
    // deb822 form: stanzas separated by blank lines.
    for stanza in text.split("\n\n") {
        let mut uris = None;
        let mut suites = Vec::new();
        let mut types_deb = false;
        let mut main = false;
        for line in stanza.lines() {
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            match k.trim().to_ascii_lowercase().as_str() {
                "types" => types_deb = v.split_whitespace().any(|t| t == "deb"),
                "uris" => uris = v.split_whitespace().next().map(str::to_string),
                "suites" => suites = v.split_whitespace().map(str::to_string).collect(),
                "components" => main = v.split_whitespace().any(|c| c == "main"),
                _ => {}
            }
        }
        if types_deb && main && suites.iter().any(|s| s == suite) {
            if let Some(u) = uris {
                return Some(u);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirror_from_one_line_sources() {
        let text =
            "# comment\ndeb [arch=amd64] http://mirror.example/debian bookworm main contrib\n";
        assert_eq!(
            mirror_in(text, "bookworm").as_deref(),
            Some("http://mirror.example/debian")
        );
        assert_eq!(mirror_in(text, "trixie"), None);
    }

    #[test]
    fn mirror_from_deb822_sources_skips_other_suites() {
        let text = "Types: deb\nURIs: http://a.example/debian-security\nSuites: bookworm-security\nComponents: main\n\n\
                    Types: deb\nURIs: http://b.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n";
        assert_eq!(
            mirror_in(text, "bookworm").as_deref(),
            Some("http://b.example/debian")
        );
    }
}
