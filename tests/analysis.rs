//! End to end: captures built frame by frame with known contents, analysed by
//! the `rocescope` binary; every count of the analysis definitions
//! (docs/analysis.md) is asserted exactly.
use crate::common;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use common::*;
use rocescope::proto::ib::op;
use rocescope::synth::{
    Bth, CaptureWrite, EthHeader, ExtHeaders, IpAddrs, IpHeader, PauseFrame, PcapngWriter,
    PfcFrame, RoceFrame, RoceVersion, VlanTag, WireFrame,
};

const US: u64 = 1_000;
/// 2026-01-01T00:00:00Z: captures start at a realistic wall-clock time.
const T0: u64 = 1_767_225_600_000_000_000;

const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 0x0a];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 0x0b];
const MAC_SWITCH: [u8; 6] = [2, 0, 0, 0, 0, 0x5f];
const HOST_A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const HOST_B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const PRIORITY: u8 = 3;

/// A capture being written: one pcapng interface per tap.
struct Capture {
    path: PathBuf,
    writer: PcapngWriter<std::fs::File>,
    buf: Vec<u8>,
}

impl Capture {
    fn new(dir: &Path, name: &str, taps: &[&str]) -> Capture {
        let path = dir.join(name);
        let mut writer = PcapngWriter::create(&path).unwrap();
        for tap in taps {
            writer.add_interface(tap, 1, 65535).unwrap();
        }
        Capture {
            path,
            writer,
            buf: Vec::new(),
        }
    }

    fn put(&mut self, tap: u32, at_us: f64, frame: &impl WireFrame) {
        frame.write(&mut self.buf);
        let ts = T0 + (at_us * US as f64) as u64;
        self.writer.write_frame(tap, ts, &self.buf).unwrap();
    }

    fn finish(self) -> PathBuf {
        self.writer.finish().unwrap();
        self.path
    }
}

fn eth(src: [u8; 6], dst: [u8; 6]) -> EthHeader {
    EthHeader {
        src,
        dst,
        outer_vlan: None,
        vlan: Some(VlanTag::dot1q(100, PRIORITY)),
    }
}

/// An RDMA WRITE Middle (1 KiB) from A to B's QP `qp`.
fn write(qp: u32, psn: u32) -> RoceFrame {
    RoceFrame {
        eth: eth(MAC_A, MAC_B),
        ip: IpHeader {
            addrs: IpAddrs::V4 {
                src: HOST_A,
                dst: HOST_B,
            },
            ..IpHeader::default()
        },
        udp_sport: 0xC000 | (qp as u16 & 0xFFF),
        bth: Bth {
            opcode: op::WRITE_MIDDLE,
            dest_qp: qp,
            psn,
            ..Bth::default()
        },
        payload_len: 1024,
        ..RoceFrame::default()
    }
}

/// An AETH-carrying response from B to A's QP `qp`: ACK (0x1F), NAK (0x60), RNR NAK (0x2E).
fn aeth(qp: u32, psn: u32, syndrome: u8) -> RoceFrame {
    RoceFrame {
        eth: eth(MAC_B, MAC_A),
        ip: IpHeader {
            addrs: IpAddrs::V4 {
                src: HOST_B,
                dst: HOST_A,
            },
            ..IpHeader::default()
        },
        udp_sport: 0xC000,
        bth: Bth {
            opcode: op::ACKNOWLEDGE,
            dest_qp: qp,
            psn,
            ..Bth::default()
        },
        ext: ExtHeaders {
            aeth_syndrome: syndrome,
            aeth_msn: psn,
            ..ExtHeaders::default()
        },
        ..RoceFrame::default()
    }
}

/// A CNP from B back to A's QP `qp`.
fn cnp(qp: u32) -> RoceFrame {
    let mut f = RoceFrame::cnp(qp);
    f.eth = eth(MAC_B, MAC_A);
    f.ip = IpHeader {
        addrs: IpAddrs::V4 {
            src: HOST_B,
            dst: HOST_A,
        },
        dscp: 48,
        ..IpHeader::default()
    };
    f.bth.becn = true;
    f
}

fn pfc(priority: u8, quanta: u16) -> PfcFrame {
    let mut f = PfcFrame::single(priority, quanta);
    f.src = MAC_SWITCH;
    f
}

fn analyze(capture: &Path, out: &Path) {
    rocescope_ok(&[
        "analyze",
        capture.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
}

/// The flows table, one row looked up by (iface, dest_qp).
struct Flows(Table);

impl Flows {
    fn read(out: &Path) -> Flows {
        Flows(Table::read(&out.join("flows.parquet")))
    }

    fn row(&self, iface: &str, qp: u32) -> usize {
        let ifaces = self.0.strings("iface");
        let qps = self.0.ints("dest_qp");
        (0..self.0.rows())
            .find(|&i| ifaces[i].as_deref() == Some(iface) && qps[i] == Some(qp.into()))
            .unwrap_or_else(|| panic!("no flow {iface} QP {qp:#x}"))
    }

    fn get(&self, iface: &str, qp: u32, column: &str) -> i128 {
        self.0.ints(column)[self.row(iface, qp)].unwrap_or_else(|| panic!("{column} is null"))
    }
}

#[test]
fn timeout_rewind_during_a_pfc_pause_is_a_ghost_retransmission() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Capture::new(dir.path(), "ghost.pcapng", &["tor1-mirror"]);
    for (i, psn) in (1000..=1010).enumerate() {
        c.put(0, i as f64, &write(0x100, psn));
    }
    c.put(0, 12.0, &aeth(0x200, 1005, 0x1F)); // 1000..=1005 delivered
    c.put(0, 15.0, &pfc(PRIORITY, 65535)); // 335.5 µs at 100G
    for (i, psn) in (1004..=1010).enumerate() {
        c.put(0, 300.0 + i as f64, &write(0x100, psn)); // timer fired: Go-Back-N to 1004
    }
    c.put(0, 400.0, &aeth(0x200, 1010, 0x1F));
    let cap = c.finish();
    let out = dir.path().join("out");
    analyze(&cap, &out);

    let f = Flows::read(&out);
    let q = |col| f.get("tor1-mirror", 0x100, col);
    assert_eq!(q("data_packets"), 18);
    assert_eq!(q("retrans_packets"), 7);
    assert_eq!(q("rewinds"), 1);
    assert_eq!(q("rewinds_timeout"), 1);
    assert_eq!(q("rewinds_nak"), 0);
    assert_eq!(q("max_rewind_depth"), 7); // next 1011 − 1004
    assert_eq!(q("spurious_retrans"), 2); // 1004 and 1005 had been ACKed
    assert_eq!(q("gaps"), 0);
    assert_eq!(q("paired_qp"), 0x200);
    assert_eq!(f.get("tor1-mirror", 0x200, "acks"), 2);

    let events = Table::read(&out.join("events.parquet"));
    let kinds = events.strings("kind");
    let rewind = kinds
        .iter()
        .position(|k| k.as_deref() == Some("rewind"))
        .expect("a rewind event");
    assert_eq!(events.ints("psn")[rewind], Some(1004));
    assert_eq!(events.ints("depth")[rewind], Some(7));
    assert_eq!(
        events.strings("trigger")[rewind].as_deref(),
        Some("timeout")
    );
    let idle = events.floats("idle_us")[rewind].unwrap();
    assert!((idle - 290.0).abs() < 0.01, "idle {idle}");

    let pfc = Table::read(&out.join("pfc.parquet"));
    assert_eq!(pfc.rows(), 1);
    assert_eq!(pfc.ints("priority")[0], Some(3));
    assert_eq!(
        pfc.strings("src_mac")[0].as_deref(),
        Some("02:00:00:00:00:5f")
    );
    assert_eq!(pfc.strings("ended_by")[0].as_deref(), Some("expiry"));
    let start = pfc.ints("start_ns")[0].unwrap();
    let end = pfc.ints("end_ns")[0].unwrap();
    assert_eq!(start, (T0 + 15 * US) as i128);
    assert_eq!(end - start, 65535 * 512 * 10 / 1000); // 335 543 ns (bits / 100 Gb/s)

    // The report names the flow, the depth, the missing NAK, the resends
    // that had been acknowledged, the pause that covered it, and the fix.
    let report = rocescope_ok(&["report", cap.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&report.stdout);
    for needle in [
        "ghost",
        "10.0.0.1 → 10.0.0.2 QP 256",
        "rewound 7 PSNs",
        "no NAK",
        "2 of the 7",
        "tor1-mirror priority 3",
        "02:00:00:00:00:5f",
    ] {
        assert!(text.contains(needle), "report lacks {needle:?}:\n{text}");
    }
    assert!(text.to_lowercase().contains("timeout"), "{text}");
}

#[test]
fn nak_and_rnr_nak_trigger_their_rewinds() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Capture::new(dir.path(), "naks.pcapng", &["tap"]);
    // QP 0x100: 2000..=2005, NAK (PSN sequence error) at 2003, resend from 2003.
    for (i, psn) in (2000..=2005).enumerate() {
        c.put(0, i as f64, &write(0x100, psn));
    }
    c.put(0, 1.5, &aeth(0x200, 2000, 0x1F)); // pairs 0x200 with 0x100
    c.put(0, 8.0, &aeth(0x200, 2003, 0x60));
    for (i, psn) in (2003..=2005).enumerate() {
        c.put(0, 10.0 + i as f64, &write(0x100, psn));
    }
    // QP 0x101: 5000..=5003, RNR NAK at 5002, resend from 5002.
    for (i, psn) in (5000..=5003).enumerate() {
        c.put(0, 20.0 + i as f64, &write(0x101, psn));
    }
    c.put(0, 20.5, &aeth(0x201, 5000, 0x1F));
    c.put(0, 25.0, &aeth(0x201, 5002, 0x2E));
    for (i, psn) in (5002..=5003).enumerate() {
        c.put(0, 40.0 + i as f64, &write(0x101, psn));
    }
    let cap = c.finish();
    let out = dir.path().join("out");
    analyze(&cap, &out);
    let f = Flows::read(&out);

    assert_eq!(f.get("tap", 0x100, "rewinds_nak"), 1);
    assert_eq!(f.get("tap", 0x100, "rewinds_timeout"), 0);
    assert_eq!(f.get("tap", 0x100, "max_rewind_depth"), 3);
    assert_eq!(f.get("tap", 0x100, "retrans_packets"), 3);
    assert_eq!(f.get("tap", 0x100, "spurious_retrans"), 0);
    assert_eq!(f.get("tap", 0x200, "naks"), 1);
    assert_eq!(f.get("tap", 0x200, "acks"), 1);

    assert_eq!(f.get("tap", 0x101, "rewinds_rnr"), 1);
    assert_eq!(f.get("tap", 0x101, "rewinds_nak"), 0);
    assert_eq!(f.get("tap", 0x101, "max_rewind_depth"), 2);
    assert_eq!(f.get("tap", 0x201, "rnr_naks"), 1);
}

#[test]
fn psn_wraps_at_2_pow_24_and_forward_jumps_are_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Capture::new(dir.path(), "wrap.pcapng", &["tap"]);
    let psns = [0xFF_FFFE, 0xFF_FFFF, 0, 1, 2];
    for (i, psn) in psns.into_iter().enumerate() {
        c.put(0, i as f64, &write(0x100, psn));
    }
    c.put(0, 50.0, &write(0x100, 0xFF_FFFF)); // rewind across the wrap
    c.put(0, 51.0, &write(0x100, 0));
    c.put(0, 52.0, &write(0x100, 1));
    c.put(0, 53.0, &write(0x100, 2));
    c.put(0, 54.0, &write(0x100, 6)); // 3, 4, 5 never seen: one gap
    let cap = c.finish();
    let out = dir.path().join("out");
    analyze(&cap, &out);
    let f = Flows::read(&out);
    assert_eq!(f.get("tap", 0x100, "data_packets"), 10);
    assert_eq!(f.get("tap", 0x100, "rewinds"), 1);
    assert_eq!(f.get("tap", 0x100, "max_rewind_depth"), 4); // next 3 − 0xFFFFFF (mod 2^24)
    assert_eq!(f.get("tap", 0x100, "retrans_packets"), 4);
    assert_eq!(f.get("tap", 0x100, "gaps"), 1);

    let p = Table::read(&out.join("packets.parquet"));
    let retrans: Vec<_> = p.bools("retrans").into_iter().map(Option::unwrap).collect();
    assert_eq!(
        retrans,
        [
            false, false, false, false, false, true, true, true, true, false
        ]
    );
    assert!(p.ints("flow_id").iter().all(|id| *id == Some(0)));
}

#[test]
fn the_same_frames_at_two_taps_are_not_retransmissions() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Capture::new(dir.path(), "taps.pcapng", &["leaf1", "spine1"]);
    for (i, psn) in (100..110).enumerate() {
        c.put(0, i as f64, &write(0x100, psn));
        c.put(1, i as f64 + 0.4, &write(0x100, psn));
    }
    let cap = c.finish();
    let out = dir.path().join("out");
    analyze(&cap, &out);
    let f = Flows::read(&out);
    assert_eq!(f.0.rows(), 2);
    for tap in ["leaf1", "spine1"] {
        assert_eq!(f.get(tap, 0x100, "data_packets"), 10);
        assert_eq!(f.get(tap, 0x100, "retrans_packets"), 0);
        assert_eq!(f.get(tap, 0x100, "rewinds"), 0);
        assert_eq!(f.get(tap, 0x100, "gaps"), 0);
    }
}

#[test]
fn cnps_go_to_the_flow_whose_requester_qp_they_address() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Capture::new(dir.path(), "cnps.pcapng", &["tap"]);
    let mut t = 0.0;
    for psn in 0..6 {
        let mut a = write(0x100, psn);
        let mut b = write(0x101, 700 + psn);
        if psn % 2 == 0 {
            a.ip.ecn = 3; // CE
        }
        if psn == 5 {
            b.ip.ecn = 3;
        }
        c.put(0, t, &a);
        c.put(0, t + 0.2, &b);
        t += 1.0;
    }
    c.put(0, t, &aeth(0x200, 5, 0x1F));
    c.put(0, t + 0.1, &aeth(0x201, 705, 0x1F));
    for i in 0..3 {
        c.put(0, t + 1.0 + i as f64, &cnp(0x200));
    }
    c.put(0, t + 5.0, &cnp(0x201));
    let cap = c.finish();
    let out = dir.path().join("out");
    analyze(&cap, &out);
    let f = Flows::read(&out);
    assert_eq!(f.get("tap", 0x100, "ce"), 3);
    assert_eq!(f.get("tap", 0x100, "cnps"), 3);
    assert_eq!(f.get("tap", 0x101, "ce"), 1);
    assert_eq!(f.get("tap", 0x101, "cnps"), 1);
    assert_eq!(f.get("tap", 0x100, "paired_qp"), 0x200);
    assert_eq!(f.get("tap", 0x101, "paired_qp"), 0x201);
}

/// A UD SEND Only datagram from A's QP `src_qp` to B's QP `qp`.
fn ud_send(qp: u32, src_qp: u32, psn: u32, ce: bool) -> RoceFrame {
    let mut f = write(qp, psn);
    f.bth.opcode = 0x64;
    f.ext.deth_qkey = 0x1111_2222;
    f.ext.deth_src_qp = src_qp;
    f.payload_len = 1024;
    if ce {
        f.ip.ecn = 3;
    }
    f
}

/// UD datagrams' CE marks count like RC requests' (docs/analysis.md,
/// "Flows": UD has CE), and the CNPs answering them, addressed to the
/// DETH's source QP, are the UD flow's: QP 0x500 (from A's QP 0x600) gets
/// 2 CE and 2 CNPs, the first 3 µs after the first CE; QP 0x501 (from
/// 0x601) 1 CE and no CNP: ce-without-cnp names it.
#[test]
fn ud_ce_marks_count_and_cnps_to_the_source_qp_answer_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Capture::new(dir.path(), "ud.pcapng", &["tap"]);
    for psn in 0..6 {
        c.put(
            0,
            f64::from(psn),
            &ud_send(0x500, 0x600, psn, matches!(psn, 1 | 3)),
        );
        c.put(
            0,
            f64::from(psn) + 0.5,
            &ud_send(0x501, 0x601, 40 + psn, psn == 2),
        );
    }
    c.put(0, 4.0, &cnp(0x600));
    c.put(0, 6.0, &cnp(0x600));
    let cap = c.finish();
    let out = dir.path().join("out");
    analyze(&cap, &out);
    let f = Flows::read(&out);
    assert_eq!(f.0.rows(), 2);
    for (qp, ce, cnps) in [(0x500, 2, 2), (0x501, 1, 0)] {
        assert_eq!(
            (f.get("tap", qp, "ce"), f.get("tap", qp, "cnps")),
            (ce, cnps),
            "QP {qp:#x}"
        );
        assert_eq!(
            f.0.strings("service")[f.row("tap", qp)].as_deref(),
            Some("UD")
        );
        assert_eq!(f.get("tap", qp, "data_packets"), 6);
    }
    let s = summary(&out);
    assert_eq!(s["totals"]["ce"], 3);
    let r = &s["ce_to_cnp"];
    assert_eq!(
        (r["samples"].as_u64(), r["min_us"].as_f64()),
        (Some(1), Some(3.0))
    );
    let finding = finding(&s, "ce-without-cnp");
    let detail = finding["detail"].as_str().unwrap();
    assert!(
        detail.contains("QP 1281") && !detail.contains("QP 1280"),
        "{detail}"
    );
}

#[test]
fn pfc_refresh_xon_expiry_and_pause_frames() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Capture::new(dir.path(), "pfc.pcapng", &["tap"]);
    c.put(0, 0.0, &write(0x100, 1)); // capture starts
    c.put(0, 10.0, &pfc(3, 1000)); // 5.12 µs …
    c.put(0, 14.0, &pfc(3, 1000)); // … refreshed to 19.12 µs …
    c.put(0, 16.0, &pfc(3, 0)); // … XON at 16 µs
    c.put(0, 30.0, &pfc(5, 2000)); // 10.24 µs, expires at 40.24 µs
    c.put(
        0,
        50.0,
        &PauseFrame {
            src: MAC_SWITCH,
            quanta: 5000,
            ..PauseFrame::default()
        },
    );
    c.put(0, 90.0, &pfc(6, 65535)); // still paused at the last frame
    c.put(0, 100.0, &write(0x100, 2)); // capture ends
    let cap = c.finish();
    let out = dir.path().join("out");
    analyze(&cap, &out);

    let p = Table::read(&out.join("pfc.parquet"));
    let prio = p.ints("priority");
    let by = p.strings("ended_by");
    let frames = p.ints("frames");
    let start = p.ints("start_ns");
    let end = p.ints("end_ns");
    assert_eq!(p.rows(), 3, "802.3x PAUSE is not PFC");
    let row = |pr: i128| (0..p.rows()).find(|&i| prio[i] == Some(pr)).unwrap();
    let r3 = row(3);
    assert_eq!((by[r3].as_deref(), frames[r3]), (Some("xon"), Some(2)));
    assert_eq!(end[r3].unwrap() - start[r3].unwrap(), 6_000);
    let r5 = row(5);
    assert_eq!((by[r5].as_deref(), frames[r5]), (Some("expiry"), Some(1)));
    assert_eq!(end[r5].unwrap() - start[r5].unwrap(), 10_240);
    let r6 = row(6);
    assert_eq!(by[r6].as_deref(), Some("capture_end"));
    assert_eq!(end[r6].unwrap() - start[r6].unwrap(), 10_000);

    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let pfc = summary["pfc"].as_array().unwrap();
    let p3 = pfc.iter().find(|e| e["priority"] == 3).unwrap();
    assert_eq!(p3["iface"], "tap");
    assert_eq!(p3["frames"], 3);
    assert_eq!(p3["xon_frames"], 1);
    assert_eq!(p3["paused_ns"], 6_000);
    assert!((p3["fraction"].as_f64().unwrap() - 0.06).abs() < 1e-9);
    assert!(pfc.iter().all(|e| e["storms"] == 0));
    assert_eq!(summary["frames"]["pause"], 1);
}

/// A CM MAD (UD SEND Only to QP1) from `src` to `dst` carrying `attr` and `msg`.
fn cm_mad(src: (Ipv4Addr, [u8; 6]), dst: (Ipv4Addr, [u8; 6]), attr: u16, msg: &[u8]) -> Vec<u8> {
    let f = RoceFrame {
        eth: EthHeader {
            src: src.1,
            dst: dst.1,
            outer_vlan: None,
            vlan: None,
        },
        ip: IpHeader {
            addrs: IpAddrs::V4 {
                src: src.0,
                dst: dst.0,
            },
            ..IpHeader::default()
        },
        udp_sport: 0xD000,
        bth: Bth {
            opcode: 0x64,
            dest_qp: 1,
            psn: 0,
            ..Bth::default()
        },
        ext: ExtHeaders {
            deth_qkey: 0x8001_0000,
            deth_src_qp: 1,
            ..ExtHeaders::default()
        },
        payload_len: 256,
        ..RoceFrame::default()
    };
    let mut bytes = Vec::new();
    f.write(&mut bytes);
    // The MAD: common header (CM class, attribute), then the CM message.
    let ip_len = usize::from(u16::from_be_bytes([bytes[16], bytes[17]]));
    let icrc_at = 14 + ip_len - 4;
    let mad = &mut bytes[icrc_at - 256..icrc_at];
    mad.fill(0);
    mad[..4].copy_from_slice(&[1, 0x07, 2, 0x03]);
    mad[16..18].copy_from_slice(&attr.to_be_bytes());
    mad[24..24 + msg.len()].copy_from_slice(msg);
    let icrc = rocescope::transport::roce::icrc::compute(&bytes[14..14 + ip_len]).unwrap();
    bytes[icrc_at..icrc_at + 4].copy_from_slice(&icrc.to_le_bytes());
    bytes
}

fn cm_req(comm_id: u32, qpn: u32) -> Vec<u8> {
    cm_req_retrying(comm_id, qpn, 0)
}

/// A CM REQ whose Retry Count (the low 3 bits of message byte 47, IBA
/// table 106) is `retry_count`.
fn cm_req_retrying(comm_id: u32, qpn: u32, retry_count: u8) -> Vec<u8> {
    let mut m = [0u8; 48];
    m[0..4].copy_from_slice(&comm_id.to_be_bytes());
    m[32..35].copy_from_slice(&qpn.to_be_bytes()[1..]);
    m[47] = 0xA0 | retry_count; // Local CM Response Timeout 20 above it
    cm_mad((HOST_A, MAC_A), (HOST_B, MAC_B), 0x0010, &m)
}

fn cm_rep(comm_id: u32, answers: u32, qpn: u32) -> Vec<u8> {
    let mut m = [0u8; 24];
    m[0..4].copy_from_slice(&comm_id.to_be_bytes());
    m[4..8].copy_from_slice(&answers.to_be_bytes());
    m[12..15].copy_from_slice(&qpn.to_be_bytes()[1..]);
    cm_mad((HOST_B, MAC_B), (HOST_A, MAC_A), 0x0013, &m)
}

/// Two connections between one host pair with the same PSNs: PSN correlation
/// cannot tell which ACK answers which; the CM REQ/REP exchange can.
fn same_psns_two_qps(dir: &Path, with_cm: bool) -> PathBuf {
    let mut c = Capture::new(dir, "cm.pcapng", &["tap"]);
    if with_cm {
        c.put(0, 0.0, &rocescope::synth::RawFrame(&cm_req(11, 0x200)));
        c.put(0, 1.0, &rocescope::synth::RawFrame(&cm_rep(91, 11, 0x100)));
        c.put(0, 2.0, &rocescope::synth::RawFrame(&cm_req(12, 0x201)));
        c.put(0, 3.0, &rocescope::synth::RawFrame(&cm_rep(92, 12, 0x101)));
    }
    for psn in 0..4 {
        c.put(0, 10.0 + psn as f64, &write(0x100, psn));
        c.put(0, 10.5 + psn as f64, &write(0x101, psn));
    }
    c.put(0, 20.0, &aeth(0x200, 3, 0x1F));
    c.put(0, 20.5, &aeth(0x201, 3, 0x1F));
    c.put(0, 25.0, &cnp(0x201));
    c.finish()
}

#[test]
fn cm_req_rep_pair_connections_that_psns_cannot() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    analyze(&same_psns_two_qps(dir.path(), true), &out);
    let f = Flows::read(&out);
    assert_eq!(f.get("tap", 0x100, "paired_qp"), 0x200);
    assert_eq!(f.get("tap", 0x101, "paired_qp"), 0x201);
    assert_eq!(f.get("tap", 0x100, "cnps"), 0);
    assert_eq!(f.get("tap", 0x101, "cnps"), 1);

    // Without the CM exchange the same traffic stays unpaired: ambiguous.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    analyze(&same_psns_two_qps(dir.path(), false), &out);
    let f = Flows::read(&out);
    let paired = f.0.ints("paired_qp");
    assert_eq!(paired[f.row("tap", 0x100)], None);
    assert_eq!(paired[f.row("tap", 0x101)], None);
}

// Verdicts that hold on real captures (docs/analysis.md: "Gaps", "Mirror
// duplicates", "ICRC", "Rewinds", "PFC"). Each capture is built so that what
// happened is known; the expected counts are that, not the analyzer's output.

fn summary(out: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap()
}

/// The finding `id` of summary `s`; the test fails without it.
fn finding<'a>(s: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    s["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no finding {id}: {}", s["findings"]))
}

fn finding_ids(out: &Path) -> Vec<String> {
    summary(out)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

fn analyze_with(capture: &Path, out: &Path, extra: &[&str]) {
    let mut args = vec![
        "analyze",
        capture.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    rocescope_ok(&args);
}

/// The mirror dropped PSNs 4 and 5 of 0..=9; the responder ACKed through 9,
/// no NAK, nothing resent: the network lost nothing.
fn tap_loss_capture(dir: &Path, name: &str) -> PathBuf {
    let mut c = Capture::new(dir, name, &["tap"]);
    for psn in (0..10).filter(|p| !(4..=5).contains(p)) {
        c.put(0, psn as f64, &write(0x100, psn));
    }
    c.put(0, 12.0, &aeth(0x200, 9, 0x1F));
    c.finish()
}

#[test]
fn psns_the_responder_acknowledged_but_the_tap_never_saw_are_capture_loss() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    analyze(&tap_loss_capture(dir.path(), "taploss.pcapng"), &out);
    let f = Flows::read(&out);
    assert_eq!(f.get("tap", 0x100, "gap_capture_lost"), 2);
    for col in [
        "gap_late",
        "gap_lost_before_tap",
        "gap_nak_lost",
        "gap_unresolved",
    ] {
        assert_eq!(f.get("tap", 0x100, col), 0, "{col}");
    }
    assert_eq!(f.get("tap", 0x100, "retrans_packets"), 0);
    assert_eq!(f.get("tap", 0x100, "rewinds"), 0);
    let ids = finding_ids(&out);
    assert!(ids.contains(&"capture-loss".to_string()), "{ids:?}");
    assert!(!ids.contains(&"real-loss".to_string()), "{ids:?}");
    assert!(
        !ids.contains(&"ghost-retransmissions".to_string()),
        "{ids:?}"
    );
    let s = summary(&out);
    assert_eq!(s["taps"][0]["capture_lost"], 2);
    assert_eq!(s["totals"]["gaps_resolved"]["capture_lost"], 2);
    assert!(
        s["capture_facts"][0]
            .as_str()
            .unwrap()
            .contains("incomplete"),
        "{}",
        s["capture_facts"]
    );
}

#[test]
fn psns_arriving_a_few_microseconds_late_are_reordering_not_loss() {
    // PSNs 3, 4, 5 take a longer path and arrive after 6..=8; nothing is
    // resent.
    let dir = tempfile::tempdir().unwrap();
    let mut c = Capture::new(dir.path(), "reorder.pcapng", &["tap"]);
    let order = [0, 1, 2, 6, 7, 8, 3, 4, 5, 9, 10];
    for (i, psn) in order.iter().enumerate() {
        c.put(0, i as f64, &write(0x100, *psn));
    }
    c.put(0, 12.0, &aeth(0x200, 10, 0x1F));
    let out = dir.path().join("out");
    analyze(&c.finish(), &out);
    let f = Flows::read(&out);
    assert_eq!(f.get("tap", 0x100, "gap_late"), 3);
    assert_eq!(f.get("tap", 0x100, "retrans_packets"), 0);
    assert_eq!(f.get("tap", 0x100, "rewinds"), 0);
    assert_eq!(f.get("tap", 0x100, "gap_capture_lost"), 0);
    // 3, 4 and 5 went missing when 6 arrived (t = 3 µs); 5, the latest, came
    // at t = 8 µs; 3 came when 8 was the highest PSN seen, 5 behind.
    let row = f.row("tap", 0x100);
    assert_eq!(f.0.floats("late_max_us")[row], Some(5.0));
    assert_eq!(f.0.ints("late_max_psns")[row], Some(5));
    let ids = finding_ids(&out);
    assert!(ids.contains(&"reordering".to_string()), "{ids:?}");
    for not in ["real-loss", "ghost-retransmissions", "capture-loss"] {
        assert!(!ids.contains(&not.to_string()), "{not} in {ids:?}");
    }
    let e = Table::read(&out.join("events.parquet"));
    let kinds = e.strings("kind");
    assert_eq!(
        kinds
            .iter()
            .filter(|k| k.as_deref() == Some("late"))
            .count(),
        3
    );
}

#[test]
fn mirror_copies_exact_and_a_few_nanoseconds_apart_are_not_retransmissions() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Capture::new(dir.path(), "span.pcapng", &["tap"]);
    for psn in 0..20u32 {
        let t = psn as f64;
        c.put(0, t, &write(0x100, psn));
        // Ingress and egress mirroring: the same frame again, exactly (even
        // PSNs) or 5 ns later (odd).
        c.put(
            0,
            t + if psn % 2 == 0 { 0.0 } else { 0.005 },
            &write(0x100, psn),
        );
    }
    c.put(0, 21.0, &aeth(0x200, 19, 0x1F));
    c.put(0, 21.3, &aeth(0x200, 19, 0x1F));
    // A real timeout resend of PSN 19, 100 µs later, still counts.
    c.put(0, 121.0, &write(0x100, 19));
    let out = dir.path().join("out");
    analyze(&c.finish(), &out);
    let f = Flows::read(&out);
    assert_eq!(f.get("tap", 0x100, "mirror_copies"), 20);
    assert_eq!(f.get("tap", 0x200, "mirror_copies"), 1);
    assert_eq!(f.get("tap", 0x100, "data_packets"), 21);
    assert_eq!(f.get("tap", 0x100, "retrans_packets"), 1);
    assert_eq!(f.get("tap", 0x100, "rewinds_timeout"), 1);
    assert_eq!(f.get("tap", 0x100, "spurious_retrans"), 1);
    assert_eq!(f.get("tap", 0x200, "acks"), 1);
    let s = summary(&out);
    assert_eq!(s["frames"]["mirror_copies"], 21);
    let tap = &s["taps"][0];
    assert_eq!(tap["duplicates"], 21);
    assert_eq!(tap["duplicate_gaps"]["same_timestamp"], 10);
    assert_eq!(tap["duplicate_gaps"]["max_gap_ns"], 300);
    let copies = Table::read(&out.join("packets.parquet")).bools("mirror_copy");
    assert_eq!(copies.iter().filter(|c| **c == Some(true)).count(), 21);
    let ids = finding_ids(&out);
    assert!(ids.contains(&"mirror-duplicates".to_string()), "{ids:?}");
}

#[test]
fn a_resend_that_skips_forward_is_one_rewind() {
    // 0..=9 sent; after a timeout the sender resends 3, 4, then 7, 8, 9
    // (5 and 6 were ACKed meanwhile, or lost upstream of the tap on resend).
    let dir = tempfile::tempdir().unwrap();
    let mut c = Capture::new(dir.path(), "skip.pcapng", &["tap"]);
    for psn in 0..10 {
        c.put(0, psn as f64, &write(0x100, psn));
    }
    for (i, psn) in [3, 4, 7, 8, 9].iter().enumerate() {
        c.put(0, 200.0 + i as f64, &write(0x100, *psn));
    }
    c.put(0, 210.0, &write(0x100, 10));
    let out = dir.path().join("out");
    analyze(&c.finish(), &out);
    let f = Flows::read(&out);
    assert_eq!(f.get("tap", 0x100, "retrans_packets"), 5);
    assert_eq!(f.get("tap", 0x100, "rewinds"), 1);
    assert_eq!(f.get("tap", 0x100, "rewinds_timeout"), 1);
    assert_eq!(f.get("tap", 0x100, "max_rewind_depth"), 7);
}

#[test]
fn a_corrupted_frame_is_named_and_the_nak_that_followed() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Capture::new(dir.path(), "crc.pcapng", &["tap"]);
    for psn in 0..8 {
        let mut w = write(0x100, psn);
        if psn == 3 {
            w.icrc = rocescope::synth::IcrcMode::Corrupt;
        }
        c.put(0, psn as f64, &w);
    }
    // The responder dropped PSN 3 (bad ICRC) and NAKs it; the sender resends.
    c.put(0, 8.0, &aeth(0x200, 3, 0x60));
    for (i, psn) in (3..8).enumerate() {
        c.put(0, 10.0 + i as f64, &write(0x100, psn));
    }
    c.put(0, 16.0, &aeth(0x200, 7, 0x1F));
    let out = dir.path().join("out");
    analyze(&c.finish(), &out);
    let f = Flows::read(&out);
    assert_eq!(f.get("tap", 0x100, "icrc_errors"), 1);
    assert_eq!(f.get("tap", 0x200, "icrc_errors"), 0);
    assert_eq!(f.get("tap", 0x100, "rewinds_nak"), 1);
    let s = summary(&out);
    assert_eq!(
        (
            s["taps"][0]["icrc_checked"].as_u64(),
            s["taps"][0]["icrc_failed"].as_u64()
        ),
        (Some(15), Some(1))
    );
    assert_eq!(s["taps"][0]["sniffer"], false);
    let corrupt = finding(&s, "corrupted-frames");
    let detail = corrupt["detail"].as_str().unwrap();
    assert!(detail.contains("1 of 15 RoCE frames"), "{detail}");
    assert!(
        detail.contains("1 affected flow: 1 followed by NAKs or rewinds"),
        "{detail}"
    );
}

#[test]
fn a_sniffer_rewritten_capture_is_recognised_and_never_called_corruption() {
    // `tcpdump -i mlx5_0`: the NIC's sniffer rewrites the UDP source port to
    // 4791 (and the source MAC): every ICRC fails; it also cuts frames while
    // recording orig_len == caplen.
    let dir = tempfile::tempdir().unwrap();
    let mut c = Capture::new(dir.path(), "sniffer.pcapng", &["mlx5_0"]);
    let mut buf = Vec::new();
    for psn in 0..6u32 {
        let mut w = write(0x100, psn);
        // The ICRC as computed over the original port, then the rewrite.
        let original = w;
        original.write(&mut buf);
        let carried = u32::from_le_bytes(buf[buf.len() - 4..].try_into().unwrap());
        w.udp_sport = 4791;
        w.icrc = rocescope::synth::IcrcMode::Value(carried);
        c.put(0, psn as f64, &w);
        buf.clear();
    }
    // One frame cut at 128 bytes by the sniffer, lengths claiming it whole.
    let mut w = write(0x100, 6);
    w.udp_sport = 4791;
    w.write(&mut buf);
    buf.truncate(128);
    c.writer.write_frame(0, T0 + 6 * US, &buf).unwrap();
    let out = dir.path().join("out");
    let capture = c.finish();
    analyze(&capture, &out);
    // The evidence, in process: the tap, and all 6 whole frames failing
    // (the cut one has no ICRC to check).
    let a = rocescope::offline::run(&[capture], &Default::default(), None)
        .unwrap()
        .analysis;
    let sniffer: Vec<_> = a
        .diagnoses
        .iter()
        .filter(|d| d.evidence.id() == "sniffer-capture")
        .collect();
    assert_eq!(sniffer.len(), 1);
    assert_eq!(
        sniffer[0].evidence,
        rocescope::analyze::Evidence::Sniffer(rocescope::analyze::findings::Sniffer {
            iface: 0,
            icrc_failed: 6,
            icrc_checked: 6,
        })
    );
    assert_eq!(sniffer[0].flows, vec![0]);
    let s = summary(&out);
    assert_eq!(s["taps"][0]["sniffer"], true);
    assert_eq!(s["frames"]["cut"], 1);
    let facts = s["capture_facts"].to_string();
    assert!(facts.contains("sniffer"), "{facts}");
    let ids = finding_ids(&out);
    assert!(ids.contains(&"sniffer-capture".to_string()), "{ids:?}");
    assert!(!ids.contains(&"corrupted-frames".to_string()), "{ids:?}");
    let icrc = Table::read(&out.join("packets.parquet")).bools("icrc_ok");
    assert_eq!(icrc, vec![None; 7], "no ICRC verdict on a sniffer's frames");
    let f = Flows::read(&out);
    assert_eq!(f.0.ints("icrc_errors")[f.row("mlx5_0", 0x100)], None);
}

#[test]
fn pauses_end_with_their_own_capture_not_the_last_file() {
    let dir = tempfile::tempdir().unwrap();
    // a: a pause of 65535 quanta (335 µs at 100G) at t = 0, the capture
    // ends at t = 50 µs; b goes on to t = 1 ms.
    let mut a = Capture::new(dir.path(), "a.pcapng", &["tor-a"]);
    a.put(0, 0.0, &pfc(PRIORITY, 65535));
    a.put(0, 50.0, &write(0x100, 0));
    let mut b = Capture::new(dir.path(), "b.pcapng", &["tor-b"]);
    b.put(0, 0.0, &write(0x101, 0));
    b.put(0, 1000.0, &write(0x101, 1));
    let (a, b) = (a.finish(), b.finish());
    let out = dir.path().join("out");
    rocescope_ok(&[
        "analyze",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let p = Table::read(&out.join("pfc.parquet"));
    assert_eq!(p.ints("duration_ns"), [Some(50_000)]);
    assert_eq!(p.strings("ended_by"), [Some("capture_end".to_string())]);
}

#[test]
fn a_400g_capture_at_the_default_speed_is_warned_about() {
    // 4 KiB writes every 100 ns: ~330 Gb/s, more than the 100G assumed.
    let dir = tempfile::tempdir().unwrap();
    let mut c = Capture::new(dir.path(), "fast.pcapng", &["leaf1-p3"]);
    for psn in 0..200u32 {
        let mut w = write(0x100, psn);
        w.payload_len = 4096;
        c.put(0, psn as f64 * 0.1, &w);
    }
    let cap = c.finish();
    let out = dir.path().join("out");
    analyze(&cap, &out);
    let s = summary(&out);
    let f = finding(&s, "link-speed");
    assert!(
        f["recommendation"]
            .as_str()
            .unwrap()
            .contains("--link-speed leaf1-p3=400G")
    );
    let out2 = dir.path().join("out2");
    analyze_with(&cap, &out2, &["--link-speed", "leaf1-p3=400G"]);
    assert!(!finding_ids(&out2).contains(&"link-speed".to_string()));
    assert_eq!(
        summary(&out2)["taps"][0]["link_speed_bps"],
        400_000_000_000u64
    );
}

/// A pcapng Interface Statistics Block (little-endian section): `isb_ifdrop`
/// and `isb_osdrop` for interface `iface`.
/// Appends an Interface Statistics Block ([`isb`]) to the pcapng `cap`.
fn append_isb(cap: &Path, iface: u32, ifdrop: u64, osdrop: u64) {
    use std::io::Write as _;
    std::fs::OpenOptions::new()
        .append(true)
        .open(cap)
        .unwrap()
        .write_all(&isb(iface, ifdrop, osdrop))
        .unwrap();
}

fn isb(iface: u32, ifdrop: u64, osdrop: u64) -> Vec<u8> {
    let mut b = Vec::new();
    for w in [5u32, 52, iface, 0, 0] {
        b.extend_from_slice(&w.to_le_bytes());
    }
    for (code, v) in [(5u16, ifdrop), (7, osdrop)] {
        b.extend_from_slice(&code.to_le_bytes());
        b.extend_from_slice(&8u16.to_le_bytes());
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&[0; 4]); // opt_endofopt
    b.extend_from_slice(&52u32.to_le_bytes());
    b
}

/// An interface its pcapng declared that recorded nothing is a tap of the
/// summary all the same (`ifaces`, `taps[]` with 0 records, null times, its
/// own drop counters), and a warning on stderr; one whose frames were
/// none rocescope reads (ARP) is listed, not warned about. A TAP option may
/// name it (docs/tables.md, summary.json `taps`).
#[test]
fn interfaces_that_recorded_nothing_are_listed_and_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Capture::new(dir.path(), "idle.pcapng", &["busy", "idle", "arp"]);
    for psn in 0..3 {
        c.put(0, f64::from(psn), &write(0x100, psn));
    }
    let arp = [[0xFF; 6].as_slice(), &MAC_A, &[0x08, 0x06], &[0; 28]].concat();
    c.writer.write_frame(2, T0 + 5 * US, &arp).unwrap();
    let cap = c.finish();
    // The idle interface's statistics: 5 dropped by the interface.
    append_isb(&cap, 1, 5, 0);
    let out = dir.path().join("out");
    let r = rocescope_ok(&[
        "analyze",
        cap.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--link-speed",
        "idle=400G",
    ]);
    let err = String::from_utf8_lossy(&r.stderr);
    let warned: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("recorded no frames"))
        .collect();
    assert_eq!(
        warned,
        [format!(
            "rocescope: warning: {}: interface 1 (idle) recorded no frames: the tap captured nothing (listed in summary.json's taps with 0 records)",
            cap.display()
        )],
        "{err}"
    );
    let s = summary(&out);
    let names: Vec<&str> = s["ifaces"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(names, ["busy", "idle", "arp"]);
    let taps = s["taps"].as_array().unwrap();
    let row = |t: &serde_json::Value| {
        (
            t["iface"].as_str().unwrap().to_string(),
            t["records"].as_u64().unwrap(),
            t["first_ts_ns"].is_null(),
            t["link_speed_bps"].as_u64().unwrap(),
            t["isb_ifdrop"].as_u64(),
        )
    };
    assert_eq!(
        taps.iter().map(row).collect::<Vec<_>>(),
        [
            ("busy".to_string(), 3, false, 100_000_000_000, None),
            ("idle".to_string(), 0, true, 400_000_000_000, Some(5)),
            ("arp".to_string(), 0, true, 100_000_000_000, None),
        ]
    );
    assert_eq!(s["input"]["decode"]["not_decoded"], 1);
    // Its drops are the capture's own loss, as any tap's.
    let f = finding(&s, "capture-loss");
    assert_eq!(f["params"]["capture_drops_counted"], 5);
}

#[test]
fn the_captures_own_drop_counters_are_part_of_capture_loss() {
    let dir = tempfile::tempdir().unwrap();
    // Tap loss as before (4 and 5 missing, ACKed), and the capture's
    // statistics say it dropped 3 frames at the interface.
    let cap = tap_loss_capture(dir.path(), "isb.pcapng");
    append_isb(&cap, 0, 3, 0);
    let out = dir.path().join("out");
    analyze(&cap, &out);
    let s = summary(&out);
    assert_eq!(
        (
            s["taps"][0]["isb_ifdrop"].as_u64(),
            s["taps"][0]["isb_osdrop"].as_u64()
        ),
        (Some(3), Some(0))
    );
    let f = finding(&s, "capture-loss");
    let detail = f["detail"].as_str().unwrap();
    assert!(
        detail.contains("2 PSNs on 1 flow never reached the capture"),
        "{detail}"
    );
    assert!(
        detail.contains("tap: 3 dropped by the interface, 0 by the capture host"),
        "{detail}"
    );

    // No gap at all, but the counters say 7 frames were dropped by the host.
    let mut c = Capture::new(dir.path(), "isb-only.pcapng", &["tap"]);
    for psn in 0..4 {
        c.put(0, psn as f64, &write(0x100, psn));
    }
    let cap = c.finish();
    append_isb(&cap, 0, 0, 7);
    let out = dir.path().join("out2");
    analyze(&cap, &out);
    let s = summary(&out);
    let f = finding(&s, "capture-loss");
    assert_eq!(f["title"], "The capture says it dropped frames");
    assert_eq!(f["params"]["capture_drops_counted"], 7);
    assert_eq!(f["params"]["frames_missed"], 0);
    assert!(
        f["detail"]
            .as_str()
            .unwrap()
            .contains("0 dropped by the interface, 7 by the capture host")
    );
}

/// RoCEv1 frames between GIDs `src` → `dst` (IPv6 ones, or IPv4 ones the
/// builder writes IPv4-mapped).
fn v1(mut f: RoceFrame, addrs: IpAddrs) -> RoceFrame {
    f.version = RoceVersion::V1;
    f.ip.addrs = addrs;
    f
}

const GID_A: &str = "fe80::a";
const GID_B: &str = "fe80::b";

/// `f` with the GRH TClass (RoCEv1) or IP traffic class `dscp`, `ecn`.
fn tclass(mut f: RoceFrame, dscp: u8, ecn: u8) -> RoceFrame {
    f.ip.dscp = dscp;
    f.ip.ecn = ecn;
    f
}

/// RoCEv1 traffic: QP 0x300 (GID A → B) writes PSNs 100..=105 (TClass
/// DSCP 26, ECT(0); 101 and 102 CE-marked on the way), B's QP 0x400 (DSCP
/// 48, not ECN-capable) ACKs 100, NAKs 103 (PSN sequence error), A resends 103..=105; QP
/// 0x302 between IPv4-mapped GIDs 10.0.0.3 → 10.0.0.4 writes 7 and 8. With
/// `with_v2`, a RoCEv2 exchange between 10.0.0.1 and 10.0.0.2 as well (QP
/// 0x100 writes 2000..=2003, QP 0x200 ACKs 2003), interleaved.
fn rocev1_capture(dir: &Path, name: &str, with_v2: bool) -> PathBuf {
    let ab = IpAddrs::V6 {
        src: GID_A.parse().unwrap(),
        dst: GID_B.parse().unwrap(),
    };
    let ba = IpAddrs::V6 {
        src: GID_B.parse().unwrap(),
        dst: GID_A.parse().unwrap(),
    };
    let cd = IpAddrs::V4 {
        src: Ipv4Addr::new(10, 0, 0, 3),
        dst: Ipv4Addr::new(10, 0, 0, 4),
    };
    let mut c = Capture::new(dir, name, &["tap"]);
    for (i, psn) in (100..=105).enumerate() {
        let ecn = if matches!(psn, 101 | 102) { 3 } else { 2 };
        c.put(
            0,
            i as f64 * 2.0,
            &v1(tclass(write(0x300, psn), 26, ecn), ab),
        );
        if with_v2 && i < 4 {
            c.put(0, i as f64 * 2.0 + 1.0, &write(0x100, 2000 + psn - 100));
        }
    }
    c.put(0, 12.0, &v1(tclass(aeth(0x400, 100, 0x1F), 48, 0), ba));
    c.put(0, 13.0, &v1(tclass(aeth(0x400, 103, 0x60), 48, 0), ba));
    for (i, psn) in (103..=105).enumerate() {
        c.put(
            0,
            14.0 + i as f64,
            &v1(tclass(write(0x300, psn), 26, 2), ab),
        );
    }
    if with_v2 {
        c.put(0, 17.5, &aeth(0x200, 2003, 0x1F));
    }
    c.put(0, 20.0, &v1(write(0x302, 7), cd));
    c.put(0, 21.0, &v1(write(0x302, 8), cd));
    c.finish()
}

/// docs/tables.md: `roce_version`, GIDs as addresses; docs/analysis.md: the
/// same sequence analysis over RoCEv1 as over RoCEv2.
#[test]
fn rocev1_alone_and_mixed_with_rocev2_are_fully_analysed() {
    let dir = tempfile::tempdir().unwrap();
    for (name, with_v2) in [("rocev1.pcapng", false), ("mixed.pcapng", true)] {
        let cap = rocev1_capture(dir.path(), name, with_v2);
        let out = dir.path().join(format!("{name}.out"));
        analyze(&cap, &out);
        let (v1_frames, v2_frames) = (13, if with_v2 { 5 } else { 0 });

        let p = Table::read(&out.join("packets.parquet"));
        assert_eq!(p.rows(), v1_frames + v2_frames, "{name}");
        let versions = p.ints("roce_version");
        let count = |v: i128| versions.iter().filter(|x| **x == Some(v)).count();
        assert_eq!((count(1), count(2)), (v1_frames, v2_frames), "{name}");
        let (src, sport) = (p.strings("src_ip"), p.ints("udp_sport"));
        let (dscp, ecn) = (p.ints("dscp"), p.ints("ecn"));
        let (qp, psn) = (p.ints("dest_qp"), p.ints("psn"));
        let icrc = p.bools("icrc_ok");
        for i in 0..p.rows() {
            assert_eq!(icrc[i], Some(true), "{name} row {i}");
            if versions[i] == Some(1) {
                // The GRH's TClass as DSCP and ECN (docs/inputs.md).
                let tclass = match (qp[i], psn[i]) {
                    (Some(0x300), Some(101 | 102)) => (26, 3),
                    (Some(0x400), _) => (48, 0),
                    _ => (26, 2),
                };
                assert_eq!(sport[i], None, "{name} row {i}");
                assert_eq!(
                    (dscp[i], ecn[i]),
                    (Some(tclass.0), Some(tclass.1)),
                    "{name} row {i}"
                );
            }
        }
        // The first frame is RoCEv1 from GID A; the IPv4-mapped GID prints as IPv4.
        assert_eq!(src[0].as_deref(), Some(GID_A));
        assert_eq!(src[p.rows() - 1].as_deref(), Some("10.0.0.3"));

        let f = Flows::read(&out);
        assert_eq!(f.0.rows(), if with_v2 { 5 } else { 3 }, "{name}");
        for (qp, version, packets) in [(0x300, 1, 9), (0x400, 1, 2), (0x302, 1, 2)] {
            assert_eq!(
                f.get("tap", qp, "roce_version"),
                version,
                "{name} QP {qp:#x}"
            );
            assert_eq!(f.get("tap", qp, "packets"), packets, "{name} QP {qp:#x}");
        }
        assert_eq!(
            f.0.strings("src_ip")[f.row("tap", 0x302)].as_deref(),
            Some("10.0.0.3")
        );
        assert_eq!(
            f.0.strings("dst_ip")[f.row("tap", 0x300)].as_deref(),
            Some(GID_B)
        );
        // CE in the TClass counts as in IP's (docs/analysis.md, "CNPs").
        assert_eq!(f.get("tap", 0x300, "ce"), 2);
        assert_eq!(f.get("tap", 0x300, "dscp"), 26);
        assert_eq!(
            (f.get("tap", 0x400, "ce"), f.get("tap", 0x400, "dscp")),
            (0, 48)
        );
        assert_eq!(f.get("tap", 0x300, "rewinds_nak"), 1);
        assert_eq!(f.get("tap", 0x300, "retrans_packets"), 3);
        assert_eq!(f.get("tap", 0x300, "max_rewind_depth"), 3);
        assert_eq!(f.get("tap", 0x300, "paired_qp"), 0x400);
        assert_eq!(f.get("tap", 0x400, "naks"), 1);
        assert_eq!(f.get("tap", 0x400, "acks"), 1);
        if with_v2 {
            assert_eq!(f.get("tap", 0x100, "roce_version"), 2);
            assert_eq!(f.get("tap", 0x100, "packets"), 4);
            assert_eq!(f.get("tap", 0x100, "retrans_packets"), 0);
            assert_eq!(f.get("tap", 0x200, "acks"), 1);
        }
        let s = summary(&out);
        assert_eq!(s["input"]["decode"]["not_decoded"], 0, "{name}");

        // Wireshark counts the same: RoCEv1 frames by EtherType (decoded as
        // InfiniBand GRH + BTH), RoCEv2 by UDP port, and each flow's display
        // filter shows exactly its packets.
        assert_eq!(
            tshark_count(&cap, &[], "infiniband.grh && vlan.etype==0x8915"),
            v1_frames
        );
        assert_eq!(tshark_count(&cap, &[], "udp.dstport==4791"), v2_frames);
        // tshark 4.0 shows the TClass as one byte: 107 = DSCP 26, CE (QP
        // 0x300's two); 106 = DSCP 26, ECT(0) (its other 7, QP 0x302's 2);
        // 192 = DSCP 48 (the ACK and the NAK).
        for (tclass, frames) in [(107, 2), (106, 9), (192, 2)] {
            let filter = format!("infiniband.grh.tclass == {tclass}");
            assert_eq!(tshark_count(&cap, &[], &filter), frames, "{name}: {filter}");
        }
        let packets = f.0.ints("packets");
        for (i, (filter, decode_as)) in
            f.0.strings("display_filter")
                .into_iter()
                .zip(f.0.strings("decode_as"))
                .enumerate()
        {
            let (filter, decode_as) = (filter.unwrap(), decode_as.unwrap());
            let n = tshark_count(&cap, &[&decode_as], &filter);
            assert_eq!(n as i128, packets[i].unwrap(), "{name}: {filter}");
        }
    }
}

/// Frames of `capture` tshark shows with display filter `filter` (tshark is
/// part of the test set-up, scripts/setup.sh --test).
fn tshark_count(capture: &Path, decode_as: &[&str], filter: &str) -> usize {
    let mut cmd = std::process::Command::new("tshark");
    cmd.arg("-r")
        .arg(capture)
        .args(["-Y", filter, "-T", "fields", "-e", "frame.number"]);
    for d in decode_as {
        cmd.args(["-d", d]);
    }
    let out = cmd
        .output()
        .expect("tshark runs (scripts/setup.sh --test installs it)");
    assert!(
        out.status.success(),
        "tshark {filter}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// A frame of `f` between other hosts: `src` (MAC, IP) to `dst`.
fn between(mut f: RoceFrame, src: ([u8; 6], Ipv4Addr), dst: ([u8; 6], Ipv4Addr)) -> RoceFrame {
    f.eth.src = src.0;
    f.eth.dst = dst.0;
    f.ip.addrs = IpAddrs::V4 {
        src: src.1,
        dst: dst.1,
    };
    f
}

/// `nics.parquet`: one row per NIC, looked up by its MAC.
struct Nics(Table);

impl Nics {
    fn read(out: &Path) -> Nics {
        Nics(Table::read(&out.join("nics.parquet")))
    }

    /// `kind`'s count, p50, p99 and max for the NIC with MAC `mac`.
    fn get(&self, mac: &str, kind: &str) -> (i128, Option<i128>, Option<i128>, Option<i128>) {
        let macs = self.0.strings("nic_mac");
        let i = (0..self.0.rows())
            .find(|&i| macs[i].as_deref() == Some(mac))
            .unwrap_or_else(|| panic!("no NIC {mac}"));
        let col = |c: &str| self.0.ints(&format!("{kind}_{c}"))[i];
        (
            col("count").unwrap(),
            col("p50_ns"),
            col("p99_ns"),
            col("max_ns"),
        )
    }
}

/// The four NIC latencies (docs/analysis.md, "NIC reaction latencies"), each
/// for the NIC that reacted. A → B on QP 0x100: the tap saw PSN 3 (lost
/// past it), B NAKs it 2 µs after PSN 4 (its first packet out of sequence)
/// and A resends it 3.5 µs after the NAK; on QP 0x101 the tap missed PSN
/// 102 and B NAKs it 3.5 µs after 103. A CE-marked PSN 6 gets B's CNP 4 µs
/// later; PSN 6, unacknowledged, is resent by A's timer 64 µs after it
/// started (PSN 6 at 20 µs, nothing outstanding before).
#[test]
fn each_nic_reaction_latency_belongs_to_the_nic_that_reacted() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Capture::new(dir.path(), "nics.pcapng", &["tap"]);
    // In time order: a capture's frames are read in file order.
    c.put(0, 0.0, &write(0x100, 0));
    c.put(0, 0.5, &aeth(0x200, 0, 0x1F));
    for psn in 1..=5 {
        c.put(0, psn as f64, &write(0x100, psn));
    }
    c.put(0, 6.0, &aeth(0x200, 3, 0x60));
    for (i, psn) in (3..=5).enumerate() {
        c.put(0, 9.5 + i as f64, &write(0x100, psn));
    }
    c.put(0, 12.5, &aeth(0x200, 5, 0x1F));
    let mut ce = write(0x100, 6);
    ce.ip.ecn = 3;
    c.put(0, 20.0, &ce);
    c.put(0, 24.0, &cnp(0x200));
    c.put(0, 30.0, &write(0x100, 7));
    c.put(0, 84.0, &write(0x100, 6)); // the timer's resend
    c.put(0, 85.0, &write(0x100, 7));
    c.put(0, 86.0, &aeth(0x200, 7, 0x1F));
    // QP 0x101: the tap missed 102.
    c.put(0, 100.0, &write(0x101, 100));
    c.put(0, 100.5, &aeth(0x201, 100, 0x1F));
    for (t, psn) in [(101.0, 101), (102.0, 103), (103.0, 104)] {
        c.put(0, t, &write(0x101, psn));
    }
    c.put(0, 105.5, &aeth(0x201, 102, 0x60));
    let cap = c.finish();
    let out = dir.path().join("out");
    analyze(&cap, &out);
    let n = Nics::read(&out);
    assert_eq!(n.0.rows(), 2);
    assert_eq!(
        n.0.strings("nic_ip"),
        [Some("10.0.0.1".into()), Some("10.0.0.2".into())]
    );
    let (a, b) = ("02:00:00:00:00:0a", "02:00:00:00:00:0b");
    let none = (0, None, None, None);
    assert_eq!(n.get(a, "nak_generation"), none);
    assert_eq!(
        n.get(a, "nak_reaction"),
        (1, Some(3_500), Some(3_500), Some(3_500))
    );
    assert_eq!(
        n.get(a, "timeout_retrans"),
        (1, Some(64_000), Some(64_000), Some(64_000))
    );
    assert_eq!(n.get(a, "cnp_generation"), none);
    // 2.0 and 3.5 µs: the p99 is 3.5 µs's bucket's midpoint (3456..=3519,
    // 1/64 relative error), the maximum exact.
    assert_eq!(
        n.get(b, "nak_generation"),
        (2, Some(2_000), Some(3_488), Some(3_500))
    );
    assert_eq!(n.get(b, "nak_reaction"), none);
    assert_eq!(n.get(b, "timeout_retrans"), none);
    assert_eq!(
        n.get(b, "cnp_generation"),
        (1, Some(4_000), Some(4_000), Some(4_000))
    );
    // The timeout is the flow's measured one too.
    let f = Flows::read(&out);
    assert_eq!(f.get("tap", 0x100, "nic_timeout_samples"), 1);

    // The report, its JSON and the page give the same numbers.
    let html = dir.path().join("r.html");
    let text = rocescope_ok(&[
        "report",
        cap.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&text.stdout);
    for needle in [
        "NIC reaction latencies at the tap (p50, p99, max, samples)",
        "  10.0.0.2 (02:00:00:00:00:0b): NAK generation p50 2.0 µs · p99 3.5 µs · max 3.5 µs (2); NAK reaction –; timeout –; CNP generation p50 4.0 µs · p99 4.0 µs · max 4.0 µs (1)",
        "  10.0.0.1 (02:00:00:00:00:0a): NAK generation –; NAK reaction p50 3.5 µs · p99 3.5 µs · max 3.5 µs (1); timeout p50 64.0 µs · p99 64.0 µs · max 64.0 µs (1); CNP generation –",
    ] {
        assert!(text.contains(needle), "report lacks {needle:?}:\n{text}");
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<h2>NIC reaction latencies</h2>"), "{page}");
    assert!(
        page.contains(
            "<td>10.0.0.2 (02:00:00:00:00:0b)</td><td>p50 2.0 µs · p99 3.5 µs · max 3.5 µs (2)</td>"
        ),
        "{page}"
    );
    let json = rocescope_ok(&["report", cap.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let nics = v["nics"].as_array().unwrap();
    assert_eq!(nics.len(), 2);
    assert_eq!(nics[1]["nic_mac"], b);
    assert_eq!(nics[1]["nak_generation_count"], 2);
    assert_eq!(nics[1]["nak_generation_p99_ns"], 3_488);
    assert_eq!(nics[0]["timeout_retrans_p50_ns"], 64_000);
    assert_eq!(nics[0]["cnp_generation_p50_ns"], serde_json::Value::Null);
}

/// `slow-nic-reaction`: B's CNPs come 8 µs after the CE mark, C's 1 µs
/// after: with 5 of B's against 5 of C's at one tap, B is 8x slower than
/// its peer and named; with 4 of B's, there are too few to judge; with B's
/// at another tap, there is no peer to compare with (a latency includes the
/// path from its tap).
#[test]
fn a_nic_four_times_slower_than_its_peers_is_named_with_5_samples_not_4() {
    const MAC_C: [u8; 6] = [2, 0, 0, 0, 0, 0x0c];
    const HOST_C: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 3);
    let (a, c_host) = ((MAC_A, HOST_A), (MAC_C, HOST_C));
    let run = |b_samples: u32, b_tap: u32| {
        let dir = tempfile::tempdir().unwrap();
        let mut cap = Capture::new(dir.path(), "slow.pcapng", &["tap", "far"]);
        cap.put(b_tap, 0.0, &write(0x100, 0));
        cap.put(b_tap, 0.5, &aeth(0x200, 0, 0x1F));
        cap.put(0, 0.0, &between(write(0x300, 0), a, c_host));
        cap.put(0, 0.5, &between(aeth(0x400, 0, 0x1F), c_host, a));
        for k in 0..5u32 {
            let t = 10.0 + 20.0 * k as f64;
            if k < b_samples {
                let mut ce = write(0x100, 1 + k);
                ce.ip.ecn = 3;
                cap.put(b_tap, t, &ce);
                cap.put(b_tap, t + 8.0, &cnp(0x200));
            }
            let mut ce = between(write(0x300, 1 + k), a, c_host);
            ce.ip.ecn = 3;
            cap.put(0, t + 1.0, &ce);
            cap.put(0, t + 2.0, &between(cnp(0x400), c_host, a));
        }
        let path = cap.finish();
        let json = rocescope_ok(&["report", path.to_str().unwrap(), "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        let slow: Vec<serde_json::Value> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["id"] == "slow-nic-reaction")
            .cloned()
            .collect();
        (slow, v)
    };
    let (slow, v) = run(5, 0);
    assert_eq!(slow.len(), 1, "{v}");
    let f = &slow[0];
    assert_eq!(f["severity"], "warning");
    assert_eq!(
        f["params"],
        serde_json::json!({
            "latency": "cnp_generation",
            "iface": "tap",
            "nic_mac": "02:00:00:00:00:0b",
            "nic_ip": "10.0.0.2",
            "median_ns": 8_000,
            "count": 5,
            "peers": 1,
            "peers_median_ns": 1_000,
            "peers_count": 5,
            "threshold_ratio": 4,
        })
    );
    assert_eq!(f["flows"], serde_json::json!([0]));
    assert_eq!(
        f["title"],
        "NIC 10.0.0.2 (02:00:00:00:00:0b) is slow at CNP generation (CE-marked packet → CNP) on tap: median 8.0 µs against its peers' 1.0 µs"
    );
    let (slow, v) = run(4, 0);
    assert!(slow.is_empty(), "{v}");
    // The 4 samples are still in the table.
    let b = v["nics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["nic_mac"] == "02:00:00:00:00:0b")
        .cloned()
        .unwrap();
    assert_eq!(b["cnp_generation_count"], 4);
    assert_eq!(b["cnp_generation_p50_ns"], 8_000);
    let (slow, v) = run(5, 1);
    assert!(slow.is_empty(), "{v}");
    assert_eq!(v["nics"].as_array().unwrap().len(), 2);
}

/// Tap loss (PSNs 4 and 5 missing, ACKed by the responder) and an
/// unresolved tail: PSNs 12 and 13 missing among 10..=15, whose ACK falls
/// after the capture's end. No NAK, no resend, no rewind: nothing shows
/// loss in the network (docs/analysis.md, "Gaps").
#[test]
fn tap_loss_and_an_unresolved_tail_warn_of_nothing_but_capture_loss() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Capture::new(dir.path(), "tail.pcapng", &["tap"]);
    for psn in (0..16).filter(|p| !(4..=5).contains(p) && !(12..=13).contains(p)) {
        c.put(0, psn as f64, &write(0x100, psn));
    }
    c.put(0, 9.5, &aeth(0x200, 9, 0x1F));
    let out = dir.path().join("out");
    analyze(&c.finish(), &out);
    let f = Flows::read(&out);
    assert_eq!(f.get("tap", 0x100, "gap_capture_lost"), 2);
    assert_eq!(f.get("tap", 0x100, "gap_unresolved"), 2);
    for col in ["gap_late", "gap_lost_before_tap", "gap_nak_lost", "rewinds"] {
        assert_eq!(f.get("tap", 0x100, col), 0, "{col}");
    }
    let s = summary(&out);
    let loud: Vec<(&str, &str)> = s["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["id"].as_str().unwrap(), f["severity"].as_str().unwrap()))
        .filter(|(_, sev)| *sev != "info")
        .collect();
    assert_eq!(loud, [("capture-loss", "warning")]);
    assert_eq!(s["totals"]["gaps_resolved"]["unresolved"], 2);
    assert_eq!(
        s["capture_facts"],
        serde_json::json!([
            "the capture is incomplete: 2 PSNs the responders acknowledged never reached the capture; every count is a lower bound",
            "the capture ends before, or lacks the direction that shows, what became of 2 PSNs it never saw (neither resent, NAKed nor acknowledged in it): unknown, not counted as loss"
        ])
    );
}

/// QP 0x101 between the same hosts, healthy: a write and its ACK at `at_us`.
fn healthy(c: &mut Capture, at_us: f64, psn: u32) {
    c.put(0, at_us, &write(0x101, psn));
    c.put(0, at_us + 2.0, &aeth(0x201, psn, 0x1F));
}

/// Requester A → B's QP 0x100: PSNs 0..=3 acknowledged, then PSN 4 at 20 µs
/// and `retries` resends of it 66 µs apart with nothing coming back; the
/// other QP keeps working until 700 µs.
fn retries_capture(dir: &Path, name: &str, retries: u32, cm_retry_count: Option<u8>) -> PathBuf {
    let mut c = Capture::new(dir, name, &["tap"]);
    if let Some(n) = cm_retry_count {
        c.put(
            0,
            0.0,
            &rocescope::synth::RawFrame(&cm_req_retrying(11, 0x200, n)),
        );
        c.put(0, 0.5, &rocescope::synth::RawFrame(&cm_rep(91, 11, 0x100)));
    }
    for psn in 0..4 {
        c.put(0, 1.0 + psn as f64, &write(0x100, psn));
    }
    c.put(0, 10.0, &aeth(0x200, 3, 0x1F));
    for k in 0..=retries {
        c.put(0, 20.0 + 66.0 * k as f64, &write(0x100, 4));
    }
    healthy(&mut c, 600.0, 0);
    healthy(&mut c, 698.0, 1);
    c.finish()
}

/// A responder gone: PSN 4 sent 8 times (7 retries, the assumed retry
/// count), 66 µs apart, then nothing from the requester; nothing came back.
#[test]
fn seven_timeout_retries_then_silence_are_retry_exhaustion() {
    let dir = tempfile::tempdir().unwrap();
    let cap = retries_capture(dir.path(), "gone.pcapng", 7, None);
    let out = dir.path().join("out");
    analyze(&cap, &out);
    let s = summary(&out);
    let f = finding(&s, "retry-exhausted");
    assert_eq!(f["severity"], "critical");
    let p = &f["params"];
    let ns = |us: u64| T0 + us * US;
    assert_eq!(
        (
            p["psn"].as_u64(),
            p["retries"].as_u64(),
            p["retry_count"].as_u64(),
            p["retry_count_from_cm"].as_bool(),
            p["timeout_ns"].as_u64(),
            p["timeout_exponent"].as_u64(),
        ),
        (
            Some(4),
            Some(7),
            Some(7),
            Some(false),
            Some(66_000),
            Some(4)
        )
    );
    assert_eq!(
        (
            p["first_retry_ns"].as_u64(),
            p["last_retry_ns"].as_u64(),
            p["silent_from_ns"].as_u64(),
            p["reverse_packets"].as_u64(),
            p["flows_nothing_came_back"].as_u64(),
        ),
        (Some(ns(86)), Some(ns(482)), Some(ns(482)), Some(0), Some(1))
    );
    let detail = f["detail"].as_str().unwrap();
    assert!(
        detail.contains("sent PSN 4 8 times (the original and 7 retries), one local ACK timeout ≈ 66.0 µs apart (T = 4: 4.096 µs × 2^4 = 65.5 µs)"),
        "{detail}"
    );
    assert!(
        detail.contains("Nothing came back on the reverse direction (QP 512)"),
        "{detail}"
    );
    assert!(
        f["recommendation"]
            .as_str()
            .unwrap()
            .contains("IBV_WC_RETRY_EXC_ERR"),
        "{}",
        f["recommendation"]
    );
    // Seven retries then silence is no livelock; the timeouts of packets
    // nothing shows were delayed are loss.
    let ids = finding_ids(&out);
    assert!(
        !ids.contains(&"retransmission-livelock".to_string()),
        "{ids:?}"
    );
    assert_eq!(
        finding(&s, "real-loss")["params"]["unexplained_timeouts"],
        7
    );
    // The same params in report --json, with a Wireshark hand-off.
    let r = rocescope_ok(&["report", cap.to_str().unwrap(), "--json"]);
    let r: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    let j = finding(&r, "retry-exhausted");
    assert_eq!(j["params"], f["params"]);
    assert_eq!(
        j["display_filter"],
        "ip.src==10.0.0.1 && ip.dst==10.0.0.2 && infiniband.bth.destqp==256 && infiniband.bth.opcode!=129"
    );
}

/// The CM REQ says 3 retries: three then silence exhaust them; without the
/// REQ, 7 are assumed and three are a livelock, not exhaustion.
#[test]
fn the_cm_reqs_retry_count_is_the_one_exhausted() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    analyze(&retries_capture(dir.path(), "cm3.pcapng", 3, Some(3)), &out);
    let s = summary(&out);
    let p = &finding(&s, "retry-exhausted")["params"];
    assert_eq!(
        (
            p["retries"].as_u64(),
            p["retry_count"].as_u64(),
            p["retry_count_from_cm"].as_bool(),
            p["silent_from_ns"].as_u64()
        ),
        (Some(3), Some(3), Some(true), Some(T0 + 218 * US))
    );
    let out = dir.path().join("out2");
    analyze(&retries_capture(dir.path(), "no-cm.pcapng", 3, None), &out);
    let ids = finding_ids(&out);
    assert!(!ids.contains(&"retry-exhausted".to_string()), "{ids:?}");
    assert_eq!(
        finding(&summary(&out), "retransmission-livelock")["params"]["rewinds"],
        3
    );
}

/// PSN 5 of QP 0x100 is dropped every time while the responder ACKs what
/// came before it and NAKs each resend's followers; the other QP
/// progresses. The requester is still resending at the end: a livelock,
/// not an exhaustion.
#[test]
fn one_packet_dropped_every_time_while_others_progress_is_a_livelock() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Capture::new(dir.path(), "livelock.pcapng", &["tap"]);
    for psn in 0..10 {
        c.put(0, psn as f64, &write(0x100, psn));
    }
    c.put(0, 12.0, &aeth(0x200, 4, 0x1F));
    c.put(0, 13.0, &aeth(0x200, 5, 0x60));
    for round in 1..=10u32 {
        let t = 20.0 * round as f64;
        for psn in 5..10 {
            c.put(0, t + (psn - 5) as f64, &write(0x100, psn));
        }
        c.put(0, t + 8.0, &aeth(0x200, 5, 0x60));
        healthy(&mut c, t + 10.0, round);
    }
    let out = dir.path().join("out");
    analyze(&c.finish(), &out);
    let s = summary(&out);
    let p = &finding(&s, "retransmission-livelock")["params"];
    assert_eq!(
        (p["psn"].as_u64(), p["rewinds"].as_u64()),
        (Some(5), Some(10))
    );
    assert_eq!(
        (p["first_rewind_ns"].as_u64(), p["last_rewind_ns"].as_u64()),
        (Some(T0 + 20 * US), Some(T0 + 200 * US))
    );
    let ids = finding_ids(&out);
    assert!(!ids.contains(&"retry-exhausted".to_string()), "{ids:?}");
}
