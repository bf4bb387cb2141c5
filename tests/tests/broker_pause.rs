//! Real 3-node cluster: admin calls follow the cluster while one node is paused
//! (SIGSTOP through the rig). The paused node keeps its sockets open and answers nothing,
//! so the client only learns of it when a request to it times out; from then on the
//! leader- and controller-routed calls must move to the other nodes instead of going back
//! to the paused one until their `default.api.timeout.ms` deadline.
//!
//! The node stays paused for the whole measurement, so every call that completes did so
//! without it.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use kafka_blocking::Admin;
use kafka_core::admin::{AdminError, NewTopic, OffsetSpec, TopicPartition};
use kafka_core::config::ClientConfig;
use kafka_core::protocol::KafkaCode;
use kafka_tests::{cluster_or_skip, rig_var};

const PARTITIONS: i32 = 3;
/// Short, so a request to the paused node fails in seconds; the calls' own deadline
/// (`default.api.timeout.ms`) stays at its 60 s default.
const REQUEST_TIMEOUT_MS: u64 = 5_000;
/// A call that needs the paused node must finish well inside this, far from the 60 s
/// deadline a client that keeps routing to the paused node would wait out. The budget:
/// one request timeout to learn the node is gone, the controller fencing it
/// (`broker.session.timeout.ms` = 6 s on the rig) and possibly one more timeout on a
/// connection opened before the fence.
///
/// Not for a controller-routed call when the paused node is the active KRaft controller:
/// the live brokers then hold the forwarded request (observed: ~40 s) and nothing the
/// client does shortens it; that case (and a quorum leadership change during the call)
/// checks the client's routing from its events instead. The test first waits for every
/// voter to be caught up, so pausing one node never leaves the quorum without a majority.
const CALL_BOUND: Duration = Duration::from_secs(30);
/// Once a call has routed around the paused node, the next one must not touch it again.
const NEXT_CALL_BOUND: Duration = Duration::from_secs(5);

fn rig(args: &[&str]) {
    let rig = concat!(env!("CARGO_MANIFEST_DIR"), "/broker/rig");
    let status = Command::new(rig).args(args).status().expect("run rig");
    assert!(status.success(), "rig {args:?} failed");
}

/// Resumes the paused node whatever happens, so a failed assertion leaves the cluster
/// usable for the suites after this one.
struct Resume(i32);

impl Drop for Resume {
    fn drop(&mut self) {
        rig(&["resume", &self.0.to_string()]);
    }
}

fn partitions(topic: &str) -> Vec<(TopicPartition, OffsetSpec)> {
    (0..PARTITIONS)
        .map(|p| (TopicPartition::new(topic, p), OffsetSpec::Latest))
        .collect()
}

/// Leader per partition from the client's metadata cache.
fn leaders(admin: &Admin, topic: &str) -> BTreeMap<i32, Option<i32>> {
    let t = topic.to_string();
    admin
        .client()
        .with_core(move |c| {
            (0..PARTITIONS)
                .map(|p| (p, c.metadata().leader(&t, p)))
                .collect()
        })
        .expect("driver")
}

#[test]
fn admin_calls_route_around_a_paused_node() {
    let Some(_) = cluster_or_skip("admin_calls_route_around_a_paused_node") else {
        return;
    };
    // Every attempt, timeout and metadata change with its time: kept in a failure's output.
    kafka_tests::event_log::to_stderr();
    let bootstrap = rig_var("KAFKA_CLUSTER_BOOTSTRAP").unwrap();
    let timeout = REQUEST_TIMEOUT_MS.to_string();
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap.as_str()),
        ("request.timeout.ms", timeout.as_str()),
        ("reconnect.backoff.max.ms", "500"),
    ])
    .unwrap();
    let admin = Admin::new(config).unwrap();
    let topic = format!("paused-{}", std::process::id());
    let created = admin
        .create_topics([NewTopic::new(&topic, PARTITIONS, 3)])
        .expect("create topics");
    assert!(
        created[&topic].is_ok(),
        "create {topic}: {:?}",
        created[&topic]
    );

    // Wait until every partition's leader serves it. Right after creation a node may not
    // know the topic yet (the test before this one restarted a node, which then catches
    // up on metadata): ListOffsets ends such a topic with UNKNOWN_TOPIC_OR_PARTITION at
    // once, as Java's Admin does, so ask again until every partition answers.
    let deadline = Instant::now() + CALL_BOUND;
    loop {
        let ready = admin
            .list_offsets(partitions(&topic))
            .expect("list offsets");
        if ready.values().all(|r| r.is_ok()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "partitions not ready after {CALL_BOUND:?}: {ready:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let controller = admin
        .client()
        .with_core(|c| c.metadata().controller())
        .expect("driver")
        .expect("a controller is known");
    let before = leaders(&admin, &topic);
    // The suites before this one restart nodes; a voter that has not caught up again would
    // leave the quorum without a majority once a second node is paused, and every
    // controller-routed call would then wait on the brokers, not on the client.
    let quorum_leader = healthy_quorum(&admin).leader_id;
    eprintln!(
        "controller-routed calls go to node {controller}; leaders {before:?}; \
         KRaft active controller {quorum_leader}"
    );
    // Pause the node the client sends controller-routed calls to. With 3 partitions over
    // 3 nodes it normally leads one of them too; if not, pause partition 0's leader, so
    // the leader-routed path is always exercised.
    let paused = if before.values().any(|l| *l == Some(controller)) {
        controller
    } else {
        before[&0].expect("leader of partition 0")
    };

    rig(&["pause", &paused.to_string()]);
    let _resume = Resume(paused);
    let t0 = Instant::now();

    // 1. Leader-routed fan-out: one partition is led by the paused node.
    let offsets = admin
        .list_offsets(partitions(&topic))
        .expect("list offsets while a node is paused");
    let first = t0.elapsed();
    for (tp, r) in &offsets {
        assert!(r.is_ok(), "{tp:?} with node {paused} paused: {r:?}");
    }
    let after = leaders(&admin, &topic);
    eprintln!("list_offsets with node {paused} paused: {first:?}; leaders now {after:?}");
    assert!(
        first < CALL_BOUND,
        "list_offsets took {first:?} with node {paused} paused (bound {CALL_BOUND:?})"
    );
    assert!(
        after.values().all(|l| l.is_some() && *l != Some(paused)),
        "the cache still routes to the paused node {paused}: {after:?}"
    );

    // 2. The same call again: the routes already moved, nothing waits on the paused node.
    let t1 = Instant::now();
    let again = admin
        .list_offsets(partitions(&topic))
        .expect("list offsets");
    let second = t1.elapsed();
    assert!(again.values().all(|r| r.is_ok()), "{again:?}");
    eprintln!("list_offsets again: {second:?}");
    assert!(
        second < NEXT_CALL_BOUND,
        "the second list_offsets took {second:?}: it went back to the paused node"
    );

    // 3. Controller-routed calls: create and delete a topic.
    let t2 = Instant::now();
    let other = format!("{topic}-b");
    let created = admin
        .create_topics([NewTopic::new(&other, 1, 2)])
        .expect("create topics while a node is paused");
    let create_took = t2.elapsed();
    // A create that timed out on its first attempt may still have been applied: the
    // broker it reached forwards to the KRaft controller, which can finish after our
    // request timeout when the paused node was the active controller. The retry then
    // finds the topic already there (TOPIC_ALREADY_EXISTS), as Java's Admin reports too.
    // Either answer must leave the topic in place.
    match &created[&other] {
        Ok(_) => {}
        Err(AdminError::Kafka { code, .. }) if *code == KafkaCode::TOPIC_ALREADY_EXISTS => {
            eprintln!("create {other}: an earlier attempt was applied (TOPIC_ALREADY_EXISTS on the retry)");
        }
        Err(e) => panic!("create {other}: {e:?}"),
    }
    let listed = admin.list_topics().expect("list topics");
    assert!(listed.contains_key(&other), "{other} missing after create");
    let controller_now = admin
        .client()
        .with_core(|c| c.metadata().controller())
        .expect("driver");
    eprintln!("create_topics with node {paused} paused: {create_took:?}; controller now {controller_now:?}");
    // The client's part: after the first timeout it never sent the create to the paused
    // node again (a create there only ends by timing out, which the events name).
    let to_paused = format!("node={paused} ");
    let creates_to_paused = kafka_tests::event_log::lines()
        .into_iter()
        .filter(|l| l.contains(&to_paused) && l.contains("cause=CreateTopics request"))
        .count();
    assert!(
        creates_to_paused <= 1,
        "create_topics went to the paused node {paused} {creates_to_paused} times"
    );
    // Asked again: a leadership change during the create means the brokers held the
    // forwarded request through a KRaft election, as when the paused node led the quorum.
    let leader_after = admin
        .describe_metadata_quorum()
        .expect("describe metadata quorum")
        .leader_id;
    if paused == quorum_leader || leader_after != quorum_leader {
        eprintln!(
            "KRaft active controller {quorum_leader} before, {leader_after} after pausing \
             node {paused}: brokers forwarded to it"
        );
    } else {
        assert!(
            create_took < CALL_BOUND,
            "create_topics took {create_took:?} with node {paused} paused"
        );
    }
    let t3 = Instant::now();
    let deleted = admin
        .delete_topics([other.clone()])
        .expect("delete topics while a node is paused");
    let delete_took = t3.elapsed();
    assert!(
        deleted[&other].is_ok(),
        "delete {other}: {:?}",
        deleted[&other]
    );
    eprintln!("delete_topics: {delete_took:?}");
    // The client's part, as for the create: the delete never went to the paused node
    // more than once. Its time bound holds unless a live broker held the forwarded
    // request past our request timeout (seen in CI: node 2 timed out DeleteTopics and
    // DescribeQuorum twice while its controller channel caught up; the broker's
    // forwarding, not our routing).
    let deletes = kafka_tests::event_log::lines()
        .into_iter()
        .filter(|l| {
            l.contains("message=kafka connection failed")
                && l.contains("cause=DeleteTopics request")
        })
        .collect::<Vec<_>>();
    let deletes_to_paused = deletes.iter().filter(|l| l.contains(&to_paused)).count();
    assert!(
        deletes_to_paused <= 1,
        "delete_topics went to the paused node {paused} {deletes_to_paused} times"
    );
    if deletes.len() > deletes_to_paused {
        eprintln!(
            "delete_topics timed out on a live broker {} times: it held the forwarded request",
            deletes.len() - deletes_to_paused
        );
    } else {
        assert!(
            delete_took < NEXT_CALL_BOUND,
            "delete_topics took {delete_took:?}: the controller route went back to the paused node"
        );
    }
    // Everything above ran with the node paused.
    assert_eq!(
        rig_state(paused),
        "paused",
        "node {paused} was resumed during the test"
    );
    eprintln!(
        "total with node {paused} paused: {:?} (request.timeout.ms {REQUEST_TIMEOUT_MS})",
        t0.elapsed()
    );
}

/// Waits (up to [`CALL_BOUND`]) until every voter of the metadata quorum fetched and was
/// caught up with its leader within the last two seconds.
fn healthy_quorum(admin: &Admin) -> kafka_core::admin::QuorumInfo {
    let deadline = Instant::now() + CALL_BOUND;
    loop {
        let quorum = admin
            .describe_metadata_quorum()
            .expect("describe metadata quorum");
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock after 1970")
            .as_millis() as i64;
        let lagging: Vec<i32> = quorum
            .voters
            .iter()
            .filter(|v| {
                v.replica_id != quorum.leader_id
                    && v.last_caught_up_timestamp
                        .is_none_or(|t| now_ms - t >= 2_000)
            })
            .map(|v| v.replica_id)
            .collect();
        if lagging.is_empty() {
            return quorum;
        }
        assert!(
            Instant::now() < deadline,
            "metadata quorum voters {lagging:?} not caught up after {CALL_BOUND:?}: {quorum:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// "paused" or "running", from `rig status`.
fn rig_state(node: i32) -> String {
    let rig = concat!(env!("CARGO_MANIFEST_DIR"), "/broker/rig");
    let out = Command::new(rig)
        .arg("status")
        .output()
        .expect("rig status");
    let text = String::from_utf8_lossy(&out.stdout);
    let label = format!("cluster node {node}");
    text.lines()
        .find(|l| l.starts_with(&label))
        .and_then(|l| l[label.len()..].split_whitespace().next())
        .unwrap_or("unknown")
        .to_string()
}
