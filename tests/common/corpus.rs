//! Frames built with the synth frame builder for the live-tap tests: every
//! layer the decoders walk (VLAN, QinQ, IPv6 and its extension headers,
//! ERSPAN II/III, CNP, PFC, PAUSE, ACK/NAK/RNR NAK, RETH, atomics, DETH,
//! IETH, RD, XRC, unknown opcodes, malformed datagrams, RoCEv1's GRH, UET's
//! PDS, TSS and SES headers over UDP) and a RoCE
//! conversation with a Go-Back-N rewind for the end-to-end test.
#![allow(dead_code)]
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;

use rocescope::synth::frame::{
    Erspan, ErspanVersion, IpAddrs, PauseFrame, PfcFrame, RoceFrame, RoceVersion, VlanTag,
    WireFrame,
};
use rocescope::synth::{CaptureWrite, PcapWriter};

pub fn bytes(f: &impl WireFrame) -> Vec<u8> {
    let mut v = Vec::new();
    f.write(&mut v);
    v
}

fn roce(opcode: u8) -> RoceFrame {
    let mut f = RoceFrame::default();
    f.bth.opcode = opcode;
    f.bth.psn = 0xABCDE;
    f.bth.dest_qp = 0x1234;
    f.payload_len = 37;
    f.ext.reth_va = 0x7F00_1234_5678;
    f.ext.reth_rkey = 0xCAFE_BABE;
    f.ext.reth_len = 4096;
    f.ext.aeth_syndrome = 0x1F;
    f.ext.aeth_msn = 0x10203;
    f.ext.imm = 0xDEAD_BEEF;
    f.ext.ieth_rkey = 0x0BAD_F00D;
    f.ext.deth_qkey = 0x8001_0000;
    f.ext.deth_src_qp = 0x42;
    f.ext.atomic_va = 0x1111_2222_3333_4444;
    f.ext.atomic_rkey = 0x5555_6666;
    f.ext.atomic_swap_add = 7;
    f.ext.atomic_compare = 9;
    f.ext.atomic_orig = 0xAAAA_BBBB_CCCC_DDDD;
    f
}

fn v6() -> IpAddrs {
    IpAddrs::V6 {
        src: Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1),
        dst: Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2),
    }
}

/// Inserts IPv6 extension headers (`(protocol number, len)`, len a
/// multiple of 8; a fragment header is 8 bytes, offset 0, no M flag)
/// between the fixed header and UDP.
fn with_ipv6_ext(frame: &[u8], exts: &[(u8, usize)]) -> Vec<u8> {
    let ip = 14;
    let mut out = frame[..ip + 40].to_vec();
    let mut ext_bytes = Vec::new();
    for (i, &(kind, len)) in exts.iter().enumerate() {
        let mut h = vec![0u8; len];
        h[0] = exts.get(i + 1).map_or(17, |e| e.0);
        if kind != 44 {
            h[1] = (len / 8 - 1) as u8;
        }
        ext_bytes.extend_from_slice(&h);
    }
    if let Some(first) = exts.first() {
        out[ip + 6] = first.0;
    }
    let plen = usize::from(u16::from_be_bytes([frame[ip + 4], frame[ip + 5]])) + ext_bytes.len();
    out[ip + 4..ip + 6].copy_from_slice(&(plen as u16).to_be_bytes());
    out.extend_from_slice(&ext_bytes);
    out.extend_from_slice(&frame[ip + 40..]);
    out
}

/// A frame's bytes as they are.
struct Raw(Vec<u8>);

impl WireFrame for Raw {
    fn append(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0);
    }
}

/// Frames covering every decoder path (whole; the parity test also cuts them).
pub fn decoder_frames() -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = Vec::new();
    let mut add = |name: &str, b: Vec<u8>| v.push((name.to_string(), b));

    // Every opcode of every transport, with its extension headers.
    // IBA 1.5's FLUSH and ATOMIC WRITE (0x1C, 0x1D; RD 0x5C; XRC 0xBC,
    // 0xBD), and the reserved 0x5D and 0x3C around them.
    for opcode in (0x00u8..=0x17)
        .chain(0x1C..=0x1D)
        .chain(0x20..=0x2B)
        .chain([0x3C])
        .chain(0x40..=0x55)
        .chain(0x5C..=0x5D)
        .chain(0x64..=0x65)
        .chain(0xA0..=0xB7)
        .chain(0xBC..=0xBD)
    {
        let mut f = roce(opcode);
        f.ext.feth_sel = 1;
        f.ext.feth_plt = 1;
        if opcode & 0x1F == 0x1D {
            f.payload_len = 8;
        }
        add(&format!("opcode {opcode:#04x}"), bytes(&f));
    }
    // DC CONNECT without its DCCETH (SE set).
    let mut connect = roce(0x55);
    connect.bth.se = true;
    add("dc connect, se", bytes(&connect));
    add("unknown opcode 0xff", bytes(&roce(0xFF)));
    add("cnp", bytes(&RoceFrame::cnp(0x118)));
    let mut nak = roce(0x11);
    nak.ext.aeth_syndrome = 0x60;
    add("nak", bytes(&nak));
    let mut rnr = roce(0x11);
    rnr.ext.aeth_syndrome = 0x2E;
    add("rnr nak", bytes(&rnr));
    let mut bits = roce(0x0A);
    bits.bth.se = true;
    bits.bth.migreq = true;
    bits.bth.fecn = true;
    bits.bth.becn = true;
    bits.bth.ack_req = true;
    bits.bth.tver = 0xF;
    bits.bth.pad_count = Some(3);
    bits.ip.ecn = 3;
    bits.ip.dscp = 46;
    add("bth bits, CE", bytes(&bits));

    let mut vlan = roce(0x0A);
    vlan.eth.vlan = Some(VlanTag::dot1q(100, 3));
    add("vlan", bytes(&vlan));
    let mut qinq = roce(0x06);
    qinq.eth.outer_vlan = Some(VlanTag::dot1ad(200, 1));
    qinq.eth.vlan = Some(VlanTag::dot1q(300, 5));
    add("qinq", bytes(&qinq));

    let mut ipv6 = roce(0x0C);
    ipv6.ip.addrs = v6();
    ipv6.ip.flow_label = 0xABCDE;
    let ipv6_bytes = bytes(&ipv6);
    add("ipv6", ipv6_bytes.clone());
    add("ipv6 hop-by-hop", with_ipv6_ext(&ipv6_bytes, &[(0, 8)]));
    add(
        "ipv6 hbh+routing+dest",
        with_ipv6_ext(&ipv6_bytes, &[(0, 16), (43, 8), (60, 8)]),
    );
    add("ipv6 fragment", with_ipv6_ext(&ipv6_bytes, &[(44, 8)]));
    add(
        "ipv6 4 ext",
        with_ipv6_ext(&ipv6_bytes, &[(0, 8), (60, 8), (43, 8), (60, 8)]),
    );
    add(
        "ipv6 5 ext",
        with_ipv6_ext(&ipv6_bytes, &[(0, 8), (60, 8), (43, 8), (60, 8), (60, 8)]),
    );
    let mut ipv6_cnp = RoceFrame::cnp(7);
    ipv6_cnp.ip.addrs = v6();
    ipv6_cnp.eth.vlan = Some(VlanTag::dot1q(5, 6));
    add("ipv6 cnp vlan", bytes(&ipv6_cnp));

    let mut pfc = PfcFrame::single(3, 0xFFFF);
    pfc.quanta = [1, 2, 3, 0xFFFF, 5, 6, 7, 8];
    pfc.enable = 0xA9;
    add("pfc", bytes(&pfc));
    let mut pfc_vlan = PfcFrame::single(5, 0);
    pfc_vlan.vlan = Some(VlanTag::dot1q(0, 7));
    add("pfc xon vlan", bytes(&pfc_vlan));
    add("pause", bytes(&PauseFrame::default()));

    let mut short = roce(0x04);
    short.udp_truncate = Some(20);
    add("malformed (udp 20)", bytes(&short));
    let mut cut_udp = roce(0x0A);
    cut_udp.udp_truncate = Some(30);
    add("udp length cuts the reth", bytes(&cut_udp));
    let mut other_port = roce(0x04);
    other_port.udp_dport = 4790;
    add("udp 4790", bytes(&other_port));
    let mut from_4791 = roce(0x04);
    from_4791.udp_sport = 4791;
    from_4791.udp_dport = 5000;
    add("udp from 4791", bytes(&from_4791));
    let mut frag = roce(0x04);
    frag.ip.dont_fragment = false;
    let mut frag_bytes = bytes(&frag);
    frag_bytes[14 + 6] = 0x20; // MF, offset 0: first fragment
    add("ipv4 first fragment", frag_bytes.clone());
    frag_bytes[14 + 7] = 0x10; // offset 16: not first
    add("ipv4 later fragment", frag_bytes);
    // IPv4 with options (IHL 6): rebuild the header by hand.
    let plain = bytes(&roce(0x11));
    let mut opts = plain[..14 + 20].to_vec();
    opts[14] = 0x46;
    let total = u16::from_be_bytes([opts[16], opts[17]]) + 4;
    opts[16..18].copy_from_slice(&total.to_be_bytes());
    opts.extend_from_slice(&[1, 1, 1, 0]);
    opts.extend_from_slice(&plain[14 + 20..]);
    add("ipv4 options", opts);

    for (name, version) in [
        ("erspan ii", ErspanVersion::II),
        ("erspan iii", ErspanVersion::III),
    ] {
        let e = Erspan {
            version,
            ..Erspan::default()
        };
        let mut out = Vec::new();
        e.write(&vlan, &mut out);
        add(&format!("{name} vlan roce"), out);
        let mut out = Vec::new();
        e.write(&pfc, &mut out);
        add(&format!("{name} pfc"), out);
        let mut out = Vec::new();
        e.write(&ipv6_cnp, &mut out);
        add(&format!("{name} ipv6 cnp"), out);
    }
    // RoCEv1: the GRH (IPv4-mapped and IPv6 GIDs), every transport's
    // opcodes after it, a CNP, tagged, inside ERSPAN; a GRH naming another
    // next header, a payload length too short for a BTH, a bad IPVer.
    for opcode in [
        0x04u8, 0x0A, 0x0C, 0x11, 0x12, 0x13, 0x24, 0x4A, 0x64, 0x65, 0xAA, 0xFF,
    ] {
        let mut f = roce(opcode);
        f.version = RoceVersion::V1;
        add(&format!("rocev1 opcode {opcode:#04x}"), bytes(&f));
    }
    let mut v1 = roce(0x0A);
    v1.version = RoceVersion::V1;
    v1.ip.addrs = v6();
    v1.ip.flow_label = 0x12345;
    v1.eth.vlan = Some(VlanTag::dot1q(42, 5));
    let v1_bytes = bytes(&v1);
    add("rocev1 ipv6 gid vlan", v1_bytes.clone());
    let mut v1_cnp = RoceFrame::cnp(0x99);
    v1_cnp.version = RoceVersion::V1;
    add("rocev1 cnp", bytes(&v1_cnp));
    let mut out = Vec::new();
    Erspan::default().write(&v1, &mut out);
    add("erspan ii rocev1", out);
    // GRH at 18 (one tag): NxtHdr at +6, PayLen at +4, IPVer at +0.
    let mut other = v1_bytes.clone();
    other[18 + 6] = 0x3B;
    add("rocev1 grh next header 0x3b", other);
    let mut short = v1_bytes.clone();
    short[18 + 4..18 + 6].copy_from_slice(&15u16.to_be_bytes());
    add("rocev1 grh paylen 15", short);
    let mut long = v1_bytes.clone();
    long[18 + 4..18 + 6].copy_from_slice(&0xFFFFu16.to_be_bytes());
    add("rocev1 grh paylen past the frame", long);
    let mut ipver = v1_bytes;
    ipver[18] = 0x40 | (ipver[18] & 0x0F);
    add("rocev1 grh ipver 4", ipver);

    // Four tags decode; five are too many.
    let mut tags4 = bytes(&qinq);
    let tag = [0x81, 0x00, 0x00, 0x07];
    tags4.splice(12..12, tag.iter().chain(tag.iter()).copied());
    add("4 vlan tags", tags4.clone());
    tags4.splice(12..12, tag.iter().copied());
    add("5 vlan tags", tags4);
    let mut arp = vec![0xFF; 6];
    arp.extend_from_slice(&[2, 0, 0, 0, 0, 9, 0x08, 0x06]);
    arp.resize(60, 0);
    add("arp", arp);

    // UET over UDP 4793: every PDS type and SES header (super::uet), an
    // undefined PDS type and next header, a UDP length too short for the
    // SES header, and one in ERSPAN.
    for u in super::uet::vectors() {
        add(
            &format!("uet {}", u.name),
            super::uet::udp_frame(4793, &u.bytes),
        );
    }
    let mut rud = super::uet::vectors().remove(0).bytes;
    let whole = rud.clone();
    rud[0] = 15 << 3;
    add("uet pds type 15", super::uet::udp_frame(4793, &rud));
    rud[0] = 2 << 3 | 3;
    rud[1] = 0x80;
    add("uet next header 7", super::uet::udp_frame(4793, &rud));
    let mut short = super::uet::udp_frame(4793, &whole[..30]);
    short.extend_from_slice(&whole[30..]);
    add("uet udp length cuts the ses", short);
    let mut out = Vec::new();
    Erspan::default().write(&Raw(super::uet::udp_frame(4793, &whole)), &mut out);
    add("erspan ii uet", out);
    v
}

/// A RoCE conversation for the end-to-end test: RDMA WRITEs from QP 0x100
/// to QP 0x200 with ACKs, a NAK and a Go-Back-N rewind, a timeout rewind,
/// CE marks and a CNP, PFC pause/resume and a PAUSE — with a VLAN.
pub fn conversation() -> Vec<Vec<u8>> {
    let a = Ipv4Addr::new(192, 168, 1, 1);
    let b = Ipv4Addr::new(192, 168, 1, 2);
    let tag = Some(VlanTag::dot1q(10, 3));
    let req = |psn: u32, ce: bool| {
        let mut f = RoceFrame::default();
        f.eth.vlan = tag;
        f.ip.addrs = IpAddrs::V4 { src: a, dst: b };
        f.ip.ecn = if ce { 3 } else { 2 };
        f.udp_sport = 0xC123;
        f.bth.opcode = 0x0A; // RC WRITE Only
        f.bth.dest_qp = 0x200;
        f.bth.psn = psn;
        f.ext.reth_len = 1024;
        f.payload_len = 1024;
        f
    };
    let resp = |psn: u32, syndrome: u8| {
        let mut f = RoceFrame::default();
        f.eth.vlan = tag;
        f.ip.addrs = IpAddrs::V4 { src: b, dst: a };
        f.udp_sport = 0xC456;
        f.bth.opcode = 0x11;
        f.bth.dest_qp = 0x100;
        f.bth.psn = psn;
        f.ext.aeth_syndrome = syndrome;
        f
    };
    let mut frames = Vec::new();
    for psn in 0..20 {
        frames.push(bytes(&req(psn, psn % 7 == 3)));
        if psn % 4 == 3 {
            frames.push(bytes(&resp(psn, 0x1F)));
        }
    }
    // PSN 20 lost: 21, 22 arrive, a NAK names 20, the sender goes back.
    frames.push(bytes(&req(21, false)));
    frames.push(bytes(&req(22, false)));
    frames.push(bytes(&resp(20, 0x60)));
    for psn in 20..26 {
        frames.push(bytes(&req(psn, false)));
    }
    frames.push(bytes(&resp(25, 0x1F)));
    let mut cnp = RoceFrame::cnp(0x100);
    cnp.eth.vlan = tag;
    cnp.ip.addrs = IpAddrs::V4 { src: b, dst: a };
    frames.push(bytes(&cnp));
    frames.push(bytes(&PfcFrame::single(3, 0xFFFF)));
    for psn in 26..30 {
        frames.push(bytes(&req(psn, false)));
    }
    frames.push(bytes(&PfcFrame::single(3, 0)));
    // Timeout rewind: 28, 29 again without a NAK.
    frames.push(bytes(&req(28, false)));
    frames.push(bytes(&req(29, false)));
    frames.push(bytes(&resp(29, 0x1F)));
    frames.push(bytes(&PauseFrame::default()));
    frames
}

/// Writes `frames` as a pcap, 10 µs apart.
pub fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut w = PcapWriter::create(path, 1, 0).unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.write_frame(0, 1_700_000_000_000_000_000 + i as u64 * 10_000, f)
            .unwrap();
    }
    w.finish().unwrap();
}
