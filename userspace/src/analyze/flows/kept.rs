//! What the run keeps of its retired flows (docs/analysis.md,
//! "Retirement"): bounded aggregates folded in as each flow retires — sums
//! for the totals, per sender timeouts, per tap and host pair facts — and,
//! per finding family, the K worst flows as evidence (the rest counted). The
//! findings read the kept flows beside the live ones; nothing here grows
//! with the number of flows a run has seen.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use rocescope_common::proto::ib;

use super::super::rows::{FlowRow, Totals};
use super::super::rto;
use super::super::sums::{RowGroup, RowSums};
use super::Flow;

/// Requests sent for at least this long with no answer make a flow
/// unanswered: far beyond any round trip and any NIC's ACK coalescing
/// (`unanswered-flows`, `mtu-mismatch`).
pub(crate) const UNANSWERED_NS: u64 = 1_000_000;

/// Flows kept as evidence per family.
pub(crate) const EVIDENCE_K: usize = 32;
/// Flow ids kept per list of ids (a tap's stalled flows, a sender's timed
/// out flows), the rest counted.
pub(crate) const IDS_K: usize = 64;
/// QPs kept per host pair and tap for the unnamed ECMP group fact.
const QPS_K: usize = 64;
/// Host pairs kept for the unnamed ECMP group fact, and `(tap, from, to)`
/// answered kept for unanswered flows: the first seen.
const PAIRS_K: usize = 65_536;

/// The finding families whose evidence is kept, each by its own measure of
/// how bad a flow was (0: not evidence of it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    /// Retransmissions, rewinds, NAKs: `retransmissions`, ghost and
    /// real loss, RNR, livelock, retry exhaustion.
    Retransmission,
    /// Missing PSNs by their fate: capture-incomplete, reordering.
    Gaps,
    /// CE marks and CNPs: ECN, CNP overload, DCQCN reaction.
    Congestion,
    /// Time stalled under a pause: PFC victims, pressure, episodes.
    Stalls,
    /// ICRC failures: corruption.
    Corruption,
    /// Acknowledged requests never answered: unanswered flows, MTU.
    Unanswered,
    /// Bytes carried: QoS marks, ECMP, the report's top flows.
    Traffic,
}

pub(crate) const FAMILIES: [Family; 7] = [
    Family::Retransmission,
    Family::Gaps,
    Family::Congestion,
    Family::Stalls,
    Family::Corruption,
    Family::Unanswered,
    Family::Traffic,
];

impl Family {
    /// Its name in `summary.json`'s `retirement.evidence_omitted`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Family::Retransmission => "retransmission",
            Family::Gaps => "gaps",
            Family::Congestion => "congestion",
            Family::Stalls => "stalls",
            Family::Corruption => "corruption",
            Family::Unanswered => "unanswered",
            Family::Traffic => "traffic",
        }
    }

    fn score(self, f: &Flow) -> u64 {
        match self {
            Family::Retransmission => {
                f.retrans() + f.rewind().rewinds + f.nak().naks + f.nak().rnr_naks
            }
            Family::Gaps => {
                let g = &f.sequence().gap_counts;
                f.sequence().gaps + g.late + g.lost() + g.capture_lost + g.unresolved
            }
            Family::Congestion => f.ce() + f.cnps() + f.rare().becn + f.dcqcn().without,
            Family::Stalls => f.rare().stall_paused_ns + f.rare().stalls,
            Family::Corruption => f.rare().icrc_errors,
            Family::Unanswered => {
                let unanswered = f.data_packets() > 0
                    && f.service().is_some_and(ib::is_acknowledged)
                    && f.paired_qp().is_none()
                    && f.last_ts - f.first_ts >= UNANSWERED_NS;
                if unanswered { f.data_packets() } else { 0 }
            }
            Family::Traffic => f.bytes(),
        }
    }
}

/// Every family's [`Family::score`] of `f`, in the order of [`FAMILIES`]. A
/// flow without rare counts (most) scores 0 in the families that only read
/// them, and its counts are their low parts: read so, without the empty
/// histories' look-ups, the same scores.
fn scores(f: &Flow) -> [u64; FAMILIES.len()] {
    if f.rare.is_some() {
        return FAMILIES.map(|fam| fam.score(f));
    }
    [
        f.retrans(),
        0,
        f.ce() + f.cnps() + f.dcqcn().without,
        0,
        0,
        Family::Unanswered.score(f),
        f.bytes(),
    ]
}

/// The K largest `(score, flow id)` of a family, and how many more flows
/// scored.
#[derive(Debug, Default)]
struct TopK {
    worst: BinaryHeap<Reverse<(u64, u32)>>,
    omitted: u64,
}

/// A list of flow ids capped at [`IDS_K`], the rest counted.
#[derive(Clone, Debug, Default)]
pub(crate) struct Ids {
    pub ids: Vec<u32>,
    pub omitted: u64,
}

impl Ids {
    fn push(&mut self, id: u32) {
        if self.ids.len() < IDS_K {
            self.ids.push(id);
        } else {
            self.omitted += 1;
        }
    }
}

/// One sender's timeout rewinds over its flows at a tap: `(tap, sender,
/// flows, waits)`, in order of its first flow.
pub(crate) type SenderTimeouts = (u16, [u8; 16], Ids, rto::Waits);

/// Folds `f`'s timeout rewinds into its sender's.
pub(crate) fn add_timeouts(by_sender: &mut Vec<SenderTimeouts>, f: &Flow) {
    if f.rewind().rewinds_timeout == 0 {
        return;
    }
    match by_sender
        .iter_mut()
        .find(|(t, ip, ..)| *t == f.iface && *ip == f.src_ip)
    {
        Some((.., ids, w)) => {
            ids.push(f.id);
            w.merge(&f.rewind().waits);
        }
        None => {
            let mut ids = Ids::default();
            ids.push(f.id);
            by_sender.push((f.iface, f.src_ip, ids, f.rewind().waits));
        }
    }
}

/// Adds one flow to the run's totals (all but rates, CNPs and the counts
/// of pause intervals, made at the end).
pub(crate) fn add_totals(t: &mut Totals, f: &Flow) {
    t.flows += 1;
    t.request_flows += f.seq().is_some() as u64;
    t.response_flows += (f.responses() > 0) as u64;
    t.paired_flows += (f.seq().is_some() && f.paired_qp().is_some()) as u64;
    t.packets += f.packets();
    t.bytes += f.bytes();
    t.data_packets += f.data_packets();
    t.payload_bytes += f.payload_bytes();
    t.retrans_packets += f.retrans();
    t.acks += f.acks();
    t.ce += f.ce();
    // Every sum below is of rare counts, 0 for a flow without any (most):
    // their empty histories not looked up.
    if f.rare.is_none() {
        return;
    }
    let (r, g, n) = (f.rewind(), f.sequence(), f.nak());
    t.rewinds += r.rewinds;
    t.rewinds_nak += r.rewinds_nak;
    t.rewinds_rnr += r.rewinds_rnr;
    t.rewinds_timeout += r.rewinds_timeout;
    t.spurious_retrans += g.spurious;
    t.gaps += g.gaps;
    t.naks += n.naks;
    t.rnr_naks += n.rnr_naks;
    t.rewinds_timeout_ghost += r.rewinds_timeout_ghost;
    t.gaps_resolved.sum(&g.gap_counts);
    t.icrc_errors += f.rare().icrc_errors;
    t.mirror_copies += f.rare().mirror_copies;
    t.trimmed += f.trimmed();
}

/// `(source, destination)` → tap → QPs with data (at most [`QPS_K`]).
pub(crate) type QpsByPair = BTreeMap<([u8; 16], [u8; 16]), BTreeMap<u16, BTreeSet<u32>>>;

/// Adds a flow with data to [`QpsByPair`], at most `cap` QPs per host pair
/// and tap.
pub(crate) fn add_qps(by_pair: &mut QpsByPair, f: &Flow, cap: usize) {
    if f.data_packets() == 0 {
        return;
    }
    let qps = by_pair
        .entry((f.src_ip, f.dst_ip))
        .or_default()
        .entry(f.iface)
        .or_default();
    if qps.len() < cap {
        qps.insert(f.dest_qp);
    }
}

/// Everything kept of the retired flows.
#[derive(Debug, Default)]
pub(crate) struct Retired {
    /// Their sums.
    pub totals: Totals,
    /// CNPs attributed to them.
    pub cnps: u64,
    /// Their PSNs the capture lost, per tap.
    pub capture_lost: Vec<u64>,
    /// Their source MACs (end hosts, for the congestion tree).
    pub hosts: BTreeSet<[u8; 6]>,
    /// Per tap, the flows that stalled under a pause.
    pub stalled: BTreeMap<u16, Ids>,
    /// Per tap and sender, their timeout rewinds.
    pub timeouts: Vec<SenderTimeouts>,
    /// `(tap, from, to)` of response flows: the pairs answered (at most
    /// [`PAIRS_K`]; `answered_full` once more were left out).
    pub answered: BTreeSet<(u16, [u8; 16], [u8; 16])>,
    pub answered_full: bool,
    /// Their QPs per host pair and tap.
    pub qps: QpsByPair,
    /// Their rows, summed per tap and marks.
    pub rows: BTreeMap<RowGroup, RowSums>,
    /// Interim rows written for flows active longer than `--flow-active`.
    pub interim_rows: u64,
    families: Vec<TopK>,
    /// The evidence flows, by id, with the number of families keeping each.
    evidence: BTreeMap<u32, (Box<Flow>, u8)>,
}

impl Retired {
    /// An interim row written.
    pub(crate) fn add_interim(&mut self, row: &FlowRow) {
        self.rows.entry(RowGroup::of(row)).or_default().add(row);
        self.interim_rows += 1;
    }

    /// Folds in a retired flow (settled: its gaps, timeouts, CNPs final)
    /// and its row.
    pub(crate) fn add(&mut self, mut f: Flow, row: &FlowRow) {
        self.rows.entry(RowGroup::of(row)).or_default().add(row);
        // Its partner's slot will be another flow's.
        f.set_paired(None);
        add_totals(&mut self.totals, &f);
        self.cnps += f.cnps();
        let tap = usize::from(f.iface);
        if self.capture_lost.len() <= tap {
            self.capture_lost.resize(tap + 1, 0);
        }
        self.capture_lost[tap] += f.sequence().gap_counts.capture_lost;
        self.hosts.insert(f.src_mac);
        if f.rare().stalls > 0 {
            self.stalled.entry(f.iface).or_default().push(f.id);
        }
        add_timeouts(&mut self.timeouts, &f);
        if f.responses() > 0 {
            let pair = (f.iface, f.src_ip, f.dst_ip);
            if self.answered.len() < PAIRS_K {
                self.answered.insert(pair);
            } else if !self.answered.contains(&pair) {
                self.answered_full = true;
            }
        }
        if self.qps.len() < PAIRS_K || self.qps.contains_key(&(f.src_ip, f.dst_ip)) {
            add_qps(&mut self.qps, &f, QPS_K);
        }
        self.keep_as_evidence(f, false);
    }

    /// Folds in a flow retired at the end of the run, once the summary and
    /// the findings are made ([`Analyzer::retire_all`]): only what is read
    /// after them, its row's sums and its place in the evidence, whose rows
    /// the reports show.
    ///
    /// [`Analyzer::retire_all`]: crate::analyze::Analyzer
    pub(crate) fn add_at_end(&mut self, mut f: Flow, row: &FlowRow) {
        self.rows.entry(RowGroup::of(row)).or_default().add(row);
        f.set_paired(None);
        self.keep_as_evidence(f, false);
    }

    /// [`Retired::add_at_end`] of a flow whose row is made nowhere: its
    /// sums were added by the caller ([`super::row::summed`]). `leave`: the
    /// process exits after the run and nothing reads the flow's state again,
    /// so a flow not kept as evidence is not freed (a `free` of its
    /// sender's part, ~120 instructions and a cache miss, for each of a
    /// million flows): the exit hands its memory back at once.
    pub(crate) fn add_summed_at_end(&mut self, mut f: Flow, leave: bool) {
        f.set_paired(None);
        self.keep_as_evidence(f, leave);
    }

    /// Keeps `f` when it is among the worst of a family so far; otherwise
    /// drops it, or leaves its memory unfreed (`leave`).
    fn keep_as_evidence(&mut self, f: Flow, leave: bool) {
        if self.families.is_empty() {
            self.families = FAMILIES.iter().map(|_| TopK::default()).collect();
        }
        let mut holders = 0u8;
        let mut dropped = Vec::new();
        for (&score, top) in scores(&f).iter().zip(&mut self.families) {
            if score == 0 {
                continue;
            }
            if top.worst.len() < EVIDENCE_K {
                top.worst.push(Reverse((score, f.id)));
                holders += 1;
                continue;
            }
            let Some(&Reverse(least)) = top.worst.peek() else {
                continue;
            };
            top.omitted += 1;
            // Ties go to the flow kept first: a run of equal flows (a
            // million alike) boxes none of them after the first K.
            if score > least.0 {
                top.worst.pop();
                top.worst.push(Reverse((score, f.id)));
                holders += 1;
                dropped.push(least.1);
            }
        }
        for id in dropped {
            if let Some(e) = self.evidence.get_mut(&id) {
                e.1 -= 1;
                if e.1 == 0 {
                    self.evidence.remove(&id);
                }
            }
        }
        if holders > 0 {
            self.evidence.insert(f.id, (Box::new(f), holders));
        } else if leave {
            std::mem::forget(f);
        }
    }

    /// The retired flows kept as evidence, by id.
    pub(crate) fn evidence(&self) -> impl Iterator<Item = &Flow> {
        self.evidence.values().map(|(f, _)| &**f)
    }

    /// The evidence flow `id`.
    pub(crate) fn get(&self, id: u32) -> Option<&Flow> {
        self.evidence.get(&id).map(|(f, _)| &**f)
    }

    /// Per family that left some out, how many flows that scored are not
    /// kept.
    pub(crate) fn omitted(&self) -> std::collections::BTreeMap<&'static str, u64> {
        FAMILIES
            .iter()
            .zip(&self.families)
            .filter(|(_, t)| t.omitted > 0)
            .map(|(f, t)| (f.name(), t.omitted))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::flows::Count;

    /// [`scores`] is every family's [`Family::score`], with rare counts
    /// and without.
    #[test]
    fn the_scores_of_a_flow_are_each_familys() {
        let mut f = Flow::new(3, (0, [1; 16], [2; 16], 7), 10);
        let each = |f: &Flow| FAMILIES.map(|fam| fam.score(f));
        assert_eq!(scores(&f), each(&f));
        f.add(Count::Bytes, 5000);
        f.add(Count::Retrans, 2);
        f.add(Count::Ce, 3);
        f.add(Count::DataPackets, 4);
        f.last_ts = 10 + UNANSWERED_NS;
        assert!(f.rare.is_none());
        assert_eq!(scores(&f), each(&f));
        f.rare_mut().icrc_errors = 1;
        f.rare_mut().stalls = 2;
        f.rare_mut().becn = 1;
        assert_eq!(scores(&f), each(&f));
    }
}
