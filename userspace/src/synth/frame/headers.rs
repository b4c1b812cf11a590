//! Ethernet (with 802.1Q tags), IPv4 and IPv6 headers.

use std::net::{Ipv4Addr, Ipv6Addr};

use rocescope_common::proto::{ethernet, ip};
use rocescope_common::wire::field;

use super::{ipv4_checksum, put};

/// One 802.1Q (or 802.1ad) tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VlanTag {
    /// Tag protocol identifier: 0x8100 (C-tag), 0x88A8 (S-tag), 0x9100.
    pub tpid: u16,
    /// VLAN id (12 bits).
    pub vid: u16,
    /// Priority code point (3 bits).
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
}

impl VlanTag {
    /// An 802.1Q customer tag.
    pub const fn dot1q(vid: u16, pcp: u8) -> VlanTag {
        VlanTag {
            tpid: ethernet::ETHERTYPE_VLAN,
            vid,
            pcp,
            dei: false,
        }
    }

    /// An 802.1ad service tag (the outer tag of QinQ).
    pub const fn dot1ad(vid: u16, pcp: u8) -> VlanTag {
        VlanTag {
            tpid: ethernet::ETHERTYPE_QINQ,
            vid,
            pcp,
            dei: false,
        }
    }

    fn tci(&self) -> u16 {
        (u16::from(self.pcp & 7) << field::vlan::PCP_SHIFT)
            | if self.dei { field::vlan::DEI } else { 0 }
            | (self.vid & field::vlan::VID_MASK)
    }
}

/// Ethernet II header with up to two tags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EthHeader {
    pub dst: [u8; 6],
    pub src: [u8; 6],
    /// Outermost tag of a QinQ pair (written first); usually [`VlanTag::dot1ad`].
    pub outer_vlan: Option<VlanTag>,
    /// The (innermost) tag; usually [`VlanTag::dot1q`].
    pub vlan: Option<VlanTag>,
}

impl Default for EthHeader {
    /// Locally administered unicast 02:00:00:00:00:01 → 02:00:00:00:00:02, untagged.
    fn default() -> Self {
        EthHeader {
            dst: [0x02, 0, 0, 0, 0, 0x02],
            src: [0x02, 0, 0, 0, 0, 0x01],
            outer_vlan: None,
            vlan: None,
        }
    }
}

impl EthHeader {
    /// Bytes this header takes (14 plus 4 per tag).
    pub fn header_len(&self) -> usize {
        ethernet::HEADER_LEN
            + ethernet::VLAN_TAG_LEN
                * (usize::from(self.outer_vlan.is_some()) + usize::from(self.vlan.is_some()))
    }

    pub(crate) fn append(&self, out: &mut Vec<u8>, ethertype: u16) {
        use field::{ethernet as fe, vlan as fv};
        let mut tags = [self.outer_vlan, self.vlan]
            .into_iter()
            .flatten()
            .peekable();
        // Each EtherType field names what follows: the next tag's TPID, or
        // `ethertype` after the last tag.
        let next = |tag: Option<&VlanTag>| tag.map_or(ethertype, |t| t.tpid);
        let mut h = [0u8; ethernet::HEADER_LEN];
        put(&mut h, fe::DESTINATION, &self.dst);
        put(&mut h, fe::SOURCE, &self.src);
        put(&mut h, fe::ETHERTYPE, &next(tags.peek()).to_be_bytes());
        out.extend_from_slice(&h);
        while let Some(tag) = tags.next() {
            let mut t = [0u8; ethernet::VLAN_TAG_LEN];
            put(&mut t, fv::TCI, &tag.tci().to_be_bytes());
            put(&mut t, fv::ETHERTYPE, &next(tags.peek()).to_be_bytes());
            out.extend_from_slice(&t);
        }
    }
}

/// IP addresses: the version of the header follows from them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpAddrs {
    V4 { src: Ipv4Addr, dst: Ipv4Addr },
    V6 { src: Ipv6Addr, dst: Ipv6Addr },
}

/// IPv4 or IPv6 header values (lengths and the IPv4 checksum are computed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpHeader {
    pub addrs: IpAddrs,
    /// Differentiated services code point (6 bits).
    pub dscp: u8,
    /// ECN (2 bits): 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE.
    pub ecn: u8,
    /// IPv4 TTL or IPv6 hop limit.
    pub ttl: u8,
    /// IPv4 identification (unused for IPv6).
    pub id: u16,
    /// IPv4 don't-fragment flag (unused for IPv6).
    pub dont_fragment: bool,
    /// IPv6 flow label (20 bits; unused for IPv4).
    pub flow_label: u32,
}

impl Default for IpHeader {
    /// 10.0.0.1 → 10.0.0.2, DSCP 26, ECT(0), TTL 64, DF.
    fn default() -> Self {
        IpHeader {
            addrs: IpAddrs::V4 {
                src: Ipv4Addr::new(10, 0, 0, 1),
                dst: Ipv4Addr::new(10, 0, 0, 2),
            },
            dscp: 26,
            ecn: ip::ECN_ECT0,
            ttl: 64,
            id: 0,
            dont_fragment: true,
            flow_label: 0,
        }
    }
}

impl IpHeader {
    pub fn ethertype(&self) -> u16 {
        match self.addrs {
            IpAddrs::V4 { .. } => ethernet::ETHERTYPE_IPV4,
            IpAddrs::V6 { .. } => ethernet::ETHERTYPE_IPV6,
        }
    }

    pub fn header_len(&self) -> usize {
        match self.addrs {
            IpAddrs::V4 { .. } => ip::IPV4_MIN_HEADER_LEN,
            IpAddrs::V6 { .. } => ip::IPV6_HEADER_LEN,
        }
    }

    pub(super) fn tos(&self) -> u8 {
        (self.dscp << 2) | (self.ecn & 3)
    }

    /// Appends the header for `payload_len` bytes of protocol `proto`.
    pub(crate) fn append(&self, out: &mut Vec<u8>, proto: u8, payload_len: usize) {
        match self.addrs {
            IpAddrs::V4 { src, dst } => {
                use field::ipv4 as f4;
                let mut h = [0u8; ip::IPV4_MIN_HEADER_LEN];
                let total = (ip::IPV4_MIN_HEADER_LEN + payload_len) as u16;
                let frag = if self.dont_fragment { f4::FLAG_DF } else { 0 };
                h[f4::VER_IHL] = 0x45;
                h[f4::TOS] = self.tos();
                put(&mut h, f4::LENGTH, &total.to_be_bytes());
                put(&mut h, f4::IDENT, &self.id.to_be_bytes());
                put(&mut h, f4::FLG_OFF, &frag.to_be_bytes());
                h[f4::TTL] = self.ttl;
                h[f4::PROTOCOL] = proto;
                put(&mut h, f4::SRC_ADDR, &src.octets());
                put(&mut h, f4::DST_ADDR, &dst.octets());
                let sum = ipv4_checksum(&h);
                put(&mut h, f4::CHECKSUM, &sum.to_be_bytes());
                out.extend_from_slice(&h);
            }
            IpAddrs::V6 { src, dst } => {
                use field::ipv6 as f6;
                let mut h = [0u8; ip::IPV6_HEADER_LEN];
                let word =
                    (6u32 << 28) | (u32::from(self.tos()) << 20) | (self.flow_label & 0xF_FFFF);
                put(&mut h, f6::VER_TC_FLOW, &word.to_be_bytes());
                put(&mut h, f6::PAYLOAD_LEN, &(payload_len as u16).to_be_bytes());
                h[f6::NXT_HDR] = proto;
                h[f6::HOP_LIMIT] = self.ttl;
                put(&mut h, f6::SRC_ADDR, &src.octets());
                put(&mut h, f6::DST_ADDR, &dst.octets());
                out.extend_from_slice(&h);
            }
        }
    }
}
