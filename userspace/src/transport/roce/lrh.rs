//! Native InfiniBand (IBA Vol. 1 ch. 7-8): the Local Route Header, the
//! Global Route Header behind it when the LRH says so, then the BTH and
//! everything after it as RoCE has it; the Invariant CRC (IB rules) and
//! the Variant CRC after it.
//!
//! ```text
//! LRH  0: VL(4) LVer(4) | 1: SL(4) resv(2) LNH(2) | 2-3: DLID
//!      4-5: resv(5) PktLen(11) | 6-7: SLID
//! GRH  (LNH = 0b11) 40 bytes in the IPv6 header's layout: TClass, FlowLabel,
//!      PayLen, NxtHdr (0x1B: BTH), HopLmt, SGID, DGID
//! ...  BTH, extension headers, payload, pad, ICRC (4) | VCRC (2)
//! ```
//! `PktLen` counts 4-byte words from the first byte of the LRH to the end
//! of the ICRC; the VCRC follows.
//!
//! The walk itself is the shared one (`wire::walk_infiniband`); this is
//! the LRH view and the two CRCs, which need userspace.
use rocescope_common::proto::{ib, lrh};
use rocescope_common::wire::field::lrh as fl;

use rocescope_common::wire::field::bth as fb;

use super::icrc;
use crate::view::{field, fixed_view, payload_after};

fixed_view! {
    /// Local Route Header (8 bytes).
    Lrh, lrh::LRH_LEN
}
payload_after!(Lrh);

impl<T: AsRef<[u8]>> Lrh<T> {
    /// Virtual lane.
    pub fn vl(&self) -> u8 {
        field::u8_at(self.bytes(), fl::VL_LVER) >> 4
    }

    /// Link version (0).
    pub fn lver(&self) -> u8 {
        field::u8_at(self.bytes(), fl::VL_LVER) & 0x0F
    }

    /// Service level.
    pub fn sl(&self) -> u8 {
        field::u8_at(self.bytes(), fl::SL_LNH) >> 4
    }

    /// Link Next Header (`lrh::LNH_*`).
    pub fn lnh(&self) -> u8 {
        field::u8_at(self.bytes(), fl::SL_LNH) & fl::LNH_MASK
    }

    pub fn dlid(&self) -> u16 {
        field::be16(self.bytes(), fl::DLID)
    }

    /// Packet length in 4-byte words, LRH to ICRC.
    pub fn pkt_len(&self) -> u16 {
        field::be16(self.bytes(), fl::PKT_LEN) & fl::PKT_LEN_MASK
    }

    /// [`Lrh::pkt_len`] in bytes.
    pub fn packet_len(&self) -> usize {
        usize::from(self.pkt_len()) * lrh::PKT_LEN_UNIT
    }

    pub fn slid(&self) -> u16 {
        field::be16(self.bytes(), fl::SLID)
    }
}

/// The VCRC table: CRC-16 with polynomial x^16 + x^12 + x^3 + x + 1
/// (0x100B), bit-reflected (0xD008), as IBA 7.8.2 computes it LSB first.
const VCRC_TABLE: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut n = 0;
    while n < 256 {
        let mut c = n as u16;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xD008 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[n] = c;
        n += 1;
    }
    t
};

/// The Variant CRC of `covered` (every byte from the LRH to the end of the
/// ICRC): seeded with ones, complemented at the end.
pub fn vcrc(covered: &[u8]) -> u16 {
    let mut c: u16 = 0xFFFF;
    for &b in covered {
        c = VCRC_TABLE[usize::from((c ^ u16::from(b)) as u8)] ^ (c >> 8);
    }
    !c
}

/// The Invariant CRC of one native InfiniBand packet (IBA 7.8.1): CRC-32
/// (the Ethernet polynomial) from the first byte of the LRH to the end of
/// the payload and pad, with the fields a switch or router may change set
/// to ones. Without a GRH (LNH = 2) that is the LRH's VL and the BTH's
/// `resv8a` (byte 4, FECN/BECN). With one (LNH = 3) the whole LRH, which a
/// router replaces, counts as ones, and the GRH's TClass, FlowLabel and
/// HopLmt and the BTH's `resv8a` are masked: exactly RoCEv1's ICRC of what
/// follows the LRH ([`icrc::compute_grh`]). Real ConnectX `ibdump` captures
/// verify both (`docs/inputs.md`, *InfiniBand*). `packet` runs from the LRH
/// to the end of the ICRC (`PktLen` bytes); `None` when it is too short for
/// its headers.
pub fn icrc(packet: &[u8]) -> Option<u32> {
    if Lrh::new_checked(packet).ok()?.lnh() == lrh::LNH_IBA_GLOBAL {
        return icrc::compute_grh(&packet[lrh::LRH_LEN..]);
    }
    const HEADERS: usize = lrh::LRH_LEN + ib::BTH_LEN;
    if packet.len() < HEADERS + ib::ICRC_LEN {
        return None;
    }
    let mut masked = [0u8; HEADERS];
    masked.copy_from_slice(&packet[..HEADERS]);
    masked[0] |= 0xF0; // VL
    masked[lrh::LRH_LEN + fb::FECN_BECN] = 0xFF; // resv8a
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&masked);
    hasher.update(&packet[HEADERS..packet.len() - ib::ICRC_LEN]);
    Some(hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lrh_fields_are_separate() {
        let b = [0x31, 0x72, 0x00, 0x12, 0xF8, 0x0B, 0xAB, 0xCD, 0x99];
        let l = Lrh::new_checked(&b[..]).unwrap();
        assert_eq!((l.vl(), l.lver(), l.sl(), l.lnh()), (3, 1, 7, 2));
        assert_eq!((l.dlid(), l.slid()), (0x12, 0xABCD));
        // The top five bits of bytes 4-5 are reserved.
        assert_eq!((l.pkt_len(), l.packet_len()), (0x0B, 44));
        assert_eq!(l.payload(), &[0x99]);
        assert!(Lrh::new_checked(&b[..7]).is_err());
    }

    /// The CRC-16 check value of "123456789" for these parameters (poly
    /// 0x100B reflected, init and final XOR 0xFFFF), computed bit by bit
    /// here as the definition, independently of the table.
    #[test]
    fn vcrc_is_the_reflected_0x100b_crc() {
        let bitwise = |data: &[u8]| {
            let mut c: u16 = 0xFFFF;
            for &b in data {
                c ^= u16::from(b);
                for _ in 0..8 {
                    c = if c & 1 != 0 {
                        (c >> 1) ^ 0xD008
                    } else {
                        c >> 1
                    };
                }
            }
            !c
        };
        for data in [&b"123456789"[..], &[], &[0xFF; 70]] {
            assert_eq!(vcrc(data), bitwise(data));
        }
        assert_ne!(vcrc(b"123456789"), vcrc(b"123456788"));
    }

    /// An IB packet: LRH (VL 0, SL 0, `lnh`) [+ GRH] + BTH (RC SEND Only) +
    /// 4 payload bytes + a zero ICRC.
    fn packet(lnh: u8) -> Vec<u8> {
        let mut p = vec![0x00, lnh, 0x00, 0x02, 0x00, 0x10, 0x00, 0x01];
        if lnh == lrh::LNH_IBA_GLOBAL {
            p.extend_from_slice(&[0x60, 0x00, 0x00, 0x00, 0x00, 0x14, 0x1B, 0x40]);
            p.extend_from_slice(&[0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
            p.extend_from_slice(&[0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        }
        p.extend_from_slice(&[0x04, 0, 0xFF, 0xFF, 0, 0, 0, 0x12, 0, 0, 0, 7]);
        p.extend_from_slice(&[1, 2, 3, 4, 0, 0, 0, 0]);
        p
    }

    #[test]
    fn with_a_grh_the_whole_lrh_is_masked() {
        let p = packet(lrh::LNH_IBA_GLOBAL);
        let crc = icrc(&p).unwrap();
        assert_eq!(Some(crc), icrc::compute_grh(&p[8..]), "RoCEv1's rule");
        let mut q = p.clone();
        q[..8].copy_from_slice(&[0x73, 0x43, 0x12, 0x34, 0x00, 0x10, 0x56, 0x78]);
        q[8] = 0x6A; // TClass
        q[9] = 0xB1; // FlowLabel
        q[15] = 0x01; // HopLmt
        q[48 + 4] = 0xC0; // FECN, BECN
        assert_eq!(icrc(&q), Some(crc));
        q[24] ^= 1; // SGID is covered
        assert_ne!(icrc(&q), Some(crc));
        assert_eq!(icrc(&p[..40]), None);
    }

    #[test]
    fn without_a_grh_only_the_vl_is_masked() {
        let p = packet(lrh::LNH_IBA_LOCAL);
        let crc = icrc(&p).unwrap();
        let mut q = p.clone();
        q[0] = 0x70; // VL 7
        q[8 + 4] = 0xC0; // FECN, BECN
        assert_eq!(icrc(&q), Some(crc));
        for (i, v) in [(1, 0x12), (3, 0x03), (7, 0x02)] {
            let mut r = q.clone();
            r[i] = v; // SL, DLID, SLID are covered
            assert_ne!(icrc(&r), Some(crc), "byte {i}");
        }
        assert_eq!(icrc(&p[..23]), None);
    }
}
