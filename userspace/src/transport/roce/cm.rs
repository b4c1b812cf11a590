//! Communication Management MADs (IBA Vol. 1 §12.6): the REQ and REP that set
//! up an RC connection name both of its QPs and their starting PSNs, which
//! pairs the two directions of a connection exactly (rather than by PSN
//! correlation). They travel as UD SEND Only to QP1 with a DETH; the MAD is
//! the payload.
//!
//! Offsets below are from the start of the CM message, which follows the
//! 24-byte common MAD header.
use rocescope_common::PacketRecord;
use rocescope_common::proto::{cm, ib};

use crate::view::{field, fixed_view, payload_after};

fixed_view! {
    /// Common MAD header (IBA Vol. 1 §13.4.2).
    ///
    /// ```text
    /// 0: BaseVersion | 1: MgmtClass | 2: ClassVersion | 3: R Method
    /// 4-5: Status | 6-7: ClassSpecific | 8-15: TransactionID
    /// 16-17: AttributeID | 18-19: reserved | 20-23: AttributeModifier
    /// ```
    Mad, cm::MAD_HEADER_LEN
}
payload_after!(Mad);

impl<T: AsRef<[u8]>> Mad<T> {
    pub fn base_version(&self) -> u8 {
        field::u8_at(self.bytes(), 0)
    }
    pub fn mgmt_class(&self) -> u8 {
        field::u8_at(self.bytes(), 1)
    }
    pub fn class_version(&self) -> u8 {
        field::u8_at(self.bytes(), 2)
    }
    pub fn method(&self) -> u8 {
        field::u8_at(self.bytes(), 3) & 0x7F
    }
    pub fn transaction_id(&self) -> u64 {
        field::be64(self.bytes(), 8)
    }
    pub fn attribute_id(&self) -> u16 {
        field::be16(self.bytes(), 16)
    }
}

fixed_view! {
    /// The start of a CM REQ message (table 106), through the Starting PSN.
    CmReq, cm::REQ_PREFIX_LEN
}

impl<T: AsRef<[u8]>> CmReq<T> {
    pub fn local_comm_id(&self) -> u32 {
        field::be32(self.bytes(), 0)
    }
    pub fn service_id(&self) -> u64 {
        field::be64(self.bytes(), 8)
    }
    /// The active side's QP.
    pub fn local_qpn(&self) -> u32 {
        field::be24(self.bytes(), 32)
    }
    /// The first PSN the active side will send.
    pub fn starting_psn(&self) -> u32 {
        field::be24(self.bytes(), 44)
    }
    /// Retry Count (3 bits): how often both QPs of the connection resend
    /// after a local ACK timeout before giving up; the low bits of the byte
    /// whose high five are the Local CM Response Timeout.
    pub fn retry_count(&self) -> u8 {
        field::u8_at(self.bytes(), 47) & 0x07
    }
}

fixed_view! {
    /// The start of a CM REP message (table 110), through the Starting PSN.
    CmRep, cm::REP_PREFIX_LEN
}

impl<T: AsRef<[u8]>> CmRep<T> {
    pub fn local_comm_id(&self) -> u32 {
        field::be32(self.bytes(), 0)
    }
    /// The REQ's local communication id, which this REP answers.
    pub fn remote_comm_id(&self) -> u32 {
        field::be32(self.bytes(), 4)
    }
    /// The passive side's QP.
    pub fn local_qpn(&self) -> u32 {
        field::be24(self.bytes(), 12)
    }
    pub fn starting_psn(&self) -> u32 {
        field::be24(self.bytes(), 20)
    }
}

/// What a REQ or REP says about the connection it sets up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmMessage {
    /// From the active side: its comm id, QP, starting PSN and the
    /// connection's retry count.
    Req {
        local_comm_id: u32,
        local_qpn: u32,
        starting_psn: u32,
        retry_count: u8,
    },
    /// From the passive side: its comm id, the REQ's, its QP and starting PSN.
    Rep {
        local_comm_id: u32,
        remote_comm_id: u32,
        local_qpn: u32,
        starting_psn: u32,
    },
}

/// The CM REQ or REP in a decoded frame's payload, if it is one: a UD SEND
/// Only to QP1 whose MAD is of the CM class with a REQ or REP attribute.
pub fn message(rec: &PacketRecord, payload: &[u8]) -> Option<CmMessage> {
    if !rec.has(rocescope_common::flags::HAS_BTH)
        || rec.roce().opcode != cm::GSI_OPCODE
        || rec.roce().dest_qp != ib::QP1
    {
        return None;
    }
    let mad = Mad::new_checked(payload).ok()?;
    if mad.mgmt_class() != cm::MGMT_CLASS_CM {
        return None;
    }
    match mad.attribute_id() {
        cm::ATTR_REQ => {
            let req = CmReq::new_checked(mad.payload()).ok()?;
            Some(CmMessage::Req {
                local_comm_id: req.local_comm_id(),
                local_qpn: req.local_qpn(),
                starting_psn: req.starting_psn(),
                retry_count: req.retry_count(),
            })
        }
        cm::ATTR_REP => {
            let rep = CmRep::new_checked(mad.payload()).ok()?;
            Some(CmMessage::Rep {
                local_comm_id: rep.local_comm_id(),
                remote_comm_id: rep.remote_comm_id(),
                local_qpn: rep.local_qpn(),
                starting_psn: rep.starting_psn(),
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A MAD with the CM class and `attr`, followed by `msg`.
    fn mad(attr: u16, msg: &[u8]) -> Vec<u8> {
        let mut m = vec![0u8; 24];
        m[0] = 1; // base version
        m[1] = cm::MGMT_CLASS_CM;
        m[2] = 2; // class version
        m[3] = 0x03; // Send
        m[16..18].copy_from_slice(&attr.to_be_bytes());
        m.extend_from_slice(msg);
        m.resize(256, 0);
        m
    }

    fn qp1_record() -> PacketRecord {
        PacketRecord {
            flags: rocescope_common::flags::HAS_BTH,
            ..PacketRecord::default().with_roce(crate::RoceView {
                opcode: cm::GSI_OPCODE,
                dest_qp: 1,
                ..crate::RoceView::default()
            })
        }
    }

    #[test]
    fn req_names_the_active_qp_and_psn() {
        let mut msg = [0u8; 48];
        msg[0..4].copy_from_slice(&0x1122_3344u32.to_be_bytes());
        msg[32..35].copy_from_slice(&[0x00, 0x01, 0x0a]); // QPN 0x10a
        msg[35] = 0x10; // responder resources: not part of the QPN
        msg[44..47].copy_from_slice(&[0xab, 0xcd, 0xef]);
        msg[47] = 0xfd; // CM response timeout 31, retry count 5: not the PSN
        let m = mad(cm::ATTR_REQ, &msg);
        assert_eq!(
            message(&qp1_record(), &m),
            Some(CmMessage::Req {
                local_comm_id: 0x1122_3344,
                local_qpn: 0x10a,
                starting_psn: 0xabcdef,
                retry_count: 5,
            })
        );
    }

    #[test]
    fn rep_answers_a_req_by_comm_id() {
        let mut msg = [0u8; 24];
        msg[0..4].copy_from_slice(&7u32.to_be_bytes());
        msg[4..8].copy_from_slice(&0x1122_3344u32.to_be_bytes());
        msg[12..15].copy_from_slice(&[0x00, 0x02, 0x0b]);
        msg[20..23].copy_from_slice(&[0x00, 0x00, 0x05]);
        let m = mad(cm::ATTR_REP, &msg);
        assert_eq!(
            message(&qp1_record(), &m),
            Some(CmMessage::Rep {
                local_comm_id: 7,
                remote_comm_id: 0x1122_3344,
                local_qpn: 0x20b,
                starting_psn: 5
            })
        );
    }

    #[test]
    fn other_traffic_is_not_cm() {
        let m = mad(cm::ATTR_REQ, &[0u8; 48]);
        let mut not_qp1 = qp1_record();
        not_qp1.roce_mut().dest_qp = 2;
        assert_eq!(message(&not_qp1, &m), None);
        let mut other_class = m.clone();
        other_class[1] = 0x03; // subnet administration
        assert_eq!(message(&qp1_record(), &other_class), None);
        assert_eq!(message(&qp1_record(), &mad(0x0014, &[0u8; 48])), None); // RTU
        assert_eq!(message(&qp1_record(), &m[..60]), None); // cut REQ
    }
}
