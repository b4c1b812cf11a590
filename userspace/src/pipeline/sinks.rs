//! Where the analyzer's rows go: to every output ([`Fanout`]), nowhere
//! ([`Discard`], no tables), or at the end of a run to the writer in
//! batches as they are made ([`Flushing`]).
use std::sync::mpsc::SyncSender;

use super::messages::{TableBatch, ToWriter};
use crate::analyze;
use crate::output::Output;
use crate::telemetry::TelemetryRow;

/// Hands events and timeline rows to every output.
pub(super) struct Fanout<'a>(pub(super) &'a mut [Box<dyn Output>]);

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
pub(super) struct Discard;

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
pub(super) struct Flushing<'a> {
    pub(super) batch: TableBatch,
    pub(super) wtx: &'a SyncSender<ToWriter>,
    /// The writer stopped: the rest is dropped, its error told at the end.
    pub(super) failed: bool,
}

impl Flushing<'_> {
    /// What is left to send; `None` when the writer stopped meanwhile.
    pub(super) fn last(self) -> Option<TableBatch> {
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
