//! Summary mode of the live tap (`rocescope live --mode summary`): what the
//! XDP program keeps per flow, and the [`FlowDelta`] it sends up instead of
//! one [`PacketRecord`](crate::PacketRecord) per frame.
//!
//! The program counts in the kernel only the frames whose effect on the
//! analyzer is a plain sum: in-order requests of paired flows and plain
//! ACKs of paired flows. Every other frame still goes up as a full record,
//! right after a delta of its flow's counts so far, so the analyzer's
//! sequence state is exact at every anomaly. The rules are in the XDP
//! crate's `summary` module; the delta's meaning in
//! `Analyzer::apply_delta`.
//!
//! Layouts are `repr(C)` without padding (checked below), like
//! `PacketRecord`: every byte is initialised, so the kernel can copy them
//! onto the ring buffer and userspace can read them back as plain bytes.
//! A ring buffer item is a delta when it is [`FLOW_DELTA_SIZE`] bytes long,
//! a record when it is `PACKET_RECORD_SIZE` bytes long.

/// Summary mode marks in a forwarded record's `_reserved[0]` (userspace
/// reads and clears them before the record goes anywhere).
pub mod record_marks {
    /// The frame started its flow's kernel state: the flow was new to the
    /// kernel, or its state had been evicted from the LRU map (when
    /// userspace saw the flow start before, that is how it counts evictions).
    pub const NEW_FLOW_STATE: u8 = 1 << 0;
}

/// A flow of the analyzer without its interface (the live tap has one):
/// `(src_ip, dst_ip, dest_qp)`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    pub src_ip: [u8; 16],
    pub dst_ip: [u8; 16],
    /// BTH destination QP (24 bits).
    pub dest_qp: u32,
}

pub const FLOW_KEY_SIZE: usize = 36;
const _: () = assert!(core::mem::size_of::<FlowKey>() == FLOW_KEY_SIZE);

/// [`FlowDelta::flags`].
pub mod delta_flags {
    /// `acked_psn` holds the highest PSN the flow's plain ACKs counted in
    /// the kernel have acknowledged.
    pub const ACKED: u32 = 1 << 0;
    /// `partner_acked_psn` holds the paired flow's `acked_psn` (read when
    /// the delta was sent).
    pub const PARTNER_ACKED: u32 = 1 << 1;
    /// `partner_mtu` holds the paired flow's `mtu`.
    pub const PARTNER: u32 = 1 << 2;
}

/// A flow's frames counted in the kernel since its previous delta, and the
/// sequence state they leave behind.
///
/// Counts (`packets` … `responses`, `first_ts_ns`, `max_idle_ns`,
/// `first_ce_ts_ns`) cover only frames that produced no record; the rest is state: `last_ts_ns`,
/// `next_psn`, `acked_psn` and `mtu` are the flow's values after every
/// frame the kernel saw of it, forwarded or not.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FlowDelta {
    /// Time of the flow's latest frame (kernel clock until userspace adds
    /// its offset, as for records).
    pub last_ts_ns: u64,
    /// Time of the first frame counted (valid when `packets > 0`): the
    /// counted frames lie in `first_ts_ns..=last_ts_ns` (the timeline
    /// spreads them over it).
    pub first_ts_ns: u64,
    /// Time of the first CE-marked request counted (valid when `ce > 0`).
    pub first_ce_ts_ns: u64,
    /// Longest time between a counted frame and the flow's frame before it.
    pub max_idle_ns: u64,
    /// Frames counted.
    pub packets: u64,
    /// Their wire length (`frame_len`).
    pub bytes: u64,
    /// Their payload (`payload_len`).
    pub payload_bytes: u64,
    /// Requests counted (each was in order: none is a retransmission).
    pub data_packets: u32,
    /// CE-marked requests counted.
    pub ce: u32,
    /// Plain ACKs counted.
    pub acks: u32,
    /// Response packets counted (every plain ACK is one).
    pub responses: u32,
    pub key: FlowKey,
    /// One past the PSN of the flow's latest request: the analyzer's `next`
    /// after the counted requests (meaningful when `data_packets > 0`).
    pub next_psn: u32,
    /// See [`delta_flags::ACKED`].
    pub acked_psn: u32,
    /// See [`delta_flags::PARTNER_ACKED`].
    pub partner_acked_psn: u32,
    /// Largest payload of a First/Middle packet of the flow (its path MTU),
    /// 0 when none was seen.
    pub mtu: u32,
    /// The paired flow's `mtu` (with [`delta_flags::PARTNER`]).
    pub partner_mtu: u32,
    /// [`delta_flags`].
    pub flags: u32,
    /// Keeps the size a multiple of 8 with every byte named.
    pub _reserved: u32,
}

/// Size of a delta on the ring buffer.
pub const FLOW_DELTA_SIZE: usize = 136;
const _: () = assert!(core::mem::size_of::<FlowDelta>() == FLOW_DELTA_SIZE);
const _: () = assert!(7 * 8 + 4 * 4 + FLOW_KEY_SIZE + 7 * 4 == FLOW_DELTA_SIZE);
// Userspace tells the two apart by length.
const _: () = assert!(FLOW_DELTA_SIZE != crate::PACKET_RECORD_SIZE);

impl FlowDelta {
    pub const fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }
}

/// [`FlowState::state`].
pub mod state_flags {
    /// A request of the flow was seen: `next_psn` is known.
    pub const VALID: u32 = 1 << 0;
    /// A READ request was seen: the flow's PSNs are never counted in the
    /// kernel again (a READ consumes as many PSNs as its response has
    /// packets, which depends on the path MTU the analyzer infers).
    pub const HAS_READ: u32 = 1 << 1;
}

/// The value of the `FLOWS` map: the delta being accumulated (its key is
/// the map key) and what the kernel needs to decide about the next frame.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FlowState {
    pub delta: FlowDelta,
    /// When the flow's last delta was sent (or the flow was first seen).
    pub last_flush_ns: u64,
    /// The partner values the last delta carried: a delta is sent before a
    /// record when they changed, even with nothing counted.
    pub sent_partner_acked_psn: u32,
    pub sent_partner_mtu: u32,
    /// The partner bits of `delta.flags` last sent.
    pub sent_partner_flags: u32,
    /// [`state_flags`].
    pub state: u32,
}

pub const FLOW_STATE_SIZE: usize = 160;
const _: () = assert!(core::mem::size_of::<FlowState>() == FLOW_STATE_SIZE);
const _: () = assert!(FLOW_DELTA_SIZE + 8 + 4 * 4 == FLOW_STATE_SIZE);

/// The value of the `PAIRS` map: the flow the analyzer paired the key with.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Pairing {
    pub partner: FlowKey,
    /// Non-zero once the partner's own entry exists too: only then may the
    /// key's frames be counted in the kernel (the partner's deltas must be
    /// able to find the key's state; see `Tap::pair`).
    pub ready: u32,
}

pub const PAIRING_SIZE: usize = 40;
const _: () = assert!(core::mem::size_of::<Pairing>() == PAIRING_SIZE);
