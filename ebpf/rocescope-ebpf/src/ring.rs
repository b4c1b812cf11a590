//! The ring buffer records go out on, its wake-up batching, and the per-CPU
//! counters: shared by the record path (`program`) and the summary path
//! (`summary`), which both depend on this module and not on each other.

use aya_ebpf::bindings::{BPF_RB_AVAIL_DATA, BPF_RB_FORCE_WAKEUP, BPF_RB_NO_WAKEUP};
use aya_ebpf::macros::map;
use aya_ebpf::maps::{PerCpuArray, RingBuf};
use rocescope_common::live;

#[map(name = "RECORDS")]
pub(crate) static RECORDS: RingBuf = RingBuf::with_byte_size(live::DEFAULT_RING_BYTES, 0);

/// One entry: this CPU's counters side by side, so a frame looks them up
/// once (see [`Counters`]).
#[map(name = "COUNTERS")]
static COUNTERS: PerCpuArray<live::CounterSlots> = PerCpuArray::with_max_entries(1, 0);

/// Set by the loader: wake the consumer only when the bytes waiting on the
/// ring cross a multiple of this (0: the kernel's default, a wake-up
/// whenever the consumer has caught up — up to one per record when it
/// keeps up). The consumer polls on a short timer as well, so records
/// below the threshold still arrive.
#[unsafe(no_mangle)]
static WAKEUP_BYTES: u64 = 0;

/// Ring-buffer output flags for an item of `size` bytes: batch the
/// consumer's wake-ups (see `WAKEUP_BYTES`).
///
/// A wake-up is forced only by the item that makes the bytes waiting cross
/// a multiple of the threshold, not by every item once the threshold is
/// reached: each forced wake-up queues an irq_work (a self-IPI, ~6.5 µs in
/// this VM, measured with the live bench's program cost), and a consumer
/// that is busy elsewhere (a row-group flush) would otherwise make every
/// frame pay it until it drains. A consumer that stays behind is woken
/// again each further threshold of bytes; a crossing missed by two CPUs
/// racing is caught at the next one or by the consumer's poll timer.
#[inline(always)]
pub(crate) fn wakeup_flags(size: u64) -> u64 {
    // SAFETY: a read-only global the loader may have set.
    let threshold = unsafe { core::ptr::read_volatile(&WAKEUP_BYTES) };
    if threshold == 0 {
        return 0;
    }
    let waiting = RECORDS.query(BPF_RB_AVAIL_DATA.into());
    // The ring adds an 8-byte header and rounds to 8 bytes.
    let after = waiting + ((size + 8 + 7) & !7);
    let crossed = if threshold & (threshold - 1) == 0 {
        // A power of two (the default): no division (two cost ~5 ns).
        (after ^ waiting) & !(threshold - 1) != 0
    } else {
        after / threshold != waiting / threshold
    };
    if crossed {
        BPF_RB_FORCE_WAKEUP.into()
    } else {
        BPF_RB_NO_WAKEUP.into()
    }
}

/// This CPU's counters, looked up once per frame (a lookup per bump cost
/// up to four per frame).
#[derive(Clone, Copy)]
pub(crate) struct Counters(*mut live::CounterSlots);

impl Counters {
    #[inline(always)]
    pub(crate) fn get() -> Option<Counters> {
        COUNTERS.get_ptr_mut(0).map(Counters)
    }

    #[inline(always)]
    pub(crate) fn bump(self, slot: u32) {
        // SAFETY: this CPU's map value; no other program run touches it
        // meanwhile. `slot` is one of the `live::COUNTER_*` constants.
        unsafe { (*self.0)[slot as usize] += 1 };
    }
}
