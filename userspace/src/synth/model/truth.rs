//! Ground truth of a run, in the analyzer's vocabulary (docs/analysis.md,
//! "Analysis definitions"), per tap: what a capture at that point sees.
//!
//! Counters follow the definitions over the frames the tap recorded; the
//! model's own annotations (which flow a frame belongs to, whether the
//! requester was resending, why it rewound, whether the responder had
//! already acknowledged it) ride along as `model_*` fields so a test can
//! hold the two views against each other.

use super::fabric::{FabricStats, QpSummary, Run};
use super::spec::{FrameSpec, Trigger};
use crate::proto::ib::{self, PSN_MASK, aeth};
use crate::proto::ip::ECN_CE;
use crate::proto::mac_control::BITS_PER_QUANTUM;
use serde::Serialize;
use std::collections::BTreeMap;
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

fn entry<'a>(
    flows: &'a mut BTreeMap<(usize, usize), (FlowTruth, SeqState)>,
    run: &Run,
    t: usize,
    flow: usize,
) -> &'a mut (FlowTruth, SeqState) {
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
        )
    })
}

fn mac_str(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

impl Truth {
    /// The truth of a capture holding every tap of `run`.
    pub fn of(run: &Run) -> Truth {
        Truth::of_taps(run, None)
    }

    /// The truth of a capture holding the taps `only` (`None`: every tap).
    pub fn of_taps(run: &Run, only: Option<&[usize]>) -> Truth {
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
        let mut flows: BTreeMap<(usize, usize), (FlowTruth, SeqState)> = BTreeMap::new();
        let mut pauses: BTreeMap<(usize, [u8; 6], u8), (PfcTruth, PauseState)> = BTreeMap::new();
        for (f, m) in run.frames.iter().zip(&run.meta) {
            let t = f.tap;
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
            tt.bytes += f.frame.frame_len() as u64;
            let iface = &run.taps[t].name;
            match &f.frame {
                FrameSpec::Roce(r) => {
                    tt.roce += 1;
                    let Some(flow) = m.flow else { continue };
                    let (ft, st) = entry(&mut flows, run, t, flow);
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
                FrameSpec::Cnp(_) => {
                    tt.cnp += 1;
                    if let Some(flow) = m.flow {
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
                                    src_mac: mac_str(p.src_mac),
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
        Truth {
            scenario: run.scenario.clone(),
            seed: run.seed,
            capture,
            taps,
            flows: flows.into_values().map(|(f, _)| f).collect(),
            pfc,
            paused,
            qps: run.qps.clone(),
            fabric: run.fabric.clone(),
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
