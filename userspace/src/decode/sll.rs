//! Linux "cooked" capture headers (LINKTYPE_LINUX_SLL and LINKTYPE_LINUX_SLL2),
//! what `tcpdump -i any` writes. They carry no Ethernet MAC addresses: only
//! the link-layer address of one side and the protocol (an EtherType).
use rocescope_common::proto::linktype;

use super::field;

/// Longest link-layer address the cooked headers have room for.
const MAX_ADDR_LEN: usize = 8;

fixed_view! {
    /// LINKTYPE_LINUX_SLL (v1), 16 bytes.
    Sll, linktype::LINUX_SLL_HEADER_LEN
}
payload_after!(Sll);

impl<T: AsRef<[u8]>> Sll<T> {
    /// 0 to us, 1 broadcast, 2 multicast, 3 to someone else, 4 sent by us.
    pub fn packet_type(&self) -> u16 {
        field::be16(self.bytes(), 0)
    }

    /// ARPHRD_* of the interface (1 = Ethernet).
    pub fn arphrd_type(&self) -> u16 {
        field::be16(self.bytes(), 2)
    }

    pub fn link_addr_len(&self) -> u16 {
        field::be16(self.bytes(), 4)
    }

    /// The sender's link-layer address (at most 8 bytes are kept).
    pub fn link_addr(&self) -> &[u8] {
        let len = usize::from(self.link_addr_len()).min(MAX_ADDR_LEN);
        self.bytes().get(6..6 + len).unwrap_or(&[])
    }

    /// EtherType of the payload.
    pub fn protocol(&self) -> u16 {
        field::be16(self.bytes(), 14)
    }
}

fixed_view! {
    /// LINKTYPE_LINUX_SLL2, 20 bytes.
    Sll2, linktype::LINUX_SLL2_HEADER_LEN
}
payload_after!(Sll2);

impl<T: AsRef<[u8]>> Sll2<T> {
    /// EtherType of the payload.
    pub fn protocol(&self) -> u16 {
        field::be16(self.bytes(), 0)
    }

    pub fn interface_index(&self) -> u32 {
        field::be32(self.bytes(), 4)
    }

    pub fn arphrd_type(&self) -> u16 {
        field::be16(self.bytes(), 8)
    }

    pub fn packet_type(&self) -> u8 {
        field::u8_at(self.bytes(), 10)
    }

    pub fn link_addr_len(&self) -> u8 {
        field::u8_at(self.bytes(), 11)
    }

    pub fn link_addr(&self) -> &[u8] {
        let len = usize::from(self.link_addr_len()).min(MAX_ADDR_LEN);
        self.bytes().get(12..12 + len).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sll_v1_fields() {
        let b = [
            0x00, 0x04, // sent by us
            0x00, 0x01, // ARPHRD_ETHER
            0x00, 0x06, // address length
            0x02, 0x11, 0x22, 0x33, 0x44, 0x55, 0x00, 0x00, // address + padding
            0x08, 0x00, // IPv4
            0x45,
        ];
        let s = Sll::new_checked(&b[..]).unwrap();
        assert_eq!(s.packet_type(), 4);
        assert_eq!(s.arphrd_type(), 1);
        assert_eq!(s.link_addr_len(), 6);
        assert_eq!(s.link_addr(), &[0x02, 0x11, 0x22, 0x33, 0x44, 0x55]);
        assert_eq!(s.protocol(), 0x0800);
        assert_eq!(s.payload(), &[0x45]);
        assert!(Sll::new_checked(&b[..15]).is_err());
    }

    #[test]
    fn sll_v2_fields() {
        let b = [
            0x86, 0xDD, // IPv6
            0x00, 0x00, // reserved
            0x00, 0x00, 0x00, 0x07, // ifindex 7
            0x00, 0x01, // ARPHRD_ETHER
            0x00, // to us
            0x06, // address length
            0x02, 0x11, 0x22, 0x33, 0x44, 0x55, 0x00, 0x00,
        ];
        let s = Sll2::new_checked(&b[..]).unwrap();
        assert_eq!(s.protocol(), 0x86DD);
        assert_eq!(s.interface_index(), 7);
        assert_eq!(s.arphrd_type(), 1);
        assert_eq!(s.packet_type(), 0);
        assert_eq!(s.link_addr(), &[0x02, 0x11, 0x22, 0x33, 0x44, 0x55]);
        assert!(s.payload().is_empty());
        assert!(Sll2::new_checked(&b[..19]).is_err());
    }
}
