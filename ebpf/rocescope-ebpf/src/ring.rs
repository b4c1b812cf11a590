//! The ring buffers records go out on, their wake-up batching, and the
//! per-CPU counters: shared by the record path (`program`) and the summary
//! path (`summary`), which both depend on this module and not on each other.
//!
//! Two layouts, chosen at load time (`PER_CPU_RINGS`): one ring buffer all
//! CPUs share (`RECORDS`), or a ring per CPU (`RINGS`, an array of maps
//! indexed by `bpf_get_smp_processor_id()`, whose rings userspace creates
//! and inserts). A shared ring's producers serialise on its spinlock,
//! which stops scaling beyond a CPU or two (the kernel's ring-buffer
//! benchmark); a CPU's own ring has one producer.

use core::ffi::c_void;

use aya_ebpf::bindings::{BPF_RB_AVAIL_DATA, BPF_RB_FORCE_WAKEUP, BPF_RB_NO_WAKEUP};
use aya_ebpf::btf_maps::{ArrayOfMaps, RingBuf as BtfRingBuf};
use aya_ebpf::helpers::generated::{bpf_get_smp_processor_id, bpf_ringbuf_query};
use aya_ebpf::macros::{btf_map, map};
use aya_ebpf::maps::{PerCpuArray, RingBuf};
use rocescope_common::{PacketRecord, live};

/// The shared ring (`PER_CPU_RINGS` clear). With per-CPU rings the loader
/// shrinks it to a page.
#[map(name = "RECORDS")]
static RECORDS: RingBuf = RingBuf::with_byte_size(live::DEFAULT_RING_BYTES, 0);

/// A CPU's ring as the program sees it. The size here is only the inner
/// map template's: since Linux 5.10 (`bpf_map_meta_equal` no longer
/// compares `max_entries` but for arrays) a ring buffer inserted into the
/// array must match it by type, key and value size and flags only, so
/// userspace inserts rings of `--ring-size` (older kernels refuse them:
/// `--rings shared` there).
type CpuRing = BtfRingBuf<PacketRecord, 4096>;

/// A ring per CPU (`PER_CPU_RINGS` set), indexed by CPU number; the loader
/// sizes it to the possible CPUs.
#[btf_map]
static RINGS: ArrayOfMaps<CpuRing, { live::MAX_RINGS as usize }> = ArrayOfMaps::new();

/// Set by the loader: write to the running CPU's ring in `RINGS` rather
/// than to the shared `RECORDS`.
#[unsafe(no_mangle)]
static PER_CPU_RINGS: u8 = 0;

/// Puts `item` on the ring of this CPU (or the shared ring); false when
/// it is full (or this CPU has no ring).
#[inline(always)]
pub(crate) fn output<T>(item: &T) -> bool {
    let size = core::mem::size_of::<T>() as u64;
    // SAFETY: a read-only global the loader may have set.
    if unsafe { core::ptr::read_volatile(&PER_CPU_RINGS) } != 0 {
        // SAFETY: no arguments; the CPU this program run is on.
        let cpu = unsafe { bpf_get_smp_processor_id() };
        let Some(ring) = RINGS.get(cpu) else {
            return false;
        };
        let ptr = core::ptr::from_ref(ring).cast_mut().cast::<c_void>();
        // SAFETY: `ptr` is the inner map the lookup returned.
        let waiting = || unsafe { bpf_ringbuf_query(ptr, BPF_RB_AVAIL_DATA.into()) };
        ring.output_untyped::<T>(item, wakeup_flags(size, waiting))
            .is_ok()
    } else {
        let waiting = || RECORDS.query(BPF_RB_AVAIL_DATA.into());
        RECORDS
            .output::<T>(item, wakeup_flags(size, waiting))
            .is_ok()
    }
}

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
fn wakeup_flags(size: u64, waiting: impl FnOnce() -> u64) -> u64 {
    // SAFETY: a read-only global the loader may have set.
    let threshold = unsafe { core::ptr::read_volatile(&WAKEUP_BYTES) };
    if threshold == 0 {
        return 0;
    }
    let waiting = waiting();
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
