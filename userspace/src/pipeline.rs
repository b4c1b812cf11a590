//! The stage every source shares: records → analyzer → outputs.
//!
//! The offline reader and the live tap both hand finished `PacketRecord`s
//! (frame number, timestamp and interface index set) to a [`RecordPipeline`];
//! what happens after that is the same code for both. Where the results go
//! is a list of [`Output`]s: the `--out` tables ([`TableSet`]), a
//! partitioned dataset ([`crate::tables::dataset::DatasetWriter`]), the HTML
//! report ([`crate::html::HtmlReport`]), or none at all (`report`).
use std::path::Path;

use rocescope_common::PacketRecord;

use crate::Result;
use crate::analyze::{self, Analysis, Analyzer, Verdict};
use crate::tables::{RunFacts, TableSet};

/// Somewhere the analysis goes: it sees every record with the analyzer's
/// verdict, every event and timeline row as it becomes final (through
/// [`analyze::Sink`]), and the finished analysis at the end.
pub trait Output: analyze::Sink {
    /// Names interface `iface` (indices are handed out in order).
    fn name_iface(&mut self, iface: u16, name: &str);
    fn packet(&mut self, rec: &PacketRecord, verdict: Verdict) -> Result<()>;
    /// Writes whatever is left and completes every file.
    fn close(self: Box<Self>, analysis: &Analysis, facts: &RunFacts) -> Result<()>;
}

pub struct RecordPipeline {
    analyzer: Analyzer,
    outputs: Vec<Box<dyn Output>>,
    records: u64,
}

impl RecordPipeline {
    /// With `out`, every table is written there; without, only the analysis
    /// is kept (`report`) unless [`Self::add_output`] adds somewhere to go.
    pub fn new(config: analyze::Config, out: Option<&Path>) -> Result<Self> {
        let mut outputs: Vec<Box<dyn Output>> = Vec::new();
        if let Some(dir) = out {
            outputs.push(Box::new(TableSet::create(dir)?));
        }
        Ok(Self {
            analyzer: Analyzer::new(config),
            outputs,
            records: 0,
        })
    }

    /// Sends the results to `output` too (before the first record).
    pub fn add_output(&mut self, output: Box<dyn Output>) {
        self.outputs.push(output);
    }

    /// Names interface `iface` for the tables and the findings.
    pub fn name_iface(&mut self, iface: u16, name: &str) {
        self.analyzer.set_iface_name(iface, name);
        for o in &mut self.outputs {
            o.name_iface(iface, name);
        }
    }

    pub fn push(&mut self, rec: &PacketRecord) -> Result<()> {
        self.records += 1;
        if self.outputs.is_empty() {
            self.analyzer.push(rec, &mut Discard);
            return Ok(());
        }
        let verdict = self.analyzer.push(rec, &mut Fanout(&mut self.outputs));
        for o in &mut self.outputs {
            o.packet(rec, verdict)?;
        }
        Ok(())
    }

    /// A CM REQ/REP found in a record's payload (offline only: the live
    /// tap's records carry no payload).
    pub fn cm(&mut self, rec: &PacketRecord, msg: crate::decode::cm::CmMessage) {
        self.analyzer.cm(rec, msg);
    }

    /// Records pushed so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Ends the analysis and completes every output (`facts.records` is
    /// filled in here). Every output is closed even when one fails; the
    /// first error is returned.
    pub fn finish(mut self, mut facts: RunFacts) -> Result<Analysis> {
        facts.records = self.records;
        let analysis = self.analyzer.finish(&mut Fanout(&mut self.outputs));
        let mut first_error = None;
        for o in self.outputs {
            if let Err(e) = o.close(&analysis, &facts) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(analysis), Err)
    }
}

/// Where events and timeline rows go when nothing is written.
struct Discard;

impl analyze::Sink for Discard {
    fn event(&mut self, _: &analyze::Event) {}
    fn timeline(&mut self, _: &analyze::TimelineRow) {}
}

/// Hands events and timeline rows to every output.
struct Fanout<'a>(&'a mut [Box<dyn Output>]);

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
}
