//! `live --report-interval --findings`: findings that start and end while
//! the run goes on (docs/live.md, "Findings as they happen"). A PFC storm
//! is sent through a veth pair — pausing frames for priority 3 every 5 ms
//! for 3 s, then an XON — while `live` evaluates the findings every
//! second; the JSON lines must show `pfc-storm` start at the storm's first
//! frame and end at its XON before the run is stopped, and the dataset's
//! `findings` table must hold the same rows. SIGHUP then reopens the file
//! (moved away meanwhile) for a second storm's lines. A storm still
//! running when `live` gets SIGTERM ends there: an `end` line and row with
//! `reason` `stopped`, its last time the last pausing frame.
use crate::common::{Table, corpus};
use crate::live::{Veth, dataset_files, quiet, replay, usable, wait_for};

use std::path::{Path, PathBuf};
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

/// A process killed on drop (a replay still sending when the test ends).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
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

/// `live` on a quiet veth pair at 1 Gb/s, evaluating the findings every
/// second into `findings` and the dataset.
struct Rig {
    live: crate::live::Running,
    veth: Veth,
    tmp: tempfile::TempDir,
    out: PathBuf,
    dataset: PathBuf,
    findings: PathBuf,
}

impl Rig {
    /// `None` when the live tests cannot run here.
    fn start() -> Option<Rig> {
        if !usable() {
            return None;
        }
        let tmp = tempfile::tempdir().unwrap();
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
        Some(Rig {
            live,
            veth,
            tmp,
            out,
            dataset,
            findings,
        })
    }
}

#[test]
fn a_pfc_storm_starts_and_ends_in_the_findings_while_live_runs() {
    // Bindings drop in reverse: the run, then the pair, then the files.
    let Some(Rig {
        tmp,
        dataset,
        findings,
        veth,
        live,
        ..
    }) = Rig::start()
    else {
        return;
    };
    // 600 pausing frames (65 535 quanta: 33.5 ms at 1 Gb/s, refreshed
    // every 5 ms: one continuous pause), then an XON that ends it.
    let cap = tmp.path().join("storm.pcap");
    let mut frames = vec![corpus::bytes(&PfcFrame::single(3, 0xFFFF)); 600];
    frames.push(corpus::bytes(&PfcFrame::single(3, 0)));
    corpus::write_pcap(&cap, &frames);
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

/// A storm still running when `live` is stopped (SIGTERM): the stop
/// evaluates one last interval and ends it — its last line `end` with
/// `reason` `stopped`, first seen where its `start` said, last seen at the
/// last pausing frame the tap took (where `pfc.parquet` closes the pause,
/// `capture_end`) — and every other instance likewise; the dataset's
/// `findings` rows say the same, `reason` included.
#[test]
fn a_storm_running_at_sigterm_ends_with_reason_stopped() {
    let Some(Rig {
        tmp,
        out,
        dataset,
        findings,
        veth,
        live,
    }) = Rig::start()
    else {
        return;
    };
    // 4 000 pausing frames at 200 a second (20 s): still sending at SIGTERM.
    let cap = tmp.path().join("storm.pcap");
    let frames = vec![corpus::bytes(&PfcFrame::single(3, 0xFFFF)); 4000];
    corpus::write_pcap(&cap, &frames);
    let replay = Killed(
        veth.rocescope(&[
            "replay",
            cap.to_str().unwrap(),
            "--iface",
            &veth.a,
            "--pps",
            "200",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap(),
    );
    wait_for("the storm to go on", Duration::from_secs(15), || {
        storm_lines(&findings).iter().any(|l| l.0 == "continue")
    });
    let before = lines(&findings).len();
    let stopped_at = wall_ns();
    live.signal(libc::SIGTERM);
    let (ok, stdout, stderr) = live.wait(Duration::from_secs(10));
    assert!(ok, "live failed: {stdout}\n{stderr}");
    drop(replay);

    let all = lines(&findings);
    let subject = format!("{} priority 3", veth.b);
    let storm: Vec<&Value> = all.iter().filter(|l| l["id"] == "pfc-storm").collect();
    let states: Vec<&str> = storm.iter().map(|l| l["state"].as_str().unwrap()).collect();
    // Started once, went on, ended once: by the stop.
    assert_eq!(states.first(), Some(&"start"), "{states:?}");
    assert_eq!(states.last(), Some(&"end"), "{states:?}");
    assert!(
        states[1..states.len() - 1].iter().all(|s| *s == "continue"),
        "{states:?}"
    );
    let end = storm.last().unwrap();
    assert_eq!(end["reason"], "stopped", "{end}");
    assert_eq!(end["subject"], subject.as_str(), "{end}");
    assert_eq!(end["severity"], "critical", "{end}");
    for l in &storm[..storm.len() - 1] {
        assert_eq!(l["reason"], Value::Null, "{l}");
    }
    // The pause as the end of the run wrote it: still running, closed at
    // the capture's end, the tap's last frame.
    let pfc = Table::read(&out.join("pfc.parquet"));
    assert_eq!(pfc.rows(), 1);
    assert_eq!(pfc.strings("ended_by")[0].as_deref(), Some("capture_end"));
    let (start_ns, end_ns) = (
        pfc.ints("start_ns")[0].unwrap() as u64,
        pfc.ints("end_ns")[0].unwrap() as u64,
    );
    let packets = Table::read(&out.join("packets.parquet"));
    let ts: Vec<u64> = packets
        .ints("ts_ns")
        .iter()
        .map(|t| t.unwrap() as u64)
        .collect();
    assert!(
        packets
            .strings("kind")
            .iter()
            .all(|k| k.as_deref() == Some("pfc"))
    );
    assert!(
        packets.rows() > 200 && packets.rows() < 4000,
        "{} frames before the stop",
        packets.rows()
    );
    assert_eq!(start_ns, ts[0]);
    assert_eq!(end_ns, *ts.iter().max().unwrap());
    assert_eq!(storm[0]["first_seen_ns"], start_ns);
    assert_eq!(end["first_seen_ns"], start_ns);
    // Its last time: the tap's last frame, or the end of an interval that
    // found the pause still running after that frame (docs/live.md,
    // "Instances": a running storm is seen to its interval's end).
    let last_seen = end["last_seen_ns"].as_u64().unwrap();
    assert!(
        last_seen == end_ns
            || (last_seen > end_ns && storm.iter().any(|l| l["ts"] == end["last_seen"])),
        "last seen {last_seen}: neither the last frame {end_ns} nor an interval's end"
    );
    // Written at the stop, after the SIGTERM and the last frame.
    let end_ts = end["ts"].as_str().unwrap();
    assert!(
        end_ns < stopped_at + 1_000_000_000,
        "last seen {end_ns}, SIGTERM at {stopped_at}"
    );
    let before_ts = all[before - 1]["ts"].as_str().unwrap();
    assert!(end_ts > before_ts, "{end_ts} after {before_ts}");
    // The last interval (to the stop) went on to the same last frame, and
    // its line has the stop's time.
    let last_interval = storm[storm.len() - 2];
    assert_eq!(last_interval["state"], "continue");
    assert_eq!(last_interval["ts"], end_ts);
    assert_eq!(last_interval["last_seen_ns"], end_ns);
    // Every instance ended, each once and last, by the stop (here
    // `pfc-pressure` too): nothing is left open to a reader.
    let mut last_state = std::collections::BTreeMap::new();
    for l in &all {
        let key = (l["id"].to_string(), l["subject"].to_string());
        last_state.insert(key, (l["state"].clone(), l["reason"].clone()));
    }
    assert!(last_state.len() >= 2, "{last_state:?}");
    for (key, state) in &last_state {
        assert_eq!(
            *state,
            (Value::from("end"), Value::from("stopped")),
            "{key:?}"
        );
    }
    let ends = all.iter().filter(|l| l["state"] == "end").count();
    assert_eq!(ends, last_state.len());

    // The dataset's findings table: the same rows, reason included.
    let mut rows = Vec::new();
    for (file, _) in dataset_files(&dataset, "findings") {
        let t = Table::read(&file);
        let (ids, states, reasons) = (t.strings("id"), t.strings("state"), t.strings("reason"));
        let (first, last) = (t.ints("first_seen_ns"), t.ints("last_seen_ns"));
        for i in 0..t.rows() {
            rows.push((
                ids[i].clone().unwrap(),
                states[i].clone().unwrap(),
                reasons[i].clone(),
                first[i].unwrap() as u64,
                last[i].unwrap() as u64,
            ));
        }
    }
    let mut json: Vec<_> = all
        .iter()
        .map(|l| {
            (
                l["id"].as_str().unwrap().to_string(),
                l["state"].as_str().unwrap().to_string(),
                l["reason"].as_str().map(str::to_string),
                l["first_seen_ns"].as_u64().unwrap(),
                l["last_seen_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    rows.sort();
    json.sort();
    assert_eq!(rows, json);
}
