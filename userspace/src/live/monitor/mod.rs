//! Findings as they happen (`live --report-interval`, `--findings`):
//! every interval of wall time the analyzer's thread evaluates the findings
//! over what the interval and the still-open state show
//! ([`Analyzer::findings_now`]), and each finding that starts, continues or
//! ends becomes a JSON line and a row of the dataset's `findings` table.
//! docs/live.md, "Findings as they happen".
//!
//! # Decisions
//!
//! * **When a finding is active**: the PFC findings (`pfc-storm`,
//!   `pfc-pressure`) are computed over the interval's pauses only, so being
//!   found is being active. The others judge the flows as they stand
//!   (counts since each flow began), so a finding is active in an interval
//!   when it is found and its evidence differs from the interval before's
//!   (new retransmissions, more CE, …): one whose evidence stands still
//!   ends, and starts again when it moves.
//! * **Instances**: `pfc-storm` is tracked per port and priority (its
//!   `subject`, e.g. `eth1 priority 3`), each with the times of its own
//!   storms; `congested-queue` per switch queue (`switch 1 port 4 queue
//!   3`), with the times of its congested hops; every other finding once per id (the first of its rank order
//!   when it has several, e.g. `link-speed`), its times those of the
//!   intervals it was active in.
//! * **A stop** (`Watch::stopped`) evaluates one last interval, up to the
//!   last record, then ends every instance still active with
//!   [`EndReason::Stopped`]: a reader can tell the stream is closed and
//!   that the finding may well go on.
//! * **The file** is opened for appending and never truncated; SIGHUP
//!   closes and reopens it (log rotation). A write error is reported once
//!   on stderr and the run goes on.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::analyze::{self, Diagnosis, Evidence, Interim, Severity};
use crate::output::{Analysing, EndReason, FindingRow, FindingState, Stopped, Watch};
use crate::render::{fmt_utc, queue_name, word};

/// `--report-interval`'s default.
pub const DEFAULT_REPORT_INTERVAL: Duration = Duration::from_secs(10);

/// How early an interval may be evaluated: the watch comes after batches
/// and at the live loop's flush every second, not on a timer of its own.
const DUE_SLACK: Duration = Duration::from_millis(250);

/// The findings whose input is the interval's alone (see the module docs):
/// `congested-queue` is found in an interval when its queue had a
/// congested hop in it.
const WINDOWED: [&str; 3] = ["pfc-storm", "pfc-pressure", "congested-queue"];

/// `--findings`: where the JSON lines go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FindingsTo {
    Stdout,
    File(PathBuf),
}

impl FindingsTo {
    /// `-` is standard output.
    pub fn parse(s: &str) -> Self {
        if s == "-" {
            FindingsTo::Stdout
        } else {
            FindingsTo::File(PathBuf::from(s))
        }
    }
}

/// The findings active now, by id and severity: what the metrics and the
/// status line show. Shared between the analyzer's thread and the others.
/// Per id and severity: the instances active now ([`Tracker::active`]).
pub type Active = Arc<Mutex<Vec<(&'static str, Severity, u64)>>>;

/// A finding instance: its id and subject.
type Key = (&'static str, Option<String>);

/// A finding instance as this interval found it.
struct Found {
    key: Key,
    diagnosis: Diagnosis,
    /// When what made it began and ended, where the evidence says
    /// (`pfc-storm`: its storms in the interval).
    span: Option<(u64, u64)>,
}

/// An instance active in the interval before.
struct Open {
    first_seen_ns: u64,
    last_seen_ns: u64,
    severity: Severity,
    /// As worded when last active (an `end` row repeats it).
    words: analyze::Finding,
}

/// Which instances are active, interval after interval.
#[derive(Default)]
pub struct Tracker {
    open: BTreeMap<Key, Open>,
    /// Every instance's evidence as last found (active or not): a handful
    /// of ids, and `pfc-storm` per port and priority.
    last: BTreeMap<Key, Evidence>,
    /// Every id and severity active at some point.
    ever: std::collections::BTreeSet<(Severity, &'static str)>,
}

impl Tracker {
    /// The rows of the interval ending at `now_ns` that `interim` was
    /// evaluated over.
    pub fn update(&mut self, now_ns: u64, interim: &Interim) -> Vec<FindingRow> {
        let mut rows = Vec::new();
        let mut active = BTreeMap::new();
        for found in instances(interim) {
            let moved = self.last.get(&found.key) != Some(&found.diagnosis.evidence);
            self.last
                .insert(found.key.clone(), found.diagnosis.evidence.clone());
            if WINDOWED.contains(&found.key.0) || moved {
                active.insert(found.key.clone(), found);
            }
        }
        // Ended: open before, not active now.
        let ended: Vec<Key> = self
            .open
            .keys()
            .filter(|k| !active.contains_key(*k))
            .cloned()
            .collect();
        for key in ended {
            if let Some(o) = self.open.remove(&key) {
                rows.push(row(now_ns, key, FindingState::End(EndReason::Cleared), &o));
            }
        }
        for (key, found) in active {
            let (start, end) = found.span.unwrap_or((now_ns, now_ns));
            let words = word(&found.diagnosis, &interim.summary);
            let (state, o) = match self.open.remove(&key) {
                Some(o) => (
                    FindingState::Continue,
                    Open {
                        first_seen_ns: o.first_seen_ns.min(start),
                        last_seen_ns: o.last_seen_ns.max(end),
                        severity: found.diagnosis.severity,
                        words,
                    },
                ),
                None => (
                    FindingState::Start,
                    Open {
                        first_seen_ns: start,
                        last_seen_ns: end,
                        severity: found.diagnosis.severity,
                        words,
                    },
                ),
            };
            rows.push(row(now_ns, key.clone(), state, &o));
            self.ever.insert((o.severity, key.0));
            self.open.insert(key, o);
        }
        rows
    }

    /// The rows of the last interval, ending at `now_ns` when the run
    /// stops ([`Tracker::update`]), then an `end` ([`EndReason::Stopped`])
    /// for every instance still active, with the times it had.
    pub fn stop(&mut self, now_ns: u64, interim: &Interim) -> Vec<FindingRow> {
        let mut rows = self.update(now_ns, interim);
        for (key, o) in std::mem::take(&mut self.open) {
            rows.push(row(now_ns, key, FindingState::End(EndReason::Stopped), &o));
        }
        rows
    }

    /// Per id and severity ever active in the run: its instances active
    /// now (0 once they ended, so a series does not vanish).
    pub fn active(&self) -> Vec<(&'static str, Severity, u64)> {
        self.ever
            .iter()
            .map(|&(severity, id)| {
                let n = self
                    .open
                    .iter()
                    .filter(|(k, o)| k.0 == id && o.severity == severity)
                    .count();
                (id, severity, n as u64)
            })
            .collect()
    }
}

fn row(now_ns: u64, key: Key, state: FindingState, o: &Open) -> FindingRow {
    FindingRow {
        ts_ns: now_ns,
        id: key.0,
        severity: o.severity,
        state,
        subject: key.1,
        first_seen_ns: o.first_seen_ns,
        last_seen_ns: o.last_seen_ns,
        impact: o.words.impact,
        title: o.words.title.clone(),
        evidence: o.words.detail.clone(),
        params: o.words.params.clone(),
    }
}

/// The interval's findings as instances: `pfc-storm` split by port and
/// priority, every other id once.
fn instances(interim: &Interim) -> Vec<Found> {
    let mut out: Vec<Found> = Vec::new();
    for d in &interim.diagnoses {
        if let Evidence::Storms(s) = &d.evidence {
            for port in &s.ports {
                let storms = interim.pfc.iter().filter(|r| {
                    r.iface == port.iface
                        && r.priority == port.priority
                        && r.end_ns - r.start_ns > s.storm_ns
                });
                let span = storms.fold(None, |acc: Option<(u64, u64)>, r| {
                    Some(acc.map_or((r.start_ns, r.end_ns), |(a, b)| {
                        (a.min(r.start_ns), b.max(r.end_ns))
                    }))
                });
                let name = analyze::iface_name(&interim.summary.ifaces, port.iface);
                out.push(Found {
                    key: (
                        d.evidence.id(),
                        Some(format!("{name} priority {}", port.priority)),
                    ),
                    diagnosis: Diagnosis {
                        severity: d.severity,
                        impact: port.fraction.min(1.0),
                        flows: d.flows.clone(),
                        evidence: Evidence::Storms(analyze::findings::Storms {
                            storms: port.storms,
                            storm_ns: s.storm_ns,
                            longest_ns: port.longest.as_ref().map_or(0, |l| l.end_ns - l.start_ns),
                            ports: vec![port.clone()],
                        }),
                    },
                    span,
                });
            }
        } else if let Evidence::CongestedQueue(q) = &d.evidence {
            out.push(Found {
                key: (d.evidence.id(), Some(queue_name(&q.queue))),
                diagnosis: d.clone(),
                span: Some((q.first_ns, q.last_ns)),
            });
        } else if !out.iter().any(|f| f.key.0 == d.evidence.id()) {
            out.push(Found {
                key: (d.evidence.id(), None),
                diagnosis: d.clone(),
                span: None,
            });
        }
    }
    out
}

/// A finding row as one JSON line of `--findings` (docs/live.md).
pub fn json_line(r: &FindingRow) -> Value {
    json!({
        "ts": fmt_utc(r.ts_ns),
        "id": r.id,
        "severity": r.severity.as_str(),
        "state": r.state.as_str(),
        "reason": r.state.reason(),
        "subject": r.subject,
        "first_seen": fmt_utc(r.first_seen_ns),
        "last_seen": fmt_utc(r.last_seen_ns),
        "first_seen_ns": r.first_seen_ns,
        "last_seen_ns": r.last_seen_ns,
        "impact": r.impact,
        "title": r.title,
        "evidence": r.evidence,
        "params": r.params,
    })
}

/// The `--findings` destination, open for appending.
struct Log {
    to: FindingsTo,
    file: Option<BufWriter<File>>,
    failed: bool,
}

impl Log {
    fn open(to: FindingsTo) -> crate::Result<Self> {
        let mut log = Log {
            to,
            file: None,
            failed: false,
        };
        log.reopen()?;
        Ok(log)
    }

    fn reopen(&mut self) -> crate::Result<()> {
        if let Some(mut f) = self.file.take() {
            let _ = f.flush();
        }
        if let FindingsTo::File(path) = &self.to {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| crate::Error::WriteIo {
                    path: path.clone(),
                    detail: format!("cannot open the findings file: {e}"),
                    source: e,
                })?;
            self.file = Some(BufWriter::new(f));
        }
        Ok(())
    }

    fn write(&mut self, rows: &[FindingRow]) {
        let result = (|| -> std::io::Result<()> {
            let mut line = Vec::new();
            for r in rows {
                serde_json::to_writer(&mut line, &json_line(r))?;
                line.push(b'\n');
            }
            match &mut self.file {
                Some(f) => {
                    f.write_all(&line)?;
                    f.flush()
                }
                None => {
                    let mut out = std::io::stdout().lock();
                    out.write_all(&line)?;
                    out.flush()
                }
            }
        })();
        if let Err(e) = result
            && !self.failed
        {
            self.failed = true;
            eprintln!("rocescope: warning: cannot write the findings: {e}");
        }
    }
}

/// The [`Watch`] that evaluates the findings every interval.
pub struct Monitor {
    interval: Duration,
    due: Instant,
    /// The end of the last interval evaluated (ns since the epoch).
    last_ns: Option<u64>,
    tracker: Tracker,
    log: Option<Log>,
    active: Active,
    /// Rows made and not yet handed to the outputs.
    rows: Vec<FindingRow>,
}

impl Monitor {
    pub fn new(interval: Duration, to: Option<FindingsTo>, active: Active) -> crate::Result<Self> {
        Ok(Monitor {
            interval,
            due: Instant::now() + interval,
            last_ns: None,
            tracker: Tracker::default(),
            log: to.map(Log::open).transpose()?,
            active,
            rows: Vec::new(),
        })
    }
}

impl Monitor {
    /// The interval since the last one, to now: its rows (made by `rows`
    /// from the interval's start and end) written, kept for the outputs,
    /// and the active findings published.
    fn evaluate(&mut self, rows: impl FnOnce(u64, u64, &mut Tracker) -> Vec<FindingRow>) {
        let now_ns = wall_ns();
        let from_ns = self
            .last_ns
            .unwrap_or(now_ns.saturating_sub(self.interval.as_nanos() as u64));
        self.last_ns = Some(now_ns);
        let rows = rows(from_ns, now_ns, &mut self.tracker);
        if let Some(log) = &mut self.log
            && !rows.is_empty()
        {
            log.write(&rows);
        }
        *self.active.lock().unwrap_or_else(|e| e.into_inner()) = self.tracker.active();
        self.rows.extend(rows);
    }
}

/// Wall time now (the live tap's records carry wall time too).
fn wall_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

impl analyze::Sink for Monitor {
    fn event(&mut self, _: &analyze::Event) {}
    fn timeline(&mut self, _: &analyze::TimelineRow) {}
    fn flow(&mut self, _: &analyze::FlowRow) {}
}

impl Watch for Monitor {
    fn analysed(&mut self, analysis: &mut dyn Analysing, _records: usize) {
        // The watch is told at least once a second (the live loop's
        // flush): an interval is due a little early rather than a second late.
        let now = Instant::now();
        if now + DUE_SLACK < self.due {
            return;
        }
        self.due = (self.due + self.interval).max(now + DUE_SLACK);
        self.evaluate(|from_ns, now_ns, tracker| {
            analysis
                .findings_now(from_ns, now_ns)
                .map_or_else(|Stopped| Vec::new(), |i| tracker.update(now_ns, &i))
        });
    }

    fn stopped(&mut self, analysis: &mut dyn Analysing) {
        self.evaluate(|from_ns, now_ns, tracker| {
            analysis
                .findings_at_stop(from_ns, now_ns)
                .map_or_else(|Stopped| Vec::new(), |i| tracker.stop(now_ns, &i))
        });
    }

    fn take_findings(&mut self) -> Vec<FindingRow> {
        std::mem::take(&mut self.rows)
    }

    fn reopen(&mut self) {
        if let Some(log) = &mut self.log
            && let Err(e) = log.reopen()
        {
            eprintln!("rocescope: warning: {e}");
        }
    }
}

/// The status line's part: what is active now.
pub fn active_line(active: &Active) -> String {
    let a = active.lock().unwrap_or_else(|e| e.into_inner());
    let ids: Vec<String> = a
        .iter()
        .filter(|(_, _, n)| *n > 0)
        .map(|(id, s, _)| format!("{id} ({s})"))
        .collect();
    if ids.is_empty() {
        return String::new();
    }
    format!("; findings active: {}", ids.join(", "))
}

#[cfg(test)]
mod tests;
