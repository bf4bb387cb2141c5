//! The core's `tracing` events and spans, compiled away without the `tracing` feature.
//!
//! Call sites write `trace::warn!(node, cause = %e, "...")` with `tracing`'s syntax; with
//! the feature off the macros expand to nothing (their arguments are not evaluated), so
//! kafka-core builds without the crate. Rules for what is logged: operator-facing events
//! only — connection life cycle, negotiation and authentication results, retries with
//! their cause, metadata changes as summaries, timeouts with their last cause, producer
//! and consumer incidents — never per record, never a secret (no credentials, tokens,
//! key material, config values of secret keys: `Secret` prints as `[redacted]`).

#[cfg(feature = "tracing")]
macro_rules! trace_error { ($($t:tt)*) => { ::tracing::error!($($t)*) } }
#[cfg(feature = "tracing")]
macro_rules! trace_warn { ($($t:tt)*) => { ::tracing::warn!($($t)*) } }
#[cfg(feature = "tracing")]
macro_rules! trace_info { ($($t:tt)*) => { ::tracing::info!($($t)*) } }
#[cfg(feature = "tracing")]
macro_rules! trace_debug { ($($t:tt)*) => { ::tracing::debug!($($t)*) } }

#[cfg(not(feature = "tracing"))]
macro_rules! trace_error {
    ($($t:tt)*) => {{}};
}
#[cfg(not(feature = "tracing"))]
macro_rules! trace_warn {
    ($($t:tt)*) => {{}};
}
#[cfg(not(feature = "tracing"))]
macro_rules! trace_info {
    ($($t:tt)*) => {{}};
}
#[cfg(not(feature = "tracing"))]
macro_rules! trace_debug {
    ($($t:tt)*) => {{}};
}

pub(crate) use {
    trace_debug as debug, trace_error as error, trace_info as info, trace_warn as warn,
};

/// A span around everything one operation (an admin call or a long-lived machine) does
/// while the client polls it: its events and its requests' retries nest under it.
#[derive(Debug, Clone)]
pub(crate) struct OpSpan(#[cfg(feature = "tracing")] tracing::Span);

impl OpSpan {
    /// The span of operation `id`, named by its type (`op`: the type name without module
    /// paths, e.g. `Call<DescribeClusterRequest>`).
    pub(crate) fn new(id: u64, type_name: &'static str) -> OpSpan {
        #[cfg(feature = "tracing")]
        {
            OpSpan(tracing::info_span!("kafka_op", id, op = %ShortName(type_name)))
        }
        #[cfg(not(feature = "tracing"))]
        {
            let _ = (id, type_name);
            OpSpan()
        }
    }

    /// Runs `f` inside the span.
    pub(crate) fn in_scope<T>(&self, f: impl FnOnce() -> T) -> T {
        #[cfg(feature = "tracing")]
        {
            self.0.in_scope(f)
        }
        #[cfg(not(feature = "tracing"))]
        {
            f()
        }
    }
}

/// An optional value for a field: the value, or `none`.
#[cfg(feature = "tracing")]
pub(crate) struct OrNone<'a, T>(pub(crate) &'a Option<T>);

#[cfg(feature = "tracing")]
impl<T: std::fmt::Display> std::fmt::Display for OrNone<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(v) => v.fmt(f),
            None => f.write_str("none"),
        }
    }
}

/// A type name with its module paths left out, formatted only if a subscriber records it.
#[cfg(feature = "tracing")]
struct ShortName(&'static str);

#[cfg(feature = "tracing")]
impl std::fmt::Display for ShortName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut rest = self.0;
        while let Some(at) = rest.find(['<', '>', ',', ' ', '(', ')', '[', ']', ';', '&']) {
            let (path, tail) = rest.split_at(at);
            f.write_str(path.rsplit("::").next().unwrap_or(path))?;
            f.write_str(&tail[..1])?;
            rest = &tail[1..];
        }
        f.write_str(rest.rsplit("::").next().unwrap_or(rest))
    }
}

#[cfg(all(test, feature = "tracing"))]
mod tests {
    use super::ShortName;

    #[test]
    fn short_names_leave_module_paths_out() {
        let name = "kafka_core::admin::call::Call<kafka_core::protocol::messages::X, u8>";
        assert_eq!(ShortName(name).to_string(), "Call<X, u8>");
    }
}
