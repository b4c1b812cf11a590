//! The XDP entry point and the frame walk (see the crate docs for the
//! decisions). Each function mirrors its namesake in
//! `userspace/src/decode/mod.rs`; views there are `(at, end)` byte ranges
//! of the frame here, and `field::head`/`field::tail` become `min`/`max`.
use core::ffi::c_void;

use aya_ebpf::bindings::{
    BPF_RB_AVAIL_DATA, BPF_RB_FORCE_WAKEUP, BPF_RB_NO_WAKEUP, xdp_action, xdp_md,
};
use aya_ebpf::helpers::generated::{bpf_ktime_get_ns, bpf_xdp_get_buff_len, bpf_xdp_load_bytes};
use aya_ebpf::macros::{map, xdp};
use aya_ebpf::maps::{PerCpuArray, RingBuf};
use aya_ebpf::programs::XdpContext;
use rocescope_common::proto::{self, ethernet, gre, ib, ip, mac_control, udp};
use rocescope_common::{Kind, PACKET_RECORD_SIZE, PacketRecord, flags, live};

use crate::summary::{Fate, summarize};

#[map(name = "RECORDS")]
pub(crate) static RECORDS: RingBuf = RingBuf::with_byte_size(live::DEFAULT_RING_BYTES, 0);

/// One entry: this CPU's counters side by side, so a frame looks them up
/// once (see [`Counters`]).
#[map(name = "COUNTERS")]
static COUNTERS: PerCpuArray<live::CounterSlots> = PerCpuArray::with_max_entries(1, 0);

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

/// Set by the loader: wake the consumer only when the bytes waiting on the
/// ring cross a multiple of this (0: the kernel's default, a wake-up
/// whenever the consumer has caught up — up to one per record when it
/// keeps up). The consumer polls on a short timer as well, so records
/// below the threshold still arrive.
#[unsafe(no_mangle)]
static WAKEUP_BYTES: u64 = 0;

/// Set by the loader (`--mode summary`): see [`crate::summary`].
#[unsafe(no_mangle)]
static SUMMARY: u8 = 0;

/// Set by the loader: how old a flow's last delta may get in summary mode.
#[unsafe(no_mangle)]
static FLUSH_NS: u64 = live::DEFAULT_FLUSH_NS;

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
    if RECORDS
        .output::<PacketRecord>(&*rec, wakeup_flags(PACKET_RECORD_SIZE as u64))
        .is_err()
    {
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
    fn get() -> Option<Counters> {
        COUNTERS.get_ptr_mut(0).map(Counters)
    }

    #[inline(always)]
    pub(crate) fn bump(self, slot: u32) {
        // SAFETY: this CPU's map value; no other program run touches it
        // meanwhile. `slot` is one of the `live::COUNTER_*` constants.
        unsafe { (*self.0)[slot as usize] += 1 };
    }
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
        if at > end || end - at < N || end > self.len || at > 0xFFFF {
            return None;
        }
        // Uninitialised: zeroing it would cost a `memset` call per read.
        let mut buf = core::mem::MaybeUninit::<[u8; N]>::uninit();
        if self.load_into(at, buf.as_mut_ptr()) {
            // SAFETY: `load_into` wrote all N bytes.
            Some(unsafe { buf.assume_init() })
        } else {
            None
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
    /// The offset goes through [`Pkt::opaque`] first: a scalar added to a
    /// packet pointer becomes "precise" to the verifier, and every distinct
    /// offset range the walk can reach (VLAN tags, IHL, extension header
    /// combinations) would then be verified separately.
    #[inline(always)]
    fn load_into<const N: usize>(&self, at: usize, dst: *mut [u8; N]) -> bool {
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
}

#[inline(always)]
fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

#[inline(always)]
fn be24(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([0, b[at], b[at + 1], b[at + 2]])
}

#[inline(always)]
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[inline(always)]
fn be64(b: &[u8], at: usize) -> u64 {
    (u64::from(be32(b, at)) << 32) | u64::from(be32(b, at + 4))
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

/// How a layer ended the walk.
enum Next {
    /// Finished: `rec.kind` says what the frame is.
    Done,
    /// Stopped at a header that was cut short or invalid.
    Failed,
    /// ERSPAN: the mirrored Ethernet frame occupies `at..end`.
    Erspan(usize, usize),
}

/// Fills `rec` like `decode::decode(LINKTYPE_ETHERNET, frame, len)`; false
/// when the walk stopped at a broken header (a parse failure).
fn decode(pkt: &Pkt, rec: &mut PacketRecord) -> bool {
    zero(rec);
    let mut next = ethernet_frame(pkt, rec, 0, pkt.len, true);
    let mut ok = true;
    if let Next::Erspan(at, end) = next {
        zero(rec);
        next = ethernet_frame(pkt, rec, pkt.opaque(at), pkt.opaque(end), false);
        rec.flags |= flags::ERSPAN;
    }
    match next {
        Next::Failed => ok = false,
        Next::Erspan(..) => ok = false,
        Next::Done => {}
    }
    if rec.kind == Kind::Malformed as u8 {
        ok = false;
    }
    if matches!(next, Next::Erspan(..)) {
        rec.kind = Kind::Other as u8;
    }
    // A kind `Other` record is never sent, so it is not zeroed here (the
    // userspace decoder zeroes it; nobody sees the kernel's).
    rec.frame_len = pkt.len as u32;
    rec.cap_len = pkt.len as u32;
    ok
}

#[inline(always)]
fn ethernet_frame(
    pkt: &Pkt,
    rec: &mut PacketRecord,
    at: usize,
    end: usize,
    allow_erspan: bool,
) -> Next {
    let Some(h) = pkt.load::<{ ethernet::HEADER_LEN }>(at, end) else {
        return Next::Failed;
    };
    rec.dst_mac = [h[0], h[1], h[2], h[3], h[4], h[5]];
    rec.src_mac = [h[6], h[7], h[8], h[9], h[10], h[11]];
    link_payload(
        pkt,
        rec,
        be16(&h, 12),
        at + ethernet::HEADER_LEN,
        end,
        allow_erspan,
    )
}

const fn is_vlan_tpid(ethertype: u16) -> bool {
    matches!(
        ethertype,
        ethernet::ETHERTYPE_VLAN | ethernet::ETHERTYPE_QINQ | ethernet::ETHERTYPE_QINQ_OLD
    )
}

#[inline(always)]
fn link_payload(
    pkt: &Pkt,
    rec: &mut PacketRecord,
    mut ethertype: u16,
    mut at: usize,
    end: usize,
    allow_erspan: bool,
) -> Next {
    let mut tags = 0;
    // One pass per tag, plus one to notice a tag too many.
    for _ in 0..=ethernet::MAX_VLAN_TAGS {
        if !is_vlan_tpid(ethertype) {
            break;
        }
        if tags == ethernet::MAX_VLAN_TAGS {
            return Next::Failed;
        }
        let Some(t) = pkt.load::<{ ethernet::VLAN_TAG_LEN }>(at, end) else {
            return Next::Failed;
        };
        let tci = be16(&t, 0);
        if tags == 0 {
            rec.outer_vlan = tci & 0x0FFF;
        }
        rec.vlan = tci & 0x0FFF;
        rec.pcp = (tci >> 13) as u8;
        tags += 1;
        ethertype = be16(&t, 2);
        at += ethernet::VLAN_TAG_LEN;
    }
    if tags >= 1 {
        rec.flags |= flags::HAS_VLAN;
    }
    if tags >= 2 {
        rec.flags |= flags::HAS_OUTER_VLAN;
    } else {
        rec.outer_vlan = 0;
    }
    let (at, end) = (pkt.opaque(at), pkt.opaque(end));
    let ethertype = pkt.opaque(usize::from(ethertype)) as u16;
    match ethertype {
        ethernet::ETHERTYPE_IPV4 => ipv4(pkt, rec, at, end, allow_erspan),
        ethernet::ETHERTYPE_IPV6 => ipv6(pkt, rec, at, end, allow_erspan),
        ethernet::ETHERTYPE_MAC_CONTROL => mac_control(pkt, rec, at, end),
        _ => Next::Done,
    }
}

/// What the IP layer hands on: the packet is `at..end` (the captured part,
/// bounded by the IP length fields).
struct L3 {
    at: usize,
    end: usize,
    /// Offset of the transport header from `at`.
    l4_at: usize,
    /// Transport bytes the IP header declares.
    declared: usize,
    first_fragment: bool,
}

#[inline(always)]
fn ipv4(pkt: &Pkt, rec: &mut PacketRecord, at: usize, end: usize, allow_erspan: bool) -> Next {
    let Some(h) = pkt.load::<{ ip::IPV4_MIN_HEADER_LEN }>(at, end) else {
        return Next::Failed;
    };
    let header_len = usize::from(h[0] & 0x0F) * 4;
    // The options must be there too (the userspace view checks IHL words).
    if header_len > ip::IPV4_MIN_HEADER_LEN && end - at < header_len {
        return Next::Failed;
    }
    let total_len = usize::from(be16(&h, 2));
    if h[0] >> 4 != 4 || header_len < ip::IPV4_MIN_HEADER_LEN || total_len < header_len {
        return Next::Failed;
    }
    if be16(&h, 6) & 0x1FFF != 0 {
        // A non-first fragment: nothing to recognise it by.
        return Next::Done;
    }
    // IPv4-mapped (::ffff:a.b.c.d); bytes 0..10 are still zero from `zero`.
    for (i, b) in [0xFF, 0xFF, h[12], h[13], h[14], h[15]]
        .into_iter()
        .enumerate()
    {
        rec.src_ip[10 + i] = b;
    }
    for (i, b) in [0xFF, 0xFF, h[16], h[17], h[18], h[19]]
        .into_iter()
        .enumerate()
    {
        rec.dst_ip[10 + i] = b;
    }
    rec.dscp = h[1] >> 2;
    rec.ecn = h[1] & 0x03;
    rec.flags |= flags::HAS_IPV4;
    let l3 = L3 {
        at,
        end: end.min(at + total_len),
        l4_at: header_len,
        declared: total_len - header_len,
        first_fragment: h[6] & 0x20 != 0,
    };
    transport(pkt, rec, h[9], &l3, allow_erspan)
}

#[inline(always)]
fn ipv6(pkt: &Pkt, rec: &mut PacketRecord, at: usize, end: usize, allow_erspan: bool) -> Next {
    let Some(h) = pkt.load::<8>(at, end) else {
        return Next::Failed;
    };
    if end - at < ip::IPV6_HEADER_LEN || h[0] >> 4 != 6 {
        return Next::Failed;
    }
    // The addresses go straight into the record.
    if !pkt.load_into(at + 8, &mut rec.src_ip) || !pkt.load_into(at + 24, &mut rec.dst_ip) {
        return Next::Failed;
    }
    let tclass = (be16(&h, 0) >> 4) as u8;
    rec.dscp = tclass >> 2;
    rec.ecn = tclass & 0x03;
    rec.flags |= flags::HAS_IPV6;

    let declared_end = ip::IPV6_HEADER_LEN + usize::from(be16(&h, 4));
    let packet_end = end.min(at + declared_end);
    let mut next_header = h[6];
    let mut off = ip::IPV6_HEADER_LEN;
    let mut first_fragment = false;
    let mut ext_headers = 0;
    // At most MAX_IPV6_EXT_HEADERS are stepped over; one more fails below.
    for _ in 0..=ip::MAX_IPV6_EXT_HEADERS {
        let len = match next_header {
            ip::IPV6_HOP_BY_HOP | ip::IPV6_ROUTING | ip::IPV6_DEST_OPTS => {
                let Some(e) = pkt.load::<2>(at + off, packet_end) else {
                    return Next::Failed;
                };
                let len = (usize::from(e[1]) + 1) * 8;
                if packet_end - (at + off) < len {
                    return Next::Failed;
                }
                next_header = e[0];
                len
            }
            ip::IPV6_FRAGMENT => {
                let Some(f) = pkt.load::<{ ip::IPV6_FRAGMENT_LEN }>(at + off, packet_end) else {
                    return Next::Failed;
                };
                if be16(&f, 2) >> 3 != 0 {
                    return Next::Done;
                }
                first_fragment = f[3] & 0x01 != 0;
                next_header = f[0];
                ip::IPV6_FRAGMENT_LEN
            }
            _ => break,
        };
        ext_headers += 1;
        off += len;
        if ext_headers > ip::MAX_IPV6_EXT_HEADERS || off > declared_end {
            return Next::Failed;
        }
    }
    if is_ipv6_ext(next_header) {
        // Only reachable past the loop bound, which the check above ends first.
        return Next::Failed;
    }
    let l3 = L3 {
        at,
        end: packet_end,
        l4_at: off,
        declared: declared_end - off,
        first_fragment,
    };
    transport(pkt, rec, next_header, &l3, allow_erspan)
}

const fn is_ipv6_ext(h: u8) -> bool {
    matches!(
        h,
        ip::IPV6_HOP_BY_HOP | ip::IPV6_ROUTING | ip::IPV6_DEST_OPTS | ip::IPV6_FRAGMENT
    )
}

#[inline(always)]
fn transport(pkt: &Pkt, rec: &mut PacketRecord, protocol: u8, l3: &L3, allow_erspan: bool) -> Next {
    let l3 = &L3 {
        at: pkt.opaque(l3.at),
        end: pkt.opaque(l3.end),
        l4_at: pkt.opaque(l3.l4_at),
        declared: pkt.opaque(l3.declared),
        first_fragment: pkt.opaque(usize::from(l3.first_fragment)) != 0,
    };
    let protocol = pkt.opaque(usize::from(protocol)) as u8;
    match protocol {
        ip::PROTO_UDP => udp(pkt, rec, l3),
        gre::IP_PROTO if allow_erspan => gre(pkt, l3.at + l3.l4_at, l3.end),
        _ => Next::Done,
    }
}

#[inline(always)]
fn gre(pkt: &Pkt, at: usize, end: usize) -> Next {
    let Some(g) = pkt.load::<{ gre::BASE_LEN }>(at, end) else {
        return Next::Failed;
    };
    let fv = be16(&g, 0);
    let optional = usize::from(fv & gre::FLAG_CHECKSUM != 0)
        + usize::from(fv & gre::FLAG_KEY != 0)
        + usize::from(fv & gre::FLAG_SEQUENCE != 0);
    let header_len = gre::BASE_LEN + 4 * optional;
    if end - at < header_len {
        return Next::Failed;
    }
    if fv & gre::VERSION_MASK != 0 || fv & gre::FLAG_ROUTING != 0 {
        return Next::Done;
    }
    let payload = at + header_len;
    match be16(&g, 2) {
        gre::PROTO_ERSPAN_II if fv & gre::FLAG_SEQUENCE == 0 => Next::Erspan(payload, end),
        gre::PROTO_ERSPAN_II => {
            if end < payload || end - payload < gre::ERSPAN_II_LEN {
                return Next::Failed;
            }
            Next::Erspan(payload + gre::ERSPAN_II_LEN, end)
        }
        gre::PROTO_ERSPAN_III => {
            let Some(e) = pkt.load::<{ gre::ERSPAN_III_LEN }>(payload, end) else {
                return Next::Failed;
            };
            let len = gre::ERSPAN_III_LEN
                + if e[11] & gre::ERSPAN_III_O_FLAG != 0 {
                    gre::ERSPAN_III_PLATFORM_LEN
                } else {
                    0
                };
            if end - payload < len {
                return Next::Failed;
            }
            Next::Erspan(payload + len, end)
        }
        _ => Next::Done,
    }
}

#[inline(always)]
fn udp(pkt: &Pkt, rec: &mut PacketRecord, l3: &L3) -> Next {
    let seg = l3.at + l3.l4_at;
    let Some(u) = pkt.load::<{ udp::HEADER_LEN }>(seg, l3.end) else {
        return Next::Failed;
    };
    if be16(&u, 2) != udp::ROCEV2_PORT {
        return Next::Done;
    }
    rec.udp_sport = be16(&u, 0);
    rec.flags |= flags::HAS_UDP;

    let udp_len = usize::from(be16(&u, 4));
    let datagram_len = if l3.first_fragment {
        udp_len
    } else {
        udp_len.min(l3.declared)
    };
    const MIN_DATAGRAM: usize = udp::HEADER_LEN + ib::BTH_LEN + ib::ICRC_LEN;
    if datagram_len < MIN_DATAGRAM {
        rec.kind = Kind::Malformed as u8;
        return Next::Done;
    }
    rec.kind = Kind::Roce as u8;
    // The captured part of the datagram.
    let dg_end = l3.end.min(seg + datagram_len);

    let Some(b) = pkt.load::<{ ib::BTH_LEN }>(seg + udp::HEADER_LEN, dg_end) else {
        return Next::Failed;
    };
    let opcode = b[0];
    rec.opcode = opcode;
    if opcode == ib::OPCODE_CNP {
        rec.kind = Kind::Cnp as u8;
    }
    let pad_count = (b[1] >> 4) & 0x3;
    rec.pad_count = pad_count;
    rec.tver = b[1] & 0x0F;
    rec.pkey = be16(&b, 2);
    rec.dest_qp = be24(&b, 5);
    rec.psn = be24(&b, 9);
    let mut f = flags::HAS_BTH;
    if b[1] & 0x80 != 0 {
        f |= flags::SE;
    }
    if b[1] & 0x40 != 0 {
        f |= flags::MIGREQ;
    }
    if b[4] & 0x80 != 0 {
        f |= flags::FECN;
    }
    if b[4] & 0x40 != 0 {
        f |= flags::BECN;
    }
    if b[8] & 0x80 != 0 {
        f |= flags::ACK_REQ;
    }
    rec.flags |= f;

    let ext = ib::ext_headers(opcode);
    if ext & ib::ext::UNKNOWN != 0 {
        return Next::Done;
    }
    let overhead = udp::HEADER_LEN
        + ib::BTH_LEN
        + ib::ext_headers_len(ext)
        + usize::from(pad_count)
        + ib::ICRC_LEN;
    rec.payload_len = datagram_len.saturating_sub(overhead) as u32;
    rec.flags |= flags::HAS_PAYLOAD_LEN;

    // Extension headers live between the BTH and the ICRC.
    let before_icrc = dg_end.min(seg + datagram_len - ib::ICRC_LEN);
    if ext_headers(
        pkt,
        rec,
        ext,
        seg + udp::HEADER_LEN + ib::BTH_LEN,
        before_icrc,
    ) {
        Next::Done
    } else {
        Next::Failed
    }
}

/// The extension headers in `mask`, in spec order, while each is whole
/// before `end`; false when one was cut.
#[inline(always)]
fn ext_headers(pkt: &Pkt, rec: &mut PacketRecord, mask: u16, at: usize, end: usize) -> bool {
    use ib::ext;
    let mut at = pkt.opaque(at);
    let end = pkt.opaque(end);
    let mask = pkt.opaque(usize::from(mask)) as u16;
    if mask & ext::RDETH != 0 {
        if pkt.load::<{ ib::RDETH_LEN }>(at, end).is_none() {
            return false;
        }
        at += ib::RDETH_LEN;
    }
    if mask & ext::DETH != 0 {
        let Some(h) = pkt.load::<{ ib::DETH_LEN }>(at, end) else {
            return false;
        };
        rec.deth_qkey = be32(&h, 0);
        rec.deth_src_qp = be24(&h, 5);
        rec.flags |= flags::HAS_DETH;
        at += ib::DETH_LEN;
    }
    if mask & ext::XRCETH != 0 {
        if pkt.load::<{ ib::XRCETH_LEN }>(at, end).is_none() {
            return false;
        }
        at += ib::XRCETH_LEN;
    }
    if mask & ext::RETH != 0 {
        let Some(h) = pkt.load::<{ ib::RETH_LEN }>(at, end) else {
            return false;
        };
        rec.reth_va = be64(&h, 0);
        rec.reth_rkey = be32(&h, 8);
        rec.reth_len = be32(&h, 12);
        rec.flags |= flags::HAS_RETH;
        at += ib::RETH_LEN;
    }
    if mask & ext::ATOMIC_ETH != 0 {
        let Some(h) = pkt.load::<{ ib::ATOMIC_ETH_LEN }>(at, end) else {
            return false;
        };
        rec.atomic_va = be64(&h, 0);
        rec.atomic_rkey = be32(&h, 8);
        rec.atomic_swap_add = be64(&h, 12);
        rec.atomic_compare = be64(&h, 20);
        rec.flags |= flags::HAS_ATOMIC_ETH;
        at += ib::ATOMIC_ETH_LEN;
    }
    if mask & ext::AETH != 0 {
        let Some(h) = pkt.load::<{ ib::AETH_LEN }>(at, end) else {
            return false;
        };
        rec.aeth_syndrome = h[0];
        rec.aeth_msn = be24(&h, 1);
        rec.flags |= flags::HAS_AETH;
        at += ib::AETH_LEN;
    }
    if mask & ext::ATOMIC_ACK_ETH != 0 {
        let Some(h) = pkt.load::<{ ib::ATOMIC_ACK_ETH_LEN }>(at, end) else {
            return false;
        };
        rec.atomic_orig = be64(&h, 0);
        rec.flags |= flags::HAS_ATOMIC_ACK_ETH;
        at += ib::ATOMIC_ACK_ETH_LEN;
    }
    if mask & ext::IMMDT != 0 {
        let Some(h) = pkt.load::<{ ib::IMMDT_LEN }>(at, end) else {
            return false;
        };
        rec.imm = be32(&h, 0);
        rec.flags |= flags::HAS_IMMDT;
        at += ib::IMMDT_LEN;
    }
    if mask & ext::IETH != 0 {
        let Some(h) = pkt.load::<{ ib::IETH_LEN }>(at, end) else {
            return false;
        };
        rec.ieth_rkey = be32(&h, 0);
        rec.flags |= flags::HAS_IETH;
    }
    true
}

#[inline(always)]
fn mac_control(pkt: &Pkt, rec: &mut PacketRecord, at: usize, end: usize) -> Next {
    let Some(op) = pkt.load::<2>(at, end) else {
        return Next::Failed;
    };
    match be16(&op, 0) {
        mac_control::OPCODE_PFC => {
            rec.kind = Kind::Pfc as u8;
            let Some(p) = pkt.load::<{ mac_control::PFC_LEN }>(at, end) else {
                return Next::Failed;
            };
            rec.pfc_enable = p[3];
            rec.pfc_quanta = [
                be16(&p, 4),
                be16(&p, 6),
                be16(&p, 8),
                be16(&p, 10),
                be16(&p, 12),
                be16(&p, 14),
                be16(&p, 16),
                be16(&p, 18),
            ];
            rec.flags |= flags::HAS_PFC;
            Next::Done
        }
        mac_control::OPCODE_PAUSE => {
            rec.kind = Kind::Pause as u8;
            let Some(p) = pkt.load::<{ mac_control::PAUSE_LEN }>(at, end) else {
                return Next::Failed;
            };
            rec.pause_quanta = be16(&p, 2);
            rec.flags |= flags::HAS_PAUSE;
            Next::Done
        }
        _ => Next::Done,
    }
}

// `proto` is used through its submodules; keep the path import honest.
const _: u32 = proto::linktype::ETHERNET;
