//! `congested-queue` (docs/analysis.md, "Findings"): the switch queues
//! whose telemetry (INT-MD, IFA, Telemetry Report hops in
//! `telemetry.parquet`) shows them filling, joined to the flows that
//! crossed them and to what the endpoints showed of those flows — their CE
//! marks, their rewinds (ghost timeouts among them), the PFC congestion
//! tree on the queue's priority — and the packets the switch said it
//! dropped there (drop reports, D flag), by drop reason.
//!
//! The queues' aggregates are kept as the hops arrive
//! (`analyze::telemetry`, bounded by the queues active); the finding is
//! made from them at the end of a run, beside the flow rows (a connection
//! is named by its first flow row, [`FlowIndex`]), and every
//! `--report-interval` of a live run over the queues congested in it.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::analyze::telemetry::QueueTracker;
pub use crate::analyze::telemetry::{CONGESTED_LATENCY, Connection, QUEUES_SHOWN, QueueId};
use crate::analyze::tree::PauseTree;
use crate::analyze::{FlowRow, Severity};

use super::{Diagnosis, Evidence, FlowRef};

/// The flows of a queue listed by id, the most reported first; the rest
/// are counted.
pub const FLOWS_SHOWN: usize = 10;

/// The flow rows of a connection, as the end of a run holds them: the
/// first row of each `(source, destination, destination QP)` (its lowest
/// flow id), on any tap.
pub struct FlowIndex {
    first_row: HashMap<Connection, usize>,
}

impl FlowIndex {
    pub fn new(flows: &[FlowRow]) -> FlowIndex {
        let mut first_row: HashMap<Connection, usize> = HashMap::with_capacity(flows.len());
        for (i, f) in flows.iter().enumerate() {
            let first = first_row
                .entry((f.src_ip, f.dst_ip, f.dest_qp))
                .or_insert(i);
            if f.flow_id < flows[*first].flow_id {
                *first = i;
            }
        }
        FlowIndex { first_row }
    }

    /// The row (position in the rows) of the connection's lowest flow id.
    pub fn first(&self, src: [u8; 16], dst: [u8; 16], qp: u32) -> Option<usize> {
        self.first_row.get(&(src, dst, qp)).copied()
    }
}

/// What the endpoints showed of a queue's flows: per flow, at the tap that
/// saw the most of each.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Endpoints {
    /// CE-marked request packets.
    pub ce: u64,
    /// Go-back-N rewinds, and of them timeouts with nothing lost (ghost).
    pub rewinds: u64,
    pub ghost_rewinds: u64,
    /// The PFC congestion tree whose victims include one of the flows:
    /// its root's MAC and tap, and its priority.
    pub pfc_root: Option<PfcRoot>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PfcRoot {
    pub priority: u8,
    pub src_mac: String,
    pub iface_name: String,
    pub device: Option<String>,
}

/// A flow the telemetry names by its packet's addresses and destination
/// QP, with the flow row of that connection when a tap saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueFlow {
    pub src_ip: [u8; 16],
    pub dst_ip: [u8; 16],
    pub dest_qp: u32,
    pub seen: Option<FlowRef>,
}

/// `congested-queue`: one switch queue.
#[derive(Clone, Debug, PartialEq)]
pub struct CongestedQueue {
    pub queue: QueueId,
    /// Telemetry hops about it, and of them the congested ones.
    pub hops: u64,
    pub congested_hops: u64,
    /// First and last congested hop (capture time).
    pub first_ns: u64,
    pub last_ns: u64,
    /// The most it held (the device's unit) and the longest wait, and when.
    pub peak_occupancy: u32,
    pub peak_occupancy_ns: u64,
    pub peak_latency: u32,
    pub peak_latency_ns: u64,
    /// Drop reports, per drop reason (`None`: the report gave none).
    pub drops: BTreeMap<Option<u8>, u64>,
    /// Its flows, the most reported first (at most [`FLOWS_SHOWN`]), and
    /// how many more.
    pub flows: Vec<QueueFlow>,
    pub flows_more: u64,
    pub endpoints: Endpoints,
    /// Congested queues past [`QUEUES_SHOWN`] (on the last finding only).
    pub other_queues: u64,
}

impl CongestedQueue {
    pub fn dropped(&self) -> u64 {
        self.drops.values().sum()
    }

    pub fn citation(&self) -> QueueCitation {
        QueueCitation {
            queue: self.queue,
            peak_occupancy: self.peak_occupancy,
            peak_latency: self.peak_latency,
            dropped: self.dropped(),
        }
    }
}

/// What another finding cites of a congested queue its flows crossed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueCitation {
    pub queue: QueueId,
    pub peak_occupancy: u32,
    pub peak_latency: u32,
    pub dropped: u64,
}

/// The findings whose flows crossed a congested queue cite it (the first
/// in rank order whose flows meet theirs): `ghost-retransmissions` and
/// `pfc-congestion-tree`, in their evidence's `telemetry`.
pub fn cite(diagnoses: &mut [Diagnosis]) {
    let queues: Vec<(QueueCitation, Vec<u32>)> = diagnoses
        .iter()
        .filter_map(|d| match &d.evidence {
            Evidence::CongestedQueue(q) => Some((q.citation(), d.flows.clone())),
            _ => None,
        })
        .collect();
    if queues.is_empty() {
        return;
    }
    for d in diagnoses.iter_mut() {
        let cited = queues
            .iter()
            .find(|(_, crossed)| crossed.iter().any(|f| d.flows.contains(f)))
            .map(|(c, _)| *c);
        match &mut d.evidence {
            Evidence::Ghost(g) => g.telemetry = cited,
            Evidence::CongestionTree(t) => t.telemetry = cited,
            _ => {}
        }
    }
}

/// The `congested-queue` findings of the queues' aggregates (with
/// `since`, those congested at or after it: a live interval), joined to
/// the flow rows and PFC trees given (none while a run goes on: the flows
/// are then named by the ids their telemetry was joined to at arrival);
/// ranked as findings are (docs/analysis.md).
pub fn diagnose(
    queues: &QueueTracker,
    since: Option<u64>,
    flows: &[FlowRow],
    trees: &[PauseTree],
) -> Vec<Diagnosis> {
    let index = FlowIndex::new(flows);
    let mut found = queues.congested_queues(since);
    let other_queues = match since {
        None => queues.congested_count().saturating_sub(QUEUES_SHOWN as u64),
        Some(_) => found.len().saturating_sub(QUEUES_SHOWN) as u64,
    };
    found.truncate(QUEUES_SHOWN);
    let shown = found.len();
    let data_total: u64 = flows.iter().map(|f| f.data_packets).sum();
    found
        .into_iter()
        .enumerate()
        .map(|(i, (queue, t))| {
            let mut by_hops = t.flows.clone();
            by_hops.sort_by(|a, b| b.hops.cmp(&a.hops).then(a.connection.cmp(&b.connection)));
            let keys: Vec<_> = by_hops.iter().map(|c| c.connection).collect();
            let crossed: HashSet<_> = keys.iter().copied().collect();
            let endpoints = endpoints(&crossed, flows, trees, queue.queue_id);
            let data: u64 = flows
                .iter()
                .filter(|f| crossed.contains(&(f.src_ip, f.dst_ip, f.dest_qp)))
                .map(|f| f.data_packets)
                .sum();
            let impact = if data_total > 0 {
                data as f64 / data_total as f64
            } else {
                0.0
            };
            let evidence = CongestedQueue {
                queue,
                hops: t.hops,
                congested_hops: t.congested,
                first_ns: t.first_ns,
                last_ns: t.last_ns,
                peak_occupancy: t.peak_occupancy.0,
                peak_occupancy_ns: t.peak_occupancy.1,
                peak_latency: t.peak_latency.0,
                peak_latency_ns: t.peak_latency.1,
                drops: t.drops.clone(),
                flows: keys
                    .iter()
                    .take(FLOWS_SHOWN)
                    .map(|&(src_ip, dst_ip, dest_qp)| QueueFlow {
                        src_ip,
                        dst_ip,
                        dest_qp,
                        seen: index
                            .first(src_ip, dst_ip, dest_qp)
                            .map(|i| FlowRef::from_row(&flows[i])),
                    })
                    .collect(),
                flows_more: t.connections.saturating_sub(FLOWS_SHOWN as u64),
                endpoints,
                other_queues: if i + 1 == shown { other_queues } else { 0 },
            };
            Diagnosis {
                severity: if evidence.dropped() > 0 {
                    Severity::Critical
                } else {
                    Severity::Warning
                },
                impact,
                flows: if flows.is_empty() {
                    by_hops
                        .iter()
                        .take(FLOWS_SHOWN)
                        .filter_map(|c| c.flow_id)
                        .collect()
                } else {
                    evidence
                        .flows
                        .iter()
                        .filter_map(|f| f.seen.map(|r| r.id))
                        .collect()
                },
                evidence: Evidence::CongestedQueue(Box::new(evidence)),
            }
        })
        .collect()
}

/// What the taps showed of the connections `keys` (on every tap).
fn endpoints(
    keys: &HashSet<Connection>,
    flows: &[FlowRow],
    trees: &[PauseTree],
    priority: u8,
) -> Endpoints {
    // Per flow, the tap that saw the most of each: a flow seen at two
    // taps shows its marks and rewinds twice.
    let mut most: HashMap<Connection, (u64, u64, u64)> = HashMap::new();
    let mut members = Vec::new();
    for f in flows
        .iter()
        .filter(|f| keys.contains(&(f.src_ip, f.dst_ip, f.dest_qp)))
    {
        let m = most.entry((f.src_ip, f.dst_ip, f.dest_qp)).or_default();
        *m = (
            m.0.max(f.ce),
            m.1.max(f.rewinds),
            m.2.max(f.rewinds_timeout_ghost),
        );
        members.push(f.flow_id);
    }
    let mut e = Endpoints::default();
    for (ce, rewinds, ghost) in most.into_values() {
        e.ce += ce;
        e.rewinds += rewinds;
        e.ghost_rewinds += ghost;
    }
    e.pfc_root = trees
        .iter()
        .filter(|t| t.priority == priority)
        .find(|t| {
            t.nodes
                .iter()
                .any(|n| n.victims.iter().any(|v| members.contains(v)))
        })
        .or_else(|| trees.iter().find(|t| t.priority == priority))
        .and_then(|t| t.nodes.first().map(|root| (t.priority, root)))
        .map(|(priority, root)| PfcRoot {
            priority,
            src_mac: root.src_mac.clone(),
            iface_name: root.iface_name.clone(),
            device: root.device.clone(),
        });
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::TelemetryRow;
    use rocescope_common::wire::telemetry::Source;

    /// A report hop of switch 9, port `port`, queue 3 about the packet of
    /// connection `conn` (10.0.0.conn → 10.0.1.1, QP 0x100 + conn).
    fn hop(port: u32, occupancy: u32, latency: u32, conn: u8) -> TelemetryRow {
        let mut src = [0u8; 16];
        src[10..12].copy_from_slice(&[0xFF, 0xFF]);
        src[12..16].copy_from_slice(&[10, 0, 0, conn]);
        let mut dst = src;
        dst[14..16].copy_from_slice(&[1, 1]);
        TelemetryRow {
            ts_ns: 1_000 + u64::from(occupancy),
            source: Some(Source::Report),
            switch_id: Some(9),
            egress_port: Some(port),
            queue_id: Some(3),
            queue_occupancy: Some(occupancy),
            hop_latency: Some(latency),
            dropped: Some(false),
            congested_queue: Some(false),
            src_ip: Some(src),
            dst_ip: Some(dst),
            dest_qp: Some(0x100 + u32::from(conn)),
            ..TelemetryRow::default()
        }
    }

    /// The findings of `rows` arriving in order, no queue retiring.
    fn diagnose(rows: &[TelemetryRow], flows: &[FlowRow], trees: &[PauseTree]) -> Vec<Diagnosis> {
        let mut q = QueueTracker::default();
        for r in rows {
            q.add(r, u64::MAX);
        }
        super::diagnose(&q, None, flows, trees)
    }

    fn queue(d: &Diagnosis) -> &CongestedQueue {
        match &d.evidence {
            Evidence::CongestedQueue(q) => q,
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn a_queue_is_congested_from_the_latency_threshold() {
        let quiet = [hop(1, 500, CONGESTED_LATENCY - 1, 1)];
        assert!(diagnose(&quiet, &[], &[]).is_empty());
        let rows = [quiet[0].clone(), hop(1, 700, CONGESTED_LATENCY, 2)];
        let found = diagnose(&rows, &[], &[]);
        assert_eq!(found.len(), 1);
        let q = queue(&found[0]);
        assert_eq!((q.hops, q.congested_hops), (2, 1));
        assert_eq!((q.peak_occupancy, q.peak_latency), (700, CONGESTED_LATENCY));
        assert_eq!((q.first_ns, q.last_ns), (1_700, 1_700));
        assert_eq!(found[0].severity, Severity::Warning);
        // No tap saw the connection: named by its packet, no flow id.
        assert_eq!(q.flows.len(), 1);
        assert_eq!((q.flows[0].dest_qp, q.flows[0].seen), (0x102, None));
        assert!(found[0].flows.is_empty());
    }

    #[test]
    fn drop_reports_count_by_reason_and_make_it_critical() {
        let drop = |reason| TelemetryRow {
            dropped: Some(true),
            drop_reason: reason,
            hop_latency: Some(0),
            ..hop(2, 100, 0, 1)
        };
        let found = diagnose(&[drop(Some(71)), drop(Some(71)), drop(None)], &[], &[]);
        let q = queue(&found[0]);
        assert_eq!(
            q.drops,
            BTreeMap::from([(None, 1), (Some(71), 2)]),
            "per drop reason"
        );
        assert_eq!(q.dropped(), 3);
        assert_eq!(found[0].severity, Severity::Critical);
    }

    #[test]
    fn ten_flows_are_listed_the_most_named_first_and_the_rest_counted() {
        let mut rows = Vec::new();
        for conn in 1..=12u8 {
            for _ in 0..conn {
                rows.push(hop(1, 900, 20_000, conn));
            }
        }
        let q = queue(&diagnose(&rows, &[], &[])[0]).clone();
        let qps: Vec<u32> = q.flows.iter().map(|f| f.dest_qp).collect();
        assert_eq!(qps, (3..=12).rev().map(|c| 0x100 + c).collect::<Vec<u32>>());
        assert_eq!(q.flows_more, 2);
    }

    #[test]
    fn the_fullest_queues_first_and_the_rest_counted_on_the_last() {
        let rows: Vec<TelemetryRow> = (1..=7).map(|p| hop(p, p * 1000, 20_000, 1)).collect();
        let found = diagnose(&rows, &[], &[]);
        let ports: Vec<u32> = found.iter().map(|d| queue(d).queue.egress_port).collect();
        assert_eq!(ports, [7, 6, 5, 4, 3]);
        let others: Vec<u64> = found.iter().map(|d| queue(d).other_queues).collect();
        assert_eq!(others, [0, 0, 0, 0, 2]);
    }
}
