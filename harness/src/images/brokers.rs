//! Each broker's image: its configuration ([`image_config`]), its recipe hash,
//! its tags, and the build that commits it FROM the base ([`ensure_images`]
//! makes sure of all of them, the base and the tansu build under them).
//!
//! May import: `images::{rootfs, options, engine, base, tansu}`, `broker`,
//! `brokers` (the recipes: each image's version, the Kafka memory build's
//! name), `error` and the labels. No recipe imports this file.
use super::base::{ensure_base, ensure_rootfs_image, rootfs_image_present};
use super::engine::{build_lock, image_id, image_recipe, remove_replaced, tar_one_file};
use super::options::{BuildOptions, ImageStatus, Progress};
use super::rootfs::{
    base_hash, base_image, sha, storage_image, LABEL_RECIPE, RECIPE_REVISION, STORAGE_ROOTFS,
};
use super::tansu::{ensure_tansu_pg, TANSU_PG_FEATURES, TANSU_PG_PATH, TANSU_PG_VERSION};
use crate::broker::{BrokerExt, BrokerKind};
use crate::error::{docker_err, io_err, Result};
use bollard::Docker;
use bytes::Bytes;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

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

pub(super) fn strings(v: &[&str]) -> Vec<String> {
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

/// Make sure Gauntlet's image of each broker exists with the current recipe; build
/// what is missing (and the base under it). Idempotent. A build takes the
/// machine's image lock, so that several processes that find an image missing
/// build it once: the first builds, the others wait and then find it present.
pub async fn ensure_images(
    docker: &Docker,
    brokers: &[BrokerKind],
    opts: &BuildOptions,
    progress: &dyn Progress,
) -> Result<Vec<ImageStatus>> {
    if let Some(all) = all_present(docker, brokers, opts).await? {
        for s in &all {
            progress.line(&present_line(s));
        }
        return Ok(all);
    }
    let _lock = build_lock(progress).await?;
    ensure_images_locked(docker, brokers, opts, progress).await
}

/// What the build says of an image it found: a broker's with its recipe.
fn present_line(s: &ImageStatus) -> String {
    if s.image == s.broker.default_image() {
        format!(
            "{}: present (recipe {})",
            s.image,
            &broker_hash(s.broker)[..12]
        )
    } else {
        format!("{}: present", s.image)
    }
}

/// Every image `brokers` need (the Kafka storage node's too), when all are
/// there with their recipes; `None` when one must be built.
async fn all_present(
    docker: &Docker,
    brokers: &[BrokerKind],
    opts: &BuildOptions,
) -> Result<Option<Vec<ImageStatus>>> {
    let mut out = Vec::new();
    if brokers.contains(&BrokerKind::Kafka) {
        match rootfs_image_present(docker, &STORAGE_ROOTFS, &storage_image(), opts).await? {
            Some(s) => out.push(s),
            None => return Ok(None),
        }
    }
    for &b in brokers {
        match broker_present(docker, b, opts).await? {
            Some(s) => out.push(s),
            None => return Ok(None),
        }
    }
    Ok(Some(out))
}

/// The status of Gauntlet's image of `b` when it is there with its recipe and
/// every tag (and no rebuild is forced).
async fn broker_present(
    docker: &Docker,
    b: BrokerKind,
    opts: &BuildOptions,
) -> Result<Option<ImageStatus>> {
    let image = b.default_image();
    // Every tag must be there (the memory build's name of the Kafka image too).
    let mut all_tagged = true;
    for tag in broker_tags(b).iter().skip(1) {
        if image_id(docker, tag).await != image_id(docker, &image).await {
            all_tagged = false;
        }
    }
    Ok(match image_recipe(docker, &image).await? {
        Some((label, size)) if label == broker_hash(b) && !opts.force && all_tagged => {
            Some(ImageStatus {
                broker: b,
                image,
                cached: true,
                size,
            })
        }
        _ => None,
    })
}

/// [`ensure_images`] under the image lock.
async fn ensure_images_locked(
    docker: &Docker,
    brokers: &[BrokerKind],
    opts: &BuildOptions,
    progress: &dyn Progress,
) -> Result<Vec<ImageStatus>> {
    let mut out = Vec::new();
    if brokers.contains(&BrokerKind::Kafka) {
        // The Kafka cluster's storage node has an image of its own.
        out.push(
            ensure_rootfs_image(docker, &STORAGE_ROOTFS, storage_image(), opts, progress).await?,
        );
    }
    let mut missing = Vec::new();
    for &b in brokers {
        match broker_present(docker, b, opts).await? {
            Some(status) => {
                progress.line(&present_line(&status));
                out.push(status);
            }
            None => missing.push(b),
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

/// Create a container from the base (never started), commit it with the broker's
/// configuration and labels, remove the container. One commit per image: on a
/// fuse-overlayfs engine a multi-step `docker build` takes minutes, this seconds.
pub(super) async fn build_broker_image(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::images::rootfs::{rootfs_hash, storage_image, STORAGE_ROOTFS};

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
