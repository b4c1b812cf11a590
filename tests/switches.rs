//! What the model's switches said (`synth --telemetry`, docs/synth-truth.md
//! "telemetry"): `telemetry.parquet` holds, report by report, exactly the
//! occupancy, hop latency, switch, ports, queue, sequence, flags and packet
//! the model logged when its switches sent them; and `report` names the
//! queue the model congested and the flows that crossed it
//! (docs/analysis.md, "congested-queue").
use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

/// `synth SCENARIO --telemetry OPTIONS` into `dir`, then `analyze` with the
/// collector's port: the truth and the telemetry table.
fn telemetry_run(dir: &Path, scenario: &str, options: &[&str]) -> (Value, Table) {
    let (truth, out) = telemetry_analysis(dir, scenario, options);
    (truth, Table::read(&out.join("telemetry.parquet")))
}

/// [`telemetry_run`]'s truth and output directory.
fn telemetry_analysis(dir: &Path, scenario: &str, options: &[&str]) -> (Value, PathBuf) {
    let capture = dir.join(format!("{scenario}.pcapng"));
    let capture_s = capture.to_str().unwrap();
    let mut args = vec![
        "synth",
        scenario,
        "--out",
        capture_s,
        "--seed",
        "1",
        "--telemetry",
    ];
    args.extend(options);
    rocescope_ok(&args);
    let truth: Value =
        serde_json::from_slice(&std::fs::read(dir.join(format!("{scenario}.truth.json"))).unwrap())
            .unwrap();
    let out = dir.join(format!("{scenario}-out"));
    rocescope_ok(&[
        "analyze",
        capture_s,
        "--out",
        out.to_str().unwrap(),
        "--telemetry-report-port",
        "32766",
    ]);
    (truth, out)
}

/// Every report of the truth is one row, in order, field by field.
fn assert_rows_are_the_models(label: &str, truth: &Value, t: &Table) {
    let reports = truth["telemetry"]["reports"].as_array().unwrap();
    assert!(reports.len() > 100, "{label}: {} reports", reports.len());
    assert_eq!(t.rows(), reports.len(), "{label}: one row per report");
    let epoch = truth["capture"]["epoch_ns"].as_u64().unwrap() as i128;
    let int = |name: &str| t.ints(name);
    let cols = [
        ("switch_id", "switch_id"),
        ("sequence", "sequence"),
        ("ingress_port", "ingress_port"),
        ("egress_port", "egress_port"),
        ("queue_id", "queue"),
        ("queue_occupancy", "occupancy"),
        ("hop_latency", "hop_latency_ns"),
        ("dest_qp", "dest_qp"),
        ("psn", "psn"),
    ];
    let got: Vec<Vec<Option<i128>>> = cols.iter().map(|(c, _)| int(c)).collect();
    let (ts, hop) = (int("ts_ns"), int("hop"));
    let (dropped, congested) = (t.bools("dropped"), t.bools("congested_queue"));
    let reason = int("drop_reason");
    let source = t.strings("source");
    for (i, r) in reports.iter().enumerate() {
        for (k, (col, key)) in cols.iter().enumerate() {
            assert_eq!(
                got[k][i],
                Some(r[key].as_u64().unwrap() as i128),
                "{label}: report {i} {col}: {r}"
            );
        }
        assert_eq!(ts[i], Some(epoch + r["ts_ns"].as_u64().unwrap() as i128));
        assert_eq!(hop[i], Some(0));
        assert_eq!(source[i].as_deref(), Some("report"));
        assert_eq!(dropped[i], r["dropped"].as_bool(), "{label}: report {i}");
        assert_eq!(
            congested[i],
            r["congested"].as_bool(),
            "{label}: report {i}"
        );
        assert_eq!(
            reason[i],
            r["drop_reason"].as_u64().map(i128::from),
            "{label}: report {i}"
        );
    }
}

#[test]
fn pfc_storm_reports_are_the_models_queue_state() {
    let dir = tempfile::tempdir().unwrap();
    let (truth, t) = telemetry_run(dir.path(), "pfc-storm", &[]);
    assert_rows_are_the_models("pfc-storm", &truth, &t);
    // The model's own figures of this run: the queue it filled most.
    let q = &truth["telemetry"]["congested_queue"];
    assert_eq!(q["port"], "leaf0-spine0");
    assert_eq!(q["queue"], 3);
}

#[test]
fn ghost_drop_reports_are_the_models_queue_state() {
    let dir = tempfile::tempdir().unwrap();
    let (truth, t) = telemetry_run(dir.path(), "ghost-drop", &["--duration", "500us"]);
    assert_rows_are_the_models("ghost-drop", &truth, &t);
}

/// A switch that drops at its queue limit (PFC off) sends drop reports:
/// D flag, the queue and switch.p4's "traffic manager" reason, 71.
#[test]
fn drop_reports_carry_the_models_drops() {
    let dir = tempfile::tempdir().unwrap();
    let (truth, t) = telemetry_run(
        dir.path(),
        "incast",
        &[
            "--packets",
            "3000",
            "--set",
            "switch.pfc_enabled=false",
            "--set",
            "switch.queue_limit=120000",
        ],
    );
    assert_rows_are_the_models("incast", &truth, &t);
    let reports = truth["telemetry"]["reports"].as_array().unwrap();
    let drops: Vec<&Value> = reports.iter().filter(|r| r["dropped"] == true).collect();
    assert_eq!(
        drops.len() as u64,
        truth["fabric"]["switch_drops"].as_u64().unwrap(),
        "one drop report per switch discard of a request"
    );
    assert!(!drops.is_empty());
    assert!(drops.iter().all(|r| r["drop_reason"] == 71));
}

/// The `congested-queue` finding of the fullest queue is the queue the
/// model filled most (switch id, its port number, the priority), and its
/// flows are the model's flows through that queue, by addresses and QP.
/// `cited`: a PFC tree or ghost finding must cite it.
fn assert_names_the_models_queue(label: &str, truth: &Value, out: &Path, cited: bool) {
    let summary: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let queues: Vec<&Value> = summary["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "congested-queue")
        .collect();
    let fullest = queues
        .iter()
        .max_by_key(|f| f["params"]["peak_occupancy"].as_u64().unwrap())
        .unwrap_or_else(|| panic!("{label}: no congested-queue finding"));
    let want = &truth["telemetry"]["congested_queue"];
    let p = &fullest["params"];
    assert_eq!(p["switch_id"], want["switch_id"], "{label}: {fullest}");
    assert_eq!(p["egress_port"], want["egress_port"], "{label}: {fullest}");
    assert_eq!(p["queue_id"], want["queue"], "{label}: {fullest}");
    assert_eq!(p["flows_more"], 0);
    // The finding's flows, by their packets' addresses and QP.
    let mut got: Vec<(String, String, i128)> = p["queue_flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["src_ip"].as_str().unwrap().to_string(),
                f["dst_ip"].as_str().unwrap().to_string(),
                f["dest_qp"].as_i64().unwrap() as i128,
            )
        })
        .collect();
    got.sort();
    let connections = truth["connections"].as_array().unwrap();
    let mut want: Vec<(String, String, i128)> = want["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let c = connections.iter().find(|c| c["flow"] == *f).unwrap();
            (
                c["src_ip"].as_str().unwrap().to_string(),
                c["dst_ip"].as_str().unwrap().to_string(),
                c["responder_qpn"].as_u64().unwrap() as i128,
            )
        })
        .collect();
    want.sort();
    assert_eq!(got, want, "{label}: the flows behind the queue");
    // The PFC tree and the ghost timeouts cite it.
    let citing: Vec<&Value> = summary["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "pfc-congestion-tree" || f["id"] == "ghost-retransmissions")
        .collect();
    assert!(
        !cited || !citing.is_empty(),
        "{label}: a PFC tree or ghost finding"
    );
    for f in citing {
        let q = &f["params"]["telemetry_queue"];
        let want = &truth["telemetry"]["congested_queue"];
        assert_eq!(q["switch_id"], want["switch_id"], "{label}: {f}");
        assert_eq!(q["egress_port"], want["egress_port"], "{label}: {f}");
        assert_eq!(q["queue_id"], want["queue"], "{label}: {f}");
    }
}

#[test]
fn report_names_the_queue_the_model_congested() {
    let dir = tempfile::tempdir().unwrap();
    for (scenario, options) in [
        ("pfc-storm", &[][..]),
        ("ghost-drop", &["--duration", "500us"][..]),
    ] {
        let (truth, out) = telemetry_analysis(dir.path(), scenario, options);
        assert_names_the_models_queue(scenario, &truth, &out, true);
    }
}

/// `pcaps/pfc-storm-telemetry.pcapng` is what `scripts/make-samples.sh`
/// makes, and its report names the queue its truth says the model filled.
#[test]
fn the_telemetry_sample_regenerates_and_names_its_queue() {
    let dir = tempfile::tempdir().unwrap();
    let script = std::fs::read_to_string(repo().join("scripts/make-samples.sh")).unwrap();
    let line = script
        .split("\"$bin\" synth pfc-storm --out \"$outdir/pfc-storm-telemetry.pcapng\"")
        .nth(1)
        .and_then(|rest| rest.split("\ndu ").next())
        .expect("make-samples.sh makes pfc-storm-telemetry.pcapng");
    let options: Vec<&str> = line.split_whitespace().filter(|w| *w != "\\").collect();
    let capture = dir.path().join("pfc-storm-telemetry.pcapng");
    let mut args = vec!["synth", "pfc-storm", "--out", capture.to_str().unwrap()];
    args.extend(&options);
    rocescope_ok(&args);
    for file in [
        "pfc-storm-telemetry.pcapng",
        "pfc-storm-telemetry.truth.json",
    ] {
        let want = std::fs::read(repo().join("pcaps").join(file)).unwrap();
        let got = std::fs::read(dir.path().join(file)).unwrap();
        assert!(
            got == want,
            "{file}: run scripts/make-samples.sh and commit"
        );
    }
    let truth: Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("pfc-storm-telemetry.truth.json")).unwrap(),
    )
    .unwrap();
    let out = dir.path().join("out");
    rocescope_ok(&[
        "analyze",
        capture.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--telemetry-report-port",
        "32766",
    ]);
    // One tap: no tree spreads between taps, no finding to cite it.
    assert_names_the_models_queue("pfc-storm-telemetry", &truth, &out, false);
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}
