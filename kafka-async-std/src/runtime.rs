//! The async-io glue for [`kafka_driver::front`]: the caller's spawner, async-io's timer
//! and sockets, and a short-lived thread for the blocking system resolver.

use std::io;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Instant;

use async_io::{Async, Timer};
use bytes::Bytes;
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use kafka_driver::front::{Runtime, Task};
use kafka_driver::ReadBuf;

use crate::Spawner;

/// The async-io reactor with a caller-provided spawner.
#[derive(Clone)]
pub(crate) struct AsyncIo(pub(crate) Arc<Spawner>);

impl Runtime for AsyncIo {
    type Reader = Arc<Async<TcpStream>>;
    type Writer = Arc<Async<TcpStream>>;

    fn spawn(&self, task: Task) {
        (self.0)(task);
    }

    async fn sleep_until(&self, at: Instant) {
        Timer::at(at).await;
    }

    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        if let Ok(ip) = host.trim_matches(['[', ']']).parse::<IpAddr>() {
            return Ok(vec![SocketAddr::new(ip, port)]);
        }
        // The system resolver blocks, and no executor's blocking pool is assumed.
        let (tx, rx) = async_channel::bounded(1);
        let name = (host.to_string(), port);
        std::thread::Builder::new()
            .name("kafka-resolve".into())
            .spawn(move || {
                let _ = tx.try_send(name.to_socket_addrs().map(Iterator::collect));
            })?;
        rx.recv()
            .await
            .unwrap_or_else(|_| Err(io::Error::other("resolver thread failed")))
    }

    async fn connect(&self, addr: SocketAddr) -> io::Result<(Self::Reader, Self::Writer)> {
        let stream = Async::<TcpStream>::connect(addr).await?;
        // Small requests must not wait for Nagle; failure only costs latency.
        let _ = stream.get_ref().set_nodelay(true);
        let stream = Arc::new(stream);
        Ok((stream.clone(), stream))
    }

    async fn read<'a>(reader: &'a mut Self::Reader, buf: &'a mut ReadBuf) -> io::Result<Bytes> {
        let n = (&**reader).read(buf.slice()).await?;
        Ok(buf.filled(n))
    }

    async fn write_all<'a>(writer: &'a mut Self::Writer, bytes: &'a [u8]) -> io::Result<()> {
        (&**writer).write_all(bytes).await
    }
}
