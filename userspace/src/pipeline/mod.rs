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
//! With more than one tap in the source, the analyzer hands its cross-tap
//! matching to a fourth thread (`analyze::hops::Feed`; docs/analysis.md,
//! "Cross-tap matching").
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
//!
//! # Parts
//!
//! This module is the source's side: [`RecordPipeline`] and what a call
//! does in each layout. The rest, one idea each: `threads` lays the
//! stages out on threads ([`Threads`]), starts them and hands them
//! batches (and lowers a yielding source's priority); `stages` is what
//! each stage thread runs (the analyzer's loop and the writer's, and the
//! analyzer stage's end of the writer thread); `messages` what they send
//! each other; `sinks` where the analyzer's rows go (every output, none,
//! or the writer in batches at the end of a run); `sharded` the analyzer
//! stage as N analyzers.
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};

use rocescope_common::PacketRecord;
use rocescope_common::summary::FlowDelta;

use crate::analyze::{self, Analysis, Analyzer, FlowKey};
use crate::output::{Output, RunFacts, Watch, Watched};
use crate::tables::TableSet;
use crate::telemetry::TelemetryRow;
use crate::transport::roce::cm::CmMessage;
use crate::{Error, Result};

mod messages;
mod sharded;
mod sinks;
mod stages;
mod threads;

use messages::{TableBatch, ToAnalyzer, ToWriter};
use sinks::{Discard, Fanout};
use stages::{Writer, close_all, finished, join, send_pairings, stopped, told, watched_inline};
use threads::{Pipelined, lower_current_thread_priority};
pub use threads::{SOURCE_NICE, Threads};

type Outputs = Vec<Box<dyn Output>>;

/// Records per batch handed between threads (200 bytes each: 800 KB).
pub const BATCH: usize = 4096;

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
        let mut config = config;
        // Pipelined with one analyzer, matching gets a thread of its own
        // (docs/benchmarks.md, "matchthread"); sharded analyzers each match
        // their own address pairs inline.
        config.match_thread = threads == Threads::Pipelined && analyzers == 1;
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
