//! The tracker's rows over a storm, as the analyzer finds it interval by
//! interval (docs/live.md, "Findings as they happen").
use super::*;
use crate::analyze::tests::pfc3;
use crate::analyze::{Analyzer, Config};

const MS: u64 = 1_000_000;

struct Discard;
impl analyze::Sink for Discard {
    fn event(&mut self, _: &analyze::Event) {}
    fn timeline(&mut self, _: &analyze::TimelineRow) {}
    fn flow(&mut self, _: &analyze::FlowRow) {}
}

/// A storm evaluated while it runs, in the interval it ends in and in
/// the one after: start, continue, end, with the pause's own times;
/// `pfc-pressure` (the interval's paused share) alike.
#[test]
fn a_storm_starts_continues_and_ends_with_its_pause() {
    let mut an = Analyzer::new(Config {
        storm_ns: MS,
        ..Config::default()
    });
    let mut sink = Discard;
    // Priority 3 paused from 1 ms, refreshed every 200 µs (65 535
    // quanta: 335 µs at 100 Gb/s) until an XON at 12 ms.
    let mut t = MS;
    while t < 6 * MS {
        an.push(&pfc3(t, 0xFFFF), &mut sink);
        t += MS / 5;
    }
    let mut tracker = Tracker::default();
    let storm = |rows: &[FindingRow]| -> Vec<(FindingState, u64, u64)> {
        rows.iter()
            .filter(|r| r.id == "pfc-storm")
            .map(|r| {
                assert_eq!(r.subject.as_deref(), Some("if0 priority 3"));
                assert_eq!(r.severity, Severity::Critical);
                (r.state, r.first_seen_ns, r.last_seen_ns)
            })
            .collect()
    };
    // Running at 6 ms: counted up to then.
    let rows = tracker.update(6 * MS, &an.findings_now(0, 6 * MS));
    assert_eq!(storm(&rows), [(FindingState::Start, MS, 6 * MS)]);
    assert_eq!(
        tracker.active(),
        [
            ("pfc-pressure", Severity::Critical, 1),
            ("pfc-storm", Severity::Critical, 1)
        ]
    );
    while t < 12 * MS {
        an.push(&pfc3(t, 0xFFFF), &mut sink);
        t += MS / 5;
    }
    an.push(&pfc3(12 * MS, 0), &mut sink);
    // Ended by the XON within (6, 20] ms: still a storm of that interval.
    let rows = tracker.update(20 * MS, &an.findings_now(6 * MS, 20 * MS));
    assert_eq!(storm(&rows), [(FindingState::Continue, MS, 12 * MS)]);
    // Nothing paused in (20, 30] ms: both end, with their last times.
    let rows = tracker.update(30 * MS, &an.findings_now(20 * MS, 30 * MS));
    assert_eq!(
        storm(&rows),
        [(FindingState::End(EndReason::Cleared), MS, 12 * MS)]
    );
    let ended: Vec<_> = rows.iter().map(|r| (r.id, r.state)).collect();
    assert_eq!(
        ended,
        [
            ("pfc-pressure", FindingState::End(EndReason::Cleared)),
            ("pfc-storm", FindingState::End(EndReason::Cleared))
        ]
    );
    // Ids once active stay as series, at 0.
    assert_eq!(
        tracker.active(),
        [
            ("pfc-pressure", Severity::Critical, 0),
            ("pfc-storm", Severity::Critical, 0)
        ]
    );
    // And nothing more while nothing happens.
    assert!(
        tracker
            .update(40 * MS, &an.findings_now(30 * MS, 40 * MS))
            .is_empty()
    );
    // The JSON line carries the row's fields.
    let line = json_line(&FindingRow {
        state: FindingState::End(EndReason::Cleared),
        ..rows[1].clone()
    });
    assert_eq!(line["id"], "pfc-storm");
    assert_eq!(line["state"], "end");
    assert_eq!(line["reason"], "cleared");
    assert_eq!(line["first_seen_ns"], MS);
    assert_eq!(line["last_seen_ns"], 12 * MS);
    assert_eq!(line["first_seen"], "1970-01-01T00:00:00.001000Z");
    assert_eq!(line["params"]["storms"], 1);
}

/// An analyzer with `storm_ns` 1 ms and priority 3 paused by a frame every
/// 200 µs (65 535 quanta: 335 µs at 100 Gb/s) over `[from, to)`.
fn paused(an: &mut Analyzer, from: u64, to: u64) {
    let mut t = from;
    while t < to {
        an.push(&pfc3(t, 0xFFFF), &mut Discard);
        t += MS / 5;
    }
}

fn storm_config() -> Config {
    Config {
        storm_ns: MS,
        ..Config::default()
    }
}

/// Every row as (id, state, first seen, last seen, ts).
fn states(rows: &[FindingRow]) -> Vec<(&'static str, FindingState, u64, u64, u64)> {
    rows.iter()
        .map(|r| (r.id, r.state, r.first_seen_ns, r.last_seen_ns, r.ts_ns))
        .collect()
}

/// A storm still running when the run stops: the last interval (up to the
/// stop) continues it, then it ends with the reason `stopped`, its last
/// time the last pausing frame — where the end of the run closes the pause
/// in `pfc.parquet` — and not the stop nor the pause's timer; the active
/// counts go to 0.
#[test]
fn a_storm_running_when_the_run_stops_ends_at_its_last_frame() {
    let mut an = Analyzer::new(storm_config());
    paused(&mut an, MS, 5 * MS);
    let mut tracker = Tracker::default();
    let rows = tracker.update(5 * MS, &an.findings_now(0, 5 * MS));
    let start = FindingState::Start;
    assert_eq!(
        states(&rows),
        [
            ("pfc-pressure", start, 5 * MS, 5 * MS, 5 * MS),
            ("pfc-storm", start, MS, 5 * MS, 5 * MS)
        ]
    );
    // The last frame at 7.8 ms; its timer runs to 8.135 ms; the run stops at 9 ms.
    paused(&mut an, 5 * MS, 8 * MS);
    let last = 7_800_000;
    let rows = tracker.stop(9 * MS, &an.findings_at_stop(5 * MS, 9 * MS));
    let (cont, stopped) = (
        FindingState::Continue,
        FindingState::End(EndReason::Stopped),
    );
    assert_eq!(
        states(&rows),
        [
            ("pfc-pressure", cont, 5 * MS, 9 * MS, 9 * MS),
            ("pfc-storm", cont, MS, last, 9 * MS),
            ("pfc-pressure", stopped, 5 * MS, 9 * MS, 9 * MS),
            ("pfc-storm", stopped, MS, last, 9 * MS)
        ]
    );
    assert_eq!(
        tracker.active(),
        [
            ("pfc-pressure", Severity::Critical, 0),
            ("pfc-storm", Severity::Critical, 0)
        ]
    );
    // The pause as the end of the run writes it.
    let analysis = an.finish(&mut Discard);
    let p: Vec<_> = analysis
        .pfc
        .iter()
        .map(|r| (r.start_ns, r.end_ns))
        .collect();
    assert_eq!(p, [(MS, last)]);
    // The line says why it ended; the others have no reason.
    let line = json_line(&rows[3]);
    assert_eq!(line["state"], "end");
    assert_eq!(line["reason"], "stopped");
    assert_eq!(line["last_seen_ns"], last);
    assert_eq!(json_line(&rows[1])["reason"], Value::Null);
    // Nothing is left to end.
    assert!(tracker.stop(10 * MS, &an_empty()).is_empty());
}

fn an_empty() -> Interim {
    Analyzer::new(storm_config()).findings_now(0, 10 * MS)
}

/// A storm whose sender stops sending, no XON and no frame after: its
/// pause ran out (at the last frame's timer), so it ends in the interval
/// after that, cleared — not a storm in every later interval, nor one the
/// stop ends.
#[test]
fn a_storm_whose_pause_runs_out_is_cleared_not_stopped() {
    let mut an = Analyzer::new(storm_config());
    paused(&mut an, MS, 5 * MS);
    // 65 535 quanta of 512 bits at 100 Gb/s: 335 539.2 ns.
    let deadline = 4_800_000 + 335_539;
    let mut tracker = Tracker::default();
    tracker.update(4 * MS, &an.findings_now(0, 4 * MS));
    let rows = tracker.update(20 * MS, &an.findings_now(4 * MS, 20 * MS));
    let storm: Vec<_> = states(&rows)
        .into_iter()
        .filter(|r| r.0 == "pfc-storm")
        .collect();
    assert_eq!(
        storm,
        [("pfc-storm", FindingState::Continue, MS, deadline, 20 * MS)]
    );
    let rows = tracker.update(30 * MS, &an.findings_now(20 * MS, 30 * MS));
    let cleared = FindingState::End(EndReason::Cleared);
    assert_eq!(
        states(&rows),
        [
            ("pfc-pressure", cleared, 4 * MS, 20 * MS, 30 * MS),
            ("pfc-storm", cleared, MS, deadline, 30 * MS)
        ]
    );
    assert!(
        tracker
            .stop(40 * MS, &an.findings_at_stop(30 * MS, 40 * MS))
            .is_empty()
    );
}

/// The monitor's stop on records of wall time: the `--findings` file gets
/// the storm's `start` and its `end` with the reason `stopped`, the rows
/// go to the outputs, and the shared active counts (the metric, the status
/// line) are 0.
#[test]
fn the_monitor_ends_what_is_active_when_the_run_stops() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("findings.jsonl");
    let active = Active::default();
    let mut monitor = Monitor::new(
        Duration::from_secs(10),
        Some(FindingsTo::File(path.clone())),
        active.clone(),
    )
    .unwrap();
    let mut an = Analyzer::new(storm_config());
    let t0 = wall_ns() - 50 * MS;
    paused(&mut an, t0, t0 + 40 * MS);
    let last = t0 + 39_800_000;
    monitor.stopped(&mut an);
    let rows = monitor.take_findings();
    let storm: Vec<_> = rows
        .iter()
        .filter(|r| r.id == "pfc-storm")
        .map(|r| (r.state, r.first_seen_ns, r.last_seen_ns))
        .collect();
    assert_eq!(
        storm,
        [
            (FindingState::Start, t0, last),
            (FindingState::End(EndReason::Stopped), t0, last)
        ]
    );
    let lines: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), rows.len());
    let ends: Vec<_> = lines
        .iter()
        .filter(|l| l["state"] == "end")
        .map(|l| (l["id"].as_str().unwrap(), l["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(
        ends,
        [("pfc-pressure", "stopped"), ("pfc-storm", "stopped")]
    );
    assert!(active.lock().unwrap().iter().all(|&(_, _, n)| n == 0));
    assert_eq!(active.lock().unwrap().len(), 2);
    assert_eq!(active_line(&active), "");
}

/// A switch queue's telemetry while the run goes on: the interval its
/// congested hops arrive in starts `congested-queue` for that queue (its
/// `subject`), the next one with more continues it, the one without ends
/// it (`cleared`); a queue that only ever had quiet hops is never found.
/// The rows come through `Analyzer::telemetry` as the pipeline hands them
/// over, each joined to its flow as it arrives.
#[test]
fn a_congested_queue_starts_continues_and_ends_while_the_run_goes_on() {
    use crate::telemetry::TelemetryRow;
    use rocescope_common::wire::telemetry::Source;
    let mut an = Analyzer::new(Config::default());
    let mut sink = analyze::VecSink::default();
    let hop = |ts: u64, port: u32, latency: u32| TelemetryRow {
        ts_ns: ts,
        source: Some(Source::Report),
        switch_id: Some(5),
        egress_port: Some(port),
        queue_id: Some(3),
        queue_occupancy: Some(latency * 10),
        hop_latency: Some(latency),
        src_ip: Some([1; 16]),
        dst_ip: Some([2; 16]),
        dest_qp: Some(0x200),
        ..TelemetryRow::default()
    };
    let mut feed = |an: &mut Analyzer, from: u64, to: u64, port: u32, latency: u32| {
        let mut t = from;
        while t < to {
            an.telemetry(&mut hop(t, port, latency), &mut sink);
            t += MS / 10;
        }
    };
    let mut tracker = Tracker::default();
    let queue = |rows: &[FindingRow]| -> Vec<(Option<String>, FindingState, u64, u64)> {
        rows.iter()
            .filter(|r| r.id == "congested-queue")
            .map(|r| (r.subject.clone(), r.state, r.first_seen_ns, r.last_seen_ns))
            .collect()
    };
    let subject = Some("switch 5 port 4 queue 3".to_string());
    // (0, 10] ms: port 4 waits 20 µs per hop from 2 ms; port 1 stays quiet.
    feed(&mut an, MS, 10 * MS, 1, 100);
    feed(&mut an, 2 * MS, 5 * MS, 4, 20_000);
    let rows = tracker.update(10 * MS, &an.findings_now(0, 10 * MS));
    let last = 5 * MS - MS / 10;
    assert_eq!(
        queue(&rows),
        [(subject.clone(), FindingState::Start, 2 * MS, last)]
    );
    // (10, 20] ms: congested again at 15 ms.
    feed(&mut an, 15 * MS, 16 * MS, 4, 30_000);
    let rows = tracker.update(20 * MS, &an.findings_now(10 * MS, 20 * MS));
    let last = 16 * MS - MS / 10;
    assert_eq!(
        queue(&rows),
        [(subject.clone(), FindingState::Continue, 2 * MS, last)]
    );
    match &an.findings_now(10 * MS, 20 * MS).diagnoses[..] {
        [d] => match &d.evidence {
            Evidence::CongestedQueue(q) => {
                assert_eq!((q.peak_latency, q.congested_hops), (30_000, 40));
                assert_eq!(q.flows.len(), 1);
            }
            e => panic!("{e:?}"),
        },
        d => panic!("{d:?}"),
    }
    // (20, 30] ms: only quiet hops: ended, with the times it had.
    feed(&mut an, 21 * MS, 29 * MS, 4, 100);
    let rows = tracker.update(30 * MS, &an.findings_now(20 * MS, 30 * MS));
    assert_eq!(
        queue(&rows),
        [(subject, FindingState::End(EndReason::Cleared), 2 * MS, last)]
    );
    // Every row went to the sink as it came; none is held.
    assert_eq!(sink.telemetry.len(), 90 + 30 + 10 + 80);
}
