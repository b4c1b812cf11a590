//! The diagnosis: findings from the flows, the pause intervals and the totals.
//!
//! Severities: `critical` (the fabric is losing throughput to it now),
//! `warning` (it costs throughput or will), `info` (worth knowing).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::rto::{ACK_TIMEOUT_UNIT_NS, NicTimeout};

use super::{
    Finding, Flow, FlowRow, PfcInterval, Summary, fmt_count, fmt_duration, fmt_ended_by, fmt_gbps,
    fmt_ip, fmt_mac, fmt_offset, fmt_pct as pct, fmt_pfc, iface_name,
};

/// A finding's `params`.
pub(crate) fn params<const N: usize>(
    items: [(&'static str, Value); N],
) -> BTreeMap<&'static str, Value> {
    items.into_iter().collect()
}

/// A rewind's trigger (`events.parquet`'s `trigger`), in words.
fn trigger_words(trigger: &str) -> &'static str {
    match trigger {
        "nak" => "after a NAK",
        "rnr" => "after an RNR NAK",
        _ => "on a timeout",
    }
}

pub(crate) struct Input<'a> {
    pub flows: &'a [Flow],
    pub rows: &'a [FlowRow],
    pub pfc: &'a [PfcInterval],
    pub summary: &'a Summary,
    /// The pauses that covered ghost timeout rewinds: `(iface, priority,
    /// sender, start)`.
    pub ghost_covers: &'a std::collections::BTreeSet<(u16, u8, [u8; 6], u64)>,
}

/// Smallest local ACK timeout exponent T whose timeout exceeds `ns`.
pub(crate) fn timeout_exponent(ns: u64) -> u32 {
    (0..31)
        .find(|&t| ACK_TIMEOUT_UNIT_NS << t > ns)
        .unwrap_or(31)
}

impl Input<'_> {
    fn iface(&self, i: u16) -> String {
        iface_name(&self.summary.ifaces, i)
    }

    pub(crate) fn describe(&self, f: &Flow) -> String {
        format!(
            "flow {} ({} → {} QP {}, {})",
            f.id,
            fmt_ip(&f.src_ip),
            fmt_ip(&f.dst_ip),
            f.dest_qp,
            self.iface(f.iface)
        )
    }

    /// A capture time as an offset from the capture's first frame.
    pub(crate) fn at(&self, ts_ns: u64) -> String {
        fmt_offset(ts_ns.saturating_sub(self.summary.first_ts_ns.unwrap_or(ts_ns)))
    }

    /// The longest of the pauses that covered ghost timeout rewinds (same
    /// tap, same priority as the rewinding flow).
    fn longest_covering_pause(&self) -> Option<&PfcInterval> {
        self.pfc
            .iter()
            .filter(|p| {
                self.ghost_covers
                    .contains(&(p.iface, p.priority, p.src_mac, p.start_ns))
            })
            .max_by_key(|p| (p.end_ns - p.start_ns, std::cmp::Reverse(p.start_ns)))
    }

    fn pause_text(&self, p: &PfcInterval) -> String {
        format!(
            "{} on {} priority {} by {} (from {}, {}, {})",
            fmt_duration(p.end_ns - p.start_ns),
            self.iface(p.iface),
            p.priority,
            fmt_mac(&p.src_mac),
            self.at(p.start_ns),
            fmt_count(p.frames, "frame"),
            fmt_ended_by(p.ended_by)
        )
    }

    /// Flows whose priority is `prio` on `iface`.
    fn flows_on(&self, iface: u16, prio: u8) -> Vec<u32> {
        self.flows
            .iter()
            .filter(|f| f.iface == iface && f.priority == Some(prio))
            .map(|f| f.id)
            .collect()
    }
}

pub(crate) fn diagnose(x: &Input) -> Vec<Finding> {
    let mut out = Vec::new();
    capture(x, &mut out);
    ghost(x, &mut out);
    super::livelock::finding(x, &mut out);
    super::unanswered::finding(x, &mut out);
    super::mtu::finding(x, &mut out);
    real_loss(x, &mut out);
    reordering(x, &mut out);
    corruption(x, &mut out);
    link_speed(x, &mut out);
    rnr(x, &mut out);
    storms(x, &mut out);
    congestion_tree(x, &mut out);
    pressure(x, &mut out);
    victims(x, &mut out);
    ce_cnp(x, &mut out);
    link_pause(x, &mut out);
    sort_by_severity(&mut out);
    out
}

/// Critical, warning, info; the order within a severity is kept.
pub(crate) fn sort_by_severity(findings: &mut [Finding]) {
    let rank = |s: &str| match s {
        "critical" => 0,
        "warning" => 1,
        _ => 2,
    };
    findings.sort_by_key(|f| rank(f.severity));
}

fn ghost(x: &Input, out: &mut Vec<Finding>) {
    let flows: Vec<&Flow> = x
        .flows
        .iter()
        .filter(|f| f.rewinds_timeout_ghost > 0 || f.spurious > 0)
        .collect();
    if flows.is_empty() {
        return;
    }
    let timeouts: u64 = flows.iter().map(|f| f.rewinds_timeout_ghost).sum();
    let paused: u64 = flows.iter().map(|f| f.timeout_rewinds_paused).sum();
    let spurious: u64 = flows.iter().map(|f| f.spurious).sum();
    let retrans: u64 = flows.iter().map(|f| f.retrans).sum();
    let idle_min = flows
        .iter()
        .filter(|f| f.rewinds_timeout > 0)
        .map(|f| f.timeout_idle_min_ns)
        .min();
    let idle_max = flows
        .iter()
        .map(|f| f.timeout_idle_max_ns)
        .max()
        .unwrap_or(0);
    let longest = x.longest_covering_pause();
    let mut detail = format!(
        "{} with no NAK before them on {}, {paused} of them while the flow's priority was paused: the packets were delayed, not lost (already acknowledged, acknowledged sooner after the resend than a round trip allows, or paused while the sender waited).\n{spurious} of {} had already been acknowledged (spurious).",
        fmt_count(timeouts, "timeout-triggered Go-Back-N rewind"),
        fmt_count(flows.len() as u64, "flow"),
        fmt_count(retrans, "retransmitted packet"),
    );
    if let Some(m) = idle_min {
        detail.push_str(&if m == idle_max {
            format!("\nIdle before the rewinds: {}.", fmt_duration(m))
        } else {
            format!(
                "\nIdle before the rewinds: {} to {}.",
                fmt_duration(m),
                fmt_duration(idle_max)
            )
        });
    }
    match longest {
        Some(p) => detail.push_str(&format!(
            "\nLongest pause covering them: {}.",
            x.pause_text(p)
        )),
        None => detail.push_str("\nNo PFC pause covered them."),
    }
    // The most telling rewind.
    if let Some((f, n)) = flows
        .iter()
        .filter_map(|f| Some((f, f.note?)))
        .max_by_key(|(_, n)| n.rank())
    {
        detail.push_str(&format!(
            "\nWorst: {} at {} rewound {} back to PSN {} after {} idle, {}",
            x.describe(f),
            x.at(n.ts),
            fmt_count(n.depth, "PSN"),
            n.psn,
            fmt_duration(n.idle_ns),
            trigger_words(n.trigger)
        ));
        if n.trigger == "timeout" {
            detail.push_str(" (no NAK preceded it)");
        }
        detail.push_str(&format!(
            "; {} of the {} rewound PSNs had already been acknowledged; the flow resent {} in all, {} of them already acknowledged",
            n.acked, n.depth, fmt_count(f.retrans, "packet"), f.spurious
        ));
        if let Some(c) = n.cover.filter(|_| n.paused_ns > 0) {
            let p = x.pfc.iter().find(|p| {
                p.iface == f.iface
                    && p.src_mac == c.src_mac
                    && p.priority == c.priority
                    && p.start_ns == c.start_ns
            });
            detail.push_str(&format!(
                "; priority {} was paused for {} of that idle time",
                c.priority,
                fmt_duration(n.paused_ns)
            ));
            if let Some(p) = p {
                detail.push_str(&format!(", covered by the pause of {}", x.pause_text(p)));
            }
        }
        detail.push('.');
    }
    let target = match longest {
        Some(p) => p.end_ns - p.start_ns,
        None => idle_max.saturating_mul(2).max(1),
    };
    let t = timeout_exponent(target);
    let against = if longest.is_some() {
        "the longest pause that covered these rewinds"
    } else {
        "twice the longest wait before them"
    };
    let pause_max = flows
        .iter()
        .flat_map(|f| {
            x.pfc
                .iter()
                .filter(move |p| p.iface == f.iface && Some(p.priority) == f.priority)
        })
        .map(|p| p.end_ns - p.start_ns)
        .max();
    let ids: Vec<u32> = flows.iter().map(|f| f.id).collect();
    let nics: Vec<&NicTimeout> = x
        .summary
        .nic_timeouts
        .iter()
        .filter(|n| n.flows.iter().any(|id| ids.contains(id)))
        .collect();
    let mut recommendation = match nic_timeout_text(&nics) {
        Some(t) => format!("{t}; "),
        None => String::new(),
    };
    if let Some(p) = pause_max {
        recommendation.push_str(&format!(
            "pauses on these flows' priorities last up to {}. ",
            fmt_duration(p)
        ));
    }
    let timeout_ns = ACK_TIMEOUT_UNIT_NS << t;
    recommendation.push_str(&format!(
        "Packets were delayed, not lost: raise the minimum retransmission timeout above {against} ({}): the local ACK timeout is 4.096 µs × 2^T, so T ≥ {t} ({}) (ibv_modify_qp attr.timeout / NCCL_IB_TIMEOUT, or the NIC's minimum-RTO setting). Then shorten the pauses: mark ECN earlier than PFC triggers so DCQCN slows senders first.",
        fmt_duration(target),
        fmt_duration(timeout_ns)
    ));
    out.push(Finding {
        wireshark: None,
        id: "ghost-retransmissions",
        severity: if paused > 0 || spurious > 0 {
            "critical"
        } else {
            "warning"
        },
        title: format!(
            "{} without a NAK: packets delayed, not lost ({spurious} resent though acknowledged)",
            fmt_count(timeouts, "timeout rewind")
        ),
        detail,
        recommendation,
        flows: flows.iter().map(|f| f.id).collect(),
        params: params([
            ("timeout_rewinds", json!(timeouts)),
            ("timeout_rewinds_paused", json!(paused)),
            ("spurious_retrans", json!(spurious)),
            ("retrans_packets", json!(retrans)),
            ("idle_min_ns", json!(idle_min)),
            ("idle_max_ns", json!(idle_max)),
            (
                "longest_covering_pause_ns",
                json!(longest.map(|p| p.end_ns - p.start_ns)),
            ),
            ("timeout_must_exceed_ns", json!(target)),
            ("recommended_timeout_exponent", json!(t)),
            ("recommended_timeout_ns", json!(timeout_ns)),
            ("longest_pause_on_their_priorities_ns", json!(pause_max)),
        ]),
    });
}

/// What the senders' own timeout rewinds say about their NICs' timeout:
/// measured where a rewind no pause held up shows it, else bounded.
fn nic_timeout_text(nics: &[&NicTimeout]) -> Option<String> {
    // A sender seen at several taps: the tap with the most to say.
    let mut best: Vec<&NicTimeout> = Vec::new();
    for n in nics {
        match best.iter_mut().find(|b| b.src_ip == n.src_ip) {
            Some(b) if (n.samples, n.bounded) > (b.samples, b.bounded) => *b = n,
            Some(_) => {}
            None => best.push(n),
        }
    }
    let parts: Vec<String> = best
        .iter()
        .filter_map(|n| match (n.timeout_us, n.exponent, n.lower_us, n.upper_us) {
            (Some(us), Some(t), ..) => Some(format!(
                "{}'s NIC times out after ≈ {us:.1} µs (T≈{t}; {} timeout rewinds no pause held up, waits up to {:.1} µs)",
                n.src_ip,
                n.samples,
                n.max_wait_us.unwrap_or(us)
            )),
            (None, _, Some(lo), Some(hi)) => Some(format!(
                "{}'s NIC times out after more than {lo:.1} µs and at most {hi:.1} µs (each of its {} timeout rewinds waited out a pause, so the timer fired during it)",
                n.src_ip, n.bounded
            )),
            _ => None,
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn real_loss(x: &Input, out: &mut Vec<Finding>) {
    let flows: Vec<&Flow> = x
        .flows
        .iter()
        .filter(|f| {
            f.rewinds_nak > 0
                || f.naks > 0
                || f.gap_counts.lost() > 0
                || f.rewinds_timeout_unexplained > 0
        })
        .collect();
    if flows.is_empty() {
        return;
    }
    let sum = |g: fn(&Flow) -> u64| -> u64 { flows.iter().map(|f| g(f)).sum() };
    let naks = sum(|f| f.naks);
    let nak_rewinds = sum(|f| f.rewinds_nak);
    let nak_lost = sum(|f| f.gap_counts.nak_lost);
    let before_tap = sum(|f| f.gap_counts.lost_before_tap);
    let unresolved = sum(|f| f.gap_counts.unresolved);
    let timeouts = sum(|f| f.rewinds_timeout_unexplained);
    let mut parts = vec![format!("On {}:", fmt_count(flows.len() as u64, "flow"))];
    if naks + nak_rewinds > 0 {
        parts.push(format!(
            "NAK-driven loss: {}, {}, {} a NAK named.",
            fmt_count(naks, "NAK"),
            fmt_count(nak_rewinds, "NAK-triggered rewind"),
            fmt_count(nak_lost, "missing PSN")
        ));
    }
    if before_tap > 0 {
        parts.push(format!(
            "Resends of lost packets: {} the tap first saw in a resend (lost before the tap).",
            fmt_count(before_tap, "PSN")
        ));
    }
    if timeouts > 0 {
        parts.push(format!(
            "{} of packets the tap had seen, with no sign they were only delayed (not acknowledged before the resend, no pause while waiting): lost after the tap.",
            fmt_count(timeouts, "timeout rewind")
        ));
    }
    if unresolved > 0 {
        parts.push(format!(
            "Unresolved gaps: {} never seen and never acknowledged (the reverse direction may be missing from the capture).",
            fmt_count(unresolved, "PSN")
        ));
    }
    let mut detail = parts.join("\n");
    if let Some(f) = flows.iter().max_by_key(|f| {
        (
            f.rewinds_nak + f.gap_counts.lost() + f.rewinds_timeout_unexplained,
            f.max_depth,
        )
    }) {
        detail.push_str(&format!(
            "\nMost: {} with {} (deepest {}), {} lost before the tap, {} unresolved.",
            x.describe(f),
            fmt_count(f.rewinds_nak, "NAK rewind"),
            fmt_count(f.max_depth, "PSN"),
            fmt_count(f.gap_counts.lost_before_tap + f.gap_counts.nak_lost, "PSN"),
            f.gap_counts.unresolved
        ));
    }
    let lost = before_tap + nak_lost;
    let mut headline = Vec::new();
    for (n, what) in [
        (nak_rewinds, fmt_count(nak_rewinds, "NAK rewind")),
        (
            lost,
            format!("{} lost before the tap", fmt_count(lost, "PSN")),
        ),
        (timeouts, fmt_count(timeouts, "unexplained timeout")),
        (
            unresolved,
            format!("{} unresolved", fmt_count(unresolved, "PSN")),
        ),
    ] {
        if n > 0 {
            headline.push(what);
        }
    }
    out.push(Finding {
        wireshark: None,
        id: "real-loss",
        severity: "warning",
        title: format!("Packets really lost: {}", headline.join(", ")),
        detail,
        recommendation: "A NAK means the responder saw a PSN hole; a PSN first seen in a resend was lost upstream of the tap. Find the drop on the path (switch discard, CRC/FCS and buffer counters on the lossless priority, PFC headroom). Unresolved gaps need the reverse direction in the capture to be told apart from capture loss.".into(),
        flows: flows.iter().map(|f| f.id).collect(),
        params: params([
            ("naks", json!(naks)),
            ("nak_rewinds", json!(nak_rewinds)),
            ("psns_lost_before_tap", json!(lost)),
            ("unexplained_timeouts", json!(timeouts)),
            ("unresolved_psns", json!(unresolved)),
        ]),
    });
}

/// The capture itself: frames the tap missed and mirror copies.
fn capture(x: &Input, out: &mut Vec<Finding>) {
    let lost: Vec<&Flow> = x
        .flows
        .iter()
        .filter(|f| f.gap_counts.capture_lost > 0)
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
        let n: u64 = lost.iter().map(|f| f.gap_counts.capture_lost).sum();
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
            severity: "warning",
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
                    json!(
                        x.summary
                            .taps
                            .iter()
                            .map(|t| t.isb_ifdrop.unwrap_or(0) + t.isb_osdrop.unwrap_or(0))
                            .sum::<u64>()
                    ),
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
            .flows
            .iter()
            .filter(|f| f.mirror_copies > 0)
            .map(|f| f.id)
            .collect();
        flows.sort_unstable();
        out.push(Finding {
            wireshark: None,
            id: "mirror-duplicates",
            severity: "info",
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
fn reordering(x: &Input, out: &mut Vec<Finding>) {
    let flows: Vec<&Flow> = x.flows.iter().filter(|f| f.gap_counts.late > 0).collect();
    if flows.is_empty() {
        return;
    }
    let n: u64 = flows.iter().map(|f| f.gap_counts.late).sum();
    let max_ns = flows
        .iter()
        .filter_map(|f| f.late_max_ns)
        .max()
        .unwrap_or(0);
    let max_psns = flows.iter().map(|f| f.late_max_psns).max().unwrap_or(0);
    out.push(Finding {
        wireshark: None,
        id: "reordering",
        severity: "warning",
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
fn corruption(x: &Input, out: &mut Vec<Finding>) {
    for t in x.summary.taps.iter().filter(|t| t.sniffer) {
        out.push(Finding {
            wireshark: None,
            id: "sniffer-capture",
            severity: "info",
            title: format!("{}: a NIC's RDMA sniffer capture (headers rewritten)", t.iface_name),
            detail: format!(
                "Every RoCE frame on {} comes from UDP port 4791 and {} of {} fail their ICRC: a NIC's RDMA sniffer (tcpdump -i mlx5_N) rewrites the UDP source port and the source MAC, so the ICRC cannot match.\nICRC results are left unknown for these frames and say nothing about corruption.",
                t.iface_name, t.icrc_failed, t.icrc_checked
            ),
            recommendation: "Nothing is wrong with the link. To check the ICRC, capture on a mirror port or the host's Ethernet interface instead; sniffer captures may also be cut at a few hundred bytes.".into(),
            flows: x.flows.iter().filter(|f| f.iface == t.iface).map(|f| f.id).collect(),
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
            .flows
            .iter()
            .filter(|f| f.iface == t.iface && f.icrc_errors > 0)
            .collect();
        let followed: Vec<&&Flow> = flows
            .iter()
            .filter(|f| {
                f.rewinds > 0
                    || f.paired
                        .is_some_and(|p| x.flows.get(p).is_some_and(|r| r.naks > 0))
            })
            .collect();
        let share = t.icrc_failed as f64 / t.icrc_checked as f64;
        out.push(Finding {
            wireshark: None,
            id: "corrupted-frames",
            severity: "warning",
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

/// A flow faster than its tap's link speed: the speed is wrong, and with it
/// every pause duration.
fn link_speed(x: &Input, out: &mut Vec<Finding>) {
    for t in &x.summary.taps {
        let limit = t.link_speed_bps as f64 / 1e9;
        let fast: Vec<&FlowRow> = x
            .rows
            .iter()
            .filter(|r| r.iface == t.iface && r.packets >= 2 && r.gbps > limit)
            .collect();
        let Some(top) = fast.iter().max_by(|a, b| a.gbps.total_cmp(&b.gbps)) else {
            continue;
        };
        out.push(Finding {
            wireshark: None,
            id: "link-speed",
            severity: "warning",
            title: format!(
                "{}: a flow ran at {}, above the {} link speed assumed",
                t.iface_name,
                fmt_gbps(top.gbps),
                fmt_gbps(limit)
            ),
            detail: format!(
                "{} on {} ran faster than {} (flow {} at {}): the link is faster than assumed, so every PFC pause duration computed from its quanta is too long by the same factor.",
                fmt_count(fast.len() as u64, "flow"),
                t.iface_name,
                fmt_gbps(limit),
                top.flow_id,
                fmt_gbps(top.gbps)
            ),
            recommendation: format!(
                "Give the tap's real speed: --link-speed {}=400G (or the port's speed).",
                t.iface_name
            ),
            flows: fast.iter().map(|r| r.flow_id).collect(),
            params: params([
                ("assumed_link_speed_bps", json!(t.link_speed_bps)),
                ("max_flow_gbps", json!(top.gbps)),
            ]),
        });
    }
}

fn rnr(x: &Input, out: &mut Vec<Finding>) {
    let flows: Vec<&Flow> = x
        .flows
        .iter()
        .filter(|f| f.rnr_naks > 0 || f.rewinds_rnr > 0)
        .collect();
    if flows.is_empty() {
        return;
    }
    let n: u64 = flows.iter().map(|f| f.rnr_naks).sum();
    let r: u64 = flows.iter().map(|f| f.rewinds_rnr).sum();
    out.push(Finding {
        wireshark: None,
        id: "receiver-not-ready",
        severity: "warning",
        title: format!(
            "{}: receivers ran out of posted receive buffers",
            fmt_count(n, "RNR NAK")
        ),
        detail: format!(
            "{} and {} on {}.",
            fmt_count(n, "RNR NAK"),
            fmt_count(r, "RNR-triggered rewind"),
            fmt_count(flows.len() as u64, "flow")
        ),
        recommendation: "Post receive buffers earlier or deepen the receive queue / SRQ; RNR retries wait the RNR timer each time.".into(),
        flows: flows.iter().map(|f| f.id).collect(),
        params: params([("rnr_naks", json!(n)), ("rnr_rewinds", json!(r))]),
    });
}

fn storms(x: &Input, out: &mut Vec<Finding>) {
    let stormy: Vec<_> = x.summary.pfc.iter().filter(|p| p.storms > 0).collect();
    if stormy.is_empty() {
        return;
    }
    let total: u64 = stormy.iter().map(|p| p.storms).sum();
    let mut parts = Vec::new();
    let mut flows = Vec::new();
    let mut longest_ns = 0;
    for p in &stormy {
        let longest = x
            .pfc
            .iter()
            .filter(|i| i.iface == p.iface && i.priority == p.priority)
            .max_by_key(|i| i.end_ns - i.start_ns);
        let mut s = format!(
            "{} priority {}: {}, paused {} of the capture",
            x.iface(p.iface),
            p.priority,
            fmt_count(p.storms, "storm"),
            pct(p.fraction)
        );
        if let Some(l) = longest {
            longest_ns = longest_ns.max(l.end_ns - l.start_ns);
            s.push_str(&format!("; longest {}", x.pause_text(l)));
        }
        parts.push(s + ".");
        flows.extend(x.flows_on(p.iface, p.priority));
    }
    flows.sort_unstable();
    flows.dedup();
    out.push(Finding {
        wireshark: None,
        id: "pfc-storm",
        severity: "critical",
        title: format!(
            "{} (a continuous pause over {}), the longest {}",
            fmt_count(total, "PFC pause storm"),
            fmt_duration(x.summary.storm_ns),
            fmt_duration(longest_ns)
        ),
        detail: parts.join("\n"),
        recommendation: "A priority paused this long is stuck (a receiver not draining, a PFC deadlock or a faulty NIC sending pauses): find the port behind the source MAC, enable the PFC watchdog to break storms, and check for cyclic buffer dependencies.".into(),
        flows,
        params: params([
            ("storms", json!(total)),
            ("storm_threshold_ns", json!(x.summary.storm_ns)),
            ("longest_pause_ns", json!(longest_ns)),
        ]),
    });
}

/// Pauses that spread: the root and the path (see `tree`).
fn congestion_tree(x: &Input, out: &mut Vec<Finding>) {
    for t in x.summary.pfc_trees.iter().filter(|t| t.nodes.len() > 1) {
        let root = &t.nodes[0];
        let kind = |k: &str| {
            if k == "host" {
                "end host: it sends RoCE traffic too"
            } else {
                "switch"
            }
        };
        let steps: Vec<String> = t.nodes[1..]
            .iter()
            .map(|n| {
                let from = n
                    .parent
                    .and_then(|p| t.nodes.get(p))
                    .map_or("?", |p| p.src_mac.as_str());
                format!(
                    "Then {} ({}) on {} paused {} after {}.",
                    n.src_mac,
                    kind(n.kind),
                    n.iface_name,
                    fmt_duration(n.delay_ns.unwrap_or(0)),
                    from
                )
            })
            .collect();
        let mut victims: Vec<String> = Vec::new();
        let mut flows: Vec<u32> = Vec::new();
        let mut seen_taps = Vec::new();
        for n in &t.nodes {
            if seen_taps.contains(&n.iface) || n.victims.is_empty() {
                continue;
            }
            seen_taps.push(n.iface);
            let ids: Vec<String> = n.victims.iter().map(u32::to_string).collect();
            victims.push(format!(
                "{}: {} {}",
                n.iface_name,
                if ids.len() == 1 { "flow" } else { "flows" },
                ids.join(", ")
            ));
            flows.extend(&n.victims);
        }
        flows.sort_unstable();
        flows.dedup();
        let root_is_host = root.kind == "host";
        out.push(Finding {
            wireshark: None,
            id: "pfc-congestion-tree",
            severity: "critical",
            title: format!(
                "Pauses on priority {} spread from {} ({}) to {} more {}",
                t.priority,
                root.src_mac,
                if root_is_host { "an end host" } else { "a switch" },
                t.nodes.len() - 1,
                if t.nodes.len() == 2 { "port" } else { "ports" }
            ),
            detail: format!(
                "Root: {} ({}) seen on {}, first pause at {}, paused {} in all.\n{}{}",
                root.src_mac,
                kind(root.kind),
                root.iface_name,
                x.at(root.first_pause_ns),
                fmt_duration(root.paused_ns),
                steps.join("\n"),
                if victims.is_empty() {
                    String::new()
                } else {
                    format!("\nVictims: {}.", victims.join("; "))
                }
            ),
            recommendation: if root_is_host {
                format!(
                    "The tree grows from a receiver that does not drain ({}): find out why (host memory or PCIe pressure, an application not posting buffers, the NIC's rx_prio{}_pause_duration and rx_discards_phy counters), and let ECN act before PFC so the senders slow down before the pause spreads. The PFC watchdog caps how long it can freeze the fabric.",
                    root.src_mac, t.priority
                )
            } else {
                "The tree grows from a switch port: find its congested egress (an incast, a slow downstream link or a PFC deadlock), let ECN act before PFC, and enable the PFC watchdog.".to_string()
            },
            flows,
            params: params([
                ("priority", json!(t.priority)),
                ("root_src_mac", json!(root.src_mac)),
                ("root_kind", json!(root.kind)),
                ("ports", json!(t.nodes.len())),
                ("root_paused_ns", json!(root.paused_ns)),
            ]),
        });
    }
}

fn pressure(x: &Input, out: &mut Vec<Finding>) {
    let paused: Vec<_> = x.summary.pfc.iter().filter(|p| p.paused_ns > 0).collect();
    let Some(worst) = paused
        .iter()
        .max_by(|a, b| a.fraction.total_cmp(&b.fraction))
    else {
        return;
    };
    let mut flows = Vec::new();
    let parts: Vec<String> = paused
        .iter()
        .map(|p| {
            flows.extend(x.flows_on(p.iface, p.priority));
            format!("{}.", fmt_pfc(&x.iface(p.iface), p))
        })
        .collect();
    flows.sort_unstable();
    flows.dedup();
    out.push(Finding {
        wireshark: None,
        id: "pfc-pressure",
        severity: if worst.fraction >= 0.10 {
            "critical"
        } else if worst.fraction >= 0.01 {
            "warning"
        } else {
            "info"
        },
        title: format!(
            "PFC paused {} priority {} {} of the capture ({})",
            x.iface(worst.iface),
            worst.priority,
            pct(worst.fraction),
            fmt_duration(worst.paused_ns)
        ),
        detail: parts.join("\n"),
        recommendation: "Let ECN act before PFC: set the ECN marking thresholds (WRED min/max) well below the PFC XOFF threshold so DCQCN slows senders before queues pause the link, and check the PFC headroom. A paused priority freezes every flow that shares it.".into(),
        flows,
        params: params([
            ("max_paused_fraction", json!(worst.fraction)),
            ("max_paused_ns", json!(worst.paused_ns)),
            ("iface", json!(x.iface(worst.iface))),
            ("priority", json!(worst.priority)),
        ]),
    });
}

fn victims(x: &Input, out: &mut Vec<Finding>) {
    let mut flows: Vec<&Flow> = x.flows.iter().filter(|f| f.stalls > 0).collect();
    if flows.is_empty() {
        return;
    }
    flows.sort_by_key(|f| std::cmp::Reverse(f.stall_paused_ns));
    let most = flows.first().map_or(0, |f| f.stall_paused_ns);
    let parts: Vec<String> = flows
        .iter()
        .take(5)
        .map(|f| {
            format!(
                "{} priority {}: {}, {} paused while stalled.",
                x.describe(f),
                f.priority.unwrap_or(0),
                fmt_count(f.stalls, "stall"),
                fmt_duration(f.stall_paused_ns)
            )
        })
        .collect();
    let mut ids: Vec<u32> = flows.iter().map(|f| f.id).collect();
    ids.sort_unstable();
    out.push(Finding {
        wireshark: None,
        id: "pfc-victims",
        severity: "warning",
        title: format!(
            "{} stalled while {} priority was paused, up to {} each",
            fmt_count(flows.len() as u64, "flow"),
            if flows.len() == 1 { "its" } else { "their" },
            fmt_duration(most)
        ),
        detail: parts.join("\n"),
        recommendation: "These flows were frozen by pauses (head-of-line blocking, a congestion tree): fix the congested port that sends the pauses, not the victims — ECN-mark earlier, spread elephant flows (ECMP entropy), or move bulk traffic to another priority.".into(),
        flows: ids,
        params: params([
            ("victim_flows", json!(flows.len())),
            ("max_stall_paused_ns", json!(most)),
        ]),
    });
}

fn ce_cnp(x: &Input, out: &mut Vec<Finding>) {
    let unattributed = x.summary.totals.cnps_unattributed;
    let reaction = x.summary.ce_to_cnp.as_ref().map(|r| {
        format!(
            "\nCE→CNP reaction {} to {} (mean {} over {}).",
            fmt_duration((r.min_us * 1e3).round() as u64),
            fmt_duration((r.max_us * 1e3).round() as u64),
            fmt_duration((r.mean_us * 1e3).round() as u64),
            fmt_count(r.samples, "CNP")
        )
    });
    let silent: Vec<&FlowRow> = x
        .rows
        .iter()
        .zip(x.flows)
        .filter(|(r, f)| r.ce > 0 && r.cnps == 0 && (f.paired_qp.is_some() || unattributed == 0))
        .map(|(r, _)| r)
        .collect();
    if !silent.is_empty() {
        let ce: u64 = silent.iter().map(|r| r.ce).sum();
        let parts: Vec<String> = silent
            .iter()
            .take(5)
            .map(|r| {
                format!(
                    "flow {} ({} → {} QP {}, DSCP {}): {}, 0 CNPs{}.",
                    r.flow_id,
                    fmt_ip(&r.src_ip),
                    fmt_ip(&r.dst_ip),
                    r.dest_qp,
                    r.dscp.map(|d| d.to_string()).unwrap_or("-".into()),
                    fmt_count(r.ce, "CE mark"),
                    if r.paired_qp.is_none() {
                        " (reverse direction never seen)"
                    } else {
                        ""
                    }
                )
            })
            .collect();
        out.push(Finding {
            wireshark: None,
            id: "ce-without-cnp",
            severity: "warning",
            title: format!(
                "{} on {} got no CNP back",
                fmt_count(ce, "CE-marked packet"),
                fmt_count(silent.len() as u64, "flow")
            ),
            detail: parts.join("\n") + reaction.as_deref().unwrap_or(""),
            recommendation: "The ECN→CNP path is broken: enable DCQCN's notification point (CNP generation) for this priority on the receiving NICs, check the DSCP of data packets maps to the ECN-enabled queue and priority, and that CNPs get a DSCP/priority the fabric forwards (and the tap sees).".into(),
            flows: silent.iter().map(|r| r.flow_id).collect(),
            params: params([("ce_packets", json!(ce)), ("silent_flows", json!(silent.len()))]),
        });
    }
    let loud: Vec<&FlowRow> = x.rows.iter().filter(|r| r.cnps > 0 && r.ce == 0).collect();
    if !loud.is_empty() || unattributed > 0 {
        let cnps: u64 = loud.iter().map(|r| r.cnps).sum();
        let mut detail = format!(
            "{} to {} that carried no CE mark.",
            fmt_count(cnps, "CNP"),
            fmt_count(loud.len() as u64, "flow")
        );
        if unattributed > 0 {
            detail.push_str(&format!(
                "\n{} matched no flow (no request flow paired with their QP).",
                fmt_count(unattributed, "CNP")
            ));
        }
        out.push(Finding {
            wireshark: None,
            id: "cnp-without-ce",
            severity: "info",
            title: format!(
                "{} without a CE mark seen at the tap",
                fmt_count(cnps + unattributed, "CNP")
            ),
            detail: detail + reaction.as_deref().unwrap_or(""),
            recommendation: "Usually the tap sits upstream of the marking queue (the CE mark was set after it); otherwise check which device sends these CNPs and whether their QPs match live connections.".into(),
            flows: loud.iter().map(|r| r.flow_id).collect(),
            params: params([
                ("cnps_without_ce", json!(cnps)),
                ("cnps_unattributed", json!(unattributed)),
            ]),
        });
    }
}

fn link_pause(x: &Input, out: &mut Vec<Finding>) {
    let n = x.summary.frames.pause;
    if n == 0 {
        return;
    }
    out.push(Finding {
        wireshark: None,
        id: "link-pause",
        severity: "warning",
        title: format!(
            "{} (link-level, not PFC)",
            fmt_count(n, "802.3x PAUSE frame")
        ),
        detail: format!(
            "{}: a global pause stops every priority of the link, lossy traffic included; they are not counted as PFC.",
            fmt_count(n, "802.3x PAUSE frame")
        ),
        recommendation: "Disable global flow control on ports that run PFC (ethtool -A <iface> rx off tx off; the switch's flowcontrol setting).".into(),
        flows: Vec::new(),
        params: params([("pause_frames", json!(n))]),
    });
}

#[cfg(test)]
mod tests {
    use super::timeout_exponent;

    #[test]
    fn exponent_exceeds_the_pause() {
        assert_eq!(timeout_exponent(0), 0);
        assert_eq!(timeout_exponent(4096), 1);
        assert_eq!(timeout_exponent(335_539), 7); // 4.096 µs × 128 = 524 µs
        assert_eq!(timeout_exponent(u64::MAX), 31);
    }
}
