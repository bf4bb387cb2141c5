//! The proxy's threads: the accept loop per node and, per client connection, the
//! request and response pumps that read frames, apply the node's fault and rewrite
//! broker addresses in the answers.

use super::*;

/// A token bucket of one direction: the time the link is free again.
pub(super) struct Pacer {
    free_at: Instant,
}

impl Pacer {
    fn new() -> Pacer {
        Pacer {
            free_at: Instant::now(),
        }
    }

    pub(super) fn write(&mut self, to: &mut TcpStream, chunk: &[u8], rate: u64) -> io::Result<()> {
        let now = Instant::now();
        if self.free_at > now {
            std::thread::sleep(self.free_at - now);
        }
        to.write_all(chunk)?;
        let took = Duration::from_secs_f64(chunk.len() as f64 / rate as f64);
        self.free_at = self.free_at.max(now) + took;
        Ok(())
    }
}

/// One proxied connection: the client socket, its upstream socket, and the requests
/// in flight on it.
pub(super) struct Conn {
    pub(super) id: u64,
    pub(super) node: i32,
    client: TcpStream,
    upstream: TcpStream,
    /// Correlation id → (API key, version) of requests forwarded and not yet answered.
    inflight: Mutex<HashMap<i32, (i16, i16)>>,
    client_cut: AtomicBool,
    upstream_cut: AtomicBool,
    /// After a [`Fault::ResetAfterRequest`]: the request whose answer ends the upstream side.
    last_answer: Mutex<Option<i32>>,
}

impl Conn {
    /// Shuts the client socket down (answers read from now on are dropped).
    pub(super) fn cut_client(&self) {
        self.client_cut.store(true, Ordering::SeqCst);
        let _ = self.client.shutdown(Shutdown::Both);
    }

    /// The decision to cut the client side as a fault, before the socket is shut down:
    /// answers read from now on are dropped, and the reset is counted (before the client
    /// can notice) unless the client side was already cut.
    fn begin_reset(&self, shared: &Shared) {
        if !self.client_cut.swap(true, Ordering::SeqCst) {
            shared.counters.resets.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// [`Conn::cut_client`] as a fault ([`Conn::begin_reset`], then the shutdown).
    pub(super) fn reset_client(&self, shared: &Shared) {
        self.begin_reset(shared);
        let _ = self.client.shutdown(Shutdown::Both);
    }

    pub(super) fn cut_upstream(&self) {
        self.upstream_cut.store(true, Ordering::SeqCst);
        let _ = self.upstream.shutdown(Shutdown::Both);
    }
}

pub(super) fn accept_loop(
    shared: &Arc<Shared>,
    node: i32,
    target: SocketAddr,
    listener: &TcpListener,
) {
    while !shared.stop.load(Ordering::SeqCst) {
        let (client, peer) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(_) => {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
        };
        let id = shared.next_conn.fetch_add(1, Ordering::Relaxed);
        shared.counters.connections.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = open(shared, id, node, target, client, peer) {
            shared
                .counters
                .upstream_failures
                .fetch_add(1, Ordering::Relaxed);
            shared.record(Some(id), Some(node), format!("from {peer}: {e}"));
        }
    }
}

/// Connects upstream for a newly accepted client and starts both directions.
fn open(
    shared: &Arc<Shared>,
    id: u64,
    node: i32,
    target: SocketAddr,
    client: TcpStream,
    peer: SocketAddr,
) -> io::Result<()> {
    client.set_nonblocking(false)?;
    let upstream = match TcpStream::connect_timeout(&target, CONNECT_TIMEOUT) {
        Ok(u) => u,
        Err(e) => {
            let _ = client.shutdown(Shutdown::Both);
            return Err(io::Error::new(e.kind(), format!("upstream {target}: {e}")));
        }
    };
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let conn = Arc::new(Conn {
        id,
        node,
        client: client.try_clone()?,
        upstream: upstream.try_clone()?,
        inflight: Mutex::new(HashMap::new()),
        client_cut: AtomicBool::new(false),
        upstream_cut: AtomicBool::new(false),
        last_answer: Mutex::new(None),
    });
    lock(&shared.conns).insert(id, conn.clone());
    shared.record(Some(id), Some(node), format!("accepted from {peer}"));
    let (sh, c) = (shared.clone(), conn.clone());
    let (client2, upstream2) = (client.try_clone()?, upstream.try_clone()?);
    let requests = std::thread::Builder::new()
        .name(format!("fault-proxy-c{id}-req"))
        .spawn(move || requests(&sh, &c, client2, upstream2))?;
    let (sh, c) = (shared.clone(), conn);
    let responses = std::thread::Builder::new()
        .name(format!("fault-proxy-c{id}-resp"))
        .spawn(move || responses(&sh, &c, upstream, client))?;
    let mut threads = lock(&shared.threads);
    threads.retain(|t| !t.is_finished());
    threads.extend([requests, responses]);
    Ok(())
}

/// One whole frame, size prefix included; `None` at end of stream or on an error.
fn read_frame(from: &mut TcpStream) -> Option<Vec<u8>> {
    let mut size = [0u8; 4];
    from.read_exact(&mut size).ok()?;
    let len = usize::try_from(i32::from_be_bytes(size)).ok()?;
    if len > MAX_FRAME {
        return None;
    }
    let mut frame = vec![0u8; 4 + len];
    frame[..4].copy_from_slice(&size);
    from.read_exact(&mut frame[4..]).ok()?;
    Some(frame)
}

/// Client → broker.
fn requests(shared: &Shared, conn: &Conn, mut client: TcpStream, mut upstream: TcpStream) {
    let mut pace = Pacer::new();
    while let Some(frame) = read_frame(&mut client) {
        if frame.len() < 12 {
            shared.record(Some(conn.id), Some(conn.node), "short request frame".into());
            break;
        }
        let api_key = i16::from_be_bytes([frame[4], frame[5]]);
        let version = i16::from_be_bytes([frame[6], frame[7]]);
        let corr = i32::from_be_bytes([frame[8], frame[9], frame[10], frame[11]]);
        let key = ApiKey::from_i16(api_key);
        let name = key.map_or("unknown API", ApiKey::name);
        let what = format!("{name} v{version} corr {corr}");
        match shared.on_request(conn.node, key) {
            OnRequest::Drop => {
                shared
                    .counters
                    .dropped_requests
                    .fetch_add(1, Ordering::Relaxed);
                shared.record(Some(conn.id), Some(conn.node), format!("blackhole: {what}"));
            }
            OnRequest::ResetBefore => {
                shared
                    .counters
                    .dropped_requests
                    .fetch_add(1, Ordering::Relaxed);
                shared.record(
                    Some(conn.id),
                    Some(conn.node),
                    format!("reset before {what} (not forwarded)"),
                );
                conn.reset_client(shared);
                break;
            }
            OnRequest::Forward(shape) => {
                lock(&conn.inflight).insert(corr, (api_key, version));
                shared.record_request(conn, corr, &frame);
                if !shared.forward(&mut upstream, &frame, shape, &mut pace) {
                    break;
                }
                shared
                    .counters
                    .requests_forwarded
                    .fetch_add(1, Ordering::Relaxed);
            }
            OnRequest::ForwardThenReset(shape) => {
                lock(&conn.inflight).insert(corr, (api_key, version));
                shared.record_request(conn, corr, &frame);
                *lock(&conn.last_answer) = Some(corr);
                // Before the forward, not just before the shutdown below: the broker can
                // answer as soon as the request is written, and `responses` must drop
                // that answer (it reads `client_cut`) rather than pass it on in the
                // moment before the client socket is shut down. Counting the reset here
                // also puts it ahead of that answer's `dropped_responses` and of
                // `responses` cutting the client side itself once the answer is in.
                conn.begin_reset(shared);
                if !shared.forward(&mut upstream, &frame, shape, &mut pace) {
                    break;
                }
                shared
                    .counters
                    .requests_forwarded
                    .fetch_add(1, Ordering::Relaxed);
                // The broker's answer ends the upstream side (`responses`); bounded
                // wait in case none comes.
                let _ = conn.upstream.set_read_timeout(Some(ANSWER_WAIT));
                shared.record(
                    Some(conn.id),
                    Some(conn.node),
                    format!("reset after {what} (forwarded, answer to be dropped)"),
                );
                conn.reset_client(shared);
                return;
            }
        }
    }
    conn.cut_client();
    conn.cut_upstream();
}

/// Broker → client.
fn responses(shared: &Shared, conn: &Conn, mut upstream: TcpStream, mut client: TcpStream) {
    let mut pace = Pacer::new();
    while let Some(frame) = read_frame(&mut upstream) {
        if frame.len() < 8 {
            shared.record(
                Some(conn.id),
                Some(conn.node),
                "short response frame".into(),
            );
            break;
        }
        let corr = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
        let request = lock(&conn.inflight).remove(&corr);
        if let Some(r) = lock(&shared.recording).as_mut() {
            r.response(conn.id, corr, &frame);
        }
        let what = match request.and_then(|(k, v)| Some((ApiKey::from_i16(k)?, v))) {
            Some((key, v)) => format!("{} v{v} corr {corr}", key.name()),
            None => format!("corr {corr} (request not seen)"),
        };
        if conn.client_cut.load(Ordering::SeqCst) {
            shared
                .counters
                .dropped_responses
                .fetch_add(1, Ordering::Relaxed);
            shared.record(
                Some(conn.id),
                Some(conn.node),
                format!("answer lost: {what}"),
            );
            if *lock(&conn.last_answer) == Some(corr) {
                break;
            }
            continue;
        }
        let Some(shape) = shared.on_response(conn.node) else {
            shared
                .counters
                .dropped_responses
                .fetch_add(1, Ordering::Relaxed);
            shared.record(
                Some(conn.id),
                Some(conn.node),
                format!("response dropped: {what}"),
            );
            continue;
        };
        let rewritten = request.and_then(|(k, v)| rewrite(&frame, k, v, &shared.routes));
        if rewritten.is_some() {
            shared
                .counters
                .rewritten_responses
                .fetch_add(1, Ordering::Relaxed);
        }
        let out = rewritten.as_deref().unwrap_or(&frame);
        if !shared.forward(&mut client, out, shape, &mut pace) {
            break;
        }
        shared
            .counters
            .responses_forwarded
            .fetch_add(1, Ordering::Relaxed);
    }
    conn.cut_client();
    conn.cut_upstream();
    lock(&shared.conns).remove(&conn.id);
}

/// The response `frame` (size prefix included) to a request of `api_key` at `version`
/// with its broker addresses pointed at the proxy's listeners, or `None` if it is not
/// a response that carries any, names no proxied node, or does not decode.
fn rewrite(
    frame: &[u8],
    api_key: i16,
    version: i16,
    routes: &HashMap<i32, SocketAddr>,
) -> Option<Vec<u8>> {
    let key = ApiKey::from_i16(api_key)?;
    let mut body = Bytes::copy_from_slice(&frame[4..]);
    let header_version = key.response_header_version(version);
    let header = ResponseHeader::decode(&mut body, header_version).ok()?;
    let route = |node: i32| {
        routes
            .get(&node)
            .map(|a| (a.ip().to_string(), i32::from(a.port())))
    };
    let mut changed = false;
    let mut point = |node: i32, host: &mut String, port: &mut i32| {
        if let Some((h, p)) = route(node) {
            if *host != h || *port != p {
                *host = h;
                *port = p;
                changed = true;
            }
        }
    };
    let mut out = vec![0u8; 4];
    header.encode(&mut out, header_version).ok()?;
    match key {
        ApiKey::Metadata => {
            let mut m = MetadataResponse::decode_from(body, version).ok()?;
            for b in &mut m.brokers {
                point(b.node_id, &mut b.host, &mut b.port);
            }
            m.encode_to(&mut out, version).ok()?;
        }
        ApiKey::FindCoordinator => {
            let mut m = FindCoordinatorResponse::decode_from(body, version).ok()?;
            if version < 4 {
                point(m.node_id, &mut m.host, &mut m.port);
            }
            for c in &mut m.coordinators {
                point(c.node_id, &mut c.host, &mut c.port);
            }
            m.encode_to(&mut out, version).ok()?;
        }
        ApiKey::DescribeCluster => {
            let mut m = DescribeClusterResponse::decode_from(body, version).ok()?;
            for b in &mut m.brokers {
                point(b.broker_id, &mut b.host, &mut b.port);
            }
            m.encode_to(&mut out, version).ok()?;
        }
        _ => return None,
    }
    if !changed {
        return None;
    }
    let size = i32::try_from(out.len() - 4).ok()?;
    out[..4].copy_from_slice(&size.to_be_bytes());
    Some(out)
}
