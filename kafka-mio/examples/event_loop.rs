//! A program's own mio loop running an echo server and its client next to the Kafka
//! driver on one `Poll`: the program uses tokens 0..3, the driver 100..164. While the
//! echo pair ping-pongs (one ping per 20 ms, a timer of the program's own), the driver
//! describes the cluster and then creates a topic.
//!
//! ```sh
//! KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:9092 cargo run -p kafka-mio --example event_loop
//! ```

use std::io::{ErrorKind, Read, Write};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kafka_core::admin::{CreateTopics, DescribeCluster, NewTopic};
use kafka_core::client::Event;
use kafka_core::config::ClientConfig;
use kafka_mio::mio::net::{TcpListener, TcpStream};
use kafka_mio::mio::{Events, Interest, Poll, Token};
use kafka_mio::{Driver, OpId};

const LISTENER: Token = Token(0);
const SERVER: Token = Token(1);
const CLIENT: Token = Token(2);
const KAFKA_TOKENS: std::ops::Range<usize> = 100..164;
const PING_EVERY: Duration = Duration::from_millis(20);

/// Where the Kafka side is.
enum Kafka {
    Describing(OpId<DescribeCluster>),
    Creating(OpId<CreateTopics>),
    Done,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bootstrap =
        std::env::var("KAFKA_BOOTSTRAP_SERVERS").unwrap_or_else(|_| "127.0.0.1:9092".into());
    let mut poll = Poll::new()?;
    let mut events = Events::with_capacity(128);

    // The program's own sockets: an echo server and a client talking to it.
    let mut listener = TcpListener::bind("127.0.0.1:0".parse()?)?;
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    let mut client = TcpStream::connect(listener.local_addr()?)?;
    poll.registry()
        .register(&mut client, CLIENT, Interest::READABLE)?;
    let mut server: Option<TcpStream> = None;
    let mut echoed = 0u32;
    let mut next_ping = Instant::now();
    let mut awaiting_echo = false;

    // The Kafka driver, on the same poll with its own token range.
    let config = ClientConfig::from_pairs([("bootstrap.servers", bootstrap.as_str())])?;
    let mut driver = Driver::new(config, poll.registry(), KAFKA_TOKENS)?;
    let mut kafka = Kafka::Describing(driver.start(DescribeCluster::new()));
    let topic = format!(
        "event-loop-{}",
        SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis()
    );
    let give_up = Instant::now() + Duration::from_secs(60);

    while !(matches!(kafka, Kafka::Done) && echoed >= 3) {
        if Instant::now() > give_up {
            return Err("gave up after 60 s".into());
        }
        // Kafka: drain, read the core's events, then check the operation we wait on.
        driver.poll(poll.registry());
        while let Some(event) = driver.poll_event() {
            if let Event::ConnectionFailed { node, error } = event {
                println!("kafka: connection to node {node} failed: {error}");
            }
        }
        kafka = match kafka {
            Kafka::Describing(id) => match driver.take_output(id) {
                Some(cluster) => {
                    let cluster = cluster?;
                    println!(
                        "kafka: cluster {} with {} broker(s), controller {}",
                        cluster.cluster_id,
                        cluster.brokers.len(),
                        cluster.controller_id
                    );
                    let topics = [NewTopic::new(&topic, 1, 1)];
                    Kafka::Creating(driver.start(CreateTopics::new(topics)))
                }
                None => Kafka::Describing(id),
            },
            Kafka::Creating(id) => match driver.take_output(id) {
                Some(created) => {
                    let t = created?.remove(&topic).ok_or("topic missing")??;
                    println!("kafka: created topic {topic} (id {:?})", t.topic_id);
                    Kafka::Done
                }
                None => Kafka::Creating(id),
            },
            Kafka::Done => Kafka::Done,
        };
        // The program's own timer: send the next ping when due.
        if !awaiting_echo && server.is_some() && Instant::now() >= next_ping {
            write_all(&mut client, format!("ping {echoed}\n").as_bytes())?;
            awaiting_echo = true;
        }
        let own_timeout =
            (!awaiting_echo).then(|| next_ping.saturating_duration_since(Instant::now()));
        let timeout = match (driver.timeout(), own_timeout) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        poll.poll(&mut events, timeout)?;
        for event in events.iter() {
            match event.token() {
                t if driver.owns(t) => driver.handle_event(poll.registry(), event),
                LISTENER => {
                    let (mut s, _) = listener.accept()?;
                    poll.registry()
                        .register(&mut s, SERVER, Interest::READABLE)?;
                    server = Some(s);
                }
                SERVER => {
                    if let Some(s) = server.as_mut() {
                        let data = read_available(s)?;
                        write_all(s, &data)?;
                    }
                }
                CLIENT => {
                    let data = read_available(&mut client)?;
                    if data.ends_with(b"\n") {
                        echoed += 1;
                        awaiting_echo = false;
                        next_ping = Instant::now() + PING_EVERY;
                    }
                }
                _ => {}
            }
        }
    }
    println!("echo: {echoed} round trips on the same poll");
    driver.shutdown(poll.registry());
    Ok(())
}

/// Everything readable now (the sockets are edge-triggered: read until WouldBlock).
fn read_available(s: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut data = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return Ok(data),
            Ok(n) => data.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(data),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Writes a short message to a non-blocking socket (a few bytes always fit its buffer;
/// a real program would buffer and wait for WRITABLE like the driver does).
fn write_all(s: &mut TcpStream, mut data: &[u8]) -> std::io::Result<()> {
    while !data.is_empty() {
        match s.write(data) {
            Ok(n) => data = &data[n..],
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                std::thread::yield_now();
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
