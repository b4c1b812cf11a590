//! `hop-loss` and `hop-queueing` in words.

use serde_json::json;

use crate::analyze::findings::{HopConn, HopLoss, HopQueueing};
use crate::render::{fmt_count, fmt_duration, fmt_ip, fmt_pct};
use crate::render::{fmt_delay, fmt_ns};

use super::{Names, Words, params};

/// `10.0.0.1 → 10.0.1.1 QP 512`.
fn conn_text(c: &HopConn) -> String {
    format!(
        "{} → {} QP {}",
        fmt_ip(&c.src_ip),
        fmt_ip(&c.dst_ip),
        c.dest_qp
    )
}

pub(super) fn hop_loss(e: &HopLoss, n: &Names) -> Words {
    let (a, b) = (n.iface(e.up_iface), n.iface(e.down_iface));
    let t = &e.total;
    let parts: Vec<String> = e
        .hops
        .iter()
        .map(|(c, v)| {
            format!(
                "{}: {} of {} not seen at {b} ({} resent, {} acknowledged)",
                conn_text(c),
                v.missing,
                v.frames_up,
                v.resent,
                v.capture_lost
            )
        })
        .collect();
    let lost = e.lost_between();
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
            fmt_pct(e.share)
        )
    };
    let mut detail = parts.join("; ");
    if lost && t.capture_lost > 0 {
        detail.push_str(&format!(
            "; {} more were acknowledged and never resent: {b}'s capture missed those",
            fmt_count(t.capture_lost, "frame")
        ));
    }
    Words {
        recommendation: if lost {
            format!(
                "The frames are dropped on the path from {a} to {b}: read the error and discard counters of every link and switch between them (FEC/CRC errors, buffer discards on the priority), and reseat or replace the link with errors"
            )
        } else {
            format!(
                "Not a network loss: capture {b} with a larger buffer or snap length, or compare its drop counters (summary.json taps)"
            )
        },
        params: params([
            ("up_tap", json!(a)),
            ("down_tap", json!(b)),
            ("frames_up", json!(t.frames_up)),
            ("missing_down", json!(t.missing)),
            ("lost_between", json!(t.resent)),
            ("capture_lost", json!(t.capture_lost)),
            ("unexplained", json!(t.missing - t.resent - t.capture_lost)),
            ("share", json!(e.share)),
        ]),
        title,
        detail,
    }
}

pub(super) fn hop_queueing(e: &HopQueueing, n: &Names) -> Words {
    let (a, b) = (n.iface(e.worst.up_iface), n.iface(e.worst.down_iface));
    let cover = if e.pauses == 0 {
        format!(
            "no PFC pause at {a} or {b} while the flow ran: the queue built without PFC (shared buffer, ECN marking)"
        )
    } else {
        format!(
            "{} at {a} or {b} while the flow ran, {} paused in all: PFC pauses explain the tail",
            fmt_count(e.pauses, "PFC pause"),
            fmt_duration(e.paused_ns)
        )
    };
    let mut detail = format!(
        "{}: p50 {}, p99 {}, max {} over {}; {cover}",
        conn_text(&e.worst.conn),
        fmt_ns(e.p50_ns),
        fmt_ns(e.p99_ns),
        fmt_delay(e.max_ns),
        fmt_count(e.matched, "matched frame")
    );
    if !e.others.is_empty() {
        let others: Vec<String> = e
            .others
            .iter()
            .map(|h| {
                format!(
                    "{} → {} {}: p50 {}, p99 {}",
                    n.iface(h.up_iface),
                    n.iface(h.down_iface),
                    conn_text(&h.conn),
                    fmt_delay(h.p50_ns),
                    fmt_delay(h.p99_ns)
                )
            })
            .collect();
        detail.push_str(&format!("; the other hops: {}", others.join("; ")));
        if e.others_left_out > 0 {
            detail.push_str(&format!("; and {} more (hops.parquet)", e.others_left_out));
        }
    }
    Words {
        title: format!(
            "Queueing between {a} and {b}: the one-way delay's p99 ({}) is {}× its p50 ({})",
            fmt_ns(e.p99_ns),
            e.ratio,
            fmt_ns(e.p50_ns)
        ),
        detail,
        recommendation: format!(
            "The queue is on the path from {a} to {b}: look at that switch port's buffer occupancy and ECN marking threshold (lower it so DCQCN slows senders before the queue grows), and at the flows sharing it"
        ),
        params: params([
            ("up_tap", json!(a)),
            ("down_tap", json!(b)),
            ("delay_p50_ns", json!(e.p50_ns)),
            ("delay_p99_ns", json!(e.p99_ns)),
            ("pauses", json!(e.pauses)),
            ("paused_ns", json!(e.paused_ns)),
        ]),
    }
}
