//! Findings about the capture and the wire: capture loss and mirror copies,
//! reordering, corrupted frames (`docs/analysis.md`, *Mirror duplicates*,
//! *Gaps*, *ICRC*).

use serde_json::json;

use crate::analyze::{Finding, Flow, Severity, fmt_count, fmt_duration, fmt_pct as pct};

use super::input::{Input, params, share};

/// The capture itself: frames the tap missed and mirror copies.
pub(super) fn capture(x: &Input, out: &mut Vec<Finding>) {
    let lost: Vec<&Flow> = x
        .flows()
        .filter(|f| f.gap().gap_counts.capture_lost > 0)
        .collect();
    // What the capture says of itself (pcapng interface statistics).
    let counted: Vec<String> = x
        .summary
        .taps
        .iter()
        .filter(|t| t.isb_ifdrop.unwrap_or(0) + t.isb_osdrop.unwrap_or(0) > 0)
        .map(|t| {
            format!(
                "{}: {} dropped by the interface, {} by the capture host",
                t.iface_name,
                t.isb_ifdrop.map_or("?".into(), |n| n.to_string()),
                t.isb_osdrop.map_or("?".into(), |n| n.to_string())
            )
        })
        .collect();
    if !lost.is_empty() || !counted.is_empty() {
        let n: u64 = lost.iter().map(|f| f.gap().gap_counts.capture_lost).sum();
        let counted_drops: u64 = x
            .summary
            .taps
            .iter()
            .map(|t| t.isb_ifdrop.unwrap_or(0) + t.isb_osdrop.unwrap_or(0))
            .sum();
        let taps: Vec<String> = x
            .summary
            .taps
            .iter()
            .filter(|t| t.capture_lost > 0)
            .map(|t| format!("{}: {}", t.iface_name, t.capture_lost))
            .collect();
        let mut detail = if lost.is_empty() {
            "No PSN gap shows it, but the capture's own counters say frames were dropped."
                .to_string()
        } else {
            format!(
                "{} on {} never reached the capture, yet the responder acknowledged them with no NAK and the sender never resent them: the tap dropped them, not the network (by tap: {}).",
                fmt_count(n, "PSN"),
                fmt_count(lost.len() as u64, "flow"),
                taps.join(", ")
            )
        };
        if !counted.is_empty() {
            detail.push_str(&format!(
                "\nThe capture's interface statistics count drops: {}.",
                counted.join("; ")
            ));
        }
        detail.push_str("\nEvery count in this report is a lower bound.");
        out.push(Finding {
            wireshark: None,
            id: "capture-loss",
            impact: share(n + counted_drops, x.summary.frames.total + counted_drops),
            severity: Severity::Warning,
            title: if lost.is_empty() {
                "The capture says it dropped frames".to_string()
            } else {
                format!(
                    "The capture missed {} the responders acknowledged",
                    fmt_count(n, "frame")
                )
            },
            detail,
            recommendation: "Check the mirror session's drops (the mirror port is oversubscribed when the mirrored traffic exceeds its speed: mirror one direction, fewer ports, or truncate mirrored frames) and the capture host's drops (`ip -s link`, the capture tool's own counters). Do not read these gaps as network loss.".into(),
            flows: lost.iter().map(|f| f.id).collect(),
            params: params([
                ("frames_missed", json!(n)),
                (
                    "capture_drops_counted",
                    json!(counted_drops),
                ),
            ]),
        });
    }
    let copies = x.summary.frames.mirror_copies;
    if copies > 0 {
        let taps: Vec<String> = x
            .summary
            .taps
            .iter()
            .filter_map(|t| {
                let d = t.duplicate_gaps.as_ref()?;
                Some(format!(
                    "{}: {}, typically {} after the original ({} to {}, {} with the same timestamp)",
                    t.iface_name,
                    fmt_count(d.copies, "copy"),
                    fmt_duration(d.typical_gap_ns),
                    fmt_duration(d.min_gap_ns),
                    fmt_duration(d.max_gap_ns),
                    d.same_timestamp
                ))
            })
            .collect();
        let max_gap = x
            .summary
            .taps
            .iter()
            .filter_map(|t| t.duplicate_gaps.as_ref().map(|d| d.max_gap_ns))
            .max();
        let mut flows: Vec<u32> = x
            .flows()
            .filter(|f| f.rare().mirror_copies > 0)
            .map(|f| f.id)
            .collect();
        flows.sort_unstable();
        out.push(Finding {
            wireshark: None,
            id: "mirror-duplicates",
            impact: share(copies, x.summary.frames.total),
            severity: Severity::Info,
            title: format!(
                "{} recorded twice by the mirror (not retransmissions)",
                fmt_count(copies, "frame")
            ),
            detail: format!(
                "{} of a frame the same tap had recorded moments before (same addresses, QP, PSN, opcode and ICRC).\n{}.\nThey were left out of every other count.",
                if copies == 1 {
                    "1 frame was a copy".to_string()
                } else {
                    format!("{copies} frames were copies")
                },
                taps.join("; ")
            ),
            recommendation: "The mirror copies each frame twice, typically ingress and egress mirroring of the same traffic (or two mirrored ports on one path): mirror one direction of one port per tap. rocescope drops the copies, so the analysis stands.".into(),
            flows,
            params: params([
                ("mirror_copies", json!(copies)),
                ("max_copy_gap_ns", json!(max_gap)),
            ]),
        });
    }
}

/// Late PSNs: reordering, not loss.
pub(super) fn reordering(x: &Input, out: &mut Vec<Finding>) {
    let flows: Vec<&Flow> = x.flows().filter(|f| f.gap().gap_counts.late > 0).collect();
    if flows.is_empty() {
        return;
    }
    let n: u64 = flows.iter().map(|f| f.gap().gap_counts.late).sum();
    let max_ns = flows
        .iter()
        .filter_map(|f| f.gap().late_max_ns)
        .max()
        .unwrap_or(0);
    let max_psns = flows
        .iter()
        .map(|f| f.gap().late_max_psns)
        .max()
        .unwrap_or(0);
    out.push(Finding {
        wireshark: None,
        id: "reordering",
        impact: x.traffic_share(&flows.iter().map(|f| f.id).collect::<Vec<_>>()),
        severity: Severity::Warning,
        title: format!(
            "{} arrived out of order (reordering, not loss)",
            fmt_count(n, "PSN")
        ),
        detail: format!(
            "{} arrived after later ones on {} and {} never resent: at most {} and {} late.",
            fmt_count(n, "PSN"),
            fmt_count(flows.len() as u64, "flow"),
            if n == 1 { "was" } else { "were" },
            fmt_duration(max_ns),
            fmt_count(max_psns, "PSN")
        ),
        recommendation: "Packets of one QP took different paths (adaptive routing, a path change, per-packet spraying): a responder NIC without out-of-order placement answers each with a sequence-error NAK and a Go-Back-N resend. Keep a QP on one path (flow-based ECMP, or flowlets with a gap larger than the path skew) or enable the NIC's adaptive-routing / out-of-order support.".into(),
        flows: flows.iter().map(|f| f.id).collect(),
        params: params([
            ("late_psns", json!(n)),
            ("max_late_ns", json!(max_ns)),
            ("max_late_psns", json!(max_psns)),
        ]),
    });
}

/// Frames failing their ICRC while others on the same tap pass; a sniffer's
/// rewritten capture said once, never as corruption.
pub(super) fn corruption(x: &Input, out: &mut Vec<Finding>) {
    for t in x.summary.taps.iter().filter(|t| t.sniffer) {
        out.push(Finding {
            wireshark: None,
            id: "sniffer-capture",
            impact: share(t.icrc_failed, t.icrc_checked),
            severity: Severity::Info,
            title: format!("{}: a NIC's RDMA sniffer capture (headers rewritten)", t.iface_name),
            detail: format!(
                "Every RoCE frame on {} comes from UDP port 4791 and {} of {} fail their ICRC: a NIC's RDMA sniffer (tcpdump -i mlx5_N) rewrites the UDP source port and the source MAC, so the ICRC cannot match.\nICRC results are left unknown for these frames and say nothing about corruption.",
                t.iface_name, t.icrc_failed, t.icrc_checked
            ),
            recommendation: "Nothing is wrong with the link. To check the ICRC, capture on a mirror port or the host's Ethernet interface instead; sniffer captures may also be cut at a few hundred bytes.".into(),
            flows: x.flows().filter(|f| f.iface == t.iface).map(|f| f.id).collect(),
            params: params([("icrc_failed", json!(t.icrc_failed)), ("icrc_checked", json!(t.icrc_checked))]),
        });
    }
    for t in x
        .summary
        .taps
        .iter()
        .filter(|t| !t.sniffer && t.icrc_failed > 0 && t.icrc_failed < t.icrc_checked)
    {
        let flows: Vec<&Flow> = x
            .flows()
            .filter(|f| f.iface == t.iface && f.rare().icrc_errors > 0)
            .collect();
        let followed: Vec<&&Flow> = flows
            .iter()
            .filter(|f| {
                f.rewind().rewinds > 0
                    || f.paired
                        .is_some_and(|p| x.flows.get(p).is_some_and(|r| r.nak().naks > 0))
            })
            .collect();
        let share = t.icrc_failed as f64 / t.icrc_checked as f64;
        out.push(Finding {
            wireshark: None,
            id: "corrupted-frames",
            impact: share,
            severity: Severity::Warning,
            title: format!(
                "{}: {} failed their ICRC (bit errors)",
                t.iface_name,
                fmt_count(t.icrc_failed, "RoCE frame")
            ),
            detail: format!(
                "{} of {} RoCE frames on {} ({}) failed their ICRC while the others passed: corrupted on the wire before the tap.\n{}: {} followed by NAKs or rewinds (a receiver drops a frame with a bad ICRC).",
                t.icrc_failed,
                t.icrc_checked,
                t.iface_name,
                pct(share),
                fmt_count(flows.len() as u64, "affected flow"),
                followed.len(),
            ),
            recommendation: "Bit errors on the link: check the optics and cables of the port (`ethtool -S`: rx_crc_errors_phy, rx_symbol_err_phy, rx_corrected_bits_phy; the switch port's FCS and FEC counters), reseat or replace the transceiver, and check FEC is on.".into(),
            flows: flows.iter().map(|f| f.id).collect(),
            params: params([
                ("icrc_failed", json!(t.icrc_failed)),
                ("icrc_checked", json!(t.icrc_checked)),
                ("failed_fraction", json!(share)),
            ]),
        });
    }
}
