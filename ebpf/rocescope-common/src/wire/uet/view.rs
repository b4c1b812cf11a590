//! UET's part of the record: its view of the record's transport block
//! ([`UetView`], read through [`PacketRecord::uet`]), which fields of it
//! hold a value ([`uet_present`]), and the record's accessors — the block
//! itself and the other owners' views are `crate::block`'s.
use crate::PacketRecord;
use crate::block::{View, empty, fits};
use crate::wire::TransportId;

/// [`UetView::present`]: which of its fields hold a value.
pub mod uet_present {
    /// `pds_type`, `pds_flags`, `next_header`: the PDS (or TSS) header's
    /// 16-bit prefix was read.
    pub const PDS: u16 = 1 << 0;
    /// `psn`: a RUD/ROD request's, a CONTROL packet's, or a NACK's NACK PSN.
    pub const PSN: u16 = 1 << 1;
    /// `spdcid` (every PDS type but RUDI and UUD).
    pub const PDC: u16 = 1 << 2;
    /// `cack_psn`, `ack_psn` (an ACK of any kind).
    pub const ACK: u16 = 1 << 3;
    /// `sack_base`, `sack_bitmap` (ACK_CC, ACK_CCX).
    pub const SACK: u16 = 1 << 4;
    /// `cc_type`, `cc_state` (ACK_CC).
    pub const CC: u16 = 1 << 5;
    /// `nack_code` (NACK, NACK_CCX).
    pub const NACK: u16 = 1 << 6;
    /// `entropy`.
    pub const ENTROPY: u16 = 1 << 7;
    /// `ses_opcode`, `ses_flags`: an SES header was read.
    pub const SES: u16 = 1 << 8;
    /// `message_id`.
    pub const MESSAGE_ID: u16 = 1 << 9;
    /// `job_id`.
    pub const JOB_ID: u16 = 1 << 10;
    /// `dpdcid` (with [`PDC`], but for a SYN request, whose bytes there
    /// hold its PSN offset).
    pub const DPDCID: u16 = 1 << 11;
    /// `ccc_id`, `credit_target` (RUD_CC, ROD_CC requests).
    pub const REQUEST_CC: u16 = 1 << 12;
    /// `pkt_id` (RUDI request and response).
    pub const PKT_ID: u16 = 1 << 13;
    /// A TSS header was read: `pds_type` is the TSS type (1) and what
    /// follows it is encrypted (`payload_len` counts it).
    pub const TSS: u16 = 1 << 14;
}

/// UET's fields (UE Specification 1.0.1): the PDS header's and the SES
/// header's that the analyzer keys and sequences by, as the walk
/// ([`super::walk`]) fills them; [`UetView::present`] says which hold a
/// value.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct UetView {
    /// ACK_CC/ACK_CCX: bit `i` (from the least significant) set when PSN
    /// `sack_base + i` was received; the 64 bits as on the wire.
    pub sack_bitmap: u64,
    /// ACK_CC: the 8 bytes of CC state as on the wire (big-endian; how to
    /// read them `cc_type` says).
    pub cc_state: u64,
    /// The PSN of a request or a control packet; a NACK's NACK PSN.
    pub psn: u32,
    /// An ACK's cumulative PSN: every PSN up to it was received.
    pub cack_psn: u32,
    /// The PSN an ACK answers (`cack_psn` plus its signed offset).
    pub ack_psn: u32,
    /// The SACK bitmap's first PSN (`cack_psn` plus the SACK PSN offset).
    pub sack_base: u32,
    /// SES job id (24 bits).
    pub job_id: u32,
    /// RUD_CC/ROD_CC: the credit target (24 bits).
    pub credit_target: u32,
    /// RUDI request or response: the packet id.
    pub pkt_id: u32,
    /// Source and destination PDC ids.
    pub spdcid: u16,
    pub dpdcid: u16,
    /// The entropy: native IP mode's entropy header; over UDP the UDP
    /// source port (also in `udp_sport`).
    pub entropy: u16,
    /// SES message id (a standard request's, a response's).
    pub message_id: u16,
    /// [`uet_present`] bits.
    pub present: u16,
    /// PDS type (`wire::uet::PdsType` as u8; 1: a TSS header).
    pub pds_type: u8,
    /// PDS flags (7 bits; their meaning depends on the type).
    pub pds_flags: u8,
    /// The prefix's 4 next-header bits (`wire::uet::NextHeader`); for a
    /// CONTROL packet its control type (`wire::uet::ControlType`).
    pub next_header: u8,
    /// NACK code (`wire::uet::NackCode` as u8).
    pub nack_code: u8,
    /// ACK_CC's CC type (0 NSCC, 1 credit).
    pub cc_type: u8,
    /// RUD_CC/ROD_CC: the CCC id.
    pub ccc_id: u8,
    /// SES opcode (6 bits: a request's `wire::uet::Opcode`, a response's
    /// `wire::uet::ResponseOpcode`, which `next_header` says).
    pub ses_opcode: u8,
    /// SES byte 1: a request's flags (version, DC, IE, REL, HD, EOM, SOM);
    /// a response's version and return code.
    pub ses_flags: u8,
    /// Keeps the size a multiple of 8 with every byte named.
    pub _reserved: [u8; 2],
}

const _: () = assert!(core::mem::size_of::<UetView>() == 2 * 8 + 7 * 4 + 5 * 2 + 8 + 2);
const _: () = assert!(fits::<UetView>());
// SAFETY: integers only, and it fits (asserted above).
unsafe impl View for UetView {
    const TAG: u8 = TransportId::Uet as u8;
}

impl UetView {
    /// All zeros: what the view reads as on a record that is not its own.
    pub const EMPTY: UetView = empty();
}

impl PacketRecord {
    /// UET's fields; all zero unless the record is UET's.
    #[inline(always)]
    pub fn uet(&self) -> &UetView {
        self.view().unwrap_or(&UetView::EMPTY)
    }

    /// UET's fields to write (see [`PacketRecord::roce_mut`]).
    #[inline(always)]
    pub fn uet_mut(&mut self) -> &mut UetView {
        self.view_mut()
    }
}
