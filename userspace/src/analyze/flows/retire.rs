//! Flows retired as they go idle (docs/analysis.md, "Retirement"; the
//! NetFlow/IPFIX inactive timeout): a flow with no frame for `--flow-idle`
//! of capture time is settled as at the end of a run, its row handed to the
//! sink, what the run keeps of it folded into [`Retired`], and its state,
//! slot and keys freed. A frame of its QP after that starts a new flow.
//!
//! Expiry is a min-heap of `(deadline, slot, flow id)`, pushed when a flow
//! is made and checked lazily against the flow's real last frame: an entry
//! whose flow saw frames since is pushed again at its new deadline, so a
//! flow costs one heap push per `--flow-idle` of activity, and a frame only
//! a peek at the heap's top.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::super::Config;
use super::super::hash::FastMap;
use super::super::rewind::{STALL_MIN_NS, froze};
use super::super::rows::{FlowKey, FlowRow};
use super::super::sums::{RowGroup, RowSums};
use super::super::taps::TapState;
use super::super::{Analyzer, Sink};
use super::interim::Intervals;
use super::timeline::flush_bin;
use super::{Flow, flow_row};

/// The CNPs of one `(iface, CNP src, CNP dst, CNP dest QP)`.
#[derive(Clone, Copy, Debug, Default)]
pub(in crate::analyze) struct CnpCount {
    pub(in crate::analyze) cnps: u64,
    /// The last one's time: a count no flow claims is dropped once it is
    /// `--flow-idle` old ([`Analyzer::expire`]).
    pub(in crate::analyze) last_ns: u64,
}

/// The CNPs counted for flow `f`'s CE marks (by pairing as known now).
pub(in crate::analyze) fn cnps_for(counts: &FastMap<FlowKey, CnpCount>, f: &Flow) -> u64 {
    f.cnp_qp().map_or(0, |qp| {
        counts
            .get(&(f.iface, f.dst_ip, f.src_ip, qp))
            .map_or(0, |c| c.cnps)
    })
}

/// The retirement rule (docs/analysis.md, "Retirement"): no frame since
/// `last_ts` for longer than `--flow-idle` (`idle_ns`) at `now`. QP flows
/// and UET's PDC directions retire by it.
pub(in crate::analyze) fn idle_past(last_ts: u64, idle_ns: u64, now: u64) -> bool {
    last_ts.saturating_add(idle_ns) < now
}

/// The first interval end after `now` past `boundary`: the intervals in
/// between had no frame, so they write no row (a far-future timestamp
/// would otherwise step through every empty interval).
pub(in crate::analyze) fn next_boundary(boundary: u64, now: u64, active: u64) -> u64 {
    let steps = (now - boundary).div_ceil(active.max(1)).max(1);
    boundary.saturating_add(steps.saturating_mul(active))
}

/// `(deadline, slot, flow id)`, earliest first.
type Deadlines = BinaryHeap<Reverse<(u64, u32, u32)>>;

/// Deadlines of the live flows, checked lazily.
#[derive(Debug, Default)]
pub(crate) struct Expiry {
    /// When each flow may have been idle for `--flow-idle`.
    idle: Deadlines,
    /// When each flow's current interval ends (`--flow-active`).
    active: Deadlines,
    /// The current intervals of flows that wrote interim rows.
    pub intervals: Intervals,
    /// The most flows live at once: QP flows and UET PDC directions
    /// together (`retirement.peak_live_flows`).
    pub peak_live: usize,
    /// When the CNP counts no flow claims are next swept.
    sweep_at: u64,
    /// Nothing above is due before this time (a lower bound, made at the
    /// end of [`Analyzer::expire`] and lowered by every deadline queued
    /// since): a frame before it skips the look, most frames do.
    wake: u64,
}

impl Expiry {
    /// Flow `id`, just made in `slot` at `ts`, is due to be looked at.
    /// Its first interval's end is queued now only when it comes before its
    /// first idle check; otherwise at the idle check before it (see
    /// [`Analyzer::expire`]): a flow that retires sooner, as most do, leaves
    /// no entry behind in `active`.
    pub(crate) fn new_flow(&mut self, config: &Config, ts: u64, slot: usize, id: u32) {
        let slot = slot as u32;
        let idle = ts.saturating_add(config.flow_idle_ns);
        self.idle.push(Reverse((idle, slot, id)));
        self.wake = self.wake.min(idle.saturating_add(1));
        if config.flow_active_ns <= config.flow_idle_ns {
            let end = ts.saturating_add(config.flow_active_ns);
            self.active.push(Reverse((end, slot, id)));
            self.wake = self.wake.min(end.saturating_add(1));
        }
    }

    /// The earliest time anything queued here may be due (see `wake`).
    fn settle_wake(&mut self) {
        let first = |heap: &Deadlines| heap.peek().map_or(u64::MAX, |e| e.0.0.saturating_add(1));
        self.wake = first(&self.idle)
            .min(first(&self.active))
            .min(self.sweep_at);
    }
}

/// The earliest entry of `heap` due before `now`, taken.
fn take_due(heap: &mut Deadlines, now: u64) -> Option<(u64, usize, u32)> {
    let &Reverse((deadline, slot, id)) = heap.peek()?;
    if deadline >= now {
        return None;
    }
    heap.pop();
    Some((deadline, slot as usize, id))
}

impl Analyzer {
    /// A QP flow or another transport's flow may have just been made: the
    /// most live at once, both counted (each a row of `flows.parquet`).
    pub(in crate::analyze) fn note_live(&mut self) {
        let live = self.flows.live() + self.transports.live_count();
        self.expiry.peak_live = self.expiry.peak_live.max(live);
    }

    /// Retires every flow idle for longer than `--flow-idle` at `now`.
    /// Writes the interim rows of flows active past `--flow-active`.
    pub(in crate::analyze) fn expire(&mut self, now: u64, sink: &mut impl Sink) {
        if now < self.expiry.wake.min(self.transports.wake()) {
            return;
        }
        let (idle, active) = (self.config.flow_idle_ns, self.config.flow_active_ns);
        while let Some((boundary, slot, id)) = take_due(&mut self.expiry.active, now) {
            if !self.flows.holds(slot, id) {
                continue;
            }
            self.interim(slot, boundary, sink);
            let next = next_boundary(boundary, now, active);
            self.expiry.active.push(Reverse((next, slot as u32, id)));
        }
        // The other transports' flows, by the same rule.
        self.transport_intervals(now, sink);
        // Once per `--flow-idle`: a sweep costs the counts held, which
        // are at most those of two such times.
        if now >= self.expiry.sweep_at {
            if self.expiry.sweep_at > 0 {
                self.sweep_cnps(now);
            }
            self.expiry.sweep_at = now.saturating_add(idle);
        }
        while let Some((checked, slot, id)) = take_due(&mut self.expiry.idle, now) {
            if !self.flows.holds(slot, id) {
                continue;
            }
            let last = self.flows[slot].last_ts;
            let due = last.saturating_add(idle);
            if idle_past(last, idle, now) {
                self.retire(slot, now, sink);
                continue;
            }
            self.expiry.idle.push(Reverse((due, slot as u32, id)));
            // Its first interval ends before its next idle check: queued.
            let first_end = self.flows[slot].first_ts.saturating_add(active);
            if active > idle && checked < first_end && first_end <= due {
                let entry = Reverse((first_end, slot as u32, id));
                self.expiry.active.push(entry);
            }
        }
        // The other transports' flows, by the same rule.
        self.retire_transports(now, sink);
        self.expiry.settle_wake();
        self.transports.settle_wake();
    }

    /// Flow `i`'s row over its life so far: its CNPs counted now, its
    /// filters made when the sink keeps it (`keeps`).
    fn life_row(&self, f: &Flow, cnps: u64, keeps: bool) -> FlowRow {
        let mut row = flow_row(f);
        row.cnps = cnps;
        if let Some(annotate) = self.annotate_row.filter(|_| keeps) {
            let origin = self.origin(row.iface);
            annotate(&mut row, origin);
        }
        row
    }

    /// Flow `i`'s interval ends at `boundary`: its interim row, when it
    /// had frames in the interval.
    fn interim(&mut self, i: usize, boundary: u64, sink: &mut impl Sink) {
        let f = &self.flows[i];
        let life = self.life_row(f, self.cnps_of(f), sink.keeps_flows());
        let (id, goodput) = (f.id, f.goodput_bytes());
        if let Some(row) = self.interim_row(id, goodput, life, boundary, sink) {
            self.retired.add_interim(&row);
        }
    }

    /// Flow `id`'s (a QP's or a UET PDC direction's) interval ends at
    /// `boundary`, `life` its row over its life, `goodput` its goodput
    /// bytes: its interim row, written when it had frames in the interval.
    pub(in crate::analyze) fn interim_row(
        &mut self,
        id: u32,
        goodput: u64,
        life: FlowRow,
        boundary: u64,
        sink: &mut impl Sink,
    ) -> Option<FlowRow> {
        let mut row = life.clone();
        self.expiry.intervals.since_of(id, goodput, &mut row);
        if row.packets == 0 {
            return None;
        }
        row.interim = true;
        sink.flow(&row);
        self.expiry.intervals.restart(id, goodput, life, boundary);
        Some(row)
    }

    /// Settles flow `i` with what the capture showed of it by `end`: its
    /// pending fills and gaps, its timeout rewinds, a sniffer tap's ICRCs.
    pub(in crate::analyze) fn settle(&mut self, i: usize, end: u64, sink: &mut impl Sink) {
        let acked = self.flows[i].paired().and_then(|p| self.flows[p].acked());
        self.sequencing(i, sink, |s, out| {
            crate::transport::sequencing::Sequencing::finish(s, end, &acked, out)
        });
        let timeouts = self.flows[i]
            .rewind_held()
            .map(|r| std::mem::take(&mut r.timeouts));
        for t in timeouts.unwrap_or_default() {
            self.judge_timeout(i, t);
        }
    }

    /// The CNPs counted for flow `f`'s CE marks (by pairing as known now).
    fn cnps_of(&self, f: &Flow) -> u64 {
        cnps_for(&self.cnp_counts, f)
    }

    /// Drops the CNP counts no live flow claims whose last CNP is older
    /// than `--flow-idle`: CNPs to a QP the capture never shows (they stay
    /// counted as unattributed).
    fn sweep_cnps(&mut self, now: u64) {
        let idle = self.config.flow_idle_ns;
        let (flows, by_hosts) = (&self.flows, &self.by_hosts);
        let claimed = |k: &FlowKey| {
            by_hosts.get(flows, &(k.0, k.2, k.1)).is_some_and(|v| {
                v.iter()
                    .any(|r| flows.get(r).and_then(Flow::cnp_qp) == Some(k.3))
            })
        };
        self.cnp_counts
            .retain(|k, c| now.saturating_sub(c.last_ns) <= idle || claimed(k));
    }

    /// Retires flow `i` at `now`.
    fn retire(&mut self, i: usize, now: u64, sink: &mut impl Sink) {
        self.settle(i, now, sink);
        let bin_ns = self.config.bin_ns;
        let sniffer = self
            .taps
            .get(usize::from(self.flows[i].iface))
            .is_some_and(TapState::is_sniffer);
        let cnps = self.cnps_of(&self.flows[i]);
        let key = self.flows[i].key();
        // Its keys go while its slot still holds it (the indexes read keys
        // from the flows); its partner keeps the partner's QP, not its slot.
        self.by_key.remove(&self.flows, i);
        self.by_hosts.remove(&self.flows, i);
        let mut f = self.flows.remove(i);
        if sniffer {
            if let Some(r) = f.rare.as_deref_mut() {
                r.icrc_errors = 0;
            }
            f.set_sniffer_tap();
        }
        // Silent from a pause's start until now: frozen by it, as a flow
        // silent to the end of its capture is.
        if let Some(p) = f.priority() {
            let idle = now.saturating_sub(f.last_ts);
            if idle >= STALL_MIN_NS && f.packets() > 0 {
                let (paused, cover) = self.pfc.paused(f.iface, p, f.last_ts, now, now);
                if froze(idle, paused, cover, f.last_ts) {
                    f.rare_mut().stalls += 1;
                    f.rare_mut().stall_paused_ns += paused;
                }
            }
        }
        if let Some(b) = self.bins.take(i) {
            flush_bin(&f, &b, &self.pfc, bin_ns, u64::MAX, sink);
        }
        f.set(super::Count::Cnps, cnps);
        if let Some(qp) = f.cnp_qp() {
            self.cnp_counts.remove(&(f.iface, f.dst_ip, f.src_ip, qp));
        }
        self.hints.remove(&key);
        self.retry_counts.remove(&key);
        self.matcher.forget(i);
        if let Some(p) = f.paired()
            && self.flows.get(p).is_some()
        {
            self.flows[p].set_paired(None);
        }
        let mut row = self.life_row(&f, f.cnps(), sink.keeps_flows());
        self.expiry.intervals.since(&f, &mut row);
        self.expiry.intervals.forget(f.id);
        sink.flow(&row);
        self.retired.add(f, &row);
    }

    /// More flows live at the end than `Config::rows_held`: each retires as
    /// at the end of the run, its row written to the sink and folded into
    /// [`Retired`] (its row's sums, the evidence: the summary and findings,
    /// made before, read nothing else of it). The rows of the flows
    /// in `named` (those the findings list) are kept in `rows` as well.
    /// For a sink that keeps no rows, a flow that wrote no interim row is
    /// summed from the columns its sums read ([`super::row::summed`]):
    /// its whole row would be made for nothing (`report` of a million QPs
    /// made two million; docs/benchmarks.md, "cpu2").
    pub(in crate::analyze) fn retire_all(
        &mut self,
        named: &std::collections::BTreeSet<u32>,
        rows: &mut Vec<FlowRow>,
        sink: &mut impl Sink,
    ) {
        let flows = std::mem::take(&mut self.flows);
        let keeps = sink.keeps_flows();
        let leave = self.config.leave_at_exit;
        // The sums of the group the last flow summed is in, out of
        // `retired.rows` while flows of that group follow (most flows of a
        // run share a few groups): each group's sums take the same
        // additions in the same order as through the map, without a
        // look-up a flow.
        let mut group: Option<(RowGroup, RowSums)> = None;
        flows.drain(|f| {
            if !keeps && !self.expiry.intervals.holds(f.id) && !named.contains(&f.id) {
                let (g, one) = super::row::summed(&f);
                match &mut group {
                    Some((held, sums)) if *held == g => sums.add_sums(&one),
                    held => {
                        if let Some((h, sums)) = held.take() {
                            self.retired.rows.insert(h, sums);
                        }
                        let mut sums = self.retired.rows.remove(&g).unwrap_or_default();
                        sums.add_sums(&one);
                        *held = Some((g, sums));
                    }
                }
                self.retired.add_summed_at_end(f, leave);
                return;
            }
            // This flow's row goes through the map: the held sums first.
            if let Some((h, sums)) = group.take() {
                self.retired.rows.insert(h, sums);
            }
            let mut row = self.life_row(&f, f.cnps(), keeps);
            self.expiry.intervals.since(&f, &mut row);
            sink.flow(&row);
            if named.contains(&f.id) {
                let mut kept = flow_row(&f);
                self.expiry.intervals.since(&f, &mut kept);
                rows.push(kept);
            }
            self.retired.add_at_end(f, &row);
        });
        if let Some((h, sums)) = group {
            self.retired.rows.insert(h, sums);
        }
    }
}
