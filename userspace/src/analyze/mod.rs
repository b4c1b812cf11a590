//! The streaming analyzer: [`PacketRecord`]s in capture order in, per-flow
//! statistics, events, PFC pause intervals, per-time-bin timelines and
//! findings out.
//!
//! Memory grows with the number of flows live at once and PFC intervals,
//! never with the number of packets: events, timeline rows and the rows of
//! flows that retire as they go idle go to a [`Sink`] as soon as they are
//! final; the flows live at the end, PFC intervals and the summary come
//! from [`Analyzer::finish`].
//!
//! Every definition — flows, pairing, retransmissions, rewinds, ghost
//! retransmissions, gaps and their resolution, mirror duplicates, ICRC and
//! sniffer captures, PFC, victims, CNPs, findings — is written once, in
//! [`docs/analysis.md`](../../../docs/analysis.md); the columns are in
//! `docs/tables.md`.
//!
//! The rooms, one concern each, in layers: a room uses only rooms of the
//! layers before it, or of its own layer one way (`sequence` → `rewind` →
//! `responses`), never a later one (`scripts/module-cycles.py`, run by
//! `scripts/test.sh`, fails on a cycle; docs/build.md):
//!
//! This module computes; `crate::render` tells (words the findings, formats
//! the report, builds Wireshark filters) and is never imported here.
//!
//! 1. leaves: [`psn`]: RoCE's PSN arithmetic (from `transport::roce`);
//!    [`hash`]: the maps' hasher;
//!    trackers with output types of their own: [`dups`]: mirror copies;
//!    [`gaps`]: the counts of missing PSNs by fate; [`rto`]: the NIC's
//!    retransmission timeout; [`hops`]: cross-tap frame matching, tap-pair
//!    clock offsets and the hop table (`hops/clocks.rs`, `hops/sketch.rs`,
//!    `hops/tally.rs`);
//!    `livelock`: the same PSN resent over and over; `dcqcn`: how a
//!    sender's rate answers its CNPs; `nics`: how fast each NIC reacts
//!    (NAK and CNP generation, NAK reaction, timeouts); `totals`:
//!    `summary.json`'s totals and per-tap, per-priority tallies;
//! 2. `rows`: every output type — the flow key, the tables' rows,
//!    `summary.json`, a worded `Finding`, the PFC trees, a finding's
//!    Wireshark hand-off, the closed sets' enums (`Severity`, `Trigger`,
//!    `PauseEnd`, `NodeKind`); `events`: an event and its typed `detail`
//!    (`EventKind`, `EventDetail`, worded by `crate::render::events`); the
//!    modules that own the data build them, each transport's part beside
//!    RoCE's a type of `rows/transports.rs` (the registry of the shared
//!    types' parts); `sums`: the rows of every flow when retired flows'
//!    rows went to the output already;
//! 3. per-record trackers that name no `Flow` (they are given the values
//!    they need): `pfc`: pause intervals; `responses`: ACKs and NAKs;
//!    `rewind`: rewinds and timeout rewinds; `sequence`: what request
//!    flows' sequencing judged (`crate::transport::sequencing::Sequencing`,
//!    RoCE's go-back-N in `crate::transport::roce::sequencing`), acted on; `qos`: the DSCP and PCP marks per tap and per flow;
//!    `ecmp`: the load of ECMP group members; `taps`: per-tap state, ICRC
//!    and sniffer captures; `cm`: pairing hints from CM REQ/REP; made from
//!    rows: [`tree`]: the congestion tree; [`topology`]: the `--topology`
//!    file;
//! 4. `flows`: the flow table, a BTH frame's per-flow counters, pairing, a
//!    flow's row, its timeline bins (`flows/timeline.rs`), retirement and
//!    interim rows (`flows/retire.rs`, `flows/interim.rs`) and what is kept
//!    of retired flows (`flows/kept.rs`); `cnp`: CNP
//!    attribution; `delta`: the live tap's summary-mode deltas;
//! 5. `findings/`: `input.rs`, the `Input` every finding reads and the
//!    helpers findings share; then one file per finding family
//!    (retransmissions, the capture, PFC, ECN, livelock, unanswered flows,
//!    MTU, ECMP balance, QoS, CNP overload, DCQCN, hops, congestion
//!    episodes), each computing its evidence struct from `input` and
//!    layers 1–4, never another finding file nor the collector;
//! 6. `findings/mod.rs`: [`Diagnosis`] and [`Evidence`], and the collector,
//!    which runs every finding and ranks them; `finish`: the end of input;
//!    `transports`: the transports beside RoCE, listed once (their state,
//!    a record's dispatch, retirement, the running summary's parts and the
//!    end of the run's steps; UET's in `transports/uet.rs`, a PDC
//!    direction's flow row made as `flows` makes a QP's), which `push`,
//!    `finish`, `running` and `flows`' retirement call as the `Analyzer`'s
//!    methods;
//!    `running`: what a monitor reads while records still come (the live
//!    tap's metrics);
//! 7. here: [`Analysis`], the [`Config`], the [`Sink`] and the [`Analyzer`]'s state and
//!    its entry point [`Analyzer::push`]. The rooms that add the
//!    `Analyzer`'s methods (`impl Analyzer` in `flows`, `sequence`,
//!    `responses`, `cnp`, `finish` …) use its fields, not the rooms above
//!    them.
//!
//! A tracker with a finding is two files: its state here (`dcqcn.rs`,
//! `livelock.rs`, `qos.rs`, `ecmp.rs`), its finding in `findings/`.

mod cache;
mod cm;
mod cnp;
mod compact;
mod config;
mod count;
mod dcqcn;
mod delta;
pub mod dups;
mod ecmp;
mod events;
mod facts;
pub mod findings;
mod finish;
mod flows;
pub mod gaps;
pub mod hash;
pub mod hops;
mod judge;
pub mod livelock;
mod nics;
mod pfc;
pub mod psn;
pub(crate) mod qos;
mod responses;
mod rewind;
mod rows;
pub mod rto;
mod running;
mod sequence;
mod sums;
mod taps;
pub mod telemetry;
#[cfg(test)]
pub(crate) mod tests;
pub mod topology;
mod totals;
mod transports;
pub mod tree;
mod trims;

use std::collections::BTreeMap;

use hash::FastMap;

use rocescope_common::wire::TransportId;
use rocescope_common::{Kind, PacketRecord, flags};

pub use config::{Config, DEFAULT_FLOW_ACTIVE_NS, DEFAULT_FLOW_IDLE_NS, DEFAULT_ROWS_HELD};
pub use ecmp::EcmpGroup;
pub use events::{
    CnpDetail, Event, EventDetail, EventKind, LatePsn, Missing, NakDetail, PauseStart, PausedIdle,
    ResolvedPsns, RewindDetail, Storm,
};
pub use facts::CaptureFact;
pub(crate) use findings::input::{share, timeout_exponent};
pub use findings::{Diagnosis, Evidence};
pub(crate) use findings::{rank_by, rank_findings};
pub use finish::Ending;
pub(crate) use flows::{Flow, FlowTable};
pub use nics::Latency;
pub use nics::{LatencySummary, NicRow};
use pfc::PfcTracker;
pub use pfc::SenderPauses;
pub(crate) use rows::iface_name;
pub use rows::{
    Finding, FlowKey, FlowRow, FrameCounts, GapClass, Handoff, IfaceOrigin, MatchingSummary,
    NodeKind, PauseEnd, PfcInterval, PfcSummary, Reaction, Retirement, Severity, Summary,
    TapSummary, TimelineRow, Totals, TransportFrames, TransportRetirement, TransportRow,
    TransportTables, TransportTotals, Trigger, Verdict,
};
pub use running::{Interim, PriorityPauses, Running, RunningTotals, TapEnd};
pub use sums::{RowGroup, RowSums};
use taps::TapState;

/// Everything [`Analyzer::finish`] returns.
#[derive(Clone, Debug, PartialEq)]
pub struct Analysis {
    /// The rows the run holds at its end, by flow id: the flows live then,
    /// and the retired flows kept as the findings' evidence
    /// (docs/analysis.md, "Retirement"; the rows of every retired flow went
    /// to the [`Sink`] as it retired).
    pub flows: Vec<FlowRow>,
    /// The ids of the rows in `flows` that the sink has had already.
    pub written: std::collections::BTreeSet<u32>,
    /// The rows of every retired flow, summed per tap and marks: what
    /// readers of every row (counter reconciliation, `diff`) add to the
    /// rows not written ([`Analysis::unwritten_flows`]).
    pub retired_sums: std::collections::BTreeMap<RowGroup, RowSums>,
    pub pfc: Vec<PfcInterval>,
    /// `hops.parquet` (empty with one tap).
    pub hops: Vec<hops::HopRow>,
    /// `nics.parquet`: how fast each NIC reacts.
    pub nics: Vec<nics::NicRow>,
    /// The transports' own tables beside RoCE's (`rows/transports.rs`).
    pub transport_tables: TransportTables,
    /// `summary.findings` is empty until `crate::render::tell` words these.
    pub summary: Summary,
    /// The findings as computed, ranked (docs/analysis.md, "Findings").
    pub diagnoses: Vec<Diagnosis>,
    /// What limits what the capture can show; `summary.capture_facts` is
    /// empty until `crate::render::tell` words these.
    pub facts: Vec<CaptureFact>,
    /// Per interface index: where it comes from, for Wireshark filters.
    pub origins: Vec<IfaceOrigin>,
}

/// Receives events, timeline rows and the rows of retired flows as soon as
/// they are final.
pub trait Sink {
    fn event(&mut self, e: &Event);
    fn timeline(&mut self, row: &TimelineRow);
    /// Whether it keeps timeline rows: when not, no flow holds a bin.
    fn keeps_timeline(&self) -> bool {
        true
    }
    /// A flow's row, written as it retires (docs/analysis.md,
    /// "Retirement"); the flows live at the end come in [`Analysis::flows`].
    fn flow(&mut self, row: &FlowRow);
    /// Whether it keeps flow rows: when not, the rows it is handed carry
    /// no Wireshark filters (a string or two per flow, made for nothing),
    /// and the flows live at the end of a run that retire then
    /// (`Config::rows_held`) are not handed to it at all.
    fn keeps_flows(&self) -> bool {
        true
    }
    /// A switch telemetry hop, its flow joined as it arrived
    /// ([`Analyzer::telemetry`]; `telemetry.parquet`).
    fn telemetry(&mut self, _row: &crate::telemetry::TelemetryRow) {}
}

/// Collects everything in memory (tests, small captures).
#[derive(Debug, Default)]
pub struct VecSink {
    pub events: Vec<Event>,
    pub timeline: Vec<TimelineRow>,
    pub flows: Vec<FlowRow>,
    pub telemetry: Vec<crate::telemetry::TelemetryRow>,
}

impl Sink for VecSink {
    fn telemetry(&mut self, row: &crate::telemetry::TelemetryRow) {
        self.telemetry.push(row.clone());
    }
    fn event(&mut self, e: &Event) {
        self.events.push(e.clone());
    }
    fn timeline(&mut self, row: &TimelineRow) {
        self.timeline.push(row.clone());
    }
    fn flow(&mut self, row: &FlowRow) {
        self.flows.push(row.clone());
    }
}

/// The streaming analyzer.
pub struct Analyzer {
    config: Config,
    flows: FlowTable,
    /// The flows' open timeline bins.
    bins: flows::timeline::OpenBins,
    by_key: flows::FlowIndex,
    /// The flows of each host pair.
    by_hosts: flows::HostIndex,
    /// CNPs per `(iface, CNP src, CNP dst, CNP dest QP)`.
    cnp_counts: FastMap<FlowKey, flows::CnpCount>,
    /// CM-learned pairings: request flow key → requester QP.
    hints: FastMap<FlowKey, u32>,
    /// CM REQs awaiting their REP: (iface, active ip, passive ip, comm id) →
    /// active QP and the connection's retry count.
    cm_requests: FastMap<(u16, [u8; 16], [u8; 16], u32), cm::Request>,
    /// Retry counts CM REQs gave: request flow key → retry count.
    retry_counts: FastMap<FlowKey, u8>,
    pfc: PfcTracker,
    frames: FrameCounts,
    first_ts: Option<u64>,
    last_ts: u64,
    /// CE → CNP reaction times: (samples, sum, min, max) in ns.
    reactions: (u64, u64, u64, u64),
    ifaces: BTreeMap<u16, String>,
    /// Pairings made since [`Analyzer::take_pairings`] last ran, when asked
    /// for with [`Analyzer::log_pairings`] (the live tap's summary mode).
    pairings: Option<Vec<(FlowKey, FlowKey)>>,
    dups: dups::MirrorDups,
    /// Per interface index: first and last record, ICRC tallies.
    taps: Vec<TapState>,
    /// The pauses that covered ghost timeout rewinds: `(iface, priority,
    /// sender, start)`, for the timeout advice.
    ghost_covers: std::collections::BTreeSet<(u16, u8, [u8; 6], u64)>,
    /// MACs that sent CNPs (end hosts, for the congestion tree).
    cnp_macs: std::collections::BTreeSet<[u8; 6]>,
    /// The load of the ECMP groups' members.
    ecmp: ecmp::EcmpLoad,
    /// DSCP and PCP pairs per tap.
    qos: qos::Marks,
    /// Cross-tap matching.
    matcher: hops::Feed,
    /// How fast each NIC reacts.
    nics: nics::Nics,
    /// Sums over flows kept as records come, for a monitor ([`running`]).
    running: RunningTotals,
    /// Hands out flow ids, QPs' and PDCs' alike (flows retire: a slot is
    /// no id).
    ids: crate::transport::FlowIds,
    /// When each live flow is next looked at for retirement.
    expiry: flows::Expiry,
    /// What the run keeps of its retired flows.
    retired: flows::Retired,
    /// What the flows' sequencing judged of the packet in hand (a buffer
    /// kept between packets).
    judged: Vec<crate::transport::sequencing::Judgement>,
    /// The state of the transports beside RoCE (`transports`).
    transports: transports::Transports,
    /// Fills a retiring flow's row's Wireshark filters (the presentation
    /// layer's, set by the pipeline: analyze/ does not word rows itself).
    annotate_row: Option<fn(&mut FlowRow, IfaceOrigin)>,
    /// The switch queues' telemetry aggregates (`congested-queue`).
    queues: telemetry::QueueTracker,
}

impl Analyzer {
    /// Rows of flows that retire before the end get their Wireshark
    /// filters from `f` (the rows held at the end get them from
    /// `crate::render::tell`).
    pub fn set_row_annotator(&mut self, f: fn(&mut FlowRow, IfaceOrigin)) {
        self.annotate_row = Some(f);
    }

    /// Numbers flows `first`, `first + step`, … (before the first
    /// record): the analyzers of a sharded run (`crate::shard`) give
    /// their flows disjoint ids, so their rows and findings merge
    /// without renaming.
    pub fn number_flows(&mut self, first: u32, step: u32) {
        self.ids = crate::transport::FlowIds::new(first, step);
    }

    pub fn new(config: Config) -> Self {
        let pfc = PfcTracker::new(config.link_speed_bps, config.storm_ns);
        let mut config = config;
        config.bin_ns = config.bin_ns.max(1);
        let dups = dups::MirrorDups::new(config.dup_window_ns);
        let ecmp = ecmp::EcmpLoad::new(&config.ecmp_groups, config.bin_ns, |name| {
            config
                .tap_link_speed_bps
                .iter()
                .find(|(n, _)| n == name)
                .map_or(config.link_speed_bps, |&(_, bps)| bps)
        });
        let matcher = hops::Feed::new(
            if config.one_tap {
                hops::Matcher::one_tap(config.match_window_ns)
            } else {
                hops::Matcher::new(config.match_window_ns)
            },
            config.match_thread,
        );
        let transports = transports::Transports::new(&config);
        Analyzer {
            config,
            flows: FlowTable::default(),
            bins: Default::default(),
            by_key: flows::FlowIndex::default(),
            by_hosts: flows::HostIndex::default(),
            cnp_counts: FastMap::default(),
            hints: FastMap::default(),
            cm_requests: FastMap::default(),
            retry_counts: FastMap::default(),
            pfc,
            frames: FrameCounts::default(),
            first_ts: None,
            last_ts: 0,
            reactions: (0, 0, u64::MAX, 0),
            ifaces: BTreeMap::new(),
            pairings: None,
            dups,
            taps: Vec::new(),
            ghost_covers: Default::default(),
            cnp_macs: Default::default(),
            ecmp,
            qos: qos::Marks::default(),
            matcher,
            nics: nics::Nics::default(),
            running: RunningTotals::default(),
            ids: crate::transport::FlowIds::default(),
            expiry: flows::Expiry::default(),
            retired: flows::Retired::default(),
            judged: Vec::new(),
            transports,
            annotate_row: None,
            queues: telemetry::QueueTracker::default(),
        }
    }

    /// A record another analyzer of a sharded run takes (`crate::shard`):
    /// time moves here as there — the run's span, its tap's first and
    /// last record, retirement — without the record being analysed or
    /// counted, so that what is judged against the run's time (pause
    /// fractions, flows silent to the end) is judged alike in every shard.
    pub fn pass_time(&mut self, rec: &PacketRecord, sink: &mut impl Sink) {
        if rec.kind() != Kind::Other {
            self.clock(rec, sink);
        }
    }

    /// The run's and the tap's clock at `rec`, and what retires by then.
    fn clock(&mut self, rec: &PacketRecord, sink: &mut impl Sink) {
        let now = rec.ts_ns;
        if self.first_ts.is_none() {
            self.first_ts = Some(now);
        }
        self.last_ts = self.last_ts.max(now);
        self.expire(self.last_ts, sink);
        let t = self.tap_mut(rec.iface);
        if !t.seen {
            t.seen = true;
            t.first_ts = now;
        }
        t.last_ts = t.last_ts.max(now);
    }

    /// One record (kind != Other), in capture order.
    pub fn push(&mut self, rec: &PacketRecord, sink: &mut impl Sink) -> Verdict {
        self.push_hashed(rec, None, sink)
    }

    /// [`Self::push`] with `rec`'s [`Self::key_hash`] if made already
    /// (`None`: made here, if needed).
    pub(crate) fn push_hashed(
        &mut self,
        rec: &PacketRecord,
        hash: Option<flows::KeyHash>,
        sink: &mut impl Sink,
    ) -> Verdict {
        let kind = rec.kind();
        let now = rec.ts_ns;
        match kind {
            Kind::Other => return Verdict::default(),
            Kind::Roce => self.frames.roce += 1,
            Kind::Cnp => self.frames.cnp += 1,
            Kind::Pfc => self.frames.pfc += 1,
            Kind::Pause => self.frames.pause += 1,
            Kind::Malformed => self.frames.malformed += 1,
            // The transports' beside RoCE (`rows/transports.rs`).
            beyond => self.frames.transports.count(beyond),
        }
        self.frames.total += 1;
        self.clock(rec, sink);
        self.tap_mut(rec.iface).records += 1;
        if rec.has(flags::CUT) {
            self.frames.cut += 1;
        }
        // A record goes to its transport's flow key and sequencing
        // (docs/build.md, "Adding a transport"); link control has none.
        let verdict = match rec.transport() {
            Some(TransportId::Roce) => match kind {
                Kind::Cnp if rec.has(flags::HAS_BTH) => self.cnp(rec, sink),
                Kind::Roce if rec.has(flags::HAS_BTH) => self.roce(rec, hash, sink),
                _ => Verdict::default(),
            },
            // The transports beside RoCE, each to its own flow state
            // (`transports`).
            Some(other) => self.push_transport(other, rec),
            None if kind == Kind::Pfc && rec.has(flags::HAS_PFC) => {
                self.pfc.frame(rec, sink);
                Verdict::default()
            }
            None => Verdict::default(),
        };
        // What the switches route: RoCE and CNPs, mirror copies left out.
        if matches!(kind, Kind::Roce | Kind::Cnp) && !verdict.mirror_copy {
            self.ecmp.frame(rec.iface, now, u64::from(rec.frame_len));
            if rec.has_traffic_class() {
                let pcp = rec.has(flags::HAS_VLAN).then_some(rec.pcp);
                self.qos.frame(rec.iface, rec.dscp, pcp);
                if kind == Kind::Cnp {
                    let key = (
                        rec.iface,
                        rec.src_ip,
                        rec.dst_ip,
                        rec.roce().dest_qp & rocescope_common::proto::ib::QPN_MASK,
                    );
                    self.qos.cnp(key, rec.dscp, pcp);
                }
            }
        }
        verdict
    }

    /// The key index's hash of `rec`'s flow key (a RoCE frame with a BTH:
    /// what [`Self::roce`] looks up), for [`Self::prefetch`] and
    /// [`Self::push_hashed`]: the pipeline hashes a frame's key once where it
    /// hashed it three times (docs/benchmarks.md, "cpu3").
    pub(crate) fn key_hash(&self, rec: &PacketRecord) -> Option<flows::KeyHash> {
        (rec.transport() == Some(TransportId::Roce)
            && rec.kind() == Kind::Roce
            && rec.has(flags::HAS_BTH))
        .then(|| {
            let response = rocescope_common::proto::ib::is_response_op(rec.roce().opcode & 0x1F);
            self.by_key.hash(&roce_key(rec)).of_response(response)
        })
    }

    /// Starts loading `rec` into the cache: the pipeline's analyzer loop
    /// calls it a few records ahead. The reader thread wrote the records,
    /// on the other core: the first read of each was a miss, most of it in
    /// the mirror-copy check (docs/benchmarks.md, "cpu1m").
    pub(crate) fn prefetch_record(rec: &PacketRecord) {
        cache::prefetch_lines(rec, std::mem::size_of::<PacketRecord>());
    }

    /// Starts loading into the cache what pushing the next records reads
    /// first: the key index's bucket of the one after next (`after_next`,
    /// its [`Self::key_hash`]), and the flow record of the next (`next`;
    /// its bucket loaded a call before) or, when no flow holds its key yet,
    /// the host-pair index's bucket where its flow will go and where a
    /// response's pairing looks. On a capture of many flows these are cold
    /// when a frame comes; loaded a frame ahead, the misses overlap the
    /// work on the frame before (docs/benchmarks.md, "speed1", "cpu1m").
    pub(crate) fn prefetch(
        &self,
        next: Option<flows::KeyHash>,
        after_next: Option<flows::KeyHash>,
    ) {
        if let Some(h) = next
            && !self.by_key.prefetch_flow(&self.flows, h)
        {
            if h.response() {
                // The pair it answers: its bucket loaded a call before.
                self.by_hosts
                    .prefetch_first(&self.flows, h.pair().reverse());
            } else {
                self.by_hosts.prefetch(h.pair());
            }
        }
        if let Some(h) = after_next {
            self.by_key.prefetch_bucket(h);
            if h.response() {
                self.by_hosts.prefetch(h.pair());
            }
        }
    }
}

/// A RoCE record's flow key: tap, addresses, destination QP.
pub(crate) fn roce_key(rec: &PacketRecord) -> FlowKey {
    let qp = rec.roce().dest_qp & rocescope_common::proto::ib::QPN_MASK;
    (rec.iface, rec.src_ip, rec.dst_ip, qp)
}
