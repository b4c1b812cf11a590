//! Switch telemetry as it arrives (docs/analysis.md, "Telemetry and
//! flows", "Congested queues"): each hop row is joined to its flow at that
//! moment, through the flow table's index, and folded into its queue's
//! bounded aggregate; the row then goes to the sink (`telemetry.parquet`),
//! so the run holds no rows.
//!
//! What stays is bounded by what is active: a [`QueueTally`] per queue
//! that had a hop within `--flow-idle` (each with at most [`FLOWS_KEPT`]
//! connections), the [`QUEUES_SHOWN`] fullest congested queues that went
//! idle, the ids of the queues ever congested and the hop counts of quiet
//! queues that went idle (a fabric's queues, not the run's length).

use std::collections::{BTreeMap, HashMap, HashSet};

use rocescope_common::proto::ib::QPN_MASK;
use rocescope_common::wire::telemetry::Source;

use super::{Analyzer, Sink};
use crate::telemetry::TelemetryRow;

/// A queue is congested when one of its hops waited at least this long
/// (hop latency; INT leaves the unit to the device, switches in use report
/// nanoseconds) or a report flagged it (Q) or said it dropped (D).
pub const CONGESTED_LATENCY: u32 = 10_000;

/// At most this many queues get a finding, the fullest first; the rest are
/// counted in the last one's `other_queues`.
pub const QUEUES_SHOWN: usize = 5;

/// A connection as a packet names it: source and destination address,
/// destination QP.
pub type Connection = ([u8; 16], [u8; 16], u32);

/// A switch queue as telemetry names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QueueId {
    pub switch_id: u32,
    pub egress_port: u32,
    pub queue_id: u8,
}

/// Connections a queue's aggregate counts exactly; past it the least
/// counted one gives way to a newcomer (Space-Saving: a count is then at
/// most the evicted one's above the truth).
pub const FLOWS_KEPT: usize = 64;

/// One connection's congested hops at a queue, and its flow as joined at
/// the latest such hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueConnection {
    pub connection: Connection,
    pub hops: u64,
    pub flow_id: Option<u32>,
}

/// What a queue's telemetry added up to since it was last idle for
/// `--flow-idle`: the `congested-queue` evidence.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueueTally {
    pub hops: u64,
    /// Hops that waited [`CONGESTED_LATENCY`] or more, or a report flagged
    /// (Q) or dropped (D).
    pub congested: u64,
    /// First and last congested hop.
    pub first_ns: u64,
    pub last_ns: u64,
    /// The most it held and the longest wait (value, time; the first hop
    /// that reached it).
    pub peak_occupancy: (u32, u64),
    pub peak_latency: (u32, u64),
    /// Sums over the hops that reported each, for the means.
    pub occupancy_sum: u64,
    pub occupancy_hops: u64,
    pub latency_sum: u64,
    pub latency_hops: u64,
    /// Drop reports, per drop reason (at most 257 keys).
    pub drops: BTreeMap<Option<u8>, u64>,
    /// Congested hops per connection, at most [`FLOWS_KEPT`] connections.
    pub flows: Vec<QueueConnection>,
    /// Connections ever counted (exact while ≤ [`FLOWS_KEPT`]; past it,
    /// one evicted and seen again counts twice).
    pub connections: u64,
    /// The last hop of any kind, for retirement.
    pub last_row_ns: u64,
}

/// A hop that says its queue was congested.
pub fn congested(row: &TelemetryRow) -> bool {
    row.dropped == Some(true)
        || row.congested_queue == Some(true)
        || row.hop_latency.is_some_and(|l| l >= CONGESTED_LATENCY)
}

impl QueueTally {
    /// Adds one hop of this queue.
    pub fn add(&mut self, row: &TelemetryRow) {
        self.hops += 1;
        self.last_row_ns = self.last_row_ns.max(row.ts_ns);
        let occupancy = row.queue_occupancy.unwrap_or(0);
        let latency = row.hop_latency.unwrap_or(0);
        if occupancy > self.peak_occupancy.0 {
            self.peak_occupancy = (occupancy, row.ts_ns);
        }
        if latency > self.peak_latency.0 {
            self.peak_latency = (latency, row.ts_ns);
        }
        if let Some(o) = row.queue_occupancy {
            self.occupancy_sum += u64::from(o);
            self.occupancy_hops += 1;
        }
        if let Some(l) = row.hop_latency {
            self.latency_sum += u64::from(l);
            self.latency_hops += 1;
        }
        if row.dropped == Some(true) {
            *self.drops.entry(row.drop_reason).or_default() += 1;
        }
        if !congested(row) {
            return;
        }
        if self.congested == 0 {
            self.first_ns = row.ts_ns;
        }
        self.congested += 1;
        self.first_ns = self.first_ns.min(row.ts_ns);
        self.last_ns = self.last_ns.max(row.ts_ns);
        if let (Some(src), Some(dst), Some(qp)) = (row.src_ip, row.dst_ip, row.dest_qp) {
            self.count((src, dst, qp), row.flow_id);
        }
    }

    fn count(&mut self, connection: Connection, flow_id: Option<u32>) {
        if let Some(c) = self.flows.iter_mut().find(|c| c.connection == connection) {
            c.hops += 1;
            c.flow_id = flow_id.or(c.flow_id);
            return;
        }
        self.connections += 1;
        let new = QueueConnection {
            connection,
            hops: 1,
            flow_id,
        };
        if self.flows.len() < FLOWS_KEPT {
            self.flows.push(new);
            return;
        }
        // Space-Saving: the least counted (the greatest key among equals,
        // so the kept order does not depend on arrival) gives way.
        if let Some(least) = self
            .flows
            .iter_mut()
            .min_by(|a, b| a.hops.cmp(&b.hops).then(b.connection.cmp(&a.connection)))
        {
            *least = QueueConnection {
                hops: least.hops + 1,
                ..new
            };
        }
    }

    /// Mean occupancy and hop latency over the hops that reported them.
    pub fn means(&self) -> (Option<f64>, Option<f64>) {
        let mean = |sum: u64, n: u64| (n > 0).then(|| sum as f64 / n as f64);
        (
            mean(self.occupancy_sum, self.occupancy_hops),
            mean(self.latency_sum, self.latency_hops),
        )
    }

    /// Rank order of `congested-queue`: the fullest first, then the
    /// longest wait, then the queue's id.
    fn rank(&self, q: &QueueId) -> (std::cmp::Reverse<(u32, u32)>, QueueId) {
        (
            std::cmp::Reverse((self.peak_occupancy.0, self.peak_latency.0)),
            *q,
        )
    }
}

/// Every queue's aggregate (docs/analysis.md, "Congested queues").
#[derive(Clone, Debug, Default)]
pub struct QueueTracker {
    /// Queues with a hop within `--flow-idle`.
    live: BTreeMap<QueueId, QueueTally>,
    /// Congested queues that went idle: the [`QUEUES_SHOWN`] fullest.
    idle: BTreeMap<QueueId, QueueTally>,
    /// Every queue ever congested (`other_queues` counts them).
    congested: HashSet<QueueId>,
    /// The hops of queues that went idle before any congested hop: a
    /// queue's `hops` go on from them when it comes back.
    quiet: HashMap<QueueId, u64>,
    /// When idle queues are next looked for.
    sweep_at: u64,
}

impl QueueTracker {
    /// One hop; queues idle for longer than `idle_ns` before it retire.
    pub fn add(&mut self, row: &TelemetryRow, idle_ns: u64) {
        if row.ts_ns >= self.sweep_at {
            self.retire_idle(row.ts_ns, idle_ns);
            self.sweep_at = row.ts_ns.saturating_add(idle_ns);
        }
        let (Some(switch_id), Some(egress_port), Some(queue_id)) =
            (row.switch_id, row.egress_port, row.queue_id)
        else {
            return;
        };
        let q = QueueId {
            switch_id,
            egress_port,
            queue_id,
        };
        let tally = self.live.entry(q).or_insert_with(|| {
            self.idle.remove(&q).unwrap_or_else(|| QueueTally {
                hops: self.quiet.remove(&q).unwrap_or(0),
                ..QueueTally::default()
            })
        });
        tally.add(row);
        if tally.congested > 0 {
            self.congested.insert(q);
        }
    }

    /// Queues with no hop for `idle_ns` at `now` leave the live set; a
    /// congested one is kept while it is among the fullest.
    fn retire_idle(&mut self, now: u64, idle_ns: u64) {
        let gone: Vec<QueueId> = self
            .live
            .iter()
            .filter(|(_, t)| t.last_row_ns.saturating_add(idle_ns) < now)
            .map(|(q, _)| *q)
            .collect();
        for q in gone {
            let Some(t) = self.live.remove(&q) else {
                continue;
            };
            if t.congested == 0 {
                self.quiet.insert(q, t.hops);
                continue;
            }
            self.idle.insert(q, t);
            if self.idle.len() > QUEUES_SHOWN
                && let Some(last) = self
                    .idle
                    .iter()
                    .max_by_key(|(q, t)| t.rank(q))
                    .map(|(q, _)| *q)
            {
                self.idle.remove(&last);
            }
        }
    }

    /// The congested queues' aggregates, live and idle, in rank order;
    /// with `since`, only those with a congested hop at or after it.
    pub fn congested_queues(&self, since: Option<u64>) -> Vec<(QueueId, &QueueTally)> {
        let mut out: Vec<_> = self
            .live
            .iter()
            .chain(self.idle.iter())
            .filter(|(_, t)| t.congested > 0 && since.is_none_or(|s| t.last_ns >= s))
            .map(|(q, t)| (*q, t))
            .collect();
        out.sort_by_key(|(q, t)| t.rank(q));
        out
    }

    /// Queues ever congested.
    pub fn congested_count(&self) -> u64 {
        self.congested.len() as u64
    }

    /// Queues held now: live, and idle ones kept (for the memory bound).
    pub fn held(&self) -> (usize, usize) {
        (self.live.len(), self.idle.len())
    }
}

impl Analyzer {
    /// One telemetry hop as it arrives (after the record that carried it,
    /// if any): its flow joined now, its queue's aggregate updated, the row
    /// to `sink`. docs/analysis.md, "Telemetry and flows".
    pub fn telemetry(&mut self, row: &mut TelemetryRow, sink: &mut impl Sink) {
        row.flow_id = self.flow_of(row);
        self.queues.add(row, self.config.flow_idle_ns);
        sink.telemetry(row);
    }

    /// The live flow a hop is about: for INT-MD and IFA the flow of the
    /// packet that carried it (same tap); for a report's truncated packet
    /// the live flow of its addresses and QP on any tap, the lowest id
    /// (the one that began first). Live: a frame within `--flow-idle`
    /// before the hop.
    fn flow_of(&self, row: &TelemetryRow) -> Option<u32> {
        let (src, dst, qp) = (row.src_ip?, row.dst_ip?, row.dest_qp? & QPN_MASK);
        // Retirement is looked at when records come: a flow idle for
        // `--flow-idle` at the hop's time is gone for it already.
        let idle = self.config.flow_idle_ns;
        let id = |iface: u16| {
            self.by_key
                .get(&self.flows, &(iface, src, dst, qp))
                .map(|i| &self.flows[i])
                .filter(|f| f.last_ts.saturating_add(idle) >= row.ts_ns)
                .map(|f| f.id)
        };
        match row.source? {
            Source::Report => (0..self.taps.len())
                .filter(|&i| self.taps[i].seen)
                .filter_map(|i| u16::try_from(i).ok().and_then(id))
                .min(),
            Source::IntMd | Source::Ifa => id(row.iface),
        }
    }

    /// The queues' aggregates (`congested-queue`).
    pub fn queues(&self) -> &QueueTracker {
        &self.queues
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(ts: u64, port: u32, latency: u32, conn: u32) -> TelemetryRow {
        TelemetryRow {
            ts_ns: ts,
            source: Some(Source::Report),
            switch_id: Some(1),
            egress_port: Some(port),
            queue_id: Some(3),
            queue_occupancy: Some(latency / 10),
            hop_latency: Some(latency),
            src_ip: Some([1; 16]),
            dst_ip: Some([2; 16]),
            dest_qp: Some(conn),
            ..TelemetryRow::default()
        }
    }

    /// A queue's connections are counted exactly up to FLOWS_KEPT; past
    /// it the held state stays FLOWS_KEPT long and a heavy hitter (more
    /// than hops / FLOWS_KEPT) stays with its count.
    #[test]
    fn a_queue_keeps_at_most_flows_kept_connections() {
        let mut t = QueueTally::default();
        for _ in 0..500 {
            t.add(&hop(1, 1, 20_000, 7));
        }
        for conn in 1000..11_000 {
            t.add(&hop(2, 1, 20_000, conn));
        }
        assert_eq!(t.flows.len(), FLOWS_KEPT);
        assert_eq!(t.connections, 10_001);
        let seven = t.flows.iter().find(|c| c.connection.2 == 7).unwrap();
        assert_eq!(seven.hops, 500);
        assert_eq!((t.hops, t.congested), (10_500, 10_500));
    }

    /// What the analyzer holds of telemetry does not grow with the rows:
    /// 200 000 hops over 2 000 queues that each go idle after a while and
    /// 50 000 connections leave at most the queues active within
    /// `--flow-idle`, 5 idle ones and 64 connections a queue; every row
    /// went to the sink as it came.
    #[test]
    fn the_held_state_is_bounded_by_the_active_queues() {
        let mut an = Analyzer::new(crate::analyze::Config {
            flow_idle_ns: 10_000,
            ..crate::analyze::Config::default()
        });
        let mut rows = 0u64;
        struct Count<'a>(&'a mut u64);
        impl Sink for Count<'_> {
            fn event(&mut self, _: &super::super::Event) {}
            fn timeline(&mut self, _: &super::super::TimelineRow) {}
            fn flow(&mut self, _: &super::super::FlowRow) {}
            fn telemetry(&mut self, _: &TelemetryRow) {
                *self.0 += 1;
            }
        }
        let mut sink = Count(&mut rows);
        let mut most = (0, 0);
        for i in 0..200_000u64 {
            // Queue i / 100 (100 hops, 100 ns apart), connection i % 50 000.
            let mut row = hop(i * 100, (i / 100) as u32, 20_000, (i % 50_000) as u32);
            an.telemetry(&mut row, &mut sink);
            let (live, idle) = an.queues().held();
            most = (most.0.max(live), most.1.max(idle));
            assert!(
                an.queues()
                    .live
                    .values()
                    .all(|t| t.flows.len() <= FLOWS_KEPT)
            );
        }
        assert!(most.0 <= 3, "live queues at most {}", most.0);
        assert_eq!(most.1, QUEUES_SHOWN);
        assert_eq!(an.queues().congested_count(), 2_000);
        assert_eq!(rows, 200_000);
    }

    /// Queues idle for `--flow-idle` leave; the fullest congested ones are
    /// kept for the end, the others counted; a queue that comes back
    /// resumes its aggregate.
    #[test]
    fn idle_queues_retire_and_the_fullest_are_kept() {
        let mut q = QueueTracker::default();
        let idle = 1_000;
        for port in 0..20u32 {
            q.add(&hop(u64::from(port) * 10_000, port, 10_000 + port, 1), idle);
        }
        let (live, kept) = q.held();
        assert_eq!(live, 1, "one queue within --flow-idle");
        assert_eq!(kept, QUEUES_SHOWN);
        assert_eq!(q.congested_count(), 20);
        let ports: Vec<u32> = q
            .congested_queues(None)
            .iter()
            .map(|(id, _)| id.egress_port)
            .collect();
        assert_eq!(ports, [19, 18, 17, 16, 15, 14]);
        // Port 18 comes back: its aggregate goes on.
        q.add(&hop(200_000, 18, 5, 1), idle);
        let (_, t) = q
            .congested_queues(Some(0))
            .into_iter()
            .find(|(id, _)| id.egress_port == 18)
            .unwrap();
        assert_eq!((t.hops, t.congested), (2, 1));
        assert!(q.congested_queues(Some(190_001)).is_empty());
    }
}
