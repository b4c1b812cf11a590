//! The stage every source shares: records → analyzer → tables.
//!
//! The offline reader and the live tap both hand finished `PacketRecord`s
//! (frame number, timestamp and interface index set) to a [`RecordPipeline`];
//! what happens after that is the same code for both.
use std::path::Path;

use rocescope_common::PacketRecord;

use crate::Result;
use crate::analyze::{self, Analysis, Analyzer};
use crate::tables::{RunFacts, TableSet};

pub struct RecordPipeline {
    analyzer: Analyzer,
    tables: Option<TableSet>,
    records: u64,
}

impl RecordPipeline {
    /// With `out`, every table is written there; without, only the analysis
    /// is kept (`report`).
    pub fn new(config: analyze::Config, out: Option<&Path>) -> Result<Self> {
        Ok(Self {
            analyzer: Analyzer::new(config),
            tables: out.map(TableSet::create).transpose()?,
            records: 0,
        })
    }

    /// Names interface `iface` for the tables and the findings.
    pub fn name_iface(&mut self, iface: u16, name: &str) {
        self.analyzer.set_iface_name(iface, name);
        if let Some(t) = self.tables.as_mut() {
            t.set_iface_name(iface, name);
        }
    }

    pub fn push(&mut self, rec: &PacketRecord) -> Result<()> {
        self.records += 1;
        match self.tables.as_mut() {
            Some(t) => {
                let verdict = self.analyzer.push(rec, t);
                t.packet(rec, verdict)
            }
            None => {
                self.analyzer.push(rec, &mut Discard);
                Ok(())
            }
        }
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

    /// Ends the analysis and completes every table (`facts.records` is
    /// filled in here).
    pub fn finish(mut self, mut facts: RunFacts) -> Result<Analysis> {
        facts.records = self.records;
        match self.tables.take() {
            Some(mut t) => {
                let analysis = self.analyzer.finish(&mut t);
                t.close(&analysis, &facts)?;
                Ok(analysis)
            }
            None => Ok(self.analyzer.finish(&mut Discard)),
        }
    }
}

/// Where events and timeline rows go when no tables are written.
struct Discard;

impl analyze::Sink for Discard {
    fn event(&mut self, _: &analyze::Event) {}
    fn timeline(&mut self, _: &analyze::TimelineRow) {}
}
