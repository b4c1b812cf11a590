//! A thread per ring: takes its items off as they come and hands them, in
//! batches, to the event loop (which puts the rings back in time order,
//! see `reorder`).
//!
//! Each thread waits in `poll(2)` on its ring for the kernel's wake-up or
//! for the poll interval (what batched wake-ups leave below the threshold
//! arrives then), and sends every round — empty or not — with the time the
//! ring was found empty, which lets the merge release other rings' items
//! without waiting out its window. A full channel blocks the thread: the
//! ring then fills and the kernel counts what it cannot put on it.
//!
//! The batches' buffers come back from the merge once emptied ([`Spares`]):
//! a buffer grown afresh every round (up to 0.8 MB) showed in the drain
//! threads' profile as `memmove`, `malloc` and `unmap_page_range`.
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::mpsc;

use super::rings::{self, RingItem, TapRing};
use crate::{Error, Result};

/// Items one round takes off a ring before handing them over (about
/// 0.8 MB of records).
const BATCH: usize = 4096;

/// One round of one ring's thread.
pub struct Batch {
    /// Index of the ring (in the order [`spawn`] was given them).
    pub ring: usize,
    pub items: Vec<RingItem>,
    /// Kernel time at which the round started, if it emptied the ring.
    pub emptied_at: Option<u64>,
}

/// The drain threads of a run.
pub struct Drains {
    threads: Vec<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
    spares: Spares,
}

/// Emptied batch buffers, shared by the drain threads and the loop that
/// empties them.
#[derive(Clone, Default)]
pub struct Spares(Arc<Mutex<Vec<Vec<RingItem>>>>);

impl Spares {
    /// Buffers to fill again (emptied by their taker).
    pub fn give(&self, mut emptied: Vec<Vec<RingItem>>) {
        if emptied.is_empty() {
            return;
        }
        if let Ok(mut pool) = self.0.lock() {
            pool.append(&mut emptied);
        }
    }

    /// An empty buffer for a round.
    fn take(&self) -> Vec<RingItem> {
        let reused = self.0.lock().ok().and_then(|mut pool| pool.pop());
        let mut items = reused.unwrap_or_default();
        items.clear();
        items.reserve(BATCH);
        items
    }
}

impl Drains {
    /// Spawns a thread per ring; their batches arrive on the receiver.
    pub fn spawn(rings: Vec<TapRing>, poll: Duration) -> Result<(Drains, mpsc::Receiver<Batch>)> {
        let (tx, rx) = mpsc::channel(2 * rings.len() + 2);
        let stop = Arc::new(AtomicBool::new(false));
        let spares = Spares::default();
        let mut threads = Vec::with_capacity(rings.len());
        for (i, ring) in rings.into_iter().enumerate() {
            let name = match ring.cpu {
                Some(cpu) => format!("ring-cpu{cpu}"),
                None => "ring".to_string(),
            };
            let (tx, stop, spares) = (tx.clone(), stop.clone(), spares.clone());
            let t = std::thread::Builder::new()
                .name(name)
                .spawn(move || drain_ring(i, ring, &tx, &stop, &spares, poll))
                .map_err(|e| Error::Live(format!("cannot start a ring thread: {e}")))?;
            threads.push(t);
        }
        Ok((
            Drains {
                threads,
                stop,
                spares,
            },
            rx,
        ))
    }

    /// Where the batches' buffers go back once emptied.
    pub fn spares(&self) -> Spares {
        self.spares.clone()
    }

    /// Tells the threads to empty their rings once more and end (call
    /// once the program is detached: nothing more comes then). The
    /// receiver sees the last batches, then the end of the channel.
    pub fn finish(&self) {
        self.stop.store(true, Ordering::Release);
    }

    /// Waits for the threads (after the channel ended).
    pub fn join(self) {
        for t in self.threads {
            let _ = t.join();
        }
    }
}

fn drain_ring(
    index: usize,
    mut ring: TapRing,
    tx: &mpsc::Sender<Batch>,
    stop: &AtomicBool,
    spares: &Spares,
    poll: Duration,
) {
    let fd = ring.ring.as_raw_fd();
    let timeout = i32::try_from(poll.as_millis()).unwrap_or(i32::MAX).max(1);
    loop {
        // Read before the round: a round that empties the ring has drained
        // everything committed before then.
        let last = stop.load(Ordering::Acquire);
        let started = monotonic_ns();
        let mut items = spares.take();
        let mut emptied_at = None;
        while items.len() < BATCH {
            match ring.ring.next() {
                Some(bytes) => items.extend(rings::item_from_bytes(&bytes)),
                None => {
                    emptied_at = Some(started);
                    break;
                }
            }
        }
        let emptied = emptied_at.is_some();
        let batch = Batch {
            ring: index,
            items,
            emptied_at,
        };
        if tx.blocking_send(batch).is_err() || (last && emptied) {
            return;
        }
        if emptied {
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd; the ring keeps its fd open.
            unsafe { libc::poll(&mut pfd, 1, timeout) };
        }
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the clock `bpf_ktime_get_ns` reads.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}
