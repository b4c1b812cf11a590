//! RoCE frames: the BTH and its extension headers, the GRH of RoCEv1 and
//! native InfiniBand, and the ICRC.

use std::net::Ipv6Addr;

use rocescope_common::proto::{ethernet, ib, ip, udp};
use rocescope_common::wire::{Recognition, TransportId, field};

use super::{
    EthHeader, IpAddrs, IpHeader, MIN_FRAME_LEN, WireFrame, pad_min, put, rewrite_ip_len,
    udp_checksum,
};
use crate::transport::roce::icrc;

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
