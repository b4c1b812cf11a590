//! How values enter Arrow builders, and how addresses print.
use std::fmt::{self, Display, Write as _};
use std::net::{Ipv4Addr, Ipv6Addr};

use arrow_array::ArrowPrimitiveType;
use arrow_array::builder::{BooleanBuilder, PrimitiveBuilder, StringBuilder};

/// Appends an optional value (None becomes null) to a builder.
pub trait AppendValue<V> {
    fn append_value_opt(&mut self, value: Option<V>);
}

impl<T: ArrowPrimitiveType> AppendValue<T::Native> for PrimitiveBuilder<T> {
    fn append_value_opt(&mut self, value: Option<T::Native>) {
        self.append_option(value);
    }
}

impl AppendValue<bool> for BooleanBuilder {
    fn append_value_opt(&mut self, value: Option<bool>) {
        self.append_option(value);
    }
}

/// Strings are formatted straight into the builder's buffer: no String per row.
impl<D: Display> AppendValue<D> for StringBuilder {
    fn append_value_opt(&mut self, value: Option<D>) {
        match value {
            Some(v) => {
                // Writing into the builder cannot fail.
                let _ = write!(self, "{v}");
                self.append_value("");
            }
            None => self.append_null(),
        }
    }
}

/// A MAC address as `aa:bb:cc:dd:ee:ff`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mac(pub [u8; 6]);

impl Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        )
    }
}

/// A record's 16-byte address: dotted quad when IPv4-mapped, else IPv6 text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ip(pub [u8; 16]);

impl Display for Ip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v6 = Ipv6Addr::from(self.0);
        match v6.to_ipv4_mapped() {
            Some(v4) => Display::fmt(&v4, f),
            None => Display::fmt(&v6, f),
        }
    }
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
        let v6: Ipv6Addr = "fe80::1".parse().unwrap();
        assert_eq!(Ip(v6.octets()).to_string(), "fe80::1");
    }
}
