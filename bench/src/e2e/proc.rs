//! Runs one client process: pinned to a core with `taskset`, in its own process group,
//! stdout/stderr to files, bounded by a timeout; reaped with `wait4` for its CPU time
//! and peak RSS.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::sys::{self, Exit, Usage};

/// A command line with extra environment.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cmd {
    pub(crate) argv: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) cwd: Option<PathBuf>,
}

impl Cmd {
    pub(crate) fn new<S: Into<String>>(argv: impl IntoIterator<Item = S>) -> Self {
        Cmd {
            argv: argv.into_iter().map(Into::into).collect(),
            ..Cmd::default()
        }
    }
    pub(crate) fn arg(mut self, a: impl Into<String>) -> Self {
        self.argv.push(a.into());
        self
    }
    pub(crate) fn env(mut self, k: impl Into<String>, v: impl Into<String>) -> Self {
        self.env.push((k.into(), v.into()));
        self
    }
    /// The command as one shell-like line (for logs and the report).
    pub(crate) fn display(&self) -> String {
        let env: Vec<String> = self.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let mut parts = env;
        parts.extend(self.argv.iter().map(|a| {
            if a.contains(' ') {
                format!("'{a}'")
            } else {
                a.clone()
            }
        }));
        parts.join(" ")
    }
}

/// What one run of a client process gave.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub(crate) exit: Exit,
    pub(crate) timed_out: bool,
    pub(crate) wall_s: f64,
    pub(crate) usage: Usage,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Outcome {
    pub(crate) fn success(&self) -> bool {
        matches!(self.exit, Exit::Code(0)) && !self.timed_out
    }
    pub(crate) fn cpu_s(&self) -> f64 {
        self.usage.user_s + self.usage.sys_s
    }
    /// A one-line reason for a failed process.
    pub(crate) fn failure(&self) -> String {
        let how = match (self.timed_out, self.exit) {
            (true, _) => "timed out".to_string(),
            (false, Exit::Code(c)) => format!("exit status {c}"),
            (false, Exit::Signal(s)) => format!("killed by signal {s}"),
        };
        let tail: Vec<&str> = self
            .stderr
            .lines()
            .rev()
            .filter(|l| !l.trim().is_empty())
            .take(3)
            .collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        format!("{how}: {}", tail.join(" | "))
    }
}

/// Whether `taskset` is usable here (checked once per run of the harness).
pub(crate) fn have_taskset() -> bool {
    Command::new("taskset")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `cmd` (pinned to `core` when given and `taskset` exists), logging to
/// `log_base`.out / .err; SIGKILLs its process group after `timeout`.
pub(crate) fn run(
    cmd: &Cmd,
    core: Option<usize>,
    timeout: Duration,
    log_base: &Path,
) -> std::io::Result<Outcome> {
    let out_path = log_base.with_extension("out");
    let err_path = log_base.with_extension("err");
    if let Some(dir) = log_base.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut c = match core {
        Some(core) => {
            let mut c = Command::new("taskset");
            c.arg("-c").arg(core.to_string()).args(&cmd.argv);
            c
        }
        None => {
            let mut c = Command::new(&cmd.argv[0]);
            c.args(&cmd.argv[1..]);
            c
        }
    };
    c.envs(cmd.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::from(File::create(&out_path)?))
        .stderr(Stdio::from(File::create(&err_path)?))
        .process_group(0);
    if let Some(d) = &cmd.cwd {
        c.current_dir(d);
    }
    let t0 = Instant::now();
    let child = c.spawn()?;
    let pid = child.id() as i32;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(sys::wait4(pid));
    });
    let mut timed_out = false;
    let waited = match rx.recv_timeout(timeout) {
        Ok(r) => r,
        Err(_) => {
            timed_out = true;
            sys::kill_group(pid);
            rx.recv().map_err(std::io::Error::other)?
        }
    };
    let wall_s = t0.elapsed().as_secs_f64();
    // The child was reaped by wait4; `child` must not be waited on again.
    drop(child);
    let (exit, usage) = waited?;
    Ok(Outcome {
        exit,
        timed_out,
        wall_s,
        usage,
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
    })
}
