//! `live --analyzers 2` on a veth pair: a capture of many host pairs
//! replayed into the tap gives the flows `analyze` finds offline in it
//! (on the columns that do not depend on timing, as `live.rs` compares
//! one analyzer's), every record in `packets.parquet`, and the frame
//! counts; findings as they happen and the metrics over both analyzers
//! (one PFC storm instance, the frame counts summary.json gives); the
//! summary mode over two analyzers against one (what summary mode keeps
//! exact). Root and iproute2, as `live.rs`.
use crate::common;
use crate::live::{
    Veth, analyze_offline, flows, live_facts, live_run_with, quiet, replay, sequence_events,
    timeline_sums, usable, wait_for,
};
use crate::live_metrics::get;
use crate::sharded::summary;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use common::{Table, corpus, rocescope_ok};
use rocescope::synth::frame::PfcFrame;

#[test]
fn two_live_analyzers_give_the_offline_flows() {
    if !usable() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // The incast's first tap: eight senders to one receiver, no pause
    // there (pause times would follow the replay's pace, not the file's);
    // frames cut as a mirror port cuts them (the veth's MTU takes them).
    let cap = incast_tap(tmp.path());
    let offline = analyze_offline(&cap, tmp.path());
    let records = Table::read(&offline.join("packets.parquet")).rows();
    let want = flows(&offline);
    let pairs: std::collections::BTreeSet<_> = want
        .keys()
        .map(|(s, d, _)| if s <= d { (s, d) } else { (d, s) })
        .collect();
    assert!(pairs.len() >= 2, "{} address pairs", pairs.len());

    let veth = Veth::new();
    quiet(&veth);
    let out = tmp.path().join("live");
    let count = records.to_string();
    let live = veth.live(&out, &["--count", &count, "--analyzers", "2"]);
    replay(&veth, &cap, Some("20000"));
    let (ok, stdout, stderr) = live.wait(Duration::from_secs(60));
    assert!(ok, "live failed: {stdout}\n{stderr}");

    // `bytes` counts what reached the tap: the file's frame lengths
    // offline, the cut frames' live (the replay sends what the file kept).
    let uncut = |f: std::collections::BTreeMap<_, Vec<(String, String)>>| {
        f.into_iter()
            .map(|(k, cols)| {
                let cols: Vec<_> = cols.into_iter().filter(|(c, _)| c != "bytes").collect();
                (k, cols)
            })
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    assert_eq!(
        uncut(flows(&out)),
        uncut(want.clone()),
        "live with 2 analyzers (left) and offline (right) flows differ"
    );
    let facts = live_facts(&out);
    assert_eq!(facts["ring_full_drops"], 0, "{facts}");
    assert_eq!(facts["records"], records as u64, "{facts}");
    assert_eq!(
        Table::read(&out.join("packets.parquet")).rows(),
        records,
        "packets"
    );
    let (mut live, mut off) = (summary(&out), summary(&offline));
    // Frames cut short: the file's (offline); live sees whole short frames.
    for s in [&mut live, &mut off] {
        s["frames"].as_object_mut().unwrap().remove("cut");
    }
    assert_eq!(live["frames"], off["frames"], "frame counts");
    assert_eq!(
        live["totals"]["flows"], off["totals"]["flows"],
        "summary.json totals.flows"
    );
}

/// The incast's first tap, cut as a mirror port cuts it (several address
/// pairs: both analyzers hold flows).
fn incast_tap(dir: &Path) -> std::path::PathBuf {
    let cap = dir.join("incast.pcapng");
    rocescope_ok(&[
        "synth",
        "incast",
        "--out",
        cap.to_str().unwrap(),
        "--tap",
        "0",
        "--snaplen",
        "128",
    ]);
    cap
}

/// `rocescope_frames_total` by `kind` in an exposition text.
fn frames_by_kind(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter(|l| l.starts_with("rocescope_frames_total{"))
        .map(|l| {
            let kind = l
                .split("kind=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            let n = l.rsplit(' ').next().unwrap().parse().unwrap();
            (kind.to_string(), n)
        })
        .collect()
}

/// One unlabelled sample of `name` in an exposition text.
fn sample(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

/// `live --analyzers 2 --findings --metrics` (docs/live.md, "Sharded
/// analysis"): the incast's flows and then a 3 s PFC storm replayed into
/// the tap. The storm starts and ends once in the findings stream while the
/// run goes on — one instance, analyzer 0's, though both analyzers hold its
/// pause state — and `/metrics`, once every record is analysed, counts the
/// frames by kind, the CE marks, the retransmissions and the flows as
/// summary.json does at the end (the analyzers' counts added, the PFC
/// frames counted once).
#[test]
fn two_live_analyzers_stream_findings_and_metrics() {
    if !usable() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let cap = incast_tap(tmp.path());
    let storm = tmp.path().join("storm.pcap");
    let mut frames = vec![corpus::bytes(&PfcFrame::single(3, 0xFFFF)); 600];
    frames.push(corpus::bytes(&PfcFrame::single(3, 0)));
    corpus::write_pcap(&storm, &frames);

    let veth = Veth::new();
    quiet(&veth);
    let lo = std::process::Command::new("ip")
        .args(["-n", &veth.ns, "link", "set", "lo", "up"])
        .status()
        .unwrap();
    assert!(lo.success());
    let (out, findings) = (tmp.path().join("live"), tmp.path().join("findings.jsonl"));
    let metrics = "127.0.0.1:9465";
    let live = veth.live(
        &out,
        &[
            "--analyzers",
            "2",
            "--link-speed",
            "1G",
            "--report-interval",
            "1s",
            "--findings",
            findings.to_str().unwrap(),
            "--metrics",
            metrics,
        ],
    );
    std::thread::sleep(Duration::from_millis(1500));
    let sent = replay(&veth, &cap, Some("20000")) + replay(&veth, &storm, Some("200"));
    let storm_states = || -> Vec<String> {
        std::fs::read_to_string(&findings)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|l| l["id"] == "pfc-storm")
            .map(|l| l["state"].as_str().unwrap().to_string())
            .collect()
    };
    wait_for("the storm's end", Duration::from_secs(10), || {
        storm_states().iter().any(|s| s == "end")
    });
    let mut text = String::new();
    wait_for("every record in /metrics", Duration::from_secs(10), || {
        text = get(&veth.ns, metrics, "/metrics").map_or(String::new(), |(_, t)| t);
        frames_by_kind(&text).values().sum::<u64>() == sent
    });
    live.signal(libc::SIGTERM);
    let (ok, stdout, stderr) = live.wait(Duration::from_secs(20));
    assert!(ok, "live failed: {stdout}\n{stderr}");

    let states = storm_states();
    assert_eq!(
        states.first().map(String::as_str),
        Some("start"),
        "{states:?}"
    );
    assert_eq!(states.last().map(String::as_str), Some("end"), "{states:?}");
    assert_eq!(
        states.iter().filter(|s| *s == "start").count(),
        1,
        "one storm instance, not one per analyzer: {states:?}"
    );
    let s = summary(&out);
    let want: BTreeMap<String, u64> = frames_by_kind(&text)
        .keys()
        .map(|k| (k.clone(), s["frames"][k].as_u64().unwrap_or(0)))
        .collect();
    assert_eq!(frames_by_kind(&text), want, "/metrics (left), summary.json");
    assert!(want["pfc"] == 601 && want["roce"] > 0, "{want:?}");
    let totals = &s["totals"];
    for (metric, total) in [
        ("rocescope_ce_marks_total", "ce"),
        ("rocescope_retransmitted_packets_total", "retrans_packets"),
        (
            "rocescope_spurious_retransmissions_total",
            "spurious_retrans",
        ),
        ("rocescope_flows", "flows"),
    ] {
        assert_eq!(
            sample(&text, metric),
            totals[total].as_u64(),
            "{metric} against totals.{total}"
        );
    }
}

/// `live --mode summary --analyzers 2` against `live --mode summary` on
/// the same replayed frames (docs/live.md, "Sharded analysis"): the
/// incast's first tap with 0.3 % of frames lost before it (8 host pairs,
/// both analyzers holding flows; gaps, NAK rewinds, CE marks and CNPs
/// among the frames counted in the kernel). Which frames the kernel counts
/// depends on when each pairing reached it, so the runs are compared on
/// what summary mode keeps exact: the flows rows (every column that does
/// not depend on timing; not the id), the sequence events, the timeline's
/// sums per flow, the frame counts and totals, and the findings (id,
/// severity, the flows named by their keys).
#[test]
fn two_live_analyzers_in_summary_mode_give_what_one_gives() {
    if !usable() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let cap = tmp.path().join("incast-lossy.pcap");
    let impairments = tmp.path().join("impairments.json");
    std::fs::write(
        &impairments,
        r#"[{"node":"spine0","toward":"leaf1","loss":0.003,"corrupt":0}]"#,
    )
    .unwrap();
    rocescope_ok(&[
        "synth",
        "incast",
        "--out",
        cap.to_str().unwrap(),
        "--tap",
        "0",
        "--snaplen",
        "128",
        "--set",
        &format!("impairments=@{}", impairments.display()),
    ]);
    let (one, two) = (tmp.path().join("one"), tmp.path().join("two"));
    let f1 = live_run_with(&cap, "summary", &one, "20000", &[]);
    let f2 = live_run_with(&cap, "summary", &two, "20000", &["--analyzers", "2"]);
    eprintln!("summary mode, one analyzer: {f1}\ntwo analyzers: {f2}");
    let num = |f: &serde_json::Value, k: &str| f[k].as_u64().unwrap();
    for (f, dir) in [(&f1, &one), (&f2, &two)] {
        assert_eq!(num(f, "evicted_flows"), 0, "{f}");
        assert!(
            num(f, "summarized") > 0,
            "nothing counted in the kernel: {f}"
        );
        assert_eq!(
            Table::read(&dir.join("packets.parquet")).rows() as u64,
            num(f, "records"),
            "packets.parquet: the forwarded frames"
        );
    }
    assert_eq!(
        num(&f2, "records") + num(&f2, "summarized"),
        num(&f1, "records") + num(&f1, "summarized"),
        "frames of interest: 2 analyzers {f2}\n1 analyzer {f1}"
    );
    let want = flows(&one);
    assert_eq!(want.len(), 16, "{want:?}");
    assert_eq!(
        flows(&two),
        want,
        "summary mode: 2 analyzers (left) and 1 (right) flows differ"
    );
    let events = sequence_events(&one);
    let kinds: std::collections::BTreeSet<&str> = events.iter().map(|e| e.0.as_str()).collect();
    assert!(
        ["rewind", "gap", "nak", "cnp"]
            .iter()
            .all(|k| kinds.contains(k)),
        "{kinds:?}"
    );
    assert_eq!(
        sequence_events(&two),
        events,
        "events: 2 analyzers (left), 1"
    );
    assert_eq!(
        timeline_sums(&two),
        timeline_sums(&one),
        "timeline sums: 2 analyzers (left), 1"
    );
    let (s1, s2) = (summary(&one), summary(&two));
    for key in ["frames", "totals"] {
        assert_eq!(
            s2[key], s1[key],
            "summary.json {key}: 2 analyzers (left), 1"
        );
    }
    // NIC reaction latencies are approximate in summary mode (docs/live.md,
    // "Summary mode"): a CE → CNP time counts from the first CE of a delta,
    // and deltas are cut by time, so `slow-nic-reaction` may come and go
    // between two runs of the same frames.
    let exact = |mut f: BTreeMap<String, _>| {
        f.remove("slow-nic-reaction");
        f
    };
    assert_eq!(
        exact(findings(&two, &s2)),
        exact(findings(&one, &s1)),
        "findings: 2 analyzers (left), 1"
    );
    assert!(
        findings(&one, &s1).contains_key("real-loss"),
        "real-loss expected"
    );
    // Analyzer k of 2 numbers its flows k, k + 2, …: both took flows.
    let ids = Table::read(&two.join("flows.parquet")).ints("flow_id");
    let parities: std::collections::BTreeSet<i128> =
        ids.iter().flatten().map(|id| id % 2).collect();
    assert_eq!(parities.len(), 2, "flows on one analyzer only: {ids:?}");
}

/// A flow's key in `flows.parquet`: (src_ip, dst_ip, dest_qp).
type FlowName = (Option<String>, Option<String>, Option<i128>);

/// `summary.json`'s findings: per id, the highest severity and the flows
/// named, by key.
fn findings(
    dir: &Path,
    s: &serde_json::Value,
) -> BTreeMap<String, (String, std::collections::BTreeSet<FlowName>)> {
    let t = Table::read(&dir.join("flows.parquet"));
    let (id, src, dst, qp) = (
        t.ints("flow_id"),
        t.strings("src_ip"),
        t.strings("dst_ip"),
        t.ints("dest_qp"),
    );
    let names: BTreeMap<i128, FlowName> = (0..t.rows())
        .map(|i| (id[i].unwrap(), (src[i].clone(), dst[i].clone(), qp[i])))
        .collect();
    let mut out: BTreeMap<String, (String, std::collections::BTreeSet<FlowName>)> = BTreeMap::new();
    for f in s["findings"].as_array().unwrap() {
        let id = f["id"].as_str().unwrap();
        let e = out.entry(id.to_string()).or_default();
        let severity = f["severity"].as_str().unwrap().to_string();
        let rank = |s: &str| ["info", "warning", "critical"].iter().position(|x| *x == s);
        if rank(&severity) > rank(&e.0) {
            e.0 = severity;
        }
        for flow in f["flows"].as_array().unwrap() {
            e.1.insert(names[&i128::from(flow.as_i64().unwrap())].clone());
        }
    }
    out
}
