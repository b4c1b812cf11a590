//! The XDP entry point, and the frame as the shared walk
//! (`rocescope_common::wire`) reads it: [`Pkt`], with the bounds checks and
//! the value laundering the verifier needs.
use core::ffi::c_void;

use aya_ebpf::bindings::{xdp_action, xdp_md};
use aya_ebpf::helpers::generated::{bpf_ktime_get_ns, bpf_xdp_get_buff_len, bpf_xdp_load_bytes};
use aya_ebpf::macros::{map, xdp};
use aya_ebpf::maps::PerCpuArray;
use aya_ebpf::programs::XdpContext;
use rocescope_common::wire::registry::TRANSPORT_COUNT;
use rocescope_common::wire::telemetry::TelemetryMarks;
use rocescope_common::wire::{self, Frame, Recognition};
use rocescope_common::{Kind, PacketRecord, live, proto};

use crate::ring::{self, Counters};
use crate::summary::{Fate, summarize};

/// Where a record is built: 200 bytes do not fit the BPF stack comfortably.
#[map(name = "SCRATCH")]
static SCRATCH: PerCpuArray<PacketRecord> = PerCpuArray::with_max_entries(1, 0);

/// One word the walk passes values through so the verifier forgets them
/// (see [`Pkt::opaque`]).
#[map(name = "OPAQUE")]
static OPAQUE: PerCpuArray<u64> = PerCpuArray::with_max_entries(1, 0);

/// Set by the loader (`--drop-after-capture`).
#[unsafe(no_mangle)]
static DROP_AFTER_CAPTURE: u8 = 0;

/// Set by the loader (`--mode summary`): see [`crate::summary`].
#[unsafe(no_mangle)]
static SUMMARY: u8 = 0;

/// Set by the loader: how old a flow's last delta may get in summary mode.
#[unsafe(no_mangle)]
static FLUSH_NS: u64 = live::DEFAULT_FLUSH_NS;

/// Set by the loader: each transport's UDP destination port
/// (`Recognition::udp_ports`).
#[unsafe(no_mangle)]
static UDP_PORTS: [u16; TRANSPORT_COUNT] = Recognition::DEFAULT.udp_ports;

/// Set by the loader: each transport's native IP protocol number
/// (`Recognition::ip_protocols`).
#[unsafe(no_mangle)]
static IP_PROTOCOLS: [u16; TRANSPORT_COUNT] = Recognition::DEFAULT.ip_protocols;

/// Set by the loader: where switch telemetry is marked
/// (`Recognition::telemetry`).
#[unsafe(no_mangle)]
static TELEMETRY: TelemetryMarks = Recognition::DEFAULT.telemetry;

#[xdp(frags)]
pub fn rocescope(ctx: XdpContext) -> u32 {
    let Some(counters) = Counters::get() else {
        return xdp_action::XDP_PASS;
    };
    counters.bump(live::COUNTER_FRAMES);
    let Some(rec) = SCRATCH.get_ptr_mut(0) else {
        return xdp_action::XDP_PASS;
    };
    // SAFETY: a per-CPU map value, used by this program run only.
    let rec = unsafe { &mut *rec };
    let Some(tmp) = OPAQUE.get_ptr_mut(0) else {
        return xdp_action::XDP_PASS;
    };
    let pkt = Pkt::new(ctx.ctx, tmp);
    if !decode(&pkt, rec) {
        counters.bump(live::COUNTER_PARSE_FAILURES);
    }
    if rec.kind == Kind::Other as u8 {
        return xdp_action::XDP_PASS;
    }
    rec.ts_ns = unsafe { bpf_ktime_get_ns() };
    // SAFETY: read-only globals the loader may have set.
    if unsafe { core::ptr::read_volatile(&SUMMARY) } != 0 {
        let flush_ns = unsafe { core::ptr::read_volatile(&FLUSH_NS) };
        match summarize(rec, rec.ts_ns, flush_ns, counters) {
            // Captured as a count: as good as recorded.
            Fate::Counted => return captured(),
            Fate::RingFull => {
                counters.bump(live::COUNTER_RING_FULL);
                return xdp_action::XDP_PASS;
            }
            Fate::Forward => {}
        }
    }
    if !ring::output::<PacketRecord>(rec) {
        counters.bump(live::COUNTER_RING_FULL);
        return xdp_action::XDP_PASS;
    }
    counters.bump(live::COUNTER_RECORDS);
    captured()
}

/// The verdict for a frame whose record (or count) the tap has.
#[inline(always)]
fn captured() -> u32 {
    // SAFETY: a read-only global the loader may have set.
    if unsafe { core::ptr::read_volatile(&DROP_AFTER_CAPTURE) } != 0 {
        xdp_action::XDP_DROP
    } else {
        xdp_action::XDP_PASS
    }
}

/// The benchmark's baseline: `XDP_PASS` and the frames counter, nothing else.
#[xdp(frags)]
pub fn rocescope_pass(_ctx: XdpContext) -> u32 {
    if let Some(counters) = Counters::get() {
        counters.bump(live::COUNTER_FRAMES);
    }
    xdp_action::XDP_PASS
}

/// Offsets from here on are read through the helper: the verifier gives a
/// packet pointer a range only while its offset stays below 64 KiB, and a
/// linear part is at most a few pages anyway.
const DIRECT_OFFSET_MAX: usize = 0x8000;

/// The frame: read in place where it lies in the linear part, through
/// `bpf_xdp_load_bytes` beyond it (see the crate docs, "Reads").
struct Pkt {
    ctx: *mut xdp_md,
    /// The linear part: `data..data_end` (packet pointers).
    data: usize,
    data_end: usize,
    /// The whole frame's length, fragments included.
    len: usize,
    tmp: *mut u64,
}

impl Pkt {
    fn new(ctx: *mut xdp_md, tmp: *mut u64) -> Pkt {
        let len = unsafe { bpf_xdp_get_buff_len(ctx) } as usize;
        // SAFETY: the context the kernel passed; the verifier turns these
        // loads into packet pointers.
        let (data, data_end) = unsafe { ((*ctx).data as usize, (*ctx).data_end as usize) };
        Pkt {
            ctx,
            data,
            data_end,
            len,
            tmp,
        }
    }

    /// Fills `dst` from the frame at `at` (the caller checked that `at`
    /// lies before `end` and `end` in the frame; `at` is at most 0xFFFF).
    ///
    /// Straight from the linear part when the bytes are there (a bounds
    /// check the verifier follows: the offset is bounded below
    /// `DIRECT_OFFSET_MAX`, so `data + off` is a packet pointer whose range
    /// becomes known once compared with `data_end`); `bpf_xdp_load_bytes`
    /// otherwise, which reaches into a multi-buffer frame's fragments.
    ///
    /// The offset goes through [`Frame::opaque`] first: a scalar added to a
    /// packet pointer becomes "precise" to the verifier, and every distinct
    /// offset range the walk can reach (VLAN tags, IHL, extension header
    /// combinations) would then be verified separately.
    #[inline(always)]
    fn copy_into<const N: usize>(&self, at: usize, dst: *mut [u8; N]) -> bool {
        let off = self.opaque(at);
        if off < DIRECT_OFFSET_MAX && self.data + off + N <= self.data_end {
            let p = self.data + off;
            // SAFETY: p..p + N lies in the linear part (checked above).
            unsafe { core::ptr::copy_nonoverlapping(p as *const u8, dst.cast::<u8>(), N) };
            return true;
        }
        let r = unsafe { bpf_xdp_load_bytes(self.ctx, at as u32, dst.cast::<c_void>(), N as u32) };
        r == 0
    }

    /// Whether `N` bytes at `at` lie before `end` and in the frame.
    #[inline(always)]
    fn holds<const N: usize>(&self, at: usize, end: usize) -> bool {
        at <= end && end - at >= N && end <= self.len && at <= 0xFFFF
    }
}

impl Frame for Pkt {
    #[inline(always)]
    fn cap_len(&self) -> usize {
        self.len
    }

    /// `v`, passed through map memory: the verifier tracks no values there,
    /// so the states of every path that reaches a layer look alike and are
    /// pruned after the first. Without this, each VLAN tag count × IPv6
    /// extension header chain × ERSPAN nesting is verified separately and
    /// the program exceeds the verifier's 1M-instruction budget.
    #[inline(always)]
    fn opaque(&self, v: usize) -> usize {
        // SAFETY: a per-CPU map value of this program run.
        unsafe {
            core::ptr::write_volatile(self.tmp, v as u64);
            core::ptr::read_volatile(self.tmp) as usize
        }
    }

    /// `N` bytes at `at`, if they lie before `end` (and in the frame).
    #[inline(always)]
    fn load<const N: usize>(&self, at: usize, end: usize) -> Option<[u8; N]> {
        if !self.holds::<N>(at, end) {
            return None;
        }
        // Uninitialised: zeroing it would cost a `memset` call per read.
        let mut buf = core::mem::MaybeUninit::<[u8; N]>::uninit();
        if self.copy_into(at, buf.as_mut_ptr()) {
            // SAFETY: `copy_into` wrote all N bytes.
            Some(unsafe { buf.assume_init() })
        } else {
            None
        }
    }

    /// Straight into `dst` (the IPv6 addresses go into the record so).
    #[inline(always)]
    fn load_into<const N: usize>(&self, at: usize, end: usize, dst: &mut [u8; N]) -> bool {
        self.holds::<N>(at, end) && self.copy_into(at, dst)
    }

    #[inline(always)]
    fn reset(&self, rec: &mut PacketRecord) {
        zero(rec);
    }
}

/// `*rec = PacketRecord::default()` as 25 explicit 8-byte stores: the
/// compiler would call a byte-wise `memset` loop, which costs the verifier
/// 200 iterations on every path.
#[inline(always)]
fn zero(rec: &mut PacketRecord) {
    const WORDS: usize = core::mem::size_of::<PacketRecord>() / 8;
    const _: () = assert!(WORDS * 8 == core::mem::size_of::<PacketRecord>());
    let p = (rec as *mut PacketRecord).cast::<u64>();
    macro_rules! z {
        ($($i:literal)*) => { $( unsafe { core::ptr::write_volatile(p.add($i), 0) }; )* };
    }
    z!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24);
    const _: () = assert!(WORDS == 25);
}

/// Fills `rec` like `decode::decode(LINKTYPE_ETHERNET, frame, len)` with
/// the transports recognised where the loader said (but
/// the ICRC and `CUT`, which only userspace checks); false when the walk
/// stopped at a broken header (a parse failure, as the userspace tally
/// counts them).
fn decode(pkt: &Pkt, rec: &mut PacketRecord) -> bool {
    // SAFETY: read-only globals the loader may have set.
    let reg = unsafe {
        Recognition {
            udp_ports: core::ptr::read_volatile(&UDP_PORTS),
            ip_protocols: core::ptr::read_volatile(&IP_PROTOCOLS),
            telemetry: core::ptr::read_volatile(&TELEMETRY),
        }
    };
    let w = wire::walk_with(pkt, &reg, proto::linktype::ETHERNET, rec, &mut ());
    // A kind `Other` record is never sent, so it is not zeroed here (the
    // userspace decoder zeroes it; nobody sees the kernel's).
    rec.frame_len = pkt.len as u32;
    rec.cap_len = pkt.len as u32;
    rec.kind != Kind::Malformed as u8 && !w.stop.is_some_and(wire::Stop::is_parse_failure)
}
