//! How addresses print: MACs as `aa:bb:cc:dd:ee:ff`, IPv4-mapped addresses
//! as dotted quads, InfiniBand LIDs as `lid:N`, others (GIDs too) as IPv6
//! text — Wireshark's forms. Written by
//! hand into one buffer: they run for four columns of every packet and two
//! addresses of every CNP event.
use std::fmt::{self, Display};
use std::net::{Ipv4Addr, Ipv6Addr};

/// A MAC address as `aa:bb:cc:dd:ee:ff`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mac(pub [u8; 6]);

impl Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Formatted by hand into one buffer: one `write_str` instead of six
        // padded hex conversions (this runs for two columns of every packet).
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut buf = [b':'; 17];
        for (i, b) in self.0.iter().enumerate() {
            buf[3 * i] = HEX[usize::from(b >> 4)];
            buf[3 * i + 1] = HEX[usize::from(b & 0xF)];
        }
        // Only ASCII hex digits and colons were written.
        f.write_str(std::str::from_utf8(&buf).unwrap_or_default())
    }
}

/// A record's 16-byte address: dotted quad when IPv4-mapped, `lid:N` (the
/// LID in decimal) for an InfiniBand LID (`proto::lrh::lid_addr`), else
/// IPv6 text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ip(pub [u8; 16]);

impl Display for Ip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(lid) = rocescope_common::proto::lrh::addr_lid(&self.0) {
            return write!(f, "lid:{lid}");
        }
        let v6 = Ipv6Addr::from(self.0);
        match v6.to_ipv4_mapped() {
            Some(v4) => f.write_str(dotted_quad(v4.octets(), &mut [0; 15])),
            None => Display::fmt(&v6, f),
        }
    }
}

/// `a.b.c.d` written into `buf` (what `Ipv4Addr`'s `Display` prints, without
/// its per-octet formatting machinery).
fn dotted_quad(octets: [u8; 4], buf: &mut [u8; 15]) -> &str {
    let mut n = 0;
    for (i, &o) in octets.iter().enumerate() {
        if i > 0 {
            buf[n] = b'.';
            n += 1;
        }
        if o >= 100 {
            buf[n] = b'0' + o / 100;
            n += 1;
        }
        if o >= 10 {
            buf[n] = b'0' + o / 10 % 10;
            n += 1;
        }
        buf[n] = b'0' + o % 10;
        n += 1;
    }
    // Only ASCII digits and dots were written.
    std::str::from_utf8(&buf[..n]).unwrap_or_default()
}

impl From<Ipv4Addr> for Ip {
    fn from(a: Ipv4Addr) -> Self {
        Ip(a.to_ipv6_mapped().octets())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_print_like_wireshark() {
        assert_eq!(
            Mac([0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2]).to_string(),
            "e4:1d:2d:ab:2b:c2"
        );
        assert_eq!(
            Ip::from(Ipv4Addr::new(10, 0, 17, 1)).to_string(),
            "10.0.17.1"
        );
        for a in [
            [0, 0, 0, 0],
            [255, 255, 255, 255],
            [1, 10, 100, 199],
            [9, 99, 200, 7],
        ] {
            let v4 = Ipv4Addr::from(a);
            assert_eq!(Ip::from(v4).to_string(), v4.to_string());
        }
        assert_eq!(Mac([0; 6]).to_string(), "00:00:00:00:00:00");
        let v6: Ipv6Addr = "fe80::1".parse().unwrap();
        assert_eq!(Ip(v6.octets()).to_string(), "fe80::1");
        use rocescope_common::proto::lrh::lid_addr;
        assert_eq!(Ip(lid_addr(18)).to_string(), "lid:18");
        assert_eq!(Ip(lid_addr(0xFFFF)).to_string(), "lid:65535");
        let near: Ipv6Addr = "100::1:12".parse().unwrap();
        assert_eq!(Ip(near.octets()).to_string(), "100::1:12");
    }
}
