//! `capture-loss`, `mirror-duplicates`, `reordering`, `sniffer-capture`,
//! `corrupted-frames` and `trimming` in words.

use serde_json::json;

use crate::analyze::findings::{
    CaptureLoss, Corrupted, MirrorCopies, Reordering, Sniffer, Trimmed,
};
use crate::render::{fmt_count, fmt_duration, fmt_pct};

use super::{Names, Words, params};

fn count_or_unknown(n: Option<u64>) -> String {
    n.map_or("?".into(), |n| n.to_string())
}

pub(super) fn capture_loss(e: &CaptureLoss, n: &Names) -> Words {
    let mut detail = if e.flows == 0 {
        "No PSN gap shows it, but the capture's own counters say frames were dropped.".to_string()
    } else {
        let taps: Vec<String> = e
            .by_tap
            .iter()
            .map(|&(t, lost)| format!("{}: {lost}", n.tap(t)))
            .collect();
        format!(
            "{} on {} never reached the capture, yet the responder acknowledged them with no NAK and the sender never resent them: the tap dropped them, not the network (by tap: {}).",
            fmt_count(e.frames_missed, "PSN"),
            fmt_count(e.flows, "flow"),
            taps.join(", ")
        )
    };
    if !e.counted.is_empty() {
        let counted: Vec<String> = e
            .counted
            .iter()
            .map(|&(t, ifdrop, osdrop)| {
                format!(
                    "{}: {} dropped by the interface, {} by the capture host",
                    n.tap(t),
                    count_or_unknown(ifdrop),
                    count_or_unknown(osdrop)
                )
            })
            .collect();
        detail.push_str(&format!(
            "\nThe capture's interface statistics count drops: {}.",
            counted.join("; ")
        ));
    }
    detail.push_str("\nEvery count in this report is a lower bound.");
    Words {
        title: if e.flows == 0 {
            "The capture says it dropped frames".to_string()
        } else {
            format!(
                "The capture missed {} the responders acknowledged",
                fmt_count(e.frames_missed, "frame")
            )
        },
        detail,
        recommendation: "Check the mirror session's drops (the mirror port is oversubscribed when the mirrored traffic exceeds its speed: mirror one direction, fewer ports, or truncate mirrored frames) and the capture host's drops (`ip -s link`, the capture tool's own counters). Do not read these gaps as network loss.".into(),
        params: params([
            ("frames_missed", json!(e.frames_missed)),
            ("capture_drops_counted", json!(e.counted_drops)),
        ]),
    }
}

pub(super) fn mirror_copies(e: &MirrorCopies, n: &Names) -> Words {
    let taps: Vec<String> = e
        .by_tap
        .iter()
        .map(|(t, d)| {
            format!(
                "{}: {}, typically {} after the original ({} to {}, {} with the same timestamp)",
                n.tap(*t),
                fmt_count(d.copies, "copy"),
                fmt_duration(d.typical_gap_ns),
                fmt_duration(d.min_gap_ns),
                fmt_duration(d.max_gap_ns),
                d.same_timestamp
            )
        })
        .collect();
    let copies = e.copies;
    Words {
        title: format!(
            "{} recorded twice by the mirror (not retransmissions)",
            fmt_count(copies, "frame")
        ),
        detail: format!(
            "{} of a frame the same tap had recorded moments before (same addresses, QP, PSN, opcode and ICRC{}).\n{}.\nThey were left out of every other count.",
            if copies == 1 {
                "1 frame was a copy".to_string()
            } else {
                format!("{copies} frames were copies")
            },
            crate::render::transports::copies_clauses(e),
            taps.join("; ")
        ),
        recommendation: "The mirror copies each frame twice, typically ingress and egress mirroring of the same traffic (or two mirrored ports on one path): mirror one direction of one port per tap. rocescope drops the copies, so the analysis stands.".into(),
        params: params([
            ("mirror_copies", json!(copies)),
            ("max_copy_gap_ns", json!(e.max_gap_ns)),
        ]),
    }
}

pub(super) fn reordering(e: &Reordering) -> Words {
    let n = e.late_psns;
    Words {
        title: format!(
            "{} arrived out of order (reordering, not loss)",
            fmt_count(n, "PSN")
        ),
        detail: format!(
            "{} arrived after later ones on {} and {} never resent: at most {} and {} late.",
            fmt_count(n, "PSN"),
            fmt_count(e.flows, "flow"),
            if n == 1 { "was" } else { "were" },
            fmt_duration(e.max_late_ns),
            fmt_count(e.max_late_psns, "PSN")
        ),
        recommendation: "Packets of one QP took different paths (adaptive routing, a path change, per-packet spraying): a responder NIC without out-of-order placement answers each with a sequence-error NAK and a Go-Back-N resend. Keep a QP on one path (flow-based ECMP, or flowlets with a gap larger than the path skew) or enable the NIC's adaptive-routing / out-of-order support.".into(),
        params: params([
            ("late_psns", json!(n)),
            ("max_late_ns", json!(e.max_late_ns)),
            ("max_late_psns", json!(e.max_late_psns)),
        ]),
    }
}

pub(super) fn sniffer(e: &Sniffer, n: &Names) -> Words {
    let tap = n.tap(e.iface);
    Words {
        title: format!("{tap}: a NIC's RDMA sniffer capture (headers rewritten)"),
        detail: format!(
            "Every RoCE frame on {tap} comes from UDP port 4791 and {} of {} fail their ICRC: a NIC's RDMA sniffer (tcpdump -i mlx5_N) rewrites the UDP source port and the source MAC, so the ICRC cannot match.\nICRC results are left unknown for these frames and say nothing about corruption.",
            e.icrc_failed, e.icrc_checked
        ),
        recommendation: "Nothing is wrong with the link. To check the ICRC, capture on a mirror port or the host's Ethernet interface instead; sniffer captures may also be cut at a few hundred bytes.".into(),
        params: params([
            ("icrc_failed", json!(e.icrc_failed)),
            ("icrc_checked", json!(e.icrc_checked)),
        ]),
    }
}

pub(super) fn corrupted(e: &Corrupted, n: &Names) -> Words {
    let tap = n.tap(e.iface);
    Words {
        title: format!(
            "{tap}: {} failed their ICRC (bit errors)",
            fmt_count(e.icrc_failed, "RoCE frame")
        ),
        detail: format!(
            "{} of {} RoCE frames on {tap} ({}) failed their ICRC while the others passed: corrupted on the wire before the tap.\n{}: {} followed by NAKs or rewinds (a receiver drops a frame with a bad ICRC).",
            e.icrc_failed,
            e.icrc_checked,
            fmt_pct(e.failed_fraction),
            fmt_count(e.flows, "affected flow"),
            e.followed,
        ),
        recommendation: "Bit errors on the link: check the optics and cables of the port (`ethtool -S`: rx_crc_errors_phy, rx_symbol_err_phy, rx_corrected_bits_phy; the switch port's FCS and FEC counters), reseat or replace the transceiver, and check FEC is on.".into(),
        params: params([
            ("icrc_failed", json!(e.icrc_failed)),
            ("icrc_checked", json!(e.icrc_checked)),
            ("failed_fraction", json!(e.failed_fraction)),
        ]),
    }
}

pub(super) fn trimmed(e: &Trimmed, n: &Names) -> Words {
    let tap = n.tap(e.iface);
    Words {
        title: format!(
            "{tap}: a switch trimmed {} (congestion)",
            fmt_count(e.trimmed, "RoCE frame")
        ),
        detail: format!(
            "{} of the {} request packets of {} on {tap} arrived cut short and re-marked to another DSCP, and a NAK of the receiver asked for each again: a switch trimmed them instead of dropping them when its queue was full. They are not corruption (not counted as ICRC failures) nor loss on the wire; the NAKs made the senders resend at once ({} rewinds), a round trip per trim instead of a timeout.",
            e.trimmed,
            e.data_packets,
            fmt_count(e.flows, "flow"),
            e.rewinds,
        ),
        recommendation: "Trimming is the switch's answer to a queue past its limit: find the congested egress (the switch's trim counters, e.g. `nv show interface counters packet-trim`), and relieve it — fewer senders per receiver, ECN marking early enough for DCQCN to slow the senders before the queue fills, or more buffer for the traffic class.".into(),
        params: params([
            ("trimmed", json!(e.trimmed)),
            ("data_packets", json!(e.data_packets)),
            ("rewinds", json!(e.rewinds)),
        ]),
    }
}
