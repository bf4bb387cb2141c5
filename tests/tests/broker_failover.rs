//! Real 3-node cluster: routing follows a partition's leader after the old leader is
//! killed (kill -9 through the rig), and the node is restarted afterwards.

use std::process::Command;
use std::time::{Duration, Instant};

use kafka_blocking::BlockingClient;
use kafka_core::cluster::Route;
use kafka_core::config::ClientConfig;
use kafka_core::protocol::messages::create_topics::request::CreatableTopic;
use kafka_core::protocol::messages::create_topics::CreateTopicsRequest;
use kafka_core::protocol::messages::list_offsets::request::{
    ListOffsetsPartition, ListOffsetsTopic,
};
use kafka_core::protocol::messages::list_offsets::ListOffsetsRequest;
use kafka_core::protocol::messages::metadata::request::MetadataRequestTopic;
use kafka_core::protocol::messages::metadata::MetadataRequest;
use kafka_core::protocol::KafkaCode;
use kafka_tests::{cluster_or_skip, rig_var};

fn rig(args: &[&str]) {
    let rig = concat!(env!("CARGO_MANIFEST_DIR"), "/broker/rig");
    let status = Command::new(rig).args(args).status().expect("run rig");
    assert!(status.success(), "rig {args:?} failed");
}

/// The cached leader of partition 0 of `topic`.
fn leader(c: &BlockingClient, topic: &str) -> Option<i32> {
    let t = topic.to_string();
    c.with_core(move |core| core.metadata().leader(&t, 0))
        .expect("driver")
}

fn leader_of(c: &mut BlockingClient, topic: &str) -> Option<i32> {
    let req = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some(topic.into()),
            ..Default::default()
        }]),
        allow_auto_topic_creation: false,
        ..Default::default()
    };
    let m = c.call(Route::Any, req).ok()?;
    let p = m.topics.first()?.partitions.first()?;
    (p.error_code == 0 && p.leader_id >= 0).then_some(p.leader_id)
}

fn list_offsets(topic: &str) -> ListOffsetsRequest {
    ListOffsetsRequest {
        replica_id: -1,
        topics: vec![ListOffsetsTopic {
            name: topic.into(),
            partitions: vec![ListOffsetsPartition {
                partition_index: 0,
                timestamp: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn routing_follows_the_leader_after_it_is_killed() {
    let Some(_) = cluster_or_skip("routing_follows_the_leader_after_it_is_killed") else {
        return;
    };
    let bootstrap = rig_var("KAFKA_CLUSTER_BOOTSTRAP").unwrap();
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap.as_str()),
        ("reconnect.backoff.max.ms", "500"),
    ])
    .unwrap();
    let mut c = BlockingClient::new(config).unwrap();
    let topic = format!("failover-{}", std::process::id());
    let create = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: topic.clone(),
            num_partitions: 1,
            replication_factor: 3,
            ..Default::default()
        }],
        timeout_ms: 30_000,
        ..Default::default()
    };
    let resp = c.call(Route::Controller, create).expect("create");
    assert_eq!(KafkaCode(resp.topics[0].error_code), KafkaCode::NONE);
    let deadline = Instant::now() + Duration::from_secs(30);
    let old = loop {
        if let Some(l) = leader_of(&mut c, &topic) {
            break l;
        }
        assert!(Instant::now() < deadline, "no leader for {topic}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let route = Route::Leader {
        topic: topic.clone(),
        partition: 0,
    };
    // Right after creation the leader may not serve the partition yet
    // (NOT_LEADER_OR_FOLLOWER): retry until it does.
    let ready = Instant::now() + Duration::from_secs(30);
    let old = loop {
        let first = c
            .call(route.clone(), list_offsets(&topic))
            .expect("list offsets on the leader");
        let code = KafkaCode(first.topics[0].partitions[0].error_code);
        if code == KafkaCode::NONE {
            break leader(&c, &topic).unwrap_or(old);
        }
        assert!(
            code.is_retriable() && Instant::now() < ready,
            "partition never became ready: {code}"
        );
        let t = topic.clone();
        c.with_core(move |core| core.invalidate_leader(Instant::now(), &t, 0))
            .expect("driver");
        std::thread::sleep(Duration::from_millis(200));
    };

    rig(&["kill", &old.to_string()]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let new = loop {
        let outcome = c.call(route.clone(), list_offsets(&topic));
        eprintln!(
            "after kill: {:?} leader {:?}",
            outcome
                .as_ref()
                .map(|r| r.topics[0].partitions[0].error_code),
            leader(&c, &topic)
        );
        match outcome {
            Ok(r) if r.topics[0].partitions[0].error_code == 0 => {
                let leader = leader(&c, &topic);
                if leader.is_some_and(|l| l != old) {
                    break leader.unwrap();
                }
            }
            Ok(r) => {
                // NOT_LEADER_OR_FOLLOWER and friends: forget the leader and look again.
                let code = KafkaCode(r.topics[0].partitions[0].error_code);
                assert!(code.is_retriable(), "unexpected {code}");
                let t = topic.clone();
                c.with_core(move |core| core.invalidate_leader(Instant::now(), &t, 0))
                    .expect("driver");
            }
            Err(_) => {}
        }
        assert!(
            Instant::now() < deadline,
            "routing never moved off the killed leader {old}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_ne!(new, old);
    rig(&["restart", &old.to_string()]);
}
