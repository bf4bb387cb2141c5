//! The clients' side: adding and killing clients, and turning their I/O commands
//! (connects, closes, writes) into simulated connections and bytes in flight.

use std::collections::VecDeque;
use std::time::Duration;

use kafka_core::client::{Client, ConnId, IoCommand};
use kafka_core::config::ClientConfig;

use super::{SimConn, World};

impl World {
    /// Adds a client made from `pairs` (bootstrap `b1:9092` unless given); its index.
    pub fn add_client(&mut self, pairs: &[(&str, &str)]) -> usize {
        let mut all = vec![("bootstrap.servers", "b1:9092")];
        all.extend_from_slice(pairs);
        let config = ClientConfig::from_pairs(all).expect("scenario config");
        self.add_client_with(config)
    }

    /// Adds a client made from `config`; its index.
    pub fn add_client_with(&mut self, config: ClientConfig) -> usize {
        let mut seed = [0u8; 32];
        for chunk in seed.chunks_mut(8) {
            chunk.copy_from_slice(&self.rng.next_u64().to_le_bytes());
        }
        let mut client = Client::new(config, seed).expect("client");
        client.handle_wall_clock(Duration::from_secs(1_700_000_000) + self.elapsed());
        self.clients.push(client);
        self.clients.len() - 1
    }

    /// Kills client `ci` as a process dies: it is never driven again (no timers, no
    /// reads, no writes) and its connections vanish (bytes in flight are lost). Its
    /// state stays readable for assertions.
    pub fn kill_client(&mut self, ci: usize) {
        self.killed.insert(ci);
        self.mix(10, ci as u64, 0);
        self.conns.retain(|k, _| k.0 != ci);
    }

    /// Lets every client open and close sockets and write what it has.
    pub(super) fn flush_clients(&mut self) {
        for ci in 0..self.clients.len() {
            if self.killed.contains(&ci) {
                continue;
            }
            while let Some(cmd) = self.clients[ci].poll_io() {
                match cmd {
                    IoCommand::Connect {
                        conn,
                        host,
                        setup_timeout,
                        ..
                    } => {
                        let node = self.cluster.node_of(&host);
                        let up = node
                            .and_then(|n| self.cluster.broker(n))
                            .is_some_and(|b| b.up);
                        let mut at = self.now + self.latency_to(node.unwrap_or(-1), 0) * 2;
                        let mut up = up;
                        if self.half_open(node.unwrap_or(-1)) {
                            // No answer to the SYN: the connect hangs until the setup
                            // timeout the adapter is given, then fails.
                            self.link_counters.connects_hung += 1;
                            at = self.now + setup_timeout;
                            up = false;
                        }
                        self.mix(2, conn.0, u64::from(up));
                        self.conns.insert(
                            (ci, conn.0),
                            SimConn {
                                node: node.unwrap_or(-1),
                                opening: Some((at, up)),
                                to_broker: VecDeque::new(),
                                broker_buf: Vec::new(),
                                to_client: VecDeque::new(),
                                dead: false,
                                muted_until: None,
                                throttled_until: None,
                                window: (0, 0),
                                parked: None,
                                held: VecDeque::new(),
                            },
                        );
                    }
                    IoCommand::Close { conn } => {
                        self.mix(3, conn.0, 0);
                        if self.conns.remove(&(ci, conn.0)).is_some() {
                            self.net.client_closes += 1;
                        }
                    }
                    _ => {}
                }
            }
            let open: Vec<u64> = self
                .conns
                .range((ci, 0)..(ci + 1, 0))
                .filter(|(_, c)| c.opening.is_none())
                .map(|(k, _)| k.1)
                .collect();
            for id in open {
                self.transmit((ci, id));
            }
            // Events are not the scenarios' business: they read the machines directly.
            while self.clients[ci].poll_event().is_some() {}
        }
    }

    /// Takes what client `k.0` wrote to connection `k.1` and sends it on its way.
    pub(super) fn transmit(&mut self, k: (usize, u64)) {
        let (ci, id) = k;
        let mut out = Vec::new();
        self.clients[ci].poll_transmit(self.now, ConnId(id), &mut out);
        if out.is_empty() {
            return;
        }
        self.mix(4, id, out.len() as u64);
        let node = self.conns.get(&(ci, id)).map_or(-1, |c| c.node);
        let lat = self.latency_to(node, out.len());
        let now = self.now;
        let conn = self.conns.get_mut(&(ci, id)).expect("open conn");
        if conn.throttled_until.is_some_and(|t| t > now) {
            self.net.throttle_violations += 1;
        }
        if conn.dead {
            return; // the broker side is gone: the bytes are lost
        }
        let at = conn.to_broker.back().map_or(now, |b| b.0).max(now + lat);
        conn.to_broker.push_back((at, out));
    }
}
