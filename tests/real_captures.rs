//! Every real capture in tests/data/ (provenance in tests/data/README.md),
//! analysed end to end. The expected counts were taken independently with
//! tshark (`tshark -r F -d udp.port==4791,infiniband -Y udp.dstport==4791`,
//! counting frames, `infiniband.bth.opcode` values and distinct
//! `ip.src ip.dst infiniband.bth.destqp`): requests are every opcode but the
//! acknowledgements (0x11, 0x12) and READ responses (0x0d-0x10); `acks` are
//! 0x11 and 0x12. None of these captures lost, resent, reordered, duplicated
//! or corrupted a frame, so every such count is 0 and nothing is diagnosed.
use crate::common;

use common::*;

struct Expect {
    file: &'static str,
    roce: u64,
    flows: u64,
    data_packets: u64,
    acks: u64,
}

const CAPTURES: &[Expect] = &[
    // tshark decodes 37 of these frames as TFTP (source port 69): their
    // opcodes were read as the first byte of `udp.payload` instead.
    Expect {
        file: "oferby-proxy-roce.pcap",
        roce: 105,
        flows: 2,
        data_packets: 68,
        acks: 37,
    },
    Expect {
        file: "softroce-nccl_node0.pcap",
        roce: 184,
        flows: 4,
        data_packets: 120,
        acks: 64,
    },
    Expect {
        file: "softroce-nccl_node1.pcap",
        roce: 184,
        flows: 4,
        data_packets: 120,
        acks: 64,
    },
    Expect {
        file: "softroce-nccl_node2.pcap",
        roce: 184,
        flows: 4,
        data_packets: 120,
        acks: 64,
    },
    Expect {
        file: "softroce-pingpong_uc.pcap",
        roce: 10,
        flows: 2,
        data_packets: 10,
        acks: 0,
    },
    Expect {
        file: "softroce-pingpong_ud.pcap",
        roce: 10,
        flows: 2,
        data_packets: 10,
        acks: 0,
    },
    Expect {
        file: "softroce-rdma_atomic_bw.pcap",
        roce: 10,
        flows: 2,
        data_packets: 5,
        acks: 5,
    },
    Expect {
        file: "softroce-rdma_cm.pcap",
        roce: 96,
        flows: 6,
        data_packets: 59,
        acks: 37,
    },
    Expect {
        file: "softroce-rdma_read_bw.pcap",
        roce: 20,
        flows: 2,
        data_packets: 5,
        acks: 0,
    },
    Expect {
        file: "softroce-rdma_send_bw.pcap",
        roce: 20,
        flows: 2,
        data_packets: 15,
        acks: 5,
    },
];

#[test]
fn every_real_capture_analyses_to_its_counts_with_nothing_to_diagnose() {
    let dir = tempfile::tempdir().unwrap();
    let mut bad = Vec::new();
    for e in CAPTURES {
        let out = dir.path().join(e.file);
        let cap = shared_capture(e.file);
        rocescope_ok(&[
            "analyze",
            cap.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        let s: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
        let t = &s["totals"];
        let got = (
            s["frames"]["roce"].as_u64(),
            t["flows"].as_u64(),
            t["data_packets"].as_u64(),
            t["acks"].as_u64(),
        );
        let want = (
            Some(e.roce),
            Some(e.flows),
            Some(e.data_packets),
            Some(e.acks),
        );
        if got != want {
            bad.push(format!(
                "{}: (roce, flows, data, acks) {got:?}, want {want:?}",
                e.file
            ));
        }
        for zero in [
            &t["retrans_packets"],
            &t["rewinds"],
            &t["gaps"],
            &t["icrc_errors"],
            &t["mirror_copies"],
            &t["gaps_resolved"]["capture_lost"],
            &s["frames"]["cut"],
        ] {
            if zero != 0 {
                bad.push(format!("{}: {zero} where nothing happened: {t}", e.file));
            }
        }
        if s["findings"].as_array().is_none_or(|f| !f.is_empty()) {
            bad.push(format!("{}: findings {}", e.file, s["findings"]));
        }
        let icrc = Table::read(&out.join("packets.parquet")).bools("icrc_ok");
        let valid = icrc.iter().filter(|v| **v == Some(true)).count() as u64;
        if valid != e.roce {
            bad.push(format!(
                "{}: {valid} valid ICRCs of {} RoCE frames",
                e.file, e.roce
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The three NCCL hosts' captures of one job (each host its own clock),
/// merged by time into one pcapng of three interfaces (`mergecap -I none`:
/// `nccl3` is node0, `nccl3#1` node1, `nccl3#2` node2). Counted
/// independently: joining `tshark -T fields -e ip.src -e ip.dst -e
/// infiniband.bth.destqp -e infiniband.bth.psn -e infiniband.bth.opcode -e
/// infiniband.invariant.crc` of two hosts' files gives 92 common frames for
/// every pair (60 one way, 32 the other), none twice; the shortest
/// `frame.time_epoch` differences each way (node1 − node0: 69 µs for
/// node0 → node1, −30 µs for node1 → node0; node2 − node1: −49 and −68 µs;
/// node2 − node0: 7 and −38 µs) give the symmetric-delay offsets
/// (docs/analysis.md, "Clock offsets").
#[test]
fn the_nccl_host_captures_match_across_hosts_with_consistent_clocks() {
    let dir = tempfile::tempdir().unwrap();
    let merged = dir.path().join("nccl3.pcapng");
    let files: Vec<_> = (0..3)
        .map(|n| shared_capture(&format!("softroce-nccl_node{n}.pcap")))
        .collect();
    let status = std::process::Command::new("mergecap")
        .args(["-I", "none", "-w"])
        .arg(&merged)
        .args(&files)
        .status()
        .expect("mergecap (Wireshark's) runs");
    assert!(status.success());
    let out = rocescope_ok(&["report", "--json", merged.to_str().unwrap()]);
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let node = |name: &str| match name {
        "nccl3" => 0,
        "nccl3#1" => 1,
        "nccl3#2" => 2,
        other => panic!("tap {other}"),
    };
    // (b − a estimate, uncertainty, matched, applied offset, source) per
    // host pair a < b; node0 and node2 need no correction (both raw delays
    // are at least 0).
    let mut clocks = std::collections::BTreeMap::new();
    for c in s["clock_offsets"].as_array().unwrap() {
        let (a, b) = (
            node(c["tap_a"].as_str().unwrap()),
            node(c["tap_b"].as_str().unwrap()),
        );
        let i = |k: &str| c[k].as_i64().unwrap();
        let (est, off, unc) = (i("estimate_ns"), i("offset_ns"), i("uncertainty_ns"));
        let (a, b, est, off) = if a < b {
            (a, b, est, off)
        } else {
            (b, a, -est, -off)
        };
        let source = c["source"].as_str().unwrap().to_string();
        clocks.insert(
            (a, b),
            (est, unc, c["matched"].as_u64().unwrap(), off, source),
        );
    }
    let e = |est, unc, off, source: &str| (est, unc, 92, off, source.to_string());
    assert_eq!(
        clocks,
        [
            ((0, 1), e(49_500, 19_500, 49_500, "estimated")),
            ((0, 2), e(-15_500, 22_500, 0, "agree")),
            ((1, 2), e(-58_500, 9_500, -58_500, "estimated")),
        ]
        .into_iter()
        .collect()
    );
    // node0→node1 plus node1→node2 is node0→node2 within the uncertainties.
    let (o01, u01, ..) = clocks[&(0, 1)];
    let (o12, u12, ..) = clocks[&(1, 2)];
    let (o02, u02, ..) = clocks[&(0, 2)];
    assert!((o01 + o12 - o02).abs() <= u01 + u12 + u02);
    let hops = s["hops"].as_array().unwrap();
    assert_eq!(hops.len(), 6, "{hops:?}");
    let mut per_pair = std::collections::BTreeMap::new();
    for h in hops {
        let (up, down) = (
            node(h["up_iface"].as_str().unwrap()),
            node(h["down_iface"].as_str().unwrap()),
        );
        let n = |k: &str| h[k].as_u64().unwrap();
        assert_eq!((n("missing_down"), n("down_only")), (0, 0), "{h}");
        assert_eq!(n("matched"), n("frames_up"));
        assert!(h["delay_min_ns"].as_i64().unwrap() >= 0, "{h}");
        *per_pair.entry((up.min(down), up.max(down))).or_insert(0) += n("matched");
    }
    assert_eq!(per_pair.values().copied().collect::<Vec<_>>(), [92, 92, 92]);
    // Imposed: node1's clock 50 µs ahead of the others'; a name that is no
    // tap's fails the run (tests/cli.rs).
    let out = rocescope_ok(&[
        "report",
        "--json",
        merged.to_str().unwrap(),
        "--clock-offset",
        "nccl3#1=+50us",
    ]);
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c01 = s["clock_offsets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["tap_b"] == "nccl3" && c["tap_a"] == "nccl3#1")
        .unwrap();
    assert_eq!(
        (&c01["source"], &c01["offset_ns"]),
        (&"imposed".into(), &(-50_000).into())
    );
    let h01 = s["hops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["up_iface"] == "nccl3" && h["down_iface"] == "nccl3#1")
        .unwrap();
    assert_eq!(
        h01["delay_min_ns"], 19_000,
        "69 µs raw, 50 µs of it the clock"
    );
    let text = rocescope_ok(&["report", merged.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Clock nccl3#1 − nccl3: 49.5 µs (estimated from traffic both ways, ± 19.5 µs; 92 matched frames)"), "{text}");
    assert!(text.contains("Clock nccl3 − nccl3#2: 0 ns (estimated 15.5 µs ± 22.5 µs from traffic both ways; every delay was at least 0 without it: not corrected; 92 matched frames)"), "{text}");
    assert!(text.contains("nccl3 → nccl3#1: 172.30.0.25 → 172.30.0.11 QP 29: 60 upstream, 60 matched, 0 missing downstream, 0 downstream only; one-way delay min 19.5 µs"), "{text}");
}

/// The UC and UD ping-pongs flow by flow, as tshark shows them
/// (`tshark -r F -Y infiniband -T fields -e ip.src -e infiniband.bth.opcode
/// -e infiniband.bth.destqp -e infiniband.bth.psn`): each direction five
/// SEND Only (UC 0x24, UD 0x64) with consecutive PSNs. UC is sequenced
/// (no gap, nothing resent) but has no ACKs, so nothing pairs it; UD has no
/// sequence at all (`retrans` null on every row). Flows are numbered in
/// order of first appearance (.62 sends first in both). docs/analysis.md,
/// "Flows".
#[test]
fn uc_and_ud_ping_pongs_are_flows_of_their_service() {
    let dir = tempfile::tempdir().unwrap();
    for (file, service, flows) in [
        (
            "softroce-pingpong_uc.pcap",
            "UC",
            [("10.1.16.62", 0x21), ("10.1.16.61", 0x22)],
        ),
        (
            "softroce-pingpong_ud.pcap",
            "UD",
            [("10.1.16.62", 0x22), ("10.1.16.61", 0x23)],
        ),
    ] {
        let out = dir.path().join(file);
        let cap = shared_capture(file);
        rocescope_ok(&[
            "analyze",
            cap.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        let t = Table::read(&out.join("flows.parquet"));
        let rows: Vec<_> = (0..t.rows())
            .map(|i| {
                (
                    t.strings("src_ip")[i].clone().unwrap(),
                    t.ints("dest_qp")[i].unwrap(),
                    t.strings("service")[i].clone(),
                    t.ints("data_packets")[i].unwrap(),
                    t.ints("gaps")[i].unwrap(),
                    t.ints("retrans_packets")[i].unwrap(),
                    t.ints("paired_qp")[i],
                )
            })
            .collect();
        let want: Vec<_> = flows
            .iter()
            .map(|&(src, qp)| {
                (
                    src.to_string(),
                    qp,
                    Some(service.to_string()),
                    5,
                    0,
                    0,
                    None,
                )
            })
            .collect();
        assert_eq!(rows, want, "{file}");
        let retrans = Table::read(&out.join("packets.parquet")).bools("retrans");
        let want = if service == "UD" { None } else { Some(false) };
        assert_eq!(retrans, vec![want; 10], "{file}");
    }
}
