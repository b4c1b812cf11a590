//! Telemetry joined to its flow as it arrives (docs/analysis.md,
//! "Telemetry and flows"): with a `--flow-idle` short enough that flows
//! retire and start again long before the end, every hop the model says
//! was carried by (INT-MD) or reported about (Telemetry Report) a
//! connection gets the flow of that connection live at its time. The
//! connection and the time come from synth's truth (its model's log),
//! never from our own tables; flows.parquet only maps them to flow ids.
use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::common::{Table, analyze_into as analyze, rocescope_ok};

/// The model's time 0 in synth's captures (2026-01-01T00:00:00Z).
const EPOCH_NS: u64 = 1_767_225_600_000_000_000;

/// A flows.parquet row: (iface, src, dst, dest QP) → (flow id, first, last).
type Flows = BTreeMap<(String, String, String, u64), Vec<(u64, u64, u64)>>;

fn flows(out: &Path) -> Flows {
    let t = Table::read(&out.join("flows.parquet"));
    let (iface, src, dst) = (t.strings("iface"), t.strings("src_ip"), t.strings("dst_ip"));
    let (id, qp, first, last) = (
        t.ints("flow_id"),
        t.ints("dest_qp"),
        t.ints("first_ts_ns"),
        t.ints("last_ts_ns"),
    );
    let mut out: Flows = BTreeMap::new();
    for i in 0..t.rows() {
        out.entry((
            iface[i].clone().unwrap(),
            src[i].clone().unwrap(),
            dst[i].clone().unwrap(),
            qp[i].unwrap() as u64,
        ))
        .or_default()
        .push((
            id[i].unwrap() as u64,
            first[i].unwrap() as u64,
            last[i].unwrap() as u64,
        ));
    }
    out
}

/// The truth's connections per tap: (tap, dest QP) → (src, dst).
fn truth_connections(truth: &Value) -> BTreeMap<(String, u64), (String, String)> {
    truth["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                (
                    f["iface"].as_str().unwrap().to_string(),
                    f["dest_qp"].as_u64().unwrap(),
                ),
                (
                    f["src_ip"].as_str().unwrap().to_string(),
                    f["dst_ip"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect()
}

fn summary(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

/// INT-MD in ghost-drop's data packets, flows retired after 20 µs idle:
/// each hop row has the flow of its own packet at its tap, the one whose
/// life covers the frame — retired ones included (the end-of-run join gave
/// those none, or a later flow's id).
#[test]
fn inband_hops_get_the_flow_live_at_their_frame_though_it_retired() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("g.pcapng");
    rocescope_ok(&[
        "synth",
        "ghost-drop",
        "--duration",
        "400us",
        "--telemetry",
        "int-md",
        "--out",
        cap.to_str().unwrap(),
    ]);
    let truth: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("g.truth.json")).unwrap())
            .unwrap();
    let out = dir.path().join("out");
    analyze(&cap, &out, &["--int-port", "32767", "--flow-idle", "20us"]);
    let retired = summary(&out)["retirement"]["retired_flows"]
        .as_u64()
        .unwrap();
    assert!(retired > 5, "{retired} flows retired before the end");
    let flows = flows(&out);
    let connections = truth_connections(&truth);
    // The truth's frames: (tap, model time, dest QP, PSN) → the connection.
    let mut frames = BTreeMap::new();
    for f in truth["telemetry"]["inband"].as_array().unwrap() {
        let tap = f["tap"].as_str().unwrap().to_string();
        let qp = f["dest_qp"].as_u64().unwrap();
        let key = (
            tap.clone(),
            f["ts_ns"].as_u64().unwrap(),
            qp,
            f["psn"].as_u64().unwrap(),
        );
        let (src, dst) = connections[&(tap.clone(), qp)].clone();
        frames.insert(key, (tap, src, dst, qp));
    }
    let t = Table::read(&out.join("telemetry.parquet"));
    let (iface, ts, qp, psn, flow_id) = (
        t.strings("iface"),
        t.ints("ts_ns"),
        t.ints("dest_qp"),
        t.ints("psn"),
        t.ints("flow_id"),
    );
    let mut checked = 0;
    let mut ids_per_connection: BTreeMap<_, std::collections::BTreeSet<u64>> = BTreeMap::new();
    for i in 0..t.rows() {
        let ts = ts[i].unwrap() as u64;
        let key = (
            iface[i].clone().unwrap(),
            ts - EPOCH_NS,
            qp[i].unwrap() as u64,
            psn[i].unwrap() as u64,
        );
        let conn = frames
            .get(&key)
            .unwrap_or_else(|| panic!("{key:?} in the truth"));
        let lives = &flows[conn];
        let want: Vec<u64> = lives
            .iter()
            .filter(|(_, first, last)| *first <= ts && ts <= *last)
            .map(|(id, _, _)| *id)
            .collect();
        assert_eq!(want.len(), 1, "{key:?}: one flow of {conn:?} covers it");
        assert_eq!(
            flow_id[i].map(|v| v as u64),
            Some(want[0]),
            "row {i} {key:?}"
        );
        ids_per_connection
            .entry(conn.clone())
            .or_default()
            .insert(want[0]);
        checked += 1;
    }
    assert_eq!(checked, t.rows());
    assert!(checked > 1000, "{checked} rows");
    assert!(
        ids_per_connection.values().any(|ids| ids.len() > 1),
        "some connection's hops span flows that retired: {ids_per_connection:?}"
    );
}

/// Telemetry reports (the pfc-storm sample's postcards) at a tap of their
/// own, flows retired after 5 µs idle: a report's flow is the live flow of
/// its packet's addresses and QP on any tap (a frame within --flow-idle
/// before it), the one that began first; none when no tap's flow of it is
/// live (not begun yet, or idle).
#[test]
fn reports_get_the_live_flow_of_their_packet_on_any_tap() {
    let dir = tempfile::tempdir().unwrap();
    let cap = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pcaps/pfc-storm-telemetry.pcapng");
    let truth: Value = serde_json::from_str(
        &std::fs::read_to_string(cap.with_file_name("pfc-storm-telemetry.truth.json")).unwrap(),
    )
    .unwrap();
    let idle: u64 = 5_000;
    let out = dir.path().join("out");
    let dataset = dir.path().join("ds");
    analyze(
        &cap,
        &out,
        &[
            "--telemetry-report-port",
            "32766",
            "--flow-idle",
            "5us",
            "--dataset",
            dataset.to_str().unwrap(),
        ],
    );
    assert!(
        summary(&out)["retirement"]["retired_flows"]
            .as_u64()
            .unwrap()
            > 0
    );
    let flows = flows(&out);
    // The truth's reports: (switch id, sequence) → the model's flow's
    // connection (src, dst, dest QP).
    let by_flow: BTreeMap<u64, (String, String, u64)> = truth["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["flow"].as_u64().unwrap(),
                (
                    f["src_ip"].as_str().unwrap().to_string(),
                    f["dst_ip"].as_str().unwrap().to_string(),
                    f["dest_qp"].as_u64().unwrap(),
                ),
            )
        })
        .collect();
    let reports: BTreeMap<(u64, u64), &(String, String, u64)> = truth["telemetry"]["reports"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| {
            let flow = by_flow.get(&r["flow"].as_u64()?)?;
            Some(((r["switch_id"].as_u64()?, r["sequence"].as_u64()?), flow))
        })
        .collect();
    let t = Table::read(&out.join("telemetry.parquet"));
    let (ts, switch, seq, hop, flow_id) = (
        t.ints("ts_ns"),
        t.ints("switch_id"),
        t.ints("sequence"),
        t.ints("hop"),
        t.ints("flow_id"),
    );
    let (mut checked, mut live, mut none) = (0, 0, 0);
    for i in 0..t.rows() {
        if hop[i] != Some(0) {
            continue;
        }
        let key = (switch[i].unwrap() as u64, seq[i].unwrap() as u64);
        let Some((src, dst, qp)) = reports.get(&key) else {
            continue;
        };
        let ts = ts[i].unwrap() as u64;
        // Every tap's flows of the connection: live at the report when it
        // had begun and had a frame within --flow-idle before it. A
        // report at the very nanosecond a flow begins or lapses is left
        // unchecked (which came first is the merge's choice).
        let lives: Vec<&(u64, u64, u64)> = flows
            .iter()
            .filter(|((_, s, d, q), _)| s == src && d == dst && q == qp)
            .flat_map(|(_, v)| v)
            .collect();
        if lives
            .iter()
            .any(|(_, first, last)| *first == ts || last + idle == ts)
        {
            continue;
        }
        let want = lives
            .iter()
            .filter(|(_, first, last)| *first <= ts && ts <= last + idle)
            .map(|(id, _, _)| *id)
            .min();
        assert_eq!(flow_id[i].map(|v| v as u64), want, "report {key:?}");
        checked += 1;
        if want.is_some() {
            live += 1;
        } else {
            none += 1;
        }
    }
    // The dataset's telemetry table got the same rows as they streamed.
    let mut parts = Vec::new();
    let mut dirs = vec![dataset.join("telemetry")];
    while let Some(d) = dirs.pop() {
        for p in crate::common::files_in(&d) {
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "parquet") {
                parts.push(p);
            }
        }
    }
    parts.sort();
    let streamed: Vec<(Option<i128>, Option<i128>)> = parts
        .iter()
        .flat_map(|p| {
            let d = Table::read(p);
            d.ints("frame").into_iter().zip(d.ints("flow_id"))
        })
        .collect();
    let written: Vec<_> = t.ints("frame").into_iter().zip(flow_id.clone()).collect();
    assert_eq!(streamed, written);
    assert!(
        checked > 100 && live > 50,
        "{checked} checked, {live} with a flow, {none} without"
    );
}
