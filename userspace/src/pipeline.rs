//! The stage every source shares: records → analyzer → outputs.
//!
//! The offline reader and the live tap both hand finished `PacketRecord`s
//! (frame number, timestamp and interface index set) to a [`RecordPipeline`];
//! what happens after that is the same code for both. Where the results go
//! is a list of [`Output`]s: the `--out` tables ([`TableSet`]), a
//! partitioned dataset ([`crate::tables::dataset::DatasetWriter`]), the HTML
//! report ([`crate::html::HtmlReport`]), or none at all (`report`).
//!
//! # Threads
//!
//! By default ([`Threads::Pipelined`]) the pipeline is three stages on three
//! threads, so a source (the capture reader and decoder, or the ring-buffer
//! drain) never waits for the analyzer or for Parquet encoding:
//!
//! ```text
//! caller: push() ─► batch of BATCH records ─┐ sync_channel(DEPTH)
//!   analyzer thread: Analyzer::push per record, verdicts, events, timeline rows ─┐ sync_channel(DEPTH)
//!     writer thread: every Output (Arrow builders, Parquet encoding, files)
//! ```
//!
//! The threads start with the first record (or interface name, or CM
//! message), so outputs can still be added after [`RecordPipeline::new`].
//!
//! * **Bounded**: each channel holds at most `DEPTH` batches, so a slow
//!   writer (or a slow disk) stalls the analyzer, which stalls the caller:
//!   memory never grows with the capture. Record buffers go back to the
//!   caller once written and are reused (no allocation per batch).
//! * **Same tables**: each table receives its rows in the same order as
//!   with [`Threads::Inline`] (one stage after the other on the calling
//!   thread), so the files hold the same rows and values; `tests` check it.
//! * **Errors**: a stage that fails (e.g. the disk is full) stops; the
//!   caller gets its error from the next `push` (a few batches later than
//!   inline) or from [`RecordPipeline::finish`].
//! * **Priorities**: a source with slack (the capture reader) asks to run
//!   a few nice levels below the stages ([`RecordPipeline::source_yields`]),
//!   so that on a busy core the table side, the critical path, goes first.
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;

use rocescope_common::PacketRecord;
use rocescope_common::summary::FlowDelta;

use crate::analyze::{self, Analysis, Analyzer, Event, FlowKey, TimelineRow, Verdict};
use crate::output::{Output, RunFacts, Watch, Watched};
use crate::tables::TableSet;
use crate::telemetry::TelemetryRow;
use crate::transport::roce::cm::CmMessage;
use crate::{Error, Result};

mod sharded;

type Outputs = Vec<Box<dyn Output>>;

/// Records per batch handed between threads (200 bytes each: 800 KB).
pub const BATCH: usize = 4096;
/// Batches in flight per channel.
const DEPTH: usize = 4;

/// How the stages are laid out on threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Threads {
    /// Source, analyzer and writer on threads of their own (the default).
    #[default]
    Pipelined,
    /// Everything on the calling thread (the reference the pipelined
    /// layout is tested against; also `--threads 1`).
    Inline,
}

impl Threads {
    /// `--threads N`: 1 is inline, anything else pipelined.
    pub fn from_count(n: usize) -> Self {
        if n == 1 {
            Threads::Inline
        } else {
            Threads::Pipelined
        }
    }
}

pub struct RecordPipeline {
    records: u64,
    stage: Stage,
    /// Where the analyzer's pairings go ([`RecordPipeline::watch_pairings`]).
    pairings: Option<Sender<Pairing>>,
    /// [`RecordPipeline::watch`]; moved to the analyzer thread when it starts.
    watch: Option<Box<dyn Watch>>,
    /// [`RecordPipeline::source_yields`].
    source_yields: bool,
    /// `--analyzers N`, N > 1: the analyzer stage is N analyzers on
    /// threads of their own ([`sharded`]), made from this configuration.
    sharded: Option<(usize, analyze::Config)>,
}

/// Two flows the analyzer paired: (request flow, response flow).
pub type Pairing = (FlowKey, FlowKey);

/// A flow delta to apply before the record at this index of its batch.
type Delta = (usize, u16, FlowDelta);

/// A telemetry hop to join before the record at this index of its batch
/// (after the record that carried it).
type Hop = (usize, TelemetryRow);

enum Stage {
    /// Outputs may still be added; nothing has run yet.
    NotStarted {
        analyzer: Box<Analyzer>,
        outputs: Outputs,
        threads: Threads,
    },
    Inline {
        analyzer: Box<Analyzer>,
        outputs: Outputs,
        /// [`RecordPipeline::last_pushed`].
        last: Option<PacketRecord>,
    },
    Pipelined(Pipelined),
    /// A stage thread failed; its error was returned once (kept as the
    /// source of the errors of later calls).
    Failed(Option<Arc<Error>>),
}

struct Pipelined {
    batch: Vec<PacketRecord>,
    /// Deltas among the batch's records.
    deltas: Vec<Delta>,
    /// Telemetry hops among the batch's records.
    hops: Vec<Hop>,
    tx: SyncSender<ToAnalyzer>,
    /// Emptied record buffers coming back.
    spare: Receiver<Vec<PacketRecord>>,
    analyzer: JoinHandle<Result<Analysis>>,
    /// The last record of the batch sent last.
    sent_last: Option<PacketRecord>,
    /// A [`Watch`] is told after every flush, an empty one too (what a
    /// throttled watch held back goes out once the source is idle).
    watched: bool,
}

enum ToAnalyzer {
    /// Interface index, name, capture file.
    Iface(u16, String, u32, u32),
    /// Interface index, frames its capture says it dropped (interface, host).
    Drops(u16, Option<u64>, Option<u64>),
    Cm(Box<PacketRecord>, CmMessage),
    Records(Vec<PacketRecord>, Vec<Delta>, Vec<Hop>),
    /// [`Output::reopen`] once everything before is written.
    Reopen,
    Finish(Box<RunFacts>),
}

/// What the analyzer hands the writer: records with their verdicts, and
/// the events and timeline rows that became final meanwhile.
#[derive(Default)]
struct TableBatch {
    records: Vec<PacketRecord>,
    verdicts: Vec<Verdict>,
    events: Vec<Event>,
    timeline: Vec<TimelineRow>,
    /// Rows of flows that retired.
    flows: Vec<analyze::FlowRow>,
    /// Telemetry hops, joined to their flows.
    telemetry: Vec<TelemetryRow>,
    /// Findings that started, continued or ended ([`Watch::take_findings`]).
    findings: Vec<crate::output::FindingRow>,
}

enum ToWriter {
    Iface(u16, String),
    Batch(TableBatch),
    Reopen,
    Close(Box<Analysis>, Box<RunFacts>),
}

impl RecordPipeline {
    /// With `out`, every table is written there; without, only the analysis
    /// is kept (`report`). Pipelined on threads of its own.
    pub fn new(config: analyze::Config, out: Option<&Path>) -> Result<Self> {
        Self::with_threads(config, out, Threads::default())
    }

    pub fn with_threads(
        config: analyze::Config,
        out: Option<&Path>,
        threads: Threads,
    ) -> Result<Self> {
        Self::with_tables(config, out, threads, true)
    }

    /// [`RecordPipeline::with_threads`]; without `packets`, `out` gets
    /// every table but `packets.parquet` (`live --tables`).
    pub fn with_tables(
        config: analyze::Config,
        out: Option<&Path>,
        threads: Threads,
        packets: bool,
    ) -> Result<Self> {
        Self::with_analyzers(config, out, threads, packets, 1)
    }

    /// [`RecordPipeline::with_tables`] with the analysis split across
    /// `analyzers` analyzer threads by address pair when more than 1
    /// (`--analyzers`; docs/live.md, "Sharded analysis"): pipelined only
    /// (inline, the run fails at its first record).
    pub fn with_analyzers(
        config: analyze::Config,
        out: Option<&Path>,
        threads: Threads,
        packets: bool,
        analyzers: usize,
    ) -> Result<Self> {
        let sharded = (analyzers > 1).then(|| (analyzers, config.clone()));
        let mut outputs: Outputs = Vec::new();
        if let Some(dir) = out {
            let pipelined = threads == Threads::Pipelined;
            outputs.push(Box::new(TableSet::create_with_packets(
                dir, pipelined, packets,
            )?));
        }
        let mut analyzer = Box::new(Analyzer::new(config));
        analyzer.set_row_annotator(crate::render::wireshark::annotate_row);
        let stage = Stage::NotStarted {
            analyzer,
            outputs,
            threads,
        };
        Ok(Self {
            records: 0,
            stage,
            pairings: None,
            watch: None,
            source_yields: false,
            sharded,
        })
    }

    /// Once the stage threads run, the calling thread (the source) runs
    /// [`SOURCE_NICE`] nice levels below them. For a source with slack,
    /// such as a capture file: on 2 cores the four threads take turns, and
    /// the table writer and encoder are the critical path, so the reader
    /// should not take a core from them while it could wait (its channel
    /// bounds how far ahead it gets). Not for the live tap, whose ring
    /// drain must never fall behind the kernel. Best effort: no error if
    /// the system refuses; an unprivileged thread cannot raise its priority
    /// back, so it stays lowered after the run.
    pub fn source_yields(&mut self) {
        self.source_yields = true;
    }

    /// Every pairing of two flows the analyzer makes from now on is sent
    /// on the returned channel (after the batch that made it). Call before
    /// the first record; the live tap's summary mode tells the kernel.
    pub fn watch_pairings(&mut self) -> Receiver<Pairing> {
        let (tx, rx) = channel();
        if let Stage::NotStarted { analyzer, .. } = &mut self.stage {
            analyzer.log_pairings();
            self.pairings = Some(tx);
        }
        rx
    }

    /// Shows the analysis to `watch` as it goes (before the first record).
    pub fn watch(&mut self, watch: Box<dyn Watch>) {
        if let Stage::NotStarted { .. } = self.stage {
            self.watch = Some(match self.watch.take() {
                Some(first) => Box::new(crate::output::Both(first, watch)),
                None => watch,
            });
        }
    }

    /// Sends the results to `output` too (before the first record).
    pub fn add_output(&mut self, output: Box<dyn Output>) {
        if let Stage::NotStarted { outputs, .. } = &mut self.stage {
            outputs.push(output);
        }
    }

    /// Names the run's capture files for the outputs (before the first record).
    pub fn name_captures(&mut self, files: &[String]) {
        if let Stage::NotStarted { outputs, .. } = &mut self.stage {
            for o in outputs {
                o.name_captures(files);
            }
        }
    }

    /// Turns a not-yet-started pipeline into its running layout. Called on
    /// every record: once started it is this inlined check alone, the
    /// start out of line (docs/benchmarks.md, "pairhash").
    #[inline]
    fn start(&mut self) -> Result<()> {
        if matches!(self.stage, Stage::NotStarted { .. }) {
            self.start_now()
        } else {
            Ok(())
        }
    }

    /// [`Self::start`] of a pipeline not yet started.
    #[cold]
    #[inline(never)]
    fn start_now(&mut self) -> Result<()> {
        let Stage::NotStarted {
            analyzer,
            outputs,
            threads,
        } = std::mem::replace(&mut self.stage, Stage::Failed(None))
        else {
            return Ok(());
        };
        if let Some((n, config)) = self.sharded.take() {
            let watch = self.watch.take();
            let pairings = self.pairings.clone();
            self.stage = Stage::Pipelined(sharded::start(
                &config, n, outputs, threads, watch, pairings,
            )?);
            if self.source_yields {
                lower_current_thread_priority(SOURCE_NICE);
            }
            return Ok(());
        }
        self.stage = match threads {
            Threads::Inline => Stage::Inline {
                analyzer,
                outputs,
                last: None,
            },
            Threads::Pipelined => {
                let stage = Stage::Pipelined(Pipelined::start(
                    *analyzer,
                    outputs,
                    self.pairings.clone(),
                    self.watch.take(),
                )?);
                // After the spawns: threads inherit their creator's nice value.
                if self.source_yields {
                    lower_current_thread_priority(SOURCE_NICE);
                }
                stage
            }
        };
        Ok(())
    }

    /// Names interface `iface` for the tables and the findings.
    pub fn name_iface(&mut self, iface: u16, name: &str) {
        self.name_iface_of(iface, name, 0, 0);
    }

    /// Names interface `iface`, one of the interfaces of capture file
    /// `capture` (a capture's pauses end with it, not with the whole run),
    /// where it is interface `local`.
    pub fn name_iface_of(&mut self, iface: u16, name: &str, capture: u32, local: u32) {
        if let Err(e) = self.start() {
            self.stage = Stage::Failed(Some(Arc::new(e)));
        }
        match &mut self.stage {
            Stage::NotStarted { .. } => {}
            Stage::Inline {
                analyzer, outputs, ..
            } => {
                analyzer.set_iface_name(iface, name);
                analyzer.set_iface_capture(iface, capture, local);
                for o in outputs {
                    o.name_iface(iface, name);
                }
            }
            Stage::Pipelined(p) => {
                // Records before it go first; a failure shows at the next push.
                if p.flush().is_ok() {
                    let _ =
                        p.tx.send(ToAnalyzer::Iface(iface, name.to_string(), capture, local));
                }
            }
            Stage::Failed(_) => {}
        }
    }

    /// The capture of interface `iface` says it dropped frames (pcapng
    /// interface statistics: by the interface, by the capture host).
    pub fn tap_drops(&mut self, iface: u16, ifdrop: Option<u64>, osdrop: Option<u64>) {
        match &mut self.stage {
            Stage::Inline { analyzer, .. } => analyzer.set_tap_drops(iface, ifdrop, osdrop),
            Stage::Pipelined(p) => {
                if p.flush().is_ok() {
                    let _ = p.tx.send(ToAnalyzer::Drops(iface, ifdrop, osdrop));
                }
            }
            Stage::NotStarted { .. } | Stage::Failed(_) => {}
        }
    }

    pub fn push(&mut self, rec: &PacketRecord) -> Result<()> {
        self.push_with(rec, |_| {})
    }

    /// [`RecordPipeline::push`] of `rec` as `edit` changes it, edited where
    /// the batch holds it (the live tap's records: one copy, not two).
    pub fn push_with(
        &mut self,
        rec: &PacketRecord,
        edit: impl FnOnce(&mut PacketRecord),
    ) -> Result<()> {
        self.records += 1;
        self.start()?;
        match &mut self.stage {
            Stage::NotStarted { .. } => Ok(()),
            Stage::Inline {
                analyzer,
                outputs,
                last,
            } => {
                let rec = last.insert(*rec);
                edit(rec);
                let rec = &*rec;
                let mut fanout = Fanout(outputs);
                let verdict =
                    analyzer.push(rec, &mut Watched(&mut fanout, self.watch.as_deref_mut()));
                watched_inline(self.watch.as_deref_mut(), analyzer, 1, outputs)?;
                send_pairings(analyzer, self.pairings.as_ref());
                for o in outputs.iter_mut() {
                    o.packet(rec, verdict)?;
                }
                Ok(())
            }
            Stage::Pipelined(p) => {
                p.batch.push(*rec);
                if let Some(last) = p.batch.last_mut() {
                    edit(last);
                }
                if p.batch.len() >= BATCH && p.flush().is_err() {
                    return Err(self.fail());
                }
                Ok(())
            }
            Stage::Failed(cause) => Err(Error::Stopped(cause.clone())),
        }
    }

    /// Frames of one flow the live tap counted in the kernel (summary
    /// mode), applied after every record pushed before it: see
    /// [`Analyzer::apply_delta`]. Not a record: [`RecordPipeline::records`]
    /// does not count it.
    pub fn push_delta(&mut self, iface: u16, delta: &FlowDelta) -> Result<()> {
        self.start()?;
        match &mut self.stage {
            Stage::NotStarted { .. } => Ok(()),
            Stage::Inline {
                analyzer, outputs, ..
            } => {
                let mut fanout = Fanout(outputs);
                let mut sink = Watched(&mut fanout, self.watch.as_deref_mut());
                analyzer.apply_delta(iface, delta, &mut sink);
                watched_inline(self.watch.as_deref_mut(), analyzer, 0, outputs)
            }
            Stage::Pipelined(p) => {
                p.deltas.push((p.batch.len(), iface, *delta));
                if p.deltas.len() >= BATCH && p.flush().is_err() {
                    return Err(self.fail());
                }
                Ok(())
            }
            Stage::Failed(cause) => Err(Error::Stopped(cause.clone())),
        }
    }

    /// Switch telemetry hops (`crate::telemetry`), joined to their flows
    /// after every record pushed before them (push the record that carried
    /// them first) and written as they are joined: nothing is held until
    /// the end (docs/analysis.md, "Telemetry and flows").
    pub fn telemetry(&mut self, rows: Vec<TelemetryRow>) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        self.start()?;
        match &mut self.stage {
            Stage::NotStarted { .. } => Ok(()),
            Stage::Inline {
                analyzer, outputs, ..
            } => {
                let mut fanout = Fanout(outputs);
                let mut sink = Watched(&mut fanout, self.watch.as_deref_mut());
                for mut row in rows {
                    analyzer.telemetry(&mut row, &mut sink);
                }
                Ok(())
            }
            Stage::Pipelined(p) => {
                let at = p.batch.len();
                p.hops.extend(rows.into_iter().map(|r| (at, r)));
                if p.hops.len() >= BATCH && p.flush().is_err() {
                    return Err(self.fail());
                }
                Ok(())
            }
            Stage::Failed(cause) => Err(Error::Stopped(cause.clone())),
        }
    }

    /// A CM REQ/REP found in a record's payload (offline only: the live
    /// tap's records carry no payload). Applied after every record pushed
    /// before it.
    pub fn cm(&mut self, rec: &PacketRecord, msg: CmMessage) -> Result<()> {
        self.start()?;
        match &mut self.stage {
            Stage::Inline { analyzer, .. } => analyzer.cm(rec, msg),
            Stage::Pipelined(p) => {
                if p.flush().is_err() || p.tx.send(ToAnalyzer::Cm(Box::new(*rec), msg)).is_err() {
                    return Err(self.fail());
                }
            }
            Stage::NotStarted { .. } | Stage::Failed(_) => {}
        }
        Ok(())
    }

    /// Hands the records pushed so far to the analyzer thread now rather than
    /// when the batch is full (the live tap does so once a second).
    pub fn flush(&mut self) -> Result<()> {
        if let Stage::Pipelined(p) = &mut self.stage
            && p.flush().is_err()
        {
            return Err(self.fail());
        }
        Ok(())
    }

    /// Records pushed since the last flush are waiting in the batch (not
    /// deltas or hops alone): the live tap's summary mode hands them to the
    /// analyzer at once (it pairs flows from them), deltas alone only now
    /// and then ([`Self::holds_anything`]).
    pub fn holds_records(&self) -> bool {
        matches!(&self.stage, Stage::Pipelined(p) if !p.batch.is_empty())
    }

    /// Records, deltas or hops pushed since the last flush are waiting.
    pub fn holds_anything(&self) -> bool {
        matches!(&self.stage, Stage::Pipelined(p)
            if !(p.batch.is_empty() && p.deltas.is_empty() && p.hops.is_empty()))
    }

    /// Completes the files the outputs have written so far and starts new
    /// ones ([`Output::reopen`]), after every record pushed before.
    pub fn reopen_outputs(&mut self) -> Result<()> {
        self.flush()?;
        match &mut self.stage {
            Stage::Inline { outputs, .. } | Stage::NotStarted { outputs, .. } => {
                for o in outputs.iter_mut() {
                    o.reopen()?;
                }
            }
            Stage::Pipelined(p) => {
                if p.tx.send(ToAnalyzer::Reopen).is_err() {
                    return Err(self.fail());
                }
            }
            Stage::Failed(cause) => return Err(Error::Stopped(cause.clone())),
        }
        Ok(())
    }

    /// The record pushed last, as pushed: for a source to compare the next
    /// one with, without keeping a copy of every record itself (a 200-byte
    /// copy per frame was 2 % of `analyze`).
    pub fn last_pushed(&self) -> Option<&PacketRecord> {
        match &self.stage {
            Stage::Inline { last, .. } => last.as_ref(),
            Stage::Pipelined(p) => p.batch.last().or(p.sent_last.as_ref()),
            Stage::NotStarted { .. } | Stage::Failed(_) => None,
        }
    }

    /// Records pushed so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Ends the analysis and completes every table (`facts.records` is
    /// filled in here).
    /// Every output is closed even when one fails; the first error is returned.
    pub fn finish(mut self, mut facts: RunFacts) -> Result<Analysis> {
        facts.records = self.records;
        self.start()?;
        match std::mem::replace(&mut self.stage, Stage::Failed(None)) {
            Stage::NotStarted { .. } => Err(Error::Internal("the pipeline never started".into())),
            Stage::Inline {
                mut analyzer,
                mut outputs,
                ..
            } => {
                let rows = stopped(self.watch.as_deref_mut(), &mut *analyzer);
                if !rows.is_empty() {
                    for o in outputs.iter_mut() {
                        o.findings(&rows)?;
                    }
                }
                let analysis = finished(*analyzer, &mut Fanout(&mut outputs));
                close_all(outputs, &analysis, &facts)?;
                Ok(analysis)
            }
            Stage::Pipelined(mut p) => {
                let sent =
                    p.flush().is_ok() && p.tx.send(ToAnalyzer::Finish(Box::new(facts))).is_ok();
                drop(p.tx);
                let result = join(p.analyzer);
                if result.is_ok() && !sent {
                    return Err(Error::Internal("the analyzer thread stopped early".into()));
                }
                result
            }
            Stage::Failed(cause) => Err(Error::Stopped(cause.clone())),
        }
    }

    /// Ends the run without completing anything: every output is dropped,
    /// which removes its partial files (nothing is written, no
    /// `summary.json`), once the stage threads are done.
    pub fn abandon(self) {
        if let Stage::Pipelined(p) = self.stage {
            drop(p.tx);
            let _ = join(p.analyzer);
        }
    }

    /// A stage thread is gone: collect its error, remember that it failed.
    fn fail(&mut self) -> Error {
        let stage = std::mem::replace(&mut self.stage, Stage::Failed(None));
        let err = match stage {
            Stage::Pipelined(p) => {
                drop(p.tx);
                match join(p.analyzer) {
                    Err(e) => e,
                    Ok(_) => Error::Internal("the analyzer thread stopped early".into()),
                }
            }
            _ => return Error::Stopped(None),
        };
        let err = Arc::new(err);
        self.stage = Stage::Failed(Some(err.clone()));
        Error::Shared(err)
    }
}

impl Pipelined {
    fn start(
        analyzer: Analyzer,
        outputs: Outputs,
        pairings: Option<Sender<Pairing>>,
        watch: Option<Box<dyn Watch>>,
    ) -> Result<Self> {
        let watched = watch.is_some();
        Self::start_with(outputs, watched, move |rx, writer, spare_tx| {
            analyze_loop(analyzer, rx, writer, spare_tx, pairings, watch)
        })
    }

    /// The writer thread (with outputs) and the analyzer stage, `stage`,
    /// on a thread of its own.
    fn start_with(
        outputs: Outputs,
        watched: bool,
        stage: impl FnOnce(
            Receiver<ToAnalyzer>,
            Option<Writer>,
            Sender<Vec<PacketRecord>>,
        ) -> Result<Analysis>
        + Send
        + 'static,
    ) -> Result<Self> {
        let (tx, rx) = sync_channel::<ToAnalyzer>(DEPTH);
        let (spare_tx, spare) = channel();
        let spawn_error = |what: &str, e: std::io::Error| {
            Error::Internal(format!("cannot start the {what} thread: {e}"))
        };
        let writer = if outputs.is_empty() {
            None
        } else {
            let (wtx, wrx) = sync_channel::<ToWriter>(DEPTH);
            let spare_tx = spare_tx.clone();
            let handle = std::thread::Builder::new()
                .name("rocescope-write".into())
                .spawn(move || write_loop(outputs, wrx, spare_tx))
                .map_err(|e| spawn_error("table writer", e))?;
            Some(Writer {
                tx: wtx,
                handle: Some(handle),
            })
        };
        let analyzer = std::thread::Builder::new()
            .name("rocescope-analyze".into())
            .spawn(move || stage(rx, writer, spare_tx))
            .map_err(|e| spawn_error("analyzer", e))?;
        Ok(Self {
            batch: Vec::with_capacity(BATCH),
            deltas: Vec::new(),
            hops: Vec::new(),
            tx,
            spare,
            analyzer,
            sent_last: None,
            watched,
        })
    }

    /// Sends the current batch (if any); `Err` when the analyzer is gone.
    fn flush(&mut self) -> std::result::Result<(), ()> {
        if self.batch.is_empty() && self.deltas.is_empty() && self.hops.is_empty() && !self.watched
        {
            return Ok(());
        }
        let next = self
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH));
        if let Some(last) = self.batch.last() {
            self.sent_last = Some(*last);
        }
        let full = std::mem::replace(&mut self.batch, next);
        let deltas = std::mem::take(&mut self.deltas);
        let hops = std::mem::take(&mut self.hops);
        self.tx
            .send(ToAnalyzer::Records(full, deltas, hops))
            .map_err(|_| ())
    }
}

/// Nice levels a yielding source runs below the stages
/// ([`RecordPipeline::source_yields`]). Measured on the bench capture
/// (`analyze`, medians of 24–30 interleaved runs, CPU unchanged): +5 on the
/// reader 0.956x wall (set from the environment in a test build), 0.965x
/// and 0.982x (this code, two comparisons); +5 on reader and analyzer
/// 0.970x; +2 0.963x and +10 0.961x on both. On a machine shared with
/// other work the reader also yields to other processes: it has slack.
pub const SOURCE_NICE: i32 = 5;

/// Adds `by` to the calling thread's nice value (Linux keeps one per
/// thread), capped at 19; best effort.
fn lower_current_thread_priority(by: i32) {
    // SAFETY: getpriority/setpriority on the calling thread's own id; errno
    // is cleared first because -1 is also a valid nice value.
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        *libc::__errno_location() = 0;
        let now = libc::getpriority(libc::PRIO_PROCESS, tid);
        if now == -1 && *libc::__errno_location() != 0 {
            return;
        }
        let _ = libc::setpriority(libc::PRIO_PROCESS, tid, (now + by).min(19));
    }
}

/// The analyzer stage's end of the writer thread: where its batches go,
/// and the thread, whose own error explains a closed channel better than
/// the channel can.
struct Writer {
    tx: SyncSender<ToWriter>,
    handle: Option<JoinHandle<Result<Analysis>>>,
}

impl Writer {
    fn send(&mut self, msg: ToWriter) -> Result<()> {
        match self.tx.send(msg) {
            Ok(()) => Ok(()),
            Err(_) => Err(self.failed()),
        }
    }

    fn failed(&mut self) -> Error {
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(Err(e))) => e,
            _ => Error::Internal("the table writer thread stopped".into()),
        }
    }

    /// The sink the end of the run writes through, starting with `batch`.
    fn flushing(&self, batch: TableBatch) -> Flushing<'_> {
        Flushing {
            batch,
            wtx: &self.tx,
            failed: false,
        }
    }

    /// The end of a run: the last batch (`None`: the writer stopped while
    /// the run ended), the analysis told, the outputs closed; the writer's
    /// result.
    fn close(
        mut self,
        last: Option<TableBatch>,
        analysis: Analysis,
        facts: Box<RunFacts>,
    ) -> Result<Analysis> {
        let Some(last) = last else {
            return Err(self.failed());
        };
        self.send(ToWriter::Batch(last))?;
        self.send(ToWriter::Close(Box::new(told(analysis)), facts))?;
        let Writer { tx, handle } = self;
        drop(tx);
        match handle {
            Some(h) => join(h),
            None => Err(Error::Internal("the table writer thread is gone".into())),
        }
    }

    /// Abandoned (see [`RecordPipeline::abandon`]): the writer drops its
    /// outputs, which removes their partial files, before we return.
    fn abandon(self) {
        let Writer { tx, handle } = self;
        drop(tx);
        if let Some(h) = handle {
            let _ = h.join();
        }
    }
}

fn join(handle: JoinHandle<Result<Analysis>>) -> Result<Analysis> {
    handle
        .join()
        .unwrap_or_else(|_| Err(Error::Internal("a pipeline thread panicked".into())))
}

/// The analyzer thread: records in, verdicts (and events, timeline rows)
/// out to the writer thread; returns the analysis once the writer is done.
fn analyze_loop(
    mut analyzer: Analyzer,
    rx: Receiver<ToAnalyzer>,
    writer: Option<Writer>,
    spare: Sender<Vec<PacketRecord>>,
    pairings: Option<Sender<Pairing>>,
    mut watch: Option<Box<dyn Watch>>,
) -> Result<Analysis> {
    let Some(mut writer) = writer else {
        // No tables: analyse and hand the buffers straight back.
        while let Ok(msg) = rx.recv() {
            match msg {
                ToAnalyzer::Iface(i, name, capture, local) => {
                    analyzer.set_iface_name(i, &name);
                    analyzer.set_iface_capture(i, capture, local);
                }
                ToAnalyzer::Drops(i, ifdrop, osdrop) => analyzer.set_tap_drops(i, ifdrop, osdrop),
                ToAnalyzer::Cm(rec, msg) => analyzer.cm(&rec, msg),
                ToAnalyzer::Records(mut recs, deltas, hops) => {
                    let mut sink = Watched(&mut Discard, watch.as_deref_mut());
                    analyze_batch(&mut analyzer, &recs, &deltas, hops, &mut sink, |_| {});
                    if let Some(w) = watch.as_deref_mut() {
                        w.analysed(&mut analyzer, recs.len());
                    }
                    send_pairings(&mut analyzer, pairings.as_ref());
                    recs.clear();
                    let _ = spare.send(recs);
                }
                ToAnalyzer::Reopen => {
                    if let Some(w) = watch.as_deref_mut() {
                        w.reopen();
                    }
                }
                ToAnalyzer::Finish(_) => {
                    stopped(watch.as_deref_mut(), &mut analyzer);
                    return Ok(finished(analyzer, &mut Discard));
                }
            }
        }
        return Err(Error::Internal(
            "the record source stopped without finishing".into(),
        ));
    };
    while let Ok(msg) = rx.recv() {
        match msg {
            ToAnalyzer::Iface(i, name, capture, local) => {
                analyzer.set_iface_name(i, &name);
                analyzer.set_iface_capture(i, capture, local);
                writer.send(ToWriter::Iface(i, name))?;
            }
            ToAnalyzer::Drops(i, ifdrop, osdrop) => analyzer.set_tap_drops(i, ifdrop, osdrop),
            ToAnalyzer::Cm(rec, msg) => analyzer.cm(&rec, msg),
            ToAnalyzer::Records(records, deltas, hops) => {
                let mut sink = TableBatch::default();
                let mut verdicts = Vec::with_capacity(records.len());
                let mut watched = Watched(&mut sink, watch.as_deref_mut());
                analyze_batch(&mut analyzer, &records, &deltas, hops, &mut watched, |v| {
                    verdicts.push(v)
                });
                if let Some(w) = watch.as_deref_mut() {
                    w.analysed(&mut analyzer, records.len());
                    sink.findings = w.take_findings();
                }
                send_pairings(&mut analyzer, pairings.as_ref());
                if records.is_empty() && sink.is_empty() {
                    // Nothing for the writer (an idle flush, or deltas that
                    // closed no bin): its buffer goes back without waking it.
                    let _ = spare.send(records);
                    continue;
                }
                sink.verdicts = verdicts;
                sink.records = records;
                writer.send(ToWriter::Batch(sink))?;
            }
            ToAnalyzer::Reopen => {
                if let Some(w) = watch.as_deref_mut() {
                    w.reopen();
                }
                writer.send(ToWriter::Reopen)?;
            }
            ToAnalyzer::Finish(facts) => {
                let mut sink = writer.flushing(TableBatch {
                    findings: stopped(watch.as_deref_mut(), &mut analyzer),
                    ..TableBatch::default()
                });
                let analysis = analyzer.finish(&mut sink);
                let last = sink.last();
                return writer.close(last, analysis, facts);
            }
        }
    }
    writer.abandon();
    Err(Error::Internal(
        "the record source stopped without finishing".into(),
    ))
}

/// `records` through the analyzer, each delta and telemetry hop before
/// the record it was pushed before; `verdict` gets each record's verdict
/// in order.
fn analyze_batch(
    analyzer: &mut Analyzer,
    records: &[PacketRecord],
    deltas: &[Delta],
    mut hops: Vec<Hop>,
    sink: &mut impl analyze::Sink,
    mut verdict: impl FnMut(Verdict),
) {
    // By index, not a peekable iterator: its peek moved a whole delta
    // (~100 bytes), or a whole hop row, on every record, none or not (the
    // hops' `next_if` was 4 % of the live analyzer thread; benchmarks.md).
    let (mut next, mut next_hop) = (0, 0);
    // Each record's flow key hashed once, two records ahead, for its
    // prefetch steps and its lookup (by position, in a ring of three); each
    // record loaded four ahead, before the hash's first read of it.
    let hash = |i: usize| records.get(i).and_then(|r| analyzer.key_hash(r));
    let mut hashes = [hash(0), hash(1), None];
    for (i, rec) in records.iter().enumerate() {
        while let Some((at, iface, d)) = deltas.get(next)
            && *at <= i
        {
            analyzer.apply_delta(*iface, d, sink);
            next += 1;
        }
        while let Some((at, row)) = hops.get_mut(next_hop)
            && *at <= i
        {
            analyzer.telemetry(row, sink);
            next_hop += 1;
        }
        if let Some(r) = records.get(i + 4) {
            Analyzer::prefetch_record(r);
        }
        let after_next = records.get(i + 2).and_then(|r| analyzer.key_hash(r));
        hashes[(i + 2) % 3] = after_next;
        analyzer.prefetch(hashes[(i + 1) % 3], after_next);
        verdict(analyzer.push_hashed(rec, hashes[i % 3], sink));
    }
    for (_, iface, d) in deltas.get(next..).unwrap_or_default() {
        analyzer.apply_delta(*iface, d, sink);
    }
    for (_, row) in hops.get_mut(next_hop..).unwrap_or_default() {
        analyzer.telemetry(row, sink);
    }
}

/// Inline: tells the watch `records` more were analysed and hands the
/// findings it made to the outputs.
fn watched_inline(
    watch: Option<&mut (dyn Watch + 'static)>,
    analyzer: &mut Analyzer,
    records: usize,
    outputs: &mut [Box<dyn Output>],
) -> Result<()> {
    let Some(w) = watch else { return Ok(()) };
    w.analysed(analyzer, records);
    let rows = w.take_findings();
    if !rows.is_empty() {
        for o in outputs.iter_mut() {
            o.findings(&rows)?;
        }
    }
    Ok(())
}

/// The run stops: the watch's last look, and the findings rows it made.
fn stopped(
    watch: Option<&mut (dyn Watch + 'static)>,
    analysis: &mut dyn crate::output::Analysing,
) -> Vec<crate::output::FindingRow> {
    let Some(w) = watch else { return Vec::new() };
    w.stopped(analysis);
    w.take_findings()
}

/// Hands the pairings the analyzer made to whoever watches them.
fn send_pairings(analyzer: &mut Analyzer, to: Option<&Sender<Pairing>>) {
    if let Some(tx) = to {
        for p in analyzer.take_pairings() {
            let _ = tx.send(p);
        }
    }
}

/// The writer thread: rows into every output, in the order they came.
fn write_loop(
    mut outputs: Outputs,
    rx: Receiver<ToWriter>,
    spare: Sender<Vec<PacketRecord>>,
) -> Result<Analysis> {
    use analyze::Sink;
    while let Ok(msg) = rx.recv() {
        match msg {
            ToWriter::Iface(i, name) => {
                for o in &mut outputs {
                    o.name_iface(i, &name);
                }
            }
            ToWriter::Batch(mut b) => {
                let mut all = Fanout(&mut outputs);
                for e in &b.events {
                    all.event(e);
                }
                for row in &b.timeline {
                    all.timeline(row);
                }
                for row in &b.flows {
                    all.flow(row);
                }
                for row in &b.telemetry {
                    all.telemetry(row);
                }
                for o in &mut outputs {
                    o.packets(&b.records, &b.verdicts)?;
                    if !b.findings.is_empty() {
                        o.findings(&b.findings)?;
                    }
                }
                b.records.clear();
                let _ = spare.send(b.records);
            }
            ToWriter::Reopen => {
                for o in &mut outputs {
                    o.reopen()?;
                }
            }
            ToWriter::Close(analysis, facts) => {
                close_all(outputs, &analysis, &facts)?;
                return Ok(*analysis);
            }
        }
    }
    Err(Error::Internal(
        "the analyzer stopped without finishing".into(),
    ))
}

/// Closes every output, even after one fails; returns the first error.
fn close_all(outputs: Outputs, analysis: &Analysis, facts: &RunFacts) -> Result<()> {
    let mut first_error = None;
    for o in outputs {
        if let Err(e) = o.close(analysis, facts) {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Hands events and timeline rows to every output.
struct Fanout<'a>(&'a mut [Box<dyn Output>]);

/// The analysis at the end of input, told: findings worded and Wireshark
/// filters filled in (`render::tell`), as every output writes it.
fn finished(analyzer: Analyzer, sink: &mut impl analyze::Sink) -> Analysis {
    told(analyzer.finish(sink))
}

/// `analysis` told as every output writes it (`render::tell`).
fn told(mut analysis: Analysis) -> Analysis {
    crate::render::tell(&mut analysis);
    analysis
}

impl analyze::Sink for Fanout<'_> {
    fn event(&mut self, e: &analyze::Event) {
        for o in self.0.iter_mut() {
            o.event(e);
        }
    }
    fn timeline(&mut self, row: &analyze::TimelineRow) {
        for o in self.0.iter_mut() {
            o.timeline(row);
        }
    }
    fn flow(&mut self, row: &analyze::FlowRow) {
        for o in self.0.iter_mut() {
            o.flow(row);
        }
    }
    fn telemetry(&mut self, row: &TelemetryRow) {
        for o in self.0.iter_mut() {
            o.telemetry(row);
        }
    }
}

/// Where events and timeline rows go when no tables are written.
struct Discard;

impl analyze::Sink for Discard {
    fn event(&mut self, _: &analyze::Event) {}
    fn timeline(&mut self, _: &analyze::TimelineRow) {}
    fn keeps_timeline(&self) -> bool {
        false
    }
    fn flow(&mut self, _: &analyze::FlowRow) {}
    fn keeps_flows(&self) -> bool {
        false
    }
}

/// Flow rows the end of a run hands over before the writer has them: the
/// rows of the flows live at the end once there are more than
/// `Config::rows_held` (docs/analysis.md, "Retirement").
const FINISH_BATCH_ROWS: usize = 4096;

/// The end of a run's sink: its flow rows go to the writer in batches as
/// they are made, so that they are never all held at once.
struct Flushing<'a> {
    batch: TableBatch,
    wtx: &'a SyncSender<ToWriter>,
    /// The writer stopped: the rest is dropped, its error told at the end.
    failed: bool,
}

impl Flushing<'_> {
    /// What is left to send; `None` when the writer stopped meanwhile.
    fn last(self) -> Option<TableBatch> {
        (!self.failed).then_some(self.batch)
    }
}

impl analyze::Sink for Flushing<'_> {
    fn event(&mut self, e: &analyze::Event) {
        self.batch.event(e);
    }
    fn timeline(&mut self, row: &analyze::TimelineRow) {
        self.batch.timeline(row);
    }
    fn flow(&mut self, row: &analyze::FlowRow) {
        if self.failed {
            return;
        }
        self.batch.flow(row);
        if self.batch.flows.len() >= FINISH_BATCH_ROWS {
            let full = std::mem::take(&mut self.batch);
            self.failed = self.wtx.send(ToWriter::Batch(full)).is_err();
        }
    }
    fn telemetry(&mut self, row: &TelemetryRow) {
        self.batch.telemetry(row);
    }
}

impl TableBatch {
    /// No row of any table (records and verdicts aside).
    fn is_empty(&self) -> bool {
        self.events.is_empty()
            && self.timeline.is_empty()
            && self.flows.is_empty()
            && self.telemetry.is_empty()
            && self.findings.is_empty()
    }
}

impl analyze::Sink for TableBatch {
    fn event(&mut self, e: &analyze::Event) {
        self.events.push(e.clone());
    }
    fn timeline(&mut self, row: &analyze::TimelineRow) {
        self.timeline.push(row.clone());
    }
    fn flow(&mut self, row: &analyze::FlowRow) {
        self.flows.push(row.clone());
    }
    fn telemetry(&mut self, row: &TelemetryRow) {
        self.telemetry.push(row.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nice() -> i32 {
        // SAFETY: reads the calling thread's own nice value.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
    }

    /// A yielding source runs [`SOURCE_NICE`] levels lower once the stages
    /// started, and the stages keep the priority it had before.
    #[test]
    fn a_yielding_source_runs_below_its_stages() {
        // A thread of its own: the lowered priority stays with it.
        std::thread::spawn(|| {
            let before = nice();
            let mut p =
                RecordPipeline::with_threads(analyze::Config::default(), None, Threads::Pipelined)
                    .unwrap();
            p.source_yields();
            assert_eq!(nice(), before, "nothing changes before the stages start");
            p.push(&PacketRecord::default()).unwrap();
            assert_eq!(nice(), (before + SOURCE_NICE).min(19));
            // Ours among the analyzer threads of this process (other tests
            // run pipelines too) kept the priority the test thread had. A
            // new thread names itself once it runs: wait for ours to.
            let analyzer_nices = || -> Vec<i32> {
                let mut nices = Vec::new();
                for task in std::fs::read_dir("/proc/self/task").unwrap() {
                    let dir = task.unwrap().path();
                    let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
                    if comm.trim_end() != "rocescope-analy" {
                        continue;
                    }
                    let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
                    // After the parenthesised name: state (field 3) ... nice (19).
                    let after = &stat[stat.rfind(')').unwrap() + 2..];
                    nices.push(after.split(' ').nth(16).unwrap().parse().unwrap());
                }
                nices
            };
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            let mut nices = analyzer_nices();
            while !nices.contains(&before) && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(5));
                nices = analyzer_nices();
            }
            assert!(
                nices.contains(&before),
                "analyzer threads at {nices:?}, none at {before}"
            );
            p.finish(RunFacts::default()).unwrap();
        })
        .join()
        .unwrap();
    }
}
