//! Writing UET headers: the mutable side of the [`super::pds`] and
//! [`super::ses`] views, at their own [`super::pds::field`] and
//! [`super::ses::field`] offsets (one definition of each), in the smoltcp
//! style — a view over a caller's buffer whose setters write big-endian
//! fields. `rocescope synth` builds its UET frames with these, and the
//! views read them back.
//!
//! `new_checked` refuses a buffer shorter than the header; a setter never
//! writes past it (a write out of range, which would be a bug here, is
//! skipped rather than a panic).
use super::pds::{PdsType, field as pf};
use super::ses::{NextHeader, field as sf};
use super::{Error, Header};

#[inline(always)]
fn put<const N: usize>(b: &mut [u8], at: usize, v: [u8; N]) {
    if let Some(s) = b.get_mut(at..at.saturating_add(N)) {
        s.copy_from_slice(&v);
    }
}

#[inline(always)]
fn put24(b: &mut [u8], at: usize, v: u32) {
    let [_, x, y, z] = v.to_be_bytes();
    put(b, at, [x, y, z]);
}

/// A PDS header of type `pds_type` being written at the start of a buffer.
#[derive(Debug)]
pub struct PdsMut<'a> {
    buf: &'a mut [u8],
    pds_type: PdsType,
}

impl<'a> PdsMut<'a> {
    /// The header of `pds_type` at the start of `buf`, which must hold all
    /// of it; the prefix's type is written, its other bits zeroed. A TSS
    /// type is refused (it is not a PDS header).
    pub fn new_checked(buf: &'a mut [u8], pds_type: PdsType) -> Result<PdsMut<'a>, Error> {
        if pds_type == PdsType::Tss {
            return Err(Error::UnknownType(Header::PdsPrefix, pds_type as u8));
        }
        if buf.len() < pds_type.header_len() {
            return Err(Error::Truncated(Header::Pds(pds_type)));
        }
        let mut p = PdsMut { buf, pds_type };
        p.set_prefix(0, 0);
        Ok(p)
    }

    /// The prefix: the type, the next header (CONTROL: the control type)
    /// and the 7 flag bits ([`pf::FLAG_RETX`], …).
    pub fn set_prefix(&mut self, next_header: u8, flags: u8) {
        let word = ((self.pds_type as u16) << pf::TYPE_SHIFT)
            | ((u16::from(next_header) & pf::NEXT_HEADER_MASK) << pf::NEXT_HEADER_SHIFT)
            | (u16::from(flags) & pf::FLAGS_MASK);
        put(self.buf, pf::PREFIX, word.to_be_bytes());
    }

    /// A request's clear PSN offset.
    pub fn set_clear_psn_offset(&mut self, offset: i16) {
        put(
            self.buf,
            pf::request::CLEAR_PSN_OFFSET,
            offset.to_be_bytes(),
        );
    }

    /// The PSN: a request's or CONTROL's, a NACK's NACK PSN.
    pub fn set_psn(&mut self, psn: u32) {
        let at = match self.pds_type {
            PdsType::Nack | PdsType::NackCcx => pf::nack::PSN,
            PdsType::Control => pf::control::PSN,
            _ => pf::request::PSN,
        };
        put(self.buf, at, psn.to_be_bytes());
    }

    /// Source and destination PDC ids (the same offsets in every type
    /// that has them).
    pub fn set_pdc_ids(&mut self, spdcid: u16, dpdcid: u16) {
        put(self.buf, pf::request::SPDCID, spdcid.to_be_bytes());
        put(self.buf, pf::request::DPDCID, dpdcid.to_be_bytes());
    }

    /// A SYN request: its source PDC id and, in the DPDCID's place, the
    /// use-reserved-PDC bit and the 12-bit PSN offset from the PDC's start.
    pub fn set_syn_pdc(&mut self, spdcid: u16, use_rsv_pdc: bool, psn_offset: u16) {
        let word = (psn_offset & pf::request::PSN_OFFSET_MASK)
            | if use_rsv_pdc {
                pf::request::USE_RSV_PDC
            } else {
                0
            };
        put(self.buf, pf::request::SPDCID, spdcid.to_be_bytes());
        put(self.buf, pf::request::DPDCID, word.to_be_bytes());
    }

    /// ACKs: the cumulative ACK PSN and the offset of the PSN this ACK
    /// acknowledges from it.
    pub fn set_ack_psns(&mut self, cack_psn: u32, ack_psn_offset: i16) {
        put(self.buf, pf::ack::CACK_PSN, cack_psn.to_be_bytes());
        put(
            self.buf,
            pf::ack::ACK_PSN_OFFSET,
            ack_psn_offset.to_be_bytes(),
        );
    }

    /// ACK_CC/ACK_CCX: CC type (4 bits), maximum PSN range, and the SACK
    /// bitmap with its start's offset from the cumulative ACK PSN.
    pub fn set_ack_ext(&mut self, cc_type: u8, mpr: u8, sack_psn_offset: u16, sack_bitmap: u64) {
        put(self.buf, pf::ack::CC_TYPE, [(cc_type & 0x0F) << 4]);
        put(self.buf, pf::ack::MPR, [mpr]);
        put(
            self.buf,
            pf::ack::SACK_PSN_OFFSET,
            sack_psn_offset.to_be_bytes(),
        );
        put(self.buf, pf::ack::SACK_BITMAP, sack_bitmap.to_be_bytes());
    }

    /// ACK_CC with CC type 0: the NSCC state.
    pub fn set_nscc(
        &mut self,
        service_time: u16,
        restore_cwnd: bool,
        rcv_cwnd_pend: u8,
        rcvd_bytes: u32,
        ooo_count: u16,
    ) {
        put(
            self.buf,
            pf::ack::NSCC_SERVICE_TIME,
            service_time.to_be_bytes(),
        );
        let rc_pend = (rcv_cwnd_pend & 0x7F) | if restore_cwnd { 0x80 } else { 0 };
        put(self.buf, pf::ack::NSCC_RC_PEND, [rc_pend]);
        put24(self.buf, pf::ack::NSCC_RCVD_BYTES, rcvd_bytes);
        put(self.buf, pf::ack::OOO_COUNT, ooo_count.to_be_bytes());
    }

    /// NACKs: the code, the vendor code and the payload (the largest PSN
    /// received, plus one).
    pub fn set_nack(&mut self, code: u8, vendor_code: u8, max_recv_psn_plus_1: u32) {
        put(self.buf, pf::nack::CODE, [code]);
        put(self.buf, pf::nack::VENDOR_CODE, [vendor_code]);
        put(
            self.buf,
            pf::nack::PAYLOAD,
            max_recv_psn_plus_1.to_be_bytes(),
        );
    }
}

/// An SES header of kind `kind` being written at the start of a buffer.
#[derive(Debug)]
pub struct SesMut<'a> {
    buf: &'a mut [u8],
    kind: NextHeader,
}

impl<'a> SesMut<'a> {
    /// The SES header of `kind` at the start of `buf`, which must hold all
    /// of it; its bytes are zeroed.
    pub fn new_checked(buf: &'a mut [u8], kind: NextHeader) -> Result<SesMut<'a>, Error> {
        if kind == NextHeader::None {
            return Err(Error::UnknownType(Header::Ses(kind), 0));
        }
        let Some(head) = buf.get_mut(..kind.header_len()) else {
            return Err(Error::Truncated(Header::Ses(kind)));
        };
        head.fill(0);
        Ok(SesMut { buf, kind })
    }

    /// The opcode (6 bits; requests' or responses' values).
    pub fn set_opcode(&mut self, opcode: u8) {
        put(self.buf, sf::OPCODE, [opcode & sf::OPCODE_MASK]);
    }

    /// A request's flag byte ([`sf::FLAG_SOM`], [`sf::FLAG_EOM`], …; the
    /// version in the top two bits).
    pub fn set_request_flags(&mut self, flags: u8) {
        put(self.buf, sf::FLAGS, [flags]);
    }

    /// A response's return code (6 bits; the version bits left 0).
    pub fn set_return_code(&mut self, code: u8) {
        put(self.buf, sf::response::RETURN_CODE, [code & 0x3F]);
    }

    /// The message id (a standard request's, a response's).
    pub fn set_message_id(&mut self, id: u16) {
        put(self.buf, sf::standard::MESSAGE_ID, id.to_be_bytes());
    }

    /// The job id (24 bits) and the index generation before it.
    pub fn set_job(&mut self, index_generation: u8, job_id: u32) {
        put(self.buf, sf::standard::INDEX_GENERATION, [index_generation]);
        put24(self.buf, sf::standard::JOB_ID, job_id);
    }

    /// Requests: PIDonFEP and resource index (12 bits each).
    pub fn set_target(&mut self, pid_on_fep: u16, resource_index: u16) {
        put(
            self.buf,
            sf::standard::PID_ON_FEP,
            (pid_on_fep & sf::LOW12).to_be_bytes(),
        );
        put(
            self.buf,
            sf::standard::RESOURCE_INDEX,
            (resource_index & sf::LOW12).to_be_bytes(),
        );
    }

    /// Requests: the buffer offset.
    pub fn set_buffer_offset(&mut self, offset: u64) {
        put(self.buf, sf::standard::BUFFER_OFFSET, offset.to_be_bytes());
    }

    /// Standard and medium requests: the initiator and the memory key (or
    /// match bits).
    pub fn set_initiator_key(&mut self, initiator: u32, memory_key: u64) {
        put(self.buf, sf::standard::INITIATOR, initiator.to_be_bytes());
        put(self.buf, sf::standard::MEMORY_KEY, memory_key.to_be_bytes());
    }

    /// A standard request without SOM: payload length (14 bits) and
    /// message offset (with SOM the same bytes are header data).
    pub fn set_payload_at(&mut self, payload_length: u16, message_offset: u32) {
        put(
            self.buf,
            sf::standard::PAYLOAD_LENGTH,
            (payload_length & sf::LOW14).to_be_bytes(),
        );
        put(
            self.buf,
            sf::standard::MESSAGE_OFFSET,
            message_offset.to_be_bytes(),
        );
    }

    /// The request length: a standard request's 32 bits, a small or
    /// medium request's 14.
    pub fn set_request_length(&mut self, len: u32) {
        match self.kind {
            NextHeader::RequestStandard => {
                put(self.buf, sf::standard::REQUEST_LENGTH, len.to_be_bytes())
            }
            _ => put(
                self.buf,
                sf::small::REQUEST_LENGTH,
                ((len as u16) & sf::LOW14).to_be_bytes(),
            ),
        }
    }

    /// A response's modified length.
    pub fn set_modified_length(&mut self, len: u32) {
        let at = match self.kind {
            NextHeader::ResponseData => sf::response::DATA_MODIFIED_LENGTH,
            _ => sf::response::MODIFIED_LENGTH,
        };
        put(self.buf, at, len.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::super::{CcState, NackCode, Opcode, ResponseOpcode, over_udp};
    use super::*;

    /// What the setters write, the views read back; the byte layout itself
    /// is the views' (checked there against xdp2's and Wireshark's).
    #[test]
    fn written_headers_read_back_through_the_views() {
        let mut b = [0u8; 12 + 44 + 3];
        let mut p = PdsMut::new_checked(&mut b, PdsType::RudRequest).unwrap();
        p.set_prefix(
            NextHeader::RequestStandard as u8,
            pf::FLAG_RETX | pf::FLAG_SYN,
        );
        p.set_clear_psn_offset(-3);
        p.set_psn(0x0102_0304);
        p.set_syn_pdc(0x0011, true, 0x123);
        let mut s = SesMut::new_checked(&mut b[12..], NextHeader::RequestStandard).unwrap();
        s.set_opcode(Opcode::Write as u8);
        s.set_request_flags(sf::FLAG_EOM);
        s.set_message_id(77);
        s.set_job(2, 0xABCDEF);
        s.set_target(0x432, 0x765);
        s.set_buffer_offset(1 << 40);
        s.set_initiator_key(9, 0x55);
        s.set_payload_at(3, 4096);
        s.set_request_length(8192);
        let f = over_udp(&b).unwrap();
        let p = f.pds.unwrap();
        assert_eq!(p.pds_type(), PdsType::RudRequest);
        assert_eq!((p.retx(), p.ar(), p.syn()), (true, false, true));
        assert_eq!(p.clear_psn_offset(), Some(-3));
        assert_eq!(p.psn(), Some(0x0102_0304));
        assert_eq!(p.spdcid(), Some(0x0011));
        assert_eq!((p.psn_offset(), p.use_rsv_pdc()), (Some(0x123), Some(true)));
        let s = f.ses.unwrap();
        assert_eq!(s.opcode(), Some(Opcode::Write));
        assert_eq!((s.som(), s.eom()), (false, true));
        assert_eq!(s.message_id(), Some(77));
        assert_eq!(
            (s.index_generation(), s.job_id()),
            (Some(2), Some(0xABCDEF))
        );
        assert_eq!(
            (s.pid_on_fep(), s.resource_index()),
            (Some(0x432), Some(0x765))
        );
        assert_eq!(s.buffer_offset(), Some(1 << 40));
        assert_eq!((s.initiator(), s.memory_key()), (Some(9), Some(0x55)));
        assert_eq!(
            (s.payload_length(), s.message_offset()),
            (Some(3), Some(4096))
        );
        assert_eq!(s.request_length(), Some(8192));
        assert_eq!(f.payload_len, 3);

        let mut b = [0u8; 32 + 12];
        let mut p = PdsMut::new_checked(&mut b, PdsType::AckCc).unwrap();
        p.set_prefix(NextHeader::Response as u8, pf::FLAG_M);
        p.set_ack_psns(1000, 5);
        p.set_pdc_ids(2, 1);
        p.set_ack_ext(0, 64, 1, 0x8000_0000_0000_0001);
        p.set_nscc(300, true, 5, 0x12_3456, 7);
        let mut s = SesMut::new_checked(&mut b[32..], NextHeader::Response).unwrap();
        s.set_opcode(ResponseOpcode::DefaultResponse as u8);
        s.set_return_code(0);
        s.set_message_id(4);
        s.set_modified_length(65536);
        let f = over_udp(&b).unwrap();
        let p = f.pds.unwrap();
        assert!(p.m());
        assert_eq!((p.cack_psn(), p.ack_psn()), (Some(1000), Some(1005)));
        assert_eq!((p.spdcid(), p.dpdcid()), (Some(2), Some(1)));
        assert_eq!((p.cc_type(), p.mpr()), (Some(0), Some(64)));
        assert_eq!(p.sack_psn_offset(), Some(1));
        assert_eq!(p.sack_bitmap(), Some(0x8000_0000_0000_0001));
        assert_eq!(
            p.cc_state(),
            Some(CcState::Nscc {
                service_time: 300,
                restore_cwnd: true,
                rcv_cwnd_pend: 5,
                rcvd_bytes: 0x12_3456,
                ooo_count: 7
            })
        );
        let s = f.ses.unwrap();
        assert_eq!(s.response_opcode(), Some(ResponseOpcode::DefaultResponse));
        assert_eq!(
            (s.message_id(), s.modified_length()),
            (Some(4), Some(65536))
        );

        let mut b = [0u8; 16];
        let mut p = PdsMut::new_checked(&mut b, PdsType::Nack).unwrap();
        p.set_prefix(0, pf::FLAG_RETX);
        p.set_psn(41);
        p.set_pdc_ids(2, 1);
        p.set_nack(NackCode::Trimmed as u8, 0, 45);
        let p = over_udp(&b).unwrap().pds.unwrap();
        assert_eq!(
            (p.psn(), p.nack_code()),
            (Some(41), Some(NackCode::Trimmed))
        );
        assert_eq!(p.nack_max_recv_psn_plus_1(), Some(45));

        assert!(PdsMut::new_checked(&mut [0u8; 11], PdsType::RudRequest).is_err());
        assert!(SesMut::new_checked(&mut [0u8; 43], NextHeader::RequestStandard).is_err());
        assert!(PdsMut::new_checked(&mut [0u8; 16], PdsType::Tss).is_err());
    }
}
