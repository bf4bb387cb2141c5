//! A small multi-producer, single-consumer queue that works from async tasks of any
//! runtime (wakers) and from plain threads (a condition variable), so every adapter's
//! driver waits on the same kind of inbox.
//!
//! The capacity bounds [`Sender::send`] / [`Sender::send_blocking`] (they wait while the
//! queue is full: a socket reader pauses instead of piling up copies); [`Sender::push`]
//! ignores it, for the few messages that must never wait (a caller's command, a
//! cancellation from a destructor).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

struct Inner<T> {
    queue: VecDeque<T>,
    cap: usize,
    senders: usize,
    receiver_alive: bool,
    rx_waker: Option<Waker>,
    tx_wakers: Vec<Waker>,
}

struct Shared<T> {
    inner: Mutex<Inner<T>>,
    cond: Condvar,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A queue holding at most `cap` messages sent with the waiting methods (`usize::MAX`:
/// unbounded).
pub fn channel<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Shared {
        inner: Mutex::new(Inner {
            queue: VecDeque::new(),
            cap: cap.max(1),
            senders: 1,
            receiver_alive: true,
            rx_waker: None,
            tx_wakers: Vec::new(),
        }),
        cond: Condvar::new(),
    });
    (
        Sender {
            shared: shared.clone(),
        },
        Receiver { shared },
    )
}

/// The sending side; clone it for more producers.
pub struct Sender<T> {
    shared: Arc<Shared<T>>,
}

/// The receiving side (one consumer).
pub struct Receiver<T> {
    shared: Arc<Shared<T>>,
}

/// Why [`Receiver::recv_deadline`] returned without a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvError {
    /// The deadline passed.
    Timeout,
    /// Every sender is gone and the queue is empty.
    Disconnected,
}

impl<T> Sender<T> {
    /// Queues `value` regardless of the capacity; `Err(value)` when the receiver is gone.
    pub fn push(&self, value: T) -> Result<(), T> {
        let mut inner = self.shared.lock();
        if !inner.receiver_alive {
            return Err(value);
        }
        inner.queue.push_back(value);
        let waker = inner.rx_waker.take();
        drop(inner);
        self.shared.cond.notify_all();
        if let Some(w) = waker {
            w.wake();
        }
        Ok(())
    }

    /// Queues `value`, waiting (asynchronously) while the queue is full; `Err(value)`
    /// when the receiver is gone.
    pub fn send(&self, value: T) -> Send<'_, T> {
        Send {
            sender: self,
            value: Some(value),
        }
    }

    /// Queues `value`, blocking the thread while the queue is full; `Err(value)` when
    /// the receiver is gone.
    pub fn send_blocking(&self, value: T) -> Result<(), T> {
        let mut inner = self.shared.lock();
        while inner.receiver_alive && inner.queue.len() >= inner.cap {
            inner = self
                .shared
                .cond
                .wait(inner)
                .unwrap_or_else(PoisonError::into_inner);
        }
        drop(inner);
        self.push(value)
    }

    /// Whether the receiver is gone.
    pub fn is_closed(&self) -> bool {
        !self.shared.lock().receiver_alive
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.shared.lock().senders += 1;
        Sender {
            shared: self.shared.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut inner = self.shared.lock();
        inner.senders -= 1;
        if inner.senders == 0 {
            let waker = inner.rx_waker.take();
            drop(inner);
            self.shared.cond.notify_all();
            if let Some(w) = waker {
                w.wake();
            }
        }
    }
}

impl<T> std::fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender").finish_non_exhaustive()
    }
}

/// The future of [`Sender::send`].
pub struct Send<'a, T> {
    sender: &'a Sender<T>,
    value: Option<T>,
}

impl<T> Unpin for Send<'_, T> {}

impl<T> Future for Send<'_, T> {
    type Output = Result<(), T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let shared = &self.sender.shared;
        let mut inner = shared.lock();
        if inner.receiver_alive && inner.queue.len() >= inner.cap {
            if !inner.tx_wakers.iter().any(|w| w.will_wake(cx.waker())) {
                inner.tx_wakers.push(cx.waker().clone());
            }
            return Poll::Pending;
        }
        drop(inner);
        let Some(value) = self.value.take() else {
            return Poll::Ready(Ok(()));
        };
        Poll::Ready(self.sender.push(value))
    }
}

impl<T> Receiver<T> {
    /// The next message; `Ready(None)` once every sender is gone and the queue is empty.
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut inner = self.shared.lock();
        if let Some(v) = self.take(&mut inner) {
            return Poll::Ready(Some(v));
        }
        if inner.senders == 0 {
            return Poll::Ready(None);
        }
        inner.rx_waker = Some(cx.waker().clone());
        Poll::Pending
    }

    /// The next message, asynchronously; `None` once every sender is gone.
    pub async fn recv(&mut self) -> Option<T> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// The next message if one is queued.
    pub fn try_recv(&mut self) -> Option<T> {
        let mut inner = self.shared.lock();
        self.take(&mut inner)
    }

    /// The next message, blocking the thread until it arrives or `deadline` passes
    /// (`None`: no deadline).
    pub fn recv_deadline(&mut self, deadline: Option<Instant>) -> Result<T, RecvError> {
        let mut inner = self.shared.lock();
        loop {
            if let Some(v) = self.take(&mut inner) {
                return Ok(v);
            }
            if inner.senders == 0 {
                return Err(RecvError::Disconnected);
            }
            inner = match deadline {
                None => self
                    .shared
                    .cond
                    .wait(inner)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(at) => {
                    let now = Instant::now();
                    if now >= at {
                        return Err(RecvError::Timeout);
                    }
                    self.shared
                        .cond
                        .wait_timeout(inner, at - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        }
    }

    /// Gives up on the queue: from now on senders fail (as if the receiver were
    /// dropped); returns the first message queued before, if any. A caller whose wait
    /// timed out closes instead of dropping, so a reply either reaches it or its sender
    /// learns that nobody took it.
    pub fn close(&mut self) -> Option<T> {
        let mut inner = self.shared.lock();
        inner.receiver_alive = false;
        let first = inner.queue.pop_front();
        let rest = std::mem::take(&mut inner.queue);
        let wakers = std::mem::take(&mut inner.tx_wakers);
        drop(inner);
        self.shared.cond.notify_all();
        for w in wakers {
            w.wake();
        }
        drop(rest);
        first
    }

    /// Whether every sender is gone (queued messages may remain).
    pub fn is_disconnected(&self) -> bool {
        self.shared.lock().senders == 0
    }

    /// Pops one message and wakes the senders waiting for room.
    fn take(&self, inner: &mut Inner<T>) -> Option<T> {
        let v = inner.queue.pop_front()?;
        if inner.queue.len() < inner.cap {
            for w in inner.tx_wakers.drain(..) {
                w.wake();
            }
            self.shared.cond.notify_all();
        }
        Some(v)
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let mut inner = self.shared.lock();
        inner.receiver_alive = false;
        let queued = std::mem::take(&mut inner.queue);
        let wakers = std::mem::take(&mut inner.tx_wakers);
        drop(inner);
        self.shared.cond.notify_all();
        for w in wakers {
            w.wake();
        }
        // Dropped outside the lock: a message may own a sender of this very queue.
        drop(queued);
    }
}

impl<T> std::fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receiver").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn bounded_send_waits_for_room_and_push_does_not() {
        let (tx, mut rx) = channel::<u32>(2);
        tx.send_blocking(1).unwrap();
        tx.send_blocking(2).unwrap();
        tx.push(3).unwrap();
        let t = {
            let tx = tx.clone();
            std::thread::spawn(move || tx.send_blocking(4))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!t.is_finished(), "a full queue makes send_blocking wait");
        assert_eq!(rx.recv_deadline(None), Ok(1));
        assert_eq!(rx.recv_deadline(None), Ok(2));
        t.join().unwrap().unwrap();
        assert_eq!(rx.try_recv(), Some(3));
        assert_eq!(rx.try_recv(), Some(4));
        let soon = Instant::now() + Duration::from_millis(20);
        assert_eq!(rx.recv_deadline(Some(soon)), Err(RecvError::Timeout));
        drop(tx);
        assert_eq!(rx.recv_deadline(None), Err(RecvError::Disconnected));
    }

    #[test]
    fn closing_returns_what_came_and_fails_later_pushes() {
        let (tx, mut rx) = channel::<u32>(1);
        assert_eq!(rx.close(), None);
        assert_eq!(tx.push(1), Err(1), "closed: nobody takes it");
        assert!(tx.is_closed());
        let (tx, mut rx) = channel::<u32>(1);
        tx.push(1).unwrap();
        assert_eq!(rx.close(), Some(1), "queued before the close");
        assert_eq!(tx.push(2), Err(2));
        assert_eq!(rx.try_recv(), None);
    }

    #[test]
    fn dropping_the_receiver_fails_senders() {
        let (tx, rx) = channel::<u32>(1);
        tx.push(1).unwrap();
        let t = {
            let tx = tx.clone();
            std::thread::spawn(move || tx.send_blocking(2))
        };
        std::thread::sleep(Duration::from_millis(20));
        drop(rx);
        assert_eq!(t.join().unwrap(), Err(2));
        assert!(tx.is_closed());
        assert_eq!(tx.push(3), Err(3));
    }
}
