//! The analyzer's transports beside RoCE, listed once (docs/build.md,
//! "Adding a transport", point 7): [`Transports`] holds each one's state
//! (RoCE's is the analyzer's own fields), and the methods below are every
//! step the shared code takes with them — a record of theirs
//! ([`Analyzer::push_transport`], the one arm `Analyzer::push` has for
//! them), the flows live and their retirement and interim rows (`flows`'
//! `expire`), the running summary's totals and findings input, and at the
//! end of the run their settled flows ([`Ended`]), the PSNs the capture
//! lost of them, their totals, retirement counts, findings, rows and own
//! tables, and a sharded run's merge. Each method calls each transport's
//! module (`uet`) and nothing else; the shared code names no transport
//! beyond RoCE. The parts of the shared output types these fill are the
//! other registry, `analyze/rows/transports.rs`.

pub(super) mod uet;

use rocescope_common::PacketRecord;
use rocescope_common::wire::TransportId;

use super::findings::Diagnosis;
use super::rows::{
    FlowRow, Summary, TransportInput, TransportRetirement, TransportTables, TransportTotals,
    Verdict,
};
use super::{Analysis, Analyzer, Config, Sink};

/// The state of every transport beside RoCE.
pub(super) struct Transports {
    uet: uet::Uet,
}

impl Transports {
    pub(super) fn new(config: &Config) -> Transports {
        Transports {
            uet: uet::Uet::new(config),
        }
    }

    /// Their flows live now (each a row of `flows.parquet`).
    pub(super) fn live_count(&self) -> usize {
        self.uet.pdcs.live_count()
    }

    /// No interval of theirs ends and no sweep of theirs is due before
    /// this time.
    pub(super) fn wake(&self) -> u64 {
        self.uet.pdcs.wake()
    }

    /// Makes [`Self::wake`] again once their flows moved on.
    pub(super) fn settle_wake(&mut self) {
        self.uet.pdcs.settle_wake();
    }

    /// Whether a flow of theirs retired before the end.
    pub(super) fn retired_any(&self) -> bool {
        self.uet.pdcs.retired.pdc_directions > 0
    }
}

/// Their flows live at the end of the run, settled
/// ([`Analyzer::end_transports`]).
pub(super) struct Ended {
    uet: Vec<crate::transport::uet::Pdc>,
}

/// What the transports' own findings read at the end
/// ([`Analyzer::transport_kept`]), one analyzer's or a sharded run's N
/// together ([`Kept::add`]).
pub(super) struct Kept {
    uet: Vec<crate::transport::uet::Pdc>,
}

impl Kept {
    /// Another analyzer's added after these.
    pub(super) fn add(&mut self, more: Kept) {
        self.uet.extend(more.uet);
    }

    /// Their own findings, added to `diagnoses` (ranked again when any).
    pub(super) fn findings(&self, summary: &Summary, diagnoses: &mut Vec<Diagnosis>) {
        uet::findings(&self.uet, summary, diagnoses);
    }
}

impl Ended {
    pub(super) fn is_empty(&self) -> bool {
        self.uet.is_empty()
    }
}

impl Analyzer {
    /// A record of transport `t` beside RoCE, to its flow state.
    #[inline]
    pub(super) fn push_transport(&mut self, t: TransportId, rec: &PacketRecord) -> Verdict {
        match t {
            TransportId::Uet => self.push_uet(rec),
            // RoCE's records never come here (`Analyzer::push`).
            TransportId::Roce => Verdict::default(),
        }
    }

    /// Their flows' interim rows due by `now` (`--flow-active`).
    pub(super) fn transport_intervals(&mut self, now: u64, sink: &mut impl Sink) {
        self.uet_intervals(now, sink);
    }

    /// Retires their flows idle at `now` (`--flow-idle`).
    pub(super) fn retire_transports(&mut self, now: u64, sink: &mut impl Sink) {
        self.retire_uet(now, sink);
    }

    /// Their totals, their live flows counted (what `running` reads while
    /// records still come).
    pub(super) fn live_transport_totals(&self) -> TransportTotals {
        TransportTotals {
            uet: self.uet_totals(self.transports.uet.pdcs.live()),
        }
    }

    /// What the findings read of them, their live flows after the retired
    /// ones kept as evidence.
    pub(super) fn live_transport_input(&self) -> TransportInput<'_> {
        self.uet_input(self.transports.uet.pdcs.live())
    }

    /// The end of the run: their live flows settled, the PSNs the capture
    /// lost of them added to their taps' (`capture_lost`, by interface).
    pub(super) fn end_transports(&mut self, last: u64, capture_lost: &mut [u64]) -> Ended {
        Ended {
            uet: self.end_uet(last, capture_lost),
        }
    }

    /// Their totals at the end.
    pub(super) fn transport_totals(&self, ended: &Ended) -> TransportTotals {
        TransportTotals {
            uet: self.uet_totals(&ended.uet),
        }
    }

    /// Their flows retired before the end.
    pub(super) fn transport_retirement(&self) -> TransportRetirement {
        TransportRetirement {
            retired_pdc_directions: self.uet_retired(),
        }
    }

    /// What the findings read of them at the end.
    pub(super) fn transport_input<'a>(&'a self, ended: &'a Ended) -> TransportInput<'a> {
        self.uet_input(&ended.uet)
    }

    /// What their own findings read of their flows: the ones kept as
    /// evidence (taken) and those live at the end (`ended`).
    pub(super) fn transport_kept(&mut self, ended: &Ended) -> Kept {
        Kept {
            uet: self.uet_kept(&ended.uet),
        }
    }

    /// The rows of their flows live at the end.
    pub(super) fn transport_rows<'a>(
        &'a self,
        ended: &'a Ended,
    ) -> impl Iterator<Item = FlowRow> + 'a {
        self.uet_rows(&ended.uet)
    }

    /// Their own tables.
    pub(super) fn transport_tables(&self) -> TransportTables {
        TransportTables {
            uet_paths: self.transports.uet.paths.rows(),
        }
    }
}

impl Analysis {
    /// The transports' part of another analyzer's analysis of the same run
    /// added to this one (a sharded run, `crate::shard::whole`): their
    /// totals and their own tables.
    pub fn add_transports(&mut self, more: &Analysis) {
        uet::add(self, more);
    }
}

impl TransportTotals {
    /// Another analyzer's totals of the same run added (a sharded run:
    /// `crate::shard`), rates taken again from the sums.
    pub fn add(&mut self, more: &TransportTotals) {
        uet::add_summary_totals(&mut self.uet, &more.uet);
    }
}
