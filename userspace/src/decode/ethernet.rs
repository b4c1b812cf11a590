//! Ethernet II (IEEE 802.3 clause 3.2.6 type field) and 802.1Q / 802.1ad tags.
use rocescope_common::proto::ethernet;

use super::field;

fixed_view! {
    /// An Ethernet II header: destination, source, EtherType.
    EthernetFrame, ethernet::HEADER_LEN
}
payload_after!(EthernetFrame);

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    pub fn dst_addr(&self) -> [u8; 6] {
        field::bytes(self.bytes(), 0)
    }

    pub fn src_addr(&self) -> [u8; 6] {
        field::bytes(self.bytes(), 6)
    }

    /// EtherType (values below 0x0600 are an 802.3 length: not decoded).
    pub fn ethertype(&self) -> u16 {
        field::be16(self.bytes(), 12)
    }
}

fixed_view! {
    /// The four bytes that follow a VLAN TPID (0x8100, 0x88A8, 0x9100): the
    /// tag control information and the next EtherType.
    VlanTag, ethernet::VLAN_TAG_LEN
}
payload_after!(VlanTag);

impl<T: AsRef<[u8]>> VlanTag<T> {
    /// Tag control information: PCP (3) | DEI (1) | VID (12).
    pub fn tci(&self) -> u16 {
        field::be16(self.bytes(), 0)
    }

    /// Priority code point: the priority PFC pauses.
    pub fn pcp(&self) -> u8 {
        (self.tci() >> 13) as u8
    }

    /// Drop eligible indicator.
    pub fn dei(&self) -> bool {
        self.tci() & 0x1000 != 0
    }

    pub fn vid(&self) -> u16 {
        self.tci() & 0x0FFF
    }

    /// EtherType of what follows the tag (possibly another TPID).
    pub fn ethertype(&self) -> u16 {
        field::be16(self.bytes(), 2)
    }
}

/// A TPID announcing an 802.1Q, 802.1ad or pre-standard (0x9100) tag.
pub const fn is_vlan_tpid(ethertype: u16) -> bool {
    matches!(
        ethertype,
        ethernet::ETHERTYPE_VLAN | ethernet::ETHERTYPE_QINQ | ethernet::ETHERTYPE_QINQ_OLD
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ethernet_header_fields() {
        let b = [
            0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2, // dst
            0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32, // src
            0x08, 0x00, // IPv4
            0x45, // first payload byte
        ];
        let e = EthernetFrame::new_checked(&b[..]).unwrap();
        assert_eq!(e.dst_addr(), [0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2]);
        assert_eq!(e.src_addr(), [0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32]);
        assert_eq!(e.ethertype(), 0x0800);
        assert_eq!(e.payload(), &[0x45]);
        assert_eq!(
            EthernetFrame::new_checked(&b[..13]),
            Err(super::super::Truncated)
        );
    }

    #[test]
    fn vlan_tag_fields() {
        // PCP 5, DEI 1, VID 0xABC; inner EtherType IPv6.
        let b = [0xBA, 0xBC, 0x86, 0xDD];
        let t = VlanTag::new_checked(&b[..]).unwrap();
        assert_eq!(t.tci(), 0xBABC);
        assert_eq!(t.pcp(), 5);
        assert!(t.dei());
        assert_eq!(t.vid(), 0xABC);
        assert_eq!(t.ethertype(), 0x86DD);
        assert!(t.payload().is_empty());
        assert!(VlanTag::new_checked(&b[..3]).is_err());
        assert!(is_vlan_tpid(0x8100) && is_vlan_tpid(0x88A8) && is_vlan_tpid(0x9100));
        assert!(!is_vlan_tpid(0x0800));
    }
}
