//! tansu with its PostgreSQL storage engine, built from crates.io with the
//! host's cargo and cached, for the Kafka image; and the check that the
//! binary asks for no newer glibc than the image has.
//!
//! May import: `images::{rootfs, options, debootstrap}`, `error`.
use super::debootstrap::{on_path, run_logged};
use super::options::{BuildOptions, Progress};
use super::rootfs::SUITE;
use crate::error::{io_err, HarnessError, Result};
use std::path::PathBuf;
use std::time::Instant;

/// tansu with its PostgreSQL storage engine, built from crates.io with the host's
/// cargo (`cargo install`), cached under the cache directory, and copied into the
/// Kafka image as `/usr/local/bin/tansu-pg`.
pub const TANSU_PG_VERSION: &str = "0.6.0";
/// Cargo features of that build (only the PostgreSQL engine).
pub const TANSU_PG_FEATURES: &str = "postgres";
/// Where the image has it.
pub const TANSU_PG_PATH: &str = "usr/local/bin/tansu-pg";
/// The newest glibc the base rootfs (Debian bookworm) has: a host-built binary
/// must ask for no newer symbol version.
pub(super) const IMAGE_GLIBC: (u32, u32) = (2, 36);

/// The highest `GLIBC_2.N` symbol version a binary asks for.
pub fn max_glibc(binary: &[u8]) -> Option<(u32, u32)> {
    let pat = b"GLIBC_2.";
    let mut best = None;
    let mut i = 0;
    while let Some(p) = binary[i..].windows(pat.len()).position(|w| w == pat) {
        let start = i + p + pat.len();
        let digits: Vec<u8> = binary[start..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .copied()
            .collect();
        if let Ok(minor) = String::from_utf8_lossy(&digits).parse::<u32>() {
            best = best.max(Some((2, minor)));
        }
        i = start;
    }
    best
}

/// The cached PostgreSQL build of tansu ([`TANSU_PG_VERSION`]), built with the
/// host's cargo when missing (the longest step of a fresh set-up: about 8 minutes
/// on 2 cores), at low CPU priority, logged to `tansu-build.log` in the cache.
pub async fn ensure_tansu_pg(opts: &BuildOptions, progress: &dyn Progress) -> Result<PathBuf> {
    let dir = opts.cache_dir.join("tansu");
    let root = dir.join(format!("{TANSU_PG_VERSION}-{TANSU_PG_FEATURES}"));
    let bin = root.join("bin/tansu");
    if !bin.is_file() || opts.force {
        tokio::fs::create_dir_all(&dir)
            .await
            .map_err(io_err(format!("creating {}", dir.display())))?;
        if !on_path("cargo") {
            return Err(HarnessError::BuildPrerequisite {
                what: "cargo".into(),
                detail: format!(
                    "the Kafka image's tansu {TANSU_PG_VERSION} (PostgreSQL storage) is built \
                     from crates.io with cargo, which is not on PATH"
                ),
            });
        }
        let log = dir.join("tansu-build.log");
        let t = Instant::now();
        progress.line(&format!(
            "tansu {TANSU_PG_VERSION} (PostgreSQL storage): cargo install from crates.io, \
             about 8 minutes on 2 cores the first time (log: {})",
            log.display()
        ));
        let root_s = root.to_string_lossy().into_owned();
        let target = dir.join("target").to_string_lossy().into_owned();
        // Without --locked the build fails on a newer deadpool release.
        run_logged(
            "nice",
            &[
                "-n",
                "10",
                "cargo",
                "install",
                "tansu",
                "--locked",
                "--version",
                TANSU_PG_VERSION,
                "--no-default-features",
                "--features",
                TANSU_PG_FEATURES,
                "--root",
                &root_s,
            ],
            &[("CARGO_TARGET_DIR", &target)],
            &log,
            progress,
        )
        .await?;
        progress.line(&format!(
            "tansu {TANSU_PG_VERSION}: built in {:.0}s",
            t.elapsed().as_secs_f64()
        ));
    }
    let data = tokio::fs::read(&bin)
        .await
        .map_err(io_err(format!("reading {}", bin.display())))?;
    if let Some(v) = max_glibc(&data) {
        if v > IMAGE_GLIBC {
            return Err(HarnessError::BuildPrerequisite {
                what: format!(
                    "glibc {}.{} at most on the host",
                    IMAGE_GLIBC.0, IMAGE_GLIBC.1
                ),
                detail: format!(
                    "{} asks for glibc {}.{}, newer than the image's ({SUITE}); build on a \
                     {SUITE} host or remove it to rebuild",
                    bin.display(),
                    v.0,
                    v.1
                ),
            });
        }
    }
    Ok(bin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_glibc_a_binary_asks_for() {
        let bin = b"\0GLIBC_2.2.5\0GLIBC_2.34\0GLIBC_2.17\0libc.so.6\0GLIBC_PRIVATE\0";
        assert_eq!(max_glibc(bin), Some((2, 34)));
        assert_eq!(max_glibc(b"static, no versions"), None);
        assert!(max_glibc(b"GLIBC_2.38") > Some(IMAGE_GLIBC));
    }
}
