//! The bounded byte pipes between the driver and a socket's own task or thread.
//!
//! Outbound, [`pipe`] gives the driver a [`PipeOutlet`] (an [`Outlet`] that is writable
//! only while fewer than [`OUTBOUND_HIGH_WATER`] bytes wait for the socket) and the
//! socket's writer a [`PipeSource`] to take chunks from. When the writer drains a pipe
//! the driver found full, [`PipeSource::written`] says so and the writer reports
//! [`SocketReport::Writable`](crate::SocketReport::Writable), which makes the driver pull
//! from the core again. A written chunk's buffer goes back to the driver
//! ([`Outlet::spare`]): the core swaps its encoded requests into it rather than copying
//! them into a fresh `Vec`, so produced bytes are not copied once more per transmit.
//!
//! Inbound, [`ReadBuf`] is a socket's read buffer: each read lands in one `BytesMut`
//! block and is split off as a `Bytes` handed to the driver, so reads are not copied into
//! a fresh `Vec` each time; a block is reused once the driver has dropped its parts.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::{Bytes, BytesMut};

use crate::chan::{self, Receiver, Sender};
use crate::{Outlet, SocketError};

/// A pipe stops being writable once this many bytes wait for its socket (counting the
/// chunk being written). The driver then leaves further bytes in the core, which keeps
/// batching; a pipe holds at most this plus one chunk (one `poll_transmit`).
pub const OUTBOUND_HIGH_WATER: usize = 256 * 1024;

/// How many bytes one socket read takes at most.
pub const READ_CHUNK: usize = 64 * 1024;

/// Written chunks' buffers up to this capacity go back to the driver (larger ones are
/// freed: one oversized transmit must not stay allocated).
const RECYCLE_MAX: usize = 16 << 20;

#[derive(Debug, Default)]
struct Gauge {
    /// Bytes handed to the pipe and not yet written.
    queued: AtomicUsize,
    /// The driver found the pipe full: the writer must report when it drains.
    stalled: AtomicBool,
    /// The buffer of the last chunk written, emptied, for the driver's next transmit
    /// (at most one: with the connection's own buffer, as many as before).
    spare: Mutex<Option<Vec<u8>>>,
}

/// A bounded outbound pipe: the driver's end and the socket writer's end.
pub fn pipe() -> (PipeOutlet, PipeSource) {
    let (tx, rx) = chan::channel(usize::MAX);
    let gauge = Arc::new(Gauge::default());
    (
        PipeOutlet {
            tx: Some(tx),
            gauge: gauge.clone(),
            spare: None,
        },
        PipeSource { rx, gauge },
    )
}

/// The driver's end of a [`pipe`]. Dropping or closing it ends the writer.
#[derive(Debug)]
pub struct PipeOutlet {
    tx: Option<Sender<Vec<u8>>>,
    gauge: Arc<Gauge>,
    /// A buffer the driver took and did not use.
    spare: Option<Vec<u8>>,
}

impl Outlet for PipeOutlet {
    fn writable(&mut self) -> bool {
        let g = &self.gauge;
        if g.queued.load(Ordering::SeqCst) < OUTBOUND_HIGH_WATER {
            return true;
        }
        g.stalled.store(true, Ordering::SeqCst);
        // The writer may have drained between the two loads; then it saw no stall.
        g.queued.load(Ordering::SeqCst) < OUTBOUND_HIGH_WATER
    }

    fn send(&mut self, bytes: Vec<u8>) -> Result<(), SocketError> {
        let tx = self
            .tx
            .as_ref()
            .ok_or_else(|| SocketError::Io("socket closed".into()))?;
        let n = bytes.len();
        self.gauge.queued.fetch_add(n, Ordering::SeqCst);
        tx.push(bytes).map_err(|_| {
            self.gauge.queued.fetch_sub(n, Ordering::SeqCst);
            SocketError::Io("socket writer gone".into())
        })
    }

    fn queued(&self) -> usize {
        self.gauge.queued.load(Ordering::SeqCst)
    }

    fn spare(&mut self) -> Vec<u8> {
        if let Some(buf) = self.spare.take() {
            return buf;
        }
        let mut written = self
            .gauge
            .spare
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        written.take().unwrap_or_default()
    }

    fn unused(&mut self, buf: Vec<u8>) {
        if buf.capacity() > 0 {
            self.spare = Some(buf);
        }
    }

    fn close(&mut self) {
        self.tx = None;
    }
}

/// The socket writer's end of a [`pipe`].
#[derive(Debug)]
pub struct PipeSource {
    rx: Receiver<Vec<u8>>,
    gauge: Arc<Gauge>,
}

impl PipeSource {
    /// The next chunk to write; `None` once the driver closed the socket.
    pub async fn next(&mut self) -> Option<Vec<u8>> {
        self.rx.recv().await
    }

    /// [`PipeSource::next`] for writer threads.
    pub fn next_blocking(&mut self) -> Option<Vec<u8>> {
        self.rx.recv_deadline(None).ok()
    }

    /// Polls for the next chunk (`Ready(None)`: closed).
    pub fn poll_next(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Vec<u8>>> {
        self.rx.poll_recv(cx)
    }

    /// Whether the driver closed the socket (for a connector that finished late).
    pub fn is_closed(&self) -> bool {
        self.rx.is_disconnected()
    }

    /// Records that `chunk` is written (its buffer goes back to the driver); `true`
    /// when the driver found the pipe full and must now be told it is writable again.
    #[must_use]
    pub fn written(&self, mut chunk: Vec<u8>) -> bool {
        let g = &self.gauge;
        let n = chunk.len();
        if chunk.capacity() <= RECYCLE_MAX {
            chunk.clear();
            let mut spare = g.spare.lock().unwrap_or_else(PoisonError::into_inner);
            if spare
                .as_ref()
                .is_none_or(|s| s.capacity() < chunk.capacity())
            {
                *spare = Some(chunk);
            }
        }
        let left = g.queued.fetch_sub(n, Ordering::SeqCst) - n;
        left < OUTBOUND_HIGH_WATER && g.stalled.swap(false, Ordering::SeqCst)
    }
}

/// A socket's read buffer (see the module docs).
#[derive(Debug, Default)]
pub struct ReadBuf {
    buf: BytesMut,
}

impl ReadBuf {
    /// An empty buffer; the first block is allocated by the first read.
    pub fn new() -> Self {
        ReadBuf::default()
    }

    /// Room for the next read: at least [`READ_CHUNK`] bytes of spare capacity (a new
    /// block only while the driver still holds parts of the current one). For readers
    /// that fill spare capacity themselves (tokio's `read_buf`).
    pub fn spare(&mut self) -> &mut BytesMut {
        self.buf.reserve(READ_CHUNK);
        &mut self.buf
    }

    /// An initialised [`READ_CHUNK`]-byte slice to read into, for `Read`-style readers;
    /// follow with [`ReadBuf::filled`] and the count read.
    pub fn slice(&mut self) -> &mut [u8] {
        self.buf.reserve(READ_CHUNK);
        self.buf.resize(READ_CHUNK, 0);
        &mut self.buf[..]
    }

    /// After a read into [`ReadBuf::slice`] of `n` bytes: those bytes, split off.
    pub fn filled(&mut self, n: usize) -> Bytes {
        self.buf.truncate(n);
        self.buf.split().freeze()
    }

    /// After a read into [`ReadBuf::spare`]: the bytes it appended, split off.
    pub fn take(&mut self) -> Bytes {
        self.buf.split().freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_pipe_reports_writable_once_drained() {
        let (mut outlet, mut source) = pipe();
        assert!(outlet.writable());
        outlet.send(vec![0; OUTBOUND_HIGH_WATER]).unwrap();
        assert_eq!(outlet.queued(), OUTBOUND_HIGH_WATER);
        assert!(!outlet.writable(), "full");
        let chunk = source.next_blocking().unwrap();
        assert!(source.written(chunk), "the driver waits for this");
        assert!(outlet.writable());
        outlet.send(vec![1; 10]).unwrap();
        let chunk = source.next_blocking().unwrap();
        assert!(!source.written(chunk), "nobody waited");
        outlet.close();
        assert!(source.next_blocking().is_none());
        assert!(outlet.send(vec![1]).is_err());
    }

    #[test]
    fn a_written_chunk_comes_back_as_the_next_spare_buffer() {
        let (mut outlet, mut source) = pipe();
        assert_eq!(outlet.spare().capacity(), 0, "nothing written yet");
        let mut bytes = Vec::with_capacity(4096);
        bytes.extend_from_slice(b"request");
        let ptr = bytes.as_ptr();
        outlet.send(bytes).unwrap();
        let chunk = source.next_blocking().unwrap();
        let _ = source.written(chunk);
        let spare = outlet.spare();
        assert!(spare.is_empty());
        assert_eq!(
            (spare.capacity(), spare.as_ptr()),
            (4096, ptr),
            "the same memory"
        );
        assert_eq!(outlet.spare().capacity(), 0, "handed out once");
        outlet.unused(spare);
        let again = outlet.spare();
        assert_eq!(again.as_ptr(), ptr, "given back unused");
        // An oversized chunk is freed, not kept.
        outlet.send(vec![0; RECYCLE_MAX + 1]).unwrap();
        let chunk = source.next_blocking().unwrap();
        let _ = source.written(chunk);
        assert_eq!(outlet.spare().capacity(), 0);
    }

    #[test]
    fn reads_are_split_off_one_block() {
        let mut rb = ReadBuf::new();
        let s = rb.slice();
        s[..3].copy_from_slice(b"abc");
        let a = rb.filled(3);
        let s = rb.slice();
        s[..2].copy_from_slice(b"de");
        let b = rb.filled(2);
        assert_eq!((&a[..], &b[..]), (&b"abc"[..], &b"de"[..]));
    }
}
