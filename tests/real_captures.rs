//! Every real capture in tests/data/ (provenance in tests/data/README.md),
//! analysed end to end. The expected counts were taken independently with
//! tshark (`tshark -r F -d udp.port==4791,infiniband -Y udp.dstport==4791`,
//! counting frames, `infiniband.bth.opcode` values and distinct
//! `ip.src ip.dst infiniband.bth.destqp`): requests are every opcode but the
//! acknowledgements (0x11, 0x12) and READ responses (0x0d-0x10); `acks` are
//! 0x11 and 0x12. None of these captures lost, resent, reordered, duplicated
//! or corrupted a frame, so every such count is 0 and nothing is diagnosed.
mod common;

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
