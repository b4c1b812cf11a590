//! The stage every source shares: records → analyzer → tables.
//!
//! The offline reader and the live tap both hand finished `PacketRecord`s
//! (frame number, timestamp and interface index set) to a [`RecordPipeline`];
//! what happens after that is the same code for both.
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
//!     writer thread: Arrow builders, Parquet encoding, files
//! ```
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
use std::path::Path;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;

use rocescope_common::PacketRecord;

use crate::analyze::{self, Analysis, Analyzer, Event, TimelineRow, Verdict};
use crate::tables::{RunFacts, TableSet};
use crate::{Error, Result};

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
}

enum Stage {
    Inline {
        analyzer: Box<Analyzer>,
        tables: Option<Box<TableSet>>,
    },
    Pipelined(Pipelined),
    /// A stage thread failed; its error was returned once.
    Failed(String),
}

struct Pipelined {
    batch: Vec<PacketRecord>,
    tx: SyncSender<ToAnalyzer>,
    /// Emptied record buffers coming back.
    spare: Receiver<Vec<PacketRecord>>,
    analyzer: JoinHandle<Result<Analysis>>,
}

enum ToAnalyzer {
    Iface(u16, String),
    Records(Vec<PacketRecord>),
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
}

enum ToWriter {
    Iface(u16, String),
    Batch(TableBatch),
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
        let analyzer = Analyzer::new(config);
        let pipelined = threads == Threads::Pipelined;
        let tables = out
            .map(|dir| TableSet::create_with(dir, pipelined))
            .transpose()?;
        let stage = match threads {
            Threads::Inline => Stage::Inline {
                analyzer: Box::new(analyzer),
                tables: tables.map(Box::new),
            },
            Threads::Pipelined => Stage::Pipelined(Pipelined::start(analyzer, tables, out)?),
        };
        Ok(Self { records: 0, stage })
    }

    /// Names interface `iface` for the tables and the findings.
    pub fn name_iface(&mut self, iface: u16, name: &str) {
        match &mut self.stage {
            Stage::Inline { analyzer, tables } => {
                analyzer.set_iface_name(iface, name);
                if let Some(t) = tables.as_mut() {
                    t.set_iface_name(iface, name);
                }
            }
            Stage::Pipelined(p) => {
                // Records before it go first; a failure shows at the next push.
                if p.flush().is_ok() {
                    let _ = p.tx.send(ToAnalyzer::Iface(iface, name.to_string()));
                }
            }
            Stage::Failed(_) => {}
        }
    }

    pub fn push(&mut self, rec: &PacketRecord) -> Result<()> {
        self.records += 1;
        match &mut self.stage {
            Stage::Inline { analyzer, tables } => match tables.as_mut() {
                Some(t) => {
                    let verdict = analyzer.push(rec, &mut **t);
                    t.packet(rec, verdict)
                }
                None => {
                    analyzer.push(rec, &mut Discard);
                    Ok(())
                }
            },
            Stage::Pipelined(p) => {
                p.batch.push(*rec);
                if p.batch.len() >= BATCH && p.flush().is_err() {
                    return Err(self.fail());
                }
                Ok(())
            }
            Stage::Failed(msg) => Err(Error::Usage(format!("the analysis stopped earlier: {msg}"))),
        }
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

    /// Records pushed so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Ends the analysis and completes every table (`facts.records` is
    /// filled in here).
    pub fn finish(mut self, mut facts: RunFacts) -> Result<Analysis> {
        facts.records = self.records;
        match std::mem::replace(&mut self.stage, Stage::Failed(String::new())) {
            Stage::Inline {
                analyzer,
                tables: Some(mut t),
            } => {
                let analysis = analyzer.finish(&mut *t);
                t.close(&analysis, &facts)?;
                Ok(analysis)
            }
            Stage::Inline {
                analyzer,
                tables: None,
            } => Ok(analyzer.finish(&mut Discard)),
            Stage::Pipelined(mut p) => {
                let sent =
                    p.flush().is_ok() && p.tx.send(ToAnalyzer::Finish(Box::new(facts))).is_ok();
                drop(p.tx);
                let result = join(p.analyzer);
                if result.is_ok() && !sent {
                    return Err(Error::Usage("the analyzer thread stopped early".into()));
                }
                result
            }
            Stage::Failed(msg) => Err(Error::Usage(format!("the analysis stopped earlier: {msg}"))),
        }
    }

    /// A stage thread is gone: collect its error, remember that it failed.
    fn fail(&mut self) -> Error {
        let stage = std::mem::replace(&mut self.stage, Stage::Failed(String::new()));
        let err = match stage {
            Stage::Pipelined(p) => {
                drop(p.tx);
                match join(p.analyzer) {
                    Err(e) => e,
                    Ok(_) => Error::Usage("the analyzer thread stopped early".into()),
                }
            }
            _ => Error::Usage("the analysis stopped earlier".into()),
        };
        self.stage = Stage::Failed(err.to_string());
        err
    }
}

impl Pipelined {
    fn start(analyzer: Analyzer, tables: Option<TableSet>, out: Option<&Path>) -> Result<Self> {
        let (tx, rx) = sync_channel::<ToAnalyzer>(DEPTH);
        let (spare_tx, spare) = channel();
        let spawn_error = |what: &str, e: std::io::Error| Error::Write {
            path: out.map(Path::to_path_buf).unwrap_or_default(),
            detail: format!("cannot start the {what} thread: {e}"),
        };
        let writer = match tables {
            Some(t) => {
                let (wtx, wrx) = sync_channel::<ToWriter>(DEPTH);
                let spare_tx = spare_tx.clone();
                let handle = std::thread::Builder::new()
                    .name("rocescope-write".into())
                    .spawn(move || write_loop(t, wrx, spare_tx))
                    .map_err(|e| spawn_error("table writer", e))?;
                Some((wtx, handle))
            }
            None => None,
        };
        let analyzer = std::thread::Builder::new()
            .name("rocescope-analyze".into())
            .spawn(move || analyze_loop(analyzer, rx, writer, spare_tx))
            .map_err(|e| spawn_error("analyzer", e))?;
        Ok(Self {
            batch: Vec::with_capacity(BATCH),
            tx,
            spare,
            analyzer,
        })
    }

    /// Sends the current batch (if any); `Err` when the analyzer is gone.
    fn flush(&mut self) -> std::result::Result<(), ()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let next = self
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH));
        let full = std::mem::replace(&mut self.batch, next);
        self.tx.send(ToAnalyzer::Records(full)).map_err(|_| ())
    }
}

fn join(handle: JoinHandle<Result<Analysis>>) -> Result<Analysis> {
    handle.join().unwrap_or_else(|_| {
        Err(Error::Usage(
            "internal error: a pipeline thread panicked".into(),
        ))
    })
}

/// The analyzer thread: records in, verdicts (and events, timeline rows)
/// out to the writer thread; returns the analysis once the writer is done.
fn analyze_loop(
    mut analyzer: Analyzer,
    rx: Receiver<ToAnalyzer>,
    writer: Option<(SyncSender<ToWriter>, JoinHandle<Result<Analysis>>)>,
    spare: Sender<Vec<PacketRecord>>,
) -> Result<Analysis> {
    let Some((wtx, whandle)) = writer else {
        // No tables: analyse and hand the buffers straight back.
        while let Ok(msg) = rx.recv() {
            match msg {
                ToAnalyzer::Iface(i, name) => analyzer.set_iface_name(i, &name),
                ToAnalyzer::Records(mut recs) => {
                    for rec in &recs {
                        analyzer.push(rec, &mut Discard);
                    }
                    recs.clear();
                    let _ = spare.send(recs);
                }
                ToAnalyzer::Finish(_) => return Ok(analyzer.finish(&mut Discard)),
            }
        }
        return Err(Error::Usage(
            "the record source stopped without finishing".into(),
        ));
    };
    // The writer's own error explains a closed channel better than we can.
    let writer_failed = |whandle: JoinHandle<Result<Analysis>>| -> Error {
        match whandle.join() {
            Ok(Err(e)) => e,
            _ => Error::Usage("internal error: the table writer thread stopped".into()),
        }
    };
    while let Ok(msg) = rx.recv() {
        match msg {
            ToAnalyzer::Iface(i, name) => {
                analyzer.set_iface_name(i, &name);
                if wtx.send(ToWriter::Iface(i, name)).is_err() {
                    return Err(writer_failed(whandle));
                }
            }
            ToAnalyzer::Records(records) => {
                let mut sink = TableBatch {
                    verdicts: Vec::with_capacity(records.len()),
                    ..TableBatch::default()
                };
                for rec in &records {
                    let v = analyzer.push(rec, &mut sink);
                    sink.verdicts.push(v);
                }
                sink.records = records;
                if wtx.send(ToWriter::Batch(sink)).is_err() {
                    return Err(writer_failed(whandle));
                }
            }
            ToAnalyzer::Finish(facts) => {
                let mut sink = TableBatch::default();
                let analysis = analyzer.finish(&mut sink);
                if wtx.send(ToWriter::Batch(sink)).is_err()
                    || wtx
                        .send(ToWriter::Close(Box::new(analysis), facts))
                        .is_err()
                {
                    return Err(writer_failed(whandle));
                }
                drop(wtx);
                return whandle.join().unwrap_or_else(|_| {
                    Err(Error::Usage(
                        "internal error: the table writer thread panicked".into(),
                    ))
                });
            }
        }
    }
    Err(Error::Usage(
        "the record source stopped without finishing".into(),
    ))
}

/// The writer thread: rows into the tables, in the order they came.
fn write_loop(
    mut tables: TableSet,
    rx: Receiver<ToWriter>,
    spare: Sender<Vec<PacketRecord>>,
) -> Result<Analysis> {
    use analyze::Sink;
    while let Ok(msg) = rx.recv() {
        match msg {
            ToWriter::Iface(i, name) => tables.set_iface_name(i, &name),
            ToWriter::Batch(mut b) => {
                for e in &b.events {
                    tables.event(e);
                }
                for row in &b.timeline {
                    tables.timeline(row);
                }
                for (rec, v) in b.records.iter().zip(&b.verdicts) {
                    tables.packet(rec, *v)?;
                }
                b.records.clear();
                let _ = spare.send(b.records);
            }
            ToWriter::Close(analysis, facts) => {
                tables.close(&analysis, &facts)?;
                return Ok(*analysis);
            }
        }
    }
    Err(Error::Usage(
        "the analyzer stopped without finishing".into(),
    ))
}

/// Where events and timeline rows go when no tables are written.
struct Discard;

impl analyze::Sink for Discard {
    fn event(&mut self, _: &analyze::Event) {}
    fn timeline(&mut self, _: &analyze::TimelineRow) {}
}

impl analyze::Sink for TableBatch {
    fn event(&mut self, e: &analyze::Event) {
        self.events.push(e.clone());
    }
    fn timeline(&mut self, row: &analyze::TimelineRow) {
        self.timeline.push(row.clone());
    }
}
