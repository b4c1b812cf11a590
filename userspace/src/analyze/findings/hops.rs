//! Findings from cross-tap matching (`docs/analysis.md`, "Where frames
//! vanished"; `docs/report.md`, `hop-loss` and `hop-queueing`): the hop
//! between two taps that loses frames, and the hop where the delay grows.
//!
//! Computed at the end from `hops.parquet`'s rows and the downstream taps'
//! flows: nothing per packet. Worded in `render/findings/hops.rs`.

use std::collections::BTreeMap;

use crate::analyze::Severity;
use crate::analyze::hops::HopRow;

use super::input::Input;
use super::{Diagnosis, Evidence};

/// How many of the other hops a hop-queueing finding lists beside the worst
/// one: enough to show where the delay grows on a path, not one line per
/// flow of a large fabric (the rest are in hops.parquet).
const OTHER_HOPS_SHOWN: usize = 8;

/// A hop's delay has a long tail when its p99 exceeds this many times its
/// p50 ...
pub(crate) const TAIL_RATIO: i64 = 4;
/// ... by at least this much (a few µs of jitter is no queue).
pub(crate) const TAIL_MIN_NS: i64 = 10_000;
/// Matched frames a hop needs for its p99 to mean something.
pub(crate) const TAIL_MIN_FRAMES: u64 = 20;

/// What became of the frames one hop's downstream tap did not see.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Vanished {
    pub frames_up: u64,
    pub missing: u64,
    /// Resent later: lost between the taps.
    pub resent: u64,
    /// Acknowledged and never resent: the downstream tap's capture missed them.
    pub capture_lost: u64,
}

/// The missing frames of one hop row, by what the downstream tap's flow
/// made of its gaps.
pub(crate) fn vanished(x: &Input, h: &HopRow) -> Vanished {
    let mut v = Vanished {
        frames_up: h.frames_up,
        missing: h.missing_down,
        ..Vanished::default()
    };
    if let Some(f) = h
        .down_flow_id
        .and_then(|id| x.flow(id))
        .filter(|f| f.iface == h.down_iface)
    {
        let g = &f.sequence().gap_counts;
        v.resent = h.missing_down.min(g.lost_before_tap + g.nak_lost);
        v.capture_lost = (h.missing_down - v.resent).min(g.capture_lost);
    }
    v
}

/// A connection as hops name it: its addresses and destination QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HopConn {
    pub src_ip: [u8; 16],
    pub dst_ip: [u8; 16],
    pub dest_qp: u32,
}

impl From<&HopRow> for HopConn {
    fn from(h: &HopRow) -> Self {
        HopConn {
            src_ip: h.src_ip,
            dst_ip: h.dst_ip,
            dest_qp: h.dest_qp,
        }
    }
}

/// `hop-loss`'s evidence: one pair of adjacent taps whose downstream one
/// missed frames the upstream one saw.
#[derive(Clone, Debug, PartialEq)]
pub struct HopLoss {
    pub up_iface: u16,
    pub down_iface: u16,
    /// Over the pair's rows; `frames_up` counts every row of the pair, lost
    /// or not.
    pub total: Vanished,
    /// `total.missing` of `total.frames_up`.
    pub share: f64,
    /// The rows that missed frames, in `hops.parquet`'s order.
    pub hops: Vec<(HopConn, Vanished)>,
}

impl HopLoss {
    /// Whether frames were resent: lost between the taps, not by a capture.
    pub fn lost_between(&self) -> bool {
        self.total.resent > 0
    }
}

/// One hop's delays, as `hop-queueing` lists the other hops.
#[derive(Clone, Debug, PartialEq)]
pub struct HopDelay {
    pub up_iface: u16,
    pub down_iface: u16,
    pub conn: HopConn,
    pub p50_ns: Option<i64>,
    pub p99_ns: Option<i64>,
}

/// `hop-queueing`'s evidence: the hop whose delay tail is longest, the
/// pauses that may explain it, and the other hops for comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct HopQueueing {
    pub worst: HopDelay,
    /// `worst`'s p50 and p99 (0 when unknown), their ratio (p99 over p50,
    /// at least 1, rounded down), its maximum and matched frames.
    pub p50_ns: i64,
    pub p99_ns: i64,
    pub ratio: i64,
    pub max_ns: Option<i64>,
    pub matched: u64,
    /// PFC pauses at either tap while the hop's flow ran, and their time.
    pub pauses: u64,
    pub paused_ns: u64,
    /// Up to [`OTHER_HOPS_SHOWN`] other adjacent hops with matched frames.
    pub others: Vec<HopDelay>,
    /// The other hops left out of `others`.
    pub others_left_out: usize,
}

/// `hop-loss` and `hop-queueing`.
pub(crate) fn finding(x: &Input, out: &mut Vec<Diagnosis>) {
    loss(x, out);
    out.extend(queueing(x));
}

fn loss(x: &Input, out: &mut Vec<Diagnosis>) {
    let mut by_pair: BTreeMap<(u16, u16), Vec<(&HopRow, Vanished)>> = BTreeMap::new();
    // Where a frame vanished: between the last tap that saw it and the next.
    for h in x.hops.iter().filter(|h| h.missing_down > 0 && h.adjacent) {
        by_pair
            .entry((h.up_iface, h.down_iface))
            .or_default()
            .push((h, vanished(x, h)));
    }
    for ((up, down), rows) in by_pair {
        // Frames of the pair's flows seen upstream, lost or not.
        let mut t = Vanished {
            frames_up: x
                .hops
                .iter()
                .filter(|h| h.adjacent && (h.up_iface, h.down_iface) == (up, down))
                .map(|h| h.frames_up)
                .sum(),
            ..Vanished::default()
        };
        for (_, v) in &rows {
            t.missing += v.missing;
            t.resent += v.resent;
            t.capture_lost += v.capture_lost;
        }
        let mut flows: Vec<u32> = rows.iter().filter_map(|(h, _)| h.up_flow_id).collect();
        flows.sort_unstable();
        let e = HopLoss {
            up_iface: up,
            down_iface: down,
            total: t,
            share: t.missing as f64 / t.frames_up.max(1) as f64,
            hops: rows.iter().map(|(h, v)| (HopConn::from(*h), *v)).collect(),
        };
        out.push(Diagnosis {
            severity: if e.lost_between() {
                Severity::Warning
            } else {
                Severity::Info
            },
            impact: e.share,
            flows,
            evidence: Evidence::HopLoss(e),
        });
    }
}

/// Whether a hop's delays have a long tail (see the constants).
pub(crate) fn long_tail(h: &HopRow) -> bool {
    let (p50, p99) = (p50(h), p99(h));
    h.matched >= TAIL_MIN_FRAMES
        && h.delay_p99_ns.is_some()
        && p99 > TAIL_RATIO * p50.max(1)
        && p99 - p50 >= TAIL_MIN_NS
}

fn p50(h: &HopRow) -> i64 {
    h.delay_p50_ns.unwrap_or(0)
}

fn p99(h: &HopRow) -> i64 {
    h.delay_p99_ns.unwrap_or(0)
}

fn delays(h: &HopRow) -> HopDelay {
    HopDelay {
        up_iface: h.up_iface,
        down_iface: h.down_iface,
        conn: HopConn::from(h),
        p50_ns: h.delay_p50_ns,
        p99_ns: h.delay_p99_ns,
    }
}

fn queueing(x: &Input) -> Option<Diagnosis> {
    let tails: Vec<&HopRow> = x
        .hops
        .iter()
        .filter(|h| h.adjacent && long_tail(h))
        .collect();
    let worst = tails
        .iter()
        .max_by_key(|h| (p99(h) - p50(h), std::cmp::Reverse(h.up_iface)))?;
    // Pauses at either tap of the hop while its flow ran.
    let span = worst
        .up_flow_id
        .and_then(|id| x.flow(id))
        .map(|f| (f.first_ts, f.last_ts));
    let pauses: Vec<_> = x
        .pfc
        .iter()
        .filter(|p| p.iface == worst.up_iface || p.iface == worst.down_iface)
        .filter(|p| span.is_none_or(|(s, e)| p.start_ns <= e && p.end_ns >= s))
        .collect();
    let others: Vec<&HopRow> = x
        .hops
        .iter()
        .filter(|h| !std::ptr::eq(*h, *worst) && h.adjacent && h.matched > 0)
        .collect();
    let shown = others.len().min(OTHER_HOPS_SHOWN);
    let mut flows: Vec<u32> = tails.iter().filter_map(|h| h.up_flow_id).collect();
    flows.sort_unstable();
    flows.dedup();
    Some(Diagnosis {
        severity: Severity::Warning,
        impact: x.traffic_share(&flows),
        flows,
        evidence: Evidence::HopQueueing(HopQueueing {
            worst: delays(worst),
            p50_ns: p50(worst),
            p99_ns: p99(worst),
            ratio: p99(worst) / p50(worst).max(1),
            max_ns: worst.delay_max_ns,
            matched: worst.matched,
            pauses: pauses.len() as u64,
            paused_ns: pauses.iter().map(|p| p.end_ns - p.start_ns).sum(),
            others: others[..shown].iter().map(|h| delays(h)).collect(),
            others_left_out: others.len() - shown,
        }),
    })
}
