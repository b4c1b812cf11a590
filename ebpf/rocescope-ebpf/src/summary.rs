//! Summary mode (`SUMMARY` global set): per-flow state in the kernel, so
//! that only frames the analyzer must see one by one become records.
//!
//! After a frame is decoded into the scratch record, [`summarize`] decides:
//!
//! * **Counted** (no record; the flow's counters grow):
//!   - an RC/UC/XRC request of a flow whose state is known (`VALID`), that
//!     never carried a READ request (`HAS_READ`), is not one itself, and
//!     carries exactly the next PSN: in order, so to the analyzer it is a
//!     plain sum (no retransmission, no gap, no rewind);
//!   - a plain ACK (ACKNOWLEDGE opcode, ACK syndrome): it only counts and
//!     raises the flow's highest ACKed PSN;
//!
//!   both only once userspace has written the flow's pairing to `PAIRS`
//!   (`ready`): before that, the analyzer may still pair the flow, and
//!   pairing looks at the request flow's PSN range and the response
//!   flow's ACK PSNs as they are *at each response*, which counts held in
//!   the kernel would make stale.
//! * **Forwarded** (a record, after a delta of the flow if it has anything
//!   unsent): everything else — a flow's first frame, retransmissions,
//!   gaps, READ requests and every request of a flow that had one, NAKs,
//!   RNR NAKs, READ responses, atomic ACKs, ACKs of unpaired flows, CNPs,
//!   PFC, PAUSE, UD, malformed frames.
//!
//! The delta sent right before a forwarded frame of the flow brings the
//! analyzer's state of that flow up to date first, so the forwarded frame
//! is judged exactly as in records mode. It also carries the paired flow's
//! highest ACKed PSN (read from the partner's state, never written there):
//! a retransmission is spurious when the partner had ACKed it, and those
//! ACKs may still be counts in the kernel.
//!
//! A counted frame also sends the delta when the flow's last one is older
//! than `FLUSH_NS`: the tables move on during a long run (the timeline
//! gets the counts at flush granularity). At the end userspace reads what
//! is left in `FLOWS`.
//!
//! `FLOWS` is one LRU hash for all CPUs, not per CPU: the ACKs of a
//! connection arrive on another RSS queue (so another CPU) than its
//! requests, and a delta must see the partner's state; and a flow whose
//! frames change CPU (a replay process migrating, an RSS table rewritten)
//! keeps one sequence state. Each value is written only while a frame of
//! its own flow is processed (a flow's frames are on one CPU at a time), so
//! no locks are needed; the partner's state is only read.
use aya_ebpf::macros::map;
use aya_ebpf::maps::{HashMap, LruHashMap, PerCpuArray};
use rocescope_common::proto::ib::{self, PSN_MASK, QPN_MASK, aeth, op, psn_diff};
use rocescope_common::summary::{
    FlowDelta, FlowKey, FlowState, Pairing, delta_flags, record_marks, state_flags,
};
use rocescope_common::{Kind, PacketRecord, RoceView, flags, live};

use crate::ring::{self, Counters};

#[map(name = "FLOWS")]
static FLOWS: LruHashMap<FlowKey, FlowState> = LruHashMap::with_max_entries(live::FLOWS_MAX, 0);

#[map(name = "PAIRS")]
static PAIRS: HashMap<FlowKey, Pairing> = HashMap::with_max_entries(live::PAIRS_MAX, 0);

/// Where a flow's key and a new flow's state are built (152 bytes do not
/// belong on the BPF stack).
#[map(name = "NEW_FLOW")]
static NEW_FLOW: PerCpuArray<FlowState> = PerCpuArray::with_max_entries(1, 0);

/// What becomes of a frame in summary mode.
pub enum Fate {
    /// Counted in its flow's state: no record.
    Counted,
    /// Goes up as a record (any delta before it was sent).
    Forward,
    /// Should have been forwarded, but its flow's delta did not fit on the
    /// ring buffer: neither is sent (the counts stay for the next delta).
    RingFull,
}

/// Decides `rec`'s fate (see the module docs) and keeps its flow's state.
#[inline(always)]
pub fn summarize(rec: &mut PacketRecord, now: u64, flush_ns: u64, counters: Counters) -> Fate {
    // Summary mode counts by RoCE's sequencing (QP flows, 24-bit PSNs):
    // another transport's records go up whole until it has a summarizer.
    let Some(&RoceView {
        dest_qp,
        opcode,
        psn,
        aeth_syndrome,
        ..
    }) = rec.try_roce()
    else {
        return Fate::Forward;
    };
    let roce = rec.kind == Kind::Roce as u8;
    let cnp = rec.kind == Kind::Cnp as u8;
    if !(roce || cnp) || !rec.has(flags::HAS_BTH) {
        return Fate::Forward;
    }
    let Some(new) = NEW_FLOW.get_ptr_mut(0) else {
        return Fate::Forward;
    };
    // SAFETY: a per-CPU map value, used by this program run only.
    let new = unsafe { &mut *new };
    new.delta.key = FlowKey {
        src_ip: rec.src_ip,
        dst_ip: rec.dst_ip,
        dest_qp: dest_qp & QPN_MASK,
    };
    let o = opcode & 0x1F;
    let q = psn & PSN_MASK;
    let request = roce && ib::is_request(opcode);
    let Some(st) = FLOWS.get_ptr_mut(&new.delta.key) else {
        // A CNP makes no flow of its own in the analyzer.
        if roce {
            start_flow(new, rec, opcode, psn, now);
            rec._reserved[0] = record_marks::NEW_FLOW_STATE;
        }
        return Fate::Forward;
    };
    if cnp {
        // Its key names the responder's flow (the CNP goes the same way as
        // the ACKs): forwarded with no delta, since that flow's state may be
        // in use on another CPU right now (module docs).
        return Fate::Forward;
    }
    // SAFETY: a map value; only frames of this flow write it (module docs).
    let st = unsafe { &mut *st };
    let payload = if rec.has(flags::HAS_PAYLOAD_LEN) {
        rec.payload_len
    } else {
        0
    };
    // Path MTU as the analyzer learns it: a First or Middle packet's payload.
    if ib::payload_is_path_mtu(opcode) && payload > st.delta.mtu {
        st.delta.mtu = payload;
    }
    let plain_ack = !request
        && ib::is_response(opcode)
        && o == op::ACKNOWLEDGE
        && rec.has(flags::HAS_AETH)
        && aeth::is_ack(aeth_syndrome);
    let in_order = request
        && st.state & state_flags::VALID != 0
        && st.state & state_flags::HAS_READ == 0
        && o != op::READ_REQUEST
        && q == st.delta.next_psn;
    if (in_order || plain_ack) && paired(&st.delta.key) {
        let d = &mut st.delta;
        let idle = now.saturating_sub(d.last_ts_ns);
        if idle > d.max_idle_ns {
            d.max_idle_ns = idle;
        }
        if d.packets == 0 {
            d.first_ts_ns = now;
        }
        d.packets += 1;
        d.bytes += u64::from(rec.frame_len);
        d.payload_bytes += u64::from(payload);
        if in_order {
            d.data_packets += 1;
            d.next_psn = (q + 1) & PSN_MASK;
            if rec.is_ce() {
                if d.ce == 0 {
                    d.first_ce_ts_ns = now;
                }
                d.ce += 1;
            }
        } else {
            d.acks += 1;
            d.responses += 1;
            if d.flags & delta_flags::ACKED == 0 || psn_diff(q, d.acked_psn) > 0 {
                d.acked_psn = q;
            }
            d.flags |= delta_flags::ACKED;
        }
        d.last_ts_ns = now;
        counters.bump(live::COUNTER_SUMMARIZED);
        if now.saturating_sub(st.last_flush_ns) >= flush_ns {
            // A full ring keeps the counts for the next try.
            let _ = flush(st, now, counters);
        }
        return Fate::Counted;
    }
    // Forwarded: the analyzer first gets the counts so far, then the frame.
    if flush(st, now, counters).is_err() {
        return Fate::RingFull;
    }
    if request {
        // The analyzer's `next`: one past the highest PSN sent (a
        // retransmission leaves it alone).
        if st.state & state_flags::VALID == 0 || psn_diff(q, st.delta.next_psn) >= 0 {
            st.delta.next_psn = (q + 1) & PSN_MASK;
        }
        st.state |= state_flags::VALID;
        if o == op::READ_REQUEST {
            st.state |= state_flags::HAS_READ;
        }
    }
    st.delta.last_ts_ns = now;
    Fate::Forward
}

/// The first frame of a flow: its state starts with nothing counted.
#[inline(always)]
fn start_flow(new: &mut FlowState, rec: &PacketRecord, opcode: u8, psn: u32, now: u64) {
    zero_counts_and_state(new);
    new.delta.last_ts_ns = now;
    new.last_flush_ns = now;
    if rec.kind == Kind::Roce as u8 && ib::is_request(opcode) {
        new.delta.next_psn = (psn + 1) & PSN_MASK;
        new.state = state_flags::VALID;
        if opcode & 0x1F == op::READ_REQUEST {
            new.state |= state_flags::HAS_READ;
        }
    }
    if rec.has(flags::HAS_PAYLOAD_LEN) && ib::payload_is_path_mtu(opcode) {
        new.delta.mtu = rec.payload_len;
    }
    // A full map evicts its least recently used flow; a racing insert of
    // the same flow on another CPU wins (its frame was first).
    let _ = FLOWS.insert(&new.delta.key, &*new, 0);
}

/// Userspace has paired the flow (and the partner's entry exists).
#[inline(always)]
fn paired(key: &FlowKey) -> bool {
    // SAFETY: a map value, read only.
    PAIRS
        .get_ptr(key)
        .is_some_and(|p| unsafe { (*p).ready } != 0)
}

/// Sends the flow's delta if it has counts, or if the partner values it
/// carries changed since the last one; then zeroes the counts.
#[inline(always)]
fn flush(st: &mut FlowState, now: u64, counters: Counters) -> Result<(), ()> {
    let mut partner_flags = 0;
    let mut partner_acked = 0;
    let mut partner_mtu = 0;
    if let Some(p) = PAIRS.get_ptr(&st.delta.key) {
        // SAFETY: map values, read only (the partner's frames write its state).
        if let Some(ps) = FLOWS.get_ptr(unsafe { &(*p).partner }) {
            let ps = unsafe { &*ps };
            partner_flags = delta_flags::PARTNER;
            partner_mtu = ps.delta.mtu;
            if ps.delta.flags & delta_flags::ACKED != 0 {
                partner_flags |= delta_flags::PARTNER_ACKED;
                partner_acked = ps.delta.acked_psn;
            }
        }
    }
    let changed = partner_flags != st.sent_partner_flags
        || partner_acked != st.sent_partner_acked_psn
        || partner_mtu != st.sent_partner_mtu;
    if st.delta.packets == 0 && !changed {
        return Ok(());
    }
    let d = &mut st.delta;
    d.flags = (d.flags & delta_flags::ACKED) | partner_flags;
    d.partner_acked_psn = partner_acked;
    d.partner_mtu = partner_mtu;
    if !ring::output::<FlowDelta>(d) {
        return Err(());
    }
    counters.bump(live::COUNTER_DELTAS);
    d.first_ts_ns = 0;
    d.first_ce_ts_ns = 0;
    d.max_idle_ns = 0;
    d.packets = 0;
    d.bytes = 0;
    d.payload_bytes = 0;
    d.data_packets = 0;
    d.ce = 0;
    d.acks = 0;
    d.responses = 0;
    st.last_flush_ns = now;
    st.sent_partner_flags = partner_flags;
    st.sent_partner_acked_psn = partner_acked;
    st.sent_partner_mtu = partner_mtu;
    Ok(())
}

/// Everything of `st` but `delta.key` set to 0, as explicit 8-byte stores
/// (a `FlowState::default()` assignment compiles to a `memset` loop the
/// verifier walks byte by byte; see `program::zero`).
#[inline(always)]
fn zero_counts_and_state(st: &mut FlowState) {
    use rocescope_common::summary::{FLOW_KEY_SIZE, FLOW_STATE_SIZE};
    const KEY_AT: usize = core::mem::offset_of!(FlowDelta, key);
    const NEXT_AT: usize = core::mem::offset_of!(FlowDelta, next_psn);
    // The key spans bytes 72..108 (words 9..=13); word 13 also holds
    // `next_psn`, so words 9..=13 are skipped and `next_psn` is zeroed by
    // name.
    const _: () = assert!(KEY_AT == 72 && KEY_AT + FLOW_KEY_SIZE == 108 && NEXT_AT == 108);
    const _: () = assert!(FLOW_STATE_SIZE == 20 * 8);
    let p = (st as *mut FlowState).cast::<u64>();
    macro_rules! z {
        ($($i:literal)*) => { $( unsafe { core::ptr::write_volatile(p.add($i), 0) }; )* };
    }
    z!(0 1 2 3 4 5 6 7 8 14 15 16 17 18 19);
    st.delta.next_psn = 0;
}
