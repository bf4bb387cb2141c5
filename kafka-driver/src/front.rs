//! The async front shared by the tokio and async-std adapters: a driver task that owns
//! the [`Hub`], one task per socket, and a cloneable [`Handle`] whose calls are `'static`
//! futures that cancel their operation when dropped. A runtime supplies only what is
//! really its own through [`Runtime`]: spawning, a timer, name resolution, connecting and
//! reading/writing a socket. Channels are [`chan`], which needs no runtime.
//!
//! The driver task's turn: [`Hub::flush`] (the drain loop), then wait for a command from
//! a handle, a report from a socket task, or the core's timer. Socket tasks resolve the
//! broker's host, try every address in order (`client.dns.lookup=use_all_dns_ips`), each
//! within the attempt's setup timeout from the core (`socket.connection.setup.timeout.ms`
//! grown per failed attempt up to its `.max.ms`), then read into their [`ReadBuf`] and
//! report each read (waiting while the driver's inbox is full) and write what their
//! [`PipeSource`] hands them. The driver ends once every handle and call is dropped;
//! closing the outlets then ends every socket task.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::{pin, Pin};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_core::admin::{AdminError, RawRequest};
use kafka_core::client::{ClientError, ConnId, OpRef, Operation};
use kafka_core::cluster::{Metadata, Route};
use kafka_core::config::ClientConfig;
use kafka_core::conn::RequestError;
use kafka_core::protocol::Request;

use crate::chan::{self, Receiver, Sender};
use crate::pipe::{pipe, PipeOutlet, PipeSource, ReadBuf};
use crate::{socket_error, wall_clock, Hub, HubStats, Notice, SocketError, SocketReport};

mod consumer;
mod group;
mod producer;
mod share;
pub use consumer::AsyncConsumer;
pub use group::AsyncGroupConsumer;
pub use producer::{AsyncProducer, TxnFailure};
pub use share::{AckCallbackSlot, AsyncShareConsumer, ShareCallError};

/// How many socket reports may wait for the driver before readers pause.
pub const INBOX_REPORTS: usize = 16;

/// A future the front needs run in the background (the driver, one per socket).
pub type Task = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Work for the driver task, run on its hub.
pub type Command = Box<dyn FnOnce(&mut Hub<PipeOutlet>, Instant) + Send>;

/// What an async runtime provides to the front.
pub trait Runtime: Clone + Send + Sync + 'static {
    /// The read half of a connected socket.
    type Reader: Send + 'static;
    /// The write half of a connected socket.
    type Writer: Send + 'static;

    /// Runs `task` to completion in the background.
    fn spawn(&self, task: Task);

    /// Completes at `at`.
    fn sleep_until(&self, at: Instant) -> impl Future<Output = ()> + Send;

    /// The addresses of `host` (IP literals need no lookup), in resolver order.
    fn resolve(
        &self,
        host: &str,
        port: u16,
    ) -> impl Future<Output = io::Result<Vec<SocketAddr>>> + Send;

    /// Connects to `addr` (with `TCP_NODELAY`) and splits the socket.
    fn connect(
        &self,
        addr: SocketAddr,
    ) -> impl Future<Output = io::Result<(Self::Reader, Self::Writer)>> + Send;

    /// Reads once into `buf` and returns the bytes read, split off the buffer; empty at
    /// end of stream.
    fn read<'a>(
        reader: &'a mut Self::Reader,
        buf: &'a mut ReadBuf,
    ) -> impl Future<Output = io::Result<Bytes>> + Send + 'a;

    /// Writes all of `bytes`.
    fn write_all<'a>(
        writer: &'a mut Self::Writer,
        bytes: &'a [u8],
    ) -> impl Future<Output = io::Result<()>> + Send + 'a;
}

/// A timer future from the front's runtime (for waits outside the driver task).
type Sleep = Arc<dyn Fn(Instant) -> Task + Send + Sync>;

/// Starts the driver task for `config` on `rt` and returns its first handle.
pub fn start<R: Runtime>(rt: R, config: ClientConfig) -> Result<Handle, ClientError> {
    let core = crate::new_client(config)?;
    let (commands_tx, commands) = chan::channel(usize::MAX);
    let (reports_tx, reports) = chan::channel(INBOX_REPORTS);
    let driver = DriverTask {
        hub: Hub::new(core),
        commands,
        reports,
        reports_tx,
        rt: rt.clone(),
    };
    rt.spawn(Box::pin(driver.run()));
    let sleep: Sleep = Arc::new(move |at| {
        let rt = rt.clone();
        Box::pin(async move { rt.sleep_until(at).await })
    });
    Ok(Handle {
        commands: commands_tx,
        sleep,
    })
}

/// What woke the driver.
enum Wake {
    Command(Option<Command>),
    Report(SocketReport),
    Timer,
}

struct DriverTask<R> {
    hub: Hub<PipeOutlet>,
    commands: Receiver<Command>,
    reports: Receiver<SocketReport>,
    reports_tx: Sender<SocketReport>,
    rt: R,
}

impl<R: Runtime> DriverTask<R> {
    async fn run(mut self) {
        let mut reports_first = false;
        // Every handle is gone; producers still finish what they were given.
        let mut orphaned = false;
        loop {
            let (rt, reports) = (&self.rt, &self.reports_tx);
            self.hub.flush(|conn, host, port, setup| {
                let (outlet, source) = pipe();
                let socket =
                    socket_task(rt.clone(), conn, host, port, setup, source, reports.clone());
                rt.spawn(Box::pin(socket));
                Ok(outlet)
            });
            if orphaned && !self.hub.producers_running() {
                break;
            }
            let wake = self.hub.poll_timeout();
            let rt = self.rt.clone();
            let mut timer = pin!(async move {
                match wake {
                    Some(at) => rt.sleep_until(at).await,
                    None => std::future::pending().await,
                }
            });
            // Alternate which source goes first, so neither can starve the other.
            reports_first = !reports_first;
            let (commands, reports) = (&mut self.commands, &mut self.reports);
            let woke = std::future::poll_fn(|cx| {
                if reports_first {
                    if let Poll::Ready(Some(r)) = reports.poll_recv(cx) {
                        return Poll::Ready(Wake::Report(r));
                    }
                }
                if !orphaned {
                    if let Poll::Ready(c) = commands.poll_recv(cx) {
                        return Poll::Ready(Wake::Command(c));
                    }
                }
                if let Poll::Ready(Some(r)) = reports.poll_recv(cx) {
                    return Poll::Ready(Wake::Report(r));
                }
                if timer.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Wake::Timer);
                }
                Poll::Pending
            })
            .await;
            match woke {
                Wake::Command(Some(command)) => {
                    self.hub.core.handle_wall_clock(wall_clock());
                    command(&mut self.hub, Instant::now());
                }
                Wake::Command(None) if self.hub.producers_running() => orphaned = true,
                Wake::Command(None) => break,
                Wake::Report(report) => {
                    self.hub.report(report);
                    while let Some(report) = self.reports.try_recv() {
                        self.hub.report(report);
                    }
                }
                Wake::Timer => {
                    self.hub.handle_timeout(Instant::now());
                    continue;
                }
            }
            // Sources that are never empty keep the timer from being polled: fire what
            // is due anyway.
            let now = Instant::now();
            if wake.is_some_and(|at| at <= now) {
                self.hub.handle_timeout(now);
            }
        }
        self.hub.close_all();
    }
}

/// One socket: connect (every address in turn, each within this attempt's setup timeout
/// from the core), then
/// read and write until either side closes or the driver closes the outlet.
async fn socket_task<R: Runtime>(
    rt: R,
    conn: ConnId,
    host: String,
    port: u16,
    setup_timeout: Duration,
    mut source: PipeSource,
    reports: Sender<SocketReport>,
) {
    // Nothing is sent before `Connected`: `next` only ends when the driver closes us.
    let closed = std::future::poll_fn(|cx| source.poll_next(cx).map(|_| ()));
    let connected = match race(connect_any(&rt, &host, port, setup_timeout), closed).await {
        Either::Left(c) => c,
        Either::Right(()) => return,
    };
    let (mut reader, mut writer) = match connected {
        Ok(halves) => halves,
        Err(cause) => {
            let _ = reports.push(SocketReport::Closed(conn, cause));
            return;
        }
    };
    if reports.send(SocketReport::Connected(conn)).await.is_err() {
        return;
    }
    let read = async {
        let mut buf = ReadBuf::new();
        loop {
            match R::read(&mut reader, &mut buf).await {
                Ok(data) if data.is_empty() => return Some(SocketError::ClosedByPeer),
                Ok(data) => {
                    if reports.send(SocketReport::Data(conn, data)).await.is_err() {
                        return None;
                    }
                }
                Err(e) => return Some(socket_error(&e)),
            }
        }
    };
    let write = async {
        while let Some(chunk) = source.next().await {
            if let Err(e) = R::write_all(&mut writer, &chunk).await {
                return Some(socket_error(&e));
            }
            if source.written(chunk) {
                let _ = reports.push(SocketReport::Writable(conn));
            }
        }
        None
    };
    let cause = match race(read, write).await {
        Either::Left(c) | Either::Right(c) => c,
    };
    if let Some(cause) = cause {
        let _ = reports.push(SocketReport::Closed(conn, cause));
    }
}

/// Resolves `host` and connects to its addresses in order, each attempt within
/// `setup_timeout`; the last failure if none connects.
async fn connect_any<R: Runtime>(
    rt: &R,
    host: &str,
    port: u16,
    setup_timeout: Duration,
) -> Result<(R::Reader, R::Writer), SocketError> {
    let addrs = rt
        .resolve(host, port)
        .await
        .map_err(|e| SocketError::Resolve(e.to_string()))?;
    let mut last = SocketError::Resolve("no address".into());
    for addr in addrs {
        let deadline = Instant::now() + setup_timeout;
        match race(rt.connect(addr), rt.sleep_until(deadline)).await {
            Either::Left(Ok(halves)) => return Ok(halves),
            Either::Left(Err(e)) => last = socket_error(&e),
            Either::Right(()) => last = SocketError::ConnectTimedOut,
        }
    }
    Err(last)
}

enum Either<A, B> {
    Left(A),
    Right(B),
}

/// Whichever of `a` and `b` finishes first (`a` when both are ready).
async fn race<A: Future, B: Future>(a: A, b: B) -> Either<A::Output, B::Output> {
    let (mut a, mut b) = (pin!(a), pin!(b));
    std::future::poll_fn(|cx| {
        if let Poll::Ready(x) = a.as_mut().poll(cx) {
            return Poll::Ready(Either::Left(x));
        }
        if let Poll::Ready(y) = b.as_mut().poll(cx) {
            return Poll::Ready(Either::Right(y));
        }
        Poll::Pending
    })
    .await
}

/// A cloneable handle on the driver task; the driver stops when the last handle (and
/// the last unfinished [`Call`]) is dropped.
#[derive(Clone)]
pub struct Handle {
    commands: Sender<Command>,
    sleep: Sleep,
}

/// The id of an operation once the driver started it (set by the start command).
type StartedOp = Arc<Mutex<Option<OpRef>>>;

impl Handle {
    /// Starts `op` on the driver; the returned future is `'static` and `Send` (spawn it
    /// as is). Dropping it before it finishes cancels the operation in the core.
    pub fn run<O>(&self, op: O) -> Call<O::Output>
    where
        O: Operation,
        O::Output: Cancelled,
    {
        let (tx, rx) = chan::channel(1);
        let raw: StartedOp = Arc::new(Mutex::new(None));
        let started = raw.clone();
        let command: Command = Box::new(move |hub, now| {
            let id = hub.core.start_op_then(now, op, move |out| {
                let _ = tx.push(out);
            });
            if let Ok(mut slot) = started.lock() {
                *slot = Some(id.untyped());
            }
        });
        let cancel = self
            .commands
            .push(command)
            .ok()
            .map(|()| (self.commands.clone(), raw));
        Call { rx, cancel }
    }

    /// [`Handle::run`] of one raw request to `route` (resent after connection failures
    /// until `default.api.timeout.ms`).
    pub fn call<R>(&self, route: Route, request: R) -> Call<Result<R::Response, AdminError>>
    where
        R: Request + Clone + Send + Sync + std::fmt::Debug + 'static,
        R::Response: Send + 'static,
    {
        self.run(RawRequest::new(route, request))
    }

    /// A snapshot of the cached cluster metadata.
    pub fn metadata(&self) -> Reply<Metadata> {
        self.ask(|hub| hub.core.metadata().clone())
    }

    /// The outbound counters of the driver's hub.
    pub fn stats(&self) -> Reply<HubStats> {
        self.ask(|hub| hub.stats())
    }

    /// Sets the hook that receives [`Notice`]s (connection failures, metadata updates);
    /// it runs on the driver task, so it must not block. Replaces any earlier hook.
    pub fn on_notice(&self, hook: impl Fn(&Notice) + Send + Sync + 'static) {
        let hook: crate::OnNotice = Arc::new(hook);
        let _ = self
            .commands
            .push(Box::new(move |hub, _| hub.on_notice(Some(hook))));
    }

    /// Whether the driver task is gone.
    pub fn is_closed(&self) -> bool {
        self.commands.is_closed()
    }

    fn ask<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Hub<PipeOutlet>) -> T + Send + 'static,
    ) -> Reply<T> {
        let (tx, rx) = chan::channel(1);
        let _ = self.commands.push(Box::new(move |hub, _| {
            let _ = tx.push(f(hub));
        }));
        Reply { rx }
    }
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("driver_running", &!self.is_closed())
            .finish()
    }
}

/// An operation output that can also say "the driver is gone".
pub trait Cancelled {
    /// The output of an operation whose driver is gone.
    fn cancelled() -> Self;
}

impl<T> Cancelled for Result<T, AdminError> {
    fn cancelled() -> Self {
        Err(cancelled())
    }
}

/// A running operation: resolves to its output (`Result<T, AdminError>` for admin
/// operations), or to `AdminError::Request(RequestError::Cancelled)` if the driver is
/// gone. Dropping it early cancels the operation (`Client::cancel_op`).
#[must_use = "an operation is cancelled when its Call is dropped"]
pub struct Call<T> {
    rx: Receiver<T>,
    /// Where to send the cancellation, and the operation's raw id once started.
    cancel: Option<(Sender<Command>, StartedOp)>,
}

impl<T: Cancelled> Future for Call<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let out = match self.rx.poll_recv(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(out) => out,
        };
        self.cancel = None;
        Poll::Ready(out.unwrap_or_else(T::cancelled))
    }
}

impl<T> Drop for Call<T> {
    fn drop(&mut self) {
        if let Some((commands, raw)) = self.cancel.take() {
            // Commands run in order: the start has run when this does.
            let _ = commands.push(Box::new(move |hub, _| {
                if let Some(op) = raw.lock().ok().and_then(|slot| *slot) {
                    hub.core.cancel_op(op);
                }
            }));
        }
    }
}

impl<T> std::fmt::Debug for Call<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("finished", &self.cancel.is_none())
            .finish()
    }
}

/// The answer to a question put to the driver (metadata, stats): `Err(Cancelled)` if
/// the driver is gone.
#[must_use]
pub struct Reply<T> {
    rx: Receiver<T>,
}

impl<T> Future for Reply<T> {
    type Output = Result<T, AdminError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.rx.poll_recv(cx).map(|v| v.ok_or_else(cancelled))
    }
}

impl<T> std::fmt::Debug for Reply<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reply").finish_non_exhaustive()
    }
}

/// The error of a call whose driver is gone.
pub fn cancelled() -> AdminError {
    AdminError::Request(RequestError::Cancelled)
}
