//! Byte-level checks of the frame builder and the capture writers.
use std::net::{Ipv4Addr, Ipv6Addr};

use rocescope_common::proto::{ib, ip, linktype};

use super::capture_writer::*;
use super::frame::*;
use crate::transport::roce::icrc;

/// The IP packet (IP header to ICRC) of a built RoCE frame.
fn ip_packet(frame: &[u8], l2_len: usize) -> &[u8] {
    let len = match frame[l2_len] >> 4 {
        4 => usize::from(u16::from_be_bytes([frame[l2_len + 2], frame[l2_len + 3]])),
        6 => 40 + usize::from(u16::from_be_bytes([frame[l2_len + 4], frame[l2_len + 5]])),
        v => panic!("IP version {v}"),
    };
    &frame[l2_len..l2_len + len]
}

fn icrc_valid(frame: &[u8], l2_len: usize) -> bool {
    let p = ip_packet(frame, l2_len);
    icrc::compute(p).is_some() && icrc::compute(p) == icrc::carried(p)
}

/// One's-complement sum check: a header with a correct checksum sums to 0xFFFF.
fn checksum_ok(header: &[u8]) -> bool {
    let mut acc: u32 = header
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while acc > 0xFFFF {
        acc = (acc & 0xFFFF) + (acc >> 16);
    }
    acc == 0xFFFF
}

/// Rebuilds the ConnectX-4 Lx CNP of `transport::roce::icrc`'s test byte for byte.
#[test]
fn cnp_matches_connectx_capture() {
    let mut f = RoceFrame::cnp(0x000118);
    f.ip = IpHeader {
        addrs: IpAddrs::V4 {
            src: Ipv4Addr::new(10, 0, 17, 1),
            dst: Ipv4Addr::new(10, 0, 18, 1),
        },
        dscp: 0x30,
        ecn: ip::ECN_ECT0,
        ttl: 0x40,
        id: 0x718c,
        dont_fragment: true,
        flow_label: 0,
    };
    f.udp_sport = 0;
    f.payload_len = 999; // ignored for a CNP
    let mut buf = Vec::new();
    f.write(&mut buf);
    let expected_ip = crate::testdata::CONNECTX4LX_CNP_IP;
    assert_eq!(buf.len(), 74);
    assert_eq!(&buf[0..6], &[0x02, 0, 0, 0, 0, 0x02]);
    assert_eq!(&buf[6..12], &[0x02, 0, 0, 0, 0, 0x01]);
    assert_eq!(&buf[12..14], &[0x08, 0x00]);
    assert_eq!(&buf[14..], &expected_ip[..]);
    assert_eq!(f.frame_len(), 74);
}

#[test]
fn write_only_imm_with_vlan_has_every_field_in_place() {
    let mut f = RoceFrame::default();
    f.eth.vlan = Some(VlanTag::dot1q(0x123, 5));
    f.ip.dscp = 26;
    f.ip.ecn = ip::ECN_CE;
    f.ip.ttl = 17;
    f.ip.id = 0xBEEF;
    f.udp_sport = 0xD00D;
    f.bth = Bth {
        opcode: 0x0B, // RC RDMA WRITE Only with Immediate: RETH + ImmDt
        se: true,
        migreq: true,
        pad_count: None,
        tver: 0,
        pkey: 0x8001,
        fecn: true,
        becn: false,
        dest_qp: 0xABCDEF,
        ack_req: true,
        psn: 0xFFFFFE,
    };
    f.ext.reth_va = 0x0102_0304_0506_0708;
    f.ext.reth_rkey = 0x1122_3344;
    f.ext.reth_len = 5;
    f.ext.imm = 0xCAFE_F00D;
    f.ext.aeth_syndrome = 0x60; // not implied by the opcode: not written
    f.payload_len = 5;
    f.payload_seed = 0xFE;
    let mut buf = vec![0xAA; 7]; // write() replaces what was there
    f.write(&mut buf);

    // Ethernet + 802.1Q
    assert_eq!(&buf[12..18], &[0x81, 0x00, 0xA1, 0x23, 0x08, 0x00]);
    // IPv4
    let ip = &buf[18..38];
    assert_eq!(ip[0], 0x45);
    assert_eq!(ip[1], (26 << 2) | 3);
    let udp_len = 8 + 12 + 16 + 4 + 5 + 3 + 4;
    assert_eq!(u16::from_be_bytes([ip[2], ip[3]]) as usize, 20 + udp_len);
    assert_eq!(&ip[4..10], &[0xBE, 0xEF, 0x40, 0x00, 17, 17]);
    assert_eq!(&ip[12..20], &[10, 0, 0, 1, 10, 0, 0, 2]);
    assert!(checksum_ok(ip));
    // UDP
    let udp = &buf[38..46];
    assert_eq!(udp, &[0xD0, 0x0D, 0x12, 0xB7, 0, udp_len as u8, 0, 0]);
    // BTH
    let bth = &buf[46..58];
    assert_eq!(
        bth,
        &[
            0x0B,
            0b1111_0000,
            0x80,
            0x01,
            0x80,
            0xAB,
            0xCD,
            0xEF,
            0x80,
            0xFF,
            0xFF,
            0xFE
        ]
    );
    // RETH, ImmDt
    assert_eq!(
        &buf[58..74],
        &[1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0x22, 0x33, 0x44, 0, 0, 0, 5]
    );
    assert_eq!(&buf[74..78], &[0xCA, 0xFE, 0xF0, 0x0D]);
    // payload, pad, ICRC
    assert_eq!(&buf[78..83], &[0xFE, 0xFF, 0x00, 0x01, 0x02]);
    assert_eq!(&buf[83..86], &[0, 0, 0]);
    assert_eq!(buf.len(), 86 + 4);
    assert_eq!(f.frame_len(), buf.len());
    assert!(icrc_valid(&buf, 18));
}

#[test]
fn every_defined_opcode_gets_its_extension_headers_and_a_valid_icrc() {
    let mut buf = Vec::new();
    let mut n = 0;
    for opcode in 0..=255u8 {
        // Bth::default() has SE clear: 0x55 is a DC CONNECT.
        let mask = ib::ext_headers_se(opcode, false);
        if mask & ib::ext::UNKNOWN != 0 {
            continue;
        }
        n += 1;
        for payload_len in [0usize, 1, 2, 3, 4, 257] {
            let f = RoceFrame {
                bth: Bth {
                    opcode,
                    ..Bth::default()
                },
                payload_len,
                ..RoceFrame::default()
            };
            f.write(&mut buf);
            let p = ip_packet(&buf, 14);
            let payload = if opcode == ib::OPCODE_CNP {
                16
            } else {
                payload_len
            };
            let pad = if opcode == ib::OPCODE_CNP {
                0
            } else {
                (4 - payload_len % 4) % 4
            };
            assert_eq!(
                p.len(),
                20 + 8 + 12 + ib::ext_headers_len(mask) + payload + pad + 4,
                "opcode {opcode:#04x}"
            );
            assert_eq!(usize::from((p[28 + 1] >> 4) & 3), pad);
            assert!(icrc_valid(&buf, 14), "opcode {opcode:#04x}");
            assert!(buf.len() >= MIN_FRAME_LEN);
            assert_eq!(buf.len(), f.frame_len());
        }
    }
    // RC 25 + UC 12 + RD 23 + UD 2 + XRC 25 + CNP (IBA 1.5's FLUSH in RC,
    // RD and XRC, ATOMIC WRITE in RC and XRC)
    assert_eq!(n, 88);
}

#[test]
fn extension_headers_follow_in_iba_order() {
    let ext = ExtHeaders {
        rdeth_eecnxt: 0x0A0B0C,
        deth_qkey: 0x8001_0002,
        deth_src_qp: 0x112233,
        xrc_srq: 0x445566,
        reth_va: 0x1111_2222_3333_4444,
        reth_rkey: 0x5555_6666,
        reth_len: 0x7777_8888,
        atomic_va: 0xA1A2_A3A4_A5A6_A7A8,
        atomic_rkey: 0xB1B2_B3B4,
        atomic_swap_add: 0xC1C2_C3C4_C5C6_C7C8,
        atomic_compare: 0xD1D2_D3D4_D5D6_D7D8,
        aeth_syndrome: 0x1F,
        aeth_msn: 0x010203,
        atomic_orig: 0xE1E2_E3E4_E5E6_E7E8,
        imm: 0xF1F2_F3F4,
        ieth_rkey: 0x9192_9394,
        ..ExtHeaders::default()
    };
    let mut buf = Vec::new();
    let after_bth = |opcode: u8, buf: &mut Vec<u8>| {
        RoceFrame {
            bth: Bth {
                opcode,
                ..Bth::default()
            },
            ext,
            ..RoceFrame::default()
        }
        .write(buf);
        buf[54..buf.len() - 4].to_vec()
    };
    // UD SEND Only with Immediate: DETH, ImmDt
    assert_eq!(
        after_bth(0x65, &mut buf),
        [
            0x80, 0x01, 0x00, 0x02, 0, 0x11, 0x22, 0x33, 0xF1, 0xF2, 0xF3, 0xF4
        ]
    );
    // RC Compare & Swap: AtomicETH
    let mut expect = Vec::new();
    expect.extend_from_slice(&0xA1A2_A3A4_A5A6_A7A8u64.to_be_bytes());
    expect.extend_from_slice(&0xB1B2_B3B4u32.to_be_bytes());
    expect.extend_from_slice(&0xC1C2_C3C4_C5C6_C7C8u64.to_be_bytes());
    expect.extend_from_slice(&0xD1D2_D3D4_D5D6_D7D8u64.to_be_bytes());
    assert_eq!(after_bth(0x13, &mut buf), expect);
    // RC Atomic Acknowledge: AETH, AtomicAckETH
    assert_eq!(
        after_bth(0x12, &mut buf),
        [
            0x1F, 1, 2, 3, 0xE1, 0xE2, 0xE3, 0xE4, 0xE5, 0xE6, 0xE7, 0xE8
        ]
    );
    // RC SEND Only with Invalidate: IETH
    assert_eq!(after_bth(0x17, &mut buf), [0x91, 0x92, 0x93, 0x94]);
    // RD (DC) SEND Only: the DC header (zeros here), RDETH, DETH
    assert_eq!(
        after_bth(0x44, &mut buf),
        [
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0A, 0x0B, 0x0C, 0x80, 0x01, 0x00, 0x02, 0, 0x11, 0x22,
            0x33
        ]
    );
    // XRC RDMA READ Request: XRCETH, RETH
    assert_eq!(
        after_bth(0xAC, &mut buf),
        [
            0, 0x44, 0x55, 0x66, 0x11, 0x11, 0x22, 0x22, 0x33, 0x33, 0x44, 0x44, 0x55, 0x55, 0x66,
            0x66, 0x77, 0x77, 0x88, 0x88
        ]
    );
    // RC ACK: AETH
    assert_eq!(after_bth(0x11, &mut buf), [0x1F, 1, 2, 3]);
}

#[test]
fn short_frames_are_padded_to_60_bytes() {
    let mut buf = Vec::new();
    let f = RoceFrame::default(); // SEND Only, no payload: 58 bytes
    f.write(&mut buf);
    assert_eq!(buf.len(), 60);
    assert_eq!(&buf[58..], &[0, 0]);
    assert_eq!(u16::from_be_bytes([buf[16], buf[17]]), 20 + 8 + 12 + 4);
    assert!(icrc_valid(&buf, 14));
    assert_eq!(f.frame_len(), 60);

    // append(): the minimum counts from the frame's own start.
    let mut two = vec![0xEE; 3];
    f.append(&mut two);
    assert_eq!(two.len(), 63);
    PauseFrame::default().append(&mut two);
    assert_eq!(two.len(), 123);
}

#[test]
fn corrupt_and_chosen_icrcs() {
    let mut buf = Vec::new();
    let mut f = RoceFrame {
        payload_len: 64,
        icrc: IcrcMode::Corrupt,
        ..RoceFrame::default()
    };
    f.write(&mut buf);
    let p = ip_packet(&buf, 14);
    assert_eq!(icrc::carried(p).map(|c| !c), icrc::compute(p));
    f.icrc = IcrcMode::Value(0x0403_0201);
    f.write(&mut buf);
    assert_eq!(&buf[buf.len() - 4..], &[1, 2, 3, 4]);
}

#[test]
fn ipv6_header_and_qinq_tags() {
    let mut f = RoceFrame::default();
    f.eth.outer_vlan = Some(VlanTag::dot1ad(100, 1));
    f.eth.vlan = Some(VlanTag {
        dei: true,
        ..VlanTag::dot1q(200, 3)
    });
    let src: Ipv6Addr = "fd00::1".parse().unwrap();
    let dst: Ipv6Addr = "fd00::2".parse().unwrap();
    f.ip = IpHeader {
        addrs: IpAddrs::V6 { src, dst },
        dscp: 46,
        ecn: ip::ECN_ECT1,
        ttl: 9,
        flow_label: 0xABCDE,
        ..IpHeader::default()
    };
    f.payload_len = 12;
    let mut buf = Vec::new();
    f.write(&mut buf);
    assert_eq!(
        &buf[12..22],
        &[0x88, 0xA8, 0x20, 100, 0x81, 0x00, 0x70, 200, 0x86, 0xDD]
    );
    let v6 = &buf[22..62];
    let tc = (46u32 << 2) | 1;
    assert_eq!(
        u32::from_be_bytes(v6[0..4].try_into().unwrap()),
        (6 << 28) | (tc << 20) | 0xABCDE
    );
    assert_eq!(u16::from_be_bytes([v6[4], v6[5]]), 8 + 12 + 12 + 4);
    assert_eq!(&v6[6..8], &[17, 9]);
    assert_eq!(&v6[8..24], &src.octets());
    assert_eq!(&v6[24..40], &dst.octets());
    assert_eq!(buf.len(), 22 + 40 + 36);
    assert!(icrc_valid(&buf, 22));
}

#[test]
fn udp_checksum_when_asked() {
    for addrs in [
        IpHeader::default().addrs,
        IpAddrs::V6 {
            src: "fd00::1".parse().unwrap(),
            dst: "fd00::2".parse().unwrap(),
        },
    ] {
        let f = RoceFrame {
            ip: IpHeader {
                addrs,
                ..IpHeader::default()
            },
            udp_checksum: true,
            payload_len: 33,
            ..RoceFrame::default()
        };
        let mut buf = Vec::new();
        f.write(&mut buf);
        let p = ip_packet(&buf, 14);
        let (hdr, dgram) = p.split_at(f.ip.header_len());
        let mut pseudo = Vec::new();
        if hdr[0] >> 4 == 4 {
            pseudo.extend_from_slice(&hdr[12..20]);
        } else {
            pseudo.extend_from_slice(&hdr[8..40]);
        }
        pseudo.extend_from_slice(&[0, 17]);
        pseudo.extend_from_slice(&(dgram.len() as u16).to_be_bytes());
        pseudo.extend_from_slice(dgram);
        assert_ne!(&dgram[6..8], &[0, 0]);
        assert!(checksum_ok(&pseudo));
        assert!(icrc_valid(&buf, 14));
    }
}

#[test]
fn truncated_datagram_is_short_for_a_bth() {
    let f = RoceFrame {
        udp_truncate: Some(8 + 6),
        payload_len: 100,
        ..RoceFrame::default()
    };
    let mut buf = Vec::new();
    f.write(&mut buf);
    assert_eq!(buf.len(), 60); // 14 + 20 + 14 = 48, padded
    assert_eq!(u16::from_be_bytes([buf[16], buf[17]]), 20 + 14);
    assert!(checksum_ok(&buf[14..34]));
    assert_eq!(u16::from_be_bytes([buf[38], buf[39]]), 14);
    assert_eq!(&buf[42..48], &[0x04, 0, 0xFF, 0xFF, 0, 0]);
}

#[test]
fn explicit_pad_count_is_written_as_given() {
    let f = RoceFrame {
        payload_len: 4,
        bth: Bth {
            pad_count: Some(2),
            ..Bth::default()
        },
        ..RoceFrame::default()
    };
    let mut buf = Vec::new();
    f.write(&mut buf);
    assert_eq!(buf[43] & 0x30, 0x20);
    assert_eq!(buf.len(), 14 + 20 + 8 + 12 + 4 + 2 + 4);
    assert!(icrc_valid(&buf, 14));
}

#[test]
fn pfc_and_pause_frames() {
    let mut f = PfcFrame::single(3, 0xFFFF);
    f.quanta[5] = 7; // not enabled: written anyway
    let mut buf = Vec::new();
    f.write(&mut buf);
    let mut expect = vec![0x01, 0x80, 0xC2, 0x00, 0x00, 0x01, 0x02, 0, 0, 0, 0, 0xFE];
    expect.extend_from_slice(&[0x88, 0x08, 0x01, 0x01, 0x00, 0x08]);
    expect.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0, 0, 7, 0, 0, 0, 0]);
    expect.resize(60, 0);
    assert_eq!(buf, expect);

    let f = PfcFrame {
        vlan: Some(VlanTag::dot1q(0, 3)),
        enable: 0xFF,
        quanta: [1, 2, 3, 4, 5, 6, 7, 0xFFFF],
        ..PfcFrame::default()
    };
    f.write(&mut buf);
    assert_eq!(
        &buf[12..22],
        &[0x81, 0x00, 0x60, 0x00, 0x88, 0x08, 0x01, 0x01, 0, 0xFF]
    );
    assert_eq!(&buf[36..38], &[0xFF, 0xFF]);
    assert_eq!(buf.len(), 60);

    PauseFrame {
        quanta: 0x1234,
        ..PauseFrame::default()
    }
    .write(&mut buf);
    let mut expect = vec![0x01, 0x80, 0xC2, 0x00, 0x00, 0x01, 0x02, 0, 0, 0, 0, 0xFE];
    expect.extend_from_slice(&[0x88, 0x08, 0x00, 0x01, 0x12, 0x34]);
    expect.resize(60, 0);
    assert_eq!(buf, expect);
}

#[test]
fn erspan_ii_and_iii_wrap_the_inner_frame() {
    let inner = RoceFrame {
        payload_len: 100,
        ..RoceFrame::default()
    };
    let mut inner_bytes = Vec::new();
    inner.write(&mut inner_bytes);

    let mut e = Erspan {
        gre_seq: 0x0102_0304,
        session_id: 0x3FF,
        vlan: 0x123,
        cos: 5,
        index: 0xABCDE,
        ip_id: 7,
        ..Erspan::default()
    };
    let mut buf = Vec::new();
    e.wrap(&inner).write(&mut buf);
    assert_eq!(e.overhead(), 14 + 20 + 8 + 8);
    assert_eq!(&buf[12..14], &[0x08, 0x00]);
    let ip = &buf[14..34];
    assert_eq!(ip[9], 47);
    assert_eq!(
        usize::from(u16::from_be_bytes([ip[2], ip[3]])),
        20 + 8 + 8 + inner_bytes.len()
    );
    assert!(checksum_ok(ip));
    assert_eq!(&buf[34..42], &[0x10, 0x00, 0x88, 0xBE, 1, 2, 3, 4]);
    assert_eq!(
        &buf[42..50],
        &[0x11, 0x23, 0xA3, 0xFF, 0x00, 0x0A, 0xBC, 0xDE]
    );
    assert_eq!(&buf[50..], &inner_bytes[..]);

    e.version = ErspanVersion::III;
    e.timestamp = 0x5566_7788;
    e.sgt = 0x99AA;
    e.hw_id = 0x3F;
    e.direction = true;
    e.granularity = 3;
    e.write(&inner, &mut buf);
    assert_eq!(e.overhead(), 14 + 20 + 8 + 12);
    assert_eq!(&buf[34..42], &[0x10, 0x00, 0x22, 0xEB, 1, 2, 3, 4]);
    assert_eq!(
        &buf[42..54],
        &[
            0x21, 0x23, 0xA3, 0xFF, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0x03, 0xFE
        ]
    );
    assert_eq!(&buf[54..], &inner_bytes[..]);
    // The inner ICRC still verifies (ERSPAN does not touch the inner frame).
    assert!(icrc_valid(&buf[54..], 14));

    // Raw bytes wrap the same way.
    let mut raw = Vec::new();
    e.write(&RawFrame(&inner_bytes), &mut raw);
    assert_eq!(raw, buf);
}

#[test]
fn pcap_header_and_records() {
    let mut w = PcapWriter::new(Vec::new(), linktype::ETHERNET, 64).unwrap();
    let frame: Vec<u8> = (0..100u8).collect();
    w.write_frame(0, 1_700_000_000_123_456_789, &frame).unwrap();
    w.write_frame_orig(0, 5, &frame[..60], 1500).unwrap();
    assert_eq!(w.frames(), 2);
    let bytes = w.finish().unwrap();

    assert_eq!(
        &bytes[..24],
        &[
            0x4D, 0x3C, 0xB2, 0xA1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 64, 0, 0, 0, 1, 0, 0, 0
        ]
    );
    let rec = &bytes[24..];
    assert_eq!(
        u32::from_le_bytes(rec[0..4].try_into().unwrap()),
        1_700_000_000
    );
    assert_eq!(
        u32::from_le_bytes(rec[4..8].try_into().unwrap()),
        123_456_789
    );
    assert_eq!(u32::from_le_bytes(rec[8..12].try_into().unwrap()), 64);
    assert_eq!(u32::from_le_bytes(rec[12..16].try_into().unwrap()), 100);
    assert_eq!(&rec[16..80], &frame[..64]);
    let rec = &rec[80..];
    assert_eq!(
        &rec[0..16],
        &[0, 0, 0, 0, 5, 0, 0, 0, 60, 0, 0, 0, 0xDC, 0x05, 0, 0]
    );
    assert_eq!(rec.len(), 16 + 60);

    // An independent reader agrees.
    let (rest, cap) = pcap_parser::pcap::parse_pcap(&bytes).unwrap();
    assert!(rest.is_empty());
    assert_eq!(cap.header.magic_number, PCAP_MAGIC_NS);
    assert_eq!(cap.blocks.len(), 2);
    assert_eq!((cap.blocks[0].caplen, cap.blocks[0].origlen), (64, 100));
    assert_eq!(cap.blocks[1].data, &frame[..60]);
}

#[test]
fn pcapng_blocks() {
    let mut w = PcapngWriter::new(Vec::new()).unwrap();
    assert_eq!(w.add_interface("tor1-eth0", 1, 0).unwrap(), 0);
    assert_eq!(w.add_interface("spine", 1, 61).unwrap(), 1);
    let frame: Vec<u8> = (0..70u8).collect();
    let ts = 0x0000_0001_2345_6789u64;
    w.write_frame(1, ts, &frame).unwrap();
    w.write_frame(0, ts + 1, &frame[..62]).unwrap();
    assert!(w.write_frame(2, 0, &frame).is_err());
    let bytes = w.finish().unwrap();

    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    // SHB
    assert_eq!(u32_at(0), PCAPNG_SHB);
    let shb_len = u32_at(4) as usize;
    assert_eq!(u32_at(8), PCAPNG_BYTE_ORDER_MAGIC);
    assert_eq!(&bytes[12..16], &[1, 0, 0, 0]);
    assert_eq!(&bytes[16..24], &[0xFF; 8]);
    assert_eq!(u32_at(shb_len - 4) as usize, shb_len);
    // IDB 0: linktype 1, snaplen 0, if_name "tor1-eth0" (9 bytes + 3 pad), if_tsresol 9
    let o = shb_len;
    assert_eq!(u32_at(o), PCAPNG_IDB);
    let idb_len = u32_at(o + 4) as usize;
    assert_eq!(idb_len, 12 + 8 + 4 + 12 + 4 + 4 + 4);
    assert_eq!(&bytes[o + 8..o + 16], &[1, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(&bytes[o + 16..o + 20], &[2, 0, 9, 0]);
    assert_eq!(&bytes[o + 20..o + 32], b"tor1-eth0\0\0\0");
    assert_eq!(&bytes[o + 32..o + 40], &[9, 0, 1, 0, 9, 0, 0, 0]);
    assert_eq!(&bytes[o + 40..o + 44], &[0, 0, 0, 0]);
    assert_eq!(u32_at(o + idb_len - 4) as usize, idb_len);
    // IDB 1
    let o = o + idb_len;
    assert_eq!(u32_at(o), PCAPNG_IDB);
    assert_eq!(u32_at(o + 12), 61);
    let o = o + u32_at(o + 4) as usize;
    // EPB on interface 1, cut to 61 bytes, padded to 64
    assert_eq!(u32_at(o), PCAPNG_EPB);
    assert_eq!(u32_at(o + 4), 32 + 64);
    assert_eq!(u32_at(o + 8), 1);
    assert_eq!(u32_at(o + 12), 1);
    assert_eq!(u32_at(o + 16), 0x2345_6789);
    assert_eq!(u32_at(o + 20), 61);
    assert_eq!(u32_at(o + 24), 70);
    assert_eq!(&bytes[o + 28..o + 89], &frame[..61]);
    assert_eq!(&bytes[o + 89..o + 92], &[0, 0, 0]);
    assert_eq!(u32_at(o + 92), 96);
    let o = o + 96;
    assert_eq!(u32_at(o + 8), 0);
    assert_eq!(u32_at(o + 20), 62);
    assert_eq!(u32_at(o + 24), 62);
    assert_eq!(o + 32 + 64, bytes.len());

    // An independent reader agrees.
    let cap = pcap_parser::pcapng::PcapNGCapture::from_file(&bytes).unwrap();
    let blocks = &cap.sections[0].blocks;
    assert_eq!(blocks.len(), 5);
    match &blocks[2] {
        pcap_parser::pcapng::Block::InterfaceDescription(idb) => {
            assert_eq!(idb.if_tsresol, 9);
            assert_eq!(idb.snaplen, 61);
        }
        b => panic!("{b:?}"),
    }
    match &blocks[3] {
        pcap_parser::pcapng::Block::EnhancedPacket(epb) => {
            assert_eq!((epb.if_id, epb.caplen, epb.origlen), (1, 61, 70));
            assert_eq!(&epb.data[..61], &frame[..61]);
        }
        b => panic!("{b:?}"),
    }
}

#[test]
fn capture_files_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.pcap");
    let mut w = PcapWriter::create(&path, linktype::ETHERNET, DEFAULT_SNAPLEN).unwrap();
    let mut buf = Vec::new();
    RoceFrame::default().write(&mut buf);
    w.write_frame(0, 1, &buf).unwrap();
    w.finish().unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 24 + 16 + 60);

    let path = dir.path().join("x.pcapng");
    let mut w = PcapngWriter::create(&path).unwrap();
    w.add_interface("a", 1, 0).unwrap();
    w.write_frame(0, 1, &buf).unwrap();
    w.finish().unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() > 100);

    let err = PcapWriter::create(dir.path().join("no/such/dir.pcap"), 1, 0).unwrap_err();
    assert!(err.to_string().contains("no/such/dir.pcap"), "{err}");
}
