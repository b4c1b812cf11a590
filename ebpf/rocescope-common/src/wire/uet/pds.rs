//! UET's Packet Delivery Sublayer (PDS) headers: the 16-bit prefix every
//! one starts with, and each PDS type's header after it (UE Specification
//! 1.0.1, as Wireshark master's `packet-uet.c` reads it; docs/inputs.md,
//! "UET", lists where the public sources differ and which was followed).
//!
//! Each view borrows the bytes: `new_checked` refuses a buffer shorter than
//! the header, accessors read big-endian at the [`field`] offsets.
pub use super::nack::NackCode;
use super::{Error, Header, be16, be24, be32, be64, byte};

/// Where each PDS field starts, from the first byte of the prefix.
pub mod field {
    /// Type (5 bits), next header or control type (4), flags (7).
    pub const PREFIX: usize = 0;
    pub const TYPE_SHIFT: u16 = 11;
    pub const NEXT_HEADER_SHIFT: u16 = 7;
    pub const NEXT_HEADER_MASK: u16 = 0x0F;
    pub const FLAGS_MASK: u16 = 0x7F;

    /// RUD/ROD request (and CONTROL, which shares the first 12 bytes).
    pub mod request {
        pub const CLEAR_PSN_OFFSET: usize = 2;
        pub const PSN: usize = 4;
        pub const SPDCID: usize = 8;
        /// DPDCID, or with SYN: use-reserved-PDC (1 bit), reserved (3),
        /// PSN offset (12).
        pub const DPDCID: usize = 10;
        pub const USE_RSV_PDC: u16 = 0x8000;
        pub const PSN_OFFSET_MASK: u16 = 0x0FFF;
        /// RUD_CC/ROD_CC: CCC id (8 bits), credit target (24).
        pub const CCC_ID: usize = 12;
        pub const CREDIT_TARGET: usize = 13;
    }

    /// CONTROL after the prefix.
    pub mod control {
        pub const PROBE_OPAQUE: usize = 2;
        pub const PSN: usize = 4;
        pub const SPDCID: usize = 8;
        pub const DPDCID: usize = 10;
        pub const PAYLOAD: usize = 12;
    }

    /// RUDI request and response.
    pub mod rudi {
        pub const PKT_ID: usize = 4;
    }

    /// ACK, ACK_CC and ACK_CCX.
    pub mod ack {
        pub const ACK_PSN_OFFSET: usize = 2;
        pub const CACK_PSN: usize = 4;
        pub const SPDCID: usize = 8;
        pub const DPDCID: usize = 10;
        /// CC type in the high nibble.
        pub const CC_TYPE: usize = 12;
        pub const MPR: usize = 13;
        pub const SACK_PSN_OFFSET: usize = 14;
        pub const SACK_BITMAP: usize = 16;
        /// ACK_CC: 8 bytes of NSCC or credit state; ACK_CCX: 16 bytes.
        pub const CC_STATE: usize = 24;
        /// NSCC state, from [`CC_STATE`].
        pub const NSCC_SERVICE_TIME: usize = 24;
        /// Restore cwnd (1 bit), receiver cwnd penalty (7).
        pub const NSCC_RC_PEND: usize = 26;
        pub const NSCC_RCVD_BYTES: usize = 27;
        /// Credit state: the credit (24 bits), then 3 reserved bytes.
        pub const CREDIT: usize = 24;
        /// Out-of-order count, in both NSCC and credit state.
        pub const OOO_COUNT: usize = 30;
    }

    /// NACK and NACK_CCX.
    pub mod nack {
        pub const CODE: usize = 2;
        pub const VENDOR_CODE: usize = 3;
        pub const PSN: usize = 4;
        pub const SPDCID: usize = 8;
        pub const DPDCID: usize = 10;
        /// The payload: the largest PSN received, plus one.
        pub const PAYLOAD: usize = 12;
    }

    /// Flags of requests (RUD, ROD, their CC variants) and CONTROL.
    pub const FLAG_RETX: u8 = 0x10;
    pub const FLAG_AR: u8 = 0x08;
    pub const FLAG_SYN: u8 = 0x04;
    /// Flags of ACKs and NACKs: ECN-marked, retransmission.
    pub const FLAG_M: u8 = 0x20;
    /// ACKs: probe; NACKs: the NACK-type bit (NT).
    pub const FLAG_P: u8 = 0x08;
    pub const FLAG_NT: u8 = 0x08;
    /// ACKs: the 2-bit request (none, clear, close).
    pub const FLAG_REQ_MASK: u8 = 0x06;
    pub const FLAG_REQ_SHIFT: u8 = 1;
}

/// Header lengths, the prefix included.
pub const PREFIX_LEN: usize = 2;
pub const REQUEST_LEN: usize = 12;
pub const REQUEST_CC_LEN: usize = 16;
pub const RUDI_LEN: usize = 8;
pub const UUD_LEN: usize = 4;
pub const ACK_LEN: usize = 12;
pub const ACK_CC_LEN: usize = 32;
/// 12 + 12 + a 16-byte CCX state (xdp2 gives 8 bytes of state: 32).
pub const ACK_CCX_LEN: usize = 40;
pub const NACK_LEN: usize = 16;
/// NACK plus 16 bytes of CCX state.
pub const NACK_CCX_LEN: usize = 32;
pub const CONTROL_LEN: usize = 16;

wire_enum! {
/// The PDS type: the prefix's top 5 bits.
pub enum PdsType {
    /// Not a PDS header: the TSS (encryption) header's type.
    Tss = 1,
    RudRequest = 2,
    RodRequest = 3,
    RudiRequest = 4,
    RudiResponse = 5,
    UudRequest = 6,
    Ack = 7,
    AckCc = 8,
    AckCcx = 9,
    Nack = 10,
    Control = 11,
    NackCcx = 12,
    RudCcRequest = 13,
    RodCcRequest = 14,
}
}

impl PdsType {
    /// Its header's length, the prefix included (the TSS's depends on its
    /// SP bit: [`super::tss::Tss::header_len`]).
    pub const fn header_len(self) -> usize {
        match self {
            PdsType::Tss => super::tss::BASE_LEN,
            PdsType::RudRequest | PdsType::RodRequest => REQUEST_LEN,
            PdsType::RudCcRequest | PdsType::RodCcRequest => REQUEST_CC_LEN,
            PdsType::RudiRequest | PdsType::RudiResponse => RUDI_LEN,
            PdsType::UudRequest => UUD_LEN,
            PdsType::Ack => ACK_LEN,
            PdsType::AckCc => ACK_CC_LEN,
            PdsType::AckCcx => ACK_CCX_LEN,
            PdsType::Nack => NACK_LEN,
            PdsType::NackCcx => NACK_CCX_LEN,
            PdsType::Control => CONTROL_LEN,
        }
    }

    /// RUD/ROD requests and their CC variants.
    pub const fn is_rud_rod_request(self) -> bool {
        matches!(
            self,
            PdsType::RudRequest
                | PdsType::RodRequest
                | PdsType::RudCcRequest
                | PdsType::RodCcRequest
        )
    }
}

wire_enum! {
/// CONTROL's control type (in the prefix's next-header bits).
pub enum ControlType {
    Noop = 0,
    AckReq = 1,
    Clear = 2,
    ClearReq = 3,
    Close = 4,
    CloseReq = 5,
    Probe = 6,
    Credit = 7,
    CreditReq = 8,
    /// Listed by xdp2, not by Wireshark master.
    Negotiation = 9,
}
}

/// The congestion-control state an ACK_CC carries (its CC type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CcState {
    /// CC type 0: NSCC.
    Nscc {
        service_time: u16,
        restore_cwnd: bool,
        rcv_cwnd_pend: u8,
        rcvd_bytes: u32,
        ooo_count: u16,
    },
    /// CC type 1: credit-based.
    Credit { credit: u32, ooo_count: u16 },
    /// Another CC type: the 8 bytes undecoded.
    Other { cc_type: u8, raw: u64 },
}

/// A PDS header of any type: the prefix read, the whole header checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pds<'a> {
    buf: &'a [u8],
    pds_type: PdsType,
}

impl<'a> Pds<'a> {
    /// The PDS header at the start of `buf`: its type known and its whole
    /// header (as long as the type says) present. A TSS type is refused
    /// here ([`super::tss::Tss`] reads it).
    pub fn new_checked(buf: &'a [u8]) -> Result<Pds<'a>, Error> {
        if buf.len() < PREFIX_LEN {
            return Err(Error::Truncated(Header::PdsPrefix));
        }
        let raw = (be16(buf, field::PREFIX) >> field::TYPE_SHIFT) as u8;
        let pds_type = match PdsType::from_u8(raw) {
            Some(PdsType::Tss) | None => return Err(Error::UnknownType(Header::PdsPrefix, raw)),
            Some(t) => t,
        };
        if buf.len() < pds_type.header_len() {
            return Err(Error::Truncated(Header::Pds(pds_type)));
        }
        Ok(Pds { buf, pds_type })
    }

    pub fn pds_type(&self) -> PdsType {
        self.pds_type
    }

    /// The header's length in bytes.
    pub fn header_len(&self) -> usize {
        self.pds_type.header_len()
    }

    /// The bytes after the header (an SES header, or nothing).
    pub fn payload(&self) -> &'a [u8] {
        self.buf.get(self.header_len()..).unwrap_or(&[])
    }

    /// The prefix's 4 next-header bits (CONTROL: the control type).
    pub fn next_header_raw(&self) -> u8 {
        ((be16(self.buf, field::PREFIX) >> field::NEXT_HEADER_SHIFT) & field::NEXT_HEADER_MASK)
            as u8
    }

    /// The 7 flag bits, as the type defines them.
    pub fn flags(&self) -> u8 {
        (be16(self.buf, field::PREFIX) & field::FLAGS_MASK) as u8
    }

    /// CONTROL's control type.
    pub fn control_type(&self) -> Option<ControlType> {
        match self.pds_type {
            PdsType::Control => ControlType::from_u8(self.next_header_raw()),
            _ => None,
        }
    }

    fn flag(&self, bit: u8) -> bool {
        self.flags() & bit != 0
    }

    /// A retransmission (requests, CONTROL, ACKs, NACKs).
    pub fn retx(&self) -> bool {
        self.flag(field::FLAG_RETX)
    }

    /// ACK requested (requests and CONTROL).
    pub fn ar(&self) -> bool {
        self.has_request_flags() && self.flag(field::FLAG_AR)
    }

    /// SYN: the request opens a PDC (requests and CONTROL).
    pub fn syn(&self) -> bool {
        self.has_request_flags() && self.flag(field::FLAG_SYN)
    }

    /// ECN-marked (ACKs and NACKs).
    pub fn m(&self) -> bool {
        self.is_ack_or_nack() && self.flag(field::FLAG_M)
    }

    /// A probe (ACKs).
    pub fn p(&self) -> bool {
        self.is_ack() && self.flag(field::FLAG_P)
    }

    /// NACK type bit (NACKs).
    pub fn nt(&self) -> bool {
        self.is_nack() && self.flag(field::FLAG_NT)
    }

    /// ACK's 2-bit request: 0 none, 1 clear PSN, 2 close PDC.
    pub fn req(&self) -> u8 {
        if self.is_ack() {
            (self.flags() & field::FLAG_REQ_MASK) >> field::FLAG_REQ_SHIFT
        } else {
            0
        }
    }

    fn has_request_flags(&self) -> bool {
        self.pds_type.is_rud_rod_request() || self.pds_type == PdsType::Control
    }

    fn is_ack(&self) -> bool {
        matches!(
            self.pds_type,
            PdsType::Ack | PdsType::AckCc | PdsType::AckCcx
        )
    }

    fn is_ack_or_nack(&self) -> bool {
        self.is_ack() || self.is_nack()
    }

    fn is_nack(&self) -> bool {
        matches!(self.pds_type, PdsType::Nack | PdsType::NackCcx)
    }

    fn has_pdc_ids(&self) -> bool {
        !matches!(
            self.pds_type,
            PdsType::RudiRequest | PdsType::RudiResponse | PdsType::UudRequest | PdsType::Tss
        )
    }

    /// The request's or CONTROL's PSN; a NACK's NACK PSN.
    pub fn psn(&self) -> Option<u32> {
        match self.pds_type {
            t if t.is_rud_rod_request() => Some(be32(self.buf, field::request::PSN)),
            PdsType::Control => Some(be32(self.buf, field::control::PSN)),
            PdsType::Nack | PdsType::NackCcx => Some(be32(self.buf, field::nack::PSN)),
            _ => None,
        }
    }

    /// A request's clear PSN offset (signed, from its PSN).
    pub fn clear_psn_offset(&self) -> Option<i16> {
        self.pds_type
            .is_rud_rod_request()
            .then(|| be16(self.buf, field::request::CLEAR_PSN_OFFSET) as i16)
    }

    /// Source PDC id (every type with PDC ids; the offset is the same).
    pub fn spdcid(&self) -> Option<u16> {
        self.has_pdc_ids()
            .then(|| be16(self.buf, field::request::SPDCID))
    }

    /// Destination PDC id; `None` for a SYN request, whose bytes hold the
    /// PSN offset instead.
    pub fn dpdcid(&self) -> Option<u16> {
        if !self.has_pdc_ids() || (self.pds_type.is_rud_rod_request() && self.syn()) {
            return None;
        }
        Some(be16(self.buf, field::request::DPDCID))
    }

    /// A SYN request's PSN offset (12 bits): its PSN less the PDC's start.
    pub fn psn_offset(&self) -> Option<u16> {
        (self.pds_type.is_rud_rod_request() && self.syn())
            .then(|| be16(self.buf, field::request::DPDCID) & field::request::PSN_OFFSET_MASK)
    }

    /// A SYN request's use-reserved-PDC bit.
    pub fn use_rsv_pdc(&self) -> Option<bool> {
        (self.pds_type.is_rud_rod_request() && self.syn())
            .then(|| be16(self.buf, field::request::DPDCID) & field::request::USE_RSV_PDC != 0)
    }

    fn is_cc_request(&self) -> bool {
        matches!(self.pds_type, PdsType::RudCcRequest | PdsType::RodCcRequest)
    }

    /// RUD_CC/ROD_CC: the CCC id.
    pub fn ccc_id(&self) -> Option<u8> {
        self.is_cc_request()
            .then(|| byte(self.buf, field::request::CCC_ID))
    }

    /// RUD_CC/ROD_CC: the credit target (24 bits).
    pub fn credit_target(&self) -> Option<u32> {
        self.is_cc_request()
            .then(|| be24(self.buf, field::request::CREDIT_TARGET))
    }

    /// RUDI's packet id.
    pub fn rudi_pkt_id(&self) -> Option<u32> {
        matches!(self.pds_type, PdsType::RudiRequest | PdsType::RudiResponse)
            .then(|| be32(self.buf, field::rudi::PKT_ID))
    }

    /// ACKs: the ACK PSN offset (signed, from the cumulative ACK PSN).
    pub fn ack_psn_offset(&self) -> Option<i16> {
        self.is_ack()
            .then(|| be16(self.buf, field::ack::ACK_PSN_OFFSET) as i16)
    }

    /// ACKs: the cumulative ACK PSN.
    pub fn cack_psn(&self) -> Option<u32> {
        self.is_ack().then(|| be32(self.buf, field::ack::CACK_PSN))
    }

    /// ACKs: the PSN this ACK acknowledges (cumulative PSN + offset).
    pub fn ack_psn(&self) -> Option<u32> {
        let off = self.ack_psn_offset()?;
        Some(self.cack_psn()?.wrapping_add_signed(i32::from(off)))
    }

    fn has_ack_ext(&self) -> bool {
        matches!(self.pds_type, PdsType::AckCc | PdsType::AckCcx)
    }

    /// ACK_CC/ACK_CCX: the CC type (4 bits).
    pub fn cc_type(&self) -> Option<u8> {
        self.has_ack_ext()
            .then(|| byte(self.buf, field::ack::CC_TYPE) >> 4)
    }

    /// ACK_CC/ACK_CCX: the maximum PSN range.
    pub fn mpr(&self) -> Option<u8> {
        self.has_ack_ext().then(|| byte(self.buf, field::ack::MPR))
    }

    /// ACK_CC/ACK_CCX: the SACK PSN offset (where the bitmap starts,
    /// from the cumulative ACK PSN).
    pub fn sack_psn_offset(&self) -> Option<u16> {
        self.has_ack_ext()
            .then(|| be16(self.buf, field::ack::SACK_PSN_OFFSET))
    }

    /// ACK_CC/ACK_CCX: the 64-bit SACK bitmap.
    pub fn sack_bitmap(&self) -> Option<u64> {
        self.has_ack_ext()
            .then(|| be64(self.buf, field::ack::SACK_BITMAP))
    }

    /// ACK_CC: its 8 bytes of CC state, by CC type.
    pub fn cc_state(&self) -> Option<CcState> {
        if self.pds_type != PdsType::AckCc {
            return None;
        }
        let b = self.buf;
        let ooo_count = be16(b, field::ack::OOO_COUNT);
        Some(match self.cc_type()? {
            0 => {
                let rc_pend = byte(b, field::ack::NSCC_RC_PEND);
                CcState::Nscc {
                    service_time: be16(b, field::ack::NSCC_SERVICE_TIME),
                    restore_cwnd: rc_pend & 0x80 != 0,
                    rcv_cwnd_pend: rc_pend & 0x7F,
                    rcvd_bytes: be24(b, field::ack::NSCC_RCVD_BYTES),
                    ooo_count,
                }
            }
            1 => CcState::Credit {
                credit: be24(b, field::ack::CREDIT),
                ooo_count,
            },
            cc_type => CcState::Other {
                cc_type,
                raw: be64(b, field::ack::CC_STATE),
            },
        })
    }

    /// ACK_CC: its 8 bytes of CC state as on the wire (big-endian).
    pub fn cc_state_raw(&self) -> Option<u64> {
        (self.pds_type == PdsType::AckCc).then(|| be64(self.buf, field::ack::CC_STATE))
    }

    /// ACK_CCX: its 16 bytes of extended CC state, undecoded.
    pub fn ccx_state(&self) -> Option<&'a [u8]> {
        match self.pds_type {
            PdsType::AckCcx => self.buf.get(field::ack::CC_STATE..ACK_CCX_LEN),
            PdsType::NackCcx => self.buf.get(NACK_LEN..NACK_CCX_LEN),
            _ => None,
        }
    }

    /// NACKs: the code as sent.
    pub fn nack_code_raw(&self) -> Option<u8> {
        self.is_nack().then(|| byte(self.buf, field::nack::CODE))
    }

    /// NACKs: the code, when the specification names it.
    pub fn nack_code(&self) -> Option<NackCode> {
        NackCode::from_u8(self.nack_code_raw()?)
    }

    /// NACKs: the vendor code.
    pub fn nack_vendor_code(&self) -> Option<u8> {
        self.is_nack()
            .then(|| byte(self.buf, field::nack::VENDOR_CODE))
    }

    /// NACKs: the payload, the largest PSN received plus one.
    pub fn nack_max_recv_psn_plus_1(&self) -> Option<u32> {
        self.is_nack().then(|| be32(self.buf, field::nack::PAYLOAD))
    }

    /// CONTROL: the probe opaque.
    pub fn probe_opaque(&self) -> Option<u16> {
        (self.pds_type == PdsType::Control).then(|| be16(self.buf, field::control::PROBE_OPAQUE))
    }

    /// CONTROL: the payload (what it means depends on the control type).
    pub fn control_payload(&self) -> Option<u32> {
        (self.pds_type == PdsType::Control).then(|| be32(self.buf, field::control::PAYLOAD))
    }
}

const _: () = assert!(PdsType::Tss as u8 == super::tss::TYPE);
