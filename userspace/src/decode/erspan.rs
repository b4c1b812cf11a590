//! GRE (RFC 2784 / 2890) and the ERSPAN headers it carries (draft-foschiano-erspan):
//! how a switch's remote mirror session delivers copies of fabric frames.
//!
//! * type I: GRE protocol 0x88BE without a sequence number; the mirrored
//!   Ethernet frame follows GRE directly;
//! * type II: GRE protocol 0x88BE with a sequence number, then an 8-byte header;
//! * type III: GRE protocol 0x22EB, a 12-byte header, plus an 8-byte
//!   platform-specific subheader when its O flag is set.
use rocescope_common::proto::gre;

use super::{Truncated, field};

/// A GRE header with its optional checksum, key and sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gre<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Gre<T> {
    /// Wraps `buffer` after checking it holds the base header and every
    /// optional field its flags announce.
    pub fn new_checked(buffer: T) -> Result<Self, Truncated> {
        let g = Gre { buffer };
        if g.bytes().len() < gre::BASE_LEN || g.bytes().len() < g.header_len() {
            return Err(Truncated);
        }
        Ok(g)
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Flags (C R K S s Recur) and version, as one word.
    pub fn flags_version(&self) -> u16 {
        field::be16(self.bytes(), 0)
    }

    pub fn checksum_present(&self) -> bool {
        self.flags_version() & gre::FLAG_CHECKSUM != 0
    }

    /// RFC 1701 routing present: a variable source-route list we do not walk.
    pub fn routing_present(&self) -> bool {
        self.flags_version() & gre::FLAG_ROUTING != 0
    }

    pub fn key_present(&self) -> bool {
        self.flags_version() & gre::FLAG_KEY != 0
    }

    pub fn sequence_present(&self) -> bool {
        self.flags_version() & gre::FLAG_SEQUENCE != 0
    }

    pub fn version(&self) -> u16 {
        self.flags_version() & gre::VERSION_MASK
    }

    /// EtherType of the payload.
    pub fn protocol_type(&self) -> u16 {
        field::be16(self.bytes(), 2)
    }

    pub fn checksum(&self) -> Option<u16> {
        self.checksum_present()
            .then(|| field::be16(self.bytes(), gre::BASE_LEN))
    }

    pub fn key(&self) -> Option<u32> {
        self.key_present()
            .then(|| field::be32(self.bytes(), self.key_offset()))
    }

    pub fn sequence(&self) -> Option<u32> {
        let at = self.key_offset() + if self.key_present() { 4 } else { 0 };
        self.sequence_present()
            .then(|| field::be32(self.bytes(), at))
    }

    /// Base header plus the optional fields present (checksum+reserved, key,
    /// sequence: four bytes each).
    pub fn header_len(&self) -> usize {
        let optional = [
            self.checksum_present(),
            self.key_present(),
            self.sequence_present(),
        ];
        gre::BASE_LEN + 4 * optional.iter().filter(|&&p| p).count()
    }

    fn key_offset(&self) -> usize {
        gre::BASE_LEN + if self.checksum_present() { 4 } else { 0 }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Gre<&'a T> {
    pub fn payload(&self) -> &'a [u8] {
        field::tail(<T as AsRef<[u8]>>::as_ref(self.buffer), self.header_len())
    }
}

fixed_view! {
    /// ERSPAN type II header (8 bytes).
    ErspanII, gre::ERSPAN_II_LEN
}
payload_after!(ErspanII);

impl<T: AsRef<[u8]>> ErspanII<T> {
    /// 1 for type II.
    pub fn version(&self) -> u8 {
        field::u8_at(self.bytes(), 0) >> 4
    }

    /// VLAN of the original frame (when the switch stripped it).
    pub fn vlan(&self) -> u16 {
        field::be16(self.bytes(), 0) & 0x0FFF
    }

    pub fn cos(&self) -> u8 {
        field::u8_at(self.bytes(), 2) >> 5
    }

    /// Encapsulation type of the original frame (En).
    pub fn encap_type(&self) -> u8 {
        (field::u8_at(self.bytes(), 2) >> 3) & 0x3
    }

    /// T: the mirrored frame was truncated by the switch.
    pub fn truncated(&self) -> bool {
        field::u8_at(self.bytes(), 2) & 0x04 != 0
    }

    pub fn session_id(&self) -> u16 {
        field::be16(self.bytes(), 2) & 0x03FF
    }

    /// Port index / direction (20 bits).
    pub fn index(&self) -> u32 {
        field::be32(self.bytes(), 4) & 0x000F_FFFF
    }
}

/// ERSPAN type III header (12 bytes, 20 with the platform subheader).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErspanIII<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ErspanIII<T> {
    /// Wraps `buffer` after checking it holds the header and, when the O flag
    /// is set, the platform-specific subheader.
    pub fn new_checked(buffer: T) -> Result<Self, Truncated> {
        let e = ErspanIII { buffer };
        if e.bytes().len() < gre::ERSPAN_III_LEN || e.bytes().len() < e.header_len() {
            return Err(Truncated);
        }
        Ok(e)
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// 2 for type III.
    pub fn version(&self) -> u8 {
        field::u8_at(self.bytes(), 0) >> 4
    }

    pub fn vlan(&self) -> u16 {
        field::be16(self.bytes(), 0) & 0x0FFF
    }

    pub fn cos(&self) -> u8 {
        field::u8_at(self.bytes(), 2) >> 5
    }

    /// Bad/short/oversized frame indication.
    pub fn bso(&self) -> u8 {
        (field::u8_at(self.bytes(), 2) >> 3) & 0x3
    }

    pub fn truncated(&self) -> bool {
        field::u8_at(self.bytes(), 2) & 0x04 != 0
    }

    pub fn session_id(&self) -> u16 {
        field::be16(self.bytes(), 2) & 0x03FF
    }

    pub fn timestamp(&self) -> u32 {
        field::be32(self.bytes(), 4)
    }

    /// Security group tag.
    pub fn sgt(&self) -> u16 {
        field::be16(self.bytes(), 8)
    }

    /// P: the original frame was Ethernet with its preamble-less protocol frame.
    pub fn p(&self) -> bool {
        field::u8_at(self.bytes(), 10) & 0x80 != 0
    }

    /// Frame type (0 = Ethernet).
    pub fn frame_type(&self) -> u8 {
        (field::u8_at(self.bytes(), 10) >> 2) & 0x1F
    }

    pub fn hw_id(&self) -> u8 {
        ((field::be16(self.bytes(), 10) >> 4) & 0x3F) as u8
    }

    /// D: 0 ingress, 1 egress.
    pub fn direction(&self) -> bool {
        field::u8_at(self.bytes(), 11) & 0x08 != 0
    }

    /// Timestamp granularity.
    pub fn granularity(&self) -> u8 {
        (field::u8_at(self.bytes(), 11) >> 1) & 0x3
    }

    /// O: an 8-byte platform-specific subheader follows.
    pub fn optional_subheader(&self) -> bool {
        field::u8_at(self.bytes(), 11) & gre::ERSPAN_III_O_FLAG != 0
    }

    pub fn header_len(&self) -> usize {
        gre::ERSPAN_III_LEN
            + if self.optional_subheader() {
                gre::ERSPAN_III_PLATFORM_LEN
            } else {
                0
            }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> ErspanIII<&'a T> {
    pub fn payload(&self) -> &'a [u8] {
        field::tail(<T as AsRef<[u8]>>::as_ref(self.buffer), self.header_len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gre_optional_fields_follow_flags() {
        // C, K and S set, version 0, ERSPAN II.
        let b = [
            0xB0, 0x00, 0x88, 0xBE, // flags, protocol
            0xAB, 0xCD, 0x00, 0x00, // checksum + reserved1
            0x01, 0x02, 0x03, 0x04, // key
            0x00, 0x00, 0x00, 0x2A, // sequence
            0xEE,
        ];
        let g = Gre::new_checked(&b[..]).unwrap();
        assert!(g.checksum_present() && g.key_present() && g.sequence_present());
        assert!(!g.routing_present());
        assert_eq!(g.version(), 0);
        assert_eq!(g.protocol_type(), 0x88BE);
        assert_eq!(g.checksum(), Some(0xABCD));
        assert_eq!(g.key(), Some(0x0102_0304));
        assert_eq!(g.sequence(), Some(42));
        assert_eq!(g.header_len(), 16);
        assert_eq!(g.payload(), &[0xEE]);
        assert!(Gre::new_checked(&b[..15]).is_err());

        // Sequence only: it sits right after the base header.
        let b = [0x10, 0x00, 0x88, 0xBE, 0x00, 0x00, 0x00, 0x07];
        let g = Gre::new_checked(&b[..]).unwrap();
        assert_eq!((g.checksum(), g.key(), g.sequence()), (None, None, Some(7)));
        assert_eq!(g.header_len(), 8);
        assert!(Gre::new_checked(&b[..3]).is_err());
    }

    #[test]
    fn erspan_ii_fields() {
        let b = [
            0x10, 0x64, // ver 1, VLAN 100
            0xBC, 0x2A, // COS 5, En 3, T 1, session 0x02A
            0x00, 0x01, 0x23, 0x45, // reserved, index 0x12345
        ];
        let e = ErspanII::new_checked(&b[..]).unwrap();
        assert_eq!(e.version(), 1);
        assert_eq!(e.vlan(), 100);
        assert_eq!(e.cos(), 5);
        assert_eq!(e.encap_type(), 3);
        assert!(e.truncated());
        assert_eq!(e.session_id(), 0x2A);
        assert_eq!(e.index(), 0x1_2345);
        assert!(ErspanII::new_checked(&b[..7]).is_err());
    }

    #[test]
    fn erspan_iii_fields_and_o_flag() {
        let mut b = [
            0x20, 0x0A, // ver 2, VLAN 10
            0x63, 0xFF, // COS 3, BSO 0, T 0, session 0x3FF
            0xDE, 0xAD, 0xBE, 0xEF, // timestamp
            0x12, 0x34, // SGT
            0x81, 0x5B, // P 1, FT 0, HwID 0x15, D 1, Gra 01, O 1
            1, 2, 3, 4, 5, 6, 7, 8, // platform subheader
            0xEE,
        ];
        let e = ErspanIII::new_checked(&b[..]).unwrap();
        assert_eq!(e.version(), 2);
        assert_eq!(e.vlan(), 10);
        assert_eq!(e.cos(), 3);
        assert_eq!(e.bso(), 0);
        assert!(!e.truncated());
        assert_eq!(e.session_id(), 0x3FF);
        assert_eq!(e.timestamp(), 0xDEAD_BEEF);
        assert_eq!(e.sgt(), 0x1234);
        assert!(e.p());
        assert_eq!(e.frame_type(), 0);
        assert_eq!(e.hw_id(), 0x15);
        assert!(e.direction());
        assert_eq!(e.granularity(), 1);
        assert!(e.optional_subheader());
        assert_eq!(e.header_len(), 20);
        assert_eq!(e.payload(), &[0xEE]);
        assert!(ErspanIII::new_checked(&b[..19]).is_err());

        b[11] &= !gre::ERSPAN_III_O_FLAG;
        let e = ErspanIII::new_checked(&b[..12]).unwrap();
        assert_eq!(e.header_len(), 12);
        assert!(e.payload().is_empty());
        assert!(ErspanIII::new_checked(&b[..11]).is_err());
    }
}
