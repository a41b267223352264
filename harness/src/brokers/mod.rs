//! One cluster recipe per broker, and [`BrokerExt`]: which recipe and which
//! local image each [`BrokerKind`] has.
//!
//! May import: `broker` (the recipe's types), `images::rootfs` (the names of
//! the images a recipe runs, as data), `error`. Never the image builder, a
//! backend or the run pipeline (tests may use `backend::ClusterSpec`).
pub mod kafka;
pub mod kafka_official;
pub mod nats;
pub mod rabbitmq;
pub mod redis;
pub mod sqs;

use crate::broker::{BrokerExt, BrokerKind, Recipe};

impl BrokerExt for BrokerKind {
    fn recipe(self) -> &'static dyn Recipe {
        match self {
            BrokerKind::RabbitMq => &rabbitmq::RabbitMq,
            BrokerKind::Nats => &nats::Nats,
            BrokerKind::Redis => &redis::Redis,
            BrokerKind::Kafka => &kafka::Tansu,
            BrokerKind::Sqs => &sqs::Moto,
        }
    }

    fn default_image(self) -> String {
        format!("gauntlet/{}:{}", self.name(), self.recipe().version())
    }
}

#[cfg(test)]
mod tests {
    use crate::broker::{BrokerExt, BrokerKind, RoleProbe};
    use gauntlet_nemesis::Role;

    fn probe(kind: BrokerKind) -> Option<RoleProbe> {
        kind.recipe().role_probe(Role::Leader)
    }

    #[test]
    fn role_probes_read_what_the_brokers_print() {
        let rabbit = probe(BrokerKind::RabbitMq).expect("rabbitmq names its leader");
        assert_eq!(
            (rabbit.parse)(
                "n1",
                "gauntlet.g1\tquorum\trabbit@n2\t<rabbit@n2.1764740000.456.0>\n"
            )
            .as_deref(),
            Some("n2")
        );
        assert_eq!(
            (rabbit.parse)(
                "n1",
                "gauntlet.g1\tclassic\t\t<rabbit@n3.1764740000.789.0>\n"
            )
            .as_deref(),
            Some("n3")
        );
        assert_eq!((rabbit.parse)("n1", ""), None);

        let nats = probe(BrokerKind::Nats).expect("nats names its stream leader");
        assert_eq!((nats.parse)("n1", "\nn3\n").as_deref(), Some("n3"));
        assert_eq!((nats.parse)("n1", "\n"), None);

        let redis = probe(BrokerKind::Redis).expect("redis names its primary");
        let master = "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n";
        let replica = "# Replication\r\nrole:slave\r\nmaster_host:n1\r\n";
        assert_eq!((redis.parse)("n2", master).as_deref(), Some("n2"));
        assert_eq!((redis.parse)("n2", replica), None);

        // One-node brokers with no notion of a leader say so.
        assert!(probe(BrokerKind::Kafka).is_none());
        assert!(probe(BrokerKind::Sqs).is_none());

        // Kafka names its coordinators (FindCoordinator); the others have none.
        for role in [Role::GroupCoordinator, Role::TxnCoordinator] {
            let kafka = BrokerKind::Kafka
                .recipe()
                .role_probe(role)
                .expect("kafka names its coordinators");
            assert_eq!(
                (kafka.parse)("n1", "19092 2 n2 19092\n").as_deref(),
                Some("n2")
            );
            assert_eq!(
                (kafka.parse)("n1", "9092 0 127.0.0.1 39112\n").as_deref(),
                Some("n1")
            );
            assert_eq!((kafka.parse)("n1", ""), None);
            for kind in [
                BrokerKind::RabbitMq,
                BrokerKind::Nats,
                BrokerKind::Redis,
                BrokerKind::Sqs,
            ] {
                assert!(kind.recipe().role_probe(role).is_none(), "{kind:?} {role}");
            }
        }
    }
}
