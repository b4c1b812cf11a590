//! synth's switches with in-band telemetry (`synth --telemetry
//! int-md|ifa`, docs/synth-truth.md "telemetry"): telemetry.parquet's
//! hops equal the model's at every frame that carried them (the truth
//! comes from the model's log, never the capture; tshark counts the
//! frames), the RoCE inside still analyses as without telemetry, and the
//! rows take the frame's hardware time when the capture has one.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{Table, analyze_into as analyze, rocescope_ok, tshark};

/// The model's time 0 in synth's captures (2026-01-01T00:00:00Z).
const EPOCH_NS: u64 = 1_767_225_600_000_000_000;

/// `synth ghost-drop` for 400 µs with `options`: the capture and its truth.
fn synth(dir: &Path, name: &str, options: &[&str]) -> (PathBuf, Value) {
    let cap = dir.join(format!("{name}.pcapng"));
    let mut args = vec![
        "synth",
        "ghost-drop",
        "--duration",
        "400us",
        "--out",
        cap.to_str().unwrap(),
    ];
    args.extend_from_slice(options);
    rocescope_ok(&args);
    let truth = dir.join(format!("{name}.truth.json"));
    let truth = serde_json::from_str(&std::fs::read_to_string(truth).unwrap()).unwrap();
    (cap, truth)
}

/// A frame's hops: (switch id, ingress port, egress port, queue,
/// occupancy, hop latency), newest first.
type Hops = Vec<[u64; 6]>;

/// telemetry.parquet's hops per frame, keyed by (tap, model time, dest QP,
/// PSN); the occupancy from `occupancy` (INT-MD's queue occupancy, or the
/// IFA vendor word synth writes it in).
fn rows(out: &Path, occupancy: &str) -> BTreeMap<(String, u64, u64, u64), Hops> {
    let t = Table::read(&out.join("telemetry.parquet"));
    let iface = t.strings("iface");
    let ints = |c: &str| t.ints(c);
    let (ts, qp, psn, hop) = (ints("ts_ns"), ints("dest_qp"), ints("psn"), ints("hop"));
    let cols = [
        ints("switch_id"),
        ints("ingress_port"),
        ints("egress_port"),
        ints("queue_id"),
        ints(occupancy),
        ints("hop_latency"),
    ];
    let mut out: BTreeMap<_, Hops> = BTreeMap::new();
    for i in 0..t.rows() {
        let key = (
            iface[i].clone().unwrap(),
            ts[i].unwrap() as u64 - EPOCH_NS,
            qp[i].unwrap() as u64,
            psn[i].unwrap() as u64,
        );
        let hops = out.entry(key).or_default();
        assert_eq!(hop[i].unwrap() as usize, hops.len(), "hops in stack order");
        hops.push(cols.each_ref().map(|c| c[i].unwrap() as u64));
    }
    out
}

/// The truth's in-band frames in the same shape.
fn truth_hops(truth: &Value) -> BTreeMap<(String, u64, u64, u64), Hops> {
    truth["telemetry"]["inband"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let n = |v: &Value, k: &str| v[k].as_u64().unwrap();
            let key = (
                f["tap"].as_str().unwrap().to_string(),
                n(f, "ts_ns"),
                n(f, "dest_qp"),
                n(f, "psn"),
            );
            let hops = f["hops"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| {
                    [
                        "switch_id",
                        "ingress_port",
                        "egress_port",
                        "queue",
                        "occupancy",
                        "hop_latency_ns",
                    ]
                    .map(|k| n(h, k))
                })
                .collect();
            (key, hops)
        })
        .collect()
}

#[test]
fn inband_hops_equal_the_models_at_every_frame() {
    let dir = tempfile::tempdir().unwrap();
    // (mode, analyze options, the column synth's occupancy is read from,
    // the tshark filter that finds the frames)
    let modes = [
        (
            "int-md",
            &["--int-port", "32767"][..],
            "queue_occupancy",
            "udp.dstport == 32767",
        ),
        ("ifa", &[][..], "ifa_vendor_word5", "ip.proto == 131"),
    ];
    for (mode, options, occupancy, filter) in modes {
        let (cap, truth) = synth(dir.path(), mode, &["--telemetry", mode]);
        assert_eq!(truth["telemetry"]["mode"], mode);
        let want = truth_hops(&truth);
        let out = dir.path().join(format!("{mode}.out"));
        analyze(&cap, &out, options);
        let got = rows(&out, occupancy);
        assert!(want.len() > 500, "{mode}: {} frames", want.len());
        if tshark::available() {
            let carried = tshark::fields(&cap, &["-Y", filter], &["frame.number"]).len();
            assert_eq!(carried, want.len(), "{mode}: frames tshark finds");
        }
        assert_eq!(got.len(), want.len(), "{mode}");
        for (key, hops) in &want {
            assert_eq!(got.get(key), Some(hops), "{mode}: {key:?}");
        }
        // Two hops (leaf0, spine0) on the spine's link; queues that held
        // something and hops that took time among them.
        assert!(want.values().all(|h| h.len() == 2), "{mode}");
        assert!(want.values().any(|h| h[1][4] > 0 && h[1][5] > 0), "{mode}");
        // `congested-queue` names the queue the model filled most (leaf0's
        // port toward spine0, priority 3: the source's hop) — first with
        // INT-MD, whose occupancy it reads; IFA's is a vendor word, so its
        // queues rank by hop latency alone.
        let summary: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        let named: Vec<[Value; 3]> = summary["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["id"] == "congested-queue")
            .map(|f| ["switch_id", "egress_port", "queue_id"].map(|k| f["params"][k].clone()))
            .collect();
        let model = &truth["telemetry"]["congested_queue"];
        let fullest = ["switch_id", "egress_port", "queue"].map(|k| model[k].clone());
        let at = named.iter().position(|q| *q == fullest);
        assert!(at.is_some(), "{mode}: {named:?} vs {fullest:?}");
        if mode == "int-md" {
            assert_eq!(at, Some(0), "{mode}: {named:?}");
        }
    }
}

/// The RoCE inside INT-MD and IFA analyses as the same run without
/// telemetry: every flow counter but the frame bytes (the telemetry's own).
#[test]
fn roce_inside_inband_telemetry_analyses_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, _) = synth(dir.path(), "plain", &[]);
    analyze(&plain, &dir.path().join("plain.out"), &[]);
    let flows = |out: &Path| Table::read(&out.join("flows.parquet"));
    let base = flows(&dir.path().join("plain.out"));
    for (mode, options) in [("int-md", &["--int-port", "32767"][..]), ("ifa", &[][..])] {
        let (cap, _) = synth(dir.path(), mode, &["--telemetry", mode]);
        let out = dir.path().join(format!("{mode}.out"));
        analyze(&cap, &out, options);
        let t = flows(&out);
        assert_eq!(t.rows(), base.rows(), "{mode}");
        let mut bigger = 0;
        for c in base.column_names() {
            let same = match c.as_str() {
                "bytes" => {
                    let (a, b) = (base.ints(&c), t.ints(&c));
                    bigger += a.iter().zip(&b).filter(|(a, b)| b > a).count();
                    a.iter().zip(&b).all(|(a, b)| b >= a)
                }
                "gbps" => true,
                _ => column_text(&base, &c) == column_text(&t, &c),
            };
            assert!(same, "{mode}: flows.parquet column {c}");
        }
        assert!(bigger > 0, "{mode}: the flows crossing the spine carry it");
    }
}

/// A column's values as text (both tables hold their few rows in one batch).
fn column_text(t: &Table, name: &str) -> String {
    t.batches
        .iter()
        .map(|b| format!("{:?}", b.column_by_name(name)))
        .collect()
}

/// Telemetry rows take their frame's time in the file's clock: ERSPAN III
/// time in 100 µs ticks here, the time packets.parquet gives the frame.
#[test]
fn inband_rows_take_the_frames_hardware_time() {
    let dir = tempfile::tempdir().unwrap();
    let (cap, _) = synth(
        dir.path(),
        "mirrored",
        &[
            "--telemetry",
            "int-md",
            "--erspan",
            "iii",
            "--erspan-granularity",
            "100us",
        ],
    );
    let out = dir.path().join("out");
    analyze(&cap, &out, &["--int-port", "32767"]);
    let p = Table::read(&out.join("packets.parquet"));
    let packet_ts: BTreeMap<i128, i128> = p
        .ints("frame")
        .into_iter()
        .zip(p.ints("ts_ns"))
        .map(|(f, t)| (f.unwrap(), t.unwrap()))
        .collect();
    let t = Table::read(&out.join("telemetry.parquet"));
    assert!(t.rows() > 100);
    let mut ticks = 0;
    for (frame, ts) in t.ints("frame").into_iter().zip(t.ints("ts_ns")) {
        let (frame, ts) = (frame.unwrap(), ts.unwrap());
        assert_eq!(Some(&ts), packet_ts.get(&frame), "frame {frame}");
        ticks += usize::from(ts % 100_000 == 0);
    }
    assert_eq!(ticks, t.rows(), "every row on the switch's 100 µs ticks");
}
