//! `live --metrics ADDR:PORT`: the tap's counters and the analysis so far
//! in the Prometheus text exposition format on `/metrics`, for a
//! Prometheus server to scrape while the run goes on. Every metric, its
//! labels and the table column it equals are in docs/live.md ("Metrics").
//!
//! # Decisions
//!
//! * **Snapshots, not a lock per frame**: the analyzer thread counts
//!   events in a [`Tally`] of its own (plain integers) and, after a batch
//!   of records (up to 4096) at most every [`PUBLISH_EVERY`] (100 ms), and
//!   at the live loop's flush once a second when records stop, copies its
//!   counts and the analyzer's running state
//!   ([`crate::analyze::Analyzer::running`]) into [`Metrics`] under a
//!   mutex held for that copy; the event loop does the same with the XDP
//!   program's counters once a second. A scrape copies both snapshots
//!   under the same short locks and encodes without them, so one scrape's
//!   values come from one moment each, and a slow scraper holds up only
//!   the HTTP thread ([`server`]): never the ring drains, whose threads
//!   touch no lock of these.
//! * **Exposition**: `prometheus-client` (the Prometheus org's Rust
//!   client) encodes the text format 0.0.4 through a collector that reads
//!   the snapshots at each scrape (the values are totals the analyzer
//!   keeps, not increments to add up).
//! * **Bounded labels**: no label per flow or QP. `iface` (the one
//!   `--iface`), `kind`, `trigger`, `class`, `priority` (0–7), `cpu`, and
//!   `src_mac` for the PFC senders: the first [`MAX_PFC_SENDERS`] MACs that
//!   pause get a series each, any later one is summed into
//!   `src_mac="other"`, so forged source MACs cannot grow the series.
//! * **Findings**: `rocescope_findings_active{id,severity}`, the instances
//!   of each finding active at the last report interval
//!   ([`super::monitor`]); a series per id and severity that was ever
//!   active in the run (0 once it ended), so at most one per finding id
//!   and severity.

pub mod server;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeCounterValue, EncodeGaugeValue, EncodeMetric,
};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

use crate::analyze::gaps::GapClass;
use crate::analyze::{self, Running};
use crate::output::{Analysing, Watch};

use super::Counters;

/// PFC senders (source MACs) with series of their own; later ones are
/// summed into `src_mac="other"`.
pub const MAX_PFC_SENDERS: usize = 256;

/// The values a scrape shows: written by the event loop and the analyzer
/// thread, read by the HTTP thread.
#[derive(Debug)]
pub struct Metrics {
    iface: String,
    tap: Mutex<TapSnapshot>,
    analysis: Mutex<AnalysisSnapshot>,
    /// The findings active now, as the monitor last evaluated them.
    findings: super::monitor::Active,
}

/// The XDP program's counters and the merge's, as the event loop last read them.
#[derive(Clone, Debug, Default)]
pub struct TapSnapshot {
    pub counters: Counters,
    /// Records the merge took after a later one had been analysed.
    pub late_records: u64,
    pub records_per_cpu: Vec<u64>,
}

/// The analysis so far, as the analyzer thread last published it.
#[derive(Clone, Debug, Default)]
struct AnalysisSnapshot {
    /// Records analysed (for the lag).
    records: u64,
    running: Running,
    events: Counts,
    rewinds: Counts,
    gap_psns: Counts,
    /// Per entry of `running.senders`: its `src_mac` label, an index into
    /// `names` ([`OTHER`]: `other`).
    sender_labels: Vec<u16>,
    /// The senders' labels, in order of first pause (formatted once).
    names: Arc<Vec<String>>,
}

/// The `src_mac` label of the senders past [`MAX_PFC_SENDERS`].
const OTHER: u16 = u16::MAX;

impl AnalysisSnapshot {
    /// `self` made equal to `o`, reusing its allocations (once a batch).
    fn copy_from(&mut self, o: &AnalysisSnapshot) {
        self.records = o.records;
        let (r, or) = (&mut self.running, &o.running);
        r.frames.clone_from(&or.frames);
        r.totals = or.totals;
        r.flows = or.flows;
        r.priorities.clone_from(&or.priorities);
        r.senders.clone_from(&or.senders);
        self.events.0.clone_from(&o.events.0);
        self.rewinds.0.clone_from(&o.rewinds.0);
        self.gap_psns.0.clone_from(&o.gap_psns.0);
        self.sender_labels.clone_from(&o.sender_labels);
        self.names.clone_from(&o.names);
    }
}

/// Counts by a name the analyzer gives (an event kind, a rewind trigger),
/// in order of first appearance: a handful of names, so a list.
#[derive(Clone, Debug, Default)]
struct Counts(Vec<(&'static str, u64)>);

impl Counts {
    fn add(&mut self, name: &'static str, n: u64) {
        match self.0.iter_mut().find(|(k, _)| *k == name) {
            Some((_, v)) => *v += n,
            None => self.0.push((name, n)),
        }
    }
}

impl Metrics {
    pub fn new(iface: &str) -> Arc<Metrics> {
        Arc::new(Metrics {
            iface: iface.to_string(),
            tap: Mutex::default(),
            analysis: Mutex::default(),
            findings: super::monitor::Active::default(),
        })
    }

    /// Where the monitor publishes the active findings.
    pub fn findings(&self) -> super::monitor::Active {
        self.findings.clone()
    }

    /// The tap's counters now (the event loop, once a second).
    pub fn publish_tap(&self, snapshot: TapSnapshot) {
        *lock(&self.tap) = snapshot;
    }

    /// What the analyzer thread counts and publishes.
    pub fn tally(self: &Arc<Self>) -> Box<dyn Watch> {
        // Every known name from the start, at 0: a series that appears
        // only with its first event hides that event from `increase()`.
        let zeros = |names: &[&'static str]| Counts(names.iter().map(|&n| (n, 0)).collect());
        let classes: Vec<&'static str> = GAP_CLASSES.iter().map(|c| c.as_str()).collect();
        Box::new(Tally {
            metrics: self.clone(),
            own: AnalysisSnapshot {
                events: zeros(&EVENT_KINDS),
                rewinds: zeros(&TRIGGERS),
                gap_psns: zeros(&classes),
                ..AnalysisSnapshot::default()
            },
            index: HashMap::new(),
            published: None,
        })
    }

    /// The text exposition of every metric, for one scrape.
    pub fn render(self: &Arc<Self>) -> String {
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(self.clone()));
        let mut text = String::new();
        // Writing to a String cannot fail, nor can the collector.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut text, &registry);
        text
    }
}

/// A poisoned lock (a panicking publisher) still holds a whole snapshot.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The analyzer thread's counts ([`Watch`]): events as they come,
/// published with the analyzer's running state after each batch.
struct Tally {
    metrics: Arc<Metrics>,
    own: AnalysisSnapshot,
    /// The MACs with series of their own: their index in `own.names`.
    index: HashMap<[u8; 6], u16>,
    /// When the last snapshot went out ([`PUBLISH_EVERY`]).
    published: Option<Instant>,
}

/// The most often the analyzer thread publishes; once records stop, the
/// next flush (the live loop's, every second, empty or not) publishes what
/// was held back. A snapshot costs a walk over the PFC senders: up to
/// 2 048 series, too much to pay on every batch of a full-rate tap.
const PUBLISH_EVERY: Duration = Duration::from_millis(100);

/// The kinds of `events.parquet` rows (docs/tables.md), and the triggers
/// of its rewinds: a kind the analyzer adds later gets its series when it
/// first comes.
pub const EVENT_KINDS: [&str; 12] = [
    "rewind",
    "gap",
    "late",
    "lost_before_tap",
    "nak_lost",
    "capture_lost",
    "unresolved",
    "nak",
    "rnr_nak",
    "cnp",
    "pfc_pause",
    "pfc_storm",
];
pub const TRIGGERS: [&str; 3] = ["nak", "rnr", "timeout"];

const GAP_CLASSES: [GapClass; 5] = [
    GapClass::Late,
    GapClass::LostBeforeTap,
    GapClass::NakLost,
    GapClass::CaptureLost,
    GapClass::Unresolved,
];

impl analyze::Sink for Tally {
    fn event(&mut self, e: &analyze::Event) {
        self.own.events.add(e.kind.as_str(), 1);
        if e.kind == analyze::EventKind::Rewind {
            self.own
                .rewinds
                .add(e.trigger.map_or("unknown", |t| t.as_str()), 1);
        }
        if let analyze::EventKind::Resolved(class) = e.kind {
            // A late event is one PSN (its depth says how far behind);
            // the others' depth is the PSNs resolved (docs/tables.md).
            let psns = match class {
                GapClass::Late => 1,
                _ => u64::from(e.depth.unwrap_or(0)),
            };
            self.own.gap_psns.add(class.as_str(), psns);
        }
    }
    fn timeline(&mut self, _: &analyze::TimelineRow) {}
    fn flow(&mut self, _: &analyze::FlowRow) {}
}

impl Watch for Tally {
    fn analysed(&mut self, analysis: &mut dyn Analysing, records: usize) {
        self.own.records += records as u64;
        // A flush with no records (the live loop's, every second) still
        // comes here: what was held back goes out then.
        let due = self.published.is_none_or(|t| t.elapsed() >= PUBLISH_EVERY);
        if !due {
            return;
        }
        self.published = Some(Instant::now());
        if analysis.running(&mut self.own.running).is_err() {
            return;
        }
        let own = &mut self.own;
        own.sender_labels.clear();
        for s in &own.running.senders {
            let label = match self.index.get(&s.src_mac) {
                Some(&i) => i,
                None if own.names.len() < MAX_PFC_SENDERS => {
                    let i = own.names.len() as u16;
                    Arc::make_mut(&mut own.names).push(crate::render::fmt_mac(&s.src_mac));
                    self.index.insert(s.src_mac, i);
                    i
                }
                None => OTHER,
            };
            own.sender_labels.push(label);
        }
        lock(&self.metrics.analysis).copy_from(own);
    }
}

type Labels<'a> = Vec<(&'static str, &'a str)>;

/// One metric: its descriptor and a value per label set.
fn family<'a, M: EncodeMetric>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (Labels<'a>, M)>,
) -> Result<(), std::fmt::Error> {
    let mut series = series.into_iter().peekable();
    let Some((_, first)) = series.peek() else {
        return Ok(());
    };
    let mut metric = enc.encode_descriptor(name, help, None, first.metric_type())?;
    for (labels, value) in series {
        value.encode(metric.encode_family(&labels)?)?;
    }
    Ok(())
}

fn counter<N: EncodeCounterValue>(n: N) -> ConstCounter<N> {
    ConstCounter::new(n)
}

fn gauge<N: EncodeGaugeValue>(n: N) -> ConstGauge<N> {
    ConstGauge::new(n)
}

const PRIORITIES: [&str; 8] = ["0", "1", "2", "3", "4", "5", "6", "7"];

impl Collector for Metrics {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        // Copies, so that the encoding holds no lock.
        let tap = lock(&self.tap).clone();
        let a = lock(&self.analysis).clone();
        let findings = lock(&self.findings).clone();
        let iface = self.iface.as_str();
        let on = || -> Labels { vec![("iface", iface)] };
        let with = |k: &'static str, v| -> Labels { vec![("iface", iface), (k, v)] };
        let e = &mut enc;
        let c = &tap.counters;

        // Totals with no label but `iface`: the XDP program's counters,
        // then the analysis so far.
        let r = &a.running;
        let cnps = a
            .events
            .0
            .iter()
            .find(|(k, _)| *k == "cnp")
            .map_or(0, |(_, n)| *n);
        let totals: [(&str, &str, u64); 12] = [
            (
                "rocescope_tap_frames",
                "Frames the XDP program ran on",
                c.frames,
            ),
            (
                "rocescope_tap_records",
                "Records the XDP program put on the rings",
                c.records,
            ),
            (
                "rocescope_tap_ring_full_drops",
                "Records lost because a ring buffer was full",
                c.ring_full,
            ),
            (
                "rocescope_tap_parse_failures",
                "Frames whose walk stopped at a cut or invalid header",
                c.parse_failures,
            ),
            (
                "rocescope_tap_late_records",
                "Records analysed out of order: they reached the merge after a later record had been analysed",
                tap.late_records,
            ),
            (
                "rocescope_tap_summarized_frames",
                "Summary mode: frames counted in the kernel instead of recorded",
                c.summarized,
            ),
            (
                "rocescope_tap_deltas",
                "Summary mode: flow deltas put on the rings",
                c.deltas,
            ),
            (
                "rocescope_mirror_copies",
                "Mirror copies: frames the tap recorded twice, left out of every count",
                r.frames.mirror_copies,
            ),
            (
                "rocescope_ce_marks",
                "Request packets and UD sends marked CE (ECN 3)",
                r.totals.ce,
            ),
            ("rocescope_cnps", "CNPs (mirror copies left out)", cnps),
            (
                "rocescope_retransmitted_packets",
                "Request packets the tap had seen before",
                r.totals.retrans_packets,
            ),
            (
                "rocescope_spurious_retransmissions",
                "Retransmissions of PSNs already acknowledged",
                r.totals.spurious_retrans,
            ),
        ];
        for (name, help, v) in totals {
            family(e, name, help, [(on(), counter(v))])?;
        }
        family(
            e,
            "rocescope_flows",
            "Flows the analyzer holds",
            [(on(), gauge(r.flows as i64))],
        )?;
        let cpus: Vec<String> = (0..tap.records_per_cpu.len())
            .map(|i| i.to_string())
            .collect();
        family(
            e,
            "rocescope_tap_cpu_records",
            "Records the XDP program put on the rings, by CPU",
            cpus.iter()
                .zip(&tap.records_per_cpu)
                .map(|(cpu, &n)| (with("cpu", cpu), counter(n))),
        )?;
        family(
            e,
            "rocescope_tap_lag_records",
            "Records on the rings, in the merge or in the pipeline, not analysed yet",
            [(on(), gauge(c.records.saturating_sub(a.records) as i64))],
        )?;

        // The analysis so far: by kind, trigger, class.
        family(
            e,
            "rocescope_frames",
            "Frames analysed, by kind (summary mode: the counted ones included)",
            r.frames
                .by_kind()
                .into_iter()
                .map(|(k, n)| (with("kind", k.as_str()), counter(n))),
        )?;
        family(
            e,
            "rocescope_rewinds",
            "Go-Back-N rewinds, by trigger",
            a.rewinds
                .0
                .iter()
                .map(|(t, n)| (with("trigger", t), counter(*n))),
        )?;
        family(
            e,
            "rocescope_gap_psns",
            "Missing PSNs resolved, by what became of them",
            a.gap_psns
                .0
                .iter()
                .map(|(k, n)| (with("class", k), counter(*n))),
        )?;
        family(
            e,
            "rocescope_events",
            "Rows of the events table, by kind",
            a.events
                .0
                .iter()
                .map(|(k, n)| (with("kind", k), counter(*n))),
        )?;

        // PFC per priority and per sender.
        let prio = |p: u8| PRIORITIES[usize::from(p) & 7];
        let per_prio = |v: fn(&analyze::PriorityPauses) -> u64| {
            r.priorities
                .iter()
                .map(move |p| (with("priority", prio(p.priority)), counter(v(p))))
        };
        family(
            e,
            "rocescope_pfc_frames",
            "PFC frames naming the priority (XON included)",
            per_prio(|p| p.frames),
        )?;
        family(
            e,
            "rocescope_pfc_xon_frames",
            "PFC frames with quanta 0 for the priority",
            per_prio(|p| p.xon_frames),
        )?;
        family(
            e,
            "rocescope_pfc_storms",
            "Pauses longer than the storm threshold, once they ended",
            per_prio(|p| p.storms),
        )?;
        let senders = sum_senders(r, &a.sender_labels, &a.names);
        family(
            e,
            "rocescope_pfc_paused_seconds",
            "Time the sender paused the priority, the running pause included",
            senders
                .iter()
                .map(|(k, s)| (sender(iface, k), counter(s.paused_ns as f64 / 1e9))),
        )?;
        family(
            e,
            "rocescope_pfc_pause_frames",
            "Pausing PFC frames (quanta > 0) of the sender for the priority",
            senders
                .iter()
                .map(|(k, s)| (sender(iface, k), counter(s.frames))),
        )?;
        family(
            e,
            "rocescope_pfc_pause_running_seconds",
            "How long the sender's pause of the priority has run now (0: not paused)",
            senders
                .iter()
                .map(|(k, s)| (sender(iface, k), gauge(s.open_ns as f64 / 1e9))),
        )?;
        family(
            e,
            "rocescope_findings_active",
            "Instances of the finding active at the last report interval (pfc-storm: ports and priorities)",
            findings.iter().map(|&(id, severity, n)| {
                (
                    vec![
                        ("iface", iface),
                        ("id", id),
                        ("severity", severity.as_str()),
                    ],
                    gauge(n as i64),
                )
            }),
        )?;
        Ok(())
    }
}

fn sender<'a>(iface: &'a str, &(mac, p): &(&'a str, u8)) -> Labels<'a> {
    vec![
        ("iface", iface),
        ("src_mac", mac),
        ("priority", PRIORITIES[usize::from(p) & 7]),
    ]
}

/// Per `(src_mac label, priority)`: the senders' pauses, those under
/// `other` summed (the running pause: the longest).
fn sum_senders<'a>(
    r: &Running,
    labels: &[u16],
    names: &'a [String],
) -> BTreeMap<(&'a str, u8), analyze::SenderPauses> {
    let mut out: BTreeMap<(&'a str, u8), analyze::SenderPauses> = BTreeMap::new();
    for (s, &label) in r.senders.iter().zip(labels) {
        let name = names
            .get(usize::from(label))
            .map_or("other", String::as_str);
        out.entry((name, s.priority))
            .and_modify(|t| {
                t.paused_ns += s.paused_ns;
                t.frames += s.frames;
                t.open_ns = t.open_ns.max(s.open_ns);
            })
            .or_insert(*s);
    }
    out
}

#[cfg(test)]
mod tests;
