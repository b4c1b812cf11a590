//! UET packets for the decoder tests: one per PDS type (the TSS header
//! included) and per SES header, byte by byte as the UE Specification
//! 1.0.1 lays them out — as Wireshark master's
//! `epan/dissectors/packet-uet.c` reads it (offsets, masks, widths) and
//! xdp2's `src/include/uet/pds.h` / `ses.h` define it where the two agree
//! (docs/inputs.md, "UET headers, and where the sources differ") — each
//! with the record's UET view the walk must fill, field by field, and the
//! frames that carry them: Ethernet/IPv4/UDP to port 4793, and the native
//! IP mode (IPv4 or IPv6, protocol 253, the entropy header first).
#![allow(dead_code)]
use rocescope::transport::uet::{UetView, uet_present as p};

/// The UDP source port of [`udp_frame`]: UET's entropy in UDP mode.
pub const ENTROPY: u16 = 0xC0DE;
/// The native IP mode's protocol number in these frames (the UEC
/// reference provider's).
pub const NATIVE_PROTOCOL: u8 = 253;

/// One UET packet: what follows the UDP header, and what the walk makes
/// of it (the entropy left to the carrier: [`ENTROPY`] over UDP).
pub struct Vector {
    pub name: &'static str,
    pub bytes: Vec<u8>,
    pub want: UetView,
    /// Bytes after the last header (the encrypted ones behind a TSS).
    pub payload_len: u32,
    /// The PDS header's length and the SES header's (0: none), for the
    /// cut tests.
    pub pds_len: usize,
    pub ses_len: usize,
}

fn be16(v: u16) -> [u8; 2] {
    v.to_be_bytes()
}

fn be32(v: u32) -> [u8; 4] {
    v.to_be_bytes()
}

fn be64(v: u64) -> [u8; 8] {
    v.to_be_bytes()
}

/// The 16-bit prefix: type (5 bits), next header or control type (4),
/// flags (7).
fn prefix(pds_type: u8, next_header: u8, flags: u8) -> [u8; 2] {
    be16(u16::from(pds_type) << 11 | u16::from(next_header) << 7 | u16::from(flags))
}

/// A 24-bit value as 3 bytes.
fn be24(v: u32) -> [u8; 3] {
    let b = v.to_be_bytes();
    [b[1], b[2], b[3]]
}

/// Standard SES request (44 bytes): opcode, flags, message id, index
/// generation, job id, PIDonFEP, resource index, buffer offset,
/// initiator, memory key, header data (with SOM; else reserved, payload
/// length, message offset), request length.
#[allow(clippy::too_many_arguments)]
fn ses_standard(opcode: u8, flags: u8, message_id: u16, job_id: u32) -> Vec<u8> {
    let mut b = vec![opcode, flags];
    b.extend(be16(message_id));
    b.push(0x11); // index generation
    b.extend(be24(job_id));
    b.extend(be16(0x0789)); // reserved (4 bits), PIDonFEP
    b.extend(be16(0x0ABC)); // reserved (4 bits), resource index
    b.extend(be64(0x0000_7F00_0000_1000)); // buffer offset
    b.extend(be32(0x0A00_0001)); // initiator
    b.extend(be64(0x1122_3344_5566_7788)); // memory key
    b.extend(be64(0x0000_0100_0000_2000)); // header data / length, offset
    b.extend(be32(65536)); // request length
    assert_eq!(b.len(), 44);
    b
}

/// Small (20) and medium (32) SES requests: opcode, flags, reserved and
/// request length (14 bits), index generation, job id, PIDonFEP, resource
/// index, buffer offset; the medium one also initiator and memory key.
fn ses_small_or_medium(medium: bool, opcode: u8, flags: u8, length: u16, job_id: u32) -> Vec<u8> {
    let mut b = vec![opcode, flags];
    b.extend(be16(length));
    b.push(0x22);
    b.extend(be24(job_id));
    b.extend(be16(0x0003));
    b.extend(be16(0x0004));
    b.extend(be64(0x0000_0000_0000_0040));
    if medium {
        b.extend(be32(0x0A00_0002));
        b.extend(be64(0xAABB_CCDD_EEFF_0011));
        assert_eq!(b.len(), 32);
    } else {
        assert_eq!(b.len(), 20);
    }
    b
}

/// The walk's UET view: `present` as given, the entropy of the UDP mode.
fn want(present: u16, v: UetView) -> UetView {
    UetView {
        entropy: ENTROPY,
        present: present | p::ENTROPY | p::PDS,
        ..v
    }
}

/// Every PDS type (1 TSS … 14 ROD_CC) and every SES header (small,
/// medium, standard request; response, with data, with small data).
pub fn vectors() -> Vec<Vector> {
    let mut v = Vec::new();
    let mut add = |name, bytes: Vec<u8>, want, payload_len, pds_len, ses_len| {
        v.push(Vector {
            name,
            bytes,
            want,
            payload_len,
            pds_len,
            ses_len,
        })
    };

    // RUD request (2), next header 3 (standard), AR; clear PSN offset -2.
    let mut b = prefix(2, 3, 0x08).to_vec();
    b.extend(be16(0xFFFE));
    b.extend(be32(0x0000_1001));
    b.extend(be16(0x0102));
    b.extend(be16(0x0304));
    // WRITE, SOM | EOM, message id 0x0A0B, job 0x123456.
    b.extend(ses_standard(0x01, 0x03, 0x0A0B, 0x12_3456));
    b.extend([0xEE; 16]);
    let w = UetView {
        pds_type: 2,
        next_header: 3,
        pds_flags: 0x08,
        psn: 0x1001,
        spdcid: 0x0102,
        dpdcid: 0x0304,
        ses_opcode: 0x01,
        ses_flags: 0x03,
        message_id: 0x0A0B,
        job_id: 0x12_3456,
        ..UetView::default()
    };
    let present = p::PSN | p::PDC | p::DPDCID | p::SES | p::MESSAGE_ID | p::JOB_ID;
    add(
        "rud request, standard write",
        b,
        want(present, w),
        16,
        12,
        44,
    );

    // ROD request (3), next header 2 (medium), RETX | SYN: bytes 10-11 are
    // use-reserved-PDC (1) and the PSN offset 0x123, not a DPDCID.
    let mut b = prefix(3, 2, 0x14).to_vec();
    b.extend(be16(0x0001));
    b.extend(be32(0xFFFF_FFF0));
    b.extend(be16(0x0005));
    b.extend(be16(0x8123));
    // SEND, HD | SOM, request length 0x0100, job 0x000777.
    b.extend(ses_small_or_medium(true, 0x05, 0x05, 0x0100, 0x777));
    let w = UetView {
        pds_type: 3,
        next_header: 2,
        pds_flags: 0x14,
        psn: 0xFFFF_FFF0,
        spdcid: 0x0005,
        ses_opcode: 0x05,
        ses_flags: 0x05,
        job_id: 0x777,
        ..UetView::default()
    };
    let present = p::PSN | p::PDC | p::SES | p::JOB_ID;
    add(
        "rod request syn, medium send",
        b,
        want(present, w),
        0,
        12,
        32,
    );

    // RUDI request (4), next header 1 (small): reserved, packet id.
    let mut b = prefix(4, 1, 0).to_vec();
    b.extend(be16(0));
    b.extend(be32(0x9988_7766));
    // DATAGRAM_SEND, SOM | EOM, request length 64, job 0x0000AA.
    b.extend(ses_small_or_medium(false, 0x07, 0x03, 64, 0xAA));
    b.extend([0x5A; 8]);
    let w = UetView {
        pds_type: 4,
        next_header: 1,
        pkt_id: 0x9988_7766,
        ses_opcode: 0x07,
        ses_flags: 0x03,
        job_id: 0xAA,
        ..UetView::default()
    };
    add(
        "rudi request, small datagram send",
        b,
        want(p::PKT_ID | p::SES | p::JOB_ID, w),
        8,
        8,
        20,
    );

    // RUDI response (5), no SES.
    let mut b = prefix(5, 0, 0).to_vec();
    b.extend(be16(0));
    b.extend(be32(1));
    let w = UetView {
        pds_type: 5,
        pkt_id: 1,
        ..UetView::default()
    };
    add("rudi response", b, want(p::PKT_ID, w), 0, 8, 0);

    // UUD request (6), next header 3: TAGGED_SEND, EOM only (no SOM:
    // payload length and message offset in bytes 32-39).
    let mut b = prefix(6, 3, 0).to_vec();
    b.extend(be16(0));
    b.extend(ses_standard(0x09, 0x02, 0x0042, 0x00_0102));
    b.extend([0x11; 4]);
    let w = UetView {
        pds_type: 6,
        next_header: 3,
        ses_opcode: 0x09,
        ses_flags: 0x02,
        message_id: 0x0042,
        job_id: 0x102,
        ..UetView::default()
    };
    add(
        "uud request, standard tagged send",
        b,
        want(p::SES | p::MESSAGE_ID | p::JOB_ID, w),
        4,
        4,
        44,
    );

    // ACK (7), next header 4 (response), M and REQ 1 (clear): ACK PSN
    // offset 3, cumulative PSN 0x1000.
    let mut b = prefix(7, 4, 0x22).to_vec();
    b.extend(be16(3));
    b.extend(be32(0x1000));
    b.extend(be16(0x0304));
    b.extend(be16(0x0102));
    // Response (opcode 1), version 0 and return code 0, message id, the
    // resource index generation, job id, modified length.
    b.extend([0x01, 0x00]);
    b.extend(be16(0x0A0B));
    b.push(0x11);
    b.extend(be24(0x12_3456));
    b.extend(be32(4096));
    let w = UetView {
        pds_type: 7,
        next_header: 4,
        pds_flags: 0x22,
        cack_psn: 0x1000,
        ack_psn: 0x1003,
        spdcid: 0x0304,
        dpdcid: 0x0102,
        ses_opcode: 0x01,
        message_id: 0x0A0B,
        job_id: 0x12_3456,
        ..UetView::default()
    };
    let present = p::PDC | p::DPDCID | p::ACK | p::SES | p::MESSAGE_ID | p::JOB_ID;
    add("ack, response", b, want(present, w), 0, 12, 12);

    // ACK_CC (8), next header 5 (response with data), RETX: ACK PSN
    // offset -1; CC type 0 (NSCC), MPR 64, SACK PSN offset 1, the bitmap,
    // 8 bytes of NSCC state.
    let mut b = prefix(8, 5, 0x10).to_vec();
    b.extend(be16(0xFFFF));
    b.extend(be32(0x2000));
    b.extend(be16(7));
    b.extend(be16(8));
    b.extend([0x00, 64]);
    b.extend(be16(1));
    b.extend(be64(0x8000_0000_0000_0005));
    b.extend(be64(0x0102_0304_0506_0708));
    // Response with data (opcode 2), return code 1, message id 0x42,
    // reserved, job 0x000102, the read's message id 0x41, payload length
    // 16, modified length, message offset.
    b.extend([0x02, 0x01]);
    b.extend(be16(0x0042));
    b.push(0);
    b.extend(be24(0x102));
    b.extend(be16(0x0041));
    b.extend(be16(16));
    b.extend(be32(16));
    b.extend(be32(0));
    b.extend([0xAB; 16]);
    let w = UetView {
        pds_type: 8,
        next_header: 5,
        pds_flags: 0x10,
        cack_psn: 0x2000,
        ack_psn: 0x1FFF,
        spdcid: 7,
        dpdcid: 8,
        sack_base: 0x2001,
        sack_bitmap: 0x8000_0000_0000_0005,
        cc_type: 0,
        cc_state: 0x0102_0304_0506_0708,
        ses_opcode: 0x02,
        ses_flags: 0x01,
        message_id: 0x42,
        job_id: 0x102,
        ..UetView::default()
    };
    let present =
        p::PDC | p::DPDCID | p::ACK | p::SACK | p::CC | p::SES | p::MESSAGE_ID | p::JOB_ID;
    add(
        "ack_cc nscc, response with data",
        b,
        want(present, w),
        16,
        32,
        20,
    );

    // ACK_CCX (9), no SES: CCX type 2, MPR 1, SACK PSN offset 8, bitmap
    // 0xFF, 16 bytes of CCX state (40 bytes, as Wireshark master reads it).
    let mut b = prefix(9, 0, 0).to_vec();
    b.extend(be16(0));
    b.extend(be32(5));
    b.extend(be16(9));
    b.extend(be16(10));
    b.extend([0x20, 1]);
    b.extend(be16(8));
    b.extend(be64(0xFF));
    b.extend([0xCC; 16]);
    let w = UetView {
        pds_type: 9,
        cack_psn: 5,
        ack_psn: 5,
        spdcid: 9,
        dpdcid: 10,
        sack_base: 13,
        sack_bitmap: 0xFF,
        ..UetView::default()
    };
    let present = p::PDC | p::DPDCID | p::ACK | p::SACK;
    add("ack_ccx", b, want(present, w), 0, 40, 0);

    // NACK (10), M | NT: TRIMMED, vendor code 0, NACK PSN 0x1002, the
    // largest PSN received + 1.
    let mut b = prefix(10, 0, 0x28).to_vec();
    b.extend([0x01, 0x00]);
    b.extend(be32(0x1002));
    b.extend(be16(0x0304));
    b.extend(be16(0x0102));
    b.extend(be32(0x1005));
    let w = UetView {
        pds_type: 10,
        pds_flags: 0x28,
        nack_code: 0x01,
        psn: 0x1002,
        spdcid: 0x0304,
        dpdcid: 0x0102,
        ..UetView::default()
    };
    let present = p::PSN | p::PDC | p::DPDCID | p::NACK;
    add("nack trimmed", b, want(present, w), 0, 16, 0);

    // CONTROL (11), control type 1 (ACK request) where a next header
    // would be, AR: probe opaque, PSN, PDC ids, payload.
    let mut b = prefix(11, 1, 0x08).to_vec();
    b.extend(be16(0));
    b.extend(be32(0x1004));
    b.extend(be16(0x0102));
    b.extend(be16(0x0304));
    b.extend(be32(0x0A0B));
    let w = UetView {
        pds_type: 11,
        next_header: 1,
        pds_flags: 0x08,
        psn: 0x1004,
        spdcid: 0x0102,
        dpdcid: 0x0304,
        ..UetView::default()
    };
    let present = p::PSN | p::PDC | p::DPDCID;
    add("control ack request", b, want(present, w), 0, 16, 0);

    // NACK_CCX (12): NO_PKT_BUFFER, then 16 bytes of CCX state (32).
    let mut b = prefix(12, 0, 0).to_vec();
    b.extend([0x07, 0x00]);
    b.extend(be32(0x3003));
    b.extend(be16(0x0011));
    b.extend(be16(0x0022));
    b.extend(be32(0x3004));
    b.extend([0xDD; 16]);
    let w = UetView {
        pds_type: 12,
        nack_code: 0x07,
        psn: 0x3003,
        spdcid: 0x0011,
        dpdcid: 0x0022,
        ..UetView::default()
    };
    let present = p::PSN | p::PDC | p::DPDCID | p::NACK;
    add("nack_ccx no packet buffer", b, want(present, w), 0, 32, 0);

    // RUD_CC request (13), next header 1 (small): CCC id 5, credit target
    // 0x000400; a small WRITE.
    let mut b = prefix(13, 1, 0).to_vec();
    b.extend(be16(0));
    b.extend(be32(0x3000));
    b.extend(be16(0x0011));
    b.extend(be16(0x0022));
    b.push(0x05);
    b.extend(be24(0x400));
    b.extend(ses_small_or_medium(false, 0x01, 0x03, 1024, 0x55));
    b.extend([0x77; 24]);
    let w = UetView {
        pds_type: 13,
        next_header: 1,
        psn: 0x3000,
        spdcid: 0x0011,
        dpdcid: 0x0022,
        ccc_id: 5,
        credit_target: 0x400,
        ses_opcode: 0x01,
        ses_flags: 0x03,
        job_id: 0x55,
        ..UetView::default()
    };
    let present = p::PSN | p::PDC | p::DPDCID | p::REQUEST_CC | p::SES | p::JOB_ID;
    add(
        "rud_cc request, small write",
        b,
        want(present, w),
        24,
        16,
        20,
    );

    // ROD_CC request (14), SYN, no SES: PSN offset 16, CCC id 6, credit 1.
    let mut b = prefix(14, 0, 0x04).to_vec();
    b.extend(be16(0));
    b.extend(be32(0x10));
    b.extend(be16(0x0033));
    b.extend(be16(0x0010));
    b.push(0x06);
    b.extend(be24(1));
    b.extend([0x42; 100]);
    let w = UetView {
        pds_type: 14,
        pds_flags: 0x04,
        psn: 0x10,
        spdcid: 0x0033,
        ccc_id: 6,
        credit_target: 1,
        ..UetView::default()
    };
    let present = p::PSN | p::PDC | p::REQUEST_CC;
    add("rod_cc request syn", b, want(present, w), 100, 16, 0);

    // ACK (7), next header 6 (response with small data, 4 bytes as
    // Wireshark master reads it): opcode 2, return code 0, length 8.
    let mut b = prefix(7, 6, 0).to_vec();
    b.extend(be16(0));
    b.extend(be32(0x1010));
    b.extend(be16(1));
    b.extend(be16(2));
    b.extend([0x02, 0x00]);
    b.extend(be16(8));
    b.extend([0x99; 8]);
    let w = UetView {
        pds_type: 7,
        next_header: 6,
        cack_psn: 0x1010,
        ack_psn: 0x1010,
        spdcid: 1,
        dpdcid: 2,
        ses_opcode: 0x02,
        ..UetView::default()
    };
    let present = p::PDC | p::DPDCID | p::ACK | p::SES;
    add(
        "ack, response with small data",
        b,
        want(present, w),
        8,
        12,
        4,
    );

    // TSS (type 1) with SP: SDI 0x000123, SSI, TSC; then 40 encrypted
    // bytes (the last 16 the integrity check value), counted only.
    let mut b = be32(1 << 27 | 0x0400_0000 | 0x0123).to_vec();
    b.extend(be32(0xCAFE_F00D));
    b.extend(be64(7));
    b.extend([0xE0; 40]);
    let w = UetView {
        pds_type: 1,
        ..UetView::default()
    };
    add("tss with ssi", b, want(p::TSS, w), 40, 16, 0);
    v
}

/// `payload` after Ethernet, IPv4 (10.0.0.1 → 10.0.0.2, DSCP 26, ECN 2)
/// and UDP from [`ENTROPY`] to `dport`.
pub fn udp_frame(dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = ethernet(0x0800);
    let udp_len = 8 + payload.len();
    f.extend(ipv4(17, udp_len));
    f.extend(be16(ENTROPY));
    f.extend(be16(dport));
    f.extend(be16(udp_len as u16));
    f.extend(be16(0));
    f.extend_from_slice(payload);
    f
}

/// The native IP mode: `payload` after Ethernet, IPv4 (or IPv6) with
/// protocol [`NATIVE_PROTOCOL`] and the entropy header (`entropy`,
/// reserved 0).
pub fn native_frame(ipv6: bool, entropy: u16, payload: &[u8]) -> Vec<u8> {
    let len = 4 + payload.len();
    let mut f = if ipv6 {
        let mut f = ethernet(0x86DD);
        f.extend([0x60, 0x00, 0x00, 0x00]);
        f.extend(be16(len as u16));
        f.extend([NATIVE_PROTOCOL, 64]);
        f.extend([0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        f.extend([0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        f
    } else {
        let mut f = ethernet(0x0800);
        f.extend(ipv4(NATIVE_PROTOCOL, len));
        f
    };
    f.extend(be16(entropy));
    f.extend(be16(0));
    f.extend_from_slice(payload);
    f
}

fn ethernet(ethertype: u16) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01];
    f.extend(be16(ethertype));
    f
}

/// An IPv4 header (no options) of a packet with `payload_len` bytes after it.
fn ipv4(protocol: u8, payload_len: usize) -> Vec<u8> {
    let mut h = vec![0x45, 26 << 2 | 2];
    h.extend(be16((20 + payload_len) as u16));
    h.extend([0, 0, 0x40, 0, 64, protocol, 0, 0]);
    h.extend([10, 0, 0, 1, 10, 0, 0, 2]);
    h
}
