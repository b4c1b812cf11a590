//! `rocescope synth` end to end, through the binary:
//!
//! * every scenario's capture, analysed by `rocescope analyze`, reproduces
//!   the ground truth `synth` wrote next to it — per flow exactly, per
//!   `(iface, priority)` paused time within [`paused_tolerance_ns`], every
//!   hop between taps ([`compare_hops`]) and the PFC congestion trees
//!   ([`compare_pfc_trees`]);
//! * the committed samples in `pcaps/` are exactly what
//!   `scripts/make-samples.sh` makes (its table is read from the script);
//! * the ghost-drop article's fix, replayed in the model (`ghost-drop` →
//!   `ghost-drop-fixed`), cuts the retransmission rate and the pause
//!   fraction at the victim's tap by orders of magnitude and raises goodput;
//! * capture impairments set to zero by hand change no byte, and `--sniffer`
//!   writes what a NIC's RDMA sniffer records.
use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The sample table of `scripts/make-samples.sh`: scenario and its options.
fn samples() -> Vec<(String, Vec<String>)> {
    let script = std::fs::read_to_string(repo().join("scripts/make-samples.sh")).unwrap();
    let table = script
        .split("SAMPLES='")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .expect("make-samples.sh has a SAMPLES='…' table");
    table
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace().map(String::from);
            let scenario = words.next()?;
            Some((scenario, words.collect()))
        })
        .collect()
}

/// The RoCE samples: what the RoCE analysis tests read (the UET samples'
/// PDCs are compared by [`compare_uet`]).
fn roce_samples() -> Vec<(String, Vec<String>)> {
    samples()
        .into_iter()
        .filter(|(s, _)| !s.starts_with("uet-"))
        .collect()
}

/// Every scenario `rocescope synth` knows, from its own error message
/// (`[possible values: healthy, ghost-drop, …]`).
fn scenarios() -> Vec<String> {
    let out = rocescope(&["synth", "no-such", "--out", "/nonexistent/x.pcapng"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let known = err
        .split("possible values: ")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .expect("lists the scenarios");
    known.trim().split(", ").map(String::from).collect()
}

/// Runs `rocescope synth SCENARIO --out DIR/NAME --seed 1 --snaplen 128 OPTIONS`
/// (OPTIONS' own `--snaplen` replaces the 128, as in `make-samples.sh`) and
/// returns the capture and its truth.
fn synth(dir: &Path, scenario: &str, name: &str, options: &[String]) -> (PathBuf, Value) {
    let capture = dir.join(name);
    let mut args = vec![
        "synth",
        scenario,
        "--out",
        capture.to_str().unwrap(),
        "--seed",
        "1",
    ];
    if !options.iter().any(|o| o == "--snaplen") {
        args.extend(["--snaplen", "128"]);
    }
    args.extend(options.iter().map(String::as_str));
    rocescope_ok(&args);
    let stem = capture.file_stem().unwrap().to_string_lossy().into_owned();
    let truth = read_json(&capture.with_file_name(format!("{stem}.truth.json")));
    (capture, truth)
}

fn read_json(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap()
}

/// The link speed of the scenario's taps, for `--link-speed`.
fn link_speed(truth: &Value) -> String {
    let speeds: Vec<f64> = truth["taps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["link_gbps"].as_f64().unwrap())
        .collect();
    assert!(speeds.windows(2).all(|w| w[0] == w[1]), "one speed per run");
    format!("{}G", speeds[0])
}

struct Analysis {
    flows: Table,
    hops: Table,
    nics: Table,
    summary: Value,
    /// A classic pcap's one interface is named after the file's stem; a
    /// pcapng's interfaces keep their names (the taps').
    pcap_iface: Option<String>,
}

impl Analysis {
    /// The analyzer's name for the interface of the tap named `tap`.
    fn iface<'a>(&'a self, tap: &'a str) -> &'a str {
        self.pcap_iface.as_deref().unwrap_or(tap)
    }
}

fn analyze(capture: &Path, truth: &Value) -> Analysis {
    analyze_with(capture, truth, &[])
}

/// [`analyze`] with more options.
fn analyze_with(capture: &Path, truth: &Value, extra: &[&str]) -> Analysis {
    let out = capture.with_extension("out");
    let speed = link_speed(truth);
    let mut args = vec![
        "analyze",
        capture.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--link-speed",
        &speed,
    ];
    args.extend(extra);
    rocescope_ok(&args);
    let classic = capture.extension().is_some_and(|e| e == "pcap");
    Analysis {
        flows: Table::read(&out.join("flows.parquet")),
        hops: Table::read(&out.join("hops.parquet")),
        nics: Table::read(&out.join("nics.parquet")),
        summary: read_json(&out.join("summary.json")),
        pcap_iface: classic.then(|| capture.file_stem().unwrap().to_string_lossy().into_owned()),
    }
}

/// The per-flow counters compared exactly (docs/analysis.md): the sum of
/// the analyzer's columns against the sum of the truth's fields. Rewinds
/// and resends are the model's own (what its requesters did); a resend whose
/// original the tap never saw is no retransmission at the tap but a missing
/// PSN resolved as lost before the tap (or named by a NAK).
///
/// The tap's impairments, as the model made them: a request the tap copied
/// counts once (the truth leaves copies out too; `mirror_copies` are the
/// rest), and each first transmission the tap missed is resolved as what
/// happened to it.
const EXACT: &[(&[&str], &[&str])] = &[
    (&["data_packets"], &["data_packets"]),
    (&["mirror_copies"], &["tap_duplicate_requests"]),
    (&["gap_capture_lost"], &["missing_tap_dropped_acked"]),
    (&["gap_late"], &["missing_late"]),
    (
        &["gap_lost_before_tap", "gap_nak_lost"],
        &["missing_lost_upstream", "missing_tap_dropped_resent"],
    ),
    (&["gap_unresolved"], &["missing_unresolved"]),
    (
        &["retrans_packets", "gap_lost_before_tap", "gap_nak_lost"],
        &["model_retrans"],
    ),
    (
        &["rewinds"],
        &["model_rewinds_nak", "model_rewinds_timeout", "rewinds_rnr"],
    ),
    (&["rewinds_nak"], &["model_rewinds_nak"]),
    (&["rewinds_rnr"], &["rewinds_rnr"]),
    (&["rewinds_timeout"], &["model_rewinds_timeout"]),
    (&["spurious_retrans"], &["spurious_retrans"]),
    (&["gaps"], &["gaps"]),
    (&["ce"], &["ce"]),
    (&["cnps"], &["cnps"]),
];

/// How far the analyzer's paused time of one `(iface, priority)` may be from
/// the truth: 1 ns per PFC frame. A quantum is 512 bit times — 5.12 ns at
/// 100 Gb/s, 1.28 ns at 400 Gb/s — so each pausing frame's duration is a
/// fraction of a nanosecond that has to be rounded; the contract rounds down
/// and the truth does the same, so the two agree to the nanosecond today, but
/// a correct implementation that rounds each frame differently is off by
/// less than 1 ns per frame. Everything else (timestamps in ns, XON, expiry,
/// refresh, capture end) is exact.
fn paused_tolerance_ns(frames: u64) -> u64 {
    frames
}

/// A UET PDC at a tap in the truth (`pdcs[]`) against its two rows of
/// `flows.parquet` (docs/analysis.md, "UET: PDCs"): the initiator's
/// direction (its requests and what became of them) and the target's (the
/// ACKs and NACKs it sent). Exact where the tap sees it: requests, first
/// transmissions, RETX resends, spurious resends, CE, ACKs, ECN-marked
/// ACKs, NACKs by code, delivered, SACKed and NACKed PSNs.
fn compare_uet(label: &str, truth: &Value, a: &Analysis) -> Vec<String> {
    let mut bad = vec![];
    let f = &a.flows;
    let (iface, spdcid, transport) = (
        f.strings("iface"),
        f.ints("uet_spdcid"),
        f.strings("transport"),
    );
    let col = |name: &str| f.ints(name);
    let row = |tap: &str, id: i64| {
        (0..f.rows()).find(|&i| {
            iface[i].as_deref() == Some(a.iface(tap))
                && spdcid[i] == Some(i128::from(id))
                && transport[i].as_deref() == Some("uet")
        })
    };
    // The NACK codes the bounded columns keep apart (docs/tables.md).
    let by_code = |code: &str| match code {
        "TRIMMED" | "TRIMMED_LASTHOP" | "TRIMMED_ACK" => "uet_nacks_trimmed",
        "NO_PDC_AVAIL" => "uet_nacks_no_pdc",
        "NO_PKT_BUFFER" => "uet_nacks_no_pkt_buffer",
        "PSN_OOR_WINDOW" => "uet_nacks_psn_oor_window",
        _ => "uet_nacks_other",
    };
    let initiator = [
        ("requests", "data_packets"),
        ("first_transmissions", "uet_first_transmissions"),
        ("retransmissions", "retrans_packets"),
        ("spurious", "spurious_retrans"),
        ("ce", "ce"),
        ("delivered", "uet_delivered"),
        ("sacked", "uet_sacked"),
        ("nacked", "uet_nacked"),
    ];
    let target = [
        ("acks", "acks"),
        ("acks_ecn", "uet_acks_ecn"),
        ("nacks", "naks"),
    ];
    let pdcs = truth["pdcs"].as_array().unwrap();
    for p in pdcs {
        let tap = p["iface"].as_str().unwrap();
        let ids = (p["spdcid"].as_i64().unwrap(), p["dpdcid"].as_i64().unwrap());
        let at = format!("{label} {tap} PDC {}/{}", ids.0, ids.1);
        let (Some(i), Some(t)) = (row(tap, ids.0), row(tap, ids.1)) else {
            bad.push(format!("{at}: no row for each direction"));
            continue;
        };
        for (side, r, fields) in [("initiator", i, &initiator[..]), ("target", t, &target[..])] {
            for (truth_name, column) in fields {
                let got = col(column)[r];
                let want = p[truth_name].as_i64().map(i128::from);
                if got != want {
                    bad.push(format!(
                        "{at} {side} {column}: {got:?}, truth {truth_name} {want:?}"
                    ));
                }
            }
        }
        let mut want: std::collections::BTreeMap<&str, i64> = Default::default();
        for (code, n) in p["nacks_by_code"].as_object().unwrap() {
            *want.entry(by_code(code)).or_default() += n.as_i64().unwrap();
        }
        for column in [
            "uet_nacks_trimmed",
            "uet_nacks_no_pdc",
            "uet_nacks_no_pkt_buffer",
            "uet_nacks_psn_oor_window",
            "uet_nacks_other",
        ] {
            let got = col(column)[t];
            let want = i128::from(want.get(column).copied().unwrap_or(0));
            if got != Some(want) {
                bad.push(format!("{at} target {column}: {got:?}, truth {want}"));
            }
        }
        // Trimming is a congestion signal, never a loss: no gap is NAK-lost.
        if col("gap_nak_lost")[i] != Some(0) {
            bad.push(format!("{at}: gap_nak_lost {:?}", col("gap_nak_lost")[i]));
        }
    }
    // Every UET row is one of the truth's PDCs' directions.
    let uet_rows = transport
        .iter()
        .filter(|t| t.as_deref() == Some("uet"))
        .count();
    if uet_rows != 2 * pdcs.len() {
        bad.push(format!(
            "{label}: {uet_rows} UET rows, truth {} PDCs x 2",
            pdcs.len()
        ));
    }
    bad
}

/// Holds the analysis of a synth capture against its truth; returns what differs.
fn compare(label: &str, truth: &Value, a: &Analysis) -> Vec<String> {
    let mut bad = vec![];
    let s = &a.summary;
    let cap = &truth["capture"];
    if s["frames"]["total"] != cap["frames"] || s["duration_ns"] != cap["duration_ns"] {
        bad.push(format!(
            "{label}: capture frames/duration analyzer {}/{} truth {}/{}",
            s["frames"]["total"], s["duration_ns"], cap["frames"], cap["duration_ns"]
        ));
    }

    // Flows: every request flow the truth knows, counter by counter.
    let f = &a.flows;
    let (iface, src, dst, qp) = (
        f.strings("iface"),
        f.strings("src_ip"),
        f.strings("dst_ip"),
        f.ints("dest_qp"),
    );
    let cols: Vec<Vec<Vec<Option<i128>>>> = EXACT
        .iter()
        .map(|(cs, _)| cs.iter().map(|c| f.ints(c)).collect())
        .collect();
    let data = f.ints("data_packets");
    let mut matched = 0;
    for ft in truth["flows"].as_array().unwrap() {
        if ft["data_packets"] == 0 {
            continue; // the tap saw only this flow's responses or CNPs
        }
        let key = (
            a.iface(ft["iface"].as_str().unwrap()),
            ft["src_ip"].as_str().unwrap(),
            ft["dst_ip"].as_str().unwrap(),
            ft["dest_qp"].as_i64().unwrap() as i128,
        );
        let row = (0..f.rows()).find(|&i| {
            iface[i].as_deref() == Some(key.0)
                && src[i].as_deref() == Some(key.1)
                && dst[i].as_deref() == Some(key.2)
                && qp[i] == Some(key.3)
        });
        let Some(row) = row else {
            bad.push(format!("{label}: flow {key:?} missing from flows.parquet"));
            continue;
        };
        matched += 1;
        for ((cs, ts), col) in EXACT.iter().zip(&cols) {
            let want: i128 = ts.iter().map(|t| ft[*t].as_i64().unwrap() as i128).sum();
            let got: Option<i128> = col.iter().map(|c| c[row]).sum();
            if got != Some(want) {
                bad.push(format!(
                    "{label}: {key:?} {cs:?}: analyzer {got:?} truth {ts:?} = {want}"
                ));
            }
        }
    }
    let request_rows = data.iter().filter(|d| d.unwrap_or(0) > 0).count();
    if request_rows != matched {
        bad.push(format!(
            "{label}: {request_rows} request flows in flows.parquet, {matched} in the truth"
        ));
    }

    // Pauses: per (iface, priority), union over the senders.
    let duration = cap["duration_ns"].as_u64().unwrap();
    let pfc = s["pfc"].as_array().unwrap();
    let paused = truth["paused"].as_array().unwrap();
    if pfc.len() != paused.len() {
        bad.push(format!(
            "{label}: {} (iface, priority) pause entries in summary.json, {} in the truth",
            pfc.len(),
            paused.len()
        ));
    }
    for pt in paused {
        let Some(e) = pfc.iter().find(|e| {
            e["iface"].as_str() == Some(a.iface(pt["iface"].as_str().unwrap()))
                && e["priority"] == pt["priority"]
        }) else {
            bad.push(format!(
                "{label}: no pause entry for {} priority {}",
                pt["iface"], pt["priority"]
            ));
            continue;
        };
        for c in ["frames", "xon_frames", "storms"] {
            if e[c] != pt[c] {
                bad.push(format!(
                    "{label}: {} p{} {c}: analyzer {} truth {}",
                    pt["iface"], pt["priority"], e[c], pt[c]
                ));
            }
        }
        let tol = paused_tolerance_ns(pt["frames"].as_u64().unwrap());
        let (got, want) = (
            e["paused_ns"].as_u64().unwrap(),
            pt["paused_ns"].as_u64().unwrap(),
        );
        let (gf, wf) = (
            e["fraction"].as_f64().unwrap(),
            pt["fraction"].as_f64().unwrap(),
        );
        if got.abs_diff(want) > tol || (gf - wf).abs() > (tol as f64 + 1e-6) / duration as f64 {
            bad.push(format!(
                "{label}: {} p{} paused analyzer {got} ns ({gf}) truth {want} ns ({wf}), tolerance {tol} ns",
                pt["iface"], pt["priority"]
            ));
        }
    }
    bad.extend(compare_hops(label, truth, a));
    bad.extend(compare_pfc_trees(label, truth, a));
    bad
}

/// One sender of a congestion tree, as compared: MAC, onset (model ns),
/// and the index of its parent in the same list.
#[derive(Debug)]
struct TreeNode {
    mac: String,
    onset: i64,
    parent: Option<usize>,
    delay: Option<i64>,
}

/// The part of the truth's trees (docs/synth-truth.md, "pfc_trees") an
/// analysis can see: per tree its nodes a tap of the capture recorded, in
/// order of onset, each with its nearest recorded ancestor as parent.
fn visible_trees(truth: &Value) -> Vec<(u64, Vec<TreeNode>)> {
    let mut out = vec![];
    for t in truth["pfc_trees"]["trees"].as_array().unwrap() {
        let nodes = t["nodes"].as_array().unwrap();
        let seen = |i: usize| !nodes[i]["seen"].as_array().unwrap().is_empty();
        let mut index = vec![None; nodes.len()];
        let mut vis: Vec<TreeNode> = vec![];
        for (i, n) in nodes.iter().enumerate() {
            if !seen(i) {
                continue;
            }
            let mut up = n["cause"].as_u64().map(|c| c as usize);
            while let Some(c) = up.filter(|&c| !seen(c)) {
                up = nodes[c]["cause"].as_u64().map(|c| c as usize);
            }
            index[i] = Some(vis.len());
            vis.push(TreeNode {
                mac: n["mac"].as_str().unwrap().to_string(),
                onset: n["onset_ns"].as_i64().unwrap(),
                parent: up.and_then(|c| index[c]),
                delay: None,
            });
        }
        if !vis.is_empty() {
            out.push((t["priority"].as_u64().unwrap(), vis));
        }
    }
    out
}

/// PFC congestion trees: `summary.json`'s `pfc_trees` against the visible
/// part of the truth's ([`visible_trees`]).
///
/// * Every visible truth tree starts an analyzer tree on its priority with
///   the same root MAC, whose onset is the truth's within the tolerance —
///   or, when the analyzer's tree started earlier with the same sender
///   still in it, continues that one (a sender pausing again within as long
///   again as its pause is the same episode: docs/analysis.md, "Congestion
///   tree"). Every analyzer tree is started by one, and holds no sender
///   the truth trees it was given do not.
/// * A tree it starts: its visible senders are the analyzer's first ones, in
///   the same order. Each step's parent is its nearest visible cause, or a
///   visible pause that began after that one (the analyzer takes the
///   running pause that began last; a sibling of the same switch may be
///   it), and its `delay_ns` is the truth's onset difference from that
///   parent within the tolerance.
///
/// The tolerance is the truth's `onset_lag_max_ns`: the analyzer times a
/// pause by its first XOFF frame at a tap, the model by the decision at the
/// device. The XOFF leaves once the frame the port is sending is out (at
/// most the longest frame's serialisation) and a tap at the receiving end
/// records it after its own serialisation and the link's propagation delay
/// (pfc-storm: 4 170-byte frames at 100 Gb/s, 64-byte PFC, 500 ns: 843 ns). Both onsets
/// of a delay lag by 0 to that much, so the delay is within it; the test
/// also checks every recorded lag against it.
fn compare_pfc_trees(label: &str, truth: &Value, a: &Analysis) -> Vec<String> {
    let mut bad = vec![];
    let epoch = truth["capture"]["epoch_ns"].as_i64().unwrap();
    let tol = truth["pfc_trees"]["onset_lag_max_ns"].as_i64().unwrap();
    for t in truth["pfc_trees"]["trees"].as_array().unwrap() {
        for n in t["nodes"].as_array().unwrap() {
            for s in n["seen"].as_array().unwrap() {
                let lag = s["first_xoff_ns"].as_i64().unwrap() - n["onset_ns"].as_i64().unwrap();
                if !(0..=tol).contains(&lag) {
                    bad.push(format!(
                        "{label}: {} recorded at {} {lag} ns after its onset, beyond {tol} ns",
                        n["port"], s["iface"]
                    ));
                }
            }
        }
    }
    // The analyzer's trees, one node per sender (its first, should two
    // taps record one).
    let analyzed: Vec<(u64, Vec<TreeNode>)> = a.summary["pfc_trees"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let nodes = t["nodes"].as_array().unwrap();
            let mac = |i: usize| nodes[i]["src_mac"].as_str().unwrap().to_string();
            let mut out: Vec<TreeNode> = vec![];
            for (i, n) in nodes.iter().enumerate() {
                if out.iter().any(|o| o.mac == mac(i)) {
                    continue;
                }
                let parent = n["parent"].as_u64().map(|p| mac(p as usize));
                out.push(TreeNode {
                    mac: mac(i),
                    onset: n["first_pause_ns"].as_i64().unwrap() - epoch,
                    parent: parent.and_then(|p| out.iter().position(|o| o.mac == p)),
                    delay: n["delay_ns"].as_i64(),
                });
            }
            (t["priority"].as_u64().unwrap(), out)
        })
        .collect();
    let mut started = vec![false; analyzed.len()];
    let mut given: Vec<Vec<String>> = vec![vec![]; analyzed.len()];
    for (prio, vis) in visible_trees(truth) {
        let root = &vis[0];
        let starts = analyzed.iter().position(|(p, nodes)| {
            *p == prio
                && nodes[0].mac == root.mac
                && (0..=tol).contains(&(nodes[0].onset - root.onset))
        });
        let k = starts.or_else(|| {
            (0..analyzed.len()).rev().find(|&k| {
                let (p, nodes) = &analyzed[k];
                *p == prio
                    && nodes[0].onset <= root.onset + tol
                    && nodes.iter().any(|n| n.mac == root.mac)
            })
        });
        let Some(k) = k else {
            bad.push(format!(
                "{label}: no analyzer tree for the truth's p{prio} tree of {} at {} ns",
                root.mac, root.onset
            ));
            continue;
        };
        given[k].extend(vis.iter().map(|n| n.mac.clone()));
        if starts.is_none() {
            continue;
        }
        started[k] = true;
        let got = &analyzed[k].1;
        let (want_macs, got_macs): (Vec<&str>, Vec<&str>) = (
            vis.iter().map(|n| n.mac.as_str()).collect(),
            got.iter().take(vis.len()).map(|n| n.mac.as_str()).collect(),
        );
        if want_macs != got_macs {
            bad.push(format!(
                "{label}: p{prio} tree of {} at {} ns: senders analyzer {got_macs:?} truth {want_macs:?}",
                root.mac, root.onset
            ));
            continue;
        }
        for (step, g) in vis.iter().zip(got).skip(1) {
            let parent = g.parent.map(|p| &vis[p]);
            let earliest = step.parent.map_or(i64::MIN, |c| vis[c].onset);
            let ok = parent.is_some_and(|p| {
                p.onset >= earliest
                    && p.onset <= step.onset
                    && g.delay
                        .is_some_and(|d| (d - (step.onset - p.onset)).abs() <= tol)
            });
            if !ok {
                bad.push(format!(
                    "{label}: p{prio} tree of {}: step {} (onset {} ns) analyzer parent {:?} delay {:?}, truth cause {:?}, tolerance {tol} ns",
                    root.mac,
                    step.mac,
                    step.onset,
                    parent.map(|p| (&p.mac, p.onset)),
                    g.delay,
                    step.parent.map(|c| (&vis[c].mac, vis[c].onset)),
                ));
            }
        }
    }
    for (k, (prio, nodes)) in analyzed.iter().enumerate() {
        let extra: Vec<&str> = nodes
            .iter()
            .map(|n| n.mac.as_str())
            .filter(|m| !given[k].iter().any(|g| g == m))
            .collect();
        if !started[k] || !extra.is_empty() {
            bad.push(format!(
                "{label}: analyzer p{prio} tree of {} at {} ns: started by a truth tree {}, senders no truth tree has {extra:?}",
                nodes[0].mac, nodes[0].onset, started[k]
            ));
        }
    }
    bad
}

/// Hops (docs/synth-truth.md, "hops"): every connection's request packets
/// and responses between two taps, counted exactly — seen upstream,
/// matched, missing downstream (lost between, dropped by the downstream
/// mirror or still in flight at the end), seen downstream only; of matched
/// and missing, only their sum when the truth's `overtaken` says identical
/// frames were in flight together (each within that many) — and the
/// one-way delays of the transmissions the truth's `timed` counts (those no
/// tap recorded twice within the match window): min and max exactly, p50
/// and p99 within the sketch's 0.5 % of the hop's delay range
/// (docs/analysis.md, "Cross-tap matching"), null when none is timed. Every
/// row of `hops.parquet` is one of the truth's.
fn compare_hops(label: &str, truth: &Value, a: &Analysis) -> Vec<String> {
    let mut bad = vec![];
    let h = &a.hops;
    let (up, down, src, dst, qp) = (
        h.strings("up_iface"),
        h.strings("down_iface"),
        h.strings("src_ip"),
        h.strings("dst_ip"),
        h.ints("dest_qp"),
    );
    let col = |c: &str| h.ints(c);
    let cols: Vec<_> = [
        "frames_up",
        "matched",
        "missing_down",
        "down_only",
        "delay_min_ns",
        "delay_p50_ns",
        "delay_p99_ns",
        "delay_max_ns",
    ]
    .iter()
    .map(|c| col(c))
    .collect();
    let conns = truth["connections"].as_array().unwrap();
    let mut compared = vec![false; h.rows()];
    for t in truth["hops"].as_array().unwrap() {
        let c = &conns[t["flow"].as_u64().unwrap() as usize];
        // A response flow is the requester's QP, from the responder.
        let (from, to, dest_qp) = match t["direction"].as_str().unwrap() {
            "requests" => ("src_ip", "dst_ip", "responder_qpn"),
            _ => ("dst_ip", "src_ip", "requester_qpn"),
        };
        let want_key = (
            Some(a.iface(t["up_iface"].as_str().unwrap()).to_string()),
            Some(a.iface(t["down_iface"].as_str().unwrap()).to_string()),
            c[from].as_str().map(String::from),
            c[to].as_str().map(String::from),
            c[dest_qp].as_i64().map(i128::from),
        );
        let Some(r) = (0..h.rows()).find(|&r| {
            (
                up[r].clone(),
                down[r].clone(),
                src[r].clone(),
                dst[r].clone(),
                qp[r],
            ) == want_key
        }) else {
            bad.push(format!("{label}: no hop {want_key:?} (truth {t})"));
            continue;
        };
        compared[r] = true;
        let n = |k: &str| t[k].as_i64().map(i128::from);
        let got: Vec<Option<i128>> = cols.iter().map(|c| c[r]).collect();
        let want = [
            n("frames_up"),
            n("matched"),
            Some(
                [n("dropped_between"), n("down_tap_dropped"), n("in_flight")]
                    .iter()
                    .flatten()
                    .sum(),
            ),
            n("down_only"),
        ];
        // Identical frames in flight together are paired by guess: the
        // analyzer may give a downstream record to another transmission.
        let guess = n("overtaken").unwrap_or(0);
        let counts_ok = got[0] == want[0]
            && got[3] == want[3]
            && got[1].zip(got[2]).map(|(m, x)| m + x) == want[1].zip(want[2]).map(|(m, x)| m + x)
            && got[1]
                .zip(want[1])
                .is_some_and(|(g, w)| (g - w).abs() <= guess);
        if !counts_ok {
            bad.push(format!(
                "{label}: hop {want_key:?} (frames_up, matched, missing_down, down_only) analyzer {:?} truth {want:?}, {guess} overtaken",
                &got[..4]
            ));
        }
        let (lo, hi) = (n("delay_min_ns"), n("delay_max_ns"));
        let tol = lo.zip(hi).map_or(0, |(lo, hi)| (hi - lo) / 200 + 1);
        let near = |g: Option<i128>, w: Option<i128>| match (g, w) {
            (Some(g), Some(w)) => (g - w).abs() <= tol,
            (g, w) => g == w,
        };
        let delays_ok = got[4] == lo
            && got[7] == hi
            && near(got[5], n("delay_p50_ns"))
            && near(got[6], n("delay_p99_ns"));
        if !delays_ok {
            bad.push(format!(
                "{label}: hop {want_key:?} delays (min, p50, p99, max) analyzer {:?} truth ({lo:?}, {:?}, {:?}, {hi:?}) over {} timed, tolerance {tol} ns",
                &got[4..],
                n("delay_p50_ns"),
                n("delay_p99_ns"),
                t["timed"]
            ));
        }
    }
    for r in (0..h.rows()).filter(|&r| !compared[r]) {
        bad.push(format!(
            "{label}: hops.parquet row {:?} is no hop of the truth",
            (&up[r], &down[r], &src[r], &dst[r], qp[r])
        ));
    }
    bad
}

fn assert_clean(bad: Vec<String>) {
    assert!(
        bad.is_empty(),
        "analyzer and truth differ:\n{}",
        bad.join("\n")
    );
}

#[test]
fn every_scenario_has_a_sample() {
    let mut have: Vec<String> = samples().into_iter().map(|(s, _)| s).collect();
    have.sort();
    let mut want = scenarios();
    want.sort();
    assert_eq!(have, want, "scripts/make-samples.sh covers every scenario");
}

/// Every sample, regenerated, is byte for byte the committed one, and its
/// analysis reproduces its truth.
#[test]
fn samples_regenerate_identically_and_analyse_to_their_truth() {
    let dir = tempfile::tempdir().unwrap();
    let mut bad = vec![];
    let mut total = 0;
    for (scenario, options) in samples() {
        let name = format!("{scenario}.pcapng");
        let (capture, truth) = synth(dir.path(), &scenario, &name, &options);
        for file in [name.clone(), format!("{scenario}.truth.json")] {
            let committed = repo().join("pcaps").join(&file);
            let want = std::fs::read(&committed).unwrap_or_else(|e| {
                panic!("{}: {e} (run scripts/make-samples.sh)", committed.display())
            });
            total += want.len();
            let got = std::fs::read(dir.path().join(&file)).unwrap();
            assert!(
                got == want,
                "{file}: regenerated bytes differ from pcaps/{file}; run scripts/make-samples.sh and commit"
            );
        }
        // UET samples have their own truth (docs/synth-truth.md, "UET"):
        // its per-PDC part is compared here, the rest in tests/uet_synth.rs.
        let a = analyze(&capture, &truth);
        if truth["transport"] == "uet" {
            bad.extend(compare_uet(&scenario, &truth, &a));
        } else {
            bad.extend(compare(&scenario, &truth, &a));
        }
    }
    assert_clean(bad);
    assert!(total < 8 << 20, "samples stay a few MB: {total} bytes");
}

/// The committed UET samples' PDCs, at every tap, are their truth's
/// (the quick form of the check above).
#[test]
fn the_uet_samples_analyse_to_their_pdcs() {
    let dir = tempfile::tempdir().unwrap();
    let mut bad = vec![];
    for (name, _) in samples().into_iter().filter(|(s, _)| s.starts_with("uet-")) {
        let (a, truth) = analyse_sample(dir.path(), &name);
        bad.extend(compare_uet(&name, &truth, &a));
    }
    assert_clean(bad);
}

/// `summary.json`'s `uet` totals on the UET samples are the truth's
/// `pdcs[]` summed over its entries, one per PDC and tap: the totals count
/// a PDC direction once per tap that saw it, as `flows.parquet` has a row
/// for it there (docs/tables.md, "summary.json").
#[test]
fn the_uet_samples_totals_are_their_pdcs_summed_over_the_taps() {
    let dir = tempfile::tempdir().unwrap();
    for (name, _) in samples().into_iter().filter(|(s, _)| s.starts_with("uet-")) {
        let (a, truth) = analyse_sample(dir.path(), &name);
        let pdcs = truth["pdcs"].as_array().unwrap();
        let sum = |k: &str| -> u64 { pdcs.iter().map(|p| p[k].as_u64().unwrap()).sum() };
        let code = |codes: &[&str]| -> u64 {
            let by = |p: &Value, c: &str| p["nacks_by_code"][c].as_u64().unwrap_or(0);
            pdcs.iter()
                .flat_map(|p| codes.iter().map(move |c| by(p, c)))
                .sum()
        };
        let u = &a.summary["uet"];
        let n = pdcs.len() as u64;
        let want = [
            // Each PDC: the initiator's direction sends, the target's answers.
            ("pdc_directions", 2 * n),
            ("request_directions", n),
            ("data_packets", sum("requests")),
            ("retrans_packets", sum("retransmissions")),
            ("spurious_retrans", sum("spurious")),
            ("acks", sum("acks")),
            ("nacks", sum("nacks")),
            (
                "nacks_trimmed",
                code(&["TRIMMED", "TRIMMED_LASTHOP", "TRIMMED_ACK"]),
            ),
            ("nacks_no_pdc", code(&["NO_PDC_AVAIL"])),
            ("nacks_no_pkt_buffer", code(&["NO_PKT_BUFFER"])),
            ("nacks_psn_oor_window", code(&["PSN_OOR_WINDOW"])),
            ("delivered", sum("delivered")),
            ("sacked", sum("sacked")),
            // ECN: the requests that arrived CE-marked, the ACKs echoing a mark.
            ("ce", sum("ce")),
            ("acks_ecn", sum("acks_ecn")),
        ];
        for (key, want) in want {
            assert_eq!(u[key].as_u64(), Some(want), "{name}: uet.{key} in {u}");
        }
        // The samples' NACKs are all trims (uet-incast's; uet-spray has none).
        assert_eq!(u["nacks"], u["nacks_trimmed"], "{name}: {u}");
        assert_eq!(name == "uet-incast", u["nacks"] != 0, "{name}: {u}");
        let rate = u["retrans_rate"].as_f64().unwrap();
        let retrans = sum("retransmissions") as f64 / sum("requests") as f64;
        assert!((rate - retrans).abs() < 1e-12, "{name}: {u}");
        // The report's Capture section says the same numbers in words.
        let out = rocescope_ok(&[
            "report",
            repo()
                .join(format!("pcaps/{name}.pcapng"))
                .to_str()
                .unwrap(),
        ]);
        let text = String::from_utf8_lossy(&out.stdout);
        let line = format!(
            "UET: {} PDC directions ({n} sending); {} data packets, {} retransmitted",
            2 * n,
            sum("requests"),
            sum("retransmissions")
        );
        assert!(text.contains(&line), "{name}: no `{line}` in\n{text}");
        let ecn = format!(
            "UET ECN: {} CE-marked requests; {} of {} ACKs echoed a mark (M flag)",
            sum("ce"),
            sum("acks_ecn"),
            sum("acks")
        );
        assert!(text.contains(&ecn), "{name}: no `{ecn}` in\n{text}");
        // A UET capture has no RoCE ECN line: its CE marks are UET's.
        assert!(!text.contains("\n  ECN:"), "{name}: {text}");
        // The HTML page says both lines too (docs/report.md).
        let html = dir.path().join(format!("{name}.html"));
        let capture = repo().join(format!("pcaps/{name}.pcapng"));
        rocescope_ok(&[
            "report",
            capture.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ]);
        let page = std::fs::read_to_string(&html).unwrap();
        // The flow count is RoCE's: none here.
        assert!(page.contains(" · 0 RoCE flows · "), "{name}");
        let uet = text
            .lines()
            .find(|l| l.trim_start().starts_with("UET: "))
            .unwrap()
            .trim();
        for l in [uet, ecn.as_str()] {
            assert!(
                page.contains(&format!("<p class=facts>{l}</p>")),
                "{name}: no `{l}` in the page"
            );
        }
    }
}

/// The UET scenarios through impaired mirrors (docs/synth-truth.md, "UET"):
/// taps that drop frames and record some twice. The truth is the model's
/// record of what each mirror did (`Run::tap_drops`, the copies it
/// recorded), and the analysis equals it where the tap can see it: every
/// copy counted at its tap and on its PDC direction (`mirror_copies`,
/// `taps[].duplicates`, `mirror-duplicates`) and nowhere else (the PDCs'
/// counters are the truth's, copies left out), every PSN the mirror lost
/// and an ACK at the tap covered is one the capture missed
/// (`gap_capture_lost`, `taps[].capture_lost`, `capture-loss`). The
/// fabric does the same as without the impairments.
///
/// `uet-spray` takes drops and copies (exact, and 300 ns later);
/// `uet-incast` drops only: its resends follow NACKs within a dup window,
/// and a copy of such a resend is, by the rule a tap can apply, the
/// initiator's fast resend (docs/analysis.md, "Mirror duplicates").
#[test]
fn uet_mirror_drops_and_copies_are_the_models() {
    let dir = tempfile::tempdir().unwrap();
    let sets = |pairs: &[&str]| -> Vec<String> {
        pairs
            .iter()
            .flat_map(|p| ["--set".to_string(), p.to_string()])
            .collect()
    };
    let runs = [
        (
            "uet-spray",
            sets(&[
                "taps.0.drop=0.03",
                "taps.0.duplicate=0.1",
                "taps.0.dup_gap_ns=300",
                "taps.1.drop=0.03",
                "taps.1.duplicate=0.05",
            ]),
        ),
        (
            "uet-incast",
            sets(&["taps.0.drop=0.02", "taps.1.drop=0.02"]),
        ),
    ];
    let mut bad = vec![];
    for (scenario, options) in runs {
        let name = format!("{scenario}-mirrored.pcapng");
        let (capture, truth) = synth(dir.path(), scenario, &name, &options);
        let (_, clean) = synth(dir.path(), scenario, &format!("{scenario}.pcapng"), &[]);
        // The same fabric (its events but the copies recorded later).
        let fabric = |t: &Value| {
            let mut f = t["fabric"].clone();
            f.as_object_mut().unwrap().remove("events");
            f
        };
        assert_eq!(fabric(&truth), fabric(&clean), "{scenario}: fabric");
        assert_eq!(truth["connections"], clean["connections"], "{scenario}");
        let a = analyze(&capture, &truth);
        bad.extend(compare_uet(scenario, &truth, &a));
        let n = |v: &Value, k: &str| v[k].as_u64().unwrap_or(0);
        let pdcs = truth["pdcs"].as_array().unwrap();
        let (mut copies, mut lost, mut dropped) = (0, 0, 0);
        for t in truth["taps"].as_array().unwrap() {
            let iface = t["iface"].as_str().unwrap();
            let at: Vec<&Value> = pdcs.iter().filter(|p| p["iface"] == iface).collect();
            let want_lost: u64 = at.iter().map(|p| n(p, "capture_lost")).sum();
            let mut taps = a.summary["taps"].as_array().unwrap().iter();
            let tap = taps.find(|s| s["iface"] == a.iface(iface)).unwrap();
            let got = (n(tap, "duplicates"), n(tap, "capture_lost"));
            if got != (n(t, "tap_duplicates"), want_lost) {
                bad.push(format!(
                    "{scenario} {iface}: (duplicates, capture_lost) {got:?}, truth ({}, {want_lost})",
                    n(t, "tap_duplicates")
                ));
            }
            copies += n(t, "tap_duplicates");
            lost += want_lost;
            dropped += n(t, "tap_dropped");
        }
        // Per PDC direction: the initiator's copies and missed PSNs, the
        // target's copies (of its ACKs and NACKs).
        let f = &a.flows;
        let (iface, spdcid) = (f.strings("iface"), f.ints("uet_spdcid"));
        let (row_copies, row_lost) = (f.ints("mirror_copies"), f.ints("gap_capture_lost"));
        for p in pdcs {
            let tap = a.iface(p["iface"].as_str().unwrap());
            let row = |id: &str| {
                let id = i128::from(p[id].as_u64().unwrap());
                (0..f.rows()).find(|&i| iface[i].as_deref() == Some(tap) && spdcid[i] == Some(id))
            };
            let (Some(i), Some(t)) = (row("spdcid"), row("dpdcid")) else {
                continue; // compare_uet said so
            };
            let requests = n(p, "tap_duplicate_requests");
            let want = [
                ("initiator mirror_copies", row_copies[i], requests),
                (
                    "initiator gap_capture_lost",
                    row_lost[i],
                    n(p, "capture_lost"),
                ),
                (
                    "target mirror_copies",
                    row_copies[t],
                    n(p, "tap_duplicates") - requests,
                ),
            ];
            for (what, got, want) in want {
                if got != Some(i128::from(want)) {
                    bad.push(format!(
                        "{scenario} {tap} PDC {}: {what} {got:?}, truth {want}",
                        p["pdc"]
                    ));
                }
            }
        }
        let finding = |id: &str, key: &str| {
            let mut found = a.summary["findings"].as_array().unwrap().iter();
            found
                .find(|f| f["id"] == id)
                .map_or(0, |f| f["params"][key].as_u64().unwrap())
        };
        assert_eq!(finding("capture-loss", "frames_missed"), lost, "{scenario}");
        assert_eq!(
            finding("mirror-duplicates", "mirror_copies"),
            copies,
            "{scenario}"
        );
        // The impairments did something to find.
        assert!(
            dropped > 0 && lost > 0,
            "{scenario}: {dropped} dropped, {lost} missed"
        );
        assert_eq!(
            copies > 0,
            scenario == "uet-spray",
            "{scenario}: {copies} copies"
        );
    }
    assert_clean(bad);
}

/// PDC directions that retire before the end (a `--flow-idle` shorter than
/// uet-incast's pauses, so its directions retire and come back many times)
/// still count in `summary.json`'s `uet`: its sums are those of every UET
/// row of `flows.parquet`, retired ones included.
#[test]
fn the_uet_totals_count_retired_pdc_directions() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("uet-incast.pcapng");
    std::fs::copy(repo().join("pcaps/uet-incast.pcapng"), &copy).unwrap();
    let truth = read_json(&repo().join("pcaps/uet-incast.truth.json"));
    let a = analyze_with(&copy, &truth, &["--flow-idle", "2us"]);
    let (f, u) = (&a.flows, &a.summary["uet"]);
    let transport = f.strings("transport");
    let uet: Vec<usize> = (0..f.rows())
        .filter(|&i| transport[i].as_deref() == Some("uet"))
        .collect();
    let sum = |c: &str| -> u64 {
        let col = f.ints(c);
        uet.iter().map(|&i| col[i].unwrap() as u64).sum()
    };
    assert!(uet.len() > 2 * 9, "directions retired: {} rows", uet.len());
    assert_eq!(u["pdc_directions"].as_u64(), Some(uet.len() as u64), "{u}");
    // `retirement.retired_pdc_directions` (docs/analysis.md, "Retirement"):
    // every row but each direction's last was retired (traffic after it
    // made a new row), and so may its last; QP flows there are none.
    let keys: std::collections::BTreeSet<_> = {
        let (iface, src, spdcid) = (
            f.strings("iface"),
            f.strings("src_ip"),
            f.ints("uet_spdcid"),
        );
        uet.iter()
            .map(|&i| (iface[i].clone(), src[i].clone(), spdcid[i]))
            .collect()
    };
    let r = &a.summary["retirement"];
    let retired = r["retired_pdc_directions"].as_u64().unwrap() as usize;
    assert!(
        retired >= uet.len() - keys.len() && retired <= uet.len(),
        "{retired} retired of {} rows, {} directions: {r}",
        uet.len(),
        keys.len()
    );
    assert_eq!(r["retired_flows"].as_u64(), Some(0), "{r}");
    // Without retirement: no `retirement`.
    let whole = analyze(&copy, &truth);
    assert!(
        whole.summary.get("retirement").is_none(),
        "{}",
        whole.summary
    );
    for (key, column) in [
        ("data_packets", "data_packets"),
        ("retrans_packets", "retrans_packets"),
        ("spurious_retrans", "spurious_retrans"),
        ("nacks", "naks"),
        ("nacks_trimmed", "uet_nacks_trimmed"),
        ("delivered", "uet_delivered"),
        ("sacked", "uet_sacked"),
    ] {
        assert_eq!(u[key].as_u64(), Some(sum(column)), "uet.{key} in {u}");
    }
}

/// `report` on uet-incast names its spurious retransmissions (the truth's,
/// summed over the taps) and the NACKs' cause, trimming, as congestion; no
/// RoCE finding fires on a UET capture.
#[test]
fn the_uet_incast_report_names_spurious_resends_and_the_nack_causes() {
    let dir = tempfile::tempdir().unwrap();
    let (a, truth) = analyse_sample(dir.path(), "uet-incast");
    let pdcs = truth["pdcs"].as_array().unwrap();
    let sum = |k: &str, spurious_only: bool| -> i64 {
        pdcs.iter()
            .filter(|p| !spurious_only || p["spurious"].as_i64().unwrap() > 0)
            .map(|p| p[k].as_i64().unwrap())
            .sum()
    };
    let (spurious, resends) = (sum("spurious", false), sum("retransmissions", true));
    assert!(spurious > 0, "the sample has spurious resends");
    let f = finding(&a, "uet-spurious-retransmissions");
    let title = f["title"].as_str().unwrap();
    assert!(
        title.starts_with(&format!("{spurious} of {resends} UET retransmissions")),
        "{title}"
    );
    let trimmed: i64 = pdcs
        .iter()
        .map(|p| p["nacks_by_code"]["TRIMMED"].as_i64().unwrap_or(0))
        .sum();
    let detail = f["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!(
            "{trimmed} TRIMMED (a switch cut the packet: congestion, not loss)"
        )),
        "{detail}"
    );
    // RoCE's findings stay RoCE's; no receiver ran out of resources.
    let ids = findings_of(&a);
    assert!(ids.iter().all(|i| i.starts_with("uet-")), "{ids:?}");
    assert!(
        !ids.iter().any(|i| i == "uet-receiver-resources"),
        "{ids:?}"
    );
    let out = rocescope_ok(&[
        "report",
        repo().join("pcaps/uet-incast.pcapng").to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("uet-spurious-retransmissions"), "{text}");
    assert!(text.contains("TRIMMED"), "{text}");
}

/// Captures the samples do not cover: every tap of ghost-drop (spurious
/// resends seen near the receiver), ERSPAN delivery, a classic pcap of one tap.
#[test]
fn other_captures_analyse_to_their_truth() {
    let dir = tempfile::tempdir().unwrap();
    let mut bad = vec![];
    let runs: &[(&str, &str, &[&str])] = &[
        ("ghost-drop", "ghost-all.pcapng", &["--duration", "700us"]),
        ("lossy-link", "lossy-erspan.pcapng", &["--erspan", "iii"]),
        (
            "incast",
            "incast-r0.pcap",
            &["--tap", "0", "--packets", "2500"],
        ),
        ("pfc-storm", "storm-short.pcapng", &["--duration", "5ms"]),
    ];
    for (scenario, name, options) in runs {
        let options: Vec<String> = options.iter().map(|o| o.to_string()).collect();
        let (capture, truth) = synth(dir.path(), scenario, name, &options);
        bad.extend(compare(name, &truth, &analyze(&capture, &truth)));
    }
    assert_clean(bad);
}

/// What the before/after table is made of (scripts/what-if.sh prints it).
#[derive(Debug)]
struct WhatIf {
    retrans_rate: f64,
    pause_fraction: f64,
    rewinds_timeout: u64,
    spurious: u64,
    victim_goodput_gbps: f64,
    model_goodput_gbps: f64,
    model_timeouts: u64,
    switch_drops: u64,
}

/// `synth SCENARIO --tap 0` (the victim's sender port) and its analysis.
fn what_if(dir: &Path, scenario: &str) -> WhatIf {
    let options = vec!["--tap".to_string(), "0".to_string()];
    let (capture, truth) = synth(dir, scenario, &format!("{scenario}.pcapng"), &options);
    let a = analyze(&capture, &truth);
    assert_clean(compare(scenario, &truth, &a));
    let totals = &a.summary["totals"];
    let victim = (0..a.flows.rows())
        .find(|&i| a.flows.ints("data_packets")[i].unwrap_or(0) > 0)
        .unwrap();
    let qps = truth["qps"].as_array().unwrap();
    WhatIf {
        retrans_rate: totals["retrans_rate"].as_f64().unwrap(),
        pause_fraction: a.summary["pfc"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["fraction"].as_f64().unwrap())
            .sum(),
        rewinds_timeout: totals["rewinds_timeout"].as_u64().unwrap(),
        spurious: totals["spurious_retrans"].as_u64().unwrap(),
        victim_goodput_gbps: a.flows.floats("goodput_gbps")[victim].unwrap(),
        model_goodput_gbps: qps
            .iter()
            .map(|q| q["goodput_gbps"].as_f64().unwrap())
            .sum(),
        model_timeouts: qps
            .iter()
            .map(|q| q["stats"]["timeouts"].as_u64().unwrap())
            .sum(),
        switch_drops: truth["fabric"]["switch_drops"].as_u64().unwrap(),
    }
}

/// The ghost-drop article's before/after table, in the model: longer minimum RTO, ECN
/// below PFC. Retransmissions and pauses at the victim fall by (at least) an
/// order of magnitude — to nothing, here — and goodput rises.
#[test]
fn the_ghost_drop_fix_cuts_ghost_retransmissions_and_pauses() {
    let dir = tempfile::tempdir().unwrap();
    let before = what_if(dir.path(), "ghost-drop");
    let after = what_if(dir.path(), "ghost-drop-fixed");
    eprintln!("before {before:?}\nafter  {after:?}");
    // Before: ghost drops — timeouts and spurious resends, nothing discarded.
    assert_eq!(before.switch_drops, 0);
    assert!(before.rewinds_timeout > 0 && before.spurious > 0 && before.model_timeouts > 0);
    assert!(
        (0.01..0.10).contains(&before.retrans_rate),
        "a few per cent, like the article's 3.8 %: {}",
        before.retrans_rate
    );
    assert!(before.pause_fraction > 0.05, "{}", before.pause_fraction);
    // After: at least ten times less of both.
    assert!(
        after.retrans_rate * 10.0 <= before.retrans_rate,
        "{after:?}"
    );
    assert!(
        after.pause_fraction * 10.0 <= before.pause_fraction,
        "{after:?}"
    );
    assert_eq!(
        (after.rewinds_timeout, after.spurious, after.model_timeouts),
        (0, 0, 0)
    );
    assert_eq!(after.switch_drops, 0);
    // And more gets through.
    assert!(after.victim_goodput_gbps > before.victim_goodput_gbps * 1.1);
    assert!(after.model_goodput_gbps > before.model_goodput_gbps);
}

/// Setting every capture impairment to its default by hand changes nothing:
/// the committed sample, byte for byte.
#[test]
fn impairments_at_zero_leave_the_capture_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = samples()
        .into_iter()
        .find(|(s, _)| s == "healthy")
        .unwrap()
        .1;
    for knob in [
        "taps.0.drop=0",
        "taps.0.duplicate=0",
        "taps.1.dup_gap_ns=0",
        "taps.1.dup_egress=false",
        "nic.ooo_tolerant=false",
    ] {
        options.extend(["--set".to_string(), knob.to_string()]);
    }
    let (capture, _) = synth(dir.path(), "healthy", "healthy.pcapng", &options);
    let got = std::fs::read(capture).unwrap();
    let want = std::fs::read(repo().join("pcaps/healthy.pcapng")).unwrap();
    assert!(got == want, "zero impairments changed the capture");
}

/// `synth --sniffer`: every RoCE frame from UDP port 4791 with the NIC's
/// clock as its source MAC and a failing ICRC, cut at 256 bytes (or N) with the record's
/// original length equal to what it holds; the truth says so.
#[test]
fn sniffer_flag_writes_a_sniffer_capture() {
    use rocescope::sources::CaptureReader;
    use rocescope::synth::model::bridge;
    let dir = tempfile::tempdir().unwrap();
    for (flag, cut) in [("--sniffer", 256usize), ("--sniffer=128", 128)] {
        let options: Vec<String> = ["--packets", "600", "--snaplen", "0", flag]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (capture, truth) = synth(dir.path(), "healthy", "sniffed.pcapng", &options);
        assert_eq!(truth["capture"]["sniffer"], true);
        assert_eq!(truth["capture"]["sniffer_cut"], cut);
        let mut r = CaptureReader::open(&capture).unwrap();
        let (mut cut_frames, mut whole, mut n) = (0u64, 0u64, 0u64);
        while let Some(f) = r.next_frame().unwrap() {
            n += 1;
            let d = rocescope::decode::decode(f.linktype, f.data, f.orig_len);
            assert_eq!(d.udp_sport, 4791);
            // The source MAC is the tap's NIC clock; the timestamp is the
            // model's time to the microsecond.
            let nic = rocescope::sources::mac_value(&d.src_mac)
                - bridge::sniffer_boot_ns(f.iface as usize);
            let at = f.ts_ns - bridge::EPOCH_NS;
            assert!(at.is_multiple_of(1000) && (at..at + 1000).contains(&nic));
            assert_eq!(f.orig_len as usize, f.data.len());
            assert!(f.data.len() <= cut);
            let ip_total = u16::from_be_bytes([f.data[16], f.data[17]]) as usize;
            if 14 + ip_total > f.data.len() {
                cut_frames += 1;
            } else {
                whole += 1;
                assert_eq!(d.icrc_ok(), Some(false));
            }
        }
        assert_eq!(n, 600);
        let taps = truth["taps"].as_array().unwrap();
        let sum = |k: &str| taps.iter().map(|t| t[k].as_u64().unwrap()).sum::<u64>();
        assert_eq!((sum("cut"), sum("icrc_bad")), (cut_frames, whole));
        assert!(cut_frames > 0 && whole > 0);
    }
    let out = rocescope(&[
        "synth",
        "healthy",
        "--out",
        dir.path().join("x.pcapng").to_str().unwrap(),
        "--sniffer",
        "--erspan",
        "ii",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("sniffer"));
}

/// The findings the diagnosis gives a sample, by id.
/// The committed sample `pcaps/NAME.pcapng`, copied to `dir` and analysed,
/// and its truth.
fn analyse_sample(dir: &Path, name: &str) -> (Analysis, Value) {
    let copy = dir.join(format!("{name}.pcapng"));
    std::fs::copy(repo().join("pcaps").join(format!("{name}.pcapng")), &copy).unwrap();
    let truth = read_json(&repo().join("pcaps").join(format!("{name}.truth.json")));
    (analyze(&copy, &truth), truth)
}

/// The finding `id` of an analysis.
fn finding<'a>(a: &'a Analysis, id: &str) -> &'a Value {
    a.summary["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no {id} finding in {}", a.summary["findings"]))
}

/// The negative test of finding `id`: no sample but those `raises` names
/// has it.
fn no_other_sample_raises(dir: &Path, id: &str, raises: impl Fn(&str) -> bool) {
    for (name, _) in roce_samples().into_iter().filter(|(n, _)| !raises(n)) {
        let (a, _) = analyse_sample(dir, &name);
        let ids = findings_of(&a);
        assert!(!ids.iter().any(|i| i == id), "{name}: {ids:?}");
    }
}

fn findings_of(a: &Analysis) -> Vec<String> {
    a.summary["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

/// What a user must be told about the capture itself, from samples whose
/// truth says what the model and its taps did.
#[test]
fn imperfect_captures_are_diagnosed_as_such_and_not_as_the_network() {
    let dir = tempfile::tempdir().unwrap();
    let sample = |name: &str| analyse_sample(dir.path(), name);
    // Tap drops, SPAN copies and reordering, but a clean network: the
    // capture is incomplete and duplicated; no loss, no ghost drop.
    let (a, truth) = sample("mirror-impaired");
    let ids = findings_of(&a);
    for want in ["capture-loss", "mirror-duplicates", "reordering"] {
        assert!(
            ids.contains(&want.to_string()),
            "{want} missing from {ids:?}"
        );
    }
    for not in ["real-loss", "ghost-retransmissions", "corrupted-frames"] {
        assert!(!ids.contains(&not.to_string()), "{not} in {ids:?}");
    }
    let flows = truth["flows"].as_array().unwrap();
    let sum = |k: &str| flows.iter().map(|f| f[k].as_u64().unwrap()).sum::<u64>();
    let t = &a.summary["totals"];
    assert_eq!(
        t["gaps_resolved"]["capture_lost"],
        sum("missing_tap_dropped_acked")
    );
    assert_eq!(t["gaps_resolved"]["late"], sum("missing_late"));
    assert_eq!(t["rewinds"], 0);

    // Bit errors on a link before the tap: corruption, and the NAKs and
    // resends it caused are real loss.
    let (a, truth) = sample("corruption");
    let ids = findings_of(&a);
    for want in ["corrupted-frames", "real-loss"] {
        assert!(
            ids.contains(&want.to_string()),
            "{want} missing from {ids:?}"
        );
    }
    assert!(
        !ids.contains(&"ghost-retransmissions".to_string()),
        "{ids:?}"
    );
    let taps = truth["taps"].as_array().unwrap();
    let bad: u64 = taps.iter().map(|t| t["icrc_bad"].as_u64().unwrap()).sum();
    let failed: u64 = a.summary["taps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["icrc_failed"].as_u64().unwrap())
        .sum();
    assert_eq!(failed, bad);

    // A NIC's sniffer capture: said once, never corruption.
    let options: Vec<String> = ["--packets", "600", "--sniffer"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let (capture, truth) = synth(dir.path(), "healthy", "sniffed.pcapng", &options);
    let a = analyze(&capture, &truth);
    let ids = findings_of(&a);
    assert!(ids.contains(&"sniffer-capture".to_string()), "{ids:?}");
    assert!(!ids.contains(&"corrupted-frames".to_string()), "{ids:?}");
    assert!(a.summary["capture_facts"].to_string().contains("sniffer"));
    assert!(
        a.summary["taps"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["sniffer"] == true)
    );
}

/// pfc-storm: r0 stops draining (the scenario), its NIC pauses leaf1, and
/// the congestion spreads back to leaf0's port toward s1. The onsets were
/// read with tshark (`-Y macc -e frame.time_epoch -e eth.src -e
/// macc.cbfc.pause_time.c3`): r0's NIC's first XOFF at 72.873 µs, leaf0's
/// next XOFF (after a short pause of its own at 33.3–49.4 µs, over before
/// r0's began) at 125.381 µs.
#[test]
fn the_pfc_storm_sample_names_the_slow_receiver_as_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("pfc-storm.pcapng");
    std::fs::copy(repo().join("pcaps/pfc-storm.pcapng"), &cap).unwrap();
    let truth = read_json(&repo().join("pcaps/pfc-storm.truth.json"));
    let a = analyze(&cap, &truth);
    let trees: Vec<&Value> = a.summary["pfc_trees"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["nodes"].as_array().unwrap().len() > 1)
        .collect();
    assert_eq!(trees.len(), 1, "{}", a.summary["pfc_trees"]);
    let nodes = trees[0]["nodes"].as_array().unwrap();
    let root = &nodes[0];
    assert_eq!(
        (&root["src_mac"], &root["kind"], &root["iface"]),
        (
            &Value::from("02:00:00:02:00:01"),
            &Value::from("host"),
            &Value::from("leaf1-r0-both")
        )
    );
    let step = &nodes[1];
    assert_eq!(
        (
            &step["src_mac"],
            &step["kind"],
            &step["iface"],
            &step["parent"]
        ),
        (
            &Value::from("02:5a:00:04:01:01"),
            &Value::from("switch"),
            &Value::from("leaf0-s1-both"),
            &Value::from(0)
        )
    );
    assert_eq!(step["delay_ns"], 125_381 - 72_873);
    let f = finding(&a, "pfc-congestion-tree");
    let detail = f["detail"].as_str().unwrap();
    assert!(detail.contains("Root: 02:00:00:02:00:01"), "{detail}");
    // At too high a link speed each XOFF runs out before its refresh: the
    // pauses fragment, and the storm is still one tree.
    let out = rocescope_ok(&[
        "report",
        cap.to_str().unwrap(),
        "--json",
        "--link-speed",
        "400G",
    ]);
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    let spread = s["pfc_trees"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["nodes"].as_array().unwrap().len() > 1)
        .count();
    assert_eq!(spread, 1, "{}", s["pfc_trees"]);
    assert!(
        detail.contains("52.5 µs after 02:00:00:02:00:01"),
        "{detail}"
    );
}

/// The NIC's retransmission timeout, from its own timeout rewinds.
///
/// nic-timeout: every loss waits out the requester's timer and is resent at
/// the expiry instant; each such expiry is one exact measurement of the
/// model's `rto_ns` (65.536 µs, IB T = 4) at the taps beside the senders.
///
/// ghost-drop: every timeout rewind waited out a pause, so the capture only
/// bounds the timeout. The bounds were read with tshark (`-d
/// udp.port==4791,infiniband -e frame.time_epoch -e infiniband.bth.psn`):
/// the ACKs of PSN 519 at 119.607 µs and of PSN 2255 at 618.038 µs were the
/// last ACK progress before the sender went quiet (its last packets at
/// 133.502 µs and 633.477 µs) and rewound (to PSN 544 at 233.833 µs, to PSN
/// 2288 at 733.828 µs): above 633.477 − 618.038 = 15.439 µs, at most
/// 233.833 − 119.607 = 114.226 µs; the model's 40 µs lies between.
///
/// Every other sample but mtu-blackhole has no timeout rewind: no timeout
/// is claimed.
#[test]
fn the_nics_retransmission_timeout_is_measured_from_its_timeout_rewinds() {
    let dir = tempfile::tempdir().unwrap();
    let sample = |name: &str| analyse_sample(dir.path(), name);

    let (a, truth) = sample("nic-timeout");
    let nics = a.summary["nic_timeouts"].as_array().unwrap();
    let conns = truth["connections"].as_array().unwrap();
    assert_eq!(nics.len(), conns.len(), "{nics:?}");
    for (n, c) in nics.iter().zip(conns) {
        assert_eq!(n["src_ip"], c["src_ip"]);
        assert_eq!(c["rto_ns"], 65_536);
        // Every expiry was resent at once and seen at its sender's tap.
        assert_eq!(c["timeouts_resent_later"], 0);
        assert_eq!(n["samples"], c["timeouts_resent_at_once"]);
        assert_eq!(n["samples"], c["rewinds_timeout"]);
        assert_eq!(n["timeout_us"], 65.536);
        assert_eq!(n["max_wait_us"], 65.536);
        assert_eq!(n["exponent"], 4);
        assert_eq!(n["bounded"], 0);
    }
    assert_eq!(
        nics.iter()
            .map(|n| n["samples"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [10, 13]
    );
    let measured = a.flows.ints("nic_timeout_samples");
    let exps = a.flows.ints("nic_timeout_exponent");
    let us = a.flows.floats("nic_timeout_us");
    let data = a.flows.ints("data_packets");
    for i in 0..a.flows.rows() {
        if data[i] > Some(0) {
            assert_eq!((exps[i], us[i]), (Some(4), Some(65.536)));
            assert!(measured[i] > Some(0));
        } else {
            assert_eq!((measured[i], exps[i], us[i]), (Some(0), None, None));
        }
    }
    let ids = findings_of(&a);
    assert!(ids.contains(&"real-loss".to_string()), "{ids:?}");
    assert!(
        !ids.contains(&"ghost-retransmissions".to_string()),
        "{ids:?}"
    );

    let (a, truth) = sample("ghost-drop");
    let nics = a.summary["nic_timeouts"].as_array().unwrap();
    assert_eq!(nics.len(), 1, "{nics:?}");
    let n = &nics[0];
    assert_eq!(n["src_ip"], "10.0.0.3");
    assert_eq!(
        (&n["samples"], &n["bounded"]),
        (&Value::from(0), &Value::from(2))
    );
    assert_eq!(
        (&n["lower_us"], &n["upper_us"]),
        (&Value::from(15.439), &Value::from(114.226))
    );
    assert_eq!(n["timeout_us"], Value::Null);
    let rto_us = truth["connections"][2]["rto_ns"].as_f64().unwrap() / 1000.0;
    assert!(15.439 < rto_us && rto_us <= 114.226, "{rto_us}");
    assert_eq!(truth["connections"][2]["timeouts_resent_at_once"], 0);
    let f = finding(&a, "ghost-retransmissions");
    let rec = f["recommendation"].as_str().unwrap();
    assert!(
        rec.contains("10.0.0.3's NIC times out after more than 15.4 µs and at most 114.2 µs"),
        "{rec}"
    );
    assert!(
        rec.contains("pauses on these flows' priorities last up to 100.2 µs"),
        "{rec}"
    );

    // mtu-blackhole: nothing is ever acknowledged, every expiry is resent at
    // once: the default 1.05 ms (T = 8), five times.
    let (a, truth) = sample("mtu-blackhole");
    let c = &truth["connections"][0];
    // Seen at s0's tap and at the spine's: the same rewinds, measured twice.
    let nics = a.summary["nic_timeouts"].as_array().unwrap();
    let taps: Vec<&str> = nics.iter().map(|n| n["iface"].as_str().unwrap()).collect();
    assert_eq!(taps, ["leaf0-s0-both", "spine0-leaf1-both"]);
    for n in nics {
        assert_eq!(n["src_ip"], "10.0.0.1");
        assert_eq!(n["samples"], c["timeouts_resent_at_once"]);
        assert_eq!(n["samples"], 5);
        assert_eq!(
            n["timeout_us"].as_f64().unwrap() * 1000.0,
            c["rto_ns"].as_f64().unwrap()
        );
        assert_eq!(
            (&n["exponent"], &n["max_wait_us"]),
            (&Value::from(8), &Value::from(1050.0))
        );
    }

    for (name, _) in roce_samples() {
        if ["nic-timeout", "ghost-drop", "mtu-blackhole"].contains(&name.as_str()) {
            continue;
        }
        let (a, _) = sample(&name);
        assert_eq!(a.summary["nic_timeouts"], Value::Array(vec![]), "{name}");
        assert!(
            a.flows
                .ints("nic_timeout_samples")
                .iter()
                .all(|s| *s == Some(0))
                && a.flows
                    .ints("nic_timeout_bounded")
                    .iter()
                    .all(|s| *s == Some(0)),
            "{name}"
        );
    }
}

/// mtu-blackhole: a 1500-byte MTU hop drops s0's 4 KB frames every time.
/// With tshark (`-Y "ip.src==10.0.0.1 && infiniband.bth.psn==0" -e
/// frame.time_epoch -e frame.len`) at leaf0-s0-both: PSN 0, 4170 bytes, sent at 0.836 µs and
/// again at 1.050836, 2.100836, 3.150836, 4.200836 and 5.250836 ms — five
/// rewinds — and no frame from 10.0.1.1 (nothing acknowledged). Every other
/// sample has no livelock. The model's requesters never give up (no retry
/// count): no sample is a retry exhaustion — mtu-blackhole's requester
/// resent 5 times, not 7, and was still resending when its taps' captures
/// ended (s0's with its last resend, the spine's 0.74 ms after it, short of
/// its 1.05 ms timeout).
#[test]
fn a_packet_dropped_every_time_is_a_retransmission_livelock() {
    let dir = tempfile::tempdir().unwrap();
    let sample = |name: &str| analyse_sample(dir.path(), name);
    let (a, truth) = sample("mtu-blackhole");
    let c = &truth["connections"][0];
    assert_eq!(
        (&c["max_rewinds_same_psn"], &c["stuck_psn"]),
        (&Value::from(5), &Value::from(0))
    );
    assert_eq!(c["oversize_drops"], c["link_drops"]);
    assert_eq!(truth["connections"][1]["max_rewinds_same_psn"], 0);
    let src = a.flows.strings("src_ip");
    let runs = a.flows.ints("max_rewinds_one_psn");
    let psns = a.flows.ints("livelock_psn");
    let ids = a.flows.ints("flow_id");
    // At s0's tap and at the spine's port toward leaf1 (before the drop).
    let stuck: Vec<usize> = (0..a.flows.rows()).filter(|&i| psns[i].is_some()).collect();
    assert_eq!(stuck.len(), 2);
    for &i in &stuck {
        assert_eq!(src[i].as_deref(), Some("10.0.0.1"));
        assert_eq!((runs[i], psns[i]), (Some(5), Some(0)));
    }
    let f = finding(&a, "retransmission-livelock");
    assert_eq!(f["severity"], "critical");
    let stuck_ids: Vec<u64> = stuck.iter().map(|&i| ids[i].unwrap() as u64).collect();
    assert_eq!(f["flows"], Value::from(stuck_ids));
    let detail = f["detail"].as_str().unwrap();
    assert!(
        detail.contains(
            "leaf0-s0-both) went back to PSN 0 5 times from t+1.050 ms to t+5.250 ms (4.20 ms) with nothing acknowledged between; its largest frame was 4170 bytes"
        ),
        "{detail}"
    );
    let p = &f["params"];
    assert_eq!(
        (&p["psn"], &p["rewinds"], &p["max_frame_len"]),
        (&Value::from(0), &Value::from(5), &Value::from(4170))
    );
    assert_eq!(p["first_rewind_ns"], 1_767_225_600_001_050_836_u64);
    assert_eq!(p["last_rewind_ns"], 1_767_225_600_005_250_836_u64);
    assert!(!findings_of(&a).contains(&"retry-exhausted".to_string()));

    for (name, _) in roce_samples() {
        if name == "mtu-blackhole" {
            continue;
        }
        let (a, _) = sample(&name);
        let ids = findings_of(&a);
        assert!(
            !ids.contains(&"retry-exhausted".to_string()),
            "{name}: {ids:?}"
        );
        assert!(
            !ids.contains(&"retransmission-livelock".to_string()),
            "{name}: {ids:?}"
        );
        assert!(
            a.flows.ints("livelock_psn").iter().all(Option::is_none),
            "{name}"
        );
    }
}

/// mtu-blackhole at the spine's port toward leaf1: s0's requests go out for
/// 5.255 ms and nothing comes back from r0, while s1's writes are answered
/// on the same tap. With tshark on that interface (`-Y
/// "frame.interface_name==spine0-leaf1-both && ip.src==10.0.0.1"`): 96
/// request frames, the first at 1.672 µs and the last at 5256.698 µs; no
/// frame from 10.0.1.1 (335 from 10.0.1.2). The tap at s0 records no response (nothing
/// comes back to s0): it says nothing. No other sample has an unanswered
/// flow.
#[test]
fn requests_nothing_answers_are_unanswered_flows() {
    let dir = tempfile::tempdir().unwrap();
    let (a, truth) = analyse_sample(dir.path(), "mtu-blackhole");
    assert_eq!(truth["connections"][0]["acks_sent"], 0);
    let f = finding(&a, "unanswered-flows");
    assert_eq!(f["severity"], "critical");
    let ifaces = a.flows.strings("iface");
    let src = a.flows.strings("src_ip");
    let ids = a.flows.ints("flow_id");
    let want: Vec<u64> = (0..a.flows.rows())
        .filter(|&i| {
            ifaces[i].as_deref() == Some("spine0-leaf1-both")
                && src[i].as_deref() == Some("10.0.0.1")
        })
        .map(|i| ids[i].unwrap() as u64)
        .collect();
    assert_eq!(f["flows"], Value::from(want));
    assert_eq!(
        f["title"],
        "1 flow between 1 host pair got no answer at all (10.0.0.1 → 10.0.1.1)"
    );
    let detail = f["detail"].as_str().unwrap();
    assert!(
        detail.contains("spine0-leaf1-both) sent 96 request packets over 5.26 ms and got no ACK, NAK or response"),
        "{detail}"
    );
    assert_eq!(
        f["params"]["host_pairs"],
        Value::from(vec!["10.0.0.1 → 10.0.1.1"])
    );
    assert_eq!(f["params"]["flows"], 1);
    no_other_sample_raises(dir.path(), "unanswered-flows", |n| n == "mtu-blackhole");
}

/// mtu-mismatch: the second QP from s0 to r0 was set up with RoCE MTU 1024.
/// With tshark at leaf0-s0-both (`-Y "infiniband.bth.destqp==514" -e
/// infiniband.bth.opcode -e udp.length`): 14 WRITE First of UDP length 1064
/// and 819 Middle and 13 Last of 1048 (8 + 12 BTH + 1024 payload + 4 ICRC),
/// 846 packets; QP 512's Middles are 4120 long (4096 payload).
/// mtu-blackhole, at the spine's port toward leaf1: s0's 4170-byte frames
/// get no answer while s1's 1098-byte frames are answered. No other sample
/// has an MTU mismatch.
#[test]
fn a_smaller_path_mtu_or_frames_too_large_for_the_path_are_an_mtu_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let (a, truth) = analyse_sample(dir.path(), "mtu-mismatch");
    let mtus: Vec<u64> = truth["connections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["mtu"].as_u64().unwrap())
        .collect();
    assert_eq!(mtus, [4096, 4096, 1024]);
    let f = finding(&a, "mtu-mismatch");
    assert_eq!(f["severity"], "warning");
    let qps = a.flows.ints("dest_qp");
    let ids = a.flows.ints("flow_id");
    let data = a.flows.ints("data_packets");
    let small: Vec<u64> = (0..a.flows.rows())
        .filter(|&i| qps[i] == Some(514) && data[i] > Some(0))
        .map(|i| ids[i].unwrap() as u64)
        .collect();
    assert_eq!(f["flows"], Value::from(small.clone()));
    let detail = f["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!(
            "flow {} (10.0.0.1 → 10.0.1.1 QP 514, leaf0-s0-both) uses path MTU 1024 (846 request packets) while 2 of 3 flows use 4096; flow ",
            small[0]
        )),
        "{detail}"
    );
    assert!(
        detail.contains("between the same hosts uses 4096"),
        "{detail}"
    );

    let (a, _) = analyse_sample(dir.path(), "mtu-blackhole");
    let f = finding(&a, "mtu-mismatch");
    let detail = f["detail"].as_str().unwrap();
    assert!(
        detail.contains("spine0-leaf1-both) sends frames of up to 4170 bytes and gets nothing through, while flows on the same tap with frames of up to 1098 bytes are answered: a hop on the path from 10.0.0.1 to 10.0.1.1 drops frames of 4170 bytes (it carries 1098)"),
        "{detail}"
    );
    assert_eq!(f["flows"].as_array().unwrap().len(), 1);

    no_other_sample_raises(dir.path(), "mtu-mismatch", |n| n.starts_with("mtu-"));
}

/// The analyzer's flows of connection `c` (its source address and
/// responder QP in the truth) that carry requests, as (row, tap name).
fn connection_rows(a: &Analysis, c: &Value) -> Vec<(usize, String)> {
    let src = a.flows.strings("src_ip");
    let qps = a.flows.ints("dest_qp");
    let data = a.flows.ints("data_packets");
    let ifaces = a.flows.strings("iface");
    (0..a.flows.rows())
        .filter(|&i| {
            src[i].as_deref() == c["src_ip"].as_str()
                && qps[i] == Some(c["responder_qpn"].as_i64().unwrap() as i128)
                && data[i] > Some(0)
        })
        .map(|i| (i, ifaces[i].clone().unwrap()))
        .collect()
}

/// ecn-overmark (docs/analysis.md, "CNP overload"): four writers offering
/// 88 Gb/s into r0 under ECN thresholds of 2 KB / 8 KB. The truth counts
/// the CE marks and CNPs the model made and what each connection delivered:
/// the connections held below 75 % of their 25 Gb/s share (the fourth of
/// r0's link) are the finding's, with the CNPs their taps recorded. No other
/// sample has a CNP overload.
#[test]
fn cnps_on_links_far_from_full_are_a_cnp_overload() {
    let dir = tempfile::tempdir().unwrap();
    let (a, truth) = analyse_sample(dir.path(), "ecn-overmark");
    let conns = truth["connections"].as_array().unwrap();
    let qps = truth["qps"].as_array().unwrap();
    let goodput: Vec<f64> = qps
        .iter()
        .map(|q| q["goodput_gbps"].as_f64().unwrap())
        .collect();
    // What the model did: every connection marked and answered by CNPs,
    // r0's link far from full, no pause anywhere.
    for (c, q) in conns.iter().zip(qps) {
        assert!(c["ce_received"].as_u64().unwrap() > 0, "{c}");
        assert_eq!(c["cnps_received"], q["stats"]["cnps_sent"]);
    }
    assert!(goodput.iter().sum::<f64>() < 0.75 * 100.0, "{goodput:?}");
    assert_eq!(truth["paused"], Value::Array(vec![]));
    let held: Vec<usize> = (0..conns.len())
        .filter(|&k| goodput[k] < 0.75 * 100.0 / 4.0)
        .collect();
    assert_eq!(held, [0, 2, 3], "{goodput:?}");
    let ids = a.flows.ints("flow_id");
    let mut want_flows = Vec::new();
    let mut want_cnps = 0;
    for &k in &held {
        for (i, tap) in connection_rows(&a, &conns[k]) {
            want_flows.push(ids[i].unwrap() as u64);
            let t = truth["flows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["flow"] == k && f["iface"] == tap.as_str())
                .unwrap();
            want_cnps += t["cnps"].as_u64().unwrap();
        }
    }
    want_flows.sort_unstable();
    assert_eq!(want_cnps, 42);
    let f = finding(&a, "cnp-overload");
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["flows"], Value::from(want_flows.clone()));
    assert_eq!(f["params"]["cnps"], want_cnps);
    assert_eq!(f["params"]["destinations"], Value::from(vec!["10.0.1.1"]));
    let title = f["title"].as_str().unwrap();
    assert!(
        title.starts_with(&format!("{} flows got {want_cnps} CNPs", want_flows.len())),
        "{title}"
    );
    let detail = f["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("Into 10.0.1.1: 4 connections carried "),
        "{detail}"
    );
    assert!(
        detail.contains("(10.0.0.1 → 10.0.1.1 QP 512, leaf1-r0-both): 15 CNPs in 1.49 ms"),
        "{detail}"
    );
    assert!(
        f["recommendation"]
            .as_str()
            .unwrap()
            .contains("Kmin, Kmax, Pmax")
    );
    no_other_sample_raises(dir.path(), "cnp-overload", |n| n == "ecn-overmark");
}

/// dcqcn-off (docs/analysis.md, "DCQCN reaction"): s1's NIC runs no DCQCN.
/// The truth's rate steps say what each requester did at each CNP: s1's
/// never changed its 60 Gb/s (every one of its CNPs is without reaction,
/// exactly), s0's halved its rate every time. The model cuts the rate when
/// the CNP reaches the NIC; seen from the tap at the sender's port that is
/// one propagation later (500 ns), and the first packet at the lower rate
/// leaves within one gap at the old rate and is seen another propagation
/// later: the reaction times lie within that bound. s0's recovery runs from
/// its first cut to the timer step that brought it back to 90 % of its rate
/// before, give or take the reaction bound and the 8-gap window the
/// analyzer measures the rate over. No other sample has a sender that
/// ignores its CNPs.
#[test]
fn a_sender_whose_rate_ignores_its_cnps_is_a_dcqcn_reaction_finding() {
    let dir = tempfile::tempdir().unwrap();
    let (a, truth) = analyse_sample(dir.path(), "dcqcn-off");
    let conns = truth["connections"].as_array().unwrap();
    let steps = |k: usize| conns[k]["rate_steps"].as_array().unwrap().clone();
    let gbps = |s: &Value, key: &str| s[key].as_f64().unwrap();
    let cnp_steps = |k: usize| -> Vec<Value> {
        steps(k)
            .into_iter()
            .filter(|s| s["cause"] == "cnp")
            .collect()
    };
    assert_eq!(conns[1]["dcqcn"], false);
    assert_eq!(conns[0]["dcqcn"], true);
    let deaf = cnp_steps(1);
    assert!(
        deaf.iter()
            .all(|s| gbps(s, "before_gbps") == gbps(s, "after_gbps"))
    );
    assert_eq!(
        deaf.len() as u64,
        conns[1]["cnps_received"].as_u64().unwrap()
    );
    assert_eq!(deaf.len(), 5);
    let cuts: Vec<Value> = cnp_steps(0)
        .into_iter()
        .filter(|s| gbps(s, "after_gbps") <= 0.75 * gbps(s, "before_gbps"))
        .collect();
    assert_eq!(cuts.len(), cnp_steps(0).len());
    assert_eq!(cuts.len(), 6);

    let reactions = a.flows.ints("dcqcn_reactions");
    let without = a.flows.ints("dcqcn_cnps_without_reaction");
    let mean = a.flows.floats("dcqcn_reaction_us");
    let max = a.flows.floats("dcqcn_reaction_max_us");
    let recovery = a.flows.floats("dcqcn_recovery_us");
    let ids = a.flows.ints("flow_id");
    let rows1 = connection_rows(&a, &conns[1]);
    assert_eq!(rows1.len(), 1);
    let (r1, tap1) = &rows1[0];
    assert_eq!(tap1, "leaf0-s1-both");
    assert_eq!(without[*r1], Some(deaf.len() as i128));
    assert_eq!(reactions[*r1], Some(0));
    assert_eq!(mean[*r1], None);

    let rows0 = connection_rows(&a, &conns[0]);
    assert_eq!(rows0.len(), 1);
    let (r0, tap0) = &rows0[0];
    assert_eq!(tap0, "leaf0-s0-both");
    assert_eq!(reactions[*r0], Some(cuts.len() as i128));
    assert_eq!(without[*r0], Some(0));
    // A full-size frame (4170 bytes at most) at 100 Gb/s and at the lowest
    // rate a cut started from.
    let frame_bits = 4170.0 * 8.0;
    let slowest = cuts
        .iter()
        .map(|s| gbps(s, "before_gbps"))
        .fold(f64::INFINITY, f64::min);
    let bound_us = (2.0 * 500.0 + 2.0 * frame_bits / 100.0 + frame_bits / slowest) / 1e3;
    let (m, x) = (mean[*r0].unwrap(), max[*r0].unwrap());
    assert!(0.5 < m && m <= x && x <= bound_us, "{m} {x} {bound_us}");
    let first = &cuts[0];
    let base = gbps(first, "before_gbps");
    let back = steps(0)
        .into_iter()
        .find(|s| gbps(s, "after_gbps") >= 0.9 * base)
        .unwrap();
    let want_us = (back["at_ns"].as_u64().unwrap() - first["at_ns"].as_u64().unwrap()) as f64 / 1e3;
    let window_us = 8.0 * frame_bits / (0.9 * base) / 1e3;
    let got = recovery[*r0].unwrap();
    assert!(
        (got - want_us).abs() <= bound_us + window_us,
        "{got} µs against {want_us} µs"
    );

    let f = finding(&a, "dcqcn-reaction");
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["flows"], Value::from(vec![ids[*r1].unwrap() as u64]));
    assert_eq!(
        f["title"],
        "1 flow (10.0.0.2) did not slow down for 5 CNPs: congestion control is not acting on them"
    );
    assert_eq!(f["params"]["cnps_without_reaction"], 5);
    assert_eq!(f["params"]["reacting_flows"], 1);
    let detail = f["detail"].as_str().unwrap();
    assert!(
        detail.contains("(10.0.0.2 → 10.0.1.1 QP 513, leaf0-s1-both) got 5 CNPs; after 5 of them its next 16 packets kept the rate it had before"),
        "{detail}"
    );
    assert!(
        detail.contains(
            "(10.0.0.1 → 10.0.1.1 QP 512, leaf0-s0-both) slowed down after 6 of its CNPs"
        ),
        "{detail}"
    );
    no_other_sample_raises(dir.path(), "dcqcn-reaction", |n| n == "dcqcn-off");
}

/// `(severity, id, impact)` of each finding, in summary.json's order.
fn ranked(a: &Analysis) -> Vec<(String, String, f64)> {
    a.summary["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["severity"].as_str().unwrap().to_string(),
                f["id"].as_str().unwrap().to_string(),
                f["impact"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// Request packets of the truth's flows that pass `pick`, over all of the
/// capture's (the traffic share of docs/analysis.md, "Findings").
fn truth_share(truth: &Value, pick: impl Fn(&Value) -> bool) -> f64 {
    let flows = truth["flows"].as_array().unwrap();
    let data = |f: &&Value| f["data_packets"].as_u64().unwrap();
    let of: u64 = flows.iter().filter(|f| pick(f)).map(|f| data(&f)).sum();
    of as f64 / flows.iter().map(|f| data(&f)).sum::<u64>() as f64
}

/// Findings are ranked by severity, then impact (docs/analysis.md,
/// "Findings"), the same order in summary.json, `report` and `report
/// --json`. mtu-blackhole: connection 0 (s0 → r0, stuck on PSN 0 by the
/// truth) livelocks at the two taps that see it, leaf0-s0-both and
/// spine0-leaf1-both, and goes unanswered at the spine; real loss is those
/// same two flows (their unexplained timeouts), the MTU mismatch the spine's
/// one. So the livelock's and the loss's impact is connection 0's request
/// packets over all, the others' its packets at the spine: real-loss now
/// comes before mtu-mismatch, the reverse of the order they are made in.
/// pfc-storm: the storm, tree and pressure all measure r0's port paused
/// 99.97 % of the capture (the truth's paused fraction; the tree's root is
/// r0's NIC, its pauses the same span), equal impacts keep their order.
#[test]
fn findings_are_ranked_by_severity_then_impact() {
    let dir = tempfile::tempdir().unwrap();
    let (a, truth) = analyse_sample(dir.path(), "mtu-blackhole");
    assert_eq!(truth["connections"][0]["stuck_psn"], 0);
    let conn0 = truth_share(&truth, |f| f["flow"] == 0);
    let conn0_spine = truth_share(&truth, |f| {
        f["flow"] == 0 && f["iface"] == "spine0-leaf1-both"
    });
    let want = [
        ("critical", "retransmission-livelock", conn0),
        ("critical", "unanswered-flows", conn0_spine),
        ("warning", "real-loss", conn0),
        ("warning", "mtu-mismatch", conn0_spine),
    ];
    let got = ranked(&a);
    assert_eq!(got.len(), want.len(), "{got:?}");
    for ((s, id, impact), (ws, wid, wimpact)) in got.iter().zip(want) {
        assert_eq!((s.as_str(), id.as_str()), (ws, wid), "{got:?}");
        assert!(
            (impact - wimpact).abs() < 1e-12,
            "{id}: {impact} != {wimpact}"
        );
    }
    assert!(conn0 > conn0_spine, "{conn0} {conn0_spine}");

    let (a, truth) = analyse_sample(dir.path(), "pfc-storm");
    let paused = truth["paused"].as_array().unwrap();
    let most = paused
        .iter()
        .map(|p| p["fraction"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let stormy = paused
        .iter()
        .filter(|p| p["storms"].as_u64().unwrap() > 0)
        .map(|p| p["fraction"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let got = ranked(&a);
    let ids: Vec<&str> = got.iter().map(|(_, id, _)| id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "pfc-storm",
            "pfc-congestion-tree",
            "pfc-pressure",
            "pfc-victims",
            "cnp-without-ce"
        ]
    );
    assert!((got[0].2 - stormy).abs() < 1e-12, "{got:?} {stormy}");
    assert!((got[2].2 - most).abs() < 1e-12, "{got:?} {most}");
    // Every request flow froze: all of the traffic.
    assert_eq!(got[3].2, 1.0);

    // The terminal report: the headline and the numbered findings in the
    // same order, each numbered one with its impact.
    let text = String::from_utf8(
        rocescope_ok(&[
            "report",
            repo().join("pcaps/mtu-blackhole.pcapng").to_str().unwrap(),
        ])
        .stdout,
    )
    .unwrap();
    let (a, _) = analyse_sample(dir.path(), "mtu-blackhole");
    for (rank, (s, id, impact)) in ranked(&a).iter().enumerate() {
        let line = format!(
            "  {}. {} ({id}, impact {:.2} %): ",
            rank + 1,
            s.to_uppercase(),
            impact * 100.0
        );
        assert!(text.contains(&line), "{line}\n{text}");
    }
}

/// ecmp-collision: the model hashed both elephants (s0 → r0 and s1 → r1,
/// one QP and one UDP source port each) onto leaf0's uplink to spine0 (the
/// truth's `requests_via`); the tap on the uplink to spine1 recorded
/// nothing. With the two uplinks named as a group every loaded bin is
/// imbalanced; the busiest member's bytes are the truth's bytes at that tap
/// (it recorded RoCE frames only) less their FCS; the loaded bins are counted here from
/// packets.parquet's rows (bins of 100 µs since the epoch holding at least
/// 10 % of a 100G link, 125000 bytes). A group that is balanced — healthy
/// with both QPs from s0 to r0, one per uplink — is no finding, and without
/// a group the capture facts say a group must be named; no other sample
/// says either (docs/analysis.md, "ECMP imbalance").
#[test]
fn elephants_hashed_onto_one_uplink_are_an_ecmp_imbalance() {
    let dir = tempfile::tempdir().unwrap();
    let group = ["--ecmp-group", "leaf0-spine0-tx,leaf0-spine1-tx"];
    let copy = dir.path().join("ecmp-collision.pcapng");
    std::fs::copy(repo().join("pcaps/ecmp-collision.pcapng"), &copy).unwrap();
    let truth = read_json(&repo().join("pcaps/ecmp-collision.truth.json"));
    let conns = truth["connections"].as_array().unwrap();
    for c in conns {
        assert_eq!(c["requests_via"][0], "leaf0-spine0", "{c}");
    }
    let taps = truth["taps"].as_array().unwrap();
    let tap = |name: &str| taps.iter().find(|t| t["iface"] == name).unwrap();
    let busy = tap("leaf0-spine0-tx");
    assert_eq!(
        (
            busy["pfc"].as_u64(),
            tap("leaf0-spine1-tx")["frames"].as_u64()
        ),
        (Some(0), Some(0))
    );
    let a = analyze_with(&copy, &truth, &group);
    let f = finding(&a, "ecmp-imbalance");
    assert_eq!(f["severity"], "warning");
    let p = &f["params"];
    assert_eq!(
        p["members"],
        serde_json::json!(["leaf0-spine0-tx", "leaf0-spine1-tx"])
    );
    // The truth's bytes run to each frame's FCS; a capture's frame length
    // stops before it (4 bytes).
    let wire = busy["bytes"].as_u64().unwrap() - 4 * busy["frames"].as_u64().unwrap();
    assert_eq!(p["member_bytes"], serde_json::json!([wire, 0]));
    assert_eq!(p["member_shares"], serde_json::json!([1.0, 0.0]));
    assert_eq!(
        (p["busiest"].as_str(), p["idlest"].as_str()),
        (Some("leaf0-spine0-tx"), Some("leaf0-spine1-tx"))
    );
    // The loaded bins, from the packets.
    let packets = Table::read(&copy.with_extension("out").join("packets.parquet"));
    let (ts, iface, kind, len, copies) = (
        packets.ints("ts_ns"),
        packets.strings("iface"),
        packets.strings("kind"),
        packets.ints("frame_len"),
        packets.bools("mirror_copy"),
    );
    let mut bins: std::collections::BTreeMap<i128, i128> = Default::default();
    for i in 0..packets.rows() {
        if iface[i].as_deref() == Some("leaf0-spine0-tx")
            && matches!(kind[i].as_deref(), Some("roce" | "cnp"))
            && copies[i] != Some(true)
        {
            *bins.entry(ts[i].unwrap() / 100_000).or_default() += len[i].unwrap();
        }
    }
    let loaded = bins.values().filter(|&&b| b >= 125_000).count() as u64;
    assert!(loaded >= 5, "{bins:?}");
    assert_eq!(
        (p["loaded_bins"].as_u64(), p["imbalanced_bins"].as_u64()),
        (Some(loaded), Some(loaded))
    );
    assert_eq!(f["impact"], 1.0);
    // The elephants: both connections' request flows at the busy uplink.
    let (fi, fsrc, fsport) = (
        a.flows.ints("flow_id"),
        a.flows.strings("src_ip"),
        a.flows.ints("udp_sport"),
    );
    let on_busy = request_rows(&a, "leaf0-spine0-tx");
    let ids: Vec<u64> = on_busy.iter().map(|&i| fi[i].unwrap() as u64).collect();
    assert_eq!(p["collided_flows"], Value::from(ids.clone()));
    assert_eq!(f["flows"], Value::from(ids));
    let mut seen: Vec<(String, i128)> = on_busy
        .iter()
        .map(|&i| (fsrc[i].clone().unwrap(), fsport[i].unwrap()))
        .collect();
    let mut want: Vec<(String, i128)> = conns
        .iter()
        .map(|c| {
            (
                c["src_ip"].as_str().unwrap().to_string(),
                c["udp_sport"].as_i64().unwrap() as i128,
            )
        })
        .collect();
    seen.sort();
    want.sort();
    assert_eq!(seen, want);
    assert_eq!(p["source_ports_per_host_pair"], serde_json::json!([1, 1]));
    assert_eq!(p["shared_source_ports"], 0);
    let detail = f["detail"].as_str().unwrap();
    for c in conns {
        let port = format!("UDP source port {}", c["udp_sport"]);
        assert!(detail.contains(&port), "{port}\n{detail}");
    }
    assert!(
        // The capture declares the idle uplink's interface (docs/inputs.md).
        detail.contains(
            "leaf0-spine1-tx: no frame recorded — its capture declares the interface: an idle path."
        ),
        "{detail}"
    );
    assert_eq!(
        f["title"],
        "ECMP imbalance: leaf0-spine0-tx carried 100.00 % of its group's traffic, leaf0-spine1-tx 0.00 % (2 elephant flows collided)"
    );

    // Balanced: two QPs from s0 to r0, one per uplink (the model's hash of
    // source ports 49152 and 49156).
    let capture = dir.path().join("balanced.pcapng");
    rocescope_ok(&[
        "synth",
        "healthy",
        "--out",
        capture.to_str().unwrap(),
        "--seed",
        "1",
        "--set",
        "flows.1.src=0",
        "--set",
        "flows.1.dst=0",
        "--set",
        "flows.1.udp_sport=49156",
        "--set",
        r#"taps=[{"node":"leaf0","toward":"spine0","dir":"tx"},{"node":"leaf0","toward":"spine1","dir":"tx"}]"#,
    ]);
    let truth = read_json(&dir.path().join("balanced.truth.json"));
    let vias: Vec<&Value> = truth["connections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["requests_via"][0])
        .collect();
    assert_eq!(vias, ["leaf0-spine0", "leaf0-spine1"]);
    let a = analyze_with(&capture, &truth, &group);
    assert!(
        !findings_of(&a).contains(&"ecmp-imbalance".to_string()),
        "{}",
        a.summary["findings"]
    );
    let a = analyze(&capture, &truth);
    assert_eq!(
        ecmp_facts(&a),
        [
            "leaf0-spine0-tx and leaf0-spine1-tx carry different QPs between the same hosts (10.0.0.1 → 10.0.1.1): if they are parallel paths, name them with --ecmp-group leaf0-spine0-tx,leaf0-spine1-tx; ECMP balance is judged only for named groups"
        ]
    );

    for (name, _) in roce_samples() {
        let (a, _) = analyse_sample(dir.path(), &name);
        assert!(
            !findings_of(&a).contains(&"ecmp-imbalance".to_string()),
            "{name}"
        );
        assert!(ecmp_facts(&a).is_empty(), "{name}: {:?}", ecmp_facts(&a));
    }
}

/// The capture facts about ECMP groups.
fn ecmp_facts(a: &Analysis) -> Vec<String> {
    a.summary["capture_facts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f.as_str())
        .filter(|f| f.contains("ECMP") || f.contains("--ecmp-group"))
        .map(String::from)
        .collect()
}

/// qos-mismatch: PFC runs on priority 3 alone; s2's NIC sends on DSCP 0 /
/// priority 0 (the truth's connection 2), which no pause covers, and spine0
/// rewrites DSCP 26 to 10 toward leaf1 (the truth's `dscp_rewrites`), so
/// 10.0.0.1 → 10.0.1.1 QP 512 carries 26 at leaf0-s0-both and 10 at
/// leaf1-r0-both; it is CE-marked, and leaf0 rewrites its CNPs' DSCP 48 to
/// 0 toward s0 (also in `dscp_rewrites`). The DSCP and PCP pairs seen are counted here from
/// packets.parquet's rows. No other sample has a QoS mismatch
/// (docs/analysis.md, "QoS mismatch").
#[test]
fn data_on_an_unpaused_priority_or_remarked_on_the_path_is_a_qos_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let (a, truth) = analyse_sample(dir.path(), "qos-mismatch");
    let conns = truth["connections"].as_array().unwrap();
    assert_eq!(
        (conns[2]["priority"].as_u64(), conns[2]["dscp"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(conns[0]["dscp"], 26);
    assert_eq!(
        conns[0]["dscp_rewrites"],
        serde_json::json!(["spine0-leaf1: 26 → 10", "leaf0-s0: 48 → 0"])
    );
    let paused: std::collections::BTreeSet<u64> = truth["paused"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["paused_ns"].as_u64().unwrap() > 0)
        .map(|p| p["priority"].as_u64().unwrap())
        .collect();
    assert_eq!(paused.iter().copied().collect::<Vec<_>>(), [3]);
    let f = finding(&a, "qos-mismatch");
    assert_eq!(f["severity"], "warning");
    let p = &f["params"];
    assert_eq!(p["paused_priorities"], serde_json::json!([3]));
    let (ids, src, qp) = (
        a.flows.ints("flow_id"),
        a.flows.strings("src_ip"),
        a.flows.ints("dest_qp"),
    );
    let id_of = |tap: &str, ip: &str| -> u64 {
        let i = request_rows(&a, tap)
            .into_iter()
            .find(|&i| src[i].as_deref() == Some(ip))
            .unwrap();
        ids[i].unwrap() as u64
    };
    let unprotected = id_of("leaf0-s2-both", "10.0.0.3");
    assert_eq!(p["unprotected_flows"], serde_json::json!([unprotected]));
    assert_eq!(p["remarked_connections"], 1);
    assert_eq!(p["cnp_remarked_connections"], 1);
    assert!(
        truth["flows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["flow"] == 0 && f["ce"].as_u64() > Some(0))
    );
    let (before, after) = (
        id_of("leaf0-s0-both", "10.0.0.1"),
        id_of("leaf1-r0-both", "10.0.0.1"),
    );
    let mut flows = vec![unprotected, before, after];
    flows.sort_unstable();
    assert_eq!(f["flows"], Value::from(flows));
    let qp0 = truth["connections"][0]["responder_qpn"].as_i64().unwrap() as i128;
    assert!(qp.contains(&Some(qp0)));
    let detail = f["detail"].as_str().unwrap();
    let remark = format!(
        "10.0.0.1 → 10.0.1.1 QP {qp0} is marked differently at its taps: DSCP 26 PCP 3 at leaf0-s0-both (flow {before}), DSCP 10 PCP 3 at leaf1-r0-both (flow {after})"
    );
    assert!(detail.contains(&remark), "{remark}\n{detail}");
    let cnps = format!(
        "10.0.0.1 → 10.0.1.1 QP {qp0} carries CE marks, and its CNPs come back marked differently at its taps: DSCP 0 PCP 6 at leaf0-s0-both, DSCP 48 PCP 6 at leaf1-r0-both"
    );
    assert!(detail.contains(&cnps), "{cnps}\n{detail}");
    assert!(
        detail.contains(&format!("flow {unprotected} (10.0.0.3 → 10.0.1.2 QP 514, leaf0-s2-both) sends its RoCE data on priority 0 (DSCP 0 PCP 0)")),
        "{detail}"
    );
    // The pairs seen, from the packets.
    let out = dir.path().join("qos-mismatch.out");
    let packets = Table::read(&out.join("packets.parquet"));
    let (pi, kind, dscp, pcp, copy) = (
        packets.strings("iface"),
        packets.strings("kind"),
        packets.ints("dscp"),
        packets.ints("pcp"),
        packets.bools("mirror_copy"),
    );
    let mut want: std::collections::BTreeSet<(String, i128, Option<i128>)> = Default::default();
    for i in 0..packets.rows() {
        if matches!(kind[i].as_deref(), Some("roce" | "cnp")) && copy[i] != Some(true) {
            want.insert((pi[i].clone().unwrap(), dscp[i].unwrap(), pcp[i]));
        }
    }
    let got: std::collections::BTreeSet<(String, i128, Option<i128>)> = p["dscp_pcp_seen"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["iface"].as_str().unwrap().to_string(),
                e["dscp"].as_i64().unwrap() as i128,
                e["pcp"].as_i64().map(i128::from),
            )
        })
        .collect();
    assert_eq!(got, want);
    for (name, _) in roce_samples() {
        if name == "qos-mismatch" {
            continue;
        }
        let (a, _) = analyse_sample(dir.path(), &name);
        assert!(
            !findings_of(&a).contains(&"qos-mismatch".to_string()),
            "{name}"
        );
    }
}

/// The rows of flows.parquet of the request flows (with data) at `tap`.
fn request_rows(a: &Analysis, tap: &str) -> Vec<usize> {
    let (iface, data) = (a.flows.strings("iface"), a.flows.ints("data_packets"));
    (0..a.flows.rows())
        .filter(|&i| iface[i].as_deref() == Some(tap) && data[i] > Some(0))
        .collect()
}

/// `nics.parquet` (docs/analysis.md, "NIC reaction latencies") against the
/// model. The model's NICs react the instant a packet is in: the responder
/// NAKs the first packet out of sequence and sends a CNP for a CE mark as it
/// checks it, the requester queues its resend as the NAK arrives, its timer
/// resends at expiry. So at a tap on the reacting host's own link (the rows
/// with the host's own MAC: frames past a router carry a switch's, docs/
/// synth.md) a latency is the cable both ways and the frames' serialization:
///
/// * lossy-link, NAK generation at the receivers' ports: 2 × 500 ns
///   propagation, plus the 4158-byte WRITE Middle (4096 bytes of payload)
///   and the 66-byte NAK on the wire, each with 20 bytes of preamble and
///   gap at 100 Gb/s rounded up as the model does: 335 and 7 ns; one sample
///   per NAK the model's responder sent (`naks_sent`);
/// * NAK reaction at the senders' ports: at least the same 1342 ns, plus
///   the wait for the sender's port (a frame being sent) and for its rate
///   (DCQCN paces the resend after CNPs; the truth's `nics` has the exact
///   times, compared below); one sample per NAK the requester received;
/// * CNP generation: one sample per CNP the responder sent;
/// * nic-timeout, timeout retransmission at the senders' ports: exactly the
///   model's `rto_ns`, once per expiry resent at once.
///
/// Every sample: each NIC's NAK generation and reaction latencies equal the
/// truth's `nics` (the model's record of which packet made each NAK and
/// which resend answered it, timed at the taps that recorded both): counts
/// and maxima exactly, medians within the table's 1/64 (docs/tables.md,
/// `nics.parquet`); no NIC has NAK latencies the truth lacks.
///
/// No sample has a slow NIC: every model NIC reacts alike.
#[test]
fn nic_reaction_latencies_are_the_models() {
    let dir = tempfile::tempdir().unwrap();
    let row = |a: &Analysis, ip: &str, host_mac: bool| -> usize {
        let (ips, macs) = (a.nics.strings("nic_ip"), a.nics.strings("nic_mac"));
        (0..a.nics.rows())
            .find(|&i| {
                ips[i].as_deref() == Some(ip)
                    && macs[i]
                        .as_deref()
                        .is_some_and(|m| m.starts_with("02:00:") == host_mac)
            })
            .unwrap_or_else(|| panic!("no NIC {ip}"))
    };
    let get = |a: &Analysis, i: usize, kind: &str| -> [Option<i128>; 4] {
        ["count", "p50_ns", "p99_ns", "max_ns"].map(|c| a.nics.ints(&format!("{kind}_{c}"))[i])
    };
    const PATH_NS: i128 = 2 * 500 + 335 + 7;

    let (a, truth) = analyse_sample(dir.path(), "lossy-link");
    for q in truth["qps"].as_array().unwrap() {
        let stats = &q["stats"];
        let n = |k: &str| Some(i128::from(stats[k].as_u64().unwrap()));
        let receiver = row(&a, q["dst_ip"].as_str().unwrap(), true);
        let sent = n("naks_sent");
        assert!(sent > Some(0));
        assert_eq!(
            get(&a, receiver, "nak_generation"),
            [sent, Some(PATH_NS), Some(PATH_NS), Some(PATH_NS)],
            "{q}"
        );
        assert_eq!(get(&a, receiver, "cnp_generation")[0], n("cnps_sent"));
        let sender = row(&a, q["src_ip"].as_str().unwrap(), true);
        let [count, p50, p99, max] = get(&a, sender, "nak_reaction");
        assert_eq!(count, n("naks_received"));
        for v in [p50, p99, max] {
            assert!(v.unwrap() >= PATH_NS, "{v:?}");
        }
        assert_eq!(get(&a, sender, "timeout_retrans")[0], Some(0));
    }

    let (a, truth) = analyse_sample(dir.path(), "nic-timeout");
    for c in truth["connections"].as_array().unwrap() {
        let sender = row(&a, c["src_ip"].as_str().unwrap(), true);
        let rto = Some(i128::from(c["rto_ns"].as_u64().unwrap()));
        let resent = Some(i128::from(c["timeouts_resent_at_once"].as_u64().unwrap()));
        assert!(resent > Some(0));
        assert_eq!(
            get(&a, sender, "timeout_retrans"),
            [resent, rto, rto, rto],
            "{c}"
        );
    }

    for (name, _) in roce_samples() {
        let (a, truth) = analyse_sample(dir.path(), &name);
        let (ips, macs) = (a.nics.strings("nic_ip"), a.nics.strings("nic_mac"));
        let want = truth["nics"].as_array().unwrap();
        for kind in ["nak_generation", "nak_reaction"] {
            let counts = a.nics.ints(&format!("{kind}_count"));
            for i in (0..a.nics.rows()).filter(|&i| counts[i] > Some(0)) {
                let t = want
                    .iter()
                    .find(|t| {
                        t["nic_mac"].as_str() == macs[i].as_deref()
                            && t["nic_ip"].as_str() == ips[i].as_deref()
                    })
                    .unwrap_or_else(|| {
                        panic!("{name}: {:?} {:?} not in the truth", macs[i], ips[i])
                    });
                let [count, p50, _, max] = get(&a, i, kind);
                let t = &t[kind];
                let n = |k: &str| t[k].as_u64().map(i128::from);
                assert_eq!((count, max), (n("count"), n("max_ns")), "{name} {kind} {t}");
                let (got, want) = (p50.unwrap(), n("p50_ns").unwrap());
                assert!(
                    (got - want).abs() * 64 <= want,
                    "{name} {kind}: p50 {got}, {t}"
                );
            }
            let truth_samples: u64 = want
                .iter()
                .map(|t| t[kind]["count"].as_u64().unwrap())
                .sum();
            let samples: i128 = counts.iter().map(|c| c.unwrap()).sum();
            assert_eq!(samples, i128::from(truth_samples), "{name} {kind}");
        }
    }

    no_other_sample_raises(dir.path(), "slow-nic-reaction", |_| false);
}

/// A switch that trims RoCE requests instead of queueing them whole
/// (`--set switch.trim_bytes`, docs/synth-truth.md): at the tap after the
/// trimming switch, the frames it cut and re-marked that a NAK of the
/// receiver asked for again are `trimmed` — per flow and per tap exactly
/// as the model's event log says — and none of them is an ICRC failure; a
/// trim no NAK asked for stays one, in the truth as in the analysis. The
/// trims are a congestion signal (`trimming`), their NAKs and NAK rewinds
/// never `real-loss` (docs/analysis.md, "RoCE: trimmed frames").
#[test]
fn trimmed_roce_frames_are_congestion_not_corruption_or_loss() {
    let dir = tempfile::tempdir().unwrap();
    let options: Vec<String> = ["--packets", "12000", "--set", "switch.trim_bytes=32768"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let (capture, truth) = synth(dir.path(), "incast", "trimmed.pcapng", &options);
    let a = analyze(&capture, &truth);
    // Not held to `compare`: trimmed headers jump the data queue, and the
    // rewind and hop counts do not follow them yet (docs/analysis.md,
    // "RoCE: trimmed frames").
    let n = |v: &Value, k: &str| v[k].as_u64().unwrap_or(0);
    let taps_sum = |k: &str| -> u64 {
        let taps = truth["taps"].as_array().unwrap();
        taps.iter().map(|t| n(t, k)).sum()
    };
    let trimmed_truth = taps_sum("trimmed");
    assert!(trimmed_truth > 1000, "the scenario trims: {trimmed_truth}");
    for tt in truth["taps"].as_array().unwrap() {
        let iface = a.iface(tt["iface"].as_str().unwrap());
        let st = a.summary["taps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["iface"] == iface)
            .unwrap();
        assert_eq!(n(st, "trimmed"), n(tt, "trimmed"), "{iface}: trimmed");
        assert_eq!(n(st, "icrc_failed"), n(tt, "icrc_bad"), "{iface}: ICRC");
    }
    // Per flow: `trimmed` and `icrc_errors` against the truth's.
    let f = &a.flows;
    let (iface, src, qp) = (f.strings("iface"), f.strings("src_ip"), f.ints("dest_qp"));
    let (trimmed, icrc) = (f.ints("trimmed"), f.ints("icrc_errors"));
    let mut seen = 0;
    for ft in truth["flows"].as_array().unwrap() {
        if ft["data_packets"] == 0 {
            continue;
        }
        let row = (0..f.rows())
            .find(|&i| {
                iface[i].as_deref() == Some(a.iface(ft["iface"].as_str().unwrap()))
                    && src[i].as_deref() == ft["src_ip"].as_str()
                    && qp[i] == Some(ft["dest_qp"].as_i64().unwrap() as i128)
            })
            .unwrap();
        let want = n(ft, "trimmed") as i128;
        assert_eq!(trimmed[row], Some(want), "{ft}");
        assert_eq!(icrc[row], Some(n(ft, "icrc_bad") as i128), "{ft}");
        seen += want;
    }
    assert_eq!(seen as u64, trimmed_truth);
    assert_eq!(a.summary["totals"]["trimmed"], trimmed_truth);
    // packets.parquet: a frame a switch cut has no ICRC to check
    // (`icrc_ok` null, docs/tables.md). Per tap, the BTH frames held
    // whole (`cap_len` = `frame_len`) whose ICRC is not true are the
    // model's trims recorded there (`trimmed` + `icrc_bad`: the scenario
    // corrupts nothing); every NAKed trim is null, and a false one can
    // only be a trim no NAK asked for (the wire rule did not see it cut:
    // one before its flow's first whole request at the tap).
    let p = Table::read(&capture.with_extension("out").join("packets.parquet"));
    let (p_iface, opcode, icrc_ok) = (p.strings("iface"), p.ints("opcode"), p.bools("icrc_ok"));
    let (frame_len, cap_len) = (p.ints("frame_len"), p.ints("cap_len"));
    for tt in truth["taps"].as_array().unwrap() {
        let iface = a.iface(tt["iface"].as_str().unwrap());
        let whole = (0..p.rows()).filter(|&i| {
            p_iface[i].as_deref() == Some(iface)
                && opcode[i].is_some()
                && cap_len[i] >= frame_len[i]
        });
        let (mut null, mut failed) = (0, 0);
        for i in whole {
            match icrc_ok[i] {
                None => null += 1,
                Some(false) => failed += 1,
                Some(true) => {}
            }
        }
        let (trims_naked, others) = (n(tt, "trimmed"), n(tt, "icrc_bad"));
        assert_eq!(
            null + failed,
            trims_naked + others,
            "{iface}: whole frames not ICRC-true"
        );
        assert!(
            null >= trims_naked && failed <= others,
            "{iface}: {null} null, {failed} false"
        );
    }
    // Said as congestion; corruption only for the trims no NAK asked for;
    // the trims' NAK rewinds are not loss.
    let t = finding(&a, "trimming");
    assert_eq!(t["params"]["trimmed"], trimmed_truth, "{t}");
    let rewinds = t["params"]["rewinds"].as_u64().unwrap();
    assert!(rewinds > 0, "{t}");
    let icrc_bad = taps_sum("icrc_bad");
    let corrupted: u64 = a.summary["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["id"] == "corrupted-frames")
        .map(|d| n(&d["params"], "icrc_failed"))
        .sum();
    assert_eq!(corrupted, icrc_bad);
    let nak_rewinds = n(&a.summary["totals"], "rewinds_nak");
    let loss = a.summary["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == "real-loss")
        .map_or(0, |d| n(&d["params"], "nak_rewinds"));
    assert_eq!(
        loss,
        nak_rewinds - rewinds,
        "real-loss counts no trim's rewind"
    );
}
