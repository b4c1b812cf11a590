//! What the pipeline hands its outputs: the [`Output`] trait every
//! destination implements (the `--out` tables, a dataset, the HTML report),
//! the [`Watch`] that sees the analysis on its thread (the live tap's
//! metrics), and the [`RunFacts`] `summary.json` reports beside the analysis. A module
//! of its own so that the pipeline and its outputs both depend on it and
//! not on each other: sources → decode → analyze → pipeline → outputs.

use rocescope_common::PacketRecord;

use crate::Result;
use crate::analyze::{self, Analysis, Verdict};

/// Somewhere the analysis goes: it sees every record with the analyzer's
/// verdict, every event and timeline row as it becomes final (through
/// [`analyze::Sink`]), and the finished analysis at the end. Outputs run on
/// the writer thread, hence `Send`.
pub trait Output: analyze::Sink + Send {
    /// Names interface `iface` (indices are handed out in order).
    fn name_iface(&mut self, iface: u16, name: &str);
    /// Names the run's capture files, by [`PacketRecord::capture`]
    /// (before the first record).
    fn name_captures(&mut self, _files: &[String]) {}
    fn packet(&mut self, rec: &PacketRecord, verdict: Verdict) -> Result<()>;
    /// A batch of records, `verdicts[i]` for `recs[i]`.
    fn packets(&mut self, recs: &[PacketRecord], verdicts: &[Verdict]) -> Result<()> {
        for (rec, v) in recs.iter().zip(verdicts) {
            self.packet(rec, *v)?;
        }
        Ok(())
    }
    /// Completes the files written so far and starts new ones with the
    /// next rows (the live tap's SIGHUP): a file an output writes as it
    /// goes is complete and final once this returns. Outputs that write
    /// only at the end do nothing.
    fn reopen(&mut self) -> Result<()> {
        Ok(())
    }
    /// Findings that started, continued or ended while the run goes on
    /// (the live tap's `--report-interval`; docs/live.md).
    fn findings(&mut self, _rows: &[FindingRow]) -> Result<()> {
        Ok(())
    }
    /// Writes whatever is left and completes every file.
    fn close(self: Box<Self>, analysis: &Analysis, facts: &RunFacts) -> Result<()>;
}

/// What a [`Watch`] reads of an analysis still running: one analyzer's
/// state, or that of a sharded run's analyzers merged (`crate::shard`,
/// docs/live.md "Sharded analysis").
pub trait Analysing {
    /// [`analyze::Analyzer::running`].
    fn running(&mut self, out: &mut analyze::Running) -> Result<(), Stopped>;
    /// [`analyze::Analyzer::findings_now`].
    fn findings_now(&mut self, from_ns: u64, now_ns: u64) -> Result<analyze::Interim, Stopped>;
    /// [`analyze::Analyzer::findings_at_stop`].
    fn findings_at_stop(&mut self, from_ns: u64, now_ns: u64) -> Result<analyze::Interim, Stopped>;
}

/// The analysis could not be read: a sharded run's analyzer threads are
/// gone (the run is ending on an error their join reports).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stopped;

impl Analysing for analyze::Analyzer {
    fn running(&mut self, out: &mut analyze::Running) -> Result<(), Stopped> {
        analyze::Analyzer::running(self, out);
        Ok(())
    }
    fn findings_now(&mut self, from_ns: u64, now_ns: u64) -> Result<analyze::Interim, Stopped> {
        Ok(analyze::Analyzer::findings_now(self, from_ns, now_ns))
    }
    fn findings_at_stop(&mut self, from_ns: u64, now_ns: u64) -> Result<analyze::Interim, Stopped> {
        Ok(analyze::Analyzer::findings_at_stop(self, from_ns, now_ns))
    }
}

/// Watches the analysis where it runs (the analyzer's thread, or a sharded
/// run's dispatcher): every event and timeline row as the outputs get them,
/// and after each batch of records the analysis itself, to read its running
/// state ([`Analysing`]). The live tap's metrics are one.
pub trait Watch: analyze::Sink + Send {
    /// `records` more records (and the deltas among them) were analysed.
    fn analysed(&mut self, analysis: &mut dyn Analysing, records: usize);
    /// The findings rows made since the last call, for the outputs.
    fn take_findings(&mut self) -> Vec<FindingRow> {
        Vec::new()
    }
    /// Completes the files the watch writes and starts new ones (SIGHUP).
    fn reopen(&mut self) {}
    /// The run stops, every record analysed: a last look before the
    /// analysis ends (the live tap's findings end; docs/live.md), its rows
    /// then taken by [`Watch::take_findings`].
    fn stopped(&mut self, _analysis: &mut dyn Analysing) {}
}

/// Two watches, both shown everything.
pub(crate) struct Both(pub(crate) Box<dyn Watch>, pub(crate) Box<dyn Watch>);

impl analyze::Sink for Both {
    fn event(&mut self, e: &analyze::Event) {
        self.0.event(e);
        self.1.event(e);
    }
    fn timeline(&mut self, row: &analyze::TimelineRow) {
        self.0.timeline(row);
        self.1.timeline(row);
    }
    fn flow(&mut self, row: &analyze::FlowRow) {
        self.0.flow(row);
        self.1.flow(row);
    }
}

impl Watch for Both {
    fn analysed(&mut self, analysis: &mut dyn Analysing, records: usize) {
        self.0.analysed(analysis, records);
        self.1.analysed(analysis, records);
    }
    fn take_findings(&mut self) -> Vec<FindingRow> {
        let mut rows = self.0.take_findings();
        rows.extend(self.1.take_findings());
        rows
    }
    fn reopen(&mut self) {
        self.0.reopen();
        self.1.reopen();
    }
    fn stopped(&mut self, analysis: &mut dyn Analysing) {
        self.0.stopped(analysis);
        self.1.stopped(analysis);
    }
}

/// Where a finding stands at a report interval's end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FindingState {
    /// Seen in this interval, not in the one before.
    Start,
    /// Seen in this interval and the one before.
    Continue,
    /// No longer active, and why.
    End(EndReason),
}

/// Why a finding ended (docs/live.md, "Findings as they happen").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndReason {
    /// Seen in the interval before, not in this one.
    Cleared,
    /// Still active when the run stopped: it may well go on.
    Stopped,
}

impl FindingState {
    pub fn as_str(self) -> &'static str {
        match self {
            FindingState::Start => "start",
            FindingState::Continue => "continue",
            FindingState::End(_) => "end",
        }
    }

    /// An `end`'s reason (`cleared`, `stopped`); none for the others.
    pub fn reason(self) -> Option<&'static str> {
        match self {
            FindingState::End(EndReason::Cleared) => Some("cleared"),
            FindingState::End(EndReason::Stopped) => Some("stopped"),
            FindingState::Start | FindingState::Continue => None,
        }
    }
}

/// A finding's state at the end of a report interval: a line of
/// `--findings` and a row of the dataset's `findings` table (docs/live.md,
/// docs/tables.md).
#[derive(Clone, Debug, PartialEq)]
pub struct FindingRow {
    /// The end of the interval it was evaluated over (ns since the epoch).
    pub ts_ns: u64,
    pub id: &'static str,
    pub severity: analyze::Severity,
    pub state: FindingState,
    /// Which instance, where a finding has several (`pfc-storm`: the port
    /// and priority), else `None`.
    pub subject: Option<String>,
    pub first_seen_ns: u64,
    pub last_seen_ns: u64,
    pub impact: f64,
    pub title: String,
    /// The finding's detail, as `report` words its evidence.
    pub evidence: String,
    /// As `report --json`'s `params`.
    pub params: std::collections::BTreeMap<&'static str, serde_json::Value>,
}

/// A sink, and the [`Watch`] if there is one: both get every event and row.
pub(crate) struct Watched<'a, S: analyze::Sink>(
    pub(crate) &'a mut S,
    pub(crate) Option<&'a mut (dyn Watch + 'static)>,
);

impl<S: analyze::Sink> analyze::Sink for Watched<'_, S> {
    fn event(&mut self, e: &analyze::Event) {
        self.0.event(e);
        if let Some(w) = self.1.as_deref_mut() {
            w.event(e);
        }
    }
    fn timeline(&mut self, row: &analyze::TimelineRow) {
        self.0.timeline(row);
        if let Some(w) = self.1.as_deref_mut() {
            w.timeline(row);
        }
    }
    fn flow(&mut self, row: &analyze::FlowRow) {
        self.0.flow(row);
    }
    fn telemetry(&mut self, row: &crate::telemetry::TelemetryRow) {
        self.0.telemetry(row);
    }
    fn keeps_timeline(&self) -> bool {
        self.0.keeps_timeline()
    }
    fn keeps_flows(&self) -> bool {
        self.0.keeps_flows()
    }
}

/// Facts about the run that `summary.json` reports beside the analysis.
#[derive(Debug, Default, serde::Serialize)]
pub struct RunFacts {
    pub captures: Vec<String>,
    /// How the captures were grouped into taps (docs/inputs.md, "Taps
    /// across files"); empty for the live tap.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub taps: Vec<crate::sources::TapFacts>,
    pub frames_read: u64,
    pub records: u64,
    pub warnings: Vec<String>,
    /// A read error that ended the run early (the tables hold what came before).
    pub stopped_by: Option<String>,
    /// Frames read but not decoded, by reason, and parse failures by layer
    /// (captures; the live tap counts in `live`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode: Option<crate::decode::DecodeFacts>,
    /// The live tap's facts (`rocescope live`); absent for captures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<LiveFacts>,
    /// Switch telemetry read (its rows go to `telemetry.parquet`); absent
    /// when the captures held none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<crate::telemetry::TelemetryFacts>,
    /// Which clock timed the frames (`--time`, docs/inputs.md, "Hardware
    /// time"); absent when every frame kept its capture time by default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<crate::sources::TimeFacts>,
}

/// What `rocescope live` reports in `summary.json` under `input.live`: the
/// XDP program's counters (summed over CPUs) and how the run ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LiveFacts {
    pub iface: String,
    /// `native` or `skb`: how the program ended up attached.
    pub xdp_mode: String,
    /// Frames the XDP program ran on.
    pub frames: u64,
    /// Records it put on the ring buffer.
    pub records: u64,
    /// Records lost because the ring buffer was full.
    pub ring_full_drops: u64,
    /// Frames whose walk stopped at a cut or invalid header (malformed included).
    pub parse_failures: u64,
    /// `count`, `duration`, `signal` or `interface`.
    pub stopped_by: String,
    /// `records` (one record per frame of interest) or `summary`.
    #[serde(default)]
    pub mode: String,
    /// Summary mode: frames counted in the kernel instead of recorded.
    #[serde(default)]
    pub summarized: u64,
    /// Summary mode: flow deltas put on the ring buffer.
    #[serde(default)]
    pub deltas: u64,
    /// Bytes of records and deltas put on the ring buffer.
    #[serde(default)]
    pub ring_bytes: u64,
    /// Summary mode: flows whose kernel state started again after it had
    /// been evicted from the kernel's flow map (their counts since the
    /// previous delta are lost).
    #[serde(default)]
    pub evicted_flows: u64,
    /// `per-cpu` (a ring per CPU) or `shared` (one ring).
    #[serde(default)]
    pub rings: String,
    /// Records the program put on the rings, by CPU number (the program's
    /// per-CPU counters): with per-CPU rings, each CPU's ring.
    #[serde(default)]
    pub records_per_cpu: Vec<u64>,
    /// Records that reached the merge after a later record had been
    /// analysed (analysed anyway, out of order; docs/live.md).
    #[serde(default)]
    pub late_records: u64,
}
