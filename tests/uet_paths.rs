//! UET's spraying and trimming (docs/analysis.md, "UET: spraying and
//! trimming") against the model's truth (docs/synth-truth.md, "UET"):
//! `analyze` on the `uet-*` samples writes `uet_paths.parquet`, whose rows
//! per tap, PDC direction and entropy value must hold exactly the truth's
//! `pdcs[].entropies[]` (requests, payload bytes, trimmed, retransmissions)
//! and, summed per tap, `taps[].trimmed` — the trims recognised from the
//! wire (short and re-marked), not from the model's DSCP.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{self, Table};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn truth(name: &str) -> Value {
    let text = std::fs::read_to_string(repo().join(format!("pcaps/{name}.truth.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// (iface, src_ip, spdcid, entropy) -> [requests, payload bytes, trimmed, retransmissions].
type PerEntropy = BTreeMap<(String, String, i128, i128), [i128; 4]>;

fn analysed(name: &str, out: &Path) -> (PerEntropy, BTreeMap<String, i128>) {
    common::analyze_into(&repo().join(format!("pcaps/{name}.pcapng")), out, &[]);
    let t = Table::read(&out.join("uet_paths.parquet"));
    let s = |c: &str| t.strings(c);
    let i = |c: &str| t.ints(c);
    let (iface, src, spdcid, entropy) = (s("iface"), s("src_ip"), i("spdcid"), i("entropy"));
    let counts = ["packets", "payload_bytes", "trimmed", "retrans_packets"].map(i);
    let mut per_entropy = PerEntropy::new();
    let mut per_tap = BTreeMap::new();
    for r in 0..t.rows() {
        let c = counts.each_ref().map(|col| col[r].unwrap());
        let tap = iface[r].clone().unwrap();
        *per_tap.entry(tap.clone()).or_default() += c[2];
        let key = (
            tap,
            src[r].clone().unwrap(),
            spdcid[r].unwrap(),
            entropy[r].expect("the samples spray over fewer values than the cap"),
        );
        assert!(
            per_entropy.insert(key.clone(), c).is_none(),
            "{key:?} twice"
        );
    }
    (per_entropy, per_tap)
}

#[test]
fn per_entropy_and_per_tap_counts_equal_the_truth() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["uet-incast", "uet-spray"] {
        let truth = truth(name);
        let (got, per_tap) = analysed(name, &dir.path().join(name));
        let mut want = PerEntropy::new();
        for p in truth["pdcs"].as_array().unwrap() {
            for e in p["entropies"].as_array().unwrap() {
                let key = (
                    p["iface"].as_str().unwrap().to_string(),
                    p["src_ip"].as_str().unwrap().to_string(),
                    i128::from(p["spdcid"].as_u64().unwrap()),
                    i128::from(e["entropy"].as_u64().unwrap()),
                );
                let n = |k: &str| i128::from(e[k].as_u64().unwrap());
                let counts = [
                    n("packets"),
                    n("payload_bytes"),
                    n("trimmed"),
                    n("retransmissions"),
                ];
                assert!(want.insert(key, counts).is_none());
            }
        }
        assert_eq!(
            got, want,
            "{name}: requests, payload bytes, trimmed, retransmissions per tap, PDC and entropy"
        );
        for t in truth["taps"].as_array().unwrap() {
            let iface = t["iface"].as_str().unwrap();
            assert_eq!(
                per_tap.get(iface).copied().unwrap_or(0),
                i128::from(t["trimmed"].as_u64().unwrap()),
                "{name} {iface}: trimmed"
            );
        }
        if name == "uet-incast" {
            assert!(per_tap.values().sum::<i128>() > 0, "{name}: trims seen");
        }
    }
}

fn report_json(name: &str) -> Value {
    let capture = repo().join(format!("pcaps/{name}.pcapng"));
    let out = common::rocescope_ok(&["report", capture.to_str().unwrap(), "--json"]);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `report` on uet-incast leads with trimming, worded as the congestion
/// signal it is, with the truth's trimmed requests at r0's tap and the
/// senders' tap seeing only the NACKs; no trim is called loss.
#[test]
fn report_names_trimming_as_the_congestion_signal() {
    let truth = truth("uet-incast");
    let v = report_json("uet-incast");
    let findings = v["findings"].as_array().unwrap();
    let ids: Vec<&str> = findings.iter().map(|f| f["id"].as_str().unwrap()).collect();
    assert_eq!(ids[0], "uet-trimming", "{ids:?}");
    assert!(!ids.contains(&"real-loss"), "{ids:?}");
    let f = &findings[0];
    let title = f["title"].as_str().unwrap();
    assert!(title.contains("congestion signal"), "{title}");
    assert!(
        f["detail"]
            .as_str()
            .unwrap()
            .contains("a congestion signal, not loss"),
        "{f}"
    );
    let p = &f["params"];
    let trimmed_at_taps: u64 = truth["taps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["trimmed"].as_u64().unwrap())
        .sum();
    assert_eq!(p["trimmed_requests"], trimmed_at_taps);
    let nacks: u64 = truth["pdcs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["nacks_by_code"]["TRIMMED"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(p["trimmed_nacks"], nacks);
    assert_eq!(
        p["taps"],
        serde_json::json!(["leaf0-s0-both", "leaf1-r0-both"])
    );
    // Every PDC was trimmed: five listed, the rest counted.
    let listed = p["pdcs"].as_array().unwrap().len() as u64;
    assert_eq!(listed + p["other_pdcs"].as_u64().unwrap(), 9);
}

/// uet-spray's slower path (spine2 → leaf1, 3 µs) makes the entropy values
/// hashed onto it late at r0's tap, downstream of it, and at no tap upstream.
#[test]
fn report_names_the_late_entropies_of_the_slower_path() {
    let v = report_json("uet-spray");
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "uet-spray-imbalance")
        .expect("uet-spray-imbalance");
    let pdcs = f["params"]["pdcs"].as_array().unwrap();
    assert!(!pdcs.is_empty());
    for p in pdcs {
        assert_eq!(p["iface"], "leaf1-r0-both", "{p}");
        assert!(!p["late_entropies"].as_array().unwrap().is_empty(), "{p}");
        assert!(p["heavy_entropies"].as_array().unwrap().is_empty(), "{p}");
    }
}
