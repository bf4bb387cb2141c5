//! The driver thread: owns the [`Hub`], runs the drain loop, and waits on one bounded
//! inbox for callers' commands, socket reports and the core's next deadline. Every socket
//! gets a connector thread (resolve, then every address in order, each within
//! the setup timeout the core gives the attempt) that becomes its reader, plus a writer thread fed
//! by the socket's [`PipeSource`]; no connect ever runs on the driver or a caller.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use kafka_core::client::{Client, ConnId};
use kafka_driver::chan::{self, Receiver, RecvError, Sender};
use kafka_driver::pipe::pipe;
use kafka_driver::{
    socket_error, wall_clock, Hub, PipeOutlet, PipeSource, ReadBuf, SocketError, SocketReport,
};

/// How many socket reports may wait for the driver before readers pause.
pub(crate) const INBOX_REPORTS: usize = 16;

/// Work for the driver thread, run on its hub.
pub(crate) type Command = Box<dyn FnOnce(&mut Hub<PipeOutlet>, Instant) + Send>;

/// What the driver thread's inbox carries.
pub(crate) enum Msg {
    Command(Command),
    Report(SocketReport),
    Shutdown,
}

/// Spawns the driver thread for `core`; returns the inbox callers push commands into.
pub(crate) fn spawn(core: Client) -> std::io::Result<Sender<Msg>> {
    let (tx, rx) = chan::channel(INBOX_REPORTS);
    let reports = tx.clone();
    std::thread::Builder::new()
        .name("kafka-driver".into())
        .spawn(move || run(Hub::new(core), rx, reports))?;
    Ok(tx)
}

fn run(mut hub: Hub<PipeOutlet>, mut inbox: Receiver<Msg>, reports: Sender<Msg>) {
    let mut shutting_down = false;
    loop {
        hub.flush(|conn, host, port, setup| {
            let (outlet, source) = pipe();
            let reports = reports.clone();
            std::thread::Builder::new()
                .name(format!("kafka-conn-{}", conn.0))
                .spawn(move || socket(conn, &host, port, setup, source, &reports))
                .map_err(|e| SocketError::Io(format!("cannot start a socket thread: {e}")))?;
            Ok(outlet)
        });
        if shutting_down && !hub.producers_running() {
            break;
        }
        let deadline = hub.poll_timeout();
        match inbox.recv_deadline(deadline) {
            Ok(Msg::Command(command)) => {
                hub.core.handle_wall_clock(wall_clock());
                command(&mut hub, Instant::now());
            }
            Ok(Msg::Report(report)) => hub.report(report),
            // Producers whose handles are gone still finish what they were given.
            Ok(Msg::Shutdown) if hub.producers_running() => shutting_down = true,
            Ok(Msg::Shutdown) | Err(RecvError::Disconnected) => break,
            Err(RecvError::Timeout) => {
                hub.handle_timeout(Instant::now());
                continue;
            }
        }
        // An inbox that is never empty never times out: fire what is due anyway.
        let now = Instant::now();
        if deadline.is_some_and(|d| d <= now) {
            hub.handle_timeout(now);
        }
    }
    hub.close_all();
}

/// One socket's connector-then-reader thread.
fn socket(
    conn: ConnId,
    host: &str,
    port: u16,
    setup: Duration,
    source: PipeSource,
    reports: &Sender<Msg>,
) {
    let report = |r| reports.send_blocking(Msg::Report(r)).is_ok();
    let stream = match connect_any(host, port, setup) {
        Ok(stream) => stream,
        Err(cause) => {
            report(SocketReport::Closed(conn, cause));
            return;
        }
    };
    if source.is_closed() {
        return; // the core gave up on this socket while it was connecting
    }
    let writer = match stream.try_clone() {
        Ok(w) => w,
        Err(e) => {
            report(SocketReport::Closed(conn, socket_error(&e)));
            return;
        }
    };
    if !report(SocketReport::Connected(conn)) {
        return;
    }
    let tx = reports.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("kafka-write-{}", conn.0))
        .spawn(move || write(conn, writer, source, &tx));
    if let Err(e) = spawned {
        report(SocketReport::Closed(
            conn,
            SocketError::Io(format!("cannot start a writer: {e}")),
        ));
        return;
    }
    let mut reader = stream;
    let mut buf = ReadBuf::new();
    loop {
        match reader.read(buf.slice()) {
            Ok(0) => {
                report(SocketReport::Closed(conn, SocketError::ClosedByPeer));
                break;
            }
            // Waits while the driver's inbox is full: no pile of copies.
            Ok(n) => {
                if !report(SocketReport::Data(conn, buf.filled(n))) {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                report(SocketReport::Closed(conn, socket_error(&e)));
                break;
            }
        }
    }
    let _ = reader.shutdown(Shutdown::Both);
}

/// One socket's writer thread: writes what the driver hands over; when the driver closes
/// the outlet, shuts the socket down (which ends the reader).
fn write(conn: ConnId, mut stream: TcpStream, mut source: PipeSource, reports: &Sender<Msg>) {
    while let Some(chunk) = source.next_blocking() {
        if let Err(e) = stream.write_all(&chunk) {
            let _ = reports.push(Msg::Report(SocketReport::Closed(conn, socket_error(&e))));
            break;
        }
        if source.written(chunk) {
            let _ = reports.push(Msg::Report(SocketReport::Writable(conn)));
        }
    }
    let _ = stream.shutdown(Shutdown::Both);
}

/// Resolves `host` and connects to its addresses in order (`use_all_dns_ips`), each
/// attempt within `setup`; the last failure if none connects.
pub(crate) fn connect_any(
    host: &str,
    port: u16,
    setup: Duration,
) -> Result<TcpStream, SocketError> {
    let addrs = (host, port)
        .to_socket_addrs()
        .map_err(|e| SocketError::Resolve(e.to_string()))?;
    let mut last = SocketError::Resolve("no address".into());
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, setup) {
            Ok(stream) => {
                // Small requests must not wait for Nagle; failure only costs latency.
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Err(e) => last = socket_error(&e),
        }
    }
    Err(last)
}
