//! Parity with Wireshark: a capture of varied frames built by
//! `rocescope::synth` is decoded by `tshark` and by `rocescope::decode`, and
//! every BTH / extension header / IP / VLAN / PFC / PAUSE field tshark
//! reports must agree with the decoder's record. Fields tshark does not
//! dissect (FECN/BECN in Wireshark 4.0, ICRC verdicts, ERSPAN unwrapping,
//! malformed datagrams) are held against what the builder was asked to build.
//!
//! RoCEv1 frames (EtherType 0x8915: GRH, BTH, …) are among them; Wireshark
//! dissects that EtherType as InfiniBand by default, GRH included.
//!
//! Wireshark dissects UDP port 4791 as RoCEv2 ("RRoCE", protocol
//! `infiniband`) by default; the test still passes `-d udp.port==4791,infiniband`
//! so a site preference cannot turn that off. `-E occurrence=l` picks the
//! last occurrence of a field: the innermost VLAN tag and, for ERSPAN, the
//! mirrored frame's headers.
//!
//! Skipped (with a message) when tshark is not installed.
use crate::common;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::process::Command;

use common::tshark::{self, Row, num};
use rocescope::proto::{ib, ip, linktype, udp};
use rocescope::synth::frame::*;
use rocescope::synth::{CaptureWrite, PcapWriter};
use rocescope::{Kind, PacketRecord, flags};

/// What was built, frame by frame: the ground truth.
#[derive(Clone, Debug)]
enum Spec {
    Roce {
        frame: Box<RoceFrame>,
        erspan: Option<Erspan>,
    },
    Pfc(PfcFrame),
    Pause(PauseFrame),
}

#[derive(Clone, Debug)]
struct Case {
    spec: Spec,
    /// Bytes kept in the capture when cut below the frame length.
    cut: Option<usize>,
}

/// Fields requested from tshark (`frame.number` first).
const FIELDS: &[&str] = &[
    "frame.number",
    "frame.len",
    "frame.cap_len",
    "eth.src",
    "eth.dst",
    "vlan.id",
    "vlan.priority",
    "ip.src",
    "ip.dst",
    "ip.dsfield.dscp",
    "ip.dsfield.ecn",
    "ipv6.src",
    "ipv6.dst",
    "ipv6.tclass.dscp",
    "ipv6.tclass.ecn",
    "udp.srcport",
    "udp.dstport",
    "infiniband.grh.sgid",
    "infiniband.grh.dgid",
    "infiniband.grh.tclass",
    "infiniband.bth.opcode",
    "infiniband.bth.se",
    "infiniband.bth.m",
    "infiniband.bth.padcnt",
    "infiniband.bth.tver",
    "infiniband.bth.p_key",
    "infiniband.bth.destqp",
    "infiniband.bth.a",
    "infiniband.bth.psn",
    "infiniband.deth.q_key",
    "infiniband.deth.srcqp",
    "infiniband.reth.va",
    "infiniband.reth.r_key",
    "infiniband.reth.dmalen",
    "infiniband.atomiceth.swapdt",
    "infiniband.atomiceth.cmpdt",
    "infiniband.aeth.syndrome",
    "infiniband.aeth.msn",
    "infiniband.atomicacketh.origremdt",
    "infiniband.immdt",
    "infiniband.ieth",
    "infiniband.invariant.crc",
    "macc.opcode",
    "macc.pause_time",
    "macc.cbfc.enbv",
    "macc.cbfc.pause_time.c0",
    "macc.cbfc.pause_time.c1",
    "macc.cbfc.pause_time.c2",
    "macc.cbfc.pause_time.c3",
    "macc.cbfc.pause_time.c4",
    "macc.cbfc.pause_time.c5",
    "macc.cbfc.pause_time.c6",
    "macc.cbfc.pause_time.c7",
];

/// Candidate names of BTH FECN/BECN fields in newer Wireshark releases;
/// compared when this tshark knows them.
const OPTIONAL_FIELDS: &[(&str, &str)] = &[
    ("infiniband.bth.fecn", "fecn"),
    ("infiniband.bth.becn", "becn"),
    ("infiniband.bth.f", "fecn"),
    ("infiniband.bth.b", "becn"),
];

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// A varied RoCE frame number `i` (values spread over every field).
fn roce(i: u32, opcode: u8) -> RoceFrame {
    let mut f = RoceFrame::default();
    f.eth.src = [0x02, 0x11, 0, 0, (i >> 8) as u8, i as u8];
    f.ip.addrs = IpAddrs::V4 {
        src: Ipv4Addr::new(10, 1, (i % 7) as u8, 1),
        dst: Ipv4Addr::new(10, 2, (i % 5) as u8, 2),
    };
    f.ip.dscp = [26, 0, 46, 63, 24][i as usize % 5];
    f.ip.ecn = (i % 4) as u8;
    f.ip.id = i as u16;
    f.udp_sport = 0xC000 | (i as u16 * 37);
    f.bth = Bth {
        opcode,
        se: i.is_multiple_of(3),
        migreq: i % 5 == 1,
        pad_count: None,
        tver: 0,
        pkey: if i.is_multiple_of(4) {
            0xFFFF
        } else {
            0x8000 | i as u16
        },
        fecn: i % 6 == 2,
        becn: i % 7 == 3,
        dest_qp: (0x000100 + i * 0x10101) & ib::QPN_MASK,
        ack_req: i % 2 == 1,
        psn: (0xFFFF00 + i * 3) & ib::PSN_MASK,
    };
    f.ext = ExtHeaders {
        dc_bth: [0xD0 ^ i as u8; 8],
        dcceth: [0xCC ^ i as u8; 16],
        rdeth_eecnxt: 0x0E_0000 | i,
        deth_qkey: 0x8001_0000 | i,
        deth_src_qp: 0x00_0400 + i,
        xrc_srq: 0,
        feth_sel: (i % 4) as u8,
        feth_plt: (i % 16) as u8,
        reth_va: 0x7F00_0000_0000_0000 | u64::from(i) << 12,
        reth_rkey: 0x1000 + i,
        reth_len: 4096 * (i % 9),
        atomic_va: 0x5500_0000_0000_0000 | u64::from(i) << 3,
        atomic_rkey: 0xA000 + i,
        atomic_swap_add: 0x0123_4567_89AB_CDEF ^ u64::from(i),
        atomic_compare: 0xFEDC_BA98_7654_3210 ^ u64::from(i),
        aeth_syndrome: 0x1F,
        aeth_msn: 0x00_1000 + i,
        atomic_orig: 0x1111_2222_3333_4444 + u64::from(i),
        imm: 0xC0DE_0000 | i,
        ieth_rkey: 0xBEEF_0000 | i,
    };
    f.payload_len = [0, 1, 2, 3, 4, 64, 255, 1024][i as usize % 8];
    f.payload_seed = i as u8;
    f
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let mut push = |spec: Spec| out.push(Case { spec, cut: None });
    let mut i = 0u32;
    let mut next = || {
        i += 1;
        i
    };
    let roce_spec = |frame: RoceFrame| Spec::Roce {
        frame: Box::new(frame),
        erspan: None,
    };

    // Every RC opcode (sends, writes, read request/responses, ACK, atomics, invalidate).
    for opcode in (0x00..=0x14).chain([0x16, 0x17]) {
        push(roce_spec(roce(next(), opcode)));
    }
    // Every UC opcode.
    for opcode in 0x20..=0x2B {
        push(roce_spec(roce(next(), opcode)));
    }
    // Every RD opcode, in mlx5's Dynamically Connected layout (DC header
    // after the BTH); 0x55 as DC CONNECT (SE clear, a DCCETH) and without.
    for opcode in 0x40..=0x55 {
        push(roce_spec(roce(next(), opcode)));
    }
    let mut f = roce(next(), 0x55);
    f.bth.se = !f.bth.se;
    push(roce_spec(f));
    // Every XRC opcode (Wireshark 4.0 decodes their BTH only: the rest is
    // held against what was built).
    for opcode in (0xA0..=0xB4).chain([0xB6, 0xB7]) {
        push(roce_spec(roce(next(), opcode)));
    }
    // UD with DETH (and ImmDt), over IPv4 and IPv6.
    for opcode in [0x64, 0x65] {
        push(roce_spec(roce(next(), opcode)));
        let mut f = roce(next(), opcode);
        f.ip.addrs = IpAddrs::V6 {
            src: v6("fd00:1::10"),
            dst: v6("fd00:2::20"),
        };
        f.ip.flow_label = 0x12345;
        push(roce_spec(f));
    }
    // ACK, RNR NAK and NAK syndromes, plain and atomic ACKs.
    for syndrome in [
        0x00, 0x0A, 0x1F, 0x20, 0x2E, 0x3F, 0x60, 0x61, 0x62, 0x63, 0x64,
    ] {
        let mut f = roce(next(), 0x11);
        f.ext.aeth_syndrome = syndrome;
        push(roce_spec(f));
    }
    let mut f = roce(next(), 0x12);
    f.ext.aeth_syndrome = 0x05;
    push(roce_spec(f));
    // CNPs: BECN, FECN, IPv6, tagged.
    let mut f = RoceFrame::cnp(0x00_0118);
    f.ip.ecn = ip::ECN_ECT0;
    f.ip.dscp = 48;
    push(roce_spec(f));
    let mut f = RoceFrame::cnp(0xABCDEF);
    f.bth.fecn = true;
    f.udp_sport = 0;
    push(roce_spec(f));
    let mut f = RoceFrame::cnp(0x00_0042);
    f.ip.addrs = IpAddrs::V6 {
        src: v6("2001:db8::1"),
        dst: v6("2001:db8::2"),
    };
    f.eth.vlan = Some(VlanTag::dot1q(300, 6));
    push(roce_spec(f));
    // ECN and DSCP marks, every combination once.
    for ecn in [ip::ECN_NOT_ECT, ip::ECN_ECT1, ip::ECN_ECT0, ip::ECN_CE] {
        for dscp in [0, 26, 46, 63] {
            let mut f = roce(next(), 0x0A);
            f.ip.ecn = ecn;
            f.ip.dscp = dscp;
            push(roce_spec(f));
        }
    }
    // VLAN: 802.1Q with every PCP, QinQ (802.1ad and 0x9100 outer tags).
    for pcp in 0..8 {
        let mut f = roce(next(), 0x06);
        f.eth.vlan = Some(VlanTag::dot1q(100 + u16::from(pcp), pcp));
        push(roce_spec(f));
    }
    let mut f = roce(next(), 0x04);
    f.eth.outer_vlan = Some(VlanTag::dot1ad(1000, 2));
    f.eth.vlan = Some(VlanTag::dot1q(4094, 3));
    push(roce_spec(f));
    let mut f = roce(next(), 0x0C);
    f.eth.outer_vlan = Some(VlanTag {
        tpid: 0x9100,
        ..VlanTag::dot1ad(7, 0)
    });
    f.eth.vlan = Some(VlanTag::dot1q(8, 5));
    push(roce_spec(f));
    // IPv6 across opcodes.
    for opcode in [0x0A, 0x0C, 0x10, 0x11, 0x13, 0x05] {
        let mut f = roce(next(), opcode);
        f.ip.addrs = IpAddrs::V6 {
            src: v6("fd00::a"),
            dst: v6("fd00::b"),
        };
        f.ip.ttl = 3;
        push(roce_spec(f));
    }
    // RoCEv1 (GRH over Ethernet) across services and opcodes, IPv4-mapped
    // and IPv6 GIDs, tagged, a CNP, a bad ICRC.
    for opcode in [
        0x04, 0x0A, 0x0B, 0x0C, 0x10, 0x11, 0x12, 0x13, 0x24, 0x64, 0x65,
    ] {
        let mut f = roce(next(), opcode);
        f.version = RoceVersion::V1;
        if opcode & 1 == 1 {
            f.ip.addrs = IpAddrs::V6 {
                src: v6("fe80::211:22ff:fe33:4455"),
                dst: v6("fe80::266:77ff:fe88:99aa"),
            };
            f.ip.flow_label = 0xABCDE;
        }
        if opcode == 0x0C {
            f.eth.vlan = Some(VlanTag::dot1q(20, 4));
        }
        push(roce_spec(f));
    }
    let mut f = RoceFrame::cnp(0x00_0777);
    f.version = RoceVersion::V1;
    push(roce_spec(f));
    let mut f = roce(next(), 0x0A);
    f.version = RoceVersion::V1;
    f.icrc = IcrcMode::Corrupt;
    push(roce_spec(f));
    // Shortest frame (Ethernet padding), UDP checksum set, a bad ICRC.
    let mut f = roce(next(), 0x04);
    f.payload_len = 0;
    push(roce_spec(f));
    let mut f = roce(next(), 0x0A);
    f.udp_checksum = true;
    push(roce_spec(f));
    let mut f = roce(next(), 0x0A);
    f.icrc = IcrcMode::Corrupt;
    push(roce_spec(f));
    // ERSPAN II and III around RoCE frames.
    for version in [ErspanVersion::II, ErspanVersion::III] {
        let k = next();
        let mut f = roce(k, 0x0B);
        f.eth.vlan = Some(VlanTag::dot1q(55, 3));
        push(Spec::Roce {
            frame: Box::new(f),
            erspan: Some(Erspan {
                version,
                gre_seq: k,
                session_id: 12,
                ..Erspan::default()
            }),
        });
    }
    // PFC: vectors and quanta, XON, tagged.
    for (enable, quanta) in [
        (0x08u8, [0, 0, 0, 0xFFFF, 0, 0, 0, 0]),
        (0x08, [0; 8]),
        (0xFF, [1, 2, 3, 4, 5, 6, 7, 0xFFFF]),
        (0x48, [0, 0, 0, 0x1000, 0, 0, 0x20, 0]),
        (0x00, [9, 9, 9, 9, 9, 9, 9, 9]),
        (0x81, [0xFFFF, 0, 0, 0, 0, 0, 0, 1]),
    ] {
        push(Spec::Pfc(PfcFrame {
            src: [0x02, 0x22, 0, 0, 0, enable],
            enable,
            quanta,
            ..PfcFrame::default()
        }));
    }
    push(Spec::Pfc(PfcFrame {
        vlan: Some(VlanTag::dot1q(0, 3)),
        ..PfcFrame::single(3, 0x7FFF)
    }));
    // PAUSE.
    for quanta in [0xFFFF, 0, 0x0100] {
        push(Spec::Pause(PauseFrame {
            quanta,
            ..PauseFrame::default()
        }));
    }
    // Snaplen cuts: inside the payload (BTH + RETH survive), right after the BTH.
    let mut f = roce(next(), 0x0A);
    f.payload_len = 1024;
    out.push(Case {
        spec: Spec::Roce {
            frame: Box::new(f),
            erspan: None,
        },
        cut: Some(14 + 20 + 8 + 12 + 16 + 30),
    });
    let mut f = roce(next(), 0x04);
    f.payload_len = 512;
    f.eth.vlan = Some(VlanTag::dot1q(9, 1));
    out.push(Case {
        spec: Spec::Roce {
            frame: Box::new(f),
            erspan: None,
        },
        cut: Some(18 + 20 + 8 + 12),
    });
    // A datagram to 4791 too short for a BTH.
    let mut f = roce(next(), 0x04);
    f.udp_truncate = Some(8 + 6);
    out.push(Case {
        spec: Spec::Roce {
            frame: Box::new(f),
            erspan: None,
        },
        cut: None,
    });
    out
}

fn build(case: &Case, buf: &mut Vec<u8>) {
    match &case.spec {
        Spec::Roce {
            frame,
            erspan: None,
        } => frame.write(buf),
        Spec::Roce {
            frame,
            erspan: Some(e),
        } => e.write(frame.as_ref(), buf),
        Spec::Pfc(f) => f.write(buf),
        Spec::Pause(f) => f.write(buf),
    }
}

/// The fields this tshark knows.
fn known_fields() -> std::collections::HashSet<String> {
    let out = Command::new("tshark")
        .args(["-G", "fields"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split('\t').nth(2).map(str::to_string))
        .collect()
}

fn run_tshark(path: &Path, fields: &[&str]) -> Vec<Row> {
    tshark::fields(
        path,
        &[
            "-n",
            "-d",
            "udp.port==4791,infiniband",
            "-E",
            "occurrence=l",
        ],
        fields,
    )
}

/// A tshark byte string (`01020304` or `01:02:03:04`) read big-endian.
fn bytes_be(s: &str) -> u64 {
    u64::from_str_radix(&s.replace(':', ""), 16).unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

fn mac(s: &str) -> [u8; 6] {
    let v: Vec<u8> = s
        .split(':')
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect();
    v.try_into().unwrap()
}

fn ip16(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
        IpAddr::V6(a) => a.octets(),
    }
}

fn to_u32<T: TryInto<u32>>(v: T) -> u32 {
    v.try_into().ok().expect("fits in u32")
}

fn to_u64<T: TryInto<u64>>(v: T) -> u64 {
    v.try_into().ok().expect("fits in u64")
}

/// Collects mismatches instead of stopping at the first.
struct Checker<'a> {
    frame: u64,
    row: &'a Row,
    errors: Vec<String>,
    compared: usize,
}

impl Checker<'_> {
    fn eq(&mut self, what: &str, ours: u64, theirs: u64) {
        self.compared += 1;
        if ours != theirs {
            self.errors.push(format!(
                "frame {}: {what}: decoder {ours:#x}, expected {theirs:#x}",
                self.frame
            ));
        }
    }

    fn flag(&mut self, what: &str, ok: bool) {
        self.compared += 1;
        if !ok {
            self.errors
                .push(format!("frame {}: {what} does not hold", self.frame));
        }
    }

    /// Compares with tshark's `field` when tshark shows it.
    fn field(&mut self, field: &str, ours: u64) {
        if let Some(v) = self.row.get(field) {
            let theirs = num(v);
            self.eq(field, ours, theirs);
        }
    }
}

fn check_against_tshark(c: &mut Checker<'_>, rec: &PacketRecord, optional: &[(&str, &str)]) {
    let row = c.row;
    if let Some(v) = row.get("frame.len") {
        c.eq("frame_len", rec.frame_len.into(), num(v));
    }
    if let Some(v) = row.get("frame.cap_len") {
        c.eq("cap_len", rec.cap_len.into(), num(v));
    }
    if let Some(v) = row.get("eth.src") {
        c.flag("src_mac", rec.src_mac == mac(v));
    }
    if let Some(v) = row.get("eth.dst") {
        c.flag("dst_mac", rec.dst_mac == mac(v));
    }
    if row.contains_key("vlan.id") {
        c.flag("HAS_VLAN", rec.has(flags::HAS_VLAN));
        c.field("vlan.id", rec.vlan.into());
        c.field("vlan.priority", rec.pcp.into());
    }
    if let (Some(s), Some(d)) = (row.get("ip.src"), row.get("ip.dst")) {
        c.flag("HAS_IPV4", rec.has(flags::HAS_IPV4));
        c.flag("ip.src", rec.src_ip == ip16(s.parse().unwrap()));
        c.flag("ip.dst", rec.dst_ip == ip16(d.parse().unwrap()));
        c.field("ip.dsfield.dscp", rec.dscp.into());
        c.field("ip.dsfield.ecn", rec.ecn.into());
    }
    if let (Some(s), Some(d)) = (row.get("ipv6.src"), row.get("ipv6.dst")) {
        c.flag("HAS_IPV6", rec.has(flags::HAS_IPV6));
        c.flag("ipv6.src", rec.src_ip == ip16(s.parse().unwrap()));
        c.flag("ipv6.dst", rec.dst_ip == ip16(d.parse().unwrap()));
        c.field("ipv6.tclass.dscp", rec.dscp.into());
        c.field("ipv6.tclass.ecn", rec.ecn.into());
    }
    if let (Some(s), Some(d)) = (
        row.get("infiniband.grh.sgid"),
        row.get("infiniband.grh.dgid"),
    ) {
        c.flag("HAS_GRH", rec.has(flags::HAS_GRH));
        c.flag("no IP", !rec.has(flags::HAS_IPV4 | flags::HAS_IPV6));
        c.flag("grh.sgid", rec.src_ip == ip16(s.parse().unwrap()));
        c.flag("grh.dgid", rec.dst_ip == ip16(d.parse().unwrap()));
        // tshark shows the TClass as one number; RoCEv1's is read as DSCP
        // and ECN (docs/inputs.md), native InfiniBand's is not.
        if !rec.has(flags::IB_LRH) {
            c.field("infiniband.grh.tclass", u64::from(rec.dscp << 2 | rec.ecn));
        }
    }
    if row.get("udp.dstport").map(|p| num(p)) == Some(4791) {
        c.field("udp.srcport", rec.udp_sport.into());
    }
    if let Some(op) = row.get("infiniband.bth.opcode") {
        let op = num(op) as u8;
        let kind = if op == ib::OPCODE_CNP {
            Kind::Cnp
        } else {
            Kind::Roce
        };
        c.flag(
            &format!("kind {:?} == {kind:?}", rec.kind()),
            rec.kind() == kind,
        );
        c.flag("HAS_BTH", rec.has(flags::HAS_BTH));
        c.eq("opcode", rec.roce().opcode.into(), op.into());
        c.field("infiniband.bth.se", rec.has(flags::SE).into());
        c.field("infiniband.bth.m", rec.has(flags::MIGREQ).into());
        c.field("infiniband.bth.padcnt", rec.roce().pad_count.into());
        c.field("infiniband.bth.tver", rec.roce().tver.into());
        c.field("infiniband.bth.p_key", rec.roce().pkey.into());
        c.field("infiniband.bth.destqp", rec.roce().dest_qp.into());
        c.field("infiniband.bth.a", rec.has(flags::ACK_REQ).into());
        c.field("infiniband.bth.psn", rec.roce().psn.into());
        for (field, which) in optional {
            let ours = if *which == "fecn" {
                rec.has(flags::FECN)
            } else {
                rec.has(flags::BECN)
            };
            c.field(field, ours.into());
        }
        let mask = ib::ext_headers(op);
        if row.contains_key("infiniband.deth.q_key") {
            c.flag("HAS_DETH", rec.has(flags::HAS_DETH));
            c.field("infiniband.deth.q_key", rec.roce().deth_qkey.into());
            c.field("infiniband.deth.srcqp", rec.roce().deth_src_qp.into());
        }
        if mask & ib::ext::ATOMIC_ETH != 0 {
            // Wireshark shows the AtomicETH VA and R_Key in the RETH fields.
            if row.contains_key("infiniband.atomiceth.swapdt") {
                c.flag("HAS_ATOMIC_ETH", rec.has(flags::HAS_ATOMIC_ETH));
                c.field("infiniband.reth.va", rec.roce().atomic_va);
                c.field("infiniband.reth.r_key", rec.roce().atomic_rkey.into());
                c.field("infiniband.atomiceth.swapdt", rec.roce().atomic_swap_add);
                c.field("infiniband.atomiceth.cmpdt", rec.roce().atomic_compare);
            }
        } else if row.contains_key("infiniband.reth.dmalen") {
            c.flag("HAS_RETH", rec.has(flags::HAS_RETH));
            c.field("infiniband.reth.va", rec.roce().reth_va);
            c.field("infiniband.reth.r_key", rec.roce().reth_rkey.into());
            c.field("infiniband.reth.dmalen", rec.roce().reth_len.into());
        }
        if row.contains_key("infiniband.aeth.syndrome") {
            c.flag("HAS_AETH", rec.has(flags::HAS_AETH));
            c.field("infiniband.aeth.syndrome", rec.roce().aeth_syndrome.into());
            c.field("infiniband.aeth.msn", rec.roce().aeth_msn.into());
        }
        if row.contains_key("infiniband.atomicacketh.origremdt") {
            c.flag("HAS_ATOMIC_ACK_ETH", rec.has(flags::HAS_ATOMIC_ACK_ETH));
            c.field("infiniband.atomicacketh.origremdt", rec.roce().atomic_orig);
        }
        if let Some(v) = row.get("infiniband.immdt") {
            c.flag("HAS_IMMDT", rec.has(flags::HAS_IMMDT));
            c.eq("immdt", rec.roce().imm.into(), bytes_be(v));
        }
        if let Some(v) = row.get("infiniband.ieth") {
            c.flag("HAS_IETH", rec.has(flags::HAS_IETH));
            c.eq("ieth", rec.roce().ieth_rkey.into(), bytes_be(v));
        }
        if let Some(v) = row.get("infiniband.invariant.crc") {
            // Wireshark reads the four ICRC bytes big-endian; the record
            // holds the CRC value (little-endian on the wire).
            c.flag("ICRC_CHECKED", rec.has(flags::ICRC_CHECKED));
            c.eq("icrc", rec.roce().icrc.swap_bytes().into(), num(v));
        }
    }
    match row.get("macc.opcode").map(|v| num(v) as u16) {
        Some(0x0101) => {
            c.flag("kind pfc", rec.kind() == Kind::Pfc);
            c.flag("HAS_PFC", rec.has(flags::HAS_PFC));
            c.field("macc.cbfc.enbv", rec.link_control().pfc_enable.into());
            for p in 0..8 {
                c.field(
                    &format!("macc.cbfc.pause_time.c{p}"),
                    rec.link_control().pfc_quanta[p].into(),
                );
            }
        }
        Some(0x0001) => {
            c.flag("kind pause", rec.kind() == Kind::Pause);
            c.flag("HAS_PAUSE", rec.has(flags::HAS_PAUSE));
            c.field("macc.pause_time", rec.link_control().pause_quanta.into());
        }
        _ => {}
    }
}

/// Fields tshark cannot tell: held against what was built.
fn check_against_spec(c: &mut Checker<'_>, rec: &PacketRecord, case: &Case, wire_len: usize) {
    c.eq("frame_len", rec.frame_len.into(), wire_len as u64);
    let cap = case.cut.unwrap_or(wire_len).min(wire_len);
    c.eq("cap_len", rec.cap_len.into(), cap as u64);
    match &case.spec {
        Spec::Roce { frame, erspan } => {
            c.flag("ERSPAN flag", rec.has(flags::ERSPAN) == erspan.is_some());
            if frame.udp_truncate.is_some() {
                c.flag("kind malformed", rec.kind() == Kind::Malformed);
                return;
            }
            let kind = if frame.is_cnp() {
                Kind::Cnp
            } else {
                Kind::Roce
            };
            c.flag("kind", rec.kind() == kind);
            c.eq("opcode", rec.roce().opcode.into(), frame.bth.opcode.into());
            c.eq("psn", rec.roce().psn.into(), frame.bth.psn.into());
            c.eq(
                "dest_qp",
                rec.roce().dest_qp.into(),
                frame.bth.dest_qp.into(),
            );
            c.flag("FECN", rec.has(flags::FECN) == frame.bth.fecn);
            c.flag("BECN", rec.has(flags::BECN) == frame.bth.becn);
            // RoCEv1's GRH TClass is the traffic class the builder writes
            // from the same DSCP and ECN.
            c.flag("has traffic class", rec.has_traffic_class());
            c.eq("ecn", rec.ecn.into(), frame.ip.ecn.into());
            c.eq("dscp", rec.dscp.into(), frame.ip.dscp.into());
            c.flag("CE", rec.is_ce() == (frame.ip.ecn == 3));
            if frame.version == RoceVersion::V1 {
                // No IP or UDP header: no source port.
                c.flag("HAS_GRH", rec.has(flags::HAS_GRH));
                c.eq("roce_version", rec.roce_version().unwrap_or(0).into(), 1);
                c.eq("udp_sport", rec.udp_sport.into(), 0);
            } else {
                c.eq("roce_version", rec.roce_version().unwrap_or(0).into(), 2);
                c.eq("udp_sport", rec.udp_sport.into(), frame.udp_sport.into());
            }
            match frame.eth.vlan {
                Some(tag) => {
                    c.flag("HAS_VLAN", rec.has(flags::HAS_VLAN));
                    c.eq("vlan", rec.vlan.into(), tag.vid.into());
                    c.eq("pcp", rec.pcp.into(), tag.pcp.into());
                }
                None => c.flag("no VLAN", !rec.has(flags::HAS_VLAN)),
            }
            match frame.eth.outer_vlan {
                Some(tag) => {
                    c.flag("HAS_OUTER_VLAN", rec.has(flags::HAS_OUTER_VLAN));
                    c.eq("outer_vlan", rec.outer_vlan.into(), tag.vid.into());
                }
                None => c.flag("no outer VLAN", !rec.has(flags::HAS_OUTER_VLAN)),
            }
            let expect_icrc = match (case.cut, frame.icrc) {
                (Some(_), _) => None,
                (None, IcrcMode::Valid) => Some(true),
                (None, _) => Some(false),
            };
            c.flag(
                &format!("icrc_ok {:?} == {expect_icrc:?}", rec.icrc_ok()),
                rec.icrc_ok() == expect_icrc,
            );
            if rec.has(flags::HAS_PAYLOAD_LEN) {
                let payload = if frame.is_cnp() {
                    // The CNP's 16 reserved bytes may be counted or not.
                    rec.payload_len
                } else {
                    frame.payload_len as u32
                };
                c.eq("payload_len", rec.payload_len.into(), payload.into());
            } else {
                c.flag("payload_len known for a whole frame", case.cut.is_some());
            }
            let mask = frame.ext_mask();
            let e = &frame.ext;
            if case.cut.is_none() {
                if mask & ib::ext::RETH != 0 {
                    c.eq("reth_va", rec.roce().reth_va, e.reth_va);
                    c.eq("reth_len", rec.roce().reth_len.into(), e.reth_len.into());
                }
                if mask & ib::ext::AETH != 0 {
                    c.eq(
                        "aeth_syndrome",
                        rec.roce().aeth_syndrome.into(),
                        e.aeth_syndrome.into(),
                    );
                    c.eq("aeth_msn", rec.roce().aeth_msn.into(), e.aeth_msn.into());
                }
                if mask & ib::ext::IMMDT != 0 {
                    c.eq("imm", rec.roce().imm.into(), e.imm.into());
                }
                if mask & ib::ext::DETH != 0 {
                    c.eq(
                        "deth_src_qp",
                        rec.roce().deth_src_qp.into(),
                        e.deth_src_qp.into(),
                    );
                }
            }
        }
        Spec::Pfc(f) => {
            c.flag("kind pfc", rec.kind() == Kind::Pfc);
            c.eq(
                "pfc_enable",
                rec.link_control().pfc_enable.into(),
                f.enable.into(),
            );
            c.flag("pfc_quanta", rec.link_control().pfc_quanta == f.quanta);
        }
        Spec::Pause(f) => {
            c.flag("kind pause", rec.kind() == Kind::Pause);
            c.eq(
                "pause_quanta",
                rec.link_control().pause_quanta.into(),
                f.quanta.into(),
            );
        }
    }
}

/// The record a correct decoder would produce, from what was built (the
/// ground truth), for the fields tshark reports.
fn truth_record(case: &Case, bytes: &[u8]) -> PacketRecord {
    let kept = case.cut.unwrap_or(bytes.len()).min(bytes.len());
    let mut r = PacketRecord {
        frame_len: bytes.len() as u32,
        cap_len: kept as u32,
        ..PacketRecord::default()
    };
    let set_eth = |r: &mut PacketRecord, eth: &EthHeader| {
        r.src_mac = eth.src;
        r.dst_mac = eth.dst;
        if let Some(t) = eth.vlan.or(eth.outer_vlan) {
            r.flags |= flags::HAS_VLAN;
            r.vlan = t.vid;
            r.pcp = t.pcp;
        }
    };
    match &case.spec {
        Spec::Pfc(f) => {
            r.kind = Kind::Pfc as u8;
            r.flags |= flags::HAS_PFC;
            set_eth(
                &mut r,
                &EthHeader {
                    dst: f.dst,
                    src: f.src,
                    outer_vlan: None,
                    vlan: f.vlan,
                },
            );
            r.link_control_mut().pfc_enable = f.enable;
            r.link_control_mut().pfc_quanta = f.quanta;
        }
        Spec::Pause(f) => {
            r.kind = Kind::Pause as u8;
            r.flags |= flags::HAS_PAUSE;
            set_eth(
                &mut r,
                &EthHeader {
                    dst: f.dst,
                    src: f.src,
                    outer_vlan: None,
                    vlan: f.vlan,
                },
            );
            r.link_control_mut().pause_quanta = f.quanta;
        }
        Spec::Roce { frame: f, erspan } => {
            r.kind = if f.is_cnp() { Kind::Cnp } else { Kind::Roce } as u8;
            set_eth(&mut r, &f.eth);
            let v1 = f.version == RoceVersion::V1;
            match f.ip.addrs {
                IpAddrs::V4 { src, dst } => {
                    r.flags |= if v1 { flags::HAS_GRH } else { flags::HAS_IPV4 };
                    r.src_ip = ip16(src.into());
                    r.dst_ip = ip16(dst.into());
                }
                IpAddrs::V6 { src, dst } => {
                    r.flags |= if v1 { flags::HAS_GRH } else { flags::HAS_IPV6 };
                    r.src_ip = ip16(src.into());
                    r.dst_ip = ip16(dst.into());
                }
            }
            r.dscp = f.ip.dscp;
            r.ecn = f.ip.ecn;
            if !v1 {
                r.udp_sport = f.udp_sport;
            }
            let b = &f.bth;
            r.flags |= flags::HAS_BTH;
            for (on, flag) in [
                (b.se, flags::SE),
                (b.migreq, flags::MIGREQ),
                (b.fecn, flags::FECN),
                (b.becn, flags::BECN),
                (b.ack_req, flags::ACK_REQ),
            ] {
                if on {
                    r.flags |= flag;
                }
            }
            r.roce_mut().opcode = b.opcode;
            r.roce_mut().pad_count = f.effective_pad_count();
            r.roce_mut().tver = b.tver;
            r.roce_mut().pkey = b.pkey;
            r.roce_mut().dest_qp = b.dest_qp;
            r.roce_mut().psn = b.psn;
            let e = &f.ext;
            let mask = f.ext_mask();
            let has = |bit| mask & bit != 0;
            if has(ib::ext::RETH) {
                r.flags |= flags::HAS_RETH;
                (
                    r.roce_mut().reth_va,
                    r.roce_mut().reth_rkey,
                    r.roce_mut().reth_len,
                ) = (e.reth_va, e.reth_rkey, e.reth_len);
            }
            if has(ib::ext::ATOMIC_ETH) {
                r.flags |= flags::HAS_ATOMIC_ETH;
                r.roce_mut().atomic_va = e.atomic_va;
                r.roce_mut().atomic_rkey = e.atomic_rkey;
                r.roce_mut().atomic_swap_add = e.atomic_swap_add;
                r.roce_mut().atomic_compare = e.atomic_compare;
            }
            if has(ib::ext::AETH) {
                r.flags |= flags::HAS_AETH;
                (r.roce_mut().aeth_syndrome, r.roce_mut().aeth_msn) = (e.aeth_syndrome, e.aeth_msn);
            }
            if has(ib::ext::ATOMIC_ACK_ETH) {
                r.flags |= flags::HAS_ATOMIC_ACK_ETH;
                r.roce_mut().atomic_orig = e.atomic_orig;
            }
            if has(ib::ext::IMMDT) {
                r.flags |= flags::HAS_IMMDT;
                r.roce_mut().imm = e.imm;
            }
            if has(ib::ext::IETH) {
                r.flags |= flags::HAS_IETH;
                r.roce_mut().ieth_rkey = e.ieth_rkey;
            }
            if has(ib::ext::DETH) {
                r.flags |= flags::HAS_DETH;
                (r.roce_mut().deth_qkey, r.roce_mut().deth_src_qp) = (e.deth_qkey, e.deth_src_qp);
            }
            if case.cut.is_none() {
                r.flags |= flags::ICRC_CHECKED;
                let offset = erspan.map_or(0, |e| e.overhead());
                let network = if v1 {
                    ib::GRH_LEN - udp::HEADER_LEN
                } else {
                    f.ip.header_len()
                };
                let end = offset + f.eth.header_len() + network + f.udp_len();
                r.roce_mut().icrc = u32::from_le_bytes(bytes[end - 4..end].try_into().unwrap());
            }
        }
    }
    r
}

/// Checks the test's own reading of tshark and the builder: the ground-truth
/// record must agree with tshark on every field (no decoder involved).
#[test]
fn builder_agrees_with_tshark() {
    if !tshark::available() {
        eprintln!("SKIPPED builder_agrees_with_tshark: tshark is not installed");
        return;
    }
    let cases = cases();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("truth.pcap");
    let mut built = Vec::new();
    {
        let mut w = PcapWriter::create(&path, linktype::ETHERNET, 0).unwrap();
        let mut buf = Vec::new();
        for (n, case) in cases.iter().enumerate() {
            build(case, &mut buf);
            let kept = case.cut.unwrap_or(buf.len()).min(buf.len());
            w.write_frame_orig(0, n as u64, &buf[..kept], buf.len() as u32)
                .unwrap();
            built.push(buf.clone());
        }
        w.finish().unwrap();
    }
    let rows = run_tshark(&path, FIELDS);
    assert_eq!(rows.len(), cases.len());
    let mut errors = Vec::new();
    let mut compared = 0;
    for (n, (case, row)) in cases.iter().zip(&rows).enumerate() {
        if matches!(&case.spec, Spec::Roce { frame, .. } if frame.udp_truncate.is_some()) {
            continue;
        }
        let truth = truth_record(case, &built[n]);
        let mut c = Checker {
            frame: n as u64 + 1,
            row,
            errors: Vec::new(),
            compared: 0,
        };
        check_against_tshark(&mut c, &truth, &[]);
        compared += c.compared;
        errors.extend(c.errors);
    }
    assert!(
        errors.is_empty(),
        "{} of {compared} comparisons failed:\n{}",
        errors.len(),
        errors.join("\n")
    );
    assert!(compared > 1000, "only {compared} comparisons");
}

#[test]
fn decoder_agrees_with_tshark() {
    if !tshark::available() {
        eprintln!(
            "SKIPPED tshark_parity: tshark is not installed (apt-get install tshark); \
             the parity of the decoder with Wireshark was NOT checked"
        );
        return;
    }
    let cases = cases();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("parity.pcap");
    let mut wire_lens = Vec::with_capacity(cases.len());
    {
        let mut w = PcapWriter::create(&path, linktype::ETHERNET, 0).unwrap();
        let mut buf = Vec::new();
        for (n, case) in cases.iter().enumerate() {
            build(case, &mut buf);
            wire_lens.push(buf.len());
            let kept = case.cut.unwrap_or(buf.len()).min(buf.len());
            let ts = 1_760_000_000_000_000_000 + n as u64 * 1_000;
            w.write_frame_orig(0, ts, &buf[..kept], buf.len() as u32)
                .unwrap();
        }
        w.finish().unwrap();
    }

    let known = known_fields();
    for f in FIELDS {
        assert!(known.contains(*f), "this tshark has no field {f}");
    }
    let optional: Vec<(&str, &str)> = OPTIONAL_FIELDS
        .iter()
        .copied()
        .filter(|(f, _)| known.contains(*f))
        .collect();
    let mut fields: Vec<&str> = FIELDS.to_vec();
    fields.extend(optional.iter().map(|(f, _)| *f));
    let rows = run_tshark(&path, &fields);
    assert_eq!(
        rows.len(),
        cases.len(),
        "tshark saw a different frame count"
    );

    // Wireshark must actually have dissected RoCE: every whole RoCE frame has a BTH.
    let with_bth = rows
        .iter()
        .filter(|r| r.contains_key("infiniband.bth.opcode"))
        .count();
    let roce_frames = cases
        .iter()
        .filter(|c| matches!(&c.spec, Spec::Roce { frame, .. } if frame.udp_truncate.is_none()))
        .count();
    assert!(
        with_bth >= roce_frames,
        "tshark dissected only {with_bth} of {roce_frames} RoCE frames: is `-d udp.port==4791,infiniband` honoured?"
    );

    let mut reader = rocescope::sources::CaptureReader::open(&path).unwrap();
    let mut errors = Vec::new();
    let mut compared = 0;
    let mut n = 0usize;
    while let Some(frame) = reader.next_frame().unwrap() {
        n += 1;
        assert_eq!(to_u64(frame.number), n as u64);
        let rec =
            rocescope::decode::decode(to_u32(frame.linktype), frame.data, to_u32(frame.orig_len));
        let row = &rows[n - 1];
        assert_eq!(row.get("frame.number").map(|v| num(v)), Some(n as u64));
        let mut c = Checker {
            frame: n as u64,
            row,
            errors: Vec::new(),
            compared: 0,
        };
        check_against_tshark(&mut c, &rec, &optional);
        check_against_spec(&mut c, &rec, &cases[n - 1], wire_lens[n - 1]);
        compared += c.compared;
        errors.extend(c.errors);
    }
    assert_eq!(
        n,
        cases.len(),
        "the reader returned a different frame count"
    );
    assert!(
        errors.is_empty(),
        "{} of {compared} comparisons failed:\n{}",
        errors.len(),
        errors.join("\n")
    );
    eprintln!("tshark parity: {n} frames, {compared} field comparisons, all equal");
}
