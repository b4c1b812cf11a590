//! ERSPAN II and III over GRE: a frame wrapped as a mirror sends it.

use std::net::Ipv4Addr;

use rocescope_common::proto::{ethernet, gre, ip};
use rocescope_common::wire::field;

use super::{EthHeader, IpAddrs, IpHeader, WireFrame, put, rewrite_ip_len};

/// ERSPAN version.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ErspanVersion {
    /// Type II: GRE protocol 0x88BE, 8-byte header with a 20-bit index.
    #[default]
    II,
    /// Type III: GRE protocol 0x22EB, 12-byte header with a timestamp.
    III,
}

/// ERSPAN encapsulation: outer Ethernet / IPv4 / GRE (with sequence number)
/// / ERSPAN header / the mirrored frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Erspan {
    pub version: ErspanVersion,
    /// Outer Ethernet header (tags allowed).
    pub eth: EthHeader,
    /// Outer IPv4: source (the switch) and destination (the collector).
    pub src_ip: Ipv4Addr,
    pub dst_ip: Ipv4Addr,
    pub dscp: u8,
    pub ttl: u8,
    pub ip_id: u16,
    /// GRE sequence number.
    pub gre_seq: u32,
    /// ERSPAN session id (10 bits).
    pub session_id: u16,
    /// The mirrored frame's original VLAN (12 bits).
    pub vlan: u16,
    /// Class of service (3 bits).
    pub cos: u8,
    /// Type II "En" / type III "BSO" (2 bits).
    pub encap: u8,
    /// T: the mirrored frame was truncated.
    pub truncated: bool,
    /// Type II port index (20 bits).
    pub index: u32,
    /// Type III timestamp (low 32 bits).
    pub timestamp: u32,
    /// Type III security group tag.
    pub sgt: u16,
    /// Type III hardware id (6 bits).
    pub hw_id: u8,
    /// Type III direction (false ingress, true egress).
    pub direction: bool,
    /// Type III timestamp granularity (2 bits).
    pub granularity: u8,
    /// Type III platform-specific subheader (8 bytes; sets O).
    pub platform: Option<[u8; gre::ERSPAN_III_PLATFORM_LEN]>,
}

impl Default for Erspan {
    fn default() -> Self {
        Erspan {
            version: ErspanVersion::II,
            eth: EthHeader {
                dst: [0x02, 0, 0, 0, 0xEE, 0x02],
                src: [0x02, 0, 0, 0, 0xEE, 0x01],
                outer_vlan: None,
                vlan: None,
            },
            src_ip: Ipv4Addr::new(192, 168, 0, 1),
            dst_ip: Ipv4Addr::new(192, 168, 0, 2),
            dscp: 0,
            ttl: 64,
            ip_id: 0,
            gre_seq: 0,
            session_id: 1,
            vlan: 0,
            cos: 0,
            encap: 0,
            truncated: false,
            index: 0,
            timestamp: 0,
            sgt: 0,
            hw_id: 0,
            direction: false,
            granularity: 0,
            platform: None,
        }
    }
}

impl Erspan {
    /// Bytes added in front of the mirrored frame.
    pub fn overhead(&self) -> usize {
        self.eth.header_len()
            + ip::IPV4_MIN_HEADER_LEN
            + gre::BASE_LEN
            + 4
            + match self.version {
                ErspanVersion::II => gre::ERSPAN_II_LEN,
                ErspanVersion::III => gre::ERSPAN_III_LEN,
            }
            + self.platform.map_or(0, |p| p.len())
    }

    /// `inner` wrapped, appended to `out`.
    pub fn append(&self, inner: &impl WireFrame, out: &mut Vec<u8>) {
        let ip_header = IpHeader {
            addrs: IpAddrs::V4 {
                src: self.src_ip,
                dst: self.dst_ip,
            },
            dscp: self.dscp,
            ecn: 0,
            ttl: self.ttl,
            id: self.ip_id,
            dont_fragment: false,
            flow_label: 0,
        };
        self.eth.append(out, ethernet::ETHERTYPE_IPV4);
        let ip_start = out.len();
        // Length fixed below, once the inner frame is in.
        ip_header.append(out, gre::IP_PROTO, 0);
        let ip_end = out.len();
        let proto = match self.version {
            ErspanVersion::II => gre::PROTO_ERSPAN_II,
            ErspanVersion::III => gre::PROTO_ERSPAN_III,
        };
        let mut h = [0u8; gre::BASE_LEN];
        put(
            &mut h,
            field::gre::FLAGS_VERSION,
            &gre::FLAG_SEQUENCE.to_be_bytes(),
        );
        put(&mut h, field::gre::PROTOCOL, &proto.to_be_bytes());
        out.extend_from_slice(&h);
        out.extend_from_slice(&self.gre_seq.to_be_bytes());
        let ver: u16 = match self.version {
            ErspanVersion::II => 1,
            ErspanVersion::III => 2,
        };
        out.extend_from_slice(&((ver << 12) | (self.vlan & 0x0FFF)).to_be_bytes());
        let word1 = (u16::from(self.cos & 7) << 13)
            | (u16::from(self.encap & 3) << 11)
            | (u16::from(self.truncated) << 10)
            | (self.session_id & 0x03FF);
        out.extend_from_slice(&word1.to_be_bytes());
        match self.version {
            ErspanVersion::II => out.extend_from_slice(&(self.index & 0xF_FFFF).to_be_bytes()),
            ErspanVersion::III => {
                out.extend_from_slice(&self.timestamp.to_be_bytes());
                out.extend_from_slice(&self.sgt.to_be_bytes());
                // P = 0, FT = 0 (an Ethernet frame), O: a subheader follows.
                let low = (u16::from(self.hw_id & 0x3F) << 4)
                    | (u16::from(self.direction) << 3)
                    | (u16::from(self.granularity & 3) << 1)
                    | u16::from(self.platform.is_some());
                out.extend_from_slice(&low.to_be_bytes());
                if let Some(p) = &self.platform {
                    out.extend_from_slice(p);
                }
            }
        }
        inner.append(out);
        let payload = out.len() - ip_end;
        rewrite_ip_len(&mut out[ip_start..ip_end], payload);
    }

    /// Replaces the contents of `out` with `inner` wrapped.
    pub fn write(&self, inner: &impl WireFrame, out: &mut Vec<u8>) {
        out.clear();
        self.append(inner, out);
    }

    /// A [`WireFrame`] of `inner` wrapped in this encapsulation.
    pub fn wrap<'a, F: WireFrame>(&'a self, inner: &'a F) -> Wrapped<'a, F> {
        Wrapped {
            erspan: self,
            inner,
        }
    }
}

/// A frame wrapped in ERSPAN (see [`Erspan::wrap`]).
#[derive(Clone, Copy, Debug)]
pub struct Wrapped<'a, F> {
    pub erspan: &'a Erspan,
    pub inner: &'a F,
}

impl<F: WireFrame> WireFrame for Wrapped<'_, F> {
    fn append(&self, out: &mut Vec<u8>) {
        self.erspan.append(self.inner, out);
    }
}
