//! Test helpers around processes the real-broker tests start: a child killed (SIGKILL)
//! when dropped, and the record lines Kafka's Java console consumers print.

use std::process::Child;

/// A child process killed (SIGKILL) and reaped when dropped, so a failing test leaves
/// none behind.
pub struct KilledOnDrop(pub Child);

impl KilledOnDrop {
    /// Whether it still runs.
    pub fn alive(&mut self) -> bool {
        self.0.try_wait().expect("wait").is_none()
    }

    /// Kills (SIGKILL) and reaps it now.
    pub fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for KilledOnDrop {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `(partition, offset, value)` of a line a Java console (share) consumer printed with
/// `print.partition=true` and `print.offset=true`: `Partition:3<TAB>Offset:17<TAB>value`.
pub fn console_record(line: &str) -> Option<(i32, i64, u64)> {
    let mut f = line.split('\t');
    let p = f.next()?.strip_prefix("Partition:")?.parse().ok()?;
    let o = f.next()?.strip_prefix("Offset:")?.parse().ok()?;
    let v = f.next()?.parse().ok()?;
    Some((p, o, v))
}
