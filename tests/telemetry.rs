//! `telemetry.parquet` end to end (docs/tables.md): a capture of RoCE
//! packets carrying INT-MD (marked by port) and IFA, and telemetry reports
//! with truncated copies, built as the specs lay them out
//! (`rocescope::synth::telemetry`); every row exact, joined to
//! `flows.parquet`, and the reports lost counted from their sequence
//! numbers.
use crate::common;

use common::*;
use rocescope::synth::telemetry::{Ifa, IfaHop, IntHop, IntMark, IntMd, Report};
use rocescope::synth::{CaptureWrite, PcapWriter, RoceFrame, WireFrame};

const T0: u64 = 1_700_000_000_000_000_000;

fn roce(qp: u32, psn: u32) -> (RoceFrame, Vec<u8>) {
    let mut f = RoceFrame::default();
    f.bth.opcode = 0x04;
    f.bth.dest_qp = qp;
    f.bth.psn = psn;
    f.payload_len = 64;
    let mut b = Vec::new();
    f.write(&mut b);
    (f, b)
}

/// Two INT hops, newest first: switch 2 (queue 3 at `occupancy`), switch 1.
fn int(occupancy: u32, latency: u32) -> IntMd {
    IntMd {
        mark: IntMark::Port(5000),
        remaining_hop_count: 6,
        hops: vec![
            IntHop {
                node_id: 2,
                ingress_port: 3,
                egress_port: 4,
                hop_latency: latency,
                queue_id: 3,
                queue_occupancy: occupancy,
                ingress_ts: 1_000_000,
                egress_ts: 1_000_000 + u64::from(latency),
            },
            IntHop {
                node_id: 1,
                ingress_port: 1,
                egress_port: 2,
                hop_latency: 600,
                queue_id: 3,
                queue_occupancy: 64,
                ingress_ts: 999_000,
                egress_ts: 999_600,
            },
        ],
    }
}

fn report(sequence: u32) -> Report {
    Report {
        sequence,
        // Ethernet, IPv4, UDP, INT (4 + 12 + 2 × 32), BTH.
        truncate: 14 + 20 + 8 + 80 + 12,
        ..Report::default()
    }
}

#[test]
fn int_ifa_and_reports_become_rows_joined_to_their_flows() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("telemetry.pcap");
    let mut w = PcapWriter::create(&cap, 1, 0).unwrap();
    let (fa, a100) = roce(0x11, 100);
    let (_, a101) = roce(0x11, 101);
    let (fb, b5) = roce(0x22, 5);
    let (_, unknown) = roce(0x99, 7);
    let int_a100 = int(0x4000, 1500).insert(&a100, &fa.eth);
    let frames: Vec<Vec<u8>> = vec![
        int_a100.clone(),
        int(0x6000, 2500).insert(&a101, &fa.eth),
        Ifa {
            protocol: 131,
            hop_limit: 8,
            hops: vec![IfaHop {
                device_id: 0x1_0001,
                ip_ttl: 64,
                port_speed: 4,
                congestion: 1,
                queue_id: 3,
                rx_sec: 12,
                egress_port: 7,
                ingress_port: 5,
                rx_ns: 500,
                residence_ns: 820,
                vendor: [0x1000, 0, 0],
            }],
            udp_length_grows: true,
        }
        .insert(&b5, &fb.eth),
        // Three reports of the first packet, two sequence numbers missing.
        report(10).frame(&int_a100),
        report(11).frame(&int_a100),
        report(14).frame(&int_a100),
        // A report of a packet of no flow the capture holds.
        report(15).frame(&unknown),
    ];
    for (i, f) in frames.iter().enumerate() {
        w.write_frame(0, T0 + 1000 * i as u64, f).unwrap();
    }
    w.finish().unwrap();
    let out = dir.path().join("out");
    rocescope_ok(&[
        "analyze",
        "--int-port",
        "5000",
        "--telemetry-report-port",
        "32766",
        "--out",
        out.to_str().unwrap(),
        cap.to_str().unwrap(),
    ]);
    let flows = Table::read(&out.join("flows.parquet"));
    assert_eq!(flows.ints("dest_qp"), vec![Some(0x11), Some(0x22)]);
    assert_eq!(flows.ints("flow_id"), vec![Some(0), Some(1)]);
    assert_eq!(Table::read(&out.join("packets.parquet")).rows(), 3);

    let t = Table::read(&out.join("telemetry.parquet"));
    let strs = |v: &[&str]| v.iter().map(|s| Some(s.to_string())).collect::<Vec<_>>();
    let ints = |v: &[Option<i128>]| v.to_vec();
    let report = "report";
    assert_eq!(
        t.strings("source"),
        strs(&[
            "int-md", "int-md", "int-md", "int-md", "ifa", report, report, report, report, report,
            report, report, report, report, report
        ])
    );
    assert_eq!(
        t.ints("frame"),
        [1, 1, 2, 2, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6, 7]
            .map(Some)
            .to_vec()
    );
    assert_eq!(
        t.ints("hop"),
        [0, 1, 0, 1, 0, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0]
            .map(Some)
            .to_vec()
    );
    assert_eq!(
        t.ints("switch_id"),
        ints(&[
            Some(2),
            Some(1),
            Some(2),
            Some(1),
            Some(0x1_0001),
            Some(3),
            Some(2),
            Some(1),
            Some(3),
            Some(2),
            Some(1),
            Some(3),
            Some(2),
            Some(1),
            Some(3)
        ])
    );
    assert_eq!(
        t.ints("queue_occupancy"),
        ints(&[
            Some(0x4000),
            Some(64),
            Some(0x6000),
            Some(64),
            None,
            Some(0x8000),
            Some(0x4000),
            Some(64),
            Some(0x8000),
            Some(0x4000),
            Some(64),
            Some(0x8000),
            Some(0x4000),
            Some(64),
            Some(0x8000)
        ])
    );
    assert_eq!(
        t.ints("hop_latency"),
        [
            1500, 600, 2500, 600, 820, 9000, 1500, 600, 9000, 1500, 600, 9000, 1500, 600, 9000
        ]
        .map(Some)
        .to_vec()
    );
    assert_eq!(t.ints("queue_id"), vec![Some(3); 15]);
    assert_eq!(
        t.ints("sequence"),
        ints(&[
            None,
            None,
            None,
            None,
            None,
            Some(10),
            Some(10),
            Some(10),
            Some(11),
            Some(11),
            Some(11),
            Some(14),
            Some(14),
            Some(14),
            Some(15)
        ])
    );
    assert_eq!(t.bools("congested_queue")[5..], vec![Some(true); 10]);
    assert_eq!(t.bools("congested_queue")[..5], vec![None; 5]);
    assert_eq!(
        t.ints("psn"),
        [
            100, 100, 101, 101, 5, 100, 100, 100, 100, 100, 100, 100, 100, 100, 7
        ]
        .map(Some)
        .to_vec()
    );
    // Joined to flows.parquet; the unknown QP's report belongs to none.
    let mut flow = vec![Some(0); 4];
    flow.push(Some(1));
    flow.extend(vec![Some(0); 9]);
    flow.push(None);
    assert_eq!(t.ints("flow_id"), flow);
    assert_eq!(t.strings("src_ip")[0], Some("10.0.0.1".to_string()));
    assert_eq!(t.ints("ingress_ts")[4], Some(12_000_000_500));
    assert_eq!(t.ints("ts_ns")[14], Some(i128::from(T0 + 6000)));

    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let tel = &summary["input"]["telemetry"];
    assert_eq!(tel["hops"], 15);
    assert!(
        tel.get("hops_left_out").is_none(),
        "no cap: every hop has its row"
    );
    assert_eq!(tel["reports"], 4);
    assert_eq!(tel["lost_reports"], 2);
    assert_eq!(
        tel["switches"],
        serde_json::json!([{"switch_id": 3, "hw_id": 1, "reports": 4, "lost": 2, "out_of_order": 0}])
    );
    assert_eq!(
        summary["input"]["decode"]["not_decoded_by_reason"]["not_roce.telemetry_report"],
        4
    );
}

/// Without the options, INT by port and reports are UDP to other ports;
/// IFA on its draft protocol is read by default. A run without telemetry
/// still writes the table, empty, and says nothing of it in summary.json.
#[test]
fn telemetry_options_have_their_documented_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("t.pcap");
    let mut w = PcapWriter::create(&cap, 1, 0).unwrap();
    let (fa, a100) = roce(0x11, 100);
    w.write_frame(0, T0, &int(1, 1).insert(&a100, &fa.eth))
        .unwrap();
    w.write_frame(0, T0 + 1, &report(1).frame(&a100)).unwrap();
    w.write_frame(0, T0 + 2, &a100).unwrap();
    w.finish().unwrap();
    let out = dir.path().join("out");
    rocescope_ok(&[
        "analyze",
        "--out",
        out.to_str().unwrap(),
        cap.to_str().unwrap(),
    ]);
    assert_eq!(Table::read(&out.join("telemetry.parquet")).rows(), 0);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert!(summary["input"].get("telemetry").is_none());
    assert_eq!(
        summary["input"]["decode"]["not_decoded_by_reason"]["not_roce.udp_port"],
        2
    );
    // Bad values are refused before anything runs.
    for args in [
        ["--int-dscp", "64"],
        ["--int-port", "4791"],
        ["--ifa-proto", "17"],
        ["--telemetry-report-port", "0"],
    ] {
        let o = rocescope(&[
            "analyze",
            args[0],
            args[1],
            "--out",
            out.to_str().unwrap(),
            cap.to_str().unwrap(),
        ]);
        assert!(!o.status.success(), "{args:?}");
    }
}
