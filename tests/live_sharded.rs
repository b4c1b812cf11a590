//! `live --analyzers 2` on a veth pair: a capture of many host pairs
//! replayed into the tap gives the flows `analyze` finds offline in it
//! (on the columns that do not depend on timing, as `live.rs` compares
//! one analyzer's), every record in `packets.parquet`, and the frame
//! counts; findings as they happen and the metrics over both analyzers
//! (one PFC storm instance, the frame counts summary.json gives); the
//! summary mode, not built over several analyzers, is refused before
//! anything is attached. Root and iproute2, as `live.rs`.
use crate::common;
use crate::live::{Veth, analyze_offline, flows, live_facts, quiet, replay, usable, wait_for};
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

#[test]
fn live_analyzers_refuse_the_summary_mode_before_attaching() {
    if !usable() {
        return;
    }
    let veth = Veth::new();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("live");
    let o = out.to_str().unwrap();
    let args = [
        "live",
        "--iface",
        &veth.b,
        "--out",
        o,
        "--analyzers",
        "3",
        "--mode",
        "summary",
    ];
    let r = veth.rocescope(&args).output().unwrap();
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(!r.status.success(), "--mode summary accepted");
    assert!(
        err.contains("--analyzers 3") && err.contains("--mode summary"),
        "{err}"
    );
    assert!(!out.exists(), "the output directory was made");
}
