//! The UET samples (`pcaps/uet-*.pcapng`, scripts/make-samples.sh) read by
//! something nobody here wrote: Debian's tshark 4.0, which has no UET
//! dissector, must see every record as Ethernet / IPv4 / UDP to port 4793,
//! as many as the truth says were written, and — telling requests, ACKs
//! and NACKs apart by the UDP length alone (a request carries a 12-byte
//! RUD header and a 44-byte SES header, an ACK_CC 32 + a 12-byte SES
//! response, a NACK 16), a trimmed request by its length and re-marked
//! DSCP — the truth's per-tap counts and per-entropy packets
//! (docs/synth-truth.md, "UET"). Skipped (with a message) without tshark.
use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::tshark::{self, num};
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

const REQUEST_UDP_MIN: u64 = 8 + 12 + 44;
const ACK_UDP: u64 = 8 + 32 + 12;
const NACK_UDP: u64 = 8 + 16;
const TRIM_DSCP: u64 = 46;

#[test]
fn tshark_reads_the_uet_samples_as_the_truth_counts_them() {
    if !tshark::available() {
        eprintln!("tshark not installed: skipped");
        return;
    }
    for name in ["uet-incast", "uet-spray"] {
        let capture = repo().join(format!("pcaps/{name}.pcapng"));
        let truth: Value = serde_json::from_str(
            &std::fs::read_to_string(repo().join(format!("pcaps/{name}.truth.json"))).unwrap(),
        )
        .unwrap();
        let rows = tshark::fields(
            &capture,
            &[],
            &[
                "frame.protocols",
                "frame.interface_name",
                "ip.src",
                "ip.dsfield.dscp",
                "udp.srcport",
                "udp.dstport",
                "udp.length",
            ],
        );
        assert_eq!(
            rows.len() as u64,
            truth["capture"]["frames"].as_u64().unwrap(),
            "{name}: records"
        );
        // (iface) -> [requests, trimmed, acks, nacks]; (iface, src, entropy) -> requests.
        let mut per_tap: BTreeMap<String, [u64; 4]> = BTreeMap::new();
        let mut per_entropy: BTreeMap<(String, String, u64), u64> = BTreeMap::new();
        for r in &rows {
            assert_eq!(
                r["frame.protocols"], "eth:ethertype:ip:udp:data",
                "{name}: {r:?}"
            );
            assert_eq!(num(&r["udp.dstport"]), 4793, "{name}: {r:?}");
            let len = num(&r["udp.length"]);
            let iface = r["frame.interface_name"].clone();
            let c = per_tap.entry(iface.clone()).or_default();
            if len >= REQUEST_UDP_MIN {
                c[0] += 1;
                let trimmed = len == REQUEST_UDP_MIN && num(&r["ip.dsfield.dscp"]) == TRIM_DSCP;
                c[1] += u64::from(trimmed);
                let key = (iface, r["ip.src"].clone(), num(&r["udp.srcport"]));
                *per_entropy.entry(key).or_default() += 1;
            } else if len == ACK_UDP {
                c[2] += 1;
            } else {
                assert_eq!(len, NACK_UDP, "{name}: {r:?}");
                c[3] += 1;
            }
        }
        for t in truth["taps"].as_array().unwrap() {
            let iface = t["iface"].as_str().unwrap();
            let want: Vec<u64> = ["requests", "trimmed", "acks", "nacks"]
                .iter()
                .map(|k| t[k].as_u64().unwrap())
                .collect();
            let got = per_tap.get(iface).copied().unwrap_or_default();
            assert_eq!(
                got.to_vec(),
                want,
                "{name} {iface}: requests, trimmed, acks, nacks"
            );
        }
        let mut want = BTreeMap::new();
        for p in truth["pdcs"].as_array().unwrap() {
            for e in p["entropies"].as_array().unwrap() {
                let key = (
                    p["iface"].as_str().unwrap().to_string(),
                    p["src_ip"].as_str().unwrap().to_string(),
                    e["entropy"].as_u64().unwrap(),
                );
                *want.entry(key).or_default() += e["packets"].as_u64().unwrap();
            }
        }
        assert_eq!(
            per_entropy, want,
            "{name}: requests per tap, source and entropy"
        );
        let trimmed: u64 = per_tap.values().map(|c| c[1]).sum();
        let nacks: u64 = per_tap.values().map(|c| c[3]).sum();
        if name == "uet-incast" {
            assert!(trimmed > 0 && nacks > 0, "{name}: trims and NACKs seen");
        }
    }
}
