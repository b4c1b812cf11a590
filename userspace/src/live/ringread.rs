//! Taking a BPF ring buffer's items a round at a time.
//!
//! aya's `RingBuf::next` publishes the consumer position after every item:
//! a store to the cache line the XDP program reads at every reservation
//! (for the space left), so every item moved that line from the producing
//! CPU to the draining one and back. A round here reads the producer
//! position, walks every item committed, and publishes the consumer
//! position once, when it has caught up or taken its most. Measured with
//! one producing CPU, the drain threads' CPU did not move beyond the noise
//! (0.99 of before, docs/benchmarks.md "livecpu2"): there the line's
//! round trips overlap the copy; several producing CPUs are not measured.
//!
//! The layout is the kernel's ring buffer map's (`kernel/bpf/ringbuf.c`):
//! its mmap's first page holds the consumer position (the only page a
//! reader may write); from the next page on, read-only, the producer
//! position's page and then the data pages mapped twice in a row, so an
//! item that wraps around the end reads as one. An item starts at a
//! multiple of 8 with an 8-byte header: its length, with bit 31 set while
//! it is reserved and not yet committed and bit 30 when it was discarded.
//!
//! Wake-ups are unchanged: the program asks for them (`--wakeup`), or the
//! kernel wakes a reader whose published position has caught up with the
//! item committed; a round publishes before it looks for more and before
//! the drain thread sleeps, and `poll(2)` returns at once while data waits.
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering, fence};

use crate::{Error, Result};

/// An item's header bits: reserved, not committed yet.
const BUSY: u32 = 1 << 31;
/// An item's header bits: discarded by the program (skipped).
const DISCARD: u32 = 1 << 30;
/// An item's header: its length (and the bits above), and the kernel's page offset.
const HEADER: usize = 8;

/// One mmap of the ring map, unmapped when dropped.
struct Mapping {
    ptr: *mut libc::c_void,
    len: usize,
}

impl Mapping {
    fn new(fd: BorrowedFd<'_>, len: usize, prot: libc::c_int, offset: usize) -> Result<Self> {
        let offset = libc::off_t::try_from(offset)
            .map_err(|_| Error::Live("ring buffer too large to map".into()))?;
        // SAFETY: a fresh shared mapping of the map's fd; the kernel checks
        // the length, protection and offset against the ring's layout.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                offset,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(Error::Live(format!(
                "cannot map the ring buffer: {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(Mapping { ptr, len })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: this mapping, unmapped once.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

/// A reader of one ring buffer map (one consumer at a time).
pub struct RingReader {
    consumer: Mapping,
    producer: Mapping,
    /// Where the data pages start in `producer`.
    data: usize,
    /// The ring's size less one (a power of two).
    mask: usize,
    /// The consumer position: what has been read (published or not).
    pos: usize,
}

// SAFETY: the mappings are plain shared memory, used by one thread at a
// time (the reader is moved to its drain thread, never shared).
unsafe impl Send for RingReader {}

impl RingReader {
    /// Maps the ring buffer map `fd` of `bytes` (a power of two, a
    /// multiple of the page size).
    pub fn new(fd: BorrowedFd<'_>, bytes: u32) -> Result<Self> {
        // SAFETY: no arguments, no failure.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .ok()
            .filter(|p| *p > 0)
            .unwrap_or(4096);
        let size = usize::try_from(bytes).unwrap_or(0);
        if !size.is_power_of_two() || size < page {
            return Err(Error::Live(format!(
                "ring buffer of {bytes} bytes: not a power of two of pages"
            )));
        }
        let consumer = Mapping::new(fd, page, libc::PROT_READ | libc::PROT_WRITE, 0)?;
        let producer = Mapping::new(fd, page + 2 * size, libc::PROT_READ, page)?;
        let mut reader = RingReader {
            consumer,
            producer,
            data: page,
            mask: size - 1,
            pos: 0,
        };
        reader.pos = reader.consumer_pos().load(Ordering::Acquire);
        Ok(reader)
    }

    fn consumer_pos(&self) -> &AtomicUsize {
        // SAFETY: the consumer page starts with the kernel's `unsigned
        // long consumer_pos`, page-aligned, mapped as long as `self`.
        unsafe { &*self.consumer.ptr.cast::<AtomicUsize>() }
    }

    fn producer_pos(&self) -> &AtomicUsize {
        // SAFETY: as `consumer_pos`, the producer page's `producer_pos`.
        unsafe { &*self.producer.ptr.cast::<AtomicUsize>() }
    }

    /// The header of the item at `offset` (< the ring's size).
    fn header(&self, offset: usize) -> &AtomicU32 {
        // SAFETY: `offset` is within the first mapping of the data pages
        // and a multiple of 8; the header is 4-aligned.
        unsafe {
            &*self
                .producer
                .ptr
                .cast::<u8>()
                .add(self.data + offset)
                .cast::<AtomicU32>()
        }
    }

    fn publish(&self) {
        // Pairs with the kernel's acquire load before it reuses the space.
        self.consumer_pos().store(self.pos, Ordering::Release);
    }

    /// Hands `each` the ring's committed items in order, at most `max` of
    /// them, and publishes the consumer position once past them. Returns
    /// whether the round found the ring empty (nothing more committed;
    /// an item still being written counts as not yet there).
    pub fn round(&mut self, max: usize, mut each: impl FnMut(&[u8])) -> bool {
        let mut taken = 0;
        let mut producer = self.producer_pos().load(Ordering::Acquire);
        let emptied = loop {
            if self.pos == producer {
                // Caught up: publish, then look again (the kernel's
                // wake-up on catch-up compares with what is published).
                self.publish();
                fence(Ordering::SeqCst);
                producer = self.producer_pos().load(Ordering::Acquire);
                if self.pos == producer {
                    break true;
                }
            }
            if taken == max {
                break false;
            }
            let offset = self.pos & self.mask;
            // Pairs with the kernel's commit (an xchg of the header).
            let header = self.header(offset).load(Ordering::Acquire);
            if header & BUSY != 0 {
                break true;
            }
            let len = (header & !(BUSY | DISCARD)) as usize;
            if len + HEADER > self.mask + 1 {
                // Not a header the kernel writes: leave the ring alone.
                break true;
            }
            if header & DISCARD == 0 {
                // SAFETY: the item's bytes follow its header within the
                // data pages' two mappings (offset + header + len < 2 ×
                // size), committed and not reused before we publish.
                let bytes = unsafe {
                    std::slice::from_raw_parts(
                        self.producer
                            .ptr
                            .cast::<u8>()
                            .add(self.data + offset + HEADER),
                        len,
                    )
                };
                each(bytes);
                taken += 1;
            }
            self.pos = self.pos.wrapping_add((len + HEADER).next_multiple_of(8));
        };
        self.publish();
        emptied
    }
}
