//! The few OS calls std does not offer: `wait4` (a child's CPU time and peak RSS),
//! signalling a child's process group, pinning the calling thread to a core.
#![allow(unsafe_code)]

use std::io;

/// Resource use of one reaped child (and the descendants it waited for).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Usage {
    pub(crate) user_s: f64,
    pub(crate) sys_s: f64,
    /// Peak resident set size (`ru_maxrss`), KiB.
    pub(crate) maxrss_kib: u64,
}

/// How a child ended.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Exit {
    Code(i32),
    Signal(i32),
}

fn tv(t: libc::timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 / 1e6
}

/// Blocks until child `pid` ends; reaps it and returns its exit and resource use.
pub(crate) fn wait4(pid: i32) -> io::Result<(Exit, Usage)> {
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is plain old data; zeroed is a valid value for it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: both pointers are to live locals of the right types.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let exit = if libc::WIFEXITED(status) {
        Exit::Code(libc::WEXITSTATUS(status))
    } else {
        Exit::Signal(libc::WTERMSIG(status))
    };
    Ok((
        exit,
        Usage {
            user_s: tv(ru.ru_utime),
            sys_s: tv(ru.ru_stime),
            maxrss_kib: ru.ru_maxrss.max(0) as u64,
        },
    ))
}

/// SIGKILL to the process group `pgid` (a child spawned as its own group leader).
pub(crate) fn kill_group(pgid: i32) {
    if pgid > 1 {
        // SAFETY: kill(2) with a negative pid signals that process group; no memory involved.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

/// Pins the calling thread to `core`; false if the kernel refused.
pub(crate) fn pin_current_thread(core: usize) -> bool {
    // SAFETY: cpu_set_t is plain old data; CPU_ZERO/CPU_SET write inside it; 0 = this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(core, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// Clock ticks per second (`/proc/<pid>/stat` CPU times are in ticks).
pub(crate) fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no memory arguments.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}
