//! A `tracing` subscriber that prints every core and adapter event to stderr with the
//! time since it was installed: the attempts behind a slow real-broker call show up in
//! the test's output (cargo keeps it for failing tests only), and [`lines`] lets the test
//! assert on them.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Every event printed so far.
static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Stderr {
    start: Instant,
    next_id: AtomicU64,
}

struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={:?}", field.name(), value);
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, " {}={}", field.name(), value);
    }
}

impl Subscriber for Stderr {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let t = self.start.elapsed().as_secs_f64();
        let mut line = Line(format!("[{t:8.3}s] {}", event.metadata().level()));
        event.record(&mut line);
        eprintln!("{}", line.0);
        LINES.lock().expect("event log lock").push(line.0);
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// Prints every event from now on (process-wide; the first call wins).
pub fn to_stderr() {
    let _ = tracing::subscriber::set_global_default(Stderr {
        start: Instant::now(),
        next_id: AtomicU64::new(1),
    });
}

/// The events printed so far, one line each (` name=value` fields after the level).
pub fn lines() -> Vec<String> {
    LINES.lock().expect("event log lock").clone()
}
