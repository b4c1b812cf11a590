//! Findings from cross-tap matching (`docs/analysis.md`, "Where frames
//! vanished"; `docs/report.md`, `hop-loss` and `hop-queueing`): the hop
//! between two taps that loses frames, and the hop where the delay grows.
//!
//! Computed at the end from `hops.parquet`'s rows and the downstream taps'
//! flows: nothing per packet.

use std::collections::BTreeMap;

use serde_json::json;

use crate::analyze::fmt::{fmt_delay, fmt_ns};
use crate::analyze::hops::HopRow;
use crate::analyze::{Finding, Severity, fmt_count, fmt_duration, fmt_ip, fmt_pct};

use super::input::{Input, params};

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
pub(crate) struct Vanished {
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
        let g = &f.gap().gap_counts;
        v.resent = h.missing_down.min(g.lost_before_tap + g.nak_lost);
        v.capture_lost = (h.missing_down - v.resent).min(g.capture_lost);
    }
    v
}

fn flow_text(h: &HopRow) -> String {
    format!(
        "{} → {} QP {}",
        fmt_ip(&h.src_ip),
        fmt_ip(&h.dst_ip),
        h.dest_qp
    )
}

/// `hop-loss` and `hop-queueing`.
pub(crate) fn finding(x: &Input, out: &mut Vec<Finding>) {
    loss(x, out);
    queueing(x, out);
}

fn loss(x: &Input, out: &mut Vec<Finding>) {
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
        let (a, b) = (x.iface(up), x.iface(down));
        let share = t.missing as f64 / t.frames_up.max(1) as f64;
        let other = t.missing - t.resent - t.capture_lost;
        let mut flows: Vec<u32> = rows.iter().filter_map(|(h, _)| h.up_flow_id).collect();
        flows.sort_unstable();
        let parts: Vec<String> = rows
            .iter()
            .map(|(h, v)| {
                format!(
                    "{}: {} of {} not seen at {b} ({} resent, {} acknowledged)",
                    flow_text(h),
                    v.missing,
                    v.frames_up,
                    v.resent,
                    v.capture_lost
                )
            })
            .collect();
        let lost = t.resent > 0;
        let title = if lost {
            format!(
                "Frames lost between {a} and {b}: {} of {} ({}) seen at {a} never reached {b} and were resent",
                t.resent,
                fmt_count(t.frames_up, "frame"),
                fmt_pct(t.resent as f64 / t.frames_up.max(1) as f64)
            )
        } else if t.capture_lost == t.missing {
            format!(
                "{b} missed {} seen at {a}: the receiver acknowledged them and they were never resent, so {b}'s capture dropped them, not the link",
                fmt_count(t.missing, "frame")
            )
        } else {
            format!(
                "{} seen at {a} were not seen at {b} ({}), and nothing shows what became of them",
                fmt_count(t.missing, "frame"),
                fmt_pct(share)
            )
        };
        let mut detail = parts.join("; ");
        if lost && t.capture_lost > 0 {
            detail.push_str(&format!(
                "; {} more were acknowledged and never resent: {b}'s capture missed those",
                fmt_count(t.capture_lost, "frame")
            ));
        }
        out.push(Finding {
            id: "hop-loss",
            impact: share,
            severity: if lost { Severity::Warning } else { Severity::Info },
            title,
            detail,
            recommendation: if lost {
                format!("The frames are dropped on the path from {a} to {b}: read the error and discard counters of every link and switch between them (FEC/CRC errors, buffer discards on the priority), and reseat or replace the link with errors")
            } else {
                format!("Not a network loss: capture {b} with a larger buffer or snap length, or compare its drop counters (summary.json taps)")
            },
            flows,
            params: params([
                ("up_tap", json!(a)),
                ("down_tap", json!(b)),
                ("frames_up", json!(t.frames_up)),
                ("missing_down", json!(t.missing)),
                ("lost_between", json!(t.resent)),
                ("capture_lost", json!(t.capture_lost)),
                ("unexplained", json!(other)),
                ("share", json!(share)),
            ]),
            wireshark: None,
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

fn queueing(x: &Input, out: &mut Vec<Finding>) {
    let tails: Vec<&HopRow> = x
        .hops
        .iter()
        .filter(|h| h.adjacent && long_tail(h))
        .collect();
    let Some(worst) = tails
        .iter()
        .max_by_key(|h| (p99(h) - p50(h), std::cmp::Reverse(h.up_iface)))
    else {
        return;
    };
    let (a, b) = (x.iface(worst.up_iface), x.iface(worst.down_iface));
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
    let paused: u64 = pauses.iter().map(|p| p.end_ns - p.start_ns).sum();
    let cover = if pauses.is_empty() {
        format!(
            "no PFC pause at {a} or {b} while the flow ran: the queue built without PFC (shared buffer, ECN marking)"
        )
    } else {
        format!(
            "{} at {a} or {b} while the flow ran, {} paused in all: PFC pauses explain the tail",
            fmt_count(pauses.len() as u64, "PFC pause"),
            fmt_duration(paused)
        )
    };
    let others: Vec<String> = x
        .hops
        .iter()
        .filter(|h| !std::ptr::eq(*h, *worst) && h.adjacent && h.matched > 0)
        .map(|h| {
            format!(
                "{} → {} {}: p50 {}, p99 {}",
                x.iface(h.up_iface),
                x.iface(h.down_iface),
                flow_text(h),
                fmt_delay(h.delay_p50_ns),
                fmt_delay(h.delay_p99_ns)
            )
        })
        .collect();
    let mut flows: Vec<u32> = tails.iter().filter_map(|h| h.up_flow_id).collect();
    flows.sort_unstable();
    flows.dedup();
    let mut detail = format!(
        "{}: p50 {}, p99 {}, max {} over {}; {cover}",
        flow_text(worst),
        fmt_ns(p50(worst)),
        fmt_ns(p99(worst)),
        fmt_delay(worst.delay_max_ns),
        fmt_count(worst.matched, "matched frame")
    );
    if !others.is_empty() {
        let shown = others.len().min(OTHER_HOPS_SHOWN);
        detail.push_str(&format!("; the other hops: {}", others[..shown].join("; ")));
        if others.len() > shown {
            detail.push_str(&format!(
                "; and {} more (hops.parquet)",
                others.len() - shown
            ));
        }
    }
    out.push(Finding {
        id: "hop-queueing",
        impact: x.traffic_share(&flows),
        severity: Severity::Warning,
        title: format!(
            "Queueing between {a} and {b}: the one-way delay's p99 ({}) is {}× its p50 ({})",
            fmt_ns(p99(worst)),
            p99(worst) / p50(worst).max(1),
            fmt_ns(p50(worst))
        ),
        detail,
        recommendation: format!("The queue is on the path from {a} to {b}: look at that switch port's buffer occupancy and ECN marking threshold (lower it so DCQCN slows senders before the queue grows), and at the flows sharing it"),
        flows,
        params: params([
            ("up_tap", json!(a)),
            ("down_tap", json!(b)),
            ("delay_p50_ns", json!(p50(worst))),
            ("delay_p99_ns", json!(p99(worst))),
            ("pauses", json!(pauses.len())),
            ("paused_ns", json!(paused)),
        ]),
        wireshark: None,
    });
}
