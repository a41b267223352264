//! Gauntlet's own broker images, built with no registry: one Debian rootfs made by
//! debootstrap (cached on disk), imported once as `gauntlet/base:<hash>`, and one
//! small image per broker, `gauntlet/<broker>:<version>`, built FROM it locally.
//!
//! Every image carries the label `gauntlet.recipe=<hash of its recipe>`; an image
//! whose label matches is reused, so a second build with everything present only
//! inspects images and takes a second or two.
//!
//! One file per concern: [`rootfs`] (what the images are made of, as data),
//! [`options`] (build options, progress, status), [`debootstrap`] (making a
//! rootfs), [`engine`] (the Docker Engine calls), [`base`] (images imported
//! whole from a rootfs: the base, the storage node's, the SSH hosts'),
//! [`tansu`] (the PostgreSQL build of tansu) and [`brokers`] (each broker's
//! image). This file only declares them and re-exports their public names.
//!
//! May import (the whole module): `broker`, `brokers` (from [`brokers`] only),
//! `error` and the labels; never a backend or the run pipeline.
pub mod base;
pub mod brokers;
pub mod debootstrap;
pub mod engine;
pub mod options;
pub mod rootfs;
pub mod tansu;

pub use base::{ensure_ssh_host_image, ensure_storage_image};
pub use brokers::{broker_hash, broker_tags, ensure_images, image_config, ImageConfig};
pub use debootstrap::{apt_mirror, mirror_in};
pub use engine::tar_one_file;
pub use options::{default_cache_dir, BuildOptions, ImageStatus, Progress, SharedProgress};
pub use rootfs::{
    base_hash, base_image, rootfs_hash, ssh_host_image, storage_image, Rootfs, BASE_ROOTFS,
    LABEL_RECIPE, PACKAGES, PG_BIN, SSH_HOST_ROOTFS, STORAGE_ROOTFS, SUITE,
};
pub use tansu::{ensure_tansu_pg, max_glibc, TANSU_PG_FEATURES, TANSU_PG_PATH, TANSU_PG_VERSION};
