//! UDP (RFC 768) header.
use rocescope_common::proto::udp;

use super::field;

fixed_view! {
    /// A UDP header (8 bytes).
    UdpHeader, udp::HEADER_LEN
}

impl<T: AsRef<[u8]>> UdpHeader<T> {
    /// For RoCEv2 this is flow entropy, never a protocol hint.
    pub fn src_port(&self) -> u16 {
        field::be16(self.bytes(), 0)
    }

    pub fn dst_port(&self) -> u16 {
        field::be16(self.bytes(), 2)
    }

    /// Header plus data, as the sender declared it.
    pub fn length(&self) -> u16 {
        field::be16(self.bytes(), 4)
    }

    pub fn checksum(&self) -> u16 {
        field::be16(self.bytes(), 6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_fields() {
        let b = [0xC0, 0x00, 0x12, 0xB7, 0x00, 0x28, 0xBE, 0xEF];
        let u = UdpHeader::new_checked(&b[..]).unwrap();
        assert_eq!(u.src_port(), 0xC000);
        assert_eq!(u.dst_port(), 4791);
        assert_eq!(u.length(), 40);
        assert_eq!(u.checksum(), 0xBEEF);
        assert!(UdpHeader::new_checked(&b[..7]).is_err());
    }
}
