//! What the stages send each other: the source's messages to the analyzer
//! thread ([`ToAnalyzer`]), the analyzer's to the writer ([`ToWriter`]),
//! and the batch of rows between them ([`TableBatch`]).
use rocescope_common::PacketRecord;
use rocescope_common::summary::FlowDelta;

use crate::analyze::{self, Analysis, Event, TimelineRow, Verdict};
use crate::output::RunFacts;
use crate::telemetry::TelemetryRow;
use crate::transport::roce::cm::CmMessage;

/// A flow delta to apply before the record at this index of its batch.
pub(super) type Delta = (usize, u16, FlowDelta);

/// A telemetry hop to join before the record at this index of its batch
/// (after the record that carried it).
pub(super) type Hop = (usize, TelemetryRow);

pub(super) enum ToAnalyzer {
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
pub(super) struct TableBatch {
    pub(super) records: Vec<PacketRecord>,
    pub(super) verdicts: Vec<Verdict>,
    pub(super) events: Vec<Event>,
    pub(super) timeline: Vec<TimelineRow>,
    /// Rows of flows that retired.
    pub(super) flows: Vec<analyze::FlowRow>,
    /// Telemetry hops, joined to their flows.
    pub(super) telemetry: Vec<TelemetryRow>,
    /// Findings that started, continued or ended ([`Watch::take_findings`]).
    pub(super) findings: Vec<crate::output::FindingRow>,
}

pub(super) enum ToWriter {
    Iface(u16, String),
    Batch(TableBatch),
    Reopen,
    Close(Box<Analysis>, Box<RunFacts>),
}

impl TableBatch {
    /// No row of any table (records and verdicts aside).
    pub(super) fn is_empty(&self) -> bool {
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
