//! Counting a run into its truth: each tap's frames read as the analyzer
//! reads them, and what the model's own events say happened there
//! ([`Truth::of_capture`]).

use super::{
    CaptureTruth, ConnectionTruth, FlowTruth, PausedTruth, PfcTruth, STORM_NS, TapTruth, Truth,
    psn_diff,
};
use crate::addr::Mac;
use crate::proto::ib::{self, PSN_MASK, aeth};
use crate::proto::ip::ECN_CE;
use crate::proto::mac_control::BITS_PER_QUANTUM;
use crate::synth::model::bridge::{CaptureOptions, icrc_fails, recorded_len_with};
use crate::synth::model::fabric::{QpSummary, Run};
use crate::synth::model::spec::{FrameSpec, Trigger};
use std::collections::{BTreeMap, BTreeSet};

/// What the model's own events say about one connection at one tap.
#[derive(Default)]
struct Seen {
    /// Request records (second copies left out): send order, time, index.
    recs: Vec<(u64, u64, u64)>,
    /// Running maximum of the send order over `recs`.
    max_seq: Vec<u64>,
    /// Highest index recorded.
    top: Option<u64>,
    /// Indices whose first transmission was not recorded before a higher one.
    holes: BTreeMap<u64, Hole>,
    /// Indices whose first transmission the mirror dropped.
    dropped_first: BTreeSet<u64>,
    /// The connection's rewinds of which a resent packet was recorded.
    rewinds: BTreeSet<u64>,
    /// One past the highest index an ACK recorded here covers.
    acked: u64,
}

#[derive(Default)]
struct Hole {
    /// The first transmission was recorded later.
    late: bool,
    /// A resend was recorded.
    resent: bool,
}

impl Seen {
    /// One frame of the connection recorded here (not a second copy).
    /// Returns, for a request the network delayed and a frame sent after it
    /// was recorded first, how late it is (ns) and how far the highest PSN
    /// that overtook it is.
    fn record(&mut self, ts: u64, m: &crate::synth::model::spec::FrameMeta) -> Option<(u64, u64)> {
        if let Some(a) = m.acked {
            self.acked = self.acked.max(a);
        }
        let i = m.index?;
        let s = m.send_seq;
        self.rewinds.extend(m.rewind_no);
        let mut late = None;
        if self.max_seq.last().is_some_and(|&top| top > s) {
            let k = self.max_seq.partition_point(|&x| x <= s);
            let first_ts = self.recs[k].1;
            let top = self.recs[k..]
                .iter()
                .filter(|r| r.0 > s)
                .map(|r| r.2)
                .max()
                .unwrap_or(i);
            if m.delayed {
                late = Some((ts - first_ts, top.saturating_sub(i)));
            }
        }
        let run_max = self.max_seq.last().map_or(s, |&x| x.max(s));
        self.recs.push((s, ts, i));
        self.max_seq.push(run_max);
        match self.top {
            None => self.top = Some(i),
            Some(t) if i > t => {
                for j in t + 1..i {
                    self.holes.insert(j, Hole::default());
                }
                self.top = Some(i);
            }
            Some(_) => {
                if let Some(h) = self.holes.get_mut(&i) {
                    if m.retrans {
                        h.resent = true;
                    } else {
                        h.late = true;
                    }
                }
            }
        }
        late
    }

    /// Sorts every missing first transmission into its `missing_*` class.
    fn classify(&self, ft: &mut FlowTruth, q: &QpSummary, naks: &BTreeSet<u64>) {
        // Acknowledged where this capture shows it: by an ACK recorded here.
        let acked = self.acked.min(q.resp_acked);
        for r in &self.rewinds {
            match q.rewinds.get(*r as usize) {
                Some(Trigger::Nak) => ft.model_rewinds_seen_nak += 1,
                Some(Trigger::Rnr) => ft.model_rewinds_seen_rnr += 1,
                Some(Trigger::Timeout) => ft.model_rewinds_seen_timeout += 1,
                None => {}
            }
        }
        for (&i, h) in &self.holes {
            ft.missing += 1;
            let (class, nak) = if h.late {
                (&mut ft.missing_late, &mut ft.missing_nak_late)
            } else if self.dropped_first.contains(&i) {
                let class = if h.resent {
                    &mut ft.missing_tap_dropped_resent
                } else if i < acked {
                    &mut ft.missing_tap_dropped_acked
                } else {
                    &mut ft.missing_unresolved
                };
                (class, &mut ft.missing_nak_tap_dropped)
            } else if h.resent {
                (
                    &mut ft.missing_lost_upstream,
                    &mut ft.missing_nak_lost_upstream,
                )
            } else {
                (&mut ft.missing_unresolved, &mut ft.missing_nak_unresolved)
            };
            *class += 1;
            if naks.contains(&i) {
                *nak += 1;
                ft.missing_nak += 1;
            }
        }
    }
}

#[derive(Default)]
struct SeqState {
    next: Option<u32>,
    prev: Option<u32>,
    max_ack: Option<u32>,
    pending_nak: Option<(u32, Trigger)>,
}

#[derive(Default)]
struct PauseState {
    cur: Option<(u64, u64)>,
    paused: u64,
    max: u64,
    storms: u64,
    spans: Vec<(u64, u64)>,
}

impl PauseState {
    fn close(&mut self) {
        if let Some((s, e)) = self.cur.take() {
            let d = e.saturating_sub(s);
            self.paused += d;
            self.max = self.max.max(d);
            if d > STORM_NS {
                self.storms += 1;
            }
            self.spans.push((s, e));
        }
    }
}

/// Pause time of `q` quanta at `gbps`, rounded down to whole nanoseconds
/// (the analyzer's arithmetic).
pub fn quanta_ns(q: u16, gbps: f64) -> u64 {
    let bps = (gbps * 1e9).round() as u128;
    (q as u128 * BITS_PER_QUANTUM as u128 * 1_000_000_000 / bps.max(1)) as u64
}

/// Total length of the union of `spans`.
fn union_ns(mut spans: Vec<(u64, u64)>) -> u64 {
    spans.sort_unstable();
    let mut total = 0;
    let mut cur: Option<(u64, u64)> = None;
    for (s, e) in spans {
        match &mut cur {
            Some((_, ce)) if s <= *ce => *ce = (*ce).max(e),
            _ => {
                if let Some((cs, ce)) = cur {
                    total += ce - cs;
                }
                cur = Some((s, e));
            }
        }
    }
    total + cur.map_or(0, |(s, e)| e - s)
}

type FlowState = (FlowTruth, SeqState, Seen);

fn entry<'a>(
    flows: &'a mut BTreeMap<(usize, usize), FlowState>,
    run: &Run,
    t: usize,
    flow: usize,
) -> &'a mut FlowState {
    flows.entry((t, flow)).or_insert_with(|| {
        let q = &run.qps[flow];
        (
            FlowTruth {
                tap: t,
                iface: run.taps[t].name.clone(),
                flow,
                src_ip: Some(q.src_ip),
                dst_ip: Some(q.dst_ip),
                dest_qp: q.responder_qpn,
                paired_qp: q.requester_qpn,
                udp_sport: q.udp_sport,
                ..Default::default()
            },
            SeqState::default(),
            Seen::default(),
        )
    })
}

/// `(tap, flow, send_seq)` of every trimmed request a tap recorded that a
/// NAK of its responder the same tap recorded asked for again: one naming
/// its index or an earlier one, recorded after it and before its index was
/// sent again, or recorded before it and still outstanding (its index not
/// sent again since) — the frames the analysis can call trimmed there
/// (docs/synth-truth.md, "Trimming switches").
fn trims_naked(run: &Run) -> BTreeSet<(usize, Option<usize>, u64)> {
    // Every sequence-error NAK of the model, by (flow, resp_seq): the index
    // it named.
    let mut named: BTreeMap<(usize, u64), u64> = BTreeMap::new();
    for (q, s) in run.qps.iter().enumerate() {
        for (&(_, resp), &n) in s.nak_causes.iter().zip(&s.nak_named) {
            named.insert((q, resp), n);
        }
        for &(n, resp) in &s.trim_naks {
            named.insert((q, resp), n);
        }
    }
    let mut out = BTreeSet::new();
    if run.qps.iter().all(|s| s.trim_naks.is_empty()) {
        return out;
    }
    // Per (tap, flow): whether a whole request was recorded (what a trim
    // is judged against), NAKs outstanding (the index named), and trimmed
    // requests waiting for one (index, send_seq).
    type Waits = (bool, Vec<u64>, Vec<(u64, u64)>);
    let mut at: BTreeMap<(usize, usize), Waits> = BTreeMap::new();
    for (f, m) in run.frames.iter().zip(&run.meta) {
        let (Some(q), FrameSpec::Roce(r), false) = (m.flow, &f.frame, m.copy) else {
            continue;
        };
        let (whole, naks, waiting) = at.entry((f.tap, q)).or_default();
        if let Some(i) = m.index {
            waiting.retain(|&(w, _)| w != i);
            *whole |= !r.trimmed;
            if r.trimmed && *whole {
                if naks.iter().any(|&n| n < i) {
                    out.insert((f.tap, Some(q), m.send_seq));
                } else {
                    waiting.push((i, m.send_seq));
                }
            }
            naks.retain(|&n| n != i);
        } else if let Some(&n) = m.resp_seq.and_then(|s| named.get(&(q, s))) {
            for &(_, send) in waiting.iter().filter(|&&(w, _)| w >= n) {
                out.insert((f.tap, Some(q), send));
            }
            waiting.retain(|&(w, _)| w < n);
            naks.push(n);
        }
    }
    out
}

impl Truth {
    /// The truth of the capture [`crate::synth::model::bridge::write_capture`] writes of
    /// `run` with `opts`.
    pub fn of_capture(run: &Run, opts: &CaptureOptions) -> Truth {
        let only = opts.taps.as_deref();
        let chosen: Vec<usize> = match only {
            Some(t) => t.iter().copied().filter(|&t| t < run.taps.len()).collect(),
            None => (0..run.taps.len()).collect(),
        };
        let mut wanted = vec![false; run.taps.len()];
        for &t in &chosen {
            wanted[t] = true;
        }
        let mut capture = CaptureTruth {
            taps: chosen,
            epoch_ns: crate::synth::model::bridge::EPOCH_NS,
            sniffer: opts.sniffer.is_some(),
            sniffer_cut: opts.sniffer.unwrap_or(0),
            snaplen: opts.snaplen,
            ..CaptureTruth::default()
        };
        let mut taps: Vec<TapTruth> = run
            .taps
            .iter()
            .enumerate()
            .map(|(i, t)| TapTruth {
                tap: i,
                iface: t.name.clone(),
                link_gbps: t.link_gbps,
                ..Default::default()
            })
            .collect();
        let mut flows: BTreeMap<(usize, usize), FlowState> = BTreeMap::new();
        let mut pauses: BTreeMap<(usize, [u8; 6], u8), (PfcTruth, PauseState)> = BTreeMap::new();
        let trim_naked = trims_naked(run);
        for (i, (f, m)) in run.frames.iter().zip(&run.meta).enumerate() {
            let t = f.tap;
            let inband = run.switch_log.inband_len(i);
            if !wanted[t] {
                continue;
            }
            if capture.frames == 0 {
                capture.first_ts_ns = f.ts_ns;
            }
            capture.frames += 1;
            capture.last_ts_ns = f.ts_ns;
            let tt = &mut taps[t];
            if tt.frames == 0 {
                tt.first_ts_ns = f.ts_ns;
            }
            tt.frames += 1;
            tt.last_ts_ns = f.ts_ns;
            tt.bytes += (f.frame.frame_len() as usize + inband) as u64;
            let (_, whole) = recorded_len_with(&f.frame, inband, opts);
            let trimmed =
                !m.copy && m.index.is_some() && trim_naked.contains(&(t, m.flow, m.send_seq));
            let icrc_bad = whole && icrc_fails(&f.frame, opts) == Some(true) && !trimmed;
            tt.cut += !whole as u64;
            tt.icrc_bad += icrc_bad as u64;
            tt.trimmed += trimmed as u64;
            tt.tap_duplicates += m.copy as u64;
            if let Some(flow) = m.flow {
                let (ft, _, seen) = entry(&mut flows, run, t, flow);
                ft.cut += (!whole && !m.copy) as u64;
                ft.icrc_bad += (icrc_bad && !m.copy) as u64;
                ft.trimmed += trimmed as u64;
                ft.tap_duplicates += m.copy as u64;
                ft.tap_duplicate_requests += (m.copy && m.index.is_some()) as u64;
                if !m.copy
                    && let Some((ns, psns)) = seen.record(f.ts_ns, m)
                {
                    ft.late += 1;
                    ft.max_late_ns = ft.max_late_ns.max(ns);
                    ft.max_late_psns = ft.max_late_psns.max(psns);
                    tt.late += 1;
                }
            }
            let iface = &run.taps[t].name;
            match &f.frame {
                FrameSpec::Roce(r) => {
                    tt.roce += 1;
                    // A mirror's copy takes no part in the flow's counters.
                    let Some(flow) = m.flow.filter(|_| !m.copy) else {
                        continue;
                    };
                    let (ft, st, _) = entry(&mut flows, run, t, flow);
                    if ib::is_request(r.opcode) {
                        ft.data_packets += 1;
                        ft.payload_bytes += r.payload_len as u64;
                        ft.ce += (r.ecn == ECN_CE) as u64;
                        ft.corrupt += r.corrupt as u64;
                        ft.model_retrans += m.retrans as u64;
                        ft.model_spurious += m.spurious as u64;
                        match m.rewind {
                            Some(Trigger::Nak) => ft.model_rewinds_nak += 1,
                            Some(Trigger::Timeout) => ft.model_rewinds_timeout += 1,
                            _ => {}
                        }
                        match st.next {
                            None => st.next = Some((r.psn + 1) & PSN_MASK),
                            Some(next) => {
                                let d = psn_diff(r.psn, next);
                                if d == 0 {
                                    st.next = Some((r.psn + 1) & PSN_MASK);
                                } else if d > 0 {
                                    ft.gaps += 1;
                                    st.next = Some((r.psn + 1) & PSN_MASK);
                                } else {
                                    ft.retrans_packets += 1;
                                    if st.prev.is_none_or(|p| r.psn != (p + 1) & PSN_MASK) {
                                        ft.rewinds += 1;
                                        ft.max_rewind_depth = ft.max_rewind_depth.max((-d) as u32);
                                        match st.pending_nak.take() {
                                            Some((psn, Trigger::Nak)) if psn == r.psn => {
                                                ft.rewinds_nak += 1
                                            }
                                            Some((psn, Trigger::Rnr)) if psn == r.psn => {
                                                ft.rewinds_rnr += 1
                                            }
                                            _ => ft.rewinds_timeout += 1,
                                        }
                                    }
                                    if st.max_ack.is_some_and(|a| psn_diff(a, r.psn) >= 0) {
                                        ft.spurious_retrans += 1;
                                    }
                                }
                            }
                        }
                        st.prev = Some(r.psn);
                    } else if let Some(a) = r.aeth {
                        if aeth::is_ack(a.syndrome) {
                            ft.acks += 1;
                            if st.max_ack.is_none_or(|m| psn_diff(r.psn, m) > 0) {
                                st.max_ack = Some(r.psn);
                            }
                        } else if aeth::is_nak(a.syndrome) {
                            ft.naks += 1;
                            st.pending_nak = Some((r.psn, Trigger::Nak));
                        } else if aeth::is_rnr_nak(a.syndrome) {
                            ft.rnr_naks += 1;
                            st.pending_nak = Some((r.psn, Trigger::Rnr));
                        }
                    }
                }
                // Another transport's truth is its model's own
                // (`crate::synth::model::TransportModel::truth`).
                FrameSpec::Transport(_) => {}
                FrameSpec::Cnp(_) => {
                    tt.cnp += 1;
                    if let Some(flow) = m.flow.filter(|_| !m.copy) {
                        entry(&mut flows, run, t, flow).0.cnps += 1;
                    }
                }
                FrameSpec::Pfc(p) => {
                    tt.pfc += 1;
                    let gbps = run.taps[t].link_gbps;
                    for prio in 0..8u8 {
                        if p.enable_vector & (1 << prio) == 0 {
                            continue;
                        }
                        let (pt, ps) = pauses.entry((t, p.src_mac, prio)).or_insert_with(|| {
                            (
                                PfcTruth {
                                    tap: t,
                                    iface: iface.clone(),
                                    src_mac: Mac(p.src_mac).to_string(),
                                    priority: prio,
                                    ..Default::default()
                                },
                                PauseState::default(),
                            )
                        });
                        pt.frames += 1;
                        let q = p.quanta[prio as usize];
                        if q == 0 {
                            pt.xon_frames += 1;
                            if let Some((_, e)) = &mut ps.cur {
                                *e = (*e).min(f.ts_ns);
                            }
                            ps.close();
                        } else {
                            let end = f.ts_ns + quanta_ns(q, gbps);
                            match &mut ps.cur {
                                Some((_, e)) if f.ts_ns <= *e => *e = end,
                                _ => {
                                    ps.close();
                                    ps.cur = Some((f.ts_ns, end));
                                }
                            }
                        }
                    }
                }
            }
        }
        for d in &run.tap_drops {
            if !wanted[d.tap] {
                continue;
            }
            taps[d.tap].tap_dropped += 1;
            if let Some(flow) = d.meta.flow {
                let (ft, _, seen) = entry(&mut flows, run, d.tap, flow);
                ft.tap_dropped += 1;
                if let (Some(i), false) = (d.meta.index, d.meta.retrans) {
                    seen.dropped_first.insert(i);
                }
            }
        }
        let naks: Vec<BTreeSet<u64>> = run
            .qps
            .iter()
            .map(|q| q.nak_named.iter().copied().collect())
            .collect();
        for (ft, _, seen) in flows.values_mut() {
            seen.classify(ft, &run.qps[ft.flow], &naks[ft.flow]);
        }
        // A pause still running when the capture ends is cut there.
        let end = capture.last_ts_ns;
        let dur = capture.last_ts_ns - capture.first_ts_ns;
        capture.duration_ns = dur;
        let fraction = |ns: u64| if dur > 0 { ns as f64 / dur as f64 } else { 0.0 };
        type Spans = Vec<(u64, u64)>;
        let mut paused: BTreeMap<(usize, u8), (PausedTruth, Spans)> = BTreeMap::new();
        let mut pfc = vec![];
        for (mut pt, mut ps) in pauses.into_values() {
            if let Some((_, e)) = &mut ps.cur {
                *e = (*e).min(end);
            }
            ps.close();
            pt.paused_ns = ps.paused;
            pt.max_pause_ns = ps.max;
            pt.storms = ps.storms;
            pt.fraction = fraction(ps.paused);
            let (u, spans) = paused.entry((pt.tap, pt.priority)).or_insert_with(|| {
                (
                    PausedTruth {
                        tap: pt.tap,
                        iface: pt.iface.clone(),
                        priority: pt.priority,
                        ..Default::default()
                    },
                    vec![],
                )
            });
            u.frames += pt.frames;
            u.xon_frames += pt.xon_frames;
            u.storms += pt.storms;
            spans.extend(ps.spans.iter().copied());
            pfc.push(pt);
        }
        let paused = paused
            .into_values()
            .map(|(mut u, spans)| {
                u.paused_ns = union_ns(spans);
                u.fraction = fraction(u.paused_ns);
                u
            })
            .collect();
        let hops = crate::synth::model::hop_truth::of(run, &wanted);
        Truth {
            hops,
            pfc_trees: crate::synth::model::pause_truth::of(run, &wanted),
            nics: crate::synth::model::nic_truth::of(run, &wanted),
            telemetry: crate::synth::model::telemetry_truth::TelemetryTruth::of(run),
            scenario: run.scenario.clone(),
            seed: run.seed,
            capture,
            taps,
            flows: flows.into_values().map(|(f, _, _)| f).collect(),
            pfc,
            paused,
            qps: run.qps.clone(),
            fabric: run.fabric.clone(),
            connections: run
                .qps
                .iter()
                .enumerate()
                .map(|(flow, q)| ConnectionTruth::of(flow, q, run.rto_ns))
                .collect(),
        }
    }
}
