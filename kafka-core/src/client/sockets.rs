//! Socket lifecycle: the adapter's connect, bytes-in, close and bytes-out calls for one
//! connection, opening a [`Connection`] for a slot, and a failed connection's fallout
//! (reconnect backoff, routes of what the broker led, its requests retried or failed).

use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::timers::Timer;
use super::*;

impl Client {
    /// The socket for `conn` is connected.
    pub fn handle_connected(&mut self, now: Instant, conn: ConnId) {
        self.handle_connected_inner(now, conn);
        self.run_ops(now);
    }

    fn handle_connected_inner(&mut self, now: Instant, conn: ConnId) {
        self.last_now = Some(now);
        let Some(slot) = self.slots.get_mut(&conn) else {
            return;
        };
        if !matches!(slot.phase, Phase::Connecting) {
            return;
        }
        crate::trace::debug!(node = slot.node, addr = %format_args!("{}:{}", slot.host, slot.port), "kafka socket connected");
        let auth = self.auth_for(conn);
        let mut c = match self.open_connection(now, conn, auth) {
            Ok(c) => c,
            Err(e) => {
                let waiting: Vec<Token> = self
                    .slots
                    .get_mut(&conn)
                    .map(|s| s.waiting.drain(..).map(|(t, _, _)| t).collect())
                    .unwrap_or_default();
                self.connection_failed(now, conn, e.clone());
                for token in waiting {
                    self.request_failed(now, token, RequestError::Connection(e.clone()), false);
                }
                return;
            }
        };
        let Some(slot) = self.slots.get_mut(&conn) else {
            return;
        };
        for (token, req, shape) in slot.waiting.drain(..) {
            c.submit_shaped(now, token, Box::new(req), shape);
        }
        slot.phase = Phase::Open(c);
        self.drain(now, conn);
    }

    /// Bytes arrived on `conn`.
    pub fn handle_received(&mut self, now: Instant, conn: ConnId, data: &[u8]) {
        self.handle_received_inner(now, conn, data);
        self.run_ops(now);
    }

    fn handle_received_inner(&mut self, now: Instant, conn: ConnId, data: &[u8]) {
        self.last_now = Some(now);
        if let Some(Slot {
            phase: Phase::Open(c),
            ..
        }) = self.slots.get_mut(&conn)
        {
            c.handle_received(now, data);
            self.drain(now, conn);
        }
    }

    /// The socket for `conn` failed to connect, or closed; `cause` says why (typed:
    /// refused, resolve failure, reset...; a plain string becomes [`SocketError::Io`]).
    pub fn handle_closed(&mut self, now: Instant, conn: ConnId, cause: impl Into<SocketError>) {
        self.handle_closed_inner(now, conn, cause.into());
        self.run_ops(now);
    }

    fn handle_closed_inner(&mut self, now: Instant, conn: ConnId, cause: SocketError) {
        self.last_now = Some(now);
        let Some(slot) = self.slots.get_mut(&conn) else {
            return;
        };
        let addr = format!("{}:{}", slot.host, slot.port);
        match &mut slot.phase {
            Phase::Open(c) => c.handle_closed(&addr, cause),
            Phase::Connecting => {
                let waiting: Vec<Token> = slot.waiting.drain(..).map(|(t, _, _)| t).collect();
                let error = ConnError::Socket { addr, error: cause };
                self.connection_failed(now, conn, error.clone());
                for token in waiting {
                    self.request_failed(now, token, RequestError::Connection(error.clone()), false);
                }
                return;
            }
        }
        self.drain(now, conn);
    }

    /// Appends the bytes to write on `conn`; returns how many. Pass an empty buffer with
    /// capacity (one whose bytes were written) to have the connection's buffer swapped
    /// into it instead of copied.
    pub fn poll_transmit(&mut self, _now: Instant, conn: ConnId, out: &mut Vec<u8>) -> usize {
        match self.slots.get_mut(&conn) {
            Some(Slot {
                phase: Phase::Open(c),
                ..
            }) => c.poll_transmit(out),
            _ => 0,
        }
    }

    /// Connections that currently have bytes to write or are open (adapters may simply
    /// call [`Client::poll_transmit`] for each).
    pub fn connections(&self) -> impl Iterator<Item = ConnId> + '_ {
        self.slots.keys().copied()
    }

    fn open_connection(
        &self,
        now: Instant,
        conn: ConnId,
        auth: Option<Auth>,
    ) -> Result<Box<Connection>, ConnError> {
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.tls {
            let host = self
                .slots
                .get(&conn)
                .map(|s| s.host.clone())
                .unwrap_or_default();
            let time = crate::conn::tls::UnixTime::since_unix_epoch(self.wall_clock);
            let session = crate::conn::tls::TlsSession::new(tls, &host, time)
                .map_err(|e| ConnError::Tls(e.into()))?;
            let mut c = Connection::with_tls(now, self.conn_config.clone(), auth, session);
            c.set_setup_timeout(now, self.setup_timeout_of(conn));
            return Ok(Box::new(c));
        }
        let mut c = Connection::new(now, self.conn_config.clone(), auth);
        c.set_setup_timeout(now, self.setup_timeout_of(conn));
        Ok(Box::new(c))
    }

    /// The setup timeout of `conn`'s connection attempt.
    fn setup_timeout_of(&self, conn: ConnId) -> Duration {
        self.slots
            .get(&conn)
            .map_or(self.conn_config.setup_timeout, |s| s.setup_timeout)
    }

    /// The setup timeout for a new connection attempt to `node`: the initial one at first
    /// and after a connection got ready, doubled per consecutive attempt that failed before
    /// getting ready, capped at the max, jittered ±20% (Java's `ClusterConnectionStates`).
    pub(crate) fn next_setup_timeout(&mut self, node: i32) -> Duration {
        let failures = self.setup_failures.get(&node).copied().unwrap_or(0);
        self.setup.delay(failures)
    }

    fn auth_for(&self, conn: ConnId) -> Option<Auth> {
        let sec = self.config.security();
        if !matches!(
            sec.protocol,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        ) {
            return None;
        }
        let sasl = &sec.sasl;
        let credentials = match (&sasl.token_provider, &sasl.username, &sasl.password) {
            (Some(_), _, _) => CredentialSource::Asked,
            (None, Some(u), Some(pw)) => {
                CredentialSource::Static(SaslCredentials::UsernamePassword {
                    username: u.clone(),
                    password: pw.clone(),
                })
            }
            _ => return None,
        };
        let entropy: [u8; 32] = Sha256::new()
            .chain_update(self.seed)
            .chain_update(conn.0.to_be_bytes())
            .finalize()
            .into();
        Some(Auth::new(sasl.mechanism, credentials, entropy))
    }

    pub(super) fn connection_failed(&mut self, now: Instant, conn: ConnId, error: ConnError) {
        let Some(slot) = self.slots.remove(&conn) else {
            return;
        };
        self.by_node.remove(&(slot.node, slot.lane));
        self.awaiting_token.remove(&conn);
        self.io.push_back(IoCommand::Close { conn });
        if matches!(error, ConnError::Idle) {
            crate::trace::debug!(
                node = slot.node,
                addr = %format_args!("{}:{}", slot.host, slot.port),
                "kafka idle connection closed"
            );
        } else {
            crate::trace::warn!(
                node = slot.node,
                addr = %format_args!("{}:{}", slot.host, slot.port),
                ready = slot.was_ready,
                cause = %error,
                "kafka connection failed"
            );
        }
        if !matches!(error, ConnError::Idle) {
            if slot.was_ready {
                self.setup_failures.remove(&slot.node);
            } else {
                *self.setup_failures.entry(slot.node).or_default() += 1;
            }
            let failures = self.node_failures.get(&slot.node).map_or(0, |f| f.0 + 1);
            let until = now + self.reconnect.delay(failures);
            self.node_failures.insert(slot.node, (failures, until));
            if slot.node >= 0 {
                // Routes follow the cluster: what this broker led (partitions, the
                // controller role, coordinators) is looked up again, not retried here.
                let led = self.metadata.invalidate_broker(slot.node);
                self.coordinators.retain(|_, n| *n != slot.node);
                if led {
                    self.request_metadata(now, []);
                }
            }
            self.notice_ops(&Notice::ConnectionClosed {
                node: slot.node,
                error: &error,
            });
            self.events.push_back(Event::ConnectionFailed {
                node: slot.node,
                error: error.clone(),
            });
            self.failure_seen(now, slot.node, error);
        }
        self.timers.set(Timer::Conn(conn), None);
    }
}
