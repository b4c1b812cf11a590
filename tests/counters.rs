//! End to end: `rocescope counters report` on the hand-written fixtures in
//! tests/data/counters (deltas worked out by hand from the files),
//! `counters collect` against a fake sysfs tree and a fake `ethtool`, and
//! the reconciliation of a capture with counters.
use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/counters")
        .join(name)
}

fn report_json(files: &[PathBuf]) -> Value {
    let mut args = vec!["counters", "report", "--json"];
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    args.extend(names.iter().map(String::as_str));
    let out = rocescope_ok(&args);
    serde_json::from_slice(&out.stdout).expect("the report is JSON")
}

/// `(id, severity)` of every finding, in order.
fn ids(report: &Value) -> Vec<(String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["id"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pair(id: &str, severity: &str) -> (String, String) {
    (id.to_string(), severity.to_string())
}

#[test]
fn ghost_drop_signature_with_its_deltas() {
    let r = report_json(&[data("ghost-drop.txt")]);
    assert_eq!(
        ids(&r),
        vec![
            pair("ghost-drop-signature", "critical"),
            pair("pfc-pressure", "warning")
        ]
    );
    let f = &r["findings"][0];
    // 12+9 timeouts, 30+21 and 4+3 adaptive retransmissions over 120 s;
    // 850000+640000 µs of pause on priority 3.
    assert_eq!(
        f["title"],
        "Ghost-drop signature on host node1, iface eth2, device mlx5_0/1: 79 timeouts/adaptive retransmissions while paused 1490000 µs, with no discards or CRC errors"
    );
    let detail = f["detail"].as_str().unwrap();
    for part in [
        "local_ack_timeout_err +21 (0.175/s)",
        "roce_adp_retrans +51 (0.425/s)",
        "roce_adp_retrans_to +7 (0.058/s)",
        "rx_prio3_pause_duration +1490000 (12417/s)",
        "could not send for 1.2 % of the 120.0 s",
        "in 2 of 2 intervals both rose",
        "rx_discards_phy +0",
        "rx_crc_errors_phy +0",
        "rx_symbol_err_phy +0",
    ] {
        assert!(detail.contains(part), "{part:?} not in {detail}");
    }
    // The worst interval held 850 ms of pause: 4.096 µs × 2^18 = 1.07 s is
    // the first timeout above it.
    let rec = f["recommendation"].as_str().unwrap();
    assert!(
        rec.contains("(850000 µs on priority 3)") && rec.contains("T ≥ 18"),
        "{rec}"
    );
    // 1490000 µs of 120 s = 1.24 %.
    assert_eq!(
        r["findings"][1]["title"],
        "Priority 3 of host node1, iface eth2, device mlx5_0/1 paused 1.24 % of the time"
    );
    let deltas = &r["endpoints"][0]["deltas"];
    assert_eq!(deltas["local_ack_timeout_err"]["delta"], 21);
    assert_eq!(deltas["local_ack_timeout_err"]["rate"], 0.175);
    assert_eq!(r["endpoints"][0]["snapshots"], 3);
    assert_eq!(r["endpoints"][0]["span_s"], 120.0);
}

#[test]
fn ghost_drop_text_report_prints_findings_as_the_capture_report_does() {
    let out = rocescope_ok(&[
        "counters",
        "report",
        data("ghost-drop.txt").to_str().unwrap(),
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("rocescope counters report\n"));
    assert!(text.contains(
        "host node1, iface eth2, device mlx5_0/1: 3 snapshots, 2026-11-30T07:00:00.000000Z .. 2026-11-30T07:02:00.000000Z (120.0 s), 105 counters"
    ));
    assert!(text.contains(
        "Findings\n\n  1. CRITICAL (ghost-drop-signature, impact 100.00 %): Ghost-drop signature on host node1"
    ));
    // The impact: both of the series' intervals show timeouts while paused.
    assert!(text.contains("in 2 of 2 intervals both rose"));
    assert!(text.contains("     → Packets were delayed behind PFC pauses, not lost"));
}

#[test]
fn discards_rule_out_the_ghost_drop_signature() {
    // The same series with 5 receive discards in the last minute.
    let text = std::fs::read_to_string(data("ghost-drop.txt")).unwrap();
    let at = text.rfind("     rx_discards_phy: 0").unwrap();
    let mut changed = text.clone();
    changed.replace_range(
        at..at + "     rx_discards_phy: 0".len(),
        "     rx_discards_phy: 5",
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ghost-with-discards.txt");
    std::fs::write(&path, changed).unwrap();
    let r = report_json(&[path]);
    assert_eq!(ids(&r), vec![pair("pfc-pressure", "warning")]);
}

#[test]
fn healthy_counters_make_no_finding() {
    let r = report_json(&[data("healthy.txt")]);
    assert_eq!(ids(&r), vec![]);
    assert_eq!(r["warnings"], Value::Array(vec![]));
}

#[test]
fn real_loss_names_sequence_errors_and_discards() {
    let r = report_json(&[data("real-loss.txt")]);
    assert_eq!(ids(&r), vec![pair("real-loss", "critical")]);
    assert_eq!(
        r["findings"][0]["title"],
        "Real loss on host node3, iface eth2, device mlx5_0/1: 55 sequence errors with 37 discards and 0 corrupted frames"
    );
    let detail = r["findings"][0]["detail"].as_str().unwrap();
    assert!(detail.contains("packet_seq_err +15 (0.250/s), out_of_sequence +40 (0.667/s)"));
    assert!(detail.contains("rx_discards_phy +37 (0.617/s)"));
    assert!(detail.contains("rx_prio3_discards +37"));
}

#[test]
fn pfc_storm_from_pause_duration_and_storm_events() {
    let r = report_json(&[data("pfc-storm.txt")]);
    // Storming priorities get no separate pfc-pressure finding.
    assert_eq!(ids(&r), vec![pair("pfc-storm", "critical")]);
    let f = &r["findings"][0];
    assert_eq!(
        f["title"],
        "PFC storm on host node4, iface eth2, device mlx5_0/1: priority 3 paused nearly all the time, 3 storm events"
    );
    let detail = f["detail"].as_str().unwrap();
    // 59.4 s and 60 s of pause in two 60 s minutes.
    assert!(detail.contains("priority 3 paused by the peer for ≥ 90 % of 2 of 2 intervals (at most 100.0 %), rx_prio3_pause_duration +119400000 (995000/s)"), "{detail}");
    assert!(detail.contains("tx_pause_storm_warning_events +2"));
    assert!(detail.contains("tx_pause_storm_error_events +1"));
}

#[test]
fn ecn_path_broken_between_two_hosts() {
    let r = report_json(&[data("ecn-np.txt"), data("ecn-rp.txt")]);
    assert_eq!(ids(&r), vec![pair("ecn-path-broken", "critical")]);
    assert_eq!(
        r["findings"][0]["title"],
        "host node2, iface eth3, device mlx5_1/1 sent 4800 CNPs and none was handled by the other endpoints"
    );
    // Alone, the notification point is fine: it answered CE with CNPs.
    assert_eq!(ids(&report_json(&[data("ecn-np.txt")])), vec![]);
    // A reaction point that received (and ignored) CNPs: they arrived.
    assert_eq!(
        ids(&report_json(&[data("ecn-np.txt"), data("cc-ignored.txt")])),
        vec![pair("cc-not-reacting", "warning")]
    );
}

#[test]
fn single_findings_quote_their_deltas() {
    for (file, id, severity, detail) in [
        (
            "ecn-np-silent.txt",
            "ecn-path-broken",
            "critical",
            "host node5, iface eth2, device mlx5_0/1: np_ecn_marked_roce_packets +3000 (50.0/s), np_cnp_sent +0",
        ),
        (
            "cc-ignored.txt",
            "cc-not-reacting",
            "warning",
            "host node6, iface eth2, device mlx5_0/1: rp_cnp_ignored +700 (11.7/s), rp_cnp_handled +0",
        ),
    ] {
        let r = report_json(&[data(file)]);
        assert_eq!(ids(&r), vec![pair(id, severity)], "{file}");
        assert_eq!(r["findings"][0]["detail"], detail, "{file}");
    }
}

#[test]
fn link_corruption_and_the_loss_it_causes() {
    let r = report_json(&[data("link-corruption.txt")]);
    assert_eq!(
        ids(&r),
        vec![
            pair("real-loss", "critical"),
            pair("link-corruption", "critical")
        ]
    );
    assert_eq!(
        r["findings"][1]["title"],
        "Link corruption on host node7, iface eth2, device mlx5_0/1: 28 frames damaged"
    );
    // 90000 corrected bits of 6e12 received.
    assert!(
        r["findings"][1]["detail"]
            .as_str()
            .unwrap()
            .contains("rx_corrected_bits_phy +90000 (1500/s); corrected bit rate 1.50e-8 of 6000000000000 bits received")
    );
}

#[test]
fn bad_lines_are_reported_with_file_and_line_and_the_rest_is_read() {
    let path = data("bad-lines.txt");
    let out = rocescope_ok(&["counters", "report", "--json", path.to_str().unwrap()]);
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let warnings: Vec<&str> = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    let lines: Vec<&str> = warnings
        .iter()
        .map(|w| {
            let rest = w.split_once("bad-lines.txt:").unwrap().1;
            rest.split_once(':').unwrap().0
        })
        .collect();
    assert_eq!(lines, vec!["2", "6", "7", "8", "9"]);
    assert!(warnings[0].contains("before any `# ts=` header"));
    assert!(warnings[1].contains("\"lots\" is not a number"));
    assert!(warnings[2].contains("`roce_adp_retrans` has no value after it"));
    assert!(warnings[4].contains("not an RFC 3339 time"));
    // The same warnings on stderr.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bad-lines.txt:6:"));
    // Two good snapshots: 100 → 160 pause frames, 1 → 4 timeouts.
    let deltas = &r["endpoints"][0]["deltas"];
    assert_eq!(r["endpoints"][0]["snapshots"], 2);
    assert_eq!(deltas["rx_prio3_pause"]["delta"], 60);
    assert_eq!(deltas["local_ack_timeout_err"]["delta"], 3);
}

#[test]
fn a_file_without_snapshots_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bare-ethtool.txt");
    std::fs::copy(data("ethtool-eth2-0.txt"), &path).unwrap();
    let out = rocescope(&["counters", "report", path.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bare-ethtool.txt: no counter snapshot in it"),
        "{stderr}"
    );
    assert!(stderr.contains("bare-ethtool.txt:1: counters before any `# ts=` header"));
    let missing = rocescope(&["counters", "report", "/nonexistent/counters.txt"]);
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/counters.txt: cannot open")
    );
}

/// A fake `ethtool`: prints ethtool-IF-N.txt on its Nth run (the last one
/// again after that).
fn fake_ethtool(dir: &Path) -> PathBuf {
    let script = dir.join("ethtool");
    let fixtures = data("");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nstate={state}\nn=$(cat \"$state\" 2>/dev/null || echo 0)\nf={fix}/ethtool-$2-$n.txt\n[ -f \"$f\" ] || f={fix}/ethtool-$2-2.txt\ncat \"$f\"\necho $((n+1)) > \"$state\"\n",
            state = dir.join("state").display(),
            fix = fixtures.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

/// `counters collect --iface eth2` on the fake sysfs tree, with `args`.
fn collect_fake(args: &[&str]) -> std::process::Output {
    let sysfs = data("sysfs");
    let mut all = vec![
        "counters",
        "collect",
        "--iface",
        "eth2",
        "--sysfs-root",
        sysfs.to_str().unwrap(),
    ];
    all.extend(args);
    rocescope_ok(&all)
}

fn collect(dir: &Path, out: &Path, count: &str) -> std::process::Output {
    let ethtool = fake_ethtool(dir);
    collect_fake(&[
        "--rdma-dev",
        "mlx5_0/1",
        "--interval",
        "20ms",
        "--count",
        count,
        "--host",
        "h1",
        "--ethtool-cmd",
        ethtool.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
}

/// The rows of one counter, in time order: (value, delta).
fn counter_rows(t: &Table, name: &str) -> Vec<(i128, Option<i128>)> {
    let counter = t.strings("counter");
    let (values, deltas, ts) = (t.ints("value"), t.ints("delta"), t.ints("ts_ns"));
    let mut rows: Vec<(i128, i128, Option<i128>)> = (0..t.rows())
        .filter(|&i| counter[i].as_deref() == Some(name))
        .map(|i| (ts[i].unwrap(), values[i].unwrap(), deltas[i]))
        .collect();
    rows.sort();
    rows.into_iter().map(|(_, v, d)| (v, d)).collect()
}

#[test]
fn collect_samples_a_fake_sysfs_tree_and_ethtool_then_appends() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("counters.parquet");
    let o = collect(dir.path(), &out, "3");
    // Per snapshot: 20 ethtool counters, 8 netdev files, 11 port counters
    // and 23 hw_counters (lifespan is not a counter).
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        format!(
            "{}: 3 snapshots, 186 rows (stopped by count)",
            out.display()
        )
    );
    let t = Table::read(&out);
    assert_eq!(t.rows(), 186);
    for col in [
        "ts_ns", "host", "iface", "device", "port", "counter", "priority", "value", "delta",
        "rate", "source",
    ] {
        assert!(t.column_names().iter().any(|c| c == col), "no {col}");
    }
    assert_eq!(
        counter_rows(&t, "rx_prio3_pause"),
        vec![(100, None), (150, Some(50)), (230, Some(80))]
    );
    assert_eq!(
        counter_rows(&t, "rx_prio3_pause_duration"),
        vec![(1000, None), (1600, Some(600)), (2900, Some(1300))]
    );
    // sysfs values do not move in the fake tree.
    assert_eq!(
        counter_rows(&t, "np_cnp_sent"),
        vec![(515, None), (515, Some(0)), (515, Some(0))]
    );
    assert_eq!(counter_rows(&t, "netdev_rx_packets")[0], (1000, None));
    let counter = t.strings("counter");
    let i = counter
        .iter()
        .position(|c| c.as_deref() == Some("rx_prio3_pause"))
        .unwrap();
    assert_eq!(t.ints("priority")[i], Some(3));
    assert_eq!(t.strings("host")[i].as_deref(), Some("h1"));
    assert_eq!(t.strings("iface")[i].as_deref(), Some("eth2"));
    assert_eq!(t.strings("device")[i].as_deref(), Some("mlx5_0"));
    assert_eq!(t.ints("port")[i], Some(1));
    assert_eq!(t.strings("source")[i].as_deref(), Some("ethtool"));
    let j = counter
        .iter()
        .position(|c| c.as_deref() == Some("local_ack_timeout_err"))
        .unwrap();
    assert_eq!(t.strings("source")[j].as_deref(), Some("sysfs"));
    assert_eq!(t.ints("priority")[j], None);

    // Again into the same file: appended (the rows there keep their
    // source), and the deltas go on from the file's last values (the fake
    // ethtool repeats its last output).
    let o = collect(dir.path(), &out, "2");
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .contains("2 snapshots, 124 rows appended to 186 already there")
    );
    let t = Table::read(&out);
    assert_eq!(t.rows(), 310);
    let mut sources: Vec<String> = t.strings("source").into_iter().flatten().collect();
    sources.sort();
    sources.dedup();
    assert_eq!(sources, vec!["ethtool", "netdev", "sysfs"]);
    assert_eq!(
        counter_rows(&t, "rx_prio3_pause"),
        vec![
            (100, None),
            (150, Some(50)),
            (230, Some(80)),
            (230, Some(0)),
            (230, Some(0))
        ]
    );

    // The collected file is a counters input like any other.
    let r = report_json(std::slice::from_ref(&out));
    assert_eq!(r["endpoints"][0]["snapshots"], 5);
    assert_eq!(r["endpoints"][0]["deltas"]["rx_prio3_pause"]["delta"], 130);
}

#[test]
fn collect_warns_about_a_missing_source_and_keeps_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.parquet");
    let o = collect_fake(&[
        "--rdma-dev",
        "mlx5_9",
        "--interval",
        "10ms",
        "--count",
        "2",
        "--no-ethtool",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    // Warned once, not once per snapshot.
    assert_eq!(
        stderr
            .matches("no counters/ or hw_counters/ directory")
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("class/infiniband/mlx5_9/ports/1"));
    assert_eq!(Table::read(&out).rows(), 16);
    let bad = rocescope(&[
        "counters",
        "collect",
        "--iface",
        "eth2",
        "--interval",
        "soon",
        "--out",
        "x.parquet",
    ]);
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("'soon'") && err.contains("--interval") && err.contains("a number and a unit"),
        "{err}"
    );
}

/// Two snapshots around the committed ghost-drop capture (its first and
/// last frame, to the nanosecond), with the counters' deltas as given.
fn around_ghost_drop_capture(dir: &Path, name: &str, deltas: &[(&str, u64)]) -> PathBuf {
    let mut text = String::from("# Around pcaps/ghost-drop.pcapng; counters named like its tap.\n");
    for (ts, end) in [
        ("2026-01-01T00:00:00.000000584Z", false),
        ("2026-01-01T00:00:00.000999886Z", true),
    ] {
        text.push_str(&format!(
            "# ts={ts} host=s2 iface=leaf0-s2-both\nNIC statistics:\n"
        ));
        for (counter, d) in deltas {
            text.push_str(&format!(
                "     {counter}: {}\n",
                1000 + if end { d } else { &0 }
            ));
        }
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn ghost_capture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../pcaps/ghost-drop.pcapng")
}

/// `(quantity, priority, verdict)` of every comparison.
fn verdicts(summary: &Value) -> Vec<(String, Option<u64>, String)> {
    summary["counters_reconciliation"]["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["quantity"].as_str().unwrap().to_string(),
                c["priority"].as_u64(),
                c["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn v(q: &str, p: Option<u64>, verdict: &str) -> (String, Option<u64>, String) {
    (q.to_string(), p, verdict.to_string())
}

fn report_with_counters(counters: &Path) -> Value {
    let out = rocescope_ok(&[
        "report",
        ghost_capture().to_str().unwrap(),
        "--counters",
        counters.to_str().unwrap(),
        "--json",
    ]);
    serde_json::from_slice(&out.stdout).unwrap()
}

// The capture (see `rocescope report pcaps/ghost-drop.pcapng`): on tap
// leaf0-s2-both, priority 3 has 8 PFC frames (2 XON) and 200.294 µs of
// pause; 4030 RoCE packets of DSCP 26 (priority 3) in two flows; 6
// timeout rewinds; no NAK, no CNP.
const AGREEING: [(&str, u64); 6] = [
    ("rx_prio3_pause", 6),
    ("rx_prio3_pause_duration", 200),
    ("tx_prio3_pause_duration", 0),
    ("rx_prio3_packets", 3584),
    ("tx_prio3_packets", 446),
    ("local_ack_timeout_err", 6),
];

/// Reconciles the ghost-drop capture with `deltas` and checks the verdicts
/// of its PFC frames, pause time and frames rows (timeouts: never judged).
fn reconciled(dir: &Path, deltas: &[(&str, u64)], expected: [&str; 3]) -> (PathBuf, Value) {
    let c = around_ghost_drop_capture(dir, "counters.txt", deltas);
    let s = report_with_counters(&c);
    assert_eq!(
        verdicts(&s),
        vec![
            v("pfc_frames", Some(3), expected[0]),
            v("pfc_paused_us", Some(3), expected[1]),
            v("frames", Some(3), expected[2]),
            v("timeout_rewinds", None, "not-judged"),
        ]
    );
    (c, s)
}

#[test]
fn capture_and_counters_that_agree() {
    let dir = tempfile::tempdir().unwrap();
    let (_, s) = reconciled(dir.path(), &AGREEING, ["agree", "agree", "agree"]);
    let rows = &s["counters_reconciliation"]["comparisons"];
    assert_eq!(rows[0]["capture"], 8.0);
    assert_eq!(rows[0]["capture_low"], 6.0);
    assert_eq!(rows[1]["capture"], 200.294);
    assert_eq!(rows[1]["coverage"], 1.0);
    let ids: Vec<&str> = s["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert!(!ids.contains(&"capture-incomplete") && !ids.contains(&"counters-mismatch"));
}

#[test]
fn counters_that_saw_more_make_the_capture_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let mut more = AGREEING;
    more[3] = ("rx_prio3_packets", 4000); // 4446 counted, 4030 captured
    more[5] = ("local_ack_timeout_err", 9); // tabled, never judged
    let (c, s) = reconciled(dir.path(), &more, ["agree", "agree", "capture-incomplete"]);
    let f = s["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "capture-incomplete")
        .expect("a capture-incomplete finding");
    assert_eq!(f["severity"], "warning");
    assert_eq!(
        f["title"],
        "The capture on leaf0-s2-both misses what host s2, iface leaf0-s2-both counted"
    );
    let detail = f["detail"].as_str().unwrap();
    assert!(
        detail.contains("frames priority 3: capture 4030, counters 4446 ("),
        "{detail}"
    );
    assert!(!detail.contains("timeout_rewinds"), "{detail}");

    // The text report prints the table after the findings.
    let out = rocescope_ok(&[
        "report",
        ghost_capture().to_str().unwrap(),
        "--counters",
        c.to_str().unwrap(),
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    // The impact: the share of the counted frames the capture lacks.
    assert_eq!(f["impact"], (4446.0 - 4030.0) / 4446.0);
    assert!(text.contains(
        "WARNING (capture-incomplete, impact 9.36 %): The capture on leaf0-s2-both misses"
    ));
    assert!(text.contains("Capture against counters:"));
}

#[test]
fn counters_that_saw_less_are_a_mismatch_and_summary_json_has_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let mut less = AGREEING;
    less[1] = ("rx_prio3_pause_duration", 100); // 200.294 µs captured
    let c = around_ghost_drop_capture(dir.path(), "less.txt", &less);
    let out = dir.path().join("out");
    rocescope_ok(&[
        "analyze",
        ghost_capture().to_str().unwrap(),
        "--counters",
        c.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        verdicts(&s)[1],
        v("pfc_paused_us", Some(3), "counters-mismatch")
    );
    let ids: Vec<(&str, &str)> = s["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["id"].as_str().unwrap(), f["severity"].as_str().unwrap()))
        .collect();
    assert!(ids.contains(&("counters-mismatch", "warning")), "{ids:?}");
    // Still in severity order after the counters' findings joined.
    let rank = |s: &str| ["critical", "warning", "info"].iter().position(|x| *x == s);
    assert!(
        ids.windows(2).all(|w| rank(w[0].1) <= rank(w[1].1)),
        "{ids:?}"
    );
    // The capture's own tables are all there.
    assert!(out.join("flows.parquet").exists());
}

#[test]
fn counters_that_do_not_surround_the_capture_are_noted_not_judged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("later.txt");
    std::fs::write(
        &path,
        "# ts=2026-01-01T01:00:00Z host=s2 iface=leaf0-s2-both\n     rx_prio3_pause: 1\n# ts=2026-01-01T01:01:00Z host=s2 iface=leaf0-s2-both\n     rx_prio3_pause: 9\n",
    )
    .unwrap();
    let s = report_with_counters(&path);
    assert_eq!(verdicts(&s), vec![]);
    let w = s["counters_reconciliation"]["warnings"][0]
        .as_str()
        .unwrap();
    assert!(w.contains("do not surround the capture"), "{w}");
}

/// `rocescope synth SCENARIO [ARGS]` with the counters its NICs would have shown.
fn synth_with_counters(dir: &Path, scenario: &str, args: &[&str]) -> (PathBuf, PathBuf) {
    let cap = dir.join(format!("{scenario}.pcapng"));
    let counters = dir.join(format!("{scenario}.counters.txt"));
    let mut all = vec![
        "synth",
        scenario,
        "--out",
        cap.to_str().unwrap(),
        "--counters",
        counters.to_str().unwrap(),
    ];
    all.extend(args);
    rocescope_ok(&all);
    (cap, counters)
}

fn endpoint<'a>(report: &'a Value, host: &str) -> &'a Value {
    report["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["host"] == host)
        .unwrap_or_else(|| panic!("no endpoint of host {host}"))
}

#[test]
fn synth_ghost_drop_counters_alone_name_the_ghost_drop_signature() {
    let dir = tempfile::tempdir().unwrap();
    let (cap, counters) = synth_with_counters(dir.path(), "ghost-drop", &[]);
    let r = report_json(&[counters]);
    // The three writers time out behind PFC pauses; nothing is lost.
    let ghosts: Vec<&Value> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "ghost-drop-signature")
        .collect();
    for host in ["s0", "s1", "s2"] {
        let f = ghosts
            .iter()
            .find(|f| {
                f["title"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("on host {host},"))
            })
            .unwrap_or_else(|| panic!("no ghost-drop signature for {host}: {r}"));
        let d = &endpoint(&r, host)["deltas"];
        let timeouts = d["local_ack_timeout_err"]["delta"].as_u64().unwrap();
        let paused = d["rx_prio3_pause_duration"]["delta"].as_u64().unwrap();
        assert!(timeouts > 0 && paused > 0);
        assert!(
            f["title"].as_str().unwrap().contains(&format!(
                ": {timeouts} timeouts/adaptive retransmissions while paused {paused} µs"
            )),
            "{}",
            f["title"]
        );
        assert_eq!(d["rx_discards_phy"]["delta"], 0);
        assert_eq!(d["rx_crc_errors_phy"]["delta"], 0);
    }
    let ids: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert!(
        !ids.contains(&"real-loss") && !ids.contains(&"link-corruption"),
        "{ids:?}"
    );

    // Independently of the counters: the capture of the tap on s2's link
    // saw the same pause time (to the µs the counter keeps).
    let out = rocescope_ok(&["report", cap.to_str().unwrap(), "--json"]);
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    let seen = s["pfc"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["iface"] == "leaf0-s2-both" && p["priority"] == 3)
        .expect("pauses on the tap of s2's link");
    let seen_us = seen["paused_ns"].as_u64().unwrap() as f64 / 1000.0;
    let d = &endpoint(&r, "s2")["deltas"];
    let counted = d["rx_prio3_pause_duration"]["delta"].as_u64().unwrap()
        + d["tx_prio3_pause_duration"]["delta"].as_u64().unwrap();
    assert!(
        (seen_us - counted as f64).abs() < 2.0,
        "{seen_us} vs {counted}"
    );
}

#[test]
fn synth_capture_and_counters_agree_and_a_lossy_tap_is_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let (cap, counters) = synth_with_counters(dir.path(), "ghost-drop", &[]);
    let reconcile = |cap: &Path, counters: &Path| -> Value {
        let out = rocescope_ok(&[
            "report",
            cap.to_str().unwrap(),
            "--counters",
            counters.to_str().unwrap(),
            "--json",
        ]);
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // Three taps mirror a NIC's link (s0, s2, r0): 4 comparisons each.
    let s = reconcile(&cap, &counters);
    let rows = verdicts(&s);
    assert_eq!(rows.len(), 12, "{rows:?}");
    assert!(
        rows.iter()
            .all(|(q, _, v)| v == "agree" || (q == "timeout_rewinds" && v == "not-judged")),
        "{rows:?}"
    );
    let warnings = &s["counters_reconciliation"]["warnings"];
    // s1 and r1 have no tap on their links.
    assert_eq!(warnings.as_array().unwrap().len(), 2, "{warnings}");

    // The same run with the mirror of s2's link (tap 0) dropping a fifth of
    // what it should copy: the NIC's counters are the same, the capture
    // of that link is incomplete — fewer frames, and pauses that look
    // longer for the XONs it lost — and only that link.
    let lossy = dir.path().join("lossy");
    std::fs::create_dir_all(&lossy).unwrap();
    let (cap2, counters2) =
        synth_with_counters(&lossy, "ghost-drop", &["--set", "taps.0.drop=0.2"]);
    assert_eq!(
        std::fs::read_to_string(&counters).unwrap(),
        std::fs::read_to_string(&counters2).unwrap(),
        "a mirror's drops change nothing the NICs count"
    );
    let s = reconcile(&cap2, &counters2);
    let judged: Vec<(String, String)> = s["counters_reconciliation"]["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"] != "agree" && c["verdict"] != "not-judged")
        .map(|c| {
            (
                format!(
                    "{} {}",
                    c["iface"].as_str().unwrap(),
                    c["quantity"].as_str().unwrap()
                ),
                c["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        judged,
        vec![
            (
                "leaf0-s2-both pfc_paused_us".to_string(),
                "capture-incomplete".to_string()
            ),
            (
                "leaf0-s2-both frames".to_string(),
                "capture-incomplete".to_string()
            ),
        ]
    );
    let titles: Vec<&str> = s["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "capture-incomplete" || f["id"] == "counters-mismatch")
        .map(|f| f["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        vec![
            "The capture on leaf0-s2-both misses what host s2, iface leaf0-s2-both, device mlx5_0/1 counted"
        ]
    );
}

#[test]
fn synth_ecn_broken_counters_show_marks_without_cnps() {
    let dir = tempfile::tempdir().unwrap();
    let (_, counters) = synth_with_counters(dir.path(), "ecn-broken", &[]);
    let r = report_json(&[counters]);
    let f = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "ecn-path-broken")
        .expect("ecn-path-broken");
    let d = &endpoint(&r, "r0")["deltas"];
    let marked = d["np_ecn_marked_roce_packets"]["delta"].as_u64().unwrap();
    assert!(marked > 0);
    assert_eq!(d["np_cnp_sent"]["delta"], 0);
    assert_eq!(
        f["title"],
        format!(
            "{marked} CE-marked RoCE packets reached host r0, iface leaf1-r0-both, device mlx5_0/1 and no CNP was sent back"
        )
    );
}

#[test]
fn synth_healthy_counters_make_no_finding() {
    let dir = tempfile::tempdir().unwrap();
    let (_, counters) = synth_with_counters(dir.path(), "healthy", &[]);
    assert_eq!(ids(&report_json(&[counters])), vec![]);
}

#[test]
fn collect_into_a_dataset_rotates_files() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("ds");
    collect_fake(&[
        "--rdma-dev",
        "mlx5_0",
        "--no-ethtool",
        "--dataset",
        ds.to_str().unwrap(),
        "--rotate",
        "50ms",
        "--interval",
        "40ms",
        "--count",
        "4",
        "--host",
        "h1",
    ]);
    // Snapshots at 0, 40, 80, 120 ms: the file started at 0 is closed at
    // 80 (it would span 80 ≥ 50 ms), the next holds 80 and 120. The layout
    // is the capture tables' (docs/tables.md, "Dataset layout"):
    // DIR/counters/host=H/date=…/hour=…/part-<run>-<start>.parquet.
    // The entries of `dir`, each named `prefix…`.
    let entries = |dir: &Path, prefix: &str| -> Vec<PathBuf> {
        let paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        for p in &paths {
            let name = p.file_name().unwrap().to_string_lossy();
            assert!(name.starts_with(prefix), "{} in {}", name, dir.display());
        }
        paths
    };
    let mut files: Vec<PathBuf> = Vec::new();
    for date in entries(&ds.join("counters").join("host=h1"), "date=") {
        for hour in entries(&date, "hour=") {
            files.extend(entries(&hour, "part-"));
        }
    }
    files.sort();
    // (A run across an hour boundary splits there too.)
    assert!(files.len() == 2 || files.len() == 3, "{files:?}");
    for f in &files {
        let name = f.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with("part-2") && name.ends_with("Z.parquet"),
            "{name}"
        );
        // The host is the directory's; every file names the run.
        let t = Table::read(f);
        assert!(!t.column_names().contains(&"host".to_string()), "{name}");
        assert_eq!(t.column_names().last().map(String::as_str), Some("run"));
    }
    assert!(
        !ds.join(".partial").exists()
            || std::fs::read_dir(ds.join(".partial"))
                .unwrap()
                .next()
                .is_none()
    );
    // 8 netdev + 34 RDMA port counters a snapshot.
    let rows: usize = files.iter().map(|f| Table::read(f).rows()).sum();
    assert_eq!(rows, 4 * 42);
    // Deltas go on across files: only the very first snapshot has none.
    let nulls: usize = files
        .iter()
        .map(|f| {
            Table::read(f)
                .ints("delta")
                .iter()
                .filter(|d| d.is_none())
                .count()
        })
        .sum();
    assert_eq!(nulls, 42);
}

#[test]
fn counters_pair_with_a_prefixed_interface_of_several_captures() {
    let dir = tempfile::tempdir().unwrap();
    let c = around_ghost_drop_capture(dir.path(), "agree.txt", &AGREEING);
    // Two files: interfaces become `STEM/NAME`; healthy.pcapng has no
    // leaf0-s2-both of its own, and its frames fall within the same span.
    let healthy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pcaps/healthy.pcapng");
    let out = rocescope_ok(&[
        "report",
        ghost_capture().to_str().unwrap(),
        healthy.to_str().unwrap(),
        "--counters",
        c.to_str().unwrap(),
        "--json",
    ]);
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = s["counters_reconciliation"]["comparisons"]
        .as_array()
        .unwrap();
    assert_eq!(rows.len(), 4);
    assert!(
        rows.iter()
            .all(|r| r["iface"] == "ghost-drop/leaf0-s2-both")
    );
    assert_eq!(
        verdicts(&s).iter().filter(|(_, _, v)| v == "agree").count(),
        3
    );
}

#[test]
fn the_html_report_draws_the_counters_and_their_reconciliation() {
    let dir = tempfile::tempdir().unwrap();
    let mut more = AGREEING;
    more[3] = ("rx_prio3_packets", 4000);
    let c = around_ghost_drop_capture(dir.path(), "more.txt", &more);
    let page = dir.path().join("report.html");
    rocescope_ok(&[
        "report",
        ghost_capture().to_str().unwrap(),
        "--counters",
        c.to_str().unwrap(),
        "--html",
        page.to_str().unwrap(),
    ]);
    let html = std::fs::read_to_string(&page).unwrap();
    // The reconciliation's finding among the capture's.
    let findings = &html[html.find("<h2>Findings</h2>").unwrap()..];
    assert!(findings.contains("<code>capture-incomplete</code>"));
    let at = html
        .find("<h2>NIC counters</h2>")
        .expect("a counters section");
    let section = &html[at..html[at..]
        .find("<h2>Flows</h2>")
        .map_or(html.len(), |e| at + e)];
    // Two plots: the pause share and the timeouts (local_ack_timeout_err
    // rose); no CNP counter is in the input.
    assert_eq!(section.matches("<svg").count(), 2, "{section}");
    assert!(section.contains("rx_prio3_pause_duration"));
    assert!(section.contains("<td>frames</td><td>3</td><td>4030</td><td>4446</td><td>100 %</td><td>capture-incomplete</td>"), "{section}");
    assert!(section.contains(
        "<td>pfc_paused_us</td><td>3</td><td>200.294</td><td>200</td><td>100 %</td><td>agree</td>"
    ));
}

#[test]
fn a_parquet_file_that_is_not_counters_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    rocescope_ok(&[
        "analyze",
        ghost_capture().to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let flows = out.join("flows.parquet");
    let r = rocescope(&["counters", "report", flows.to_str().unwrap()]);
    assert!(!r.status.success());
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(
        stderr.contains("flows.parquet: no `ts_ns` column; give a counters.parquet written by `rocescope counters collect`"),
        "{stderr}"
    );
}
