//! Switch telemetry put into frames as the switches do it (docs/inputs.md,
//! "Switch telemetry"): INT-MD inserted after a RoCEv2 packet's UDP header
//! ([`IntMd::insert`]), IFA's header after its IP header and metadata
//! after its UDP header ([`Ifa::insert`]), and a Telemetry Report v2.0
//! carrying a truncated copy of a packet ([`Report::frame`]). The layouts
//! are the views' (`rocescope_common::wire::{int, ifa, report}`); the
//! packet the telemetry goes into is any frame [`super::frame`] built
//! (its ICRC stays the sender's, as on the wire).
use rocescope_common::proto::{ip, udp};
use rocescope_common::wire::field;
use rocescope_common::wire::{ifa, int, report};

use super::frame::{EthHeader, IpAddrs, IpHeader, ipv4_checksum};

/// How an INT source marked the packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntMark {
    /// This DSCP value in the IP header; the UDP port stays.
    Dscp(u8),
    /// This UDP destination port; the original goes into the shim (NPT 1).
    Port(u16),
}

/// One INT hop's metadata: node id, level 1 ports, hop latency, queue and
/// both timestamps (instruction bitmap 0xFC00, Hop ML 8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntHop {
    pub node_id: u32,
    pub ingress_port: u16,
    pub egress_port: u16,
    pub hop_latency: u32,
    pub queue_id: u8,
    /// 24 bits.
    pub queue_occupancy: u32,
    pub ingress_ts: u64,
    pub egress_ts: u64,
}

/// The instructions [`IntHop`] answers.
pub const INT_BITMAP: u16 = int::field::bits::NODE_ID
    | int::field::bits::L1_PORTS
    | int::field::bits::HOP_LATENCY
    | int::field::bits::QUEUE
    | int::field::bits::INGRESS_TIMESTAMP
    | int::field::bits::EGRESS_TIMESTAMP;

impl IntHop {
    /// Its metadata as [`INT_BITMAP`] lays it out.
    pub fn bytes(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[0..4].copy_from_slice(&self.node_id.to_be_bytes());
        b[4..6].copy_from_slice(&self.ingress_port.to_be_bytes());
        b[6..8].copy_from_slice(&self.egress_port.to_be_bytes());
        b[8..12].copy_from_slice(&self.hop_latency.to_be_bytes());
        let queue = (u32::from(self.queue_id) << 24) | (self.queue_occupancy & 0x00FF_FFFF);
        b[12..16].copy_from_slice(&queue.to_be_bytes());
        b[16..24].copy_from_slice(&self.ingress_ts.to_be_bytes());
        b[24..32].copy_from_slice(&self.egress_ts.to_be_bytes());
        b
    }
}

/// INT-MD over UDP: the shim, the metadata header and the hops (newest
/// first, as the stack holds them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntMd {
    pub mark: IntMark,
    pub remaining_hop_count: u8,
    pub hops: Vec<IntHop>,
}

impl IntMd {
    /// The shim, metadata header and stack; `original_port` the UDP
    /// destination port the shim keeps when marked by port.
    pub fn bytes(&self, original_port: u16) -> Vec<u8> {
        let hop_words = INT_HOP_LEN / 4;
        let len_words = int::MD_HEADER_LEN / 4 + hop_words * self.hops.len();
        let mut b = Vec::with_capacity(int::SHIM_LEN + len_words * 4);
        let (npt, port) = match self.mark {
            IntMark::Port(_) => (int::NPT_UDP_PAYLOAD, original_port),
            IntMark::Dscp(_) => (0, 0),
        };
        b.push((int::TYPE_MD << 4) | (npt << 2));
        b.push(len_words as u8);
        b.extend_from_slice(&port.to_be_bytes());
        b.extend_from_slice(&[
            int::VERSION << 4,
            0,
            hop_words as u8,
            self.remaining_hop_count,
        ]);
        b.extend_from_slice(&INT_BITMAP.to_be_bytes());
        b.extend_from_slice(&[0; 6]);
        for h in &self.hops {
            b.extend_from_slice(&h.bytes());
        }
        b
    }

    /// `frame` (an untagged or tagged Ethernet frame of a RoCEv2 packet,
    /// `eth` its Ethernet header as built) with this INT after its UDP
    /// header, its lengths, DSCP or port changed as the mark says.
    pub fn insert(&self, frame: &[u8], eth: &EthHeader) -> Vec<u8> {
        let l3 = eth.header_len();
        let at = l3 + ip_header_len(frame, l3) + udp::HEADER_LEN;
        let dport_at = at - udp::HEADER_LEN + field::udp::DST_PORT;
        let original = u16::from_be_bytes([frame[dport_at], frame[dport_at + 1]]);
        let bytes = self.bytes(original);
        let mut out = splice(frame, at, &bytes);
        grow_lengths(&mut out, l3, at - udp::HEADER_LEN, bytes.len(), true);
        match self.mark {
            IntMark::Port(p) => out[dport_at..dport_at + 2].copy_from_slice(&p.to_be_bytes()),
            IntMark::Dscp(d) => set_dscp(&mut out, l3, d),
        }
        refresh_ipv4_checksum(&mut out, l3);
        out
    }
}

/// The bytes of one [`IntHop`] in the stack.
pub const INT_HOP_LEN: usize = int::metadata_len(INT_BITMAP);

/// One IFA hop (local namespace 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IfaHop {
    /// 20 bits.
    pub device_id: u32,
    pub ip_ttl: u8,
    pub port_speed: u8,
    pub congestion: u8,
    /// 6 bits.
    pub queue_id: u8,
    /// 20 bits.
    pub rx_sec: u32,
    pub egress_port: u16,
    pub ingress_port: u16,
    pub rx_ns: u32,
    pub residence_ns: u32,
    pub vendor: [u32; 3],
}

impl IfaHop {
    pub fn bytes(&self) -> [u8; ifa::HOP_LEN] {
        let mut b = [0u8; ifa::HOP_LEN];
        let w0 = (1u32 << 28) | ((self.device_id & 0xF_FFFF) << 8) | u32::from(self.ip_ttl);
        let w1 = (u32::from(self.port_speed & 0xF) << 28)
            | (u32::from(self.congestion & 3) << 26)
            | (u32::from(self.queue_id & 0x3F) << 20)
            | (self.rx_sec & 0xF_FFFF);
        b[0..4].copy_from_slice(&w0.to_be_bytes());
        b[4..8].copy_from_slice(&w1.to_be_bytes());
        b[8..10].copy_from_slice(&self.egress_port.to_be_bytes());
        b[10..12].copy_from_slice(&self.ingress_port.to_be_bytes());
        b[12..16].copy_from_slice(&self.rx_ns.to_be_bytes());
        b[16..20].copy_from_slice(&self.residence_ns.to_be_bytes());
        for (i, w) in self.vendor.iter().enumerate() {
            b[20 + 4 * i..24 + 4 * i].copy_from_slice(&w.to_be_bytes());
        }
        b
    }
}

/// IFA 2.0: the header after IP, the metadata after UDP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ifa {
    /// The IP protocol that marks it (131 in the draft).
    pub protocol: u8,
    pub hop_limit: u8,
    pub hops: Vec<IfaHop>,
    /// Whether the UDP length grows by the metadata (the sources do not
    /// say; the decoder reads both).
    pub udp_length_grows: bool,
}

impl Ifa {
    /// `frame` (Ethernet, RoCEv2) with IFA put in.
    pub fn insert(&self, frame: &[u8], eth: &EthHeader) -> Vec<u8> {
        let l3 = eth.header_len();
        let ip_len = ip_header_len(frame, l3);
        let udp_at = l3 + ip_len;
        let header = [(2 << 4) | 0x0F, ip::PROTO_UDP, ifa::field::header::I, 0xFF];
        let mut md = vec![
            0xFF,
            0,
            self.hop_limit,
            (self.hops.len() * ifa::HOP_LEN / 4) as u8,
        ];
        for h in &self.hops {
            md.extend_from_slice(&h.bytes());
        }
        let with_md = splice(frame, udp_at + udp::HEADER_LEN, &md);
        let mut out = splice(&with_md, udp_at, &header);
        let udp_at = udp_at + ifa::HEADER_LEN;
        grow_lengths(&mut out, l3, udp_at, md.len(), self.udp_length_grows);
        grow_ip_length(&mut out, l3, ifa::HEADER_LEN);
        match ip_version(&out, l3) {
            4 => out[l3 + field::ipv4::PROTOCOL] = self.protocol,
            _ => out[l3 + field::ipv6::NXT_HDR] = self.protocol,
        }
        refresh_ipv4_checksum(&mut out, l3);
        out
    }
}

/// A Telemetry Report v2.0 packet from a switch to a collector, one
/// individual report of type INT with the reporting hop's metadata (the
/// bits of [`INT_BITMAP`] but the node id, which the group header holds)
/// and the first `truncate` bytes of a packet (inner type Ethernet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The collector's and the switch's MACs (the frame is untagged).
    pub dst_mac: [u8; 6],
    pub src_mac: [u8; 6],
    pub ip: IpHeader,
    pub dport: u16,
    pub hw_id: u8,
    /// 22 bits.
    pub sequence: u32,
    pub node_id: u32,
    pub dropped: bool,
    pub congested_queue: bool,
    pub tracked_flow: bool,
    pub hop: IntHop,
    /// A drop report's queue id and drop reason (RepMdBits bit 15).
    pub drop: Option<(u8, u8)>,
    pub truncate: usize,
}

impl Default for Report {
    /// Switch 3 (hw_id 1) to a collector on UDP 32766 (a port operators
    /// choose; no default exists), sequence 0, a tracked flow whose queue
    /// 3 on egress port 12 is congested (occupancy 0x8000, 9 µs latency);
    /// the first 128 bytes of the packet.
    fn default() -> Self {
        Report {
            dst_mac: [2, 0, 0, 0, 0, 0x10],
            src_mac: [2, 0, 0, 0, 0, 0x20],
            ip: IpHeader::default(),
            dport: 32766,
            hw_id: 1,
            sequence: 0,
            node_id: 3,
            dropped: false,
            congested_queue: true,
            tracked_flow: true,
            hop: IntHop {
                node_id: 3,
                ingress_port: 11,
                egress_port: 12,
                hop_latency: 9_000,
                queue_id: 3,
                queue_occupancy: 0x8000,
                ingress_ts: 2_000_000,
                egress_ts: 2_009_000,
            },
            drop: None,
            truncate: 128,
        }
    }
}

/// The report's RepMdBits: [`INT_BITMAP`] without the node id.
pub const REPORT_MD_BITS: u16 = INT_BITMAP & !int::field::bits::NODE_ID;

impl Report {
    /// The report's frame carrying `packet` (an Ethernet frame).
    pub fn frame(&self, packet: &[u8]) -> Vec<u8> {
        let inner = &packet[..self.truncate.min(packet.len())];
        // Whole 4-byte words: the lengths count words.
        let inner_len = inner.len().div_ceil(4) * 4;
        let mut md = self.hop.bytes()[4..].to_vec();
        let mut md_bits = REPORT_MD_BITS;
        if let Some((queue, reason)) = self.drop {
            md.extend_from_slice(&[queue, reason, 0, 0]);
            md_bits |= int::field::bits::LAST;
        }
        let words = (report::INT_MAIN_LEN + md.len() + inner_len) / 4;
        let mut p = Vec::new();
        let word = (u32::from(report::VERSION) << 28)
            | (u32::from(self.hw_id & 0x3F) << 22)
            | (self.sequence & 0x3F_FFFF);
        p.extend_from_slice(&word.to_be_bytes());
        p.extend_from_slice(&self.node_id.to_be_bytes());
        use report::field::individual as fi;
        let flags = if self.dropped { fi::D } else { 0 }
            | if self.congested_queue { fi::Q } else { 0 }
            | if self.tracked_flow { fi::F } else { 0 };
        p.extend_from_slice(&[
            (report::rep_type::INT << 4) | report::in_type::ETHERNET,
            words as u8,
            (md.len() / 4) as u8,
            flags,
        ]);
        p.extend_from_slice(&md_bits.to_be_bytes());
        p.extend_from_slice(&[0; 6]);
        p.extend_from_slice(&md);
        p.extend_from_slice(inner);
        p.resize(p.len() + inner_len - inner.len(), 0);
        Udp {
            dst_mac: self.dst_mac,
            src_mac: self.src_mac,
            ip: self.ip,
            dport: self.dport,
            payload: &p,
        }
        .bytes()
    }
}

/// A plain UDP datagram in an untagged Ethernet frame.
struct Udp<'a> {
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
    ip: IpHeader,
    dport: u16,
    payload: &'a [u8],
}

impl Udp<'_> {
    fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&self.dst_mac);
        out.extend_from_slice(&self.src_mac);
        out.extend_from_slice(&self.ip.ethertype().to_be_bytes());
        let l3 = out.len();
        let udp_len = udp::HEADER_LEN + self.payload.len();
        match self.ip.addrs {
            IpAddrs::V4 { src, dst } => {
                let mut h = [0u8; ip::IPV4_MIN_HEADER_LEN];
                h[0] = 0x45;
                h[1] = (self.ip.dscp << 2) | self.ip.ecn;
                h[2..4]
                    .copy_from_slice(&((ip::IPV4_MIN_HEADER_LEN + udp_len) as u16).to_be_bytes());
                h[6] = 0x40;
                h[8] = self.ip.ttl;
                h[9] = ip::PROTO_UDP;
                h[12..16].copy_from_slice(&src.octets());
                h[16..20].copy_from_slice(&dst.octets());
                out.extend_from_slice(&h);
            }
            IpAddrs::V6 { src, dst } => {
                let mut h = [0u8; ip::IPV6_HEADER_LEN];
                h[0] = 0x60 | (self.ip.dscp >> 2);
                h[1] = ((self.ip.dscp & 3) << 6) | (self.ip.ecn << 4);
                h[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
                h[6] = ip::PROTO_UDP;
                h[7] = self.ip.ttl;
                h[8..24].copy_from_slice(&src.octets());
                h[24..40].copy_from_slice(&dst.octets());
                out.extend_from_slice(&h);
            }
        }
        out.extend_from_slice(&0xC001u16.to_be_bytes());
        out.extend_from_slice(&self.dport.to_be_bytes());
        out.extend_from_slice(&(udp_len as u16).to_be_bytes());
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(self.payload);
        refresh_ipv4_checksum(&mut out, l3);
        if out.len() < super::frame::MIN_FRAME_LEN {
            out.resize(super::frame::MIN_FRAME_LEN, 0);
        }
        out
    }
}

fn ip_version(frame: &[u8], l3: usize) -> u8 {
    frame[l3] >> 4
}

fn ip_header_len(frame: &[u8], l3: usize) -> usize {
    match ip_version(frame, l3) {
        4 => usize::from(frame[l3] & 0x0F) * 4,
        _ => ip::IPV6_HEADER_LEN,
    }
}

/// `frame` with `bytes` put in at `at`.
fn splice(frame: &[u8], at: usize, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(frame.len() + bytes.len());
    out.extend_from_slice(&frame[..at]);
    out.extend_from_slice(bytes);
    out.extend_from_slice(&frame[at..]);
    out
}

fn add16(b: &mut [u8], at: usize, n: usize) {
    let v = u16::from_be_bytes([b[at], b[at + 1]]) as usize + n;
    b[at..at + 2].copy_from_slice(&(v as u16).to_be_bytes());
}

fn grow_ip_length(frame: &mut [u8], l3: usize, n: usize) {
    match ip_version(frame, l3) {
        4 => add16(frame, l3 + field::ipv4::LENGTH, n),
        _ => add16(frame, l3 + field::ipv6::PAYLOAD_LEN, n),
    }
}

/// The IP length (and, with `udp`, the UDP length at `udp_at`) grown by `n`.
fn grow_lengths(frame: &mut [u8], l3: usize, udp_at: usize, n: usize, udp: bool) {
    grow_ip_length(frame, l3, n);
    if udp {
        add16(frame, udp_at + field::udp::LENGTH, n);
    }
}

fn set_dscp(frame: &mut [u8], l3: usize, dscp: u8) {
    match ip_version(frame, l3) {
        4 => frame[l3 + field::ipv4::TOS] = (dscp << 2) | (frame[l3 + field::ipv4::TOS] & 3),
        _ => {
            let tc = (dscp << 2) | ((frame[l3 + 1] >> 4) & 3);
            frame[l3] = 0x60 | (tc >> 4);
            frame[l3 + 1] = (tc << 4) | (frame[l3 + 1] & 0x0F);
        }
    }
}

fn refresh_ipv4_checksum(frame: &mut [u8], l3: usize) {
    if ip_version(frame, l3) != 4 {
        return;
    }
    let c = l3 + field::ipv4::CHECKSUM;
    frame[c..c + 2].copy_from_slice(&[0, 0]);
    let sum = ipv4_checksum(&frame[l3..l3 + ip_header_len(frame, l3)]);
    frame[c..c + 2].copy_from_slice(&sum.to_be_bytes());
}
