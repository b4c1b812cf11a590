//! Frames with switch telemetry put in as the specs lay it out
//! (`synth::telemetry`, whose layouts are the views' that
//! `rocescope_common::wire::{int, report, ifa}`'s tests check against the
//! specs' own examples): the RoCE packet inside still decodes, its ICRC
//! judged on the packet as the sender built it, and each hop is a row.
use std::net::Ipv6Addr;

use rocescope_common::proto::linktype::ETHERNET;
use rocescope_common::wire::telemetry::{NO_DSCP, TelemetryMarks};
use rocescope_common::wire::{Foreign, Layer, Limit, Stop};

use super::*;
use crate::decode::{self, decode_walk_with};
use crate::synth::frame::{IpAddrs, RoceFrame, WireFrame};
use crate::synth::telemetry::{Ifa, IfaHop, IntHop, IntMark, IntMd, Report};

fn marks(int_dscp: u8, int_port: u16, report_port: u16) -> Recognition {
    let m = TelemetryMarks {
        int_dscp,
        int_port,
        report_port,
        ..TelemetryMarks::DEFAULT
    };
    marks::apply(Recognition::DEFAULT, m).expect("valid marks")
}

/// RC SEND Only to QP 0x11, PSN 100, 32 bytes of payload.
fn roce(ipv6: bool) -> RoceFrame {
    let mut f = RoceFrame::default();
    f.bth.opcode = 0x04;
    f.bth.dest_qp = 0x11;
    f.bth.psn = 100;
    f.payload_len = 32;
    if ipv6 {
        f.ip.addrs = IpAddrs::V6 {
            src: Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1),
            dst: Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2),
        };
    }
    f
}

fn int_hops() -> Vec<IntHop> {
    vec![
        IntHop {
            node_id: 2,
            ingress_port: 3,
            egress_port: 4,
            hop_latency: 1500,
            queue_id: 3,
            queue_occupancy: 0x00_4000,
            ingress_ts: 1_000_000,
            egress_ts: 1_001_500,
        },
        IntHop {
            node_id: 1,
            ingress_port: 1,
            egress_port: 2,
            hop_latency: 700,
            queue_id: 3,
            queue_occupancy: 0x100,
            ingress_ts: 999_000,
            egress_ts: 999_700,
        },
    ]
}

/// RoCE packet (`roce(false)`), as built and with INT by port 5000 (the
/// two hops of [`int_hops`]).
fn int_by_port() -> (RoceFrame, Vec<u8>, Vec<u8>) {
    let f = roce(false);
    let mut plain = Vec::new();
    f.write(&mut plain);
    let int = IntMd {
        mark: IntMark::Port(5000),
        remaining_hop_count: 6,
        hops: int_hops(),
    };
    let framed = int.insert(&plain, &f.eth);
    (f, plain, framed)
}

fn decoded(bytes: &[u8], reg: &Recognition) -> (PacketRecord, Option<Stop>, Vec<TelemetryRow>) {
    let mut rec = PacketRecord::default();
    let w = decode_walk_with(&mut rec, reg, ETHERNET, bytes, bytes.len() as u32);
    let rows = match w.telemetry {
        Some((found, frame)) => rows(&found, frame, &rec, reg),
        None => Vec::new(),
    };
    (rec, w.stop, rows)
}

/// The fields the telemetry must leave as they were.
fn same_roce(a: &PacketRecord, b: &PacketRecord) {
    assert_eq!(a.kind(), Kind::Roce);
    assert_eq!(
        (
            a.roce().dest_qp,
            a.roce().psn,
            a.roce().opcode,
            a.payload_len,
            a.udp_sport,
            a.roce().icrc
        ),
        (
            b.roce().dest_qp,
            b.roce().psn,
            b.roce().opcode,
            b.payload_len,
            b.udp_sport,
            b.roce().icrc
        )
    );
    assert_eq!((a.src_ip, a.dst_ip), (b.src_ip, b.dst_ip));
}

fn int_row(hop: u16, h: &IntHop, src: [u8; 16], dst: [u8; 16]) -> TelemetryRow {
    TelemetryRow {
        source: Some(Source::IntMd),
        hop,
        switch_id: Some(h.node_id),
        ingress_port: Some(u32::from(h.ingress_port)),
        egress_port: Some(u32::from(h.egress_port)),
        queue_id: Some(h.queue_id),
        queue_occupancy: Some(h.queue_occupancy),
        hop_latency: Some(h.hop_latency),
        ingress_ts: Some(h.ingress_ts),
        egress_ts: Some(h.egress_ts),
        src_ip: Some(src),
        dst_ip: Some(dst),
        dest_qp: Some(0x11),
        psn: Some(100),
        ..TelemetryRow::default()
    }
}

#[test]
fn roce_inside_int_md_marked_by_port_decodes_and_its_icrc_holds() {
    let (_, plain, framed) = int_by_port();
    let base = decode::decode(ETHERNET, &plain, plain.len() as u32);
    assert_eq!(base.icrc_ok(), Some(true));
    let reg = marks(NO_DSCP, 5000, 0);
    let (rec, stop, rows) = decoded(&framed, &reg);
    assert_eq!(stop, None);
    same_roce(&rec, &base);
    assert!(rec.has(flags::TELEMETRY));
    // Judged on the packet without INT, its port and lengths restored.
    assert_eq!(rec.icrc_ok(), Some(true));
    let hops = int_hops();
    assert_eq!(
        rows,
        vec![
            int_row(0, &hops[0], base.src_ip, base.dst_ip),
            int_row(1, &hops[1], base.src_ip, base.dst_ip)
        ]
    );
    // A payload byte flipped in flight: the restored ICRC says so.
    let mut corrupt = framed.clone();
    let last_payload = framed.len() - 4 - 1;
    corrupt[last_payload] ^= 0x01;
    assert_eq!(decoded(&corrupt, &reg).0.icrc_ok(), Some(false));
    // Not told about INT: UDP to another port.
    let (rec, stop, rows) = decoded(&framed, &Recognition::DEFAULT);
    assert_eq!(rec.kind(), Kind::Other);
    assert_eq!(stop, Some(Stop::Foreign(Foreign::UdpPort)));
    assert!(rows.is_empty());
}

#[test]
fn roce_inside_int_md_marked_by_dscp_decodes_over_ipv6() {
    let f = roce(true);
    let mut plain = Vec::new();
    f.write(&mut plain);
    let base = decode::decode(ETHERNET, &plain, plain.len() as u32);
    let int = IntMd {
        mark: IntMark::Dscp(46),
        remaining_hop_count: 6,
        hops: int_hops()[..1].to_vec(),
    };
    let framed = int.insert(&plain, &f.eth);
    let reg = marks(46, 0, 0);
    let (rec, stop, rows) = decoded(&framed, &reg);
    assert_eq!(stop, None);
    same_roce(&rec, &base);
    assert_eq!(rec.dscp, 46);
    assert_eq!(rec.icrc_ok(), Some(true));
    assert_eq!(
        rows,
        vec![int_row(0, &int_hops()[0], base.src_ip, base.dst_ip)]
    );
    // The same bytes with another DSCP marked: no INT read, the shim read
    // as a BTH (what a fabric that reserved no DSCP gets).
    let (rec, _, rows) = decoded(&framed, &marks(45, 0, 0));
    assert!(rows.is_empty() && !rec.has(flags::TELEMETRY));
}

fn ifa_hops() -> Vec<IfaHop> {
    vec![
        IfaHop {
            device_id: 0x1_0001,
            ip_ttl: 64,
            port_speed: 4,
            congestion: 0,
            queue_id: 3,
            rx_sec: 12,
            egress_port: 7,
            ingress_port: 5,
            rx_ns: 500,
            residence_ns: 820,
            vendor: [0x1000, 0, 0],
        },
        IfaHop {
            device_id: 0x1_0002,
            ip_ttl: 63,
            port_speed: 4,
            congestion: 3,
            queue_id: 3,
            rx_sec: 12,
            egress_port: 9,
            ingress_port: 8,
            rx_ns: 2_000,
            residence_ns: 12_000,
            vendor: [0x9000, 7, 0],
        },
    ]
}

#[test]
fn roce_behind_ifa_decodes_whether_or_not_the_udp_length_grew() {
    for (ipv6, udp_length_grows) in [(false, true), (false, false), (true, true)] {
        let f = roce(ipv6);
        let mut plain = Vec::new();
        f.write(&mut plain);
        let base = decode::decode(ETHERNET, &plain, plain.len() as u32);
        let ifa = Ifa {
            protocol: 131,
            hop_limit: 8,
            hops: ifa_hops(),
            udp_length_grows,
        };
        let framed = ifa.insert(&plain, &f.eth);
        let (rec, stop, rows) = decoded(&framed, &Recognition::DEFAULT);
        assert_eq!(stop, None, "ipv6 {ipv6}, grows {udp_length_grows}");
        same_roce(&rec, &base);
        assert!(rec.has(flags::TELEMETRY));
        assert_eq!(
            rec.icrc_ok(),
            Some(true),
            "ipv6 {ipv6}, grows {udp_length_grows}"
        );
        assert_eq!(rows.len(), 2);
        let h = &ifa_hops()[1];
        assert_eq!(
            rows[1],
            TelemetryRow {
                source: Some(Source::Ifa),
                hop: 1,
                switch_id: Some(h.device_id),
                ingress_port: Some(8),
                egress_port: Some(9),
                queue_id: Some(3),
                hop_latency: Some(12_000),
                ingress_ts: Some(12 * 1_000_000_000 + 2_000),
                ifa_congestion: Some(3),
                ifa_port_speed: Some(4),
                ifa_vendor: Some([0x9000, 7, 0]),
                src_ip: Some(base.src_ip),
                dst_ip: Some(base.dst_ip),
                dest_qp: Some(0x11),
                psn: Some(100),
                ..TelemetryRow::default()
            }
        );
        // On another protocol number (`--ifa-proto 253`), 131 is foreign.
        let mut other = Recognition::DEFAULT;
        other.telemetry.ifa_protocol = 253;
        let (rec, stop, _) = decoded(&framed, &other);
        assert_eq!(rec.kind(), Kind::Other);
        assert_eq!(stop, Some(Stop::Foreign(Foreign::IpProtocol)));
    }
}

fn report(sequence: u32, truncate: usize) -> Report {
    Report {
        sequence,
        truncate,
        ..Report::default()
    }
}

#[test]
fn a_report_is_its_hops_and_the_truncated_packets_flow() {
    // The sink's report carries the packet as it arrived: INT by port.
    let (_, plain, framed) = int_by_port();
    let base = decode::decode(ETHERNET, &plain, plain.len() as u32);
    // Cut after the BTH: Ethernet, IPv4, UDP, INT (4 + 12 + 64), BTH.
    let truncate = 14 + 20 + 8 + 80 + 12;
    let r = report(0x1234, truncate).frame(&framed);
    let reg = marks(NO_DSCP, 5000, 32766);
    let (rec, stop, rows) = decoded(&r, &reg);
    assert_eq!(rec.kind(), Kind::Other);
    assert_eq!(stop, Some(Stop::Foreign(Foreign::TelemetryReport)));
    assert_eq!(rows.len(), 3);
    let flags_of = |row: TelemetryRow| TelemetryRow {
        source: Some(Source::Report),
        report_index: Some(0),
        sequence: Some(0x1234),
        dropped: Some(false),
        congested_queue: Some(true),
        tracked_flow: Some(true),
        intermediate: Some(false),
        ..row
    };
    let h = Report::default().hop;
    let mut own = int_row(0, &h, base.src_ip, base.dst_ip);
    own.hw_id = Some(1);
    assert_eq!(rows[0], flags_of(own));
    let hops = int_hops();
    assert_eq!(
        rows[1],
        flags_of(int_row(1, &hops[0], base.src_ip, base.dst_ip))
    );
    assert_eq!(
        rows[2],
        flags_of(int_row(2, &hops[1], base.src_ip, base.dst_ip))
    );
    // The report port not configured: UDP to another port.
    let (_, stop, rows) = decoded(&r, &Recognition::DEFAULT);
    assert_eq!(stop, Some(Stop::Foreign(Foreign::UdpPort)));
    assert!(rows.is_empty());
}

/// Cut and contradictory telemetry is counted by layer, never read past.
#[test]
fn cut_or_invalid_telemetry_stops_at_its_layer() {
    let (f, plain, framed) = int_by_port();
    let reg = marks(NO_DSCP, 5000, 32766);
    // Cut inside the stack by the snaplen.
    let (rec, stop, _) = decoded(&framed[..14 + 20 + 8 + 40], &reg);
    assert_eq!(
        (rec.kind(), stop),
        (Kind::Other, Some(Stop::Cut(Layer::Int)))
    );
    // A shim declaring more than the datagram holds.
    let mut long = framed.clone();
    long[14 + 20 + 8 + 1] = 200;
    assert_eq!(decoded(&long, &reg).1, Some(Stop::Invalid(Layer::Int)));
    // NPT 2 (a new UDP header before the original L4 header): not followed.
    let mut npt2 = framed.clone();
    npt2[14 + 20 + 8] = 0x18;
    assert_eq!(
        decoded(&npt2, &reg).1,
        Some(Stop::Limit(Limit::IntNextProtocol))
    );
    // IFA with tail stamping.
    let ifa = Ifa {
        protocol: 131,
        hop_limit: 8,
        hops: ifa_hops(),
        udp_length_grows: true,
    };
    let mut ts = ifa.insert(&plain, &f.eth);
    ts[14 + 20 + 2] |= ifa::field::header::TS;
    assert_eq!(decoded(&ts, &reg).1, Some(Stop::Limit(Limit::IfaHeaders)));
    // A report of version 1, and one cut before its group header ends.
    let mut v1 = report(1, 60).frame(&plain);
    v1[14 + 20 + 8] = 0x10;
    assert_eq!(
        decoded(&v1, &reg).1,
        Some(Stop::Invalid(Layer::TelemetryReport))
    );
    let whole = report(1, 60).frame(&plain);
    assert_eq!(
        decoded(&whole[..14 + 20 + 8 + 6], &reg).1,
        Some(Stop::Cut(Layer::TelemetryReport))
    );
}

/// Every byte of telemetry frames mutated and every length cut: the walk,
/// the ICRC restoration and the rows never panic, and a record-less frame
/// always says why (what the `decode` fuzz target checks, here over frames
/// that reach the telemetry code every time).
#[test]
fn mutated_and_cut_telemetry_frames_never_panic() {
    let (f, plain, by_port) = int_by_port();
    let by_dscp = IntMd {
        mark: IntMark::Dscp(46),
        remaining_hop_count: 6,
        hops: int_hops(),
    }
    .insert(&plain, &f.eth);
    let ifa = Ifa {
        protocol: 131,
        hop_limit: 8,
        hops: ifa_hops(),
        udp_length_grows: true,
    }
    .insert(&plain, &f.eth);
    let rep = report(9, 200).frame(&by_port);
    let reg = marks(46, 5000, 32766);
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut rows_seen = 0;
    for frame in [&by_port, &by_dscp, &ifa, &rep] {
        for len in 0..=frame.len() {
            let (rec, stop, rows) = decoded(&frame[..len], &reg);
            assert!(rec.kind() != Kind::Other || stop.is_some());
            rows_seen += rows.len();
        }
        for _ in 0..3000 {
            let mut m = frame.clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() % m.len() as u64) as usize;
                m[at] = next() as u8;
            }
            let (rec, stop, rows) = decoded(&m, &reg);
            assert!(rec.kind() != Kind::Other || stop.is_some());
            rows_seen += rows.len();
        }
    }
    assert!(rows_seen > 0);
}

/// The log counts the hops it stamps and keeps none of them; a run
/// without telemetry has no facts to report.
#[test]
fn the_log_counts_hops_and_keeps_no_rows() {
    assert!(TelemetryLog::default().finish().is_none());
    let mut log = TelemetryLog::default();
    let mut rows: Vec<TelemetryRow> = (0..5)
        .map(|hop| TelemetryRow {
            hop,
            ..TelemetryRow::default()
        })
        .collect();
    log.stamp(&mut rows, 7, 2, 9, 1);
    assert!(
        rows.iter()
            .all(|r| (r.ts_ns, r.iface, r.frame, r.capture) == (7, 2, 9, 1))
    );
    let facts = log.finish().expect("facts");
    assert_eq!(facts.hops, 5);
    assert_eq!((facts.reports, facts.lost_reports), (0, 0));
}
