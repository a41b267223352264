//! The images imported whole from a rootfs: the broker images' base
//! (`gauntlet/base`), the Kafka cluster's storage node (`gauntlet/postgres`)
//! and the SSH test hosts (`gauntlet/sshhost`).
//!
//! May import: `images::{rootfs, options, engine, debootstrap}`, `broker`, `error`.
use super::debootstrap::ensure_rootfs;
use super::engine::{image_id, image_recipe, import_rootfs, remove_replaced};
use super::options::{BuildOptions, ImageStatus, Progress};
use super::rootfs::{
    base_hash, base_image, rootfs_hash, ssh_host_image, storage_image, Rootfs, BASE_ROOTFS,
    SSH_HOST_ROOTFS, STORAGE_ROOTFS,
};
use crate::broker::BrokerKind;
use crate::error::Result;
use bollard::Docker;
use std::time::Instant;

/// Makes sure the storage node's image exists (debootstrap of trixie with
/// PostgreSQL 17, cached, imported as [`storage_image`]).
pub async fn ensure_storage_image(
    docker: &Docker,
    opts: &BuildOptions,
    progress: &dyn Progress,
) -> Result<ImageStatus> {
    ensure_rootfs_image(docker, &STORAGE_ROOTFS, storage_image(), opts, progress).await
}

/// Makes sure [`ssh_host_image`] exists (debootstrap, cached, imported).
pub async fn ensure_ssh_host_image(
    docker: &Docker,
    opts: &BuildOptions,
    progress: &dyn Progress,
) -> Result<ImageStatus> {
    ensure_rootfs_image(docker, &SSH_HOST_ROOTFS, ssh_host_image(), opts, progress).await
}

/// Makes sure `image` exists as the import of `rootfs` (its recipe hash in the
/// label); debootstraps the rootfs when its cache is missing.
pub(super) async fn ensure_rootfs_image(
    docker: &Docker,
    rootfs: &Rootfs,
    image: String,
    opts: &BuildOptions,
    progress: &dyn Progress,
) -> Result<ImageStatus> {
    let hash = rootfs_hash(rootfs);
    // The status names the broker the image serves: Kafka for the storage node,
    // Redis for the SSH hosts (they run it).
    let broker = if rootfs.name == STORAGE_ROOTFS.name {
        BrokerKind::Kafka
    } else {
        BrokerKind::Redis
    };
    if let Some((label, size)) = image_recipe(docker, &image).await? {
        if label == hash && !opts.force {
            progress.line(&format!("{image}: present"));
            return Ok(ImageStatus {
                broker,
                image,
                cached: true,
                size,
            });
        }
    }
    let dir = ensure_rootfs(rootfs, opts, progress).await?;
    let t = Instant::now();
    progress.line(&format!("{image}: importing {}", dir.display()));
    import_rootfs(docker, &dir, &image, &hash).await?;
    let size = image_recipe(docker, &image).await?.map_or(0, |(_, s)| s);
    progress.line(&format!(
        "{image}: imported in {:.1}s ({} MB)",
        t.elapsed().as_secs_f64(),
        size / 1_000_000
    ));
    Ok(ImageStatus {
        broker,
        image,
        cached: false,
        size,
    })
}

pub(super) async fn ensure_base(
    docker: &Docker,
    opts: &BuildOptions,
    progress: &dyn Progress,
) -> Result<()> {
    let image = base_image();
    let hash = base_hash();
    if let Some((label, _)) = image_recipe(docker, &image).await? {
        if label == hash && !opts.force {
            progress.line(&format!("{image}: present"));
            return Ok(());
        }
    }
    let rootfs = ensure_rootfs(&BASE_ROOTFS, opts, progress).await?;
    let t = Instant::now();
    progress.line(&format!("{image}: importing {}", rootfs.display()));
    let old = image_id(docker, &image).await;
    import_rootfs(docker, &rootfs, &image, &hash).await?;
    remove_replaced(docker, old, &image).await;
    progress.line(&format!(
        "{image}: imported in {:.1}s",
        t.elapsed().as_secs_f64()
    ));
    Ok(())
}
