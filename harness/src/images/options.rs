//! How a build is asked for and what it reports: [`BuildOptions`], the
//! [`Progress`] lines (and [`SharedProgress`], one that a `ClusterSpec` can carry), and the
//! [`ImageStatus`] of each image made sure of.
//!
//! May import: `broker` (the broker an image is for).
use crate::broker::BrokerKind;
use std::path::PathBuf;

/// Reports what a build is doing; one line per call.
pub trait Progress: Send + Sync {
    /// One line of progress, without a newline.
    fn line(&self, line: &str);
}

/// A [`Progress`] that can be kept and cloned (a `ClusterSpec` carries one, to
/// tell of an image it builds); the default drops every line.
#[derive(Clone, Default)]
pub struct SharedProgress(Option<std::sync::Arc<dyn Progress>>);

impl SharedProgress {
    /// Lines go to `p`.
    pub fn new(p: impl Progress + 'static) -> SharedProgress {
        SharedProgress(Some(std::sync::Arc::new(p)))
    }
}

impl std::fmt::Debug for SharedProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedProgress")
    }
}

impl Progress for SharedProgress {
    fn line(&self, line: &str) {
        if let Some(p) = &self.0 {
            p.line(line);
        }
    }
}

/// Where and how to build.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// Cache of rootfs trees and build logs (outside the repository).
    pub cache_dir: PathBuf,
    /// Debian mirror for debootstrap; read from the host's apt sources when `None`.
    pub mirror: Option<String>,
    /// Rebuild even when images with the right recipe exist.
    pub force: bool,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            cache_dir: default_cache_dir(),
            mirror: std::env::var("GAUNTLET_DEBIAN_MIRROR").ok(),
            force: false,
        }
    }
}

/// `$GAUNTLET_CACHE_DIR`, else `$XDG_CACHE_HOME/gauntlet`, else `~/.cache/gauntlet`.
pub fn default_cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("GAUNTLET_CACHE_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("gauntlet");
    }
    match std::env::var_os("HOME") {
        Some(h) => PathBuf::from(h).join(".cache/gauntlet"),
        None => PathBuf::from("/var/cache/gauntlet"),
    }
}

/// One image that [`crate::images::ensure_images`] made sure of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageStatus {
    /// The broker the image is for (Kafka for its storage node's image).
    pub broker: BrokerKind,
    /// The image's name and tag.
    pub image: String,
    /// It was there already with the right recipe.
    pub cached: bool,
    /// Size in bytes as Docker reports it.
    pub size: i64,
}
