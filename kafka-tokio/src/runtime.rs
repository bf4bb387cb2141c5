//! The tokio glue for [`kafka_driver::front`]: spawning on a runtime handle, tokio's
//! timer, resolver and sockets.

use std::io;
use std::net::SocketAddr;
use std::time::Instant;

use bytes::Bytes;
use kafka_driver::front::{Runtime, Task};
use kafka_driver::ReadBuf;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::runtime::Handle;

/// A tokio runtime, by its handle.
#[derive(Clone, Debug)]
pub(crate) struct Tokio(pub(crate) Handle);

impl Runtime for Tokio {
    type Reader = OwnedReadHalf;
    type Writer = OwnedWriteHalf;

    fn spawn(&self, task: Task) {
        self.0.spawn(task);
    }

    async fn sleep_until(&self, at: Instant) {
        tokio::time::sleep_until(at.into()).await;
    }

    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        Ok(tokio::net::lookup_host((host, port)).await?.collect())
    }

    async fn connect(&self, addr: SocketAddr) -> io::Result<(OwnedReadHalf, OwnedWriteHalf)> {
        let stream = TcpStream::connect(addr).await?;
        // Small requests must not wait for Nagle; failure only costs latency.
        let _ = stream.set_nodelay(true);
        Ok(stream.into_split())
    }

    async fn read<'a>(reader: &'a mut OwnedReadHalf, buf: &'a mut ReadBuf) -> io::Result<Bytes> {
        reader.read_buf(buf.spare()).await?;
        Ok(buf.take())
    }

    async fn write_all<'a>(writer: &'a mut OwnedWriteHalf, bytes: &'a [u8]) -> io::Result<()> {
        writer.write_all(bytes).await
    }
}
