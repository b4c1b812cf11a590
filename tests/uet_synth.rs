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

/// A PDC direction at a tap as tshark (no UET dissector) finds its frames
/// both ways, by the addresses and the PDC id at its fixed offset in the
/// PDS header (docs/inputs.md, "UET headers"): the sending end's at byte
/// 8 going, and at byte 10 (`dpdcid`) coming back.
fn pdc_clause(iface: &str, src: &str, dst: &str, spdcid: i128) -> String {
    let id = format!("{:02x}:{:02x}", spdcid >> 8, spdcid & 0xff);
    format!(
        "(frame.interface_name==\"{iface}\" && udp.dstport==4793 && \
         ((ip.src=={src} && ip.dst=={dst} && udp.payload[8:2]=={id}) || \
         (ip.src=={dst} && ip.dst=={src} && udp.payload[10:2]=={id})))"
    )
}

/// The truth's PDC a UET row of `flows.parquet` is a direction of: its
/// initiator's (the row's source and `spdcid`) or its target's.
fn truth_pdc<'a>(
    pdcs: &'a [Value],
    iface: &str,
    src: &str,
    dst: &str,
    spdcid: i128,
) -> Option<&'a Value> {
    pdcs.iter().find(|p| {
        let is = |k: &str, v: &str| p[k].as_str() == Some(v);
        let id = |k: &str| i128::from(p[k].as_u64().unwrap()) == spdcid;
        is("iface", iface)
            && ((is("src_ip", src) && id("spdcid")) || (is("src_ip", dst) && id("dpdcid")))
    })
}

/// What tells frames apart in tshark's eyes: time, interface, addresses,
/// entropy (the UDP source port) and length, sorted.
fn frames_seen(capture: &Path, filter: &str) -> Vec<String> {
    let args: Vec<&str> = if filter.is_empty() {
        vec![]
    } else {
        vec!["-Y", filter]
    };
    let mut rows: Vec<String> = tshark::fields(
        capture,
        &args,
        &[
            "frame.time_epoch",
            "frame.interface_name",
            "ip.src",
            "ip.dst",
            "udp.srcport",
            "udp.length",
        ],
    )
    .iter()
    .map(|r| {
        [
            "frame.time_epoch",
            "frame.interface_name",
            "ip.src",
            "ip.dst",
            "udp.srcport",
            "udp.length",
        ]
        .map(|f| r.get(f).cloned().unwrap_or_default())
        .join(" ")
    })
    .collect();
    rows.sort();
    rows
}

/// Sample `name`: its capture and truth, and `analyze`'s output of it
/// (under `dir`).
fn sample_analysed(name: &str, dir: &Path) -> (PathBuf, Value, PathBuf) {
    let capture = repo().join(format!("pcaps/{name}.pcapng"));
    let truth: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join(format!("pcaps/{name}.truth.json"))).unwrap(),
    )
    .unwrap();
    let out = dir.join(name);
    common::analyze_into(&capture, &out, &[]);
    (capture, truth, out)
}

/// The UET rows of `flows.parquet` in `out`: flow id → (iface, src_ip,
/// dst_ip, uet_spdcid, display_filter).
fn uet_rows(out: &Path) -> BTreeMap<i128, (String, String, String, i128, String)> {
    let t = common::Table::read(&out.join("flows.parquet"));
    let (id, transport, spdcid) = (
        t.ints("flow_id"),
        t.strings("transport"),
        t.ints("uet_spdcid"),
    );
    let s = |c: &str| t.strings(c);
    let (iface, src, dst, filter) = (s("iface"), s("src_ip"), s("dst_ip"), s("display_filter"));
    (0..t.rows())
        .filter(|&i| transport[i].as_deref() == Some("uet"))
        .map(|i| {
            let v = |c: &Vec<Option<String>>| c[i].clone().unwrap();
            (
                id[i].unwrap(),
                (v(&iface), v(&src), v(&dst), spdcid[i].unwrap(), v(&filter)),
            )
        })
        .collect()
}

/// `extract CAPTURE SELECTOR`: its stdout and the frames written as tshark
/// reads them.
fn extracted(capture: &Path, selector: &[&str], out: &Path) -> (String, Vec<String>) {
    let mut args = vec!["extract", capture.to_str().unwrap()];
    args.extend_from_slice(selector);
    args.extend(["--out", out.to_str().unwrap()]);
    let r = common::rocescope_ok(&args);
    (
        String::from_utf8_lossy(&r.stdout).into_owned(),
        frames_seen(out, ""),
    )
}

/// `extract --flow ID` on a UET row of `flows.parquet` (one PDC direction
/// at one tap, docs/wireshark.md "UET") writes that PDC's frames both ways
/// at that tap: the frames tshark finds by the PDC's bytes
/// ([`pdc_clause`]), as many as the truth's requests, ACKs and NACKs of
/// that PDC there (a target's row: less the initiator's SYN requests,
/// which carry no `dpdcid`); and it prints the row's display filter and
/// UET's Decode As.
#[test]
fn extract_of_a_uet_row_writes_its_pdcs_frames_at_its_tap() {
    if !tshark::available() {
        eprintln!("tshark not installed: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for name in ["uet-incast", "uet-spray"] {
        let (capture, truth, out) = sample_analysed(name, dir.path());
        let rows = uet_rows(&out);
        let pdcs = truth["pdcs"].as_array().unwrap();
        assert_eq!(rows.len(), 2 * pdcs.len(), "{name}: a row per direction");
        for (id, (iface, src, dst, spdcid, filter)) in &rows {
            let file = dir.path().join(format!("{name}-{id}.pcapng"));
            let (printed, got) = extracted(&capture, &["--flow", &id.to_string()], &file);
            let want = frames_seen(&capture, &pdc_clause(iface, src, dst, *spdcid));
            assert_eq!(got, want, "{name} flow {id}: {printed}");
            let p = truth_pdc(pdcs, iface, src, dst, *spdcid)
                .unwrap_or_else(|| panic!("{name}: flow {id} is no PDC of the truth"));
            // The target's direction's filter (its PDC id as `dpdcid`) leaves
            // out the initiator's SYN requests, which carry none.
            let syn = if p["src_ip"].as_str() == Some(src.as_str()) {
                0
            } else {
                let pdc = p["spdcid"].as_u64().unwrap();
                let initiator = format!("{:02x}:{:02x}", pdc >> 8, pdc & 0xff);
                let syn = format!(
                    "frame.interface_name==\"{iface}\" && ip.src=={dst} && ip.dst=={src} && \
                     udp.payload[8:2]=={initiator} && udp.payload[1:1] & 04"
                );
                frames_seen(&capture, &syn).len()
            };
            let n = |k: &str| p[k].as_u64().unwrap() as usize;
            assert_eq!(
                got.len(),
                n("requests") + n("acks") + n("nacks") - syn,
                "{name} flow {id}"
            );
            assert!(
                printed.contains(&format!(
                    "{} frames of flow {id} from 1 interface ({iface})",
                    got.len()
                )),
                "{printed}"
            );
            assert!(printed.contains(&format!(
                "display filter (for the original captures): {filter}\n"
            )));
            assert!(
                printed.contains("decode as: -d udp.port==4793,uet\n"),
                "{printed}"
            );
        }
    }
}

/// Every `uet-*` finding on the UET samples names PDC rows and carries
/// their filter, and `extract --finding` writes the frames of those PDCs
/// (tshark's count by their bytes, [`pdc_clause`]); the rows named are
/// those the finding is about in the truth: trimmed PDCs for
/// `uet-trimming`, spurious resends for `uet-spurious-retransmissions`.
#[test]
fn extract_of_a_uet_finding_writes_its_pdcs_frames() {
    if !tshark::available() {
        eprintln!("tshark not installed: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut seen = Vec::new();
    for name in ["uet-incast", "uet-spray"] {
        let (capture, truth, out) = sample_analysed(name, dir.path());
        let rows = uet_rows(&out);
        let summary: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        for f in summary["findings"].as_array().unwrap() {
            let id = f["id"].as_str().unwrap();
            if !id.starts_with("uet-") {
                continue;
            }
            seen.push(id.to_string());
            let flows: Vec<i128> = f["flows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| i128::from(v.as_u64().unwrap()))
                .collect();
            assert!(!flows.is_empty(), "{name} {id} names its PDC rows");
            assert!(
                f["display_filter"].as_str().unwrap().contains("uet.pds."),
                "{name} {id}: {f}"
            );
            assert_eq!(f["decode_as"], serde_json::json!(["udp.port==4793,uet"]));
            let mut clauses = Vec::new();
            for flow in &flows {
                let (iface, src, dst, spdcid, _) = &rows[flow];
                clauses.push(pdc_clause(iface, src, dst, *spdcid));
                let p = truth_pdc(truth["pdcs"].as_array().unwrap(), iface, src, dst, *spdcid)
                    .unwrap_or_else(|| panic!("{name} {id}: flow {flow} is no PDC of the truth"));
                let n = |k: &str| p[k].as_u64().unwrap();
                match id {
                    "uet-trimming" => assert!(n("trimmed") > 0 || n("nacks") > 0, "{p}"),
                    "uet-spurious-retransmissions" => assert!(n("spurious") > 0, "{p}"),
                    _ => {}
                }
            }
            let file = dir.path().join(format!("{name}-{id}.pcapng"));
            let (printed, got) = extracted(&capture, &["--finding", id], &file);
            let want = frames_seen(&capture, &clauses.join(" || "));
            assert!(!got.is_empty(), "{name} {id}: {printed}");
            assert_eq!(got, want, "{name} {id}: {printed}");
            let named = match flows.len() {
                1 => "1 flow".to_string(),
                n => format!("{n} flows"),
            };
            assert!(
                printed.contains(&format!("{} frames of finding {id} ({named})", got.len())),
                "{printed}"
            );
        }
    }
    seen.sort();
    seen.dedup();
    for id in [
        "uet-trimming",
        "uet-spray-imbalance",
        "uet-spurious-retransmissions",
    ] {
        assert!(
            seen.iter().any(|s| s == id),
            "{id} on the samples: {seen:?}"
        );
    }
}

/// One frame of a capture as read: interface, time, captured bytes and
/// length on the wire.
struct Recorded {
    iface: u32,
    ts_ns: u64,
    data: Vec<u8>,
    orig_len: u32,
}

/// Capture `path`'s frames, and its interfaces' names.
fn recorded(path: &Path) -> (Vec<Recorded>, Vec<String>) {
    let mut reader = rocescope::sources::CaptureReader::open(path).unwrap();
    let mut frames = Vec::new();
    while let Some(f) = reader.next_frame().unwrap() {
        frames.push(Recorded {
            iface: f.iface,
            ts_ns: f.ts_ns,
            data: f.data.to_vec(),
            orig_len: f.orig_len,
        });
    }
    let names = reader.interfaces().iter();
    let names = names.map(|i| i.name.clone().unwrap()).collect();
    (frames, names)
}

/// Writes `frames` (sorted by time, stably) as a pcapng of `ifaces`.
fn write_recorded(path: &Path, ifaces: &[String], mut frames: Vec<Recorded>) {
    use rocescope::synth::{CaptureWrite, PcapngWriter};
    frames.sort_by_key(|f| f.ts_ns);
    let mut w = PcapngWriter::create(path).unwrap();
    for name in ifaces {
        w.add_interface(name, 1, 0).unwrap();
    }
    for f in &frames {
        w.write_frame_orig(f.iface, f.ts_ns, &f.data, f.orig_len)
            .unwrap();
    }
    w.finish().unwrap();
}

/// `summary.json`'s per-tap `(duplicates, capture_lost)` by tap name, and
/// the `capture-loss` and `mirror-duplicates` findings' counts (0: none).
fn capture_counts(out: &Path) -> (BTreeMap<String, (u64, u64)>, u64, u64) {
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let taps = s["taps"].as_array().unwrap().iter().map(|t| {
        let n = |k: &str| t[k].as_u64().unwrap();
        let name = t["iface"].as_str().unwrap().to_string();
        (name, (n("duplicates"), n("capture_lost")))
    });
    let finding = |id: &str, key: &str| {
        let mut found = s["findings"].as_array().unwrap().iter();
        let found = found.find(|f| f["id"] == id);
        found.map_or(0, |f| f["params"][key].as_u64().unwrap())
    };
    (
        taps.collect(),
        finding("capture-loss", "frames_missed"),
        finding("mirror-duplicates", "mirror_copies"),
    )
}

/// The capture-level findings on UET (docs/analysis.md, "Mirror
/// duplicates" and "Gaps"), against a truth known by construction: the
/// `uet-incast` sample with chosen frames recorded twice at their tap
/// (same bytes, a request 2 µs later, a frame without payload 0.2 µs
/// later, as a mirror does) and chosen first sends deleted at the
/// receivers' tap whose PSN a later ACK there covers (cumulatively or by a
/// SACK bit) and that the tap never sees again. Every copy is counted at
/// its tap and in `mirror-duplicates`, and nothing else changes: the UET
/// rows of `flows.parquet` and `summary.json`'s `uet` are the unchanged
/// capture's; every deleted request is a PSN missed by the capture, in
/// `taps[].capture_lost` and `capture-loss`. The sample's late PSNs (its
/// spraying) raise no `reordering`.
#[test]
fn mirror_copies_and_capture_loss_of_uet_frames_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let (capture, _, base) = sample_analysed("uet-incast", dir.path());
    let (frames, ifaces) = recorded(&capture);
    // Late PSNs are what spraying does: on UET rows, never `reordering`
    // (docs/analysis.md, "UET: PDCs").
    let late = common::Table::read(&base.join("flows.parquet")).ints("gap_late");
    assert!(late.iter().map(|n| n.unwrap()).sum::<i128>() > 0);
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(base.join("summary.json")).unwrap()).unwrap();
    let mut ids = s["findings"].as_array().unwrap().iter().map(|f| &f["id"]);
    assert!(ids.all(|id| id != "reordering"), "no reordering on UET");
    let p = common::Table::read(&base.join("packets.parquet"));
    assert_eq!(p.rows(), frames.len(), "one row per frame");
    let (pds_type, flags, psn) = (p.ints("uet_pds_type"), p.ints("uet_flags"), p.ints("psn"));
    let (spdcid, dpdcid) = (p.ints("uet_spdcid"), p.ints("uet_dpdcid"));
    let (cack, base_psn, bitmap) = (
        p.ints("uet_cack_psn"),
        p.ints("uet_sack_base"),
        p.ints("uet_sack_bitmap"),
    );
    let (src, dst, payload) = (
        p.strings("src_ip"),
        p.strings("dst_ip"),
        p.ints("payload_len"),
    );
    const RETX: i128 = 0x10;
    let is_request = |i: usize| matches!(pds_type[i], Some(2 | 3 | 13 | 14));
    let is_ack = |i: usize| cack[i].is_some();
    let receivers_tap = ifaces.iter().position(|n| n == "leaf1-r0-both").unwrap() as u32;
    // The direction a request is of, at its tap.
    let dir_of = |i: usize| (frames[i].iface, src[i].clone(), dst[i].clone(), spdcid[i]);
    // Deleted: every 7th first send at the receivers' tap that is not its
    // direction's first request there nor its last, is seen once there,
    // and is covered by a later ACK there.
    let mut deleted: BTreeMap<usize, ()> = BTreeMap::new();
    let mut candidates = 0;
    for i in (0..frames.len()).filter(|&i| frames[i].iface == receivers_tap && is_request(i)) {
        let (d, q) = (dir_of(i), psn[i].unwrap());
        if flags[i].unwrap() & RETX != 0 {
            continue;
        }
        let same = |j: usize| is_request(j) && dir_of(j) == d;
        let earlier = (0..i).any(same);
        let later = (i + 1..frames.len()).any(|j| same(j) && psn[j].unwrap() > q);
        let once = (0..frames.len())
            .filter(|&j| same(j) && psn[j] == Some(q))
            .count()
            == 1;
        let covered = (i + 1..frames.len()).any(|j| {
            is_ack(j)
                && frames[j].iface == d.0
                && src[j] == d.2
                && dst[j] == d.1
                && dpdcid[j] == d.3
                && (cack[j].unwrap() >= q || {
                    let k = q - base_psn[j].unwrap_or(i128::MAX);
                    (0..64).contains(&k) && (bitmap[j].unwrap() as u64) >> k & 1 == 1
                })
        });
        if earlier && later && once && covered {
            candidates += 1;
            if candidates % 7 == 0 {
                deleted.insert(i, ());
            }
        }
    }
    assert!(deleted.len() >= 5, "{} deletable requests", deleted.len());
    // Copied: every 23rd frame but the resends (repeated legitimately
    // after a NACK) and the deleted ones, at its own tap.
    let copied = |i: usize| {
        let resend = is_request(i) && flags[i].unwrap() & RETX != 0;
        i % 23 == 11 && !resend && !deleted.contains_key(&i)
    };
    let edit = |delete: bool| -> Vec<Recorded> {
        let kept = (0..frames.len()).filter(|i| !delete || !deleted.contains_key(i));
        kept.flat_map(|i| {
            let f = &frames[i];
            let later = if payload[i].unwrap() > 0 { 2_000 } else { 200 };
            let copy = copied(i).then(|| Recorded {
                ts_ns: f.ts_ns + later,
                data: f.data.clone(),
                ..*f
            });
            [
                Some(Recorded {
                    data: f.data.clone(),
                    ..*f
                }),
                copy,
            ]
        })
        .flatten()
        .collect()
    };
    let mut duplicated: BTreeMap<String, u64> = BTreeMap::new();
    for i in (0..frames.len()).filter(|&i| copied(i)) {
        *duplicated
            .entry(ifaces[frames[i].iface as usize].clone())
            .or_default() += 1;
    }
    let copies_made: u64 = duplicated.values().sum();
    assert!(copies_made >= 20, "{duplicated:?}");
    let summary = |d: &Path| -> Value {
        serde_json::from_str(&std::fs::read_to_string(d.join("summary.json")).unwrap()).unwrap()
    };
    // The UET rows' counters, `mirror_copies` aside.
    let rows = |d: &Path| {
        let t = common::Table::read(&d.join("flows.parquet"));
        let cols = [
            "flow_id",
            "packets",
            "bytes",
            "data_packets",
            "retrans_packets",
            "spurious_retrans",
            "gaps",
            "gap_late",
            "gap_lost_before_tap",
            "gap_nak_lost",
            "gap_capture_lost",
            "gap_unresolved",
            "acks",
            "naks",
            "uet_sacked",
            "uet_delivered",
            "uet_nacked",
        ];
        cols.map(|c| t.ints(c))
    };

    // Copies only: counted, and nothing else changes.
    let with_copies = dir.path().join("copies.pcapng");
    write_recorded(&with_copies, &ifaces, edit(false));
    let out = dir.path().join("copies");
    common::analyze_into(&with_copies, &out, &[]);
    let (taps, lost, copies) = capture_counts(&out);
    assert_eq!(
        (copies, lost),
        (copies_made, 0),
        "mirror-duplicates, capture-loss"
    );
    for (name, (dups, _)) in &taps {
        assert_eq!(*dups, duplicated.get(name).copied().unwrap_or(0), "{name}");
    }
    assert_eq!(summary(&out)["uet"], summary(&base)["uet"], "UET totals");
    assert_eq!(rows(&out), rows(&base), "UET rows, copies left out");
    let s = summary(&out);
    let mut found = s["findings"].as_array().unwrap().iter();
    let copies = found.find(|f| f["id"] == "mirror-duplicates").unwrap();
    let words = copies["detail"].as_str().unwrap();
    assert!(
        words.contains(&format!("; {copies_made} of UET PDCs")),
        "{words}"
    );
    let per_row = common::Table::read(&out.join("flows.parquet")).ints("mirror_copies");
    let per_row: i128 = per_row.iter().map(|c| c.unwrap()).sum();
    assert_eq!(per_row as u64, copies_made, "flows.parquet mirror_copies");

    // Copies and deletions: the deleted requests are PSNs missed by the
    // capture, at the receivers' tap.
    let with_both = dir.path().join("edited.pcapng");
    write_recorded(&with_both, &ifaces, edit(true));
    let out = dir.path().join("edited");
    common::analyze_into(&with_both, &out, &[]);
    let (taps, lost, copies) = capture_counts(&out);
    assert_eq!(copies, copies_made, "mirror-duplicates");
    assert_eq!(lost, deleted.len() as u64, "capture-loss");
    for (name, (dups, capture_lost)) in &taps {
        assert_eq!(*dups, duplicated.get(name).copied().unwrap_or(0), "{name}");
        let want = if name == "leaf1-r0-both" {
            deleted.len() as u64
        } else {
            0
        };
        assert_eq!(*capture_lost, want, "taps[{name}].capture_lost");
    }
}
