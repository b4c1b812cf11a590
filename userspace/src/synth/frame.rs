//! Frame builder: complete Ethernet frames with RoCEv2 or RoCEv1 (valid
//! ICRC), CNP, PFC, 802.3x PAUSE, optionally wrapped in ERSPAN II/III over
//! GRE.
//!
//! Each header is written at the offsets of [`rocescope_common::wire::field`],
//! the ones the decoder's walk reads at.
//!
//! Every frame type is a small plain struct with public fields and a
//! [`Default`]; [`WireFrame::write`] puts the frame into a caller's buffer
//! (cleared first, capacity reused), [`WireFrame::append`] adds it at the end
//! of what the buffer holds. Nothing is allocated per frame beyond the
//! buffer's growth.
//!
//! ```
//! use rocescope::synth::frame::{RoceFrame, WireFrame};
//! let mut buf = Vec::new();
//! let mut f = RoceFrame::default();
//! f.bth.opcode = 0x0A; // RC RDMA WRITE Only: a RETH follows the BTH
//! f.ext.reth_len = 4096;
//! f.payload_len = 1024;
//! f.write(&mut buf);
//! assert_eq!(buf.len(), 14 + 20 + 8 + 12 + 16 + 1024 + 4);
//! ```
use std::net::{Ipv4Addr, Ipv6Addr};

use rocescope_common::proto::{ethernet, gre, ib, ip, mac_control, udp};
use rocescope_common::wire::{Recognition, TransportId, field};

use crate::transport::roce::icrc;

/// Shortest Ethernet frame without its FCS: shorter frames get zero padding.
pub const MIN_FRAME_LEN: usize = 60;

/// Destination MAC of MAC Control frames (PAUSE and PFC).
pub const MAC_CONTROL_DST: [u8; 6] = [0x01, 0x80, 0xC2, 0x00, 0x00, 0x01];

/// Something that can be written as one Ethernet frame.
pub trait WireFrame {
    /// Appends the frame at the end of `out` (what `out` held is kept; the
    /// 60-byte minimum counts from where this frame starts).
    fn append(&self, out: &mut Vec<u8>);

    /// Replaces the contents of `out` with the frame.
    fn write(&self, out: &mut Vec<u8>) {
        out.clear();
        self.append(out);
    }
}

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

    fn tos(&self) -> u8 {
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

/// Writes `bytes` into `header` at the field offset `at`.
fn put(header: &mut [u8], at: usize, bytes: &[u8]) {
    header[at..at + bytes.len()].copy_from_slice(bytes);
}

/// Global Route Header values (IBA 8.3): RoCEv1's, and native
/// InfiniBand's behind an LRH.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrhFields {
    pub tclass: u8,
    /// 20 bits.
    pub flow_label: u32,
    pub hop_limit: u8,
    pub sgid: Ipv6Addr,
    pub dgid: Ipv6Addr,
}

impl GrhFields {
    /// The 40-byte GRH, naming a BTH next, `pay_len` bytes after it.
    pub(crate) fn append(&self, out: &mut Vec<u8>, pay_len: u16) {
        use field::grh as fg;
        let mut h = [0u8; ib::GRH_LEN];
        let word = (u32::from(ib::GRH_IPVER) << 28)
            | (u32::from(self.tclass) << 20)
            | (self.flow_label & 0xF_FFFF);
        put(&mut h, fg::IPVER_TCLASS_FLOWLABEL, &word.to_be_bytes());
        put(&mut h, fg::PAYLEN, &pay_len.to_be_bytes());
        h[fg::NXTHDR] = ib::GRH_NXTHDR_BTH;
        h[fg::HOPLMT] = self.hop_limit;
        put(&mut h, fg::SGID, &self.sgid.octets());
        put(&mut h, fg::DGID, &self.dgid.octets());
        out.extend_from_slice(&h);
    }
}

/// RFC 1071 one's-complement sum of `data`, folded, not inverted.
fn ones_sum(data: &[u8], mut acc: u32) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        acc += u32::from(*last) << 8;
    }
    while acc > 0xFFFF {
        acc = (acc & 0xFFFF) + (acc >> 16);
    }
    acc
}

/// The IPv4 header checksum of `header` (its checksum field must be zero).
pub fn ipv4_checksum(header: &[u8]) -> u16 {
    !(ones_sum(header, 0) as u16)
}

/// Base Transport Header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bth {
    pub opcode: u8,
    /// Solicited event.
    pub se: bool,
    pub migreq: bool,
    /// `None`: pad the payload to a multiple of 4 bytes and say how much.
    /// `Some(n)`: write `n` (0..=3) pad bytes and that count, aligned or not.
    pub pad_count: Option<u8>,
    /// Transport header version (4 bits, 0).
    pub tver: u8,
    pub pkey: u16,
    pub fecn: bool,
    pub becn: bool,
    /// Destination QP (24 bits).
    pub dest_qp: u32,
    pub ack_req: bool,
    /// Packet sequence number (24 bits).
    pub psn: u32,
}

impl Default for Bth {
    /// RC SEND Only to QP 0x12, default P_Key 0xFFFF, PSN 0.
    fn default() -> Self {
        Bth {
            opcode: 0x04,
            se: false,
            migreq: false,
            pad_count: None,
            tver: 0,
            pkey: 0xFFFF,
            fecn: false,
            becn: false,
            dest_qp: 0x12,
            ack_req: false,
            psn: 0,
        }
    }
}

impl Bth {
    pub(crate) fn append(&self, out: &mut Vec<u8>, pad_count: u8) {
        use field::bth as fb;
        let bit = |set: bool, mask: u8| if set { mask } else { 0 };
        let mut h = [0u8; ib::BTH_LEN];
        h[fb::OPCODE] = self.opcode;
        h[fb::SE_M_PAD_TVER] = bit(self.se, fb::SE)
            | bit(self.migreq, fb::MIGREQ)
            | ((pad_count & fb::PAD_MASK) << fb::PAD_SHIFT)
            | (self.tver & fb::TVER_MASK);
        put(&mut h, fb::P_KEY, &self.pkey.to_be_bytes());
        h[fb::FECN_BECN] = bit(self.fecn, fb::FECN) | bit(self.becn, fb::BECN);
        put(&mut h, fb::DEST_QP, &u24(self.dest_qp));
        h[fb::ACKREQ] = bit(self.ack_req, fb::ACK_REQ);
        put(&mut h, fb::PSN, &u24(self.psn));
        out.extend_from_slice(&h);
    }
}

fn u24(v: u32) -> [u8; 3] {
    let b = v.to_be_bytes();
    [b[1], b[2], b[3]]
}

/// Values of every extension header. Only those the BTH opcode implies
/// ([`ib::ext_headers`]) are written, in the order IBA puts them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExtHeaders {
    /// The 8 bytes mlx5 DC adds after the BTH (RD opcode range).
    pub dc_bth: [u8; 8],
    /// DC Connect ETH (DC CONNECT, 0x55 with SE clear).
    pub dcceth: [u8; 16],
    /// RDETH end-to-end context (24 bits).
    pub rdeth_eecnxt: u32,
    pub deth_qkey: u32,
    /// DETH source QP (24 bits).
    pub deth_src_qp: u32,
    /// XRCETH XRC SRQ (24 bits).
    pub xrc_srq: u32,
    /// FETH selectivity level (2 bits) and placement type (4 bits).
    pub feth_sel: u8,
    pub feth_plt: u8,
    pub reth_va: u64,
    pub reth_rkey: u32,
    pub reth_len: u32,
    pub atomic_va: u64,
    pub atomic_rkey: u32,
    pub atomic_swap_add: u64,
    pub atomic_compare: u64,
    pub aeth_syndrome: u8,
    /// AETH message sequence number (24 bits).
    pub aeth_msn: u32,
    /// AtomicAckETH original remote data.
    pub atomic_orig: u64,
    /// ImmDt (written big-endian).
    pub imm: u32,
    /// IETH R_Key.
    pub ieth_rkey: u32,
}

impl ExtHeaders {
    pub(crate) fn append(&self, out: &mut Vec<u8>, mask: u16) {
        use ib::ext;
        if mask & ext::UNKNOWN != 0 {
            return;
        }
        // Each header that `mask` names, in spec order, its fields at their offsets.
        macro_rules! emit {
            ($bit:expr, $len:expr, |$h:ident| $fill:block) => {
                if mask & $bit != 0 {
                    let mut $h = [0u8; $len];
                    $fill
                    out.extend_from_slice(&$h);
                }
            };
        }
        // The DC headers (RD range, mlx5 DC) are opaque bytes.
        if mask & ext::DC_BTH != 0 {
            out.extend_from_slice(&self.dc_bth);
        }
        if mask & ext::DCCETH != 0 {
            out.extend_from_slice(&self.dcceth);
        }
        emit!(ext::RDETH, ib::RDETH_LEN, |h| {
            put(&mut h, field::rdeth::EE_CNXT, &u24(self.rdeth_eecnxt));
        });
        emit!(ext::DETH, ib::DETH_LEN, |h| {
            put(&mut h, field::deth::Q_KEY, &self.deth_qkey.to_be_bytes());
            put(&mut h, field::deth::SRC_QP, &u24(self.deth_src_qp));
        });
        emit!(ext::XRCETH, ib::XRCETH_LEN, |h| {
            put(&mut h, field::xrceth::XRC_SRQ, &u24(self.xrc_srq));
        });
        emit!(ext::FETH, ib::FETH_LEN, |h| {
            use field::feth as ff;
            h[ff::SEL_PLT] =
                ((self.feth_sel & ff::SEL_MASK) << ff::SEL_SHIFT) | (self.feth_plt & ff::PLT_MASK);
        });
        emit!(ext::RETH, ib::RETH_LEN, |h| {
            put(&mut h, field::reth::VA, &self.reth_va.to_be_bytes());
            put(&mut h, field::reth::R_KEY, &self.reth_rkey.to_be_bytes());
            put(&mut h, field::reth::DMA_LEN, &self.reth_len.to_be_bytes());
        });
        emit!(ext::ATOMIC_ETH, ib::ATOMIC_ETH_LEN, |h| {
            use field::atomic_eth as fa;
            put(&mut h, fa::VA, &self.atomic_va.to_be_bytes());
            put(&mut h, fa::R_KEY, &self.atomic_rkey.to_be_bytes());
            put(
                &mut h,
                fa::SWAP_ADD_DATA,
                &self.atomic_swap_add.to_be_bytes(),
            );
            put(&mut h, fa::COMPARE_DATA, &self.atomic_compare.to_be_bytes());
        });
        emit!(ext::AETH, ib::AETH_LEN, |h| {
            h[field::aeth::SYNDROME] = self.aeth_syndrome;
            put(&mut h, field::aeth::MSN, &u24(self.aeth_msn));
        });
        emit!(ext::ATOMIC_ACK_ETH, ib::ATOMIC_ACK_ETH_LEN, |h| {
            put(
                &mut h,
                field::atomic_ack_eth::ORIG_REM_DT,
                &self.atomic_orig.to_be_bytes(),
            );
        });
        emit!(ext::IMMDT, ib::IMMDT_LEN, |h| {
            put(
                &mut h,
                field::immdt::IMMEDIATE_DATA,
                &self.imm.to_be_bytes(),
            );
        });
        emit!(ext::IETH, ib::IETH_LEN, |h| {
            put(&mut h, field::ieth::R_KEY, &self.ieth_rkey.to_be_bytes());
        });
    }
}

/// What goes into the ICRC field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IcrcMode {
    /// The correct ICRC.
    #[default]
    Valid,
    /// The correct ICRC with every bit flipped (never valid).
    Corrupt,
    /// This value (as the CRC value: written least significant byte first).
    Value(u32),
}

impl IcrcMode {
    /// What goes on the wire in place of the correct `crc`.
    pub fn apply(self, crc: u32) -> u32 {
        match self {
            IcrcMode::Valid => crc,
            IcrcMode::Corrupt => !crc,
            IcrcMode::Value(v) => v,
        }
    }
}

/// Which RoCE carries the transport headers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RoceVersion {
    /// IP / UDP to port 4791 (Annex A17).
    #[default]
    V2,
    /// EtherType 0x8915 / GRH (Annex A16). The GRH takes its GIDs from the
    /// IP addresses (an IPv4 address as its IPv4-mapped GID), its traffic
    /// class from DSCP and ECN, its flow label and hop limit from the IP
    /// header's; there is no UDP header (`udp_*` are not written).
    V1,
}

/// A RoCE packet (or CNP) in an Ethernet frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoceFrame {
    pub eth: EthHeader,
    pub ip: IpHeader,
    /// UDP source port: flow entropy.
    pub udp_sport: u16,
    /// 4791 unless a test wants otherwise.
    pub udp_dport: u16,
    /// Compute the UDP checksum (IPv4 and IPv6); otherwise it is 0, as
    /// RoCE NICs send it.
    pub udp_checksum: bool,
    pub bth: Bth,
    pub ext: ExtHeaders,
    /// Bytes of application payload after the extension headers. Ignored for
    /// a CNP, whose 16 reserved bytes are always written (zero).
    pub payload_len: usize,
    /// Payload byte `i` is `payload_seed + i` (mod 256).
    pub payload_seed: u8,
    pub icrc: IcrcMode,
    /// Cut the UDP datagram to this many bytes (IP and UDP lengths follow)
    /// after the ICRC was computed: a datagram too short for its headers
    /// (a `malformed` frame) when below 8 + 12 + 4. RoCEv2 only.
    pub udp_truncate: Option<usize>,
    pub version: RoceVersion,
}

impl Default for RoceFrame {
    fn default() -> Self {
        RoceFrame {
            eth: EthHeader::default(),
            ip: IpHeader::default(),
            udp_sport: 0xC000,
            // The registry's RoCEv2 port (`--udp-port` moves it on the
            // decoding side only).
            udp_dport: Recognition::DEFAULT.udp_port(TransportId::Roce),
            udp_checksum: false,
            bth: Bth::default(),
            ext: ExtHeaders::default(),
            payload_len: 0,
            payload_seed: 0,
            icrc: IcrcMode::Valid,
            udp_truncate: None,
            version: RoceVersion::V2,
        }
    }
}

impl RoceFrame {
    /// A CNP (opcode 0x81) to `dest_qp` with BECN set, as ConnectX NICs send
    /// it (P_Key 0xFFFF, 16 zero reserved bytes).
    pub fn cnp(dest_qp: u32) -> RoceFrame {
        let mut f = RoceFrame::default();
        f.bth.opcode = ib::OPCODE_CNP;
        f.bth.becn = true;
        f.bth.dest_qp = dest_qp;
        f
    }

    /// True when the opcode is the CNP one.
    pub fn is_cnp(&self) -> bool {
        self.bth.opcode == ib::OPCODE_CNP
    }

    /// Payload bytes actually written (16 reserved bytes for a CNP).
    pub fn effective_payload_len(&self) -> usize {
        if self.is_cnp() {
            ib::CNP_RESERVED_LEN
        } else {
            self.payload_len
        }
    }

    /// The BTH pad count written.
    pub fn effective_pad_count(&self) -> u8 {
        match self.bth.pad_count {
            Some(n) => n & 3,
            None if self.is_cnp() => 0,
            None => ((4 - self.payload_len % 4) % 4) as u8,
        }
    }

    /// Extension headers written after the BTH ([`ib::ext`] bits).
    pub fn ext_mask(&self) -> u16 {
        ib::ext_headers_se(self.bth.opcode, self.bth.se) & !ib::ext::UNKNOWN
    }

    /// UDP datagram length as built, before any `udp_truncate`.
    pub fn udp_len(&self) -> usize {
        udp::HEADER_LEN
            + ib::BTH_LEN
            + ib::ext_headers_len(self.ext_mask())
            + self.effective_payload_len()
            + usize::from(self.effective_pad_count())
            + ib::ICRC_LEN
    }

    /// Length of the frame on the wire (without FCS), Ethernet padding included.
    pub fn frame_len(&self) -> usize {
        if self.version == RoceVersion::V1 {
            let transport = self.udp_len() - udp::HEADER_LEN;
            return (self.eth.header_len() + ib::GRH_LEN + transport).max(MIN_FRAME_LEN);
        }
        let udp_len = match self.udp_truncate {
            Some(n) => n.min(self.udp_len()),
            None => self.udp_len(),
        };
        (self.eth.header_len() + self.ip.header_len() + udp_len).max(MIN_FRAME_LEN)
    }
}

impl RoceFrame {
    /// The BTH, its extension headers, the payload (or a CNP's reserved
    /// bytes), the pad and a zero ICRC.
    fn append_transport(&self, out: &mut Vec<u8>) {
        let pad = self.effective_pad_count();
        self.bth.append(out, pad);
        self.ext.append(out, self.ext_mask());
        if self.is_cnp() {
            out.resize(out.len() + ib::CNP_RESERVED_LEN, 0);
        } else {
            let seed = self.payload_seed;
            out.extend((0..self.payload_len).map(|i| seed.wrapping_add(i as u8)));
        }
        out.resize(out.len() + usize::from(pad), 0);
        out.extend_from_slice(&[0; ib::ICRC_LEN]);
    }

    /// RoCEv1: Ethernet (EtherType 0x8915), GRH, transport headers.
    fn append_v1(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let transport = self.udp_len() - udp::HEADER_LEN;
        self.eth.append(out, ethernet::ETHERTYPE_ROCE);
        let grh_start = out.len();
        let (sgid, dgid) = match self.ip.addrs {
            IpAddrs::V4 { src, dst } => (src.to_ipv6_mapped(), dst.to_ipv6_mapped()),
            IpAddrs::V6 { src, dst } => (src, dst),
        };
        let grh = GrhFields {
            tclass: self.ip.tos(),
            flow_label: self.ip.flow_label,
            hop_limit: self.ip.ttl,
            sgid,
            dgid,
        };
        grh.append(out, transport as u16);
        self.append_transport(out);
        debug_assert_eq!(out.len() - grh_start, ib::GRH_LEN + transport);
        let crc = icrc::compute_grh(&out[grh_start..]).expect("a built RoCEv1 packet is whole");
        let end = out.len();
        out[end - ib::ICRC_LEN..].copy_from_slice(&self.icrc.apply(crc).to_le_bytes());
        pad_min(out, start);
    }
}

impl WireFrame for RoceFrame {
    fn append(&self, out: &mut Vec<u8>) {
        if self.version == RoceVersion::V1 {
            return self.append_v1(out);
        }
        let start = out.len();
        let udp_len = self.udp_len();
        out.reserve(self.eth.header_len() + self.ip.header_len() + udp_len + MIN_FRAME_LEN);
        self.eth.append(out, self.ip.ethertype());
        let ip_start = out.len();
        self.ip.append(out, ip::PROTO_UDP, udp_len);
        let udp_start = out.len();
        let mut h = [0u8; udp::HEADER_LEN];
        put(&mut h, field::udp::SRC_PORT, &self.udp_sport.to_be_bytes());
        put(&mut h, field::udp::DST_PORT, &self.udp_dport.to_be_bytes());
        put(&mut h, field::udp::LENGTH, &(udp_len as u16).to_be_bytes());
        out.extend_from_slice(&h);
        self.append_transport(out);
        debug_assert_eq!(out.len() - udp_start, udp_len);

        let crc = icrc::compute(&out[ip_start..]).expect("a built RoCE packet has every header");
        let end = out.len();
        out[end - ib::ICRC_LEN..].copy_from_slice(&self.icrc.apply(crc).to_le_bytes());

        if let Some(cut) = self.udp_truncate.filter(|&n| n < udp_len) {
            out.truncate(udp_start + cut);
            let cut16 = cut as u16;
            put(
                &mut out[udp_start..],
                field::udp::LENGTH,
                &cut16.to_be_bytes(),
            );
            rewrite_ip_len(&mut out[ip_start..udp_start], cut);
        }
        if self.udp_checksum {
            let sum = udp_checksum(&out[ip_start..udp_start], &out[udp_start..]);
            put(
                &mut out[udp_start..],
                field::udp::CHECKSUM,
                &sum.to_be_bytes(),
            );
        }
        pad_min(out, start);
    }
}

/// Rewrites the length field (and the IPv4 checksum) of an IP header for
/// `payload_len` bytes of payload.
fn rewrite_ip_len(header: &mut [u8], payload_len: usize) {
    if header[0] >> 4 == 4 {
        use field::ipv4 as f4;
        let total = (header.len() + payload_len) as u16;
        put(header, f4::LENGTH, &total.to_be_bytes());
        put(header, f4::CHECKSUM, &[0, 0]);
        let sum = ipv4_checksum(header);
        put(header, f4::CHECKSUM, &sum.to_be_bytes());
    } else {
        put(
            header,
            field::ipv6::PAYLOAD_LEN,
            &(payload_len as u16).to_be_bytes(),
        );
    }
}

/// UDP checksum over the pseudo-header of `ip_header` and `datagram` (whose
/// checksum field must be zero). Zero results are sent as 0xFFFF.
fn udp_checksum(ip_header: &[u8], datagram: &[u8]) -> u16 {
    let len = datagram.len() as u32;
    let mut acc = u32::from(ip::PROTO_UDP) + (len & 0xFFFF) + (len >> 16);
    acc = if ip_header[0] >> 4 == 4 {
        ones_sum(
            &ip_header[field::ipv4::SRC_ADDR..field::ipv4::DST_ADDR + 4],
            acc,
        )
    } else {
        ones_sum(
            &ip_header[field::ipv6::SRC_ADDR..field::ipv6::DST_ADDR + 16],
            acc,
        )
    };
    let sum = !(ones_sum(datagram, acc) as u16);
    if sum == 0 { 0xFFFF } else { sum }
}

fn pad_min(out: &mut Vec<u8>, start: usize) {
    if out.len() - start < MIN_FRAME_LEN {
        out.resize(start + MIN_FRAME_LEN, 0);
    }
}

/// 802.1Qbb priority flow control frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfcFrame {
    /// Normally [`MAC_CONTROL_DST`].
    pub dst: [u8; 6],
    pub src: [u8; 6],
    /// PFC is normally untagged; some switches mirror it with a tag.
    pub vlan: Option<VlanTag>,
    /// Class-enable vector: bit `p` enables `quanta[p]`.
    pub enable: u8,
    /// Pause time per priority, in quanta of 512 bit times.
    pub quanta: [u16; 8],
}

impl Default for PfcFrame {
    fn default() -> Self {
        PfcFrame {
            dst: MAC_CONTROL_DST,
            src: [0x02, 0, 0, 0, 0, 0xFE],
            vlan: None,
            enable: 0,
            quanta: [0; 8],
        }
    }
}

impl PfcFrame {
    /// Pause (or, with `quanta` 0, resume) one priority.
    pub fn single(priority: u8, quanta: u16) -> PfcFrame {
        let mut f = PfcFrame {
            enable: 1 << (priority & 7),
            ..PfcFrame::default()
        };
        f.quanta[usize::from(priority & 7)] = quanta;
        f
    }
}

impl WireFrame for PfcFrame {
    fn append(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let eth = EthHeader {
            dst: self.dst,
            src: self.src,
            outer_vlan: None,
            vlan: self.vlan,
        };
        eth.append(out, ethernet::ETHERTYPE_MAC_CONTROL);
        use field::mac_control as fm;
        let mut h = [0u8; mac_control::PFC_LEN];
        put(&mut h, fm::OPCODE, &mac_control::OPCODE_PFC.to_be_bytes());
        put(
            &mut h,
            fm::CLASS_ENABLE_VECTOR,
            &u16::from(self.enable).to_be_bytes(),
        );
        for (i, q) in self.quanta.iter().enumerate() {
            put(&mut h, fm::TIMES + 2 * i, &q.to_be_bytes());
        }
        out.extend_from_slice(&h);
        pad_min(out, start);
    }
}

/// 802.3x PAUSE frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PauseFrame {
    /// Normally [`MAC_CONTROL_DST`].
    pub dst: [u8; 6],
    pub src: [u8; 6],
    pub vlan: Option<VlanTag>,
    /// Pause time in quanta of 512 bit times (0 resumes).
    pub quanta: u16,
}

impl Default for PauseFrame {
    fn default() -> Self {
        PauseFrame {
            dst: MAC_CONTROL_DST,
            src: [0x02, 0, 0, 0, 0, 0xFE],
            vlan: None,
            quanta: 0xFFFF,
        }
    }
}

impl WireFrame for PauseFrame {
    fn append(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let eth = EthHeader {
            dst: self.dst,
            src: self.src,
            outer_vlan: None,
            vlan: self.vlan,
        };
        eth.append(out, ethernet::ETHERTYPE_MAC_CONTROL);
        use field::mac_control as fm;
        let mut h = [0u8; mac_control::PAUSE_LEN];
        put(&mut h, fm::OPCODE, &mac_control::OPCODE_PAUSE.to_be_bytes());
        put(&mut h, fm::PAUSE_TIME, &self.quanta.to_be_bytes());
        out.extend_from_slice(&h);
        pad_min(out, start);
    }
}

/// Already built frame bytes, to write as they are (or to wrap in ERSPAN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawFrame<'a>(pub &'a [u8]);

impl WireFrame for RawFrame<'_> {
    fn append(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.0);
    }
}

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
