//! `kafka-driver`: the pieces every socket-owning adapter of the sans-IO `kafka-core`
//! client shares, written once.
//!
//! - [`Hub`] owns the core and one [`Outlet`] per socket and runs *the* drain loop
//!   (`poll_io` → `poll_transmit` → `poll_event`) until the core is idle. Bytes are pulled
//!   from the core only for outlets that are [`writable`](Outlet::writable), so a socket
//!   that cannot take bytes leaves them in the core; its adapter reports
//!   [`SocketReport::Writable`] when it drains. Events become [`Notice`]s for the user's
//!   hook and `tracing` logs (feature `tracing`, on by default), or are kept for
//!   [`Hub::poll_event`].
//! - [`pipe`](pipe::pipe) is the bounded outbound pipe to a socket's task or thread, and
//!   [`ReadBuf`] the per-socket read buffer whose reads are split off, not copied.
//! - [`chan`] is a small bounded queue usable from async tasks of any runtime and from
//!   threads: drivers' inboxes are bounded, so a reader waits instead of piling up reads.
//! - [`producer`] is the producer surface the adapters share: owned records, the
//!   batched staging queue, per-record delivery handles and the driver-side
//!   [`ProducerCore`](producer::ProducerCore) the hub routes the machine's events to.
//! - [`consumer`] is the consumer surface they share: the app-side queue of fetched
//!   records ([`Mailbox`](consumer::Mailbox)) and the driver-side
//!   [`ConsumerCore`](consumer::ConsumerCore) that fills it from the core's consumer.
//! - [`group`] is the group consumer surface on top of it: the app-side
//!   [`GroupMailbox`](group::GroupMailbox) (rebalance events for the application's
//!   listener, the positions it has taken), commit handles, and the driver-side
//!   [`GroupCore`](group::GroupCore).
//! - [`front`] is the async adapter written once over a small [`front::Runtime`] trait
//!   (spawn, timer, resolve, connect, read, write): tokio and async-std supply only that.
//!
//! The I/O the core must not do lives here too: [`new_client`] (reads `ssl.*.location`
//! files), [`os_seed`] (randomness for SCRAM nonces and jitter) and [`wall_clock`]
//! (certificate validity).
//!
//! Memory per socket, beyond the core's own frame buffer (at most
//! `receive.message.max.bytes` for the frame being read): an outlet holds at most
//! [`OUTBOUND_HIGH_WATER`] bytes plus one `poll_transmit`; a task-based adapter's inbox
//! holds at most [`front::INBOX_REPORTS`] reads of at most [`READ_CHUNK`] bytes.

pub mod chan;
pub mod consumer;
pub mod front;
pub mod group;
mod hub;
pub mod pipe;
pub mod pipeline;
pub mod producer;

use std::io::Read;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kafka_core::client::{Client, ClientError};
use kafka_core::config::{ClientConfig, ClientDnsLookup};

pub use hub::{Hub, HubStats, Notice, OnNotice, Outlet, SocketReport, Watcher};
pub use kafka_core::conn::SocketError;
pub use pipe::{PipeOutlet, PipeSource, ReadBuf, OUTBOUND_HIGH_WATER, READ_CHUNK};

/// An I/O error as the typed [`SocketError`] the core takes: refused, reset, timed out
/// by kind; anything else with the operating system's words.
pub fn socket_error(e: &std::io::Error) -> SocketError {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::ConnectionRefused => SocketError::Refused,
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => SocketError::Reset,
        K::TimedOut => SocketError::ConnectTimedOut,
        K::UnexpectedEof => SocketError::ClosedByPeer,
        _ => SocketError::Io(e.to_string()),
    }
}

/// Answers the core's [`Event::OAuthTokenNeeded`] from the configured token provider
/// (the core never calls it itself); other events are left to the caller.
pub fn answer_token_request(core: &mut Client, event: &kafka_core::client::Event) {
    if !matches!(event, kafka_core::client::Event::OAuthTokenNeeded) {
        return;
    }
    let provider = core.config().security().sasl.token_provider.clone();
    let token = match provider {
        Some(p) => p.token(),
        None => Err("no OAUTHBEARER token provider configured".into()),
    };
    core.handle_oauth_token(std::time::Instant::now(), token);
}

/// The core client for `config`, with the `ssl.*.location` files read from disk (the
/// core opens no files) and fresh OS randomness as its seed.
///
/// `client.dns.lookup=resolve_canonical_bootstrap_servers_only` is refused: it needs a
/// reverse lookup (std has none) and the canonical names as the core's bootstrap hosts
/// (TLS verifies against them), which the core does not take from adapters. Every
/// adapter implements the default, `use_all_dns_ips`.
pub fn new_client(config: ClientConfig) -> Result<Client, ClientError> {
    if config.common().client_dns_lookup == ClientDnsLookup::ResolveCanonicalBootstrapServersOnly {
        return Err(ClientError::Config(
            "client.dns.lookup=resolve_canonical_bootstrap_servers_only is not supported \
             (use the default, use_all_dns_ips)"
                .into(),
        ));
    }
    let config = config
        .with_ssl_files_loaded(|path| std::fs::read(path))
        .map_err(|e| ClientError::Config(e.to_string()))?;
    Client::new(config, os_seed())
}

/// Time since the Unix epoch, for TLS certificate validity.
pub fn wall_clock() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Fresh randomness for `Client::new` (SCRAM nonces, backoff jitter): the OS source where
/// there is one, else hashes of the clock with std's randomly keyed hasher.
pub fn os_seed() -> [u8; 32] {
    let mut seed = [0u8; 32];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut seed))
        .is_err()
    {
        use std::hash::{BuildHasher, Hasher};
        for chunk in seed.chunks_mut(8) {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(wall_clock().as_nanos());
            chunk.copy_from_slice(&h.finish().to_be_bytes());
        }
    }
    seed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_bootstrap_lookup_is_refused_and_the_default_accepted() {
        let pairs = |dns| {
            ClientConfig::from_pairs([
                ("bootstrap.servers", "127.0.0.1:9092"),
                ("client.dns.lookup", dns),
            ])
            .expect("config")
        };
        let refused = new_client(pairs("resolve_canonical_bootstrap_servers_only"));
        assert!(
            matches!(&refused, Err(ClientError::Config(m)) if m.contains("client.dns.lookup")),
            "{refused:?}"
        );
        assert!(new_client(pairs("use_all_dns_ips")).is_ok());
    }
}
