//! `live --report-interval --findings`: findings that start and end while
//! the run goes on (docs/live.md, "Findings as they happen"). A PFC storm
//! is sent through a veth pair — pausing frames for priority 3 every 5 ms
//! for 3 s, then an XON — while `live` evaluates the findings every
//! second; the JSON lines must show `pfc-storm` start at the storm's first
//! frame and end at its XON before the run is stopped, and the dataset's
//! `findings` table must hold the same rows. SIGHUP then reopens the file
//! (moved away meanwhile) for a second storm's lines.
use crate::common::{Table, corpus};
use crate::live::{Veth, dataset_files, quiet, replay, usable, wait_for};

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rocescope::synth::frame::PfcFrame;
use serde_json::Value;

fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The storm's lines: (state, first_seen_ns, last_seen_ns, ts).
fn storm_lines(path: &Path) -> Vec<(String, u64, u64, String)> {
    lines(path)
        .iter()
        .filter(|l| l["id"] == "pfc-storm")
        .map(|l| {
            (
                l["state"].as_str().unwrap().to_string(),
                l["first_seen_ns"].as_u64().unwrap(),
                l["last_seen_ns"].as_u64().unwrap(),
                l["ts"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_pfc_storm_starts_and_ends_in_the_findings_while_live_runs() {
    if !usable() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // 600 pausing frames (65 535 quanta: 33.5 ms at 1 Gb/s, refreshed
    // every 5 ms: one continuous pause), then an XON that ends it.
    let cap = tmp.path().join("storm.pcap");
    let mut frames = vec![corpus::bytes(&PfcFrame::single(3, 0xFFFF)); 600];
    frames.push(corpus::bytes(&PfcFrame::single(3, 0)));
    corpus::write_pcap(&cap, &frames);
    let veth = Veth::new();
    quiet(&veth);
    let out = tmp.path().join("live");
    let dataset = tmp.path().join("dataset");
    let findings = tmp.path().join("findings.jsonl");
    let live = veth.live(
        &out,
        &[
            "--link-speed",
            "1G",
            "--report-interval",
            "1s",
            "--findings",
            findings.to_str().unwrap(),
            "--dataset",
            dataset.to_str().unwrap(),
        ],
    );
    std::thread::sleep(Duration::from_millis(1500));
    let sent_from = wall_ns();
    assert_eq!(replay(&veth, &cap, Some("200")), 601);
    let sent_to = wall_ns();
    // The storm ends in the interval after the XON, reported at the next.
    wait_for("the storm's end", Duration::from_secs(10), || {
        storm_lines(&findings).iter().any(|l| l.0 == "end")
    });
    let storm = storm_lines(&findings);
    let subject = format!("{} priority 3", veth.b);
    for l in lines(&findings).iter().filter(|l| l["id"] == "pfc-storm") {
        assert_eq!(l["subject"], subject.as_str(), "{l}");
        assert_eq!(l["severity"], "critical", "{l}");
        assert!(l["params"].is_object(), "{l}");
    }
    let states: Vec<&str> = storm.iter().map(|l| l.0.as_str()).collect();
    // Started once, went on for the 3 s, ended once.
    assert_eq!(states.first(), Some(&"start"), "{storm:?}");
    assert_eq!(states.last(), Some(&"end"), "{storm:?}");
    assert!(
        states[1..states.len() - 1].iter().all(|s| *s == "continue"),
        "{storm:?}"
    );
    assert!(states.len() >= 3, "the storm lasted 3 intervals: {storm:?}");
    // Its times are the frames': the first pausing frame after the replay
    // began, the XON when it ended (within the replay's start-up).
    let (_, first, _, _) = storm[0];
    let (_, end_first, last, _) = *storm.last().unwrap();
    assert!(
        first >= sent_from && first < sent_from + 500_000_000,
        "first seen {first}, sent from {sent_from}"
    );
    assert_eq!(end_first, first, "{storm:?}");
    assert!(
        last <= sent_to && last + 100_000_000 > sent_to,
        "last seen {last}, sent until {sent_to}"
    );
    assert!(
        (2_900_000_000..3_300_000_000).contains(&(last - first)),
        "the storm lasted {} ns",
        last - first
    );
    // SIGHUP reopens the file: moved away, it is created again for the
    // lines of a second, shorter storm (1 s), and the moved one keeps the
    // first storm's.
    let moved = tmp.path().join("findings.1.jsonl");
    std::fs::rename(&findings, &moved).unwrap();
    live.signal(libc::SIGHUP);
    std::thread::sleep(Duration::from_millis(1500));
    let short = tmp.path().join("short.pcap");
    let mut frames = vec![corpus::bytes(&PfcFrame::single(3, 0xFFFF)); 200];
    frames.push(corpus::bytes(&PfcFrame::single(3, 0)));
    corpus::write_pcap(&short, &frames);
    assert_eq!(replay(&veth, &short, Some("200")), 201);
    wait_for("the second storm's end", Duration::from_secs(10), || {
        storm_lines(&findings).iter().any(|l| l.0 == "end")
    });
    assert_eq!(storm_lines(&moved), storm);
    let second = storm_lines(&findings);
    assert_eq!(second.first().map(|l| l.0.as_str()), Some("start"));
    assert_eq!(second.last().map(|l| l.0.as_str()), Some("end"));
    let (_, f2, l2, _) = *second.last().unwrap();
    assert!(f2 > last, "the second storm is a new instance: {second:?}");
    assert!(
        (900_000_000..1_300_000_000).contains(&(l2 - f2)),
        "the second storm lasted {} ns",
        l2 - f2
    );
    live.signal(libc::SIGTERM);
    let (ok, stdout, stderr) = live.wait(Duration::from_secs(10));
    assert!(ok, "live failed: {stdout}\n{stderr}");

    // The dataset's findings table holds the same rows.
    let mut rows = Vec::new();
    for (file, _) in dataset_files(&dataset, "findings") {
        let t = Table::read(&file);
        let ids = t.strings("id");
        let states = t.strings("state");
        let first = t.ints("first_seen_ns");
        let last = t.ints("last_seen_ns");
        let subjects = t.strings("subject");
        for i in 0..t.rows() {
            if ids[i].as_deref() == Some("pfc-storm") {
                assert_eq!(subjects[i].as_deref(), Some(subject.as_str()));
                rows.push((
                    states[i].clone().unwrap(),
                    first[i].unwrap() as u64,
                    last[i].unwrap() as u64,
                ));
            }
        }
    }
    rows.sort_by_key(|r| (r.2, r.0 != "start", r.0 == "end"));
    let json: Vec<(String, u64, u64)> = storm_lines(&moved)
        .into_iter()
        .chain(storm_lines(&findings))
        .map(|(s, f, l, _)| (s, f, l))
        .collect();
    let mut sorted = json.clone();
    sorted.sort_by_key(|r| (r.2, r.0 != "start", r.0 == "end"));
    assert_eq!(rows, sorted);
    // Every line of the file is a row of the table.
    let all: usize = dataset_files(&dataset, "findings")
        .iter()
        .map(|f| f.1)
        .sum();
    assert_eq!(all, lines(&moved).len() + lines(&findings).len());
}
