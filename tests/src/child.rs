//! Test helpers around processes the real-broker tests start: a child killed (SIGKILL)
//! when dropped, and Kafka's Java console consumers with the records they print.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

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

/// One of Kafka's Java console consumers (`ConsoleConsumer`, `ConsoleShareConsumer`) from
/// the rig's Kafka (`KAFKA_RIG_LIB`), printing partition and offset with each value; a
/// thread collects what it prints. Killed when dropped.
pub struct JavaConsole {
    _child: KilledOnDrop,
    records: Arc<Mutex<Vec<(i32, i64, u64)>>>,
}

impl JavaConsole {
    /// Starts `class` (in `org.apache.kafka.tools.consumer`) with `args`.
    pub fn start(class: &str, args: &[String]) -> JavaConsole {
        let lib = crate::rig_var("KAFKA_RIG_LIB").expect("KAFKA_RIG_LIB in the rig's env file");
        let mut child = Command::new("java")
            .arg("-cp")
            .arg(format!("{lib}/*"))
            .arg(format!("org.apache.kafka.tools.consumer.{class}"))
            .args(args)
            .args(["--formatter-property", "print.partition=true"])
            .args(["--formatter-property", "print.offset=true"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("java");
        let out = child.stdout.take().expect("stdout");
        let records = Arc::new(Mutex::new(Vec::new()));
        let r = records.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(record) = console_record(&line) {
                    r.lock().unwrap_or_else(|e| e.into_inner()).push(record);
                }
            }
        });
        JavaConsole {
            _child: KilledOnDrop(child),
            records,
        }
    }

    /// `(partition, offset, value)` of every record printed so far, in order.
    pub fn records(&self) -> Vec<(i32, i64, u64)> {
        self.records
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// How many records it printed so far.
    pub fn count(&self) -> usize {
        self.records.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}
