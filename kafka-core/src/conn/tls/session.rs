//! [`TlsSession`]: one connection's `rustls::ClientConnection` driven from buffers.

use std::fmt;
use std::io::{BufRead, Write};
use std::sync::Arc;

use rustls::pki_types::{ServerName, UnixTime};
use rustls::ClientConnection;

use super::config::TlsClientConfig;
use super::verify::FixedClock;
use super::TlsError;

/// Most plaintext bytes [`TlsSession::write_plaintext`] queues before the handshake has
/// completed (after it, plaintext is encrypted at once and the caller's pulling of
/// [`TlsSession::poll_ciphertext`] is the backpressure).
pub const HANDSHAKE_PLAINTEXT_LIMIT: usize = 64 * 1024;

/// The client side of one TLS connection, as a sans-IO byte pipe.
///
/// Inbound: [`handle_ciphertext`](Self::handle_ciphertext) with the bytes the socket
/// produced, then [`read_plaintext`](Self::read_plaintext). Outbound:
/// [`write_plaintext`](Self::write_plaintext), then
/// [`poll_ciphertext`](Self::poll_ciphertext) for the bytes to write to the socket. Pull
/// `poll_ciphertext` after every `handle_ciphertext` too: the handshake and alerts
/// produce output of their own. The handshake starts at once: the first
/// `poll_ciphertext` returns the ClientHello.
///
/// Errors from peer data are sticky (see [`TlsError`]).
pub struct TlsSession {
    conn: ClientConnection,
    /// Decrypted bytes not yet taken by `read_plaintext`.
    plaintext: Vec<u8>,
    /// The first fatal error; returned again by every later call.
    error: Option<TlsError>,
    /// Plaintext bytes written while the handshake was in progress.
    early_plaintext: usize,
    /// `send_close_notify` was called.
    close_sent: bool,
    /// The peer sent `close_notify`.
    peer_closed: bool,
}

impl TlsSession {
    /// Starts a client session to `host` (a DNS name or an IP literal, IPv6 with or
    /// without brackets; `server_name_override` from the config wins). `now` is the
    /// current wall-clock time, used for certificate validity checks (see the module
    /// docs); the adapter reads it, e.g. `UnixTime::since_unix_epoch(duration)`.
    pub fn new(config: &TlsClientConfig, host: &str, now: UnixTime) -> Result<Self, TlsError> {
        let name = config.server_name_override.as_deref().unwrap_or(host);
        let server_name = server_name(name)?;
        let mut rustls = (*config.rustls).clone();
        rustls.time_provider = Arc::new(FixedClock(now));
        let mut conn = ClientConnection::new(Arc::new(rustls), server_name)?;
        // No rustls-side limit: it would make writes short, splitting Kafka frames. The
        // pre-handshake queue is bounded by `write_plaintext`, the rest by the caller.
        conn.set_buffer_limit(None);
        Ok(Self {
            conn,
            plaintext: Vec::new(),
            error: None,
            early_plaintext: 0,
            close_sent: false,
            peer_closed: false,
        })
    }

    /// Feeds bytes received from the socket. All of `data` is consumed; decrypted
    /// plaintext waits for [`read_plaintext`](Self::read_plaintext). Bytes after the
    /// peer's `close_notify` are ignored.
    ///
    /// Certificate failures, alerts and malformed input are returned as typed errors
    /// and are sticky.
    pub fn handle_ciphertext(&mut self, mut data: &[u8]) -> Result<(), TlsError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        // Never call `read_tls` with an empty reader: rustls takes a 0-byte read as EOF.
        while !data.is_empty() {
            // `read_tls` takes at most one buffer's worth per call, hence the loop.
            match self.conn.read_tls(&mut data) {
                Ok(0) if self.peer_closed => break,
                // Unreachable: after processing, the deframer always has room.
                Ok(0) => {
                    return Err(self.fail(TlsError::Malformed("TLS input not consumed".into())))
                }
                Ok(_) => {}
                Err(e) => return Err(self.fail(TlsError::Malformed(e.to_string()))),
            }
            match self.conn.process_new_packets() {
                Ok(state) => self.peer_closed = state.peer_has_closed(),
                Err(e) => {
                    // Keep what was decrypted before the failure; the alert rustls
                    // queued stays available to `poll_ciphertext`.
                    self.drain_plaintext();
                    return Err(self.fail(e.into()));
                }
            }
            // Drain every round: rustls refuses to read while its plaintext buffer is full.
            self.drain_plaintext();
        }
        Ok(())
    }

    /// Appends the decrypted bytes received so far to `out` and returns how many. Data
    /// decrypted before a fatal error is still delivered; once none is left, the sticky
    /// error is returned.
    pub fn read_plaintext(&mut self, out: &mut Vec<u8>) -> Result<usize, TlsError> {
        let n = self.plaintext.len();
        if n == 0 {
            return match &self.error {
                Some(e) => Err(e.clone()),
                None => Ok(0),
            };
        }
        if out.is_empty() {
            std::mem::swap(out, &mut self.plaintext);
        } else {
            out.append(&mut self.plaintext);
        }
        Ok(n)
    }

    /// Queues application bytes for encryption, all or nothing. Before the handshake
    /// completes they are held (at most [`HANDSHAKE_PLAINTEXT_LIMIT`] bytes in total,
    /// else [`TlsError::HandshakeBufferFull`]) and sent once it does.
    pub fn write_plaintext(&mut self, data: &[u8]) -> Result<(), TlsError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if self.close_sent {
            return Err(TlsError::Closed);
        }
        if self.conn.is_handshaking() {
            let queued = self.early_plaintext.saturating_add(data.len());
            if queued > HANDSHAKE_PLAINTEXT_LIMIT {
                return Err(TlsError::HandshakeBufferFull {
                    limit: HANDSHAKE_PLAINTEXT_LIMIT,
                });
            }
            self.early_plaintext = queued;
        }
        // With no buffer limit rustls takes every byte; an error here would be a rustls
        // invariant break, reported rather than hidden.
        self.conn
            .writer()
            .write_all(data)
            .map_err(|e| TlsError::Rustls(rustls::Error::General(e.to_string())))
    }

    /// Appends the ciphertext to send to the socket (handshake messages, encrypted
    /// application data, alerts) to `out` and returns how many bytes were appended.
    pub fn poll_ciphertext(&mut self, out: &mut Vec<u8>) -> usize {
        let start = out.len();
        while self.conn.wants_write() {
            // Writing into a `Vec` cannot fail; stop on a zero-length write regardless.
            match self.conn.write_tls(out) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        out.len() - start
    }

    /// Queues a `close_notify` alert (pull it with [`poll_ciphertext`](Self::poll_ciphertext));
    /// later writes fail with [`TlsError::Closed`].
    pub fn send_close_notify(&mut self) {
        self.close_sent = true;
        self.conn.send_close_notify();
    }

    /// Whether the handshake is still in progress.
    pub fn is_handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// Whether [`poll_ciphertext`](Self::poll_ciphertext) has bytes to hand out.
    pub fn wants_write(&self) -> bool {
        self.conn.wants_write()
    }

    /// Whether the peer sent `close_notify`: it sends nothing more.
    pub fn peer_closed(&self) -> bool {
        self.peer_closed
    }

    /// The sticky error, if the session has failed.
    pub fn error(&self) -> Option<&TlsError> {
        self.error.as_ref()
    }

    /// Moves rustls' decrypted bytes into `self.plaintext`.
    fn drain_plaintext(&mut self) {
        let mut reader = self.conn.reader();
        loop {
            match reader.fill_buf() {
                Ok([]) => {
                    // Clean end: the peer sent close_notify.
                    break;
                }
                Ok(chunk) => {
                    let n = chunk.len();
                    self.plaintext.extend_from_slice(chunk);
                    reader.consume(n);
                }
                // `WouldBlock`: nothing more for now. (`UnexpectedEof` needs a socket EOF,
                // which this session is never told about.)
                Err(_) => break,
            }
        }
    }

    /// Records `e` as the sticky error and returns it.
    fn fail(&mut self, e: TlsError) -> TlsError {
        self.error = Some(e.clone());
        e
    }
}

impl fmt::Debug for TlsSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsSession")
            .field("handshaking", &self.conn.is_handshaking())
            .field("plaintext_buffered", &self.plaintext.len())
            .field("error", &self.error)
            .field("close_sent", &self.close_sent)
            .field("peer_closed", &self.peer_closed)
            .finish_non_exhaustive()
    }
}

/// A rustls server name for `host`: an IP literal (IPv6 brackets stripped) or a DNS name.
fn server_name(host: &str) -> Result<ServerName<'static>, TlsError> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    ServerName::try_from(bare.to_owned()).map_err(|_| TlsError::InvalidServerName(host.to_owned()))
}
