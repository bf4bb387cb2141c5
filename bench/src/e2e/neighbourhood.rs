//! The physical neighbourhood, measured in the same run: one loopback TCP connection,
//! sender pinned to the client's core and receiver to the broker's, 256 KiB writes.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Instant;

use super::sys;

/// Loopback throughput in GB/s (10^9 B) over `total` bytes.
pub(crate) fn loopback_gbps(
    total: u64,
    sender_core: Option<usize>,
    receiver_core: Option<usize>,
) -> Result<f64, String> {
    const CHUNK: usize = 256 * 1024;
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let receiver = std::thread::spawn(move || -> std::io::Result<(u64, f64)> {
        if let Some(c) = receiver_core {
            sys::pin_current_thread(c);
        }
        let (mut s, _) = listener.accept()?;
        let mut buf = vec![0u8; CHUNK];
        let mut got = 0u64;
        let mut t0 = None;
        loop {
            let n = s.read(&mut buf)?;
            if n == 0 {
                break;
            }
            t0.get_or_insert_with(Instant::now);
            got += n as u64;
        }
        Ok((got, t0.map_or(0.0, |t| t.elapsed().as_secs_f64())))
    });
    let sender = std::thread::spawn(move || -> std::io::Result<()> {
        if let Some(c) = sender_core {
            sys::pin_current_thread(c);
        }
        let mut s = TcpStream::connect(addr)?;
        let buf = vec![0x5au8; CHUNK];
        let mut left = total;
        while left > 0 {
            let n = left.min(CHUNK as u64) as usize;
            s.write_all(&buf[..n])?;
            left -= n as u64;
        }
        Ok(())
    });
    sender
        .join()
        .map_err(|_| "sender panicked".to_string())?
        .map_err(|e| format!("sender: {e}"))?;
    let (got, secs) = receiver
        .join()
        .map_err(|_| "receiver panicked".to_string())?
        .map_err(|e| format!("receiver: {e}"))?;
    if got != total || secs <= 0.0 {
        return Err(format!("received {got} of {total} bytes"));
    }
    Ok(got as f64 / secs / 1e9)
}
