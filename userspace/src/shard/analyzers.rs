//! N analyzers, each owning the flows of its shards, and the merge of
//! their results (docs/live.md, "Sharded analysis").
//!
//! Records go where [`shard_of`] sends them: a RoCE, CNP or malformed
//! record to the analyzer of its address pair, a PFC or PAUSE frame to
//! every analyzer (each attributes pauses to its own flows). The merge:
//!
//! * **Flow ids** are disjoint by construction: analyzer `k` of `n`
//!   numbers its flows `k`, `k + n`, `k + 2n`, … ([`Analyzer::number_flows`]),
//!   so rows, events and findings need no renaming. With `n = 1` they are
//!   the unsharded ids.
//! * **Flow rows, timeline rows, flow events** (rewinds, gaps, NAKs, CNPs):
//!   each flow lives in one analyzer, so each comes from exactly one; the
//!   rows are put in flow id order.
//! * **PFC and PAUSE**: every analyzer holds the whole pause state; analyzer
//!   0 alone speaks for it — its `pfc_pause`/`pfc_storm` events, its PFC
//!   intervals, its PFC and PAUSE frame counts. The others' pause events
//!   are dropped.
//! * **Time** moves in every analyzer: a record one analyzer takes moves
//!   the others' clocks ([`Analyzer::pass_time`]), so the run's span (pause
//!   fractions), the taps' ends and retirement are the same in each.
//! * **Counts add** (frames by kind, less the PFC/PAUSE frames every
//!   analyzer but the first counted again).
//! * **Findings** are judged once at the end, over the N analyzers' state
//!   together ([`conclude`], [`Ending::judge`]): every flow of every
//!   analyzer, analyzer 0's pause state, the summaries merged, the
//!   aggregates merged by the types that own them. So each finding is
//!   raised once, as one analyzer raises it (tested on every sample with 2
//!   and 3 analyzers), but for what each analyzer estimates by itself
//!   ([`APART`]; docs/live.md). `congested-queue` is each analyzer's, over
//!   the switch telemetry hops of its address pairs.
use rocescope_common::PacketRecord;

use super::{Shard, shard_of};
use crate::analyze::{
    self, Analysis, Analyzer, Diagnosis, Ending, Event, EventKind, FlowRow, FrameCounts,
    PfcInterval, Sink, TimelineRow, Verdict,
};

/// The findings whose evidence reads what each analyzer of a sharded run
/// estimates by itself, so that their impact may differ from one
/// analyzer's (docs/live.md, "What a sharded run writes differently"):
/// `hop-loss` and `hop-queueing` read `hops.parquet`, whose matches and
/// delays use each analyzer's estimate of the taps' clock offsets, from its
/// own address pairs' frames. Their severity and flows are one analyzer's
/// on every sample.
pub const APART: [&str; 2] = ["hop-loss", "hop-queueing"];

/// `n` analyzers fed by [`shard_of`].
pub struct Shards {
    analyzers: Vec<Analyzer>,
}

/// The merge of the analyzers' results at the end of a run.
#[derive(Debug)]
pub struct Merged {
    /// Every analyzer's rows held at the end, by flow id.
    pub flows: Vec<FlowRow>,
    /// Analyzer 0's (the whole pause state).
    pub pfc: Vec<PfcInterval>,
    /// Ranked; see the module docs for what is merged.
    pub diagnoses: Vec<Diagnosis>,
    pub frames: FrameCounts,
    /// Each analyzer's own analysis (its findings: its `congested-queue`
    /// only), for what is merged later (`shard::whole`).
    pub shards: Vec<Analysis>,
}

impl Shards {
    pub fn new(config: &analyze::Config, n: usize) -> Self {
        let n = n.max(1);
        let analyzers = (0..n)
            .map(|k| {
                let mut a = Analyzer::new(config.clone());
                a.number_flows(k as u32, n as u32);
                a
            })
            .collect();
        Shards { analyzers }
    }

    pub fn len(&self) -> usize {
        self.analyzers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.analyzers.is_empty()
    }

    /// Names interface `iface` in every analyzer.
    pub fn name_iface(&mut self, iface: u16, name: &str) {
        for a in &mut self.analyzers {
            a.set_iface_name(iface, name);
        }
    }

    /// One record to its analyzer (a PFC or PAUSE frame to each): the
    /// verdict of the analyzer that owns it (analyzer 0's for PFC/PAUSE).
    pub fn push(&mut self, rec: &PacketRecord, sink: &mut impl Sink) -> Verdict {
        let n = self.analyzers.len();
        match shard_of(rec, n) {
            Shard::One(k) => {
                for (i, a) in self.analyzers.iter_mut().enumerate() {
                    if i != k {
                        a.pass_time(rec, sink);
                    }
                }
                self.analyzers[k].push(rec, sink)
            }
            Shard::Every => {
                let (first, rest) = self.analyzers.split_at_mut(1);
                let verdict = first[0].push(rec, sink);
                for a in rest {
                    a.push(rec, &mut PauseCopies(sink));
                }
                verdict
            }
        }
    }

    /// Ends every analyzer and merges their results (module docs).
    pub fn finish(self, sink: &mut impl Sink) -> Merged {
        let mut ends = Vec::with_capacity(self.analyzers.len());
        for (k, a) in self.analyzers.into_iter().enumerate() {
            ends.push(if k == 0 {
                a.end(sink)
            } else {
                a.end(&mut PauseCopies(sink))
            });
        }
        conclude(ends, sink)
    }
}

/// The end of a sharded run once every analyzer ended (in analyzer
/// order): the findings judged once over the N analyzers together, over
/// their summaries merged ([`Ending::judge`]), then each analyzer's rows
/// (its end-of-run rows to `sink`, pause events from analyzer 0 only),
/// merged ([`merge`]).
pub fn conclude(mut ends: Vec<Ending>, sink: &mut impl Sink) -> Merged {
    let judged = match ends.split_first() {
        None => Vec::new(),
        Some((first, rest)) => {
            let rest: Vec<&analyze::Summary> = rest.iter().map(|e| &e.summary).collect();
            let summary = super::summary::summary(&first.summary, &rest);
            Ending::judge(&mut ends, Some(&summary))
        }
    };
    let mut shards = Vec::with_capacity(ends.len());
    for (k, e) in ends.into_iter().enumerate() {
        shards.push(if k == 0 {
            e.conclude(Vec::new(), &judged, sink)
        } else {
            e.conclude(Vec::new(), &judged, &mut PauseCopies(sink))
        });
    }
    merge(shards, judged)
}

/// The merge rules of the module docs over the analyzers' analyses, the
/// findings `judged` over them together: with each analyzer's switch
/// queues' (`congested-queue`, judged over its own hops), ranked.
pub fn merge(shards: Vec<Analysis>, judged: Vec<Diagnosis>) -> Merged {
    let mut flows: Vec<FlowRow> = shards.iter().flat_map(|a| a.flows.clone()).collect();
    flows.sort_unstable_by_key(|r| r.flow_id);
    let pfc = shards.first().map(|a| a.pfc.clone()).unwrap_or_default();
    let mut diagnoses = judged;
    let queues = shards.iter().flat_map(|a| a.diagnoses.iter().cloned());
    let before = diagnoses.len();
    diagnoses.extend(queues);
    if diagnoses.len() > before {
        analyze::findings::rank_diagnoses(&mut diagnoses);
        analyze::findings::queues::cite(&mut diagnoses);
    }
    let mut frames = FrameCounts::default();
    for (k, a) in shards.iter().enumerate() {
        frames.add(&a.summary.frames, k == 0);
    }
    Merged {
        flows,
        pfc,
        diagnoses,
        frames,
        shards,
    }
}

/// The sink of an analyzer other than the first: its pause events are
/// copies of analyzer 0's and are dropped; its flows' go through.
pub(crate) struct PauseCopies<'a, S: Sink>(pub(crate) &'a mut S);

impl<S: Sink> Sink for PauseCopies<'_, S> {
    fn event(&mut self, e: &Event) {
        if !matches!(e.kind, EventKind::PfcPause | EventKind::PfcStorm) {
            self.0.event(e);
        }
    }
    fn timeline(&mut self, row: &TimelineRow) {
        self.0.timeline(row);
    }
    fn keeps_timeline(&self) -> bool {
        self.0.keeps_timeline()
    }
    fn flow(&mut self, row: &FlowRow) {
        self.0.flow(row);
    }
    fn keeps_flows(&self) -> bool {
        self.0.keeps_flows()
    }
    fn telemetry(&mut self, row: &crate::telemetry::TelemetryRow) {
        self.0.telemetry(row);
    }
}

#[cfg(test)]
mod tests;
