//! BSD null / loopback headers (LINKTYPE_NULL 0, LINKTYPE_LOOP 108): a
//! 4-byte address family before the IP packet, what BSD and macOS loopback
//! and tunnel interfaces capture.
use rocescope_common::proto::linktype;

use super::field;

fixed_view! {
    /// The 4-byte address family.
    Null, linktype::NULL_HEADER_LEN
}
payload_after!(Null);

/// The address families the walk goes on with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Ipv4,
    Ipv6,
}

impl<T: AsRef<[u8]>> Null<T> {
    /// The address family as a number. `network_order` for LINKTYPE_LOOP;
    /// LINKTYPE_NULL stores it in the capturing host's byte order, which the
    /// file does not record: a family fits in 16 bits, so the order that
    /// gives a value below 2^16 is the right one (libpcap and Wireshark
    /// read it the same way).
    pub fn raw_family(&self, network_order: bool) -> u32 {
        let b = field::bytes::<4>(self.bytes(), 0);
        let be = u32::from_be_bytes(b);
        if network_order {
            return be;
        }
        let le = u32::from_le_bytes(b);
        if le > 0xFFFF { be } else { le }
    }

    /// IPv4 (AF_INET 2) or IPv6 (AF_INET6: 24 on NetBSD, OpenBSD and
    /// BSD/OS, 28 on FreeBSD, 30 on macOS); `None` for any other family.
    pub fn family(&self, network_order: bool) -> Option<Family> {
        match self.raw_family(network_order) {
            linktype::AF_INET => Some(Family::Ipv4),
            af if linktype::AF_INET6.contains(&af) => Some(Family::Ipv6),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_in_either_byte_order() {
        let cases: [([u8; 4], bool, Option<Family>); 7] = [
            ([2, 0, 0, 0], false, Some(Family::Ipv4)),
            ([0, 0, 0, 2], false, Some(Family::Ipv4)),
            ([0, 0, 0, 2], true, Some(Family::Ipv4)),
            ([2, 0, 0, 0], true, None),
            ([30, 0, 0, 0], false, Some(Family::Ipv6)),
            ([0, 0, 0, 28], true, Some(Family::Ipv6)),
            ([0, 0, 0, 24], false, Some(Family::Ipv6)),
        ];
        for (bytes, network, want) in cases {
            let h = Null::new_checked(&bytes[..]).expect("4 bytes");
            assert_eq!(h.family(network), want, "{bytes:?} network order {network}");
        }
        assert_eq!(
            Null::new_checked(&[0u8, 0, 0, 10][..])
                .unwrap()
                .family(true),
            None,
            "Linux AF_INET6 is no BSD family"
        );
        assert!(Null::new_checked(&[2u8, 0, 0][..]).is_err());
    }
}
