//! `retransmission-livelock` and `retry-exhausted` in words.

use serde_json::json;

use crate::analyze::findings::{Dead, Stuck};
use crate::analyze::rto::ACK_TIMEOUT_UNIT_NS;
use crate::render::{fmt_count, fmt_duration};

use super::{Names, Words, params};

/// Where to look for what drops one packet every time.
const DROPPED_EVERY_TIME: &str = "compare the frame's length with the MTU of every hop on the path (a RoCE MTU of 4096 needs an Ethernet MTU above 4200 bytes on every link and VLAN interface; a smaller one silently drops full-size frames while small messages pass), then check ACLs and the switches' discard counters for the flow's UDP port";

/// `retransmission-livelock`: `stuck` is never empty, the worst first.
pub(super) fn livelock(stuck: &[Stuck], x: &Names) -> Words {
    let parts: Vec<String> = stuck
        .iter()
        .map(|s| {
            let r = &s.run;
            format!(
                "{} went back to PSN {} {} times from {} to {} ({}) with nothing acknowledged between; its largest frame was {} bytes",
                x.describe(&s.flow),
                r.psn,
                r.rewinds,
                x.at(r.first_ts),
                x.at(r.last_ts),
                fmt_duration(r.last_ts - r.first_ts),
                s.max_frame_len
            )
        })
        .collect();
    let (f, r) = (&stuck[0].flow, &stuck[0].run);
    Words {
        title: format!(
            "{} resend the same PSN over and over (flow {} PSN {}: {}, no progress)",
            fmt_count(stuck.len() as u64, "flow"),
            f.id,
            r.psn,
            fmt_count(r.rewinds, "rewind")
        ),
        detail: parts.join("; "),
        recommendation: format!(
            "Something drops this packet every time, not by chance: {DROPPED_EVERY_TIME}; the requester will spend its retry count (retry_cnt) on it and move the QP to the error state"
        ),
        params: params([
            ("flows", json!(stuck.len())),
            ("worst_flow", json!(f.id)),
            ("psn", json!(r.psn)),
            ("rewinds", json!(r.rewinds)),
            ("first_rewind_ns", json!(r.first_ts)),
            ("last_rewind_ns", json!(r.last_ts)),
            ("max_frame_len", json!(stuck[0].max_frame_len)),
        ]),
    }
}

/// `retry-exhausted`: `dead` is never empty, the first to fall silent first.
pub(super) fn retry_exhausted(dead: &[Dead], x: &Names) -> Words {
    let gone = dead
        .iter()
        .filter(|d| d.exhausted.retries.answers == 0)
        .count();
    let parts: Vec<String> = dead
        .iter()
        .map(|d| {
            let e = &d.exhausted;
            let (r, n) = (&e.run, &e.retries);
            let t = d.timeout_exponent;
            let mut s = format!(
                "{} sent PSN {} {} times (the original and {}), one local ACK timeout ≈ {} apart (T = {t}: 4.096 µs × 2^{t} = {}), with nothing acknowledged, from {} to {}; then it sent nothing from {} to the end of the capture ({} later). Retry count {} ({})",
                x.describe(&d.flow),
                r.psn,
                r.rewinds + 1,
                fmt_count(r.rewinds, "retry"),
                fmt_duration(e.timeout_ns),
                fmt_duration(ACK_TIMEOUT_UNIT_NS << t),
                x.at(r.first_ts),
                x.at(r.last_ts),
                x.at(e.silent_from_ns),
                fmt_duration(e.silent_ns),
                e.retry_count,
                if e.from_cm {
                    "from the connection's CM REQ"
                } else {
                    "assumed: no CM REQ in the capture gives it"
                }
            );
            if u64::from(n.timeouts) < r.rewinds {
                s.push_str(&format!(
                    "; {} of the retries followed a sequence-error NAK",
                    r.rewinds - u64::from(n.timeouts)
                ));
            }
            if n.answers == 0 {
                s.push_str(&format!(
                    ". Nothing came back on the reverse direction{} from the first retry on: the responder, or the path to it, is gone",
                    match d.paired_qp {
                        Some(qp) => format!(" (QP {qp})"),
                        None => String::new(),
                    }
                ));
            } else {
                s.push_str(&format!(
                    ". The reverse direction answered {} from the first retry on ({}, {} acknowledging PSNs before {}): the responder is alive and this packet is dropped every time; its largest frame was {} bytes",
                    fmt_count(n.answers, "time"),
                    fmt_count(n.naks, "NAK"),
                    fmt_count(n.progressed, "ACK"),
                    r.psn,
                    d.max_frame_len
                ));
            }
            s
        })
        .collect();
    let (f, e) = (&dead[0].flow, &dead[0].exhausted);
    let t = dead[0].timeout_exponent;
    let mut recommendation = format!(
        "The QP is in the error state: its work requests complete with IBV_WC_RETRY_EXC_ERR (status 12) — NCCL reports \"completion with error 12\" (NCCL_IB_TIMEOUT is T, here {t}; NCCL_IB_RETRY_CNT the retry count), UCX \"transport retry count exceeded\"; the application has to reconnect."
    );
    if gone > 0 {
        recommendation.push_str(" Nothing came back: check the responder host (crashed, rebooted, process or QP gone), its NIC port and link (down, flapping: `ibv_devinfo`, `ethtool`, the switch port's link log), and the route and neighbour entry to it; a longer timeout or more retries only help when the responder is alive but its answers are held up (long pauses).");
    }
    if gone < dead.len() {
        recommendation.push_str(&format!(
            " The responder answered but never got this packet: {DROPPED_EVERY_TIME}."
        ));
    }
    Words {
        title: format!(
            "{} ran out of retries and fell silent (flow {} PSN {}: {} after timeouts of T = {t}, {})",
            fmt_count(dead.len() as u64, "QP"),
            f.id,
            e.run.psn,
            fmt_count(e.run.rewinds, "retry"),
            if e.retries.answers == 0 {
                "nothing came back"
            } else {
                "the responder answered"
            }
        ),
        detail: parts.join("; "),
        recommendation,
        params: params([
            ("flows", json!(dead.len())),
            ("worst_flow", json!(f.id)),
            ("psn", json!(e.run.psn)),
            ("retries", json!(e.run.rewinds)),
            ("retry_count", json!(e.retry_count)),
            ("retry_count_from_cm", json!(e.from_cm)),
            ("timeout_ns", json!(e.timeout_ns)),
            ("timeout_exponent", json!(t)),
            ("first_retry_ns", json!(e.run.first_ts)),
            ("last_retry_ns", json!(e.run.last_ts)),
            ("silent_from_ns", json!(e.silent_from_ns)),
            ("reverse_packets", json!(e.retries.answers)),
            ("reverse_naks", json!(e.retries.naks)),
            ("flows_nothing_came_back", json!(gone)),
        ]),
    }
}
