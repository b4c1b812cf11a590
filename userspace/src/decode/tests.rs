//! Whole-frame tests of [`decode`](super::decode): real hardware bytes, frames
//! built here layer by layer, snaplen cuts, and a real capture.
use super::*;
use rocescope_common::proto::linktype::{
    ETHERNET, INFINIBAND, IPV4, IPV6, LINUX_SLL, LINUX_SLL2, LOOP, NULL, RAW, RAW_DLT, RAW_OPENBSD,
};

const DST_MAC: [u8; 6] = [0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2];
const SRC_MAC: [u8; 6] = [0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32];

/// The CNP in tests/data/connectx4lx-cnp.pcap (ConnectX-4 Lx), the
/// whole Ethernet frame (74 bytes at file offset 0x120).
const CX4_CNP: [u8; 74] = [
    0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2, 0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32, 0x08,
    0x00, // Ethernet
    0x45, 0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61, 0x0a, 0x00, 0x11, 0x01,
    0x0a, 0x00, 0x12, 0x01, // IPv4
    0x00, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00, // UDP 0 -> 4791, length 40
    0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00, 0x00, 0x00, // BTH
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // reserved
    0x82, 0xfd, 0x00, 0x2a, // ICRC
];
const ETH_LEN: usize = 14;
const IP_AT: usize = ETH_LEN;
const UDP_AT: usize = IP_AT + 20;
const BTH_AT: usize = UDP_AT + 8;

/// `::ffff:a.b.c.d`, as records hold IPv4 addresses.
fn ipv4_mapped(a: [u8; 4]) -> [u8; 16] {
    std::net::Ipv4Addr::from(a).to_ipv6_mapped().octets()
}

fn dec(frame: &[u8]) -> PacketRecord {
    decode(ETHERNET, frame, frame.len() as u32)
}

fn eth(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&DST_MAC);
    f.extend_from_slice(&SRC_MAC);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// IPv4 (TOS 0x6A: DSCP 26, ECN 2) carrying `protocol`.
fn ipv4(protocol: u8, l4: &[u8]) -> Vec<u8> {
    let total = (20 + l4.len()) as u16;
    let mut p = vec![0x45, 0x6A];
    p.extend_from_slice(&total.to_be_bytes());
    p.extend_from_slice(&[0x00, 0x01, 0x40, 0x00, 0x40, protocol, 0x00, 0x00]);
    p.extend_from_slice(&[192, 168, 70, 4, 192, 168, 70, 6]);
    p.extend_from_slice(l4);
    p
}

/// IPv6 (traffic class 0xBB: DSCP 46, ECN 3) carrying `next_header`.
fn ipv6(next_header: u8, l4: &[u8]) -> Vec<u8> {
    let mut p = vec![0x6B, 0xB1, 0x23, 0x45];
    p.extend_from_slice(&(l4.len() as u16).to_be_bytes());
    p.extend_from_slice(&[next_header, 64]);
    p.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x11]);
    p.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x22]);
    p.extend_from_slice(l4);
    p
}

/// UDP to 4791 with `bth`, extension headers, payload, pad and a zero ICRC.
fn roce_udp(sport: u16, bth: [u8; 12], ext: &[u8], payload: &[u8]) -> Vec<u8> {
    let pad = usize::from((bth[1] >> 4) & 3);
    let len = (8 + 12 + ext.len() + payload.len() + pad + 4) as u16;
    let mut u = Vec::new();
    u.extend_from_slice(&sport.to_be_bytes());
    u.extend_from_slice(&4791u16.to_be_bytes());
    u.extend_from_slice(&len.to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(&bth);
    u.extend_from_slice(ext);
    u.extend_from_slice(payload);
    u.extend(std::iter::repeat_n(0, pad));
    u.extend_from_slice(&[0; 4]);
    u
}

/// Writes the right ICRC into the last four bytes of an IP packet.
fn seal(mut ip_packet: Vec<u8>) -> Vec<u8> {
    let icrc = icrc::compute(&ip_packet).unwrap();
    let n = ip_packet.len();
    ip_packet[n - 4..].copy_from_slice(&icrc.to_le_bytes());
    ip_packet
}

fn roce_v4(bth: [u8; 12], ext: &[u8], payload: &[u8]) -> Vec<u8> {
    eth(
        0x0800,
        &seal(ipv4(17, &roce_udp(0xC001, bth, ext, payload))),
    )
}

/// BTH of `opcode`, dest QP 0x000ABC, PSN 0x123456, P_Key 0xFFFF.
fn bth(opcode: u8) -> [u8; 12] {
    [
        opcode, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x0A, 0xBC, 0x80, 0x12, 0x34, 0x56,
    ]
}

fn assert_other(r: &PacketRecord, frame: &[u8]) {
    let canonical = PacketRecord {
        frame_len: frame.len() as u32,
        cap_len: frame.len() as u32,
        ..PacketRecord::default()
    };
    assert_eq!(*r, canonical);
}

#[test]
fn hardware_cnp() {
    let r = dec(&CX4_CNP);
    assert_eq!(r.kind(), Kind::Cnp);
    assert_eq!((r.frame_len, r.cap_len), (74, 74));
    assert_eq!((r.frame, r.ts_ns, r.iface), (0, 0, 0));
    assert_eq!(r.dst_mac, DST_MAC);
    assert_eq!(r.src_mac, SRC_MAC);
    assert!(r.has(flags::HAS_IPV4) && !r.has(flags::HAS_IPV6) && !r.has(flags::HAS_VLAN));
    assert_eq!(r.src_ip, ipv4_mapped([10, 0, 17, 1]));
    assert_eq!(r.dst_ip, ipv4_mapped([10, 0, 18, 1]));
    assert_eq!((r.dscp, r.ecn), (48, 2));
    assert!(r.has(flags::HAS_UDP));
    assert_eq!(r.udp_sport, 0);
    assert!(r.has(flags::HAS_BTH));
    assert_eq!(r.roce().opcode, 0x81);
    assert_eq!(r.roce().pkey, 0xFFFF);
    assert!(r.has(flags::BECN) && !r.has(flags::FECN));
    assert!(!r.has(flags::SE) && !r.has(flags::MIGREQ) && !r.has(flags::ACK_REQ));
    assert_eq!((r.roce().pad_count, r.roce().tver), (0, 0));
    assert_eq!(r.roce().dest_qp, 0x118);
    assert_eq!(r.roce().psn, 0);
    assert!(r.has(flags::HAS_PAYLOAD_LEN));
    assert_eq!(r.payload_len, 16); // the CNP's reserved bytes
    assert_eq!(r.roce().icrc, 0x2a00_fd82);
    assert_eq!(r.icrc_ok(), Some(true));
    assert!(!r.has(flags::ERSPAN));
}

#[test]
fn every_snaplen_cut_of_the_cnp() {
    for cut in 0..=CX4_CNP.len() {
        let r = decode(ETHERNET, &CX4_CNP[..cut], 74);
        assert_eq!(r.frame_len, 74, "cut {cut}");
        assert_eq!(r.cap_len, cut as u32, "cut {cut}");
        if cut < BTH_AT {
            // Before a whole UDP header the port is unknown: not RoCE.
            assert_eq!(r.kind(), Kind::Other, "cut {cut}");
            assert_eq!(r.flags, 0, "cut {cut}");
            continue;
        }
        assert!(r.has(flags::HAS_IPV4 | flags::HAS_UDP), "cut {cut}");
        assert_eq!(r.src_mac, SRC_MAC);
        assert_eq!((r.dscp, r.ecn), (48, 2));
        if cut < BTH_AT + 12 {
            assert_eq!(r.kind(), Kind::Roce, "cut {cut}: opcode unknown");
            assert!(!r.has(flags::HAS_BTH) && !r.has(flags::HAS_PAYLOAD_LEN));
        } else {
            assert_eq!(r.kind(), Kind::Cnp, "cut {cut}");
            assert!(r.has(flags::HAS_BTH | flags::BECN));
            assert_eq!(r.roce().dest_qp, 0x118);
            assert!(r.has(flags::HAS_PAYLOAD_LEN));
            assert_eq!(r.payload_len, 16);
        }
        let whole = cut == CX4_CNP.len();
        assert_eq!(r.icrc_ok(), whole.then_some(true), "cut {cut}");
    }
}

#[test]
fn padding_and_fcs_after_the_datagram_are_ignored() {
    let mut f = CX4_CNP.to_vec();
    f.extend_from_slice(&[0; 6]); // padding
    f.extend_from_slice(&[0xDE, 0xAD, 0xBE, 0xEF]); // FCS
    let r = dec(&f);
    assert_eq!(r.kind(), Kind::Cnp);
    assert_eq!(r.icrc_ok(), Some(true));
    assert_eq!(r.payload_len, 16);
    assert_eq!(r.cap_len, 84);
}

#[test]
fn corrupted_icrc_is_reported() {
    let mut f = CX4_CNP;
    f[BTH_AT + 7] ^= 1; // dest QP bit: covered by the ICRC
    let r = dec(&f);
    assert_eq!(r.icrc_ok(), Some(false));
    assert_eq!(r.roce().icrc, 0x2a00_fd82);
    f[BTH_AT + 7] ^= 1;
    f[IP_AT + 1] = 0xC3; // ECN rewritten to CE by a switch: masked
    let r = dec(&f);
    assert_eq!(r.icrc_ok(), Some(true));
    assert!(r.is_ce());
}

#[test]
fn under_length_udp_is_malformed() {
    for udp_len in [0u16, 8, 20, 23] {
        let mut f = CX4_CNP;
        f[UDP_AT + 4..UDP_AT + 6].copy_from_slice(&udp_len.to_be_bytes());
        let r = dec(&f);
        assert_eq!(r.kind(), Kind::Malformed, "udp length {udp_len}");
        assert!(r.has(flags::HAS_IPV4 | flags::HAS_UDP));
        assert_eq!(r.src_ip, ipv4_mapped([10, 0, 17, 1]));
        assert_eq!(r.dst_mac, DST_MAC);
        assert!(!r.has(flags::HAS_BTH) && !r.has(flags::HAS_PAYLOAD_LEN));
        assert_eq!(r.icrc_ok(), None);
    }
    // An IP total length too short for BTH + ICRC bounds the datagram too.
    let mut f = CX4_CNP;
    f[IP_AT + 3] = 20 + 8 + 12;
    assert_eq!(dec(&f).kind(), Kind::Malformed);
}

#[test]
fn only_the_destination_port_makes_roce() {
    let mut f = CX4_CNP;
    f[UDP_AT..UDP_AT + 2].copy_from_slice(&69u16.to_be_bytes()); // TFTP as a source port
    let r = dec(&seal_frame(&f));
    assert_eq!(r.kind(), Kind::Cnp);
    assert_eq!(r.udp_sport, 69);
    assert_eq!(r.icrc_ok(), Some(true));

    // From 4791 to elsewhere: not RoCE, and the record is canonical Other.
    let mut f = CX4_CNP;
    f[UDP_AT..UDP_AT + 2].copy_from_slice(&4791u16.to_be_bytes());
    f[UDP_AT + 2..UDP_AT + 4].copy_from_slice(&4792u16.to_be_bytes());
    assert_other(&dec(&f), &f);
}

/// Re-seals the ICRC of an IPv4 Ethernet frame.
fn seal_frame(f: &[u8]) -> Vec<u8> {
    let mut out = f[..ETH_LEN].to_vec();
    out.extend(seal(f[ETH_LEN..].to_vec()));
    out
}

#[test]
fn rdma_write_only_with_immediate() {
    let reth = [
        0x00, 0x00, 0x7F, 0x00, 0x00, 0x00, 0x10, 0x00, // VA
        0x00, 0x00, 0x12, 0x34, // R_Key
        0x00, 0x00, 0x00, 0x05, // DMA length
    ];
    let imm = [0xDE, 0xAD, 0xBE, 0xEF];
    let mut b = bth(0x0B);
    b[1] = 0xB0; // SE, pad 3
    let f = roce_v4(b, &[&reth[..], &imm[..]].concat(), &[1, 2, 3, 4, 5]);
    let r = dec(&f);
    assert_eq!(r.kind(), Kind::Roce);
    assert_eq!(r.roce().opcode, 0x0B);
    assert!(r.has(flags::SE | flags::ACK_REQ));
    assert_eq!(r.roce().pad_count, 3);
    assert_eq!((r.roce().dest_qp, r.roce().psn), (0xABC, 0x12_3456));
    assert!(r.has(flags::HAS_RETH | flags::HAS_IMMDT));
    assert_eq!(
        (r.roce().reth_va, r.roce().reth_rkey, r.roce().reth_len),
        (0x0000_7F00_0000_1000, 0x1234, 5)
    );
    assert_eq!(r.roce().imm, 0xDEAD_BEEF);
    assert_eq!(r.payload_len, 5);
    assert_eq!(r.udp_sport, 0xC001);
    assert_eq!((r.dscp, r.ecn), (26, 2));
    assert_eq!(r.icrc_ok(), Some(true));
    assert!(!r.has(flags::HAS_AETH | flags::HAS_DETH | flags::HAS_IETH));
}

#[test]
fn acknowledge_nak_and_rnr() {
    for (syndrome, msn) in [(0x1F, 7), (0x60, 0x00AB_CDEF), (0x2E, 0)] {
        let aeth = [syndrome, (msn >> 16) as u8, (msn >> 8) as u8, msn as u8];
        let r = dec(&roce_v4(bth(0x11), &aeth, &[]));
        assert_eq!(r.kind(), Kind::Roce);
        assert!(r.has(flags::HAS_AETH));
        assert_eq!((r.roce().aeth_syndrome, r.roce().aeth_msn), (syndrome, msn));
        assert_eq!(r.payload_len, 0);
        assert_eq!(r.icrc_ok(), Some(true));
    }
}

#[test]
fn atomics() {
    let mut ateth = vec![
        0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0xAA, 0xBB, 0xCC, 0xDD,
    ];
    ateth.extend_from_slice(&1u64.to_be_bytes()); // swap
    ateth.extend_from_slice(&2u64.to_be_bytes()); // compare
    let r = dec(&roce_v4(bth(0x13), &ateth, &[]));
    assert!(r.has(flags::HAS_ATOMIC_ETH));
    assert_eq!(r.roce().atomic_va, 0x1122_3344_5566_7788);
    assert_eq!(r.roce().atomic_rkey, 0xAABB_CCDD);
    assert_eq!((r.roce().atomic_swap_add, r.roce().atomic_compare), (1, 2));
    assert_eq!(r.payload_len, 0);

    let ack = [0x00, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0x01, 0x00];
    let r = dec(&roce_v4(bth(0x12), &ack, &[]));
    assert!(r.has(flags::HAS_AETH | flags::HAS_ATOMIC_ACK_ETH));
    assert_eq!((r.roce().aeth_syndrome, r.roce().aeth_msn), (0, 1));
    assert_eq!(r.roce().atomic_orig, 0x100);
    assert_eq!(r.icrc_ok(), Some(true));
}

#[test]
fn ud_send_with_deth_and_immediate() {
    let ext = [
        0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x2A,
    ];
    let r = dec(&roce_v4(bth(0x65), &ext, &[0u8; 256]));
    assert!(r.has(flags::HAS_DETH | flags::HAS_IMMDT));
    assert_eq!((r.roce().deth_qkey, r.roce().deth_src_qp), (0x8001_0000, 1));
    assert_eq!(r.roce().imm, 42);
    assert_eq!(r.payload_len, 256);
}

#[test]
fn send_with_invalidate_and_xrc() {
    let r = dec(&roce_v4(bth(0x17), &[0x00, 0x00, 0x10, 0x01], &[9; 8]));
    assert!(r.has(flags::HAS_IETH));
    assert_eq!((r.roce().ieth_rkey, r.payload_len), (0x1001, 8));

    // XRC RDMA WRITE Only: XRCETH (no record field) then RETH.
    let mut ext = vec![0x00, 0x00, 0x00, 0x07];
    ext.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0x99, 0, 0, 0, 4]);
    let r = dec(&roce_v4(bth(0xAA), &ext, &[1, 2, 3, 4]));
    assert!(r.has(flags::HAS_RETH));
    assert_eq!(
        (r.roce().reth_va, r.roce().reth_rkey, r.roce().reth_len),
        (0x40, 0x99, 4)
    );
    assert_eq!(r.payload_len, 4);
}

/// IBA 1.5's FLUSH (RC 0x1C, RD 0x5C, XRC 0xBC: FETH, then RETH) and
/// ATOMIC WRITE (RC 0x1D, XRC 0xBD: RETH, then 8 bytes of data), written
/// byte by byte; RD has no ATOMIC WRITE and UC neither (0x5D, 0x3D
/// reserved). tshark 4.0 does not know them: it shows `Opcode: Unknown
/// (28)` and the rest as "Unknown/Vendor Specific Data".
#[test]
fn ibta_1_5_flush_and_atomic_write() {
    // FETH: selectivity level 1, placement type 1 (bits 5–4, 3–0 of byte 3).
    let feth = [0x00, 0x00, 0x00, 0x11];
    let reth = [0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0x99, 0, 0, 0x10, 0];
    let xrceth = [0x00, 0x00, 0x00, 0x07];
    let rd = [
        0, 0, 0, 0, 0, 0, 0, 0, // mlx5 DC header
        0, 0, 0, 5, // RDETH
        0x80, 0x01, 0, 0, 0, 0, 0, 0x22, // DETH
    ];
    let cat = |parts: &[&[u8]]| parts.concat();
    for (opcode, ext, payload) in [
        (0x1C, cat(&[&feth, &reth]), 0),
        (0xBC, cat(&[&xrceth, &feth, &reth]), 0),
        (0x5C, cat(&[&rd, &feth, &reth]), 0),
        (0x1D, reth.to_vec(), 8),
        (0xBD, cat(&[&xrceth, &reth]), 8),
    ] {
        let r = dec(&roce_v4(bth(opcode), &ext, &[0xA5; 8][..payload]));
        assert_eq!(r.kind(), Kind::Roce, "{opcode:#x}");
        assert!(
            r.has(flags::HAS_RETH | flags::HAS_PAYLOAD_LEN),
            "{opcode:#x}"
        );
        assert_eq!(
            (
                r.roce().reth_va,
                r.roce().reth_rkey,
                r.roce().reth_len,
                r.payload_len
            ),
            (0x40, 0x99, 4096, payload as u32),
            "{opcode:#x}"
        );
        assert_eq!(r.icrc_ok(), Some(true), "{opcode:#x}");
        assert!(
            rocescope_common::proto::ib::is_request(opcode),
            "{opcode:#x}"
        );
    }
    let r = dec(&roce_v4(bth(0x5C), &rd, &[]));
    assert_eq!(r.roce().deth_src_qp, 0x22);
    for reserved in [0x5D, 0x3C, 0x3D] {
        let r = dec(&roce_v4(bth(reserved), &reth, &[0; 8]));
        assert!(
            !r.has(flags::HAS_PAYLOAD_LEN | flags::HAS_RETH),
            "{reserved:#x}"
        );
    }
    // The builder writes the FETH where the walk reads it.
    use crate::synth::frame::{RoceFrame, WireFrame};
    let mut f = RoceFrame::default();
    f.bth.opcode = 0x1C;
    f.ext.feth_sel = 1;
    f.ext.feth_plt = 1;
    f.ext.reth_va = 0x40;
    f.ext.reth_rkey = 0x99;
    f.ext.reth_len = 4096;
    f.payload_len = 0;
    let mut b = Vec::new();
    f.write(&mut b);
    let at = 14 + 20 + 8 + 12;
    assert_eq!(b[at..at + 20], cat(&[&feth, &reth])[..]);
    assert_eq!(dec(&b).roce().reth_len, 4096);
}

#[test]
fn unknown_opcode_decodes_the_bth_only() {
    let f = roce_v4(bth(0x15), &[0xFF; 16], &[]);
    let r = dec(&f);
    assert_eq!(r.kind(), Kind::Roce);
    assert!(r.has(flags::HAS_BTH));
    assert_eq!(r.roce().opcode, 0x15);
    assert!(!r.has(flags::HAS_PAYLOAD_LEN) && !r.has(flags::HAS_RETH | flags::HAS_AETH));
    assert_eq!(r.icrc_ok(), Some(true));
}

#[test]
fn bth_with_every_bit_set() {
    let r = dec(&roce_v4([0xFF; 12], &[], &[0; 8]));
    assert_eq!(r.kind(), Kind::Roce);
    assert_eq!(r.roce().opcode, 0xFF);
    for f in [
        flags::SE,
        flags::MIGREQ,
        flags::FECN,
        flags::BECN,
        flags::ACK_REQ,
    ] {
        assert!(r.has(f));
    }
    assert_eq!(
        (r.roce().pad_count, r.roce().tver, r.roce().pkey),
        (3, 15, 0xFFFF)
    );
    assert_eq!((r.roce().dest_qp, r.roce().psn), (0xFF_FFFF, 0xFF_FFFF));
}

#[test]
fn extension_headers_cut_by_the_datagram_or_the_capture() {
    // An ACK whose UDP length leaves no room for the AETH: the ICRC is not
    // read as an AETH, payload_len saturates at 0.
    let mut u = roce_udp(1, bth(0x11), &[], &[]);
    let f = eth(0x0800, &seal(ipv4(17, &u)));
    let r = dec(&f);
    assert_eq!(r.kind(), Kind::Roce);
    assert!(!r.has(flags::HAS_AETH));
    assert!(r.has(flags::HAS_PAYLOAD_LEN));
    assert_eq!(r.payload_len, 0);
    assert_eq!(r.icrc_ok(), Some(true));

    // WRITE Only with immediate cut inside ImmDt: RETH kept, ImmDt not,
    // payload_len still from the UDP length.
    u = roce_udp(1, bth(0x0B), &[0x5A; 20], &[0; 100]);
    let f = eth(0x0800, &seal(ipv4(17, &u)));
    let cut = BTH_AT + 12 + 16 + 2;
    let r = decode(ETHERNET, &f[..cut], f.len() as u32);
    assert!(r.has(flags::HAS_RETH) && !r.has(flags::HAS_IMMDT));
    assert_eq!(r.roce().reth_len, 0x5A5A_5A5A);
    assert_eq!(r.payload_len, 100);
    assert_eq!(r.icrc_ok(), None);
    assert_eq!((r.frame_len, r.cap_len), (f.len() as u32, cut as u32));
}

#[test]
fn vlan_tags() {
    let ip = CX4_CNP[ETH_LEN..].to_vec();
    // One 802.1Q tag, PCP 3, VID 200.
    let mut one = vec![0x60, 0xC8, 0x08, 0x00];
    one.extend_from_slice(&ip);
    let r = dec(&eth(0x8100, &one));
    assert_eq!(r.kind(), Kind::Cnp);
    assert!(r.has(flags::HAS_VLAN) && !r.has(flags::HAS_OUTER_VLAN));
    assert_eq!((r.vlan, r.pcp, r.outer_vlan), (200, 3, 0));
    assert_eq!(r.icrc_ok(), Some(true));

    // QinQ: 802.1ad VID 100 PCP 1, then 802.1Q VID 200 PCP 3.
    let mut two = vec![0x20, 0x64, 0x81, 0x00];
    two.extend_from_slice(&one);
    let r = dec(&eth(0x88A8, &two));
    assert_eq!(r.kind(), Kind::Cnp);
    assert!(r.has(flags::HAS_VLAN | flags::HAS_OUTER_VLAN));
    assert_eq!((r.vlan, r.pcp, r.outer_vlan), (200, 3, 100));

    // Pre-standard 0x9100 outer tag, three tags.
    let mut three = vec![0x00, 0x0A, 0x88, 0xA8];
    three.extend_from_slice(&two);
    let r = dec(&eth(0x9100, &three));
    assert_eq!((r.vlan, r.pcp, r.outer_vlan), (200, 3, 10));

    // Five tags: more than MAX_VLAN_TAGS.
    let mut five = vec![0x00, 0x01, 0x81, 0x00, 0x00, 0x02, 0x91, 0x00];
    five.extend_from_slice(&three);
    let f = eth(0x8100, &five);
    assert_other(&dec(&f), &f);

    // Cut inside a tag.
    let f = eth(0x88A8, &two);
    assert_eq!(decode(ETHERNET, &f[..16], 100).kind(), Kind::Other);
}

#[test]
fn ipv6_roce() {
    let u = roce_udp(0xD00D, bth(0x04), &[], &[7; 64]);
    let f = eth(0x86DD, &seal(ipv6(17, &u)));
    let r = dec(&f);
    assert_eq!(r.kind(), Kind::Roce);
    assert!(r.has(flags::HAS_IPV6) && !r.has(flags::HAS_IPV4));
    assert_eq!(r.src_ip[0], 0xfd);
    assert_eq!(r.src_ip[15], 0x11);
    assert_eq!(r.dst_ip[15], 0x22);
    assert_eq!((r.dscp, r.ecn), (46, 3));
    assert!(r.is_ce());
    assert_eq!(r.udp_sport, 0xD00D);
    assert_eq!(r.payload_len, 64);
    assert_eq!(r.icrc_ok(), Some(true));

    // A hop-by-hop header before UDP: stepped over, ICRC not checked.
    let mut l4 = vec![17, 0, 1, 4, 0, 0, 0, 0]; // next UDP, 8 bytes, PadN
    l4.extend_from_slice(&u);
    let f = eth(0x86DD, &ipv6(0, &l4));
    let r = dec(&f);
    assert_eq!(r.kind(), Kind::Roce);
    assert_eq!(r.payload_len, 64);
    assert_eq!(r.icrc_ok(), None);

    // A non-first fragment: not decodable.
    let mut l4 = vec![17, 0, 0x00, 0x08, 0, 0, 0, 1]; // offset 1
    l4.extend_from_slice(&u);
    let f = eth(0x86DD, &ipv6(44, &l4));
    assert_other(&dec(&f), &f);

    // A first fragment: headers decoded, ICRC unknown.
    let mut l4 = vec![17, 0, 0x00, 0x01, 0, 0, 0, 1]; // offset 0, M
    l4.extend_from_slice(&u[..40]);
    let r = dec(&eth(0x86DD, &ipv6(44, &l4)));
    assert_eq!(r.kind(), Kind::Roce);
    assert_eq!(r.payload_len, 64);
    assert_eq!(r.icrc_ok(), None);

    // Ethertype IPv6, version 4 inside: not believed.
    let mut bad = seal(ipv6(17, &u));
    bad[0] = 0x4B;
    let f = eth(0x86DD, &bad);
    assert_other(&dec(&f), &f);
}

#[test]
fn ipv4_options_and_fragments() {
    // IHL 6: a 4-byte option; the ICRC covers it.
    let u = roce_udp(5, bth(0x04), &[], &[1; 10]);
    let mut p = ipv4(17, &u);
    p[0] = 0x46;
    p.splice(20..20, [0x01, 0x01, 0x01, 0x00]);
    p[3] += 4;
    let r = dec(&eth(0x0800, &seal(p.clone())));
    assert_eq!(r.kind(), Kind::Roce);
    assert_eq!(r.payload_len, 10);
    assert_eq!(r.icrc_ok(), Some(true));

    // First fragment (MF): decoded as cut.
    let mut first = ipv4(17, &u[..30]);
    first[6] = 0x20;
    let r = dec(&eth(0x0800, &first));
    assert_eq!(r.kind(), Kind::Roce);
    assert!(r.has(flags::HAS_BTH));
    assert_eq!(r.payload_len, 10);
    assert_eq!(r.icrc_ok(), None);

    // Non-first fragment.
    let mut later = ipv4(17, &u);
    later[7] = 0x10;
    let f = eth(0x0800, &later);
    assert_other(&dec(&f), &f);

    // Not UDP.
    let f = eth(0x0800, &ipv4(6, &u));
    assert_other(&dec(&f), &f);
}

/// `gre` (flags, protocol and optional fields) + ERSPAN header + the CNP,
/// inside IPv4 inside Ethernet (outer MACs differ from the inner ones).
fn erspan_frame(gre_and_erspan: &[u8]) -> Vec<u8> {
    let mut l4 = gre_and_erspan.to_vec();
    l4.extend_from_slice(&CX4_CNP);
    let mut f = vec![
        0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x81, 0x00, 0x00, 0x05, 0x08, 0x00,
    ];
    f.extend(ipv4(47, &l4));
    f
}

fn assert_inner_cnp(r: &PacketRecord) {
    assert_eq!(r.kind(), Kind::Cnp);
    assert!(r.has(flags::ERSPAN));
    assert_eq!(r.dst_mac, DST_MAC);
    assert_eq!(r.src_mac, SRC_MAC);
    assert!(
        !r.has(flags::HAS_VLAN),
        "the outer VLAN is not the inner frame's"
    );
    assert_eq!(r.src_ip, ipv4_mapped([10, 0, 17, 1]));
    assert_eq!((r.dscp, r.ecn), (48, 2));
    assert_eq!(r.roce().dest_qp, 0x118);
    assert_eq!(r.icrc_ok(), Some(true));
}

#[test]
fn erspan_type_i_ii_iii() {
    // Type II: GRE with sequence number, 8-byte ERSPAN header.
    let ii = [
        0x10, 0x00, 0x88, 0xBE, 0x00, 0x00, 0x00, 0x01, // GRE S, seq 1
        0x10, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, // ERSPAN II, session 1
    ];
    let f = erspan_frame(&ii);
    let r = dec(&f);
    assert_inner_cnp(&r);
    assert_eq!(r.cap_len as usize, f.len());

    // Type I: no sequence number, no ERSPAN header.
    assert_inner_cnp(&dec(&erspan_frame(&[0x00, 0x00, 0x88, 0xBE])));

    // Type II with checksum and key too.
    let ck = [
        0xB0, 0x00, 0x88, 0xBE, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 1, // GRE C K S
        0x10, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
    ];
    assert_inner_cnp(&dec(&erspan_frame(&ck)));

    // Type III without and with the platform subheader.
    let iii = [
        0x10, 0x00, 0x22, 0xEB, 0x00, 0x00, 0x00, 0x01, // GRE S
        0x20, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0x00, 0x00, // ERSPAN III, O clear
    ];
    assert_inner_cnp(&dec(&erspan_frame(&iii)));
    let mut iii_o = iii.to_vec();
    iii_o[19] = 0x01;
    iii_o.extend_from_slice(&[0xAA; 8]);
    assert_inner_cnp(&dec(&erspan_frame(&iii_o)));

    // Over IPv6.
    let mut l4 = ii.to_vec();
    l4.extend_from_slice(&CX4_CNP);
    assert_inner_cnp(&dec(&eth(0x86DD, &ipv6(47, &l4))));

    // Cut inside the ERSPAN header: nothing of the inner frame survived.
    let f = erspan_frame(&ii);
    let cut = 18 + 20 + 10;
    assert_eq!(
        decode(ETHERNET, &f[..cut], f.len() as u32).kind(),
        Kind::Other
    );
    // Cut inside the inner BTH: the inner headers that survived.
    let cut = 18 + 20 + 16 + BTH_AT + 4;
    let r = decode(ETHERNET, &f[..cut], f.len() as u32);
    assert_eq!(r.kind(), Kind::Roce);
    assert!(r.has(flags::ERSPAN | flags::HAS_UDP) && !r.has(flags::HAS_BTH));

    // Other GRE payloads, GRE version 1, routing bit: not unwrapped.
    for g in [
        [0x00, 0x00, 0x08, 0x00],
        [0x00, 0x01, 0x88, 0xBE],
        [0x40, 0x00, 0x88, 0xBE],
    ] {
        let f = erspan_frame(&g);
        assert_other(&dec(&f), &f);
    }

    // ERSPAN in ERSPAN: one level only. The mirrored frame is itself a whole
    // ERSPAN frame around the CNP; it is not unwrapped again.
    let mut nested = ii.to_vec();
    nested.extend_from_slice(&erspan_frame(&ii));
    let f = eth(0x0800, &ipv4(47, &nested));
    assert_other(&dec(&f), &f);
}

/// ERSPAN III's timestamp, granularity and platform subheader, laid out as
/// Wireshark's `packet-cisco-erspan.c` reads them: bytes 4-7 the 32-bit
/// timestamp; in the word at 10-11 Gra is mask 0x0006 and O mask 0x0001;
/// the subheader's Platform ID is the top 6 bits of its first word, its
/// second word the "Upper 32-bit Timestamp" (ids 3, 7, and 0 as an alias
/// of 7) or the "Timestamp (seconds)" (ids 5, 6).
#[test]
fn erspan_iii_hardware_time() {
    use rocescope_common::hw_time;
    let iii = |last: u8, sub: &[u8]| {
        let mut g = vec![
            0x10, 0x00, 0x22, 0xEB, 0x00, 0x00, 0x00, 0x01, // GRE S
            0x20, 0x00, 0x00, 0x01, // ver 2, session 1
            0x89, 0xAB, 0xCD, 0xEF, // timestamp
            0x00, 0x00, 0xFC, last, // SGT; P, FT 0, HW id 0x3F, D, Gra, O
        ];
        g.extend_from_slice(sub);
        dec(&erspan_frame(&g))
    };
    let read = |r: &PacketRecord| (r.has(flags::HAS_HW_TIME), r.hw_time, r.hw_time_format);

    // 100 µs (Gra 0), D set: the low word only.
    let r = iii(0x08, &[]);
    assert_inner_cnp(&r);
    assert_eq!(read(&r), (true, 0x89AB_CDEF, hw_time::GRA_100_US));
    // 100 ns (Gra 1), IEEE 1588 (Gra 2), user-defined (Gra 3).
    assert_eq!(read(&iii(0x02, &[])).2, hw_time::GRA_100_NS);
    assert_eq!(read(&iii(0x04, &[])).2, hw_time::GRA_IEEE_1588);
    assert_eq!(read(&iii(0x0E, &[])).2, hw_time::GRA_USER);

    // Platform id 3 (0x0C >> 2): port index, then the upper 32 bits.
    let r = iii(0x03, &[0x0C, 0x00, 0x00, 0x05, 0x00, 0x00, 0x01, 0x02]);
    assert_inner_cnp(&r);
    assert_eq!(
        read(&r),
        (true, 0x0102_89AB_CDEF, hw_time::GRA_100_NS | hw_time::UPPER)
    );
    // Platform id 7 and its alias 0: the same.
    for first in [0x1C, 0x00] {
        let r = iii(0x03, &[first, 0, 0, 0, 0, 0, 0, 0x09]);
        assert_eq!(r.hw_time >> 32, 9);
        assert_eq!(r.hw_time_format & hw_time::UPPER, hw_time::UPPER);
    }
    // Platform id 5 (0x14 >> 2) and 6, IEEE 1588: switch id and port, then
    // the seconds.
    for first in [0x14, 0x18] {
        let r = iii(0x05, &[first, 0x01, 0x00, 0x02, 0x65, 0x00, 0x00, 0x00]);
        assert_inner_cnp(&r);
        let f = hw_time::GRA_IEEE_1588 | hw_time::UPPER | hw_time::UPPER_IS_SECONDS;
        assert_eq!(read(&r), (true, 0x6500_0000_89AB_CDEF, f));
    }
    // Platform id 1 (VSM domain, port index): no time in it.
    let r = iii(0x03, &[0x04, 0, 0, 1, 0, 0, 0, 2]);
    assert_eq!(read(&r), (true, 0x89AB_CDEF, hw_time::GRA_100_NS));
    // Cut inside the subheader: nothing of the inner frame.
    let mut g = vec![
        0x10, 0x00, 0x22, 0xEB, 0, 0, 0, 1, 0x20, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0x01,
    ];
    g.extend_from_slice(&[0x0C, 0, 0]);
    let f = eth(0x0800, &ipv4(47, &g));
    assert_other(&dec(&f), &f);

    // Type II has no timestamp; nor does a frame not mirrored.
    let ii = [
        0x10, 0x00, 0x88, 0xBE, 0, 0, 0, 1, 0x10, 0x00, 0x00, 0x01, 0, 0, 0, 0,
    ];
    let r = dec(&erspan_frame(&ii));
    assert_eq!(read(&r), (false, 0, 0));
    assert_eq!(read(&dec(&CX4_CNP)), (false, 0, 0));
}

#[test]
fn linux_cooked_captures() {
    let ip = &CX4_CNP[ETH_LEN..];
    let mut sll = vec![
        0, 0, 0, 1, 0, 6, 0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32, 0, 0, 0x08, 0x00,
    ];
    sll.extend_from_slice(ip);
    let r = decode(LINUX_SLL, &sll, sll.len() as u32);
    assert_eq!(r.kind(), Kind::Cnp);
    assert_eq!((r.src_mac, r.dst_mac), ([0; 6], [0; 6]));
    assert_eq!(r.roce().dest_qp, 0x118);
    assert_eq!(r.icrc_ok(), Some(true));
    assert_eq!(decode(LINUX_SLL, &sll[..15], 100).kind(), Kind::Other);

    let mut sll2 = vec![0x08, 0x00, 0, 0, 0, 0, 0, 3, 0, 1, 0, 6];
    sll2.extend_from_slice(&[0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32, 0, 0]);
    sll2.extend_from_slice(ip);
    let r = decode(LINUX_SLL2, &sll2, sll2.len() as u32);
    assert_eq!(r.kind(), Kind::Cnp);
    assert_eq!((r.src_mac, r.dst_mac), ([0; 6], [0; 6]));
    assert_eq!(r.icrc_ok(), Some(true));

    // The same bytes under a link type we do not know.
    assert_other(&decode(12345, &sll2, sll2.len() as u32), &sll2);
}

#[test]
fn pfc_and_pause() {
    let pfc = [
        0x01, 0x01, 0x00, 0x09, // PFC, priorities 0 and 3
        0xFF, 0xFF, 0, 0, 0, 0, 0x01, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, // times
    ];
    let mut f = eth(0x8808, &pfc);
    f.resize(60, 0); // padded to the minimum frame
    let r = dec(&f);
    assert_eq!(r.kind(), Kind::Pfc);
    assert!(r.has(flags::HAS_PFC) && !r.has(flags::HAS_PAUSE));
    assert_eq!(r.link_control().pfc_enable, 0x09);
    assert_eq!(
        r.link_control().pfc_quanta,
        [0xFFFF, 0, 0, 0x100, 0, 0, 0, 0]
    );
    assert_eq!(r.src_mac, SRC_MAC);
    assert_eq!((r.frame_len, r.cap_len), (60, 60));

    // Cut before the quanta: still PFC, fields unknown.
    let r = decode(ETHERNET, &f[..ETH_LEN + 6], 64);
    assert_eq!(r.kind(), Kind::Pfc);
    assert!(!r.has(flags::HAS_PFC));
    assert_eq!(r.link_control().pfc_quanta, [0; 8]);
    // Cut before the opcode: unknown.
    assert_eq!(decode(ETHERNET, &f[..ETH_LEN + 1], 64).kind(), Kind::Other);

    // Behind a VLAN tag.
    let mut tagged = vec![0xE0, 0x00, 0x88, 0x08];
    tagged.extend_from_slice(&pfc);
    let r = dec(&eth(0x8100, &tagged));
    assert_eq!(r.kind(), Kind::Pfc);
    assert_eq!((r.pcp, r.vlan), (7, 0));

    let f = eth(0x8808, &[0x00, 0x01, 0x12, 0x34]);
    let r = dec(&f);
    assert_eq!(r.kind(), Kind::Pause);
    assert!(r.has(flags::HAS_PAUSE) && !r.has(flags::HAS_PFC));
    assert_eq!(r.link_control().pause_quanta, 0x1234);
    let r = decode(ETHERNET, &f[..ETH_LEN + 3], 64);
    assert_eq!(r.kind(), Kind::Pause);
    assert!(!r.has(flags::HAS_PAUSE));

    // Another MAC Control opcode (e.g. MPCP GATE).
    let f = eth(0x8808, &[0x00, 0x02, 0, 0]);
    assert_other(&dec(&f), &f);
}

/// Random corruptions and every cut of every frame above: no panic.
#[test]
fn hostile_bytes_never_panic() {
    let mut frames = vec![
        CX4_CNP.to_vec(),
        roce_v4(bth(0x0B), &[0; 20], &[1; 7]),
        roce_v4(bth(0x13), &[0; 28], &[]),
        roce_v4(bth(0x12), &[0; 12], &[]),
        roce_v4(bth(0x65), &[0; 12], &[]),
        erspan_frame(&[
            0x10, 0x00, 0x22, 0xEB, 0, 0, 0, 1, 0x20, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1,
        ]),
        eth(0x86DD, &ipv6(0, &[17, 0, 1, 4, 0, 0, 0, 0])),
        eth(0x8808, &[0x01, 0x01, 0, 0xFF]),
    ];
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for i in 0..frames.len() {
        for _ in 0..300 {
            let mut f = frames[i].clone();
            for _ in 0..1 + rnd() % 4 {
                let at = (rnd() as usize) % f.len();
                f[at] = rnd() as u8;
            }
            frames.push(f);
        }
    }
    for f in &frames {
        for cut in 0..=f.len() {
            for lt in [ETHERNET, LINUX_SLL, LINUX_SLL2, RAW, NULL, LOOP, IPV4, IPV6] {
                let mut r = PacketRecord::default();
                let walk = decode_walk(&mut r, lt, &f[..cut], f.len() as u32);
                assert_eq!(r.cap_len as usize, cut);
                if r.kind() == Kind::Other {
                    assert_eq!(r.flags, 0);
                    assert!(walk.stop.is_some(), "a frame of kind other says why");
                }
            }
        }
    }
}

/// A classic little-endian pcap, record by record (test helper only: the
/// real reader is `sources`).
fn pcap_records(file: &[u8]) -> (u32, Vec<(&[u8], u32)>) {
    assert_eq!(
        &file[..4],
        &[0xd4, 0xc3, 0xb2, 0xa1],
        "little-endian µs pcap"
    );
    let le32 = |at: usize| u32::from_le_bytes(file[at..at + 4].try_into().unwrap());
    let linktype = le32(20);
    let mut at = 24;
    let mut out = Vec::new();
    while at + 16 <= file.len() {
        let (incl, orig) = (le32(at + 8) as usize, le32(at + 12));
        out.push((&file[at + 16..at + 16 + incl], orig));
        at += 16 + incl;
    }
    (linktype, out)
}

#[test]
fn oferby_proxy_capture() {
    let path = crate::testdata::shared_capture("oferby-proxy-roce.pcap");
    let file = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (linktype, records) = pcap_records(&file);
    assert_eq!(records.len(), 123);
    // 37 frames come from source port 69 (36 ACKs and one SEND Only with
    // Immediate); 37 ACKs in all (one from another port).
    let (mut roce, mut from_69, mut acks, mut icrc_ok) = (0, 0, 0, 0);
    for (data, orig) in records {
        let r = decode(linktype, data, orig);
        match r.kind() {
            Kind::Roce => {
                roce += 1;
                icrc_ok += usize::from(r.icrc_ok() == Some(true));
                from_69 += usize::from(r.udp_sport == 69);
                if r.roce().opcode == 0x11 {
                    assert!(r.has(flags::HAS_AETH));
                    assert!(rocescope_common::proto::ib::aeth::is_ack(
                        r.roce().aeth_syndrome
                    ));
                    acks += 1;
                }
                assert!(
                    matches!(r.roce().opcode, 0x00 | 0x03 | 0x05 | 0x11),
                    "{:#x}",
                    r.roce().opcode
                );
                assert!(r.has(flags::HAS_PAYLOAD_LEN | flags::HAS_BTH));
                assert_eq!(r.src_ip[..12], ipv4_mapped([0; 4])[..12]);
            }
            Kind::Other => {}
            k => panic!("unexpected {k:?}"),
        }
    }
    assert_eq!((roce, from_69, acks, icrc_ok), (105, 37, 37, 105));
}

fn walk(linktype: u32, frame: &[u8]) -> (PacketRecord, Option<Stop>) {
    let mut r = PacketRecord::default();
    let w = decode_walk(&mut r, linktype, frame, frame.len() as u32);
    (r, w.stop)
}

/// The record of an Ethernet frame, as a link type without MACs gives it.
fn without_macs(mut r: PacketRecord, frame_len: usize) -> PacketRecord {
    r.src_mac = [0; 6];
    r.dst_mac = [0; 6];
    r.frame_len = frame_len as u32;
    r.cap_len = frame_len as u32;
    r
}

#[test]
fn raw_ip_and_bsd_loopback() {
    let v4 = &CX4_CNP[ETH_LEN..];
    let v4_want = without_macs(dec(&CX4_CNP), v4.len());
    assert_eq!(v4_want.kind(), Kind::Cnp);
    assert_eq!(v4_want.icrc_ok(), Some(true));
    let v6_eth = eth(
        0x86DD,
        &seal(ipv6(17, &roce_udp(0xC001, bth(0x04), &[], &[7; 32]))),
    );
    let v6 = &v6_eth[ETH_LEN..];
    let v6_want = without_macs(dec(&v6_eth), v6.len());
    assert_eq!(v6_want.kind(), Kind::Roce);
    assert_eq!(v6_want.icrc_ok(), Some(true));

    for lt in [RAW, RAW_DLT, RAW_OPENBSD] {
        assert_eq!(walk(lt, v4), (v4_want, None), "raw IPv4, link type {lt}");
        assert_eq!(walk(lt, v6), (v6_want, None), "raw IPv6, link type {lt}");
    }
    assert_eq!(walk(IPV4, v4), (v4_want, None));
    assert_eq!(walk(IPV6, v6), (v6_want, None));
    // The version nibble decides for 101; 228 and 229 say it themselves.
    assert_eq!(walk(IPV4, v6).1, Some(Stop::Invalid(Layer::Ipv4)));
    assert_eq!(walk(IPV6, v4).1, Some(Stop::Invalid(Layer::Ipv6)));
    let mut v5 = v4.to_vec();
    v5[0] = 0x55;
    assert_eq!(
        walk(RAW, &v5).1,
        Some(Stop::Foreign(Foreign::AddressFamily))
    );
    assert_eq!(walk(RAW, &[]).1, Some(Stop::Cut(Layer::Link)));

    let with_family = |af: [u8; 4], ip: &[u8]| [&af[..], ip].concat();
    // NULL: the writer's byte order; LOOP: network order.
    for (lt, af, ip, want) in [
        (NULL, [2, 0, 0, 0], v4, v4_want),
        (NULL, [0, 0, 0, 2], v4, v4_want),
        (LOOP, [0, 0, 0, 2], v4, v4_want),
        (NULL, [24, 0, 0, 0], v6, v6_want),
        (NULL, [28, 0, 0, 0], v6, v6_want),
        (NULL, [0, 0, 0, 30], v6, v6_want),
        (LOOP, [0, 0, 0, 24], v6, v6_want),
    ] {
        let f = with_family(af, ip);
        let want = PacketRecord {
            frame_len: f.len() as u32,
            cap_len: f.len() as u32,
            ..want
        };
        assert_eq!(walk(lt, &f), (want, None), "link type {lt}, family {af:?}");
    }
    let f = with_family([2, 0, 0, 0], v4);
    assert_eq!(
        walk(LOOP, &f).1,
        Some(Stop::Foreign(Foreign::AddressFamily))
    );
    let f = with_family([10, 0, 0, 0], v6);
    assert_eq!(
        walk(NULL, &f).1,
        Some(Stop::Foreign(Foreign::AddressFamily))
    );
    assert_eq!(walk(NULL, &[2, 0, 0]).1, Some(Stop::Cut(Layer::Link)));
    assert!(decodes_linktype(NULL) && decodes_linktype(229) && !decodes_linktype(105));
}

#[test]
fn stop_reasons_name_the_layer() {
    let cnp = CX4_CNP.to_vec();
    let at = |n: usize| cnp[..n].to_vec();
    let with = |at: usize, bytes: &[u8]| {
        let mut f = cnp.clone();
        f[at..at + bytes.len()].copy_from_slice(bytes);
        f
    };
    let tagged = |tags: usize| {
        let mut f = cnp[..12].to_vec();
        for _ in 0..tags {
            f.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
        }
        f.extend_from_slice(&cnp[12..]);
        f
    };
    let cases: Vec<(&str, Vec<u8>, Option<Stop>, Kind)> = vec![
        ("whole", cnp.clone(), None, Kind::Cnp),
        (
            "ethernet cut",
            at(13),
            Some(Stop::Cut(Layer::Link)),
            Kind::Other,
        ),
        (
            "ARP",
            with(12, &[0x08, 0x06]),
            Some(Stop::Foreign(Foreign::EtherType)),
            Kind::Other,
        ),
        (
            "IPv4 cut",
            at(IP_AT + 19),
            Some(Stop::Cut(Layer::Ipv4)),
            Kind::Other,
        ),
        (
            "IPv4 IHL 4",
            with(IP_AT, &[0x44]),
            Some(Stop::Invalid(Layer::Ipv4)),
            Kind::Other,
        ),
        (
            "TCP",
            with(IP_AT + 9, &[6]),
            Some(Stop::Foreign(Foreign::IpProtocol)),
            Kind::Other,
        ),
        (
            "fragment",
            with(IP_AT + 6, &[0x00, 0x10]),
            Some(Stop::Foreign(Foreign::IpFragment)),
            Kind::Other,
        ),
        (
            "UDP cut",
            at(UDP_AT + 7),
            Some(Stop::Cut(Layer::Udp)),
            Kind::Other,
        ),
        (
            "UDP 4790",
            with(UDP_AT + 2, &[0x12, 0xB6]),
            Some(Stop::Foreign(Foreign::UdpPort)),
            Kind::Other,
        ),
        (
            "UDP length 20",
            with(UDP_AT + 4, &[0, 20]),
            Some(Stop::Invalid(Layer::Udp)),
            Kind::Malformed,
        ),
        (
            "BTH cut",
            at(BTH_AT + 11),
            Some(Stop::Cut(Layer::Bth)),
            Kind::Roce,
        ),
        (
            "5 VLAN tags",
            tagged(5),
            Some(Stop::Limit(Limit::VlanDepth)),
            Kind::Other,
        ),
        ("4 VLAN tags", tagged(4), None, Kind::Cnp),
        (
            "VLAN cut",
            tagged(1)[..17].to_vec(),
            Some(Stop::Cut(Layer::Vlan)),
            Kind::Other,
        ),
        (
            "MAC Control opcode 2",
            eth(0x8808, &[0x00, 0x02, 0, 0]),
            Some(Stop::Foreign(Foreign::MacControlOpcode)),
            Kind::Other,
        ),
        (
            "PFC cut",
            eth(0x8808, &[0x01, 0x01, 0, 0xFF]),
            Some(Stop::Cut(Layer::MacControl)),
            Kind::Pfc,
        ),
        (
            "GRE, not ERSPAN",
            eth(0x0800, &ipv4(47, &[0, 0, 0x65, 0x58, 0, 0, 0, 0])),
            Some(Stop::Foreign(Foreign::GreProtocol)),
            Kind::Other,
        ),
        (
            "GRE cut",
            eth(0x0800, &ipv4(47, &[0, 0])),
            Some(Stop::Cut(Layer::Gre)),
            Kind::Other,
        ),
        (
            "ERSPAN II cut",
            eth(0x0800, &ipv4(47, &[0x10, 0, 0x88, 0xBE, 0, 0, 0, 1, 0x10])),
            Some(Stop::Cut(Layer::Erspan)),
            Kind::Other,
        ),
        (
            "IPv6 version 4",
            {
                let mut f = eth(0x86DD, &ipv6(17, &[0; 8]));
                f[ETH_LEN] = 0x4B;
                f
            },
            Some(Stop::Invalid(Layer::Ipv6)),
            Kind::Other,
        ),
        (
            "IPv6 extension cut",
            eth(0x86DD, &ipv6(0, &[17, 0])),
            Some(Stop::Cut(Layer::Ipv6Ext)),
            Kind::Other,
        ),
        (
            // Whole in the capture, past the payload length (the etherparse
            // fuzz target's finding: payload length 0, a hop-by-hop header).
            "IPv6 extension past the payload length",
            vec![
                0x33, 0x33, 0x00, 0x00, 0x00, 0x02, 0x71, 0x3d, 0x5e, 0xbf, 0x43, 0xb1, 0x86, 0xdd,
                0x60, 0x0d, 0xbc, 0xd9, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0xf9, 0x1f,
                0x3a, 0xff, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x71, 0x91, 0x1f, 0x2d,
                0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                0x02, 0x85, 0x00, 0x00, 0x00, 0x00,
            ],
            Some(Stop::Invalid(Layer::Ipv6Ext)),
            Kind::Other,
        ),
        (
            "IPv6 fragment header past the payload length",
            {
                let mut f = eth(0x86DD, &ipv6(44, &[17, 0, 0, 0, 0, 0, 0, 1]));
                f[ETH_LEN + 5] = 4;
                f
            },
            Some(Stop::Invalid(Layer::Ipv6Ext)),
            Kind::Other,
        ),
        (
            "5 IPv6 extension headers",
            eth(0x86DD, &ipv6(0, &[[60, 0, 0, 0, 0, 0, 0, 0]; 5].concat())),
            Some(Stop::Limit(Limit::Ipv6ExtHeaders)),
            Kind::Other,
        ),
    ];
    for (what, frame, stop, kind) in cases {
        let (r, got) = walk(ETHERNET, &frame);
        assert_eq!((got, r.kind()), (stop, kind), "{what}");
    }
    // GRE inside a mirrored frame: one level of encapsulation only.
    let ii = [
        0x10, 0x00, 0x88, 0xBE, 0x00, 0x00, 0x00, 0x01, // GRE S, seq 1
        0x10, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, // ERSPAN II, session 1
    ];
    let inner = eth(0x0800, &ipv4(47, &ii));
    let outer = eth(0x0800, &ipv4(47, &[&ii[..], &inner].concat()));
    assert_eq!(
        walk(ETHERNET, &outer).1,
        Some(Stop::Limit(Limit::NestedEncapsulation))
    );
    assert_eq!(
        walk(105, &cnp),
        (assert_other_record(&cnp), Some(Stop::LinkType))
    );
}

fn assert_other_record(frame: &[u8]) -> PacketRecord {
    PacketRecord {
        frame_len: frame.len() as u32,
        cap_len: frame.len() as u32,
        ..PacketRecord::default()
    }
}

#[test]
fn the_tally_counts_by_reason_and_layer() {
    let mut t = DecodeTally::default();
    let mut add = |lt: u32, f: &[u8]| {
        let (r, stop) = walk(lt, f);
        t.frame(&r, stop, lt);
    };
    add(ETHERNET, &CX4_CNP);
    add(ETHERNET, &CX4_CNP[..30]);
    add(ETHERNET, &CX4_CNP[..BTH_AT + 4]);
    add(105, &CX4_CNP);
    add(105, &CX4_CNP);
    add(ETHERNET, &eth(0x0806, &[0; 28]));
    t.not_decoded(Undecoded::FilteredOut);
    let f = t.facts();
    assert_eq!(f.not_decoded, 5);
    let reasons: Vec<(&str, u64)> = f
        .not_decoded_by_reason
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(
        reasons,
        [
            ("cut.ipv4", 1),
            ("filtered_out", 1),
            ("link_type_not_supported", 2),
            ("not_roce.ethertype", 1)
        ]
    );
    assert_eq!(f.link_types_not_supported.get("105"), Some(&2));
    // The cut IPv4 header and the cut BTH (a record all the same).
    assert_eq!(f.parse_failures, 2);
    assert_eq!(f.parse_failures_by_layer.get("ipv4"), Some(&1));
    assert_eq!(f.parse_failures_by_layer.get("bth"), Some(&1));
    let note = t.note(7).expect("a note");
    assert!(
        note.starts_with("5 of 7 frames read were not decoded: 1 filtered out"),
        "{note}"
    );
    assert!(
        note.contains("2 of a link type rocescope does not decode (105)"),
        "{note}"
    );
}

/// RoCEv1: EtherType 0x8915, a GRH naming a BTH, the transport as over
/// UDP; the ICRC over the GRH with its variant fields masked.
#[test]
fn rocev1_grh_bth_and_icrc() {
    use crate::synth::frame::{IpAddrs, RoceFrame, RoceVersion, WireFrame};
    let (sgid, dgid): (std::net::Ipv6Addr, std::net::Ipv6Addr) = (
        "fe80::211:22ff:fe33:4455".parse().unwrap(),
        "fe80::2".parse().unwrap(),
    );
    let mut f = RoceFrame {
        version: RoceVersion::V1,
        ..RoceFrame::default()
    };
    f.ip.addrs = IpAddrs::V6 {
        src: sgid,
        dst: dgid,
    };
    f.bth.opcode = 0x0A; // RC RDMA WRITE Only: RETH
    f.bth.psn = 0x12_3456;
    f.bth.dest_qp = 0xABC;
    f.ext.reth_len = 64;
    f.payload_len = 64;
    let mut b = Vec::new();
    f.write(&mut b);
    // The layout by hand: EtherType, IPVer, NxtHdr, PayLen (BTH 12 + RETH
    // 16 + 64 + ICRC 4), the SGID.
    assert_eq!(b.len(), 14 + 40 + 96);
    assert_eq!(&b[12..14], &[0x89, 0x15]);
    assert_eq!(b[14] >> 4, 6);
    assert_eq!(b[20], 0x1B);
    assert_eq!(u16::from_be_bytes([b[18], b[19]]), 96);
    assert_eq!(b[22..38], sgid.octets());
    let r = dec(&b);
    assert_eq!(r.kind(), Kind::Roce);
    assert_eq!(
        r.flags,
        flags::HAS_GRH
            | flags::HAS_BTH
            | flags::HAS_RETH
            | flags::HAS_PAYLOAD_LEN
            | flags::ICRC_CHECKED
            | flags::ICRC_OK
    );
    assert_eq!((r.src_ip, r.dst_ip), (sgid.octets(), dgid.octets()));
    assert_eq!(
        (r.roce().opcode, r.roce().psn, r.roce().dest_qp),
        (0x0A, 0x12_3456, 0xABC)
    );
    assert_eq!((r.roce().reth_len, r.payload_len), (64, 64));
    // TClass 0x6A (the builder's DSCP 26, ECT(0)): 0x66 0xA0 by hand, read
    // as IPv6's traffic class (docs/inputs.md).
    assert_eq!((b[14], b[15] & 0xF0), (0x66, 0xA0));
    assert_eq!((r.dscp, r.ecn, r.udp_sport), (26, 2, 0));
    assert!(r.has_traffic_class() && !r.is_ce());
    assert_eq!(r.roce_version(), Some(1));

    // Traffic class, flow label and hop limit are not covered; a GID is.
    let mut v = b.clone();
    v[14] |= 0x0F;
    v[15] = 0xAB;
    v[17] = 0x55;
    v[21] = 1;
    assert_eq!(dec(&v).icrc_ok(), Some(true));
    v[22] ^= 1;
    assert_eq!(dec(&v).icrc_ok(), Some(false));

    // Where the walk stops.
    assert_eq!(walk(ETHERNET, &b[..14 + 39]).1, Some(Stop::Cut(Layer::Grh)));
    let mut other = b.clone();
    other[20] = 0x3B;
    let (r, stop) = walk(ETHERNET, &other);
    assert_eq!(
        (r.kind(), stop),
        (Kind::Other, Some(Stop::Foreign(Foreign::GrhNextHeader)))
    );
    let mut short = b.clone();
    short[18..20].copy_from_slice(&15u16.to_be_bytes());
    let (r, stop) = walk(ETHERNET, &short);
    assert_eq!(
        (r.kind(), stop),
        (Kind::Malformed, Some(Stop::Invalid(Layer::Grh)))
    );
    assert_eq!(r.roce_version(), Some(1));
    let mut ipver = b.clone();
    ipver[14] = 0x40;
    assert_eq!(walk(ETHERNET, &ipver).1, Some(Stop::Invalid(Layer::Grh)));
    // Cut inside the payload: the headers are there, the ICRC is not checked.
    let (r, stop) = walk(ETHERNET, &b[..14 + 40 + 12 + 16 + 10]);
    assert_eq!((r.kind(), stop, r.icrc_ok()), (Kind::Roce, None, None));
    assert!(r.has(flags::CUT | flags::HAS_RETH));
}

/// The real `ibdump` frame with a GRH ([`crate::testdata::ibdump_grh_frame`]).
#[test]
fn a_real_ibdump_frame_with_a_grh_verifies_and_decodes() {
    let frame = crate::testdata::ibdump_grh_frame();
    assert_eq!(frame.len(), 174);
    let l = lrh::Lrh::new_checked(&frame[..]).unwrap();
    assert_eq!(
        (l.vl(), l.lver(), l.sl(), l.lnh(), l.dlid(), l.slid()),
        (0, 0, 0, proto::lrh::LNH_IBA_GLOBAL, 0xC000, 0x0005)
    );
    assert_eq!(l.packet_len(), 172, "PktLen: LRH to ICRC");
    let packet = &frame[..l.packet_len()];
    assert_eq!(icrc::carried(packet), Some(0x4DD5_6605));
    assert_eq!(lrh::icrc(packet), Some(0x4DD5_6605));
    assert_eq!(lrh::vcrc(packet), 0xDF35);
    assert_eq!(u16::from_le_bytes([frame[172], frame[173]]), 0xDF35);
    // The reading that masks only the LRH's VL does not match the wire.
    let mut lrh_vl = [0u8; 8];
    lrh_vl.copy_from_slice(&frame[..8]);
    lrh_vl[0] |= 0xF0;
    let mut grh_bth = [0u8; 52];
    grh_bth.copy_from_slice(&packet[8..60]);
    grh_bth[0] |= 0x0F; // TClass
    grh_bth[1..4].fill(0xFF); // TClass, FlowLabel
    grh_bth[7] = 0xFF; // HopLmt
    grh_bth[44] = 0xFF; // resv8a
    let mut h = crc32fast::Hasher::new();
    h.update(&lrh_vl);
    h.update(&grh_bth);
    h.update(&packet[60..168]);
    assert_ne!(h.finalize(), 0x4DD5_6605);

    // The decoder checks both and reads the UD SEND behind the GRH.
    let r = decode(INFINIBAND, &frame, frame.len() as u32);
    assert_eq!(r.kind(), Kind::Roce);
    assert_eq!(r.icrc_ok(), Some(true));
    assert!(r.has(flags::VCRC_CHECKED) && r.has(flags::VCRC_OK));
    assert_eq!(r.roce().icrc, 0x4DD5_6605);
    assert_eq!(
        (
            r.roce().opcode,
            r.roce().dest_qp,
            r.roce().psn,
            r.roce().deth_qkey,
            r.roce().deth_src_qp
        ),
        (0x64, 0xFF_FFFF, 0x0D_E6F8, 0x0B1B, 0x48)
    );
    assert_eq!(r.payload_len, 100);
    let gid = |s: &str| s.parse::<std::net::Ipv6Addr>().unwrap().octets();
    assert_eq!(
        (r.src_ip, r.dst_ip),
        (gid("fe80::2:c903:0:1f2d"), gid("ff12:401b:ffff::ffff:ffff"))
    );
}
