//! Ground truth of a run, per tap (what a capture at that point holds)
//! and per connection (what the senders and responders did).
//!
//! Two kinds of per-tap counters, told apart by their doc comments:
//!
//! * the capture read literally, in the analyzer's vocabulary
//!   (docs/analysis.md), over the frames the tap recorded, the mirror's
//!   copies left out (`data_packets`, `rewinds`, `gaps`, …); here a rewind is
//!   a retransmission whose PSN does not follow the previous request's;
//! * what happened, counted from the model's own events and the mirror's
//!   own decisions, never from the frames' order (`model_*`, `tap_*`,
//!   `late`, `missing_*`, `icrc_bad`, `cut`): what the analysis should
//!   conclude.
//!
//! `connections` holds the model's counters per connection, not
//! tap-relative. docs/synth-truth.md describes every field.

use super::bridge::{CaptureOptions, icrc_fails, recorded_len_with};
use super::fabric::{FabricStats, QpSummary, Run};
use super::spec::{FrameSpec, Trigger};
use crate::addr::Mac;
use crate::proto::ib::{self, PSN_MASK, aeth};
use crate::proto::ip::ECN_CE;
use crate::proto::mac_control::BITS_PER_QUANTUM;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

/// Default storm threshold: a continuous pause longer than this.
pub const STORM_NS: u64 = 200_000_000;

/// 24-bit serial PSN distance: the analyzer's own arithmetic.
pub use crate::analyze::psn::diff as psn_diff;

#[derive(Clone, Debug, Default, Serialize)]
pub struct FlowTruth {
    pub tap: usize,
    pub iface: String,
    /// Index of the model's connection.
    pub flow: usize,
    pub src_ip: Option<Ipv4Addr>,
    pub dst_ip: Option<Ipv4Addr>,
    pub dest_qp: u32,
    pub paired_qp: u32,
    pub udp_sport: u16,
    pub data_packets: u64,
    pub payload_bytes: u64,
    pub retrans_packets: u64,
    pub rewinds: u64,
    pub rewinds_nak: u64,
    pub rewinds_rnr: u64,
    pub rewinds_timeout: u64,
    pub max_rewind_depth: u32,
    pub spurious_retrans: u64,
    pub gaps: u64,
    pub acks: u64,
    pub naks: u64,
    pub rnr_naks: u64,
    pub ce: u64,
    pub cnps: u64,
    pub corrupt: u64,
    /// Request frames here the requester sent as resends (model's view).
    pub model_retrans: u64,
    /// Request frames here that began a Go-Back-N, by the requester's reason.
    pub model_rewinds_nak: u64,
    pub model_rewinds_timeout: u64,
    /// Resends here of packets the responder had already acknowledged.
    pub model_spurious: u64,
    /// The requester's Go-Back-N rewinds of which this tap recorded at
    /// least one resent packet, by the requester's reason (equal to
    /// `model_rewinds_*` unless the mirror dropped a rewind's first packet).
    pub model_rewinds_seen_nak: u64,
    pub model_rewinds_seen_rnr: u64,
    pub model_rewinds_seen_timeout: u64,
    /// Frames of this connection (requests, responses, CNPs) the mirror
    /// should have recorded here and dropped (the tap's `drop`).
    pub tap_dropped: u64,
    /// Second copies of this connection's frames the mirror recorded here
    /// (the tap's `duplicate`); every other count of the flow leaves them out.
    pub tap_duplicates: u64,
    /// Of those, copies of request frames.
    pub tap_duplicate_requests: u64,
    /// Request frames recorded here after a frame of the connection that
    /// the requester sent after them, because the network delayed them
    /// (a `reorder` impairment upstream of this tap).
    pub late: u64,
    /// Of those, the longest time from the first frame that overtook one to
    /// the late frame itself, and the largest PSN distance from the highest
    /// PSN that overtook it.
    pub max_late_ns: u64,
    pub max_late_psns: u64,
    /// First transmissions missing here: the tap recorded a later packet of
    /// the connection before it recorded them (or never recorded them).
    /// Nothing before the first request the tap recorded counts. Each is
    /// exactly one of the five `missing_*` below; `missing_nak` overlaps.
    pub missing: u64,
    /// The mirror dropped every copy of it that passed here, and an ACK
    /// recorded here covers it: the capture lost it, the network did not.
    pub missing_tap_dropped_acked: u64,
    /// The mirror dropped its first transmission and recorded a resend.
    pub missing_tap_dropped_resent: u64,
    /// The network lost the first transmission before this tap: the tap
    /// first recorded it in a resend.
    pub missing_lost_upstream: u64,
    /// The network delayed it: the tap recorded the first transmission
    /// late (by first transmissions, the same as `late`).
    pub missing_late: u64,
    /// Neither recorded later nor covered by an ACK recorded here (the
    /// capture ended first, or the tap does not see the responses).
    pub missing_unresolved: u64,
    /// Of the missing, those the responder named in a sequence-error NAK,
    /// and of those how many are late, lost upstream, dropped by the mirror
    /// (`missing_tap_dropped_*`) and unresolved.
    pub missing_nak: u64,
    pub missing_nak_late: u64,
    pub missing_nak_lost_upstream: u64,
    pub missing_nak_tap_dropped: u64,
    pub missing_nak_unresolved: u64,
    /// RoCE frames of this connection (requests, responses, CNPs) recorded
    /// whole whose ICRC fails: a bit error upstream of this tap, a trim not
    /// `trimmed`, or every frame of a sniffer capture.
    pub icrc_bad: u64,
    /// Requests a switch trimmed before this tap, recorded here, that a NAK
    /// recorded here asked for again ([`trims_naked`]; absent when none).
    #[serde(skip_serializing_if = "super::is_zero")]
    pub trimmed: u64,
    /// Frames of this connection recorded with fewer bytes than the frame
    /// had (snaplen, or a sniffer's cut).
    pub cut: u64,
}

/// PFC pause per `(tap, src_mac, priority)`: one sender's pauses.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PfcTruth {
    pub tap: usize,
    pub iface: String,
    pub src_mac: String,
    pub priority: u8,
    pub frames: u64,
    pub xon_frames: u64,
    pub paused_ns: u64,
    /// paused_ns over the capture's duration (first to last frame).
    pub fraction: f64,
    pub max_pause_ns: u64,
    pub storms: u64,
}

/// Paused time per `(tap, priority)`, the union over every sender's pauses:
/// what `summary.json`'s `pfc` entries report.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PausedTruth {
    pub tap: usize,
    pub iface: String,
    pub priority: u8,
    /// PFC frames with this priority's class-enable bit (XON included).
    pub frames: u64,
    pub xon_frames: u64,
    pub paused_ns: u64,
    /// paused_ns over the capture's duration (first to last frame).
    pub fraction: f64,
    pub storms: u64,
}

/// The capture the truth describes: the taps written, in model time
/// (a capture's timestamps are `epoch_ns` + model time).
#[derive(Clone, Debug, Default, Serialize)]
pub struct CaptureTruth {
    pub taps: Vec<usize>,
    pub epoch_ns: u64,
    pub frames: u64,
    pub first_ts_ns: u64,
    pub last_ts_ns: u64,
    pub duration_ns: u64,
    /// Written as a NIC's RDMA sniffer records (UDP source port 4791 and a
    /// rewritten source MAC on every RoCE frame), frames cut at
    /// `sniffer_cut` bytes (0: not cut) with the record's original length
    /// equal to what it holds.
    pub sniffer: bool,
    pub sniffer_cut: u32,
    /// Record snaplen (0: none); a cut record keeps its original length.
    pub snaplen: u32,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct TapTruth {
    pub tap: usize,
    pub iface: String,
    pub frames: u64,
    pub roce: u64,
    pub cnp: u64,
    pub pfc: u64,
    pub bytes: u64,
    pub first_ts_ns: u64,
    pub last_ts_ns: u64,
    /// Speed of the tapped link: PFC quanta to time.
    pub link_gbps: f64,
    /// Frames (any kind, PFC included) the mirror should have recorded and
    /// dropped; second copies it recorded.
    pub tap_dropped: u64,
    pub tap_duplicates: u64,
    /// The sum of the flows' `late`.
    pub late: u64,
    /// Records (second copies included) of RoCE frames held whole whose
    /// ICRC fails, and of frames of any kind held cut.
    pub icrc_bad: u64,
    pub cut: u64,
    /// The sum of the flows' `trimmed` (absent when none).
    #[serde(skip_serializing_if = "super::is_zero")]
    pub trimmed: u64,
}

/// One connection: what its requester and responder did, and what the
/// network did to its packets. Counted by the model, not at a tap.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ConnectionTruth {
    pub flow: usize,
    pub src_ip: Option<Ipv4Addr>,
    pub dst_ip: Option<Ipv4Addr>,
    pub requester_qpn: u32,
    pub responder_qpn: u32,
    pub udp_sport: u16,
    /// The connection's RoCE path MTU (`flows.N.mtu`, else `mtu`).
    pub mtu: u32,
    /// Requester: request packets sent, of them first transmissions and
    /// resends.
    pub packets_sent: u64,
    pub first_transmissions: u64,
    pub packets_resent: u64,
    /// Retransmission timer expiries with packets outstanding (each one
    /// rewinds to the oldest unacknowledged packet).
    pub timeouts: u64,
    /// Go-Back-N rewinds, by reason: the first resend after a timeout, a
    /// sequence-error NAK or an RNR NAK. A resend that skips forward (an
    /// ACK covered the rest) is part of the same rewind.
    pub rewinds_timeout: u64,
    pub rewinds_nak: u64,
    pub rewinds_rnr: u64,
    /// Resends of packets the responder had already received (in order or
    /// placed) when they left the requester; of packets it had already
    /// acknowledged.
    pub spurious_resends: u64,
    pub spurious_resends_acked: u64,
    pub naks_received: u64,
    /// Responder: ACKs and sequence-error NAKs sent, request packets
    /// received again (duplicates), placed out of order, discarded for a
    /// bad ICRC, and delivered in order.
    pub acks_sent: u64,
    pub naks_sent: u64,
    pub duplicates_received: u64,
    pub ooo_received: u64,
    pub corrupt_discarded: u64,
    pub delivered_packets: u64,
    /// Network: this connection's packets delayed on a longer path, hit by
    /// a bit error, lost on a link, discarded by a switch; responses the
    /// requester discarded for a bad ICRC.
    pub reordered: u64,
    pub corrupted: u64,
    pub link_drops: u64,
    pub switch_drops: u64,
    pub corrupt_responses_discarded: u64,
    /// The requester's retransmission timeout (`nic.min_rto_ns`: each
    /// expiry came exactly this long after the timer's last start), and its
    /// expiries with packets outstanding by what followed: the rewind's first
    /// resend left at the expiry instant (nothing held the requester), left
    /// later (a pause or the rate limit held it), or the timer fired again
    /// first.
    pub rto_ns: u64,
    pub timeouts_resent_at_once: u64,
    pub timeouts_resent_later: u64,
    pub timeouts_fired_again: u64,
    /// Of `link_drops`, frames longer than the link carries (`max_frame`).
    pub oversize_drops: u64,
    /// The most Go-Back-N rewinds to one packet with no ACK progress
    /// between, and that packet's PSN (null without a rewind).
    pub max_rewinds_same_psn: u64,
    pub stuck_psn: Option<u32>,
    /// The switch ports its request packets left by, in path order, as
    /// `NODE-TOWARD` (`leaf0-spine0`): where each switch's ECMP hash put
    /// the connection.
    pub requests_via: Vec<String>,
    /// The priority (PCP) and DSCP its data and ACKs were sent with
    /// (`flows.N.prio`/`dscp`, else `data_prio`/`data_dscp`), and the DSCP
    /// rewrites its frames met on the path, `NODE-TOWARD: FROM → TO`.
    pub priority: u8,
    pub dscp: u8,
    pub dscp_rewrites: Vec<String>,
    /// Its requester runs DCQCN (`nic.dcqcn.enabled`, `flows.N.dcqcn`);
    /// CNPs it received and marked packets its responder received.
    pub dcqcn: bool,
    pub cnps_received: u64,
    pub ce_received: u64,
    /// Every step of the requester's sending rate, in order: each CNP it
    /// received (`cause` `cnp`: the cut, or no change with DCQCN off) and
    /// each increase of the DCQCN timer (`timer`), with the rate it paced
    /// its packets at before and after, in Gb/s (the DCQCN rate capped by
    /// the flow's offered `gbps`).
    pub rate_steps: Vec<super::qp::RateStep>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Truth {
    pub scenario: String,
    pub seed: u64,
    pub capture: CaptureTruth,
    pub taps: Vec<TapTruth>,
    pub flows: Vec<FlowTruth>,
    pub pfc: Vec<PfcTruth>,
    pub paused: Vec<PausedTruth>,
    /// The model's own per-connection counters (not tap-relative).
    pub qps: Vec<QpSummary>,
    pub fabric: FabricStats,
    /// What each connection's requester and responder did.
    pub connections: Vec<ConnectionTruth>,
    /// Per connection and tap pair: what passed one tap and reached the
    /// other, what the network lost between them, the one-way delays.
    pub hops: Vec<super::hop_truth::HopTruth>,
    /// The PFC congestion trees: who paused whom, from the model's record
    /// of why each port paused, and which taps saw each pause.
    pub pfc_trees: super::pause_truth::PauseTrees,
    /// How the NICs reacted, per NIC as the taps name it: NAK generation
    /// and reaction latencies from the model's record of their causes.
    pub nics: Vec<super::nic_truth::NicTruth>,
    /// The switches' telemetry reports and the queue the model congested
    /// (`synth --telemetry`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<super::telemetry_truth::TelemetryTruth>,
}

impl ConnectionTruth {
    fn of(flow: usize, q: &QpSummary, rto_ns: u64) -> ConnectionTruth {
        let s = &q.stats;
        let count = |p: fn(&super::qp::TimerFire) -> bool| {
            q.timer_fires.iter().filter(|f| p(f)).count() as u64
        };
        ConnectionTruth {
            flow,
            src_ip: Some(q.src_ip),
            dst_ip: Some(q.dst_ip),
            requester_qpn: q.requester_qpn,
            responder_qpn: q.responder_qpn,
            udp_sport: q.udp_sport,
            mtu: q.mtu,
            packets_sent: s.sent_packets,
            first_transmissions: s.sent_packets - s.retrans_packets,
            packets_resent: s.retrans_packets,
            timeouts: s.timeouts,
            rewinds_timeout: s.rewinds_timeout,
            rewinds_nak: s.rewinds_nak,
            rewinds_rnr: s.rewinds_rnr,
            spurious_resends: s.spurious_received,
            spurious_resends_acked: s.spurious_retrans,
            naks_received: s.naks_received,
            acks_sent: s.acks_sent,
            naks_sent: s.naks_sent,
            duplicates_received: s.duplicate_packets,
            ooo_received: s.ooo_received,
            corrupt_discarded: s.corrupt_discarded,
            delivered_packets: s.delivered_packets,
            reordered: s.reordered,
            corrupted: s.corrupted,
            link_drops: s.link_drops,
            switch_drops: s.switch_drops,
            corrupt_responses_discarded: s.corrupt_responses_discarded,
            rto_ns,
            timeouts_resent_at_once: count(|f| f.resent_ns == Some(f.fired_ns)),
            timeouts_resent_later: count(|f| f.resent_ns.is_some_and(|r| r > f.fired_ns)),
            timeouts_fired_again: count(|f| f.resent_ns.is_none()),
            oversize_drops: s.oversize_drops,
            max_rewinds_same_psn: q.max_rewind_run.map_or(0, |r| r.1),
            stuck_psn: q.max_rewind_run.map(|r| r.0),
            requests_via: q.requests_via.clone(),
            priority: q.priority,
            dscp: q.dscp,
            dscp_rewrites: q.dscp_rewrites.clone(),
            dcqcn: q.dcqcn,
            cnps_received: s.cnps_received,
            ce_received: s.ce_received,
            rate_steps: q.rate_log.clone(),
        }
    }
}

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
    fn record(&mut self, ts: u64, m: &super::spec::FrameMeta) -> Option<(u64, u64)> {
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

impl Truth {
    /// The truth of a capture holding every tap of `run`.
    pub fn of(run: &Run) -> Truth {
        Truth::of_taps(run, None)
    }

    /// The truth of a capture holding the taps `only` (`None`: every tap),
    /// written whole.
    pub fn of_taps(run: &Run, only: Option<&[usize]>) -> Truth {
        Truth::of_capture(
            run,
            &CaptureOptions {
                taps: only.map(<[usize]>::to_vec),
                ..CaptureOptions::default()
            },
        )
    }

    /// The truth of the capture [`super::bridge::write_capture`] writes of
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
            epoch_ns: super::bridge::EPOCH_NS,
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
                // (`super::TransportModel::truth`).
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
        let hops = super::hop_truth::of(run, &wanted);
        Truth {
            hops,
            pfc_trees: super::pause_truth::of(run, &wanted),
            nics: super::nic_truth::of(run, &wanted),
            telemetry: super::telemetry_truth::TelemetryTruth::of(run),
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

    /// The flow truth of connection `flow` at tap `tap`.
    pub fn flow(&self, tap: usize, flow: usize) -> Option<&FlowTruth> {
        self.flows.iter().find(|f| f.tap == tap && f.flow == flow)
    }

    /// Paused time at a tap (union over senders, summed over priorities),
    /// as a fraction of the capture's duration.
    pub fn pause_fraction(&self, tap: usize) -> f64 {
        self.paused
            .iter()
            .filter(|p| p.tap == tap)
            .map(|p| p.fraction)
            .sum()
    }
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
