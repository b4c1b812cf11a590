//! The PFC congestion tree as a user sees it (docs/analysis.md,
//! "Congestion tree"; docs/topology.md): the pfc-storm sample's root and
//! spread named with a topology file, drawn in the HTML report; a root that
//! pauses again and again is one finding with its episodes; a topology file
//! with a mistake is an error naming it. Onsets and delays are checked
//! against tshark's own reading of the PFC frames. A large fabric's
//! hop-queueing finding lists some hops and counts the rest.
use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{rocescope, rocescope_ok};
use serde_json::Value;

fn pcaps(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../pcaps")
        .join(name)
}

/// (time in ns since the epoch, source MAC) of every MAC Control frame
/// (PFC), as tshark reads them.
fn pfc_frames(cap: &Path) -> Vec<(u64, String)> {
    let out = Command::new("tshark")
        .args(["-r", cap.to_str().unwrap(), "-Y", "eth.type == 0x8808"])
        .args(["-T", "fields", "-e", "frame.time_epoch", "-e", "eth.src"])
        .output()
        .expect("tshark runs (scripts/setup.sh --test installs it)");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let (t, mac) = l.split_once('\t').unwrap();
            let (s, frac) = t.split_once('.').unwrap();
            let ns = s.parse::<u64>().unwrap() * 1_000_000_000 + frac.parse::<u64>().unwrap();
            (ns, mac.to_string())
        })
        .collect()
}

/// The first frame's time, as tshark reads it.
fn first_frame_ns(cap: &Path) -> u64 {
    let out = Command::new("tshark")
        .args(["-r", cap.to_str().unwrap(), "-c", "1"])
        .args(["-T", "fields", "-e", "frame.time_epoch"])
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let (s, frac) = t.split_once('.').unwrap();
    s.parse::<u64>().unwrap() * 1_000_000_000 + frac.parse::<u64>().unwrap()
}

/// `connections` RC connections over the ghost-drop fabric as the bench
/// capture has them (scripts/bench.sh: 3 senders, 2 receivers, ECN marking
/// early enough for CE and CNPs), `packets` frames over `duration`: the
/// capture's path in `dir`.
fn bench_fabric(dir: &Path, connections: u64, packets: u64, duration: &str) -> PathBuf {
    let flows: Vec<Value> = (0..connections)
        .map(|i| {
            serde_json::json!({
                "src": i % 3, "dst": i % 2, "msg_bytes": 65536, "messages": null,
                "start_ns": i * 500 % 1_000_000, "udp_sport": null,
                "start_psn": (i * 7919) % 16_777_216, "gbps": 3.0
            })
        })
        .collect();
    let flows_file = dir.join("flows.json");
    std::fs::write(&flows_file, Value::from(flows).to_string()).unwrap();
    let cap = dir.join("fabric.pcapng");
    rocescope_ok(&[
        "synth",
        "ghost-drop",
        "--out",
        cap.to_str().unwrap(),
        "--packets",
        &packets.to_string(),
        "--snaplen",
        "128",
        "--duration",
        duration,
        "--min-rto",
        "200us",
        "--ecn-min",
        "40KB",
        "--ecn-max",
        "300KB",
        "--ecn-pmax",
        "0.2",
        "--set",
        &format!("flows=@{}", flows_file.display()),
    ]);
    cap
}

/// r0 stops draining; its NIC's pause spreads to leaf0's port toward s1
/// (docs/synth.md). With the sample's topology file the report names r0
/// and the ports, and the delay is tshark's: from r0's first PFC frame to
/// leaf0's first one after it.
#[test]
fn the_storm_tree_names_r0_and_the_spread_to_s1_with_its_delay() {
    let cap = pcaps("pfc-storm.pcapng");
    let topology = pcaps("pfc-storm.topology.json");
    let frames = pfc_frames(&cap);
    let nic = "02:00:00:02:00:01";
    let leaf = "02:5a:00:04:01:01";
    let root_at = frames.iter().find(|(_, m)| m == nic).unwrap().0;
    let step_at = frames
        .iter()
        .find(|(t, m)| m == leaf && *t > root_at)
        .unwrap()
        .0;
    let delay_us = format!("{:.1} µs", (step_at - root_at) as f64 / 1e3);
    assert_eq!(delay_us, "52.5 µs");

    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let out = rocescope_ok(&[
        "report",
        cap.to_str().unwrap(),
        "--topology",
        topology.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "CRITICAL (pfc-congestion-tree, impact 99.97 %): Pauses on priority 3 spread from r0 [02:00:00:02:00:01] (an end host) to 1 more port\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "Root: r0 [02:00:00:02:00:01] (end host: it sends RoCE traffic too) seen on leaf1-r0-both [leaf1 Ethernet0], first pause at t+72.0 µs"
        ),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "Then leaf0 Ethernet4 [02:5a:00:04:01:01] (switch) on leaf0-s1-both [leaf0 Ethernet4] paused {delay_us} after r0 [02:00:00:02:00:01]."
        )),
        "{text}"
    );
    // The picture: one row per port, the arrow's label the delay.
    let page = std::fs::read_to_string(&html).unwrap();
    let at = page
        .find("<figure class=\"plot tree\">")
        .expect("a tree figure");
    let figure = &page[at..at + page[at..].find("</figure>").unwrap()];
    assert_eq!(figure.matches("<circle").count(), 2, "{figure}");
    assert!(figure.contains(&format!("+{delay_us}")), "{figure}");
    assert!(figure.contains("r0 [02:00:00:02:00:01] (host) on leaf1-r0-both [leaf1 Ethernet0]"));
    assert!(figure.contains(
        "leaf0 Ethernet4 [02:5a:00:04:01:01] (switch) on leaf0-s1-both [leaf0 Ethernet4]"
    ));

    // Without the file: MACs and tap names, the same tree.
    let out = rocescope_ok(&["report", cap.to_str().unwrap(), "--json"]);
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = s["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "pfc-congestion-tree")
        .unwrap();
    assert_eq!(f["params"]["root_src_mac"], nic);
    assert_eq!(f["params"]["root_device"], Value::Null);
    assert_eq!(f["params"]["episodes"], 1);
    let detail = f["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!(
            "Then {leaf} (switch) on leaf0-s1-both paused {delay_us} after {nic}."
        )),
        "{detail}"
    );
}

/// A receiver that fails to drain again and again: every tree that
/// spread from it is an episode of one finding. 128 connections over the
/// ghost-drop fabric (the bench capture's flows, 40 000 frames).
#[test]
fn a_root_that_pauses_again_and_again_is_one_finding() {
    let dir = tempfile::tempdir().unwrap();
    let cap = bench_fabric(dir.path(), 128, 40_000, "10s");
    let out = rocescope_ok(&["report", cap.to_str().unwrap(), "--json"]);
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    let spread: Vec<usize> = s["pfc_trees"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(_, t)| t["nodes"].as_array().unwrap().len() > 1)
        .map(|(i, _)| i)
        .collect();
    assert!(spread.len() > 1, "{}", s["pfc_trees"]);
    let findings: Vec<&Value> = s["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "pfc-congestion-tree")
        .collect();
    assert_eq!(findings.len(), 1);
    let f = findings[0];
    let p = &f["params"];
    assert_eq!(p["episodes"], spread.len());
    assert_eq!(p["trees"], serde_json::json!(spread));
    let root = p["root_src_mac"].as_str().unwrap();
    // r0's NIC (a host MAC: 02:00:…) sent the first pause of the capture.
    let frames = pfc_frames(&cap);
    assert_eq!(frames[0].1, root);
    let first = (frames[0].0 - first_frame_ns(&cap)) as f64 / 1e3;
    let title = f["title"].as_str().unwrap();
    assert!(
        title.ends_with(&format!(", {} times", spread.len())),
        "{title}"
    );
    let detail = f["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!(
            "seen on leaf1-r0-both, {} episodes from t+{first:.1} µs",
            spread.len()
        )),
        "{detail}"
    );
    // The root's paused time is the sum over its episodes.
    let paused: u64 = spread
        .iter()
        .map(|&i| s["pfc_trees"][i]["nodes"][0]["paused_ns"].as_u64().unwrap())
        .sum();
    assert_eq!(p["root_paused_ns"], paused);
}

/// A mistake in the topology file stops the run before reading, naming
/// the file and what is wrong.
#[test]
fn a_topology_file_with_a_mistake_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let cap = pcaps("pfc-storm.pcapng");
    for (text, says) in [
        (
            r#"{"macs": {"02:00:00:02:00": "r0"}}"#,
            "\"02:00:00:02:00\" is no MAC address",
        ),
        (r#"{"tap": {}}"#, "unknown field `tap`"),
        (
            r#"{"ecmp_groups": [["a", "a"]]}"#,
            "ecmp_groups[0]: a group is two or more distinct interface names",
        ),
    ] {
        let file = dir.path().join("t.json");
        std::fs::write(&file, text).unwrap();
        let r = rocescope(&[
            "report",
            cap.to_str().unwrap(),
            "--topology",
            file.to_str().unwrap(),
        ]);
        assert!(!r.status.success());
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(err.contains(&format!("{}: ", file.display())), "{err}");
        assert!(err.contains(says), "{err}");
    }
}

/// A topology file's ECMP groups are judged as `--ecmp-group`s are: the
/// same report, word for word.
#[test]
fn topology_ecmp_groups_are_ecmp_groups() {
    let dir = tempfile::tempdir().unwrap();
    let cap = pcaps("ecmp-collision.pcapng");
    let file = dir.path().join("t.json");
    std::fs::write(
        &file,
        r#"{"ecmp_groups": [["leaf0-spine0-tx", "leaf0-spine1-tx"]]}"#,
    )
    .unwrap();
    let report = |extra: &[&str]| {
        let mut args = vec!["report", cap.to_str().unwrap()];
        args.extend_from_slice(extra);
        String::from_utf8_lossy(&rocescope_ok(&args).stdout).into_owned()
    };
    let by_option = report(&["--ecmp-group", "leaf0-spine0-tx,leaf0-spine1-tx"]);
    assert!(by_option.contains("(ecmp-imbalance, impact"), "{by_option}");
    assert_eq!(report(&["--topology", file.to_str().unwrap()]), by_option);
}

/// A large fabric's hop-queueing finding (docs/analysis.md, "Where frames
/// vanished"): it names the worst hop, lists the first 8 other adjacent
/// hops with matched frames and counts the rest, which hops.parquet holds
/// (one line per flow of a 64-QP fabric would be a report line of pages).
#[test]
fn hop_queueing_on_a_large_fabric_lists_some_hops_and_counts_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let cap = bench_fabric(dir.path(), 32, 60_000, "1s");
    let out = dir.path().join("out");
    rocescope_ok(&[
        "analyze",
        cap.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let hops = common::Table::read(&out.join("hops.parquet"));
    let (adjacent, matched) = (hops.bools("adjacent"), hops.ints("matched"));
    let listed = (0..hops.rows())
        .filter(|&r| adjacent[r] == Some(true) && matched[r].unwrap_or(0) > 0)
        .count();
    assert!(
        listed > 9,
        "the fabric has {listed} adjacent hops: too few for the test"
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let finding = summary["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "hop-queueing")
        .expect("queueing behind the PFC pauses of ghost-drop");
    let detail = finding["detail"].as_str().unwrap();
    let others = detail.split_once("; the other hops: ").unwrap().1;
    assert_eq!(others.matches(" QP ").count(), 8, "{others}");
    assert!(
        others.ends_with(&format!("; and {} more (hops.parquet)", listed - 1 - 8)),
        "{others}"
    );
}
