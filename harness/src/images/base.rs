//! The images imported whole from a rootfs: the broker images' base
//! (`gauntlet/base`), the Kafka cluster's storage node (`gauntlet/postgres`)
//! and the SSH test hosts (`gauntlet/sshhost`).
//!
//! May import: `images::{rootfs, options, engine, debootstrap}`, `broker`, `error`.
use super::debootstrap::ensure_rootfs;
use super::engine::{build_lock, image_id, image_recipe, import_rootfs, remove_replaced};
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
/// PostgreSQL 17, cached, imported as [`storage_image`]). A build takes the
/// machine's image lock: several processes that find it missing build it once.
pub async fn ensure_storage_image(
    docker: &Docker,
    opts: &BuildOptions,
    progress: &dyn Progress,
) -> Result<ImageStatus> {
    ensure_rootfs_image_locking(docker, &STORAGE_ROOTFS, storage_image(), opts, progress).await
}

/// Makes sure [`ssh_host_image`] exists (debootstrap, cached, imported), under
/// the machine's image lock when it must be built.
pub async fn ensure_ssh_host_image(
    docker: &Docker,
    opts: &BuildOptions,
    progress: &dyn Progress,
) -> Result<ImageStatus> {
    ensure_rootfs_image_locking(docker, &SSH_HOST_ROOTFS, ssh_host_image(), opts, progress).await
}

/// [`ensure_rootfs_image`] for a caller that does not hold the image lock:
/// an image present with its recipe is reported at once; one that must be
/// built is looked at again under the lock (another process may have built
/// it meanwhile).
async fn ensure_rootfs_image_locking(
    docker: &Docker,
    rootfs: &Rootfs,
    image: String,
    opts: &BuildOptions,
    progress: &dyn Progress,
) -> Result<ImageStatus> {
    if let Some(status) = rootfs_image_present(docker, rootfs, &image, opts).await? {
        progress.line(&format!("{image}: present"));
        return Ok(status);
    }
    let _lock = build_lock(progress).await?;
    ensure_rootfs_image(docker, rootfs, image, opts, progress).await
}

/// The status of `image` when it is there with the recipe of `rootfs` (and no
/// rebuild is forced).
pub(super) async fn rootfs_image_present(
    docker: &Docker,
    rootfs: &Rootfs,
    image: &str,
    opts: &BuildOptions,
) -> Result<Option<ImageStatus>> {
    let broker = served_broker(rootfs);
    Ok(match image_recipe(docker, image).await? {
        Some((label, size)) if label == rootfs_hash(rootfs) && !opts.force => Some(ImageStatus {
            broker,
            image: image.to_string(),
            cached: true,
            size,
        }),
        _ => None,
    })
}

/// The broker an image imported from `rootfs` serves, as its status names it:
/// Kafka for the storage node, Redis for the SSH hosts (they run it).
fn served_broker(rootfs: &Rootfs) -> BrokerKind {
    if rootfs.name == STORAGE_ROOTFS.name {
        BrokerKind::Kafka
    } else {
        BrokerKind::Redis
    }
}

/// Makes sure `image` exists as the import of `rootfs` (its recipe hash in the
/// label); debootstraps the rootfs when its cache is missing. The caller holds
/// the image lock ([`build_lock`]).
pub(super) async fn ensure_rootfs_image(
    docker: &Docker,
    rootfs: &Rootfs,
    image: String,
    opts: &BuildOptions,
    progress: &dyn Progress,
) -> Result<ImageStatus> {
    if let Some(status) = rootfs_image_present(docker, rootfs, &image, opts).await? {
        progress.line(&format!("{image}: present"));
        return Ok(status);
    }
    let hash = rootfs_hash(rootfs);
    let broker = served_broker(rootfs);
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

/// The base of the broker images; the caller holds the image lock.
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
