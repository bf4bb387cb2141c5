//! One broker socket (non-blocking connect, buffered writes, interest tracking) and the
//! pool of caller-chosen tokens the sockets are registered with.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_driver::{socket_error, Outlet, SocketError, OUTBOUND_HIGH_WATER};
use mio::net::TcpStream;
use mio::{Interest, Registry, Token};

use crate::ConnectError;

/// The tokens of the caller's range: fresh ones in order, then freed ones, the longest
/// freed first (a token reused at once could still see the old socket's last events).
#[derive(Debug)]
pub(crate) struct TokenPool {
    range: Range<usize>,
    next: usize,
    free: VecDeque<usize>,
}

impl TokenPool {
    pub(crate) fn new(range: Range<usize>) -> Self {
        TokenPool {
            next: range.start,
            range,
            free: VecDeque::new(),
        }
    }

    pub(crate) fn contains(&self, token: Token) -> bool {
        self.range.contains(&token.0)
    }

    pub(crate) fn take(&mut self) -> Result<Token, ConnectError> {
        if self.next < self.range.end {
            self.next += 1;
            return Ok(Token(self.next - 1));
        }
        if let Some(t) = self.free.pop_front() {
            return Ok(Token(t));
        }
        Err(ConnectError::TokensExhausted {
            start: self.range.start,
            end: self.range.end,
        })
    }

    pub(crate) fn give_back(&mut self, token: Token) {
        if self.contains(token) && !self.free.contains(&token.0) {
            self.free.push_back(token.0);
        }
    }
}

/// What a readiness event did to a connecting socket.
pub(crate) enum ConnectState {
    /// Still in progress (spurious wake-up).
    Pending,
    /// Connected: report it to the core.
    Done,
    /// Failed with this cause.
    Failed(ConnectError),
}

/// A broker socket registered on the caller's registry; the hub's [`Outlet`] for it.
/// Bytes the kernel does not take at once wait here (at most [`OUTBOUND_HIGH_WATER`] plus
/// one `poll_transmit`) until WRITABLE readiness.
pub(crate) struct Sock {
    pub(crate) stream: TcpStream,
    pub(crate) token: Token,
    registry: Arc<Registry>,
    /// `Some(deadline)` until the non-blocking connect completes.
    pub(crate) connecting: Option<Instant>,
    /// This connect attempt's setup timeout (each fallback address gets it too).
    pub(crate) setup: Duration,
    /// Addresses still to try if this connect fails (from name resolution).
    pub(crate) fallback: Vec<SocketAddr>,
    /// Bytes taken from the core and not yet written; `out[sent..]` is pending.
    out: Vec<u8>,
    sent: usize,
    /// Whether WRITABLE is in the registered interest.
    want_write: bool,
}

impl Sock {
    /// Starts a non-blocking connect to `addr` (failed if not connected within `setup`)
    /// and registers it with `token`.
    pub(crate) fn connect(
        registry: &Arc<Registry>,
        token: Token,
        addr: SocketAddr,
        fallback: Vec<SocketAddr>,
        setup: Duration,
    ) -> Result<Sock, ConnectError> {
        let mut stream = TcpStream::connect(addr).map_err(ConnectError::Io)?;
        registry
            .register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)
            .map_err(ConnectError::Io)?;
        Ok(Sock {
            stream,
            token,
            registry: registry.clone(),
            connecting: Some(Instant::now() + setup),
            setup,
            fallback,
            out: Vec::new(),
            sent: 0,
            want_write: true,
        })
    }

    /// Checks whether the non-blocking connect finished (after any readiness event).
    pub(crate) fn check_connected(&mut self) -> ConnectState {
        match self.stream.take_error() {
            Ok(Some(e)) | Err(e) => return ConnectState::Failed(ConnectError::Io(e)),
            Ok(None) => {}
        }
        match self.stream.peer_addr() {
            Ok(_) => {
                self.connecting = None;
                // Small requests must not wait for Nagle; failure only costs latency.
                let _ = self.stream.set_nodelay(true);
                ConnectState::Done
            }
            Err(e) if e.kind() == io::ErrorKind::NotConnected => ConnectState::Pending,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => ConnectState::Pending,
            Err(e) => ConnectState::Failed(ConnectError::Io(e)),
        }
    }

    /// Writes pending bytes until done or the socket would block, then asks for
    /// WRITABLE readiness only while bytes remain.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        if self.connecting.is_some() {
            return Ok(());
        }
        while self.sent < self.out.len() {
            match self.stream.write(&self.out[self.sent..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if self.sent == self.out.len() {
            self.out = Vec::new();
            self.sent = 0;
        }
        self.set_write_interest(self.sent < self.out.len())
    }

    fn set_write_interest(&mut self, on: bool) -> io::Result<()> {
        if self.want_write == on {
            return Ok(());
        }
        let interest = if on {
            Interest::READABLE | Interest::WRITABLE
        } else {
            Interest::READABLE
        };
        self.registry
            .reregister(&mut self.stream, self.token, interest)?;
        self.want_write = on;
        Ok(())
    }

    /// One read into `buf`: `Ok(Some(n))` bytes, `Ok(None)` when the socket would block,
    /// `Err` when the peer closed or the read failed (the cause to report).
    pub(crate) fn read_once(&mut self, buf: &mut [u8]) -> Result<Option<usize>, SocketError> {
        loop {
            match self.stream.read(buf) {
                Ok(0) => return Err(SocketError::ClosedByPeer),
                Ok(n) => return Ok(Some(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(socket_error(&e)),
            }
        }
    }
}

impl Outlet for Sock {
    fn writable(&mut self) -> bool {
        self.connecting.is_none() && self.queued() < OUTBOUND_HIGH_WATER
    }

    fn send(&mut self, bytes: Vec<u8>) -> Result<(), SocketError> {
        if self.sent == self.out.len() {
            self.out = bytes;
        } else {
            self.out.drain(..self.sent);
            self.out.extend_from_slice(&bytes);
        }
        self.sent = 0;
        self.flush().map_err(|e| socket_error(&e))
    }

    fn queued(&self) -> usize {
        self.out.len() - self.sent
    }
}

impl Drop for Sock {
    /// Deregisters and shuts the socket down (errors are moot: it is going away).
    fn drop(&mut self) {
        let _ = self.registry.deregister(&mut self.stream);
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_stay_in_range_and_are_reused() {
        let mut pool = TokenPool::new(10..13);
        let a = pool.take().unwrap();
        let b = pool.take().unwrap();
        let c = pool.take().unwrap();
        assert_eq!([a, b, c], [Token(10), Token(11), Token(12)]);
        assert!(matches!(
            pool.take(),
            Err(ConnectError::TokensExhausted { start: 10, end: 13 })
        ));
        pool.give_back(b);
        pool.give_back(b);
        pool.give_back(Token(99));
        pool.give_back(a);
        assert_eq!(pool.take().unwrap(), Token(11));
        assert_eq!(pool.take().unwrap(), Token(10));
        assert!(pool.take().is_err());
    }

    #[test]
    fn empty_range_is_exhausted_at_once() {
        let mut pool = TokenPool::new(5..5);
        assert!(pool.take().is_err());
        assert!(!pool.contains(Token(5)));
    }
}
