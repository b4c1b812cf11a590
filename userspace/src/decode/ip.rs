//! IPv4 (RFC 791) and IPv6 (RFC 8200) headers, and the IPv6 extension
//! headers a decoder steps over to reach UDP.
use rocescope_common::proto::ip;

use super::{Truncated, field};

/// An IPv4 header, options included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps `buffer` after checking it holds the whole header (IHL words,
    /// at least 20 bytes). Version and IHL are not validated here: see
    /// [`Ipv4Packet::is_valid`].
    pub fn new_checked(buffer: T) -> Result<Self, Truncated> {
        let p = Ipv4Packet { buffer };
        let need = p.header_len().max(ip::IPV4_MIN_HEADER_LEN);
        if p.bytes().len() < need {
            return Err(Truncated);
        }
        Ok(p)
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    pub fn version(&self) -> u8 {
        field::u8_at(self.bytes(), 0) >> 4
    }

    /// IHL × 4.
    pub fn header_len(&self) -> usize {
        usize::from(field::u8_at(self.bytes(), 0) & 0x0F) * 4
    }

    /// Version 4, IHL ≥ 5 and a total length that covers the header: the
    /// header can be believed.
    pub fn is_valid(&self) -> bool {
        self.version() == 4
            && self.header_len() >= ip::IPV4_MIN_HEADER_LEN
            && usize::from(self.total_len()) >= self.header_len()
    }

    /// Type of service byte: DSCP (6) | ECN (2).
    pub fn tos(&self) -> u8 {
        field::u8_at(self.bytes(), 1)
    }

    pub fn dscp(&self) -> u8 {
        self.tos() >> 2
    }

    pub fn ecn(&self) -> u8 {
        self.tos() & 0x03
    }

    pub fn total_len(&self) -> u16 {
        field::be16(self.bytes(), 2)
    }

    pub fn ident(&self) -> u16 {
        field::be16(self.bytes(), 4)
    }

    pub fn dont_frag(&self) -> bool {
        field::u8_at(self.bytes(), 6) & 0x40 != 0
    }

    pub fn more_frags(&self) -> bool {
        field::u8_at(self.bytes(), 6) & 0x20 != 0
    }

    /// Fragment offset in 8-byte units.
    pub fn frag_offset(&self) -> u16 {
        field::be16(self.bytes(), 6) & 0x1FFF
    }

    pub fn ttl(&self) -> u8 {
        field::u8_at(self.bytes(), 8)
    }

    pub fn protocol(&self) -> u8 {
        field::u8_at(self.bytes(), 9)
    }

    pub fn checksum(&self) -> u16 {
        field::be16(self.bytes(), 10)
    }

    pub fn src_addr(&self) -> [u8; 4] {
        field::bytes(self.bytes(), 12)
    }

    pub fn dst_addr(&self) -> [u8; 4] {
        field::bytes(self.bytes(), 16)
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Ipv4Packet<&'a T> {
    /// The captured part of the packet, header included, ending at the total
    /// length: Ethernet padding and FCS are not part of it.
    pub fn packet(&self) -> &'a [u8] {
        let all = <T as AsRef<[u8]>>::as_ref(self.buffer);
        field::head(all, usize::from(self.total_len()))
    }

    /// The captured part of the payload (may be shorter than declared).
    pub fn payload(&self) -> &'a [u8] {
        field::tail(self.packet(), self.header_len())
    }
}

fixed_view! {
    /// An IPv6 fixed header (40 bytes).
    Ipv6Packet, ip::IPV6_HEADER_LEN
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    pub fn version(&self) -> u8 {
        field::u8_at(self.bytes(), 0) >> 4
    }

    /// Traffic class: DSCP (6) | ECN (2).
    pub fn traffic_class(&self) -> u8 {
        (field::be16(self.bytes(), 0) >> 4) as u8
    }

    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }

    pub fn ecn(&self) -> u8 {
        self.traffic_class() & 0x03
    }

    pub fn flow_label(&self) -> u32 {
        field::be32(self.bytes(), 0) & 0x000F_FFFF
    }

    /// Bytes after the fixed header (extension headers included).
    pub fn payload_len(&self) -> u16 {
        field::be16(self.bytes(), 4)
    }

    pub fn next_header(&self) -> u8 {
        field::u8_at(self.bytes(), 6)
    }

    pub fn hop_limit(&self) -> u8 {
        field::u8_at(self.bytes(), 7)
    }

    pub fn src_addr(&self) -> [u8; 16] {
        field::bytes(self.bytes(), 8)
    }

    pub fn dst_addr(&self) -> [u8; 16] {
        field::bytes(self.bytes(), 24)
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Ipv6Packet<&'a T> {
    /// The captured part of the packet, fixed header included, ending at the
    /// payload length.
    pub fn packet(&self) -> &'a [u8] {
        let all = <T as AsRef<[u8]>>::as_ref(self.buffer);
        field::head(all, ip::IPV6_HEADER_LEN + usize::from(self.payload_len()))
    }

    pub fn payload(&self) -> &'a [u8] {
        field::tail(self.packet(), ip::IPV6_HEADER_LEN)
    }
}

/// An IPv6 hop-by-hop, routing or destination-options header: they share
/// the next-header / length-in-8-byte-units-minus-one layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv6ExtHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6ExtHeader<T> {
    pub fn new_checked(buffer: T) -> Result<Self, Truncated> {
        let h = Ipv6ExtHeader { buffer };
        if h.bytes().len() < 2 || h.bytes().len() < h.header_len() {
            return Err(Truncated);
        }
        Ok(h)
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    pub fn next_header(&self) -> u8 {
        field::u8_at(self.bytes(), 0)
    }

    /// (Hdr Ext Len + 1) × 8.
    pub fn header_len(&self) -> usize {
        (usize::from(field::u8_at(self.bytes(), 1)) + 1) * 8
    }
}

fixed_view! {
    /// The IPv6 Fragment header (8 bytes).
    Ipv6FragmentHeader, ip::IPV6_FRAGMENT_LEN
}

impl<T: AsRef<[u8]>> Ipv6FragmentHeader<T> {
    pub fn next_header(&self) -> u8 {
        field::u8_at(self.bytes(), 0)
    }

    /// Fragment offset in 8-byte units.
    pub fn frag_offset(&self) -> u16 {
        field::be16(self.bytes(), 2) >> 3
    }

    pub fn more_frags(&self) -> bool {
        field::u8_at(self.bytes(), 3) & 0x01 != 0
    }

    pub fn ident(&self) -> u32 {
        field::be32(self.bytes(), 4)
    }
}

/// `a.b.c.d` as the IPv4-mapped IPv6 address `::ffff:a.b.c.d`.
pub const fn ipv4_mapped(a: [u8; 4]) -> [u8; 16] {
    [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, a[0], a[1], a[2], a[3],
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_header_with_options() {
        let b = [
            0x46, 0xC3, 0x00, 0x1C, // v4, IHL 6, DSCP 48 ECN 3, total 28
            0x12, 0x34, 0x20, 0x00, // ident, MF, offset 0
            0x40, 0x11, 0xAB, 0xCD, // TTL 64, UDP, checksum
            10, 0, 0, 1, // src
            10, 0, 0, 2, // dst
            0x01, 0x01, 0x01, 0x00, // options (NOP NOP NOP EOL)
            0xA0, 0xA1, 0xA2, 0xA3, // payload
            0xFF, 0xFF, // Ethernet padding
        ];
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert!(p.is_valid());
        assert_eq!(p.version(), 4);
        assert_eq!(p.header_len(), 24);
        assert_eq!((p.tos(), p.dscp(), p.ecn()), (0xC3, 48, 3));
        assert_eq!(p.total_len(), 28);
        assert_eq!(p.ident(), 0x1234);
        assert!(!p.dont_frag() && p.more_frags());
        assert_eq!(p.frag_offset(), 0);
        assert_eq!(p.ttl(), 64);
        assert_eq!(p.protocol(), 17);
        assert_eq!(p.checksum(), 0xABCD);
        assert_eq!(p.src_addr(), [10, 0, 0, 1]);
        assert_eq!(p.dst_addr(), [10, 0, 0, 2]);
        assert_eq!(p.packet().len(), 28);
        assert_eq!(p.payload(), &[0xA0, 0xA1, 0xA2, 0xA3]);
        // The options are part of the header: cut inside them, no view.
        assert!(Ipv4Packet::new_checked(&b[..23]).is_err());
        assert!(Ipv4Packet::new_checked(&b[..19]).is_err());
    }

    #[test]
    fn ipv4_fragment_offset_and_validity() {
        let mut b = [0u8; 20];
        b[0] = 0x45;
        b[3] = 20;
        b[6] = 0x5F; // DF + offset high bits
        b[7] = 0xFF;
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert!(p.dont_frag());
        assert_eq!(p.frag_offset(), 0x1FFF);
        assert!(p.is_valid());
        b[0] = 0x44; // IHL 4
        assert!(!Ipv4Packet::new_checked(&b[..]).unwrap().is_valid());
        b[0] = 0x45;
        b[3] = 19; // total length shorter than the header
        assert!(!Ipv4Packet::new_checked(&b[..]).unwrap().is_valid());
    }

    #[test]
    fn ipv6_header_fields() {
        let mut b = [0u8; 44];
        b[..8].copy_from_slice(&[0x6B, 0xAF, 0xFF, 0xFF, 0x00, 0x02, 0x11, 0x40]);
        b[8..24].copy_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        b[24..40].copy_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        b[40..].copy_from_slice(&[0xA0, 0xA1, 0xEE, 0xEE]);
        let p = Ipv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.version(), 6);
        assert_eq!(p.traffic_class(), 0xBA); // DSCP 46, ECN 2
        assert_eq!((p.dscp(), p.ecn()), (46, 2));
        assert_eq!(p.flow_label(), 0xFFFFF);
        assert_eq!(p.payload_len(), 2);
        assert_eq!(p.next_header(), 17);
        assert_eq!(p.hop_limit(), 64);
        assert_eq!(p.src_addr()[15], 1);
        assert_eq!(p.dst_addr()[15], 2);
        assert_eq!(p.payload(), &[0xA0, 0xA1]);
        assert!(Ipv6Packet::new_checked(&b[..39]).is_err());
    }

    #[test]
    fn ipv6_extension_headers() {
        let b = [17, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]; // 16 bytes
        let h = Ipv6ExtHeader::new_checked(&b[..]).unwrap();
        assert_eq!((h.next_header(), h.header_len()), (17, 16));
        assert!(Ipv6ExtHeader::new_checked(&b[..15]).is_err());
        assert!(Ipv6ExtHeader::new_checked(&b[..1]).is_err());

        let f = [17, 0, 0x00, 0x19, 0xDE, 0xAD, 0xBE, 0xEF]; // offset 3, M
        let f = Ipv6FragmentHeader::new_checked(&f[..]).unwrap();
        assert_eq!(f.next_header(), 17);
        assert_eq!(f.frag_offset(), 3);
        assert!(f.more_frags());
        assert_eq!(f.ident(), 0xDEAD_BEEF);
    }

    #[test]
    fn ipv4_mapped_form() {
        assert_eq!(
            ipv4_mapped([10, 0, 17, 1]),
            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 0, 17, 1]
        );
    }
}
