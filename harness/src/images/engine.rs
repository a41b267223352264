//! What the image builder asks of the Docker Engine: an image's recipe label
//! and id, importing a rootfs as an image, removing the image a rebuild
//! replaced, and a one-file tar to add a binary to a container.
//!
//! May import: `images::{rootfs, options}` (the recipe label, progress),
//! `machine_lock`, `error`.
use super::options::Progress;
use super::rootfs::LABEL_RECIPE;
use crate::error::{docker_err, io_err, HarnessError, Result};
use crate::machine_lock::MachineLock;
use bollard::query_parameters::CreateImageOptions;
use bollard::Docker;
use bytes::Bytes;
use futures_util::StreamExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::io::AsyncReadExt;

/// The name of the machine lock held while images are built.
pub(super) const IMAGES_LOCK: &str = "images";

/// Takes the machine's image lock: one process builds what is missing while
/// the others that need it wait, then find it built. Says so when it waits.
pub(super) async fn build_lock(progress: &dyn Progress) -> Result<MachineLock> {
    let t = std::time::Instant::now();
    let mut waited = false;
    let lock = MachineLock::acquire_or_tell(IMAGES_LOCK, |path| {
        waited = true;
        progress.line(&format!(
            "another Gauntlet process is building images; waiting for it (lock {})",
            path.display()
        ));
    })
    .await?;
    if waited {
        progress.line(&format!(
            "the other build ended after {:.0}s",
            t.elapsed().as_secs_f64()
        ));
    }
    Ok(lock)
}

/// Recipe label of an image, `None` when the image is missing.
pub(super) async fn image_recipe(docker: &Docker, image: &str) -> Result<Option<(String, i64)>> {
    match docker.inspect_image(image).await {
        Ok(i) => {
            let label = i
                .config
                .and_then(|c| c.labels)
                .and_then(|l| l.get(LABEL_RECIPE).cloned())
                .unwrap_or_default();
            Ok(Some((label, i.size.unwrap_or(0))))
        }
        Err(e) if crate::error::is_not_found(&e) => Ok(None),
        Err(e) => Err(docker_err(format!("inspecting image {image}"))(e)),
    }
}

pub(super) async fn image_id(docker: &Docker, image: &str) -> Option<String> {
    docker.inspect_image(image).await.ok().and_then(|i| i.id)
}

/// Remove the image a rebuild replaced (now untagged), unless a container still
/// uses it; best effort, so that rebuilds do not pile up 400 MB images.
pub(super) async fn remove_replaced(docker: &Docker, old: Option<String>, image: &str) {
    let Some(old) = old else { return };
    if image_id(docker, image).await.as_deref() == Some(old.as_str()) {
        return;
    }
    let _ = docker
        .remove_image(
            &old,
            None::<bollard::query_parameters::RemoveImageOptions>,
            None,
        )
        .await;
}

/// `tar -C rootfs -c . | docker import`, streamed, with no copy on disk.
pub(super) async fn import_rootfs(
    docker: &Docker,
    rootfs: &Path,
    image: &str,
    hash: &str,
) -> Result<()> {
    let mut child = tokio::process::Command::new("tar")
        .arg("--numeric-owner")
        .arg("-C")
        .arg(rootfs)
        .args(["-c", "."])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| HarnessError::BuildPrerequisite {
            what: "tar".into(),
            detail: format!("cannot start it: {e}"),
        })?;
    let stdout = child.stdout.take().ok_or_else(|| HarnessError::Io {
        what: "reading tar's output".into(),
        source: std::io::Error::other("no stdout"),
    })?;
    let body = futures_util::stream::unfold(stdout, |mut out| async move {
        let mut buf = vec![0u8; 1 << 20];
        match out.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(Bytes::from(buf)), out))
            }
            Err(e) => Some((Err(e), out)),
        }
    });
    let (repo, tag) = image.split_once(':').unwrap_or((image, "latest"));
    let opts = CreateImageOptions {
        from_src: Some("-".into()),
        repo: Some(repo.into()),
        tag: Some(tag.into()),
        changes: vec![format!("LABEL {LABEL_RECIPE}={hash}")],
        ..Default::default()
    };
    let mut stream = docker.create_image(Some(opts), Some(bollard::body_try_stream(body)), None);
    while let Some(item) = stream.next().await {
        item.map_err(docker_err(format!("importing {image}")))?;
    }
    let out = child
        .wait_with_output()
        .await
        .map_err(io_err("waiting for tar"))?;
    if !out.status.success() {
        return Err(HarnessError::BuildStep {
            step: "tar".into(),
            detail: String::from_utf8_lossy(&out.stderr).into_owned(),
            log: rootfs.to_path_buf(),
        });
    }
    Ok(())
}

/// One file in a tar archive (ustar), mode 0755, owned by root, and the two
/// zero blocks that end the archive: enough to add a binary to an image.
pub fn tar_one_file(path: &str, data: &[u8]) -> Result<Vec<u8>> {
    if path.len() > 99 {
        return Err(HarnessError::BuildStep {
            step: "tar".into(),
            detail: format!("path too long for a plain tar header: {path}"),
            log: PathBuf::new(),
        });
    }
    let mut h = [0u8; 512];
    h[..path.len()].copy_from_slice(path.as_bytes());
    let mut field = |at: usize, width: usize, text: &str| {
        let b = text.as_bytes();
        h[at..at + b.len().min(width)].copy_from_slice(&b[..b.len().min(width)]);
    };
    field(100, 8, "0000755\0");
    field(108, 8, "0000000\0");
    field(116, 8, "0000000\0");
    field(124, 12, &format!("{:011o}\0", data.len()));
    field(136, 12, &format!("{:011o}\0", 0));
    field(156, 1, "0");
    field(257, 6, "ustar\0");
    field(263, 2, "00");
    // The checksum is computed with its own field as spaces.
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    let mut out = Vec::with_capacity(512 + data.len() + 1536);
    out.extend_from_slice(&h);
    out.extend_from_slice(data);
    out.resize(out.len().div_ceil(512) * 512, 0);
    out.resize(out.len() + 1024, 0);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_file_tar_lists_and_extracts_with_tar() {
        let data: Vec<u8> = (0..1500u32).map(|i| (i % 251) as u8).collect();
        let t = tar_one_file("usr/local/bin/tansu-pg", &data).expect("tar");
        assert_eq!(t.len() % 512, 0);
        assert_eq!(t.len(), 512 + 1536 + 1024);
        let dir = std::env::temp_dir().join(format!("gauntlet-tar-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(dir.join("one.tar"), &t).expect("write");
        let out = std::process::Command::new("tar")
            .args(["-xvf", "one.tar"])
            .current_dir(&dir)
            .output()
            .expect("tar");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let back = std::fs::read(dir.join("usr/local/bin/tansu-pg")).expect("extracted");
        assert_eq!(back, data);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("usr/local/bin/tansu-pg"))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(tar_one_file(&"x".repeat(100), b"").is_err());
    }
}
