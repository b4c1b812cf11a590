//! The diagnosis: findings from the flows, the pause intervals and the totals.
//!
//! Severities: `critical` (the fabric is losing throughput to it now),
//! `warning` (it costs throughput or will), `info` (worth knowing).

use super::{
    Finding, Flow, FlowRow, PfcInterval, Summary, fmt_ip, fmt_mac, fmt_offset, fmt_us, iface_name,
};

pub(crate) struct Input<'a> {
    pub flows: &'a [Flow],
    pub rows: &'a [FlowRow],
    pub pfc: &'a [PfcInterval],
    pub summary: &'a Summary,
}

/// IB local ACK timeout unit: 4.096 µs × 2^T.
const ACK_TIMEOUT_UNIT_NS: u64 = 4096;

/// Smallest local ACK timeout exponent T whose timeout exceeds `ns`.
fn timeout_exponent(ns: u64) -> u32 {
    (0..31)
        .find(|&t| ACK_TIMEOUT_UNIT_NS << t > ns)
        .unwrap_or(31)
}

fn pct(x: f64) -> String {
    format!("{:.2} %", x * 100.0)
}

impl Input<'_> {
    fn iface(&self, i: u16) -> String {
        iface_name(&self.summary.ifaces, i)
    }

    fn describe(&self, f: &Flow) -> String {
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
    fn at(&self, ts_ns: u64) -> String {
        fmt_offset(ts_ns.saturating_sub(self.summary.first_ts_ns.unwrap_or(ts_ns)))
    }

    fn longest_pause(&self) -> Option<&PfcInterval> {
        self.pfc
            .iter()
            .max_by_key(|p| (p.end_ns - p.start_ns, std::cmp::Reverse(p.start_ns)))
    }

    fn pause_text(&self, p: &PfcInterval) -> String {
        format!(
            "{} µs on {} priority {} by {} (from {}, {} frames, ended by {})",
            fmt_us(p.end_ns - p.start_ns),
            self.iface(p.iface),
            p.priority,
            fmt_mac(&p.src_mac),
            self.at(p.start_ns),
            p.frames,
            p.ended_by
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
    ghost(x, &mut out);
    real_loss(x, &mut out);
    rnr(x, &mut out);
    storms(x, &mut out);
    pressure(x, &mut out);
    victims(x, &mut out);
    ce_cnp(x, &mut out);
    link_pause(x, &mut out);
    let rank = |s: &str| match s {
        "critical" => 0,
        "warning" => 1,
        _ => 2,
    };
    out.sort_by_key(|f| rank(f.severity));
    out
}

fn ghost(x: &Input, out: &mut Vec<Finding>) {
    let flows: Vec<&Flow> = x
        .flows
        .iter()
        .filter(|f| f.rewinds_timeout > 0 || f.spurious > 0)
        .collect();
    if flows.is_empty() {
        return;
    }
    let timeouts: u64 = flows.iter().map(|f| f.rewinds_timeout).sum();
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
    let longest = x.longest_pause();
    let mut detail = format!(
        "{timeouts} Go-Back-N rewinds with no NAK before them (timeout-triggered) on {} flows, {paused} of them while the flow's priority was paused; {spurious} of {retrans} retransmitted packets had already been acknowledged (spurious)",
        flows.len()
    );
    if let Some(m) = idle_min {
        detail.push_str(&format!(
            "; idle before the rewinds {}–{} µs",
            fmt_us(m),
            fmt_us(idle_max),
        ));
    }
    match longest {
        Some(p) => detail.push_str(&format!("; longest PFC pause {}", x.pause_text(p))),
        None => detail.push_str("; no PFC pause seen"),
    }
    // The most telling rewind.
    if let Some((f, n)) = flows
        .iter()
        .filter_map(|f| Some((f, f.note?)))
        .max_by_key(|(_, n)| n.rank())
    {
        detail.push_str(&format!(
            ". Worst: {} at {} rewound {} PSNs back to PSN {} after {} µs idle, trigger {}",
            x.describe(f),
            x.at(n.ts),
            n.depth,
            n.psn,
            fmt_us(n.idle_ns),
            n.trigger
        ));
        if n.trigger == "timeout" {
            detail.push_str(" (no NAK preceded it)");
        }
        detail.push_str(&format!(
            "; {} of the {} rewound PSNs had already been acknowledged; the flow resent {} packets in all, {} of them already acknowledged",
            n.acked, n.depth, f.retrans, f.spurious
        ));
        if let Some(c) = n.cover.filter(|_| n.paused_ns > 0) {
            let p = x.pfc.iter().find(|p| {
                p.iface == f.iface
                    && p.src_mac == c.src_mac
                    && p.priority == c.priority
                    && p.start_ns == c.start_ns
            });
            detail.push_str(&format!(
                "; priority {} was paused for {} µs of that idle time",
                c.priority,
                fmt_us(n.paused_ns)
            ));
            if let Some(p) = p {
                detail.push_str(&format!(", covered by the pause of {}", x.pause_text(p)));
            }
        }
    }
    let target = match longest {
        Some(p) => p.end_ns - p.start_ns,
        None => idle_max.saturating_mul(2),
    };
    let t = timeout_exponent(target);
    let recommendation = format!(
        "Packets were delayed, not lost: raise the minimum retransmission timeout above the longest pause ({} µs): the local ACK timeout is 4.096 µs × 2^T, so T ≥ {t} ({} µs) (ibv_modify_qp attr.timeout / NCCL_IB_TIMEOUT, or the NIC's minimum-RTO setting); then shorten the pauses: mark ECN earlier than PFC triggers so DCQCN slows senders first",
        fmt_us(target),
        fmt_us(ACK_TIMEOUT_UNIT_NS << t)
    );
    out.push(Finding {
        id: "ghost-retransmissions",
        severity: if paused > 0 || spurious > 0 {
            "critical"
        } else {
            "warning"
        },
        title: format!(
            "{timeouts} timeout-triggered Go-Back-N rewinds without NAK, {spurious} resent packets already acknowledged"
        ),
        detail,
        recommendation,
        flows: flows.iter().map(|f| f.id).collect(),
    });
}

fn real_loss(x: &Input, out: &mut Vec<Finding>) {
    let flows: Vec<&Flow> = x
        .flows
        .iter()
        .filter(|f| f.rewinds_nak > 0 || f.gaps > 0 || f.naks > 0)
        .collect();
    if flows.is_empty() {
        return;
    }
    let nak_rewinds: u64 = flows.iter().map(|f| f.rewinds_nak).sum();
    let naks: u64 = flows.iter().map(|f| f.naks).sum();
    let gaps: u64 = flows.iter().map(|f| f.gaps).sum();
    let missing: u64 = flows.iter().map(|f| f.gap_psns).sum();
    let mut detail = format!(
        "{naks} NAKs, {nak_rewinds} NAK-triggered rewinds, {gaps} gaps ({missing} PSNs the tap never saw) on {} flows",
        flows.len()
    );
    if let Some(f) = flows
        .iter()
        .max_by_key(|f| (f.rewinds_nak + f.gaps, f.max_depth))
    {
        detail.push_str(&format!(
            "; most: {} with {} NAK rewinds (max depth {}) and {} gaps",
            x.describe(f),
            f.rewinds_nak,
            f.max_depth,
            f.gaps
        ));
    }
    out.push(Finding {
        id: "real-loss",
        severity: "warning",
        title: format!("Packets really lost: {nak_rewinds} NAK rewinds, {gaps} gaps"),
        detail,
        recommendation: "A NAK means the responder saw a PSN hole: find the drop on the path (switch discard, CRC/FCS and buffer counters on the lossless priority, PFC headroom); a gap means the packets never reached the tap (lost upstream of it, or capture drops)".into(),
        flows: flows.iter().map(|f| f.id).collect(),
    });
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
        id: "receiver-not-ready",
        severity: "warning",
        title: format!("{n} RNR NAKs: receivers ran out of posted receive buffers"),
        detail: format!("{n} RNR NAKs, {r} RNR-triggered rewinds on {} flows", flows.len()),
        recommendation: "Post receive buffers earlier or deepen the receive queue / SRQ; RNR retries wait the RNR timer each time".into(),
        flows: flows.iter().map(|f| f.id).collect(),
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
    for p in &stormy {
        let longest = x
            .pfc
            .iter()
            .filter(|i| i.iface == p.iface && i.priority == p.priority)
            .max_by_key(|i| i.end_ns - i.start_ns);
        let mut s = format!(
            "{} priority {}: {} storms, paused {} of the capture",
            x.iface(p.iface),
            p.priority,
            p.storms,
            pct(p.fraction)
        );
        if let Some(l) = longest {
            s.push_str(&format!(", longest {}", x.pause_text(l)));
        }
        parts.push(s);
        flows.extend(x.flows_on(p.iface, p.priority));
    }
    flows.sort_unstable();
    flows.dedup();
    out.push(Finding {
        id: "pfc-storm",
        severity: "critical",
        title: format!(
            "{total} PFC pause storms (continuous pause > {} ms)",
            x.summary.storm_ns as f64 / 1e6
        ),
        detail: parts.join("; "),
        recommendation: "A priority paused this long is stuck (a receiver not draining, a PFC deadlock or a faulty NIC sending pauses): find the port behind the source MAC, enable the PFC watchdog to break storms, and check for cyclic buffer dependencies".into(),
        flows,
    });
}

fn pressure(x: &Input, out: &mut Vec<Finding>) {
    let paused: Vec<_> = x.summary.pfc.iter().filter(|p| p.paused_ns > 0).collect();
    if paused.is_empty() {
        return;
    }
    let worst = paused.iter().map(|p| p.fraction).fold(0.0_f64, f64::max);
    let mut flows = Vec::new();
    let parts: Vec<String> = paused
        .iter()
        .map(|p| {
            flows.extend(x.flows_on(p.iface, p.priority));
            format!(
                "{} priority {}: {} frames ({} XON), paused {} µs = {} of the capture",
                x.iface(p.iface),
                p.priority,
                p.frames,
                p.xon_frames,
                fmt_us(p.paused_ns),
                pct(p.fraction)
            )
        })
        .collect();
    flows.sort_unstable();
    flows.dedup();
    out.push(Finding {
        id: "pfc-pressure",
        severity: if worst >= 0.10 {
            "critical"
        } else if worst >= 0.01 {
            "warning"
        } else {
            "info"
        },
        title: format!("PFC paused up to {} of the capture", pct(worst)),
        detail: parts.join("; "),
        recommendation: "Let ECN act before PFC: set the ECN marking thresholds (WRED min/max) well below the PFC XOFF threshold so DCQCN slows senders before queues pause the link, and check the PFC headroom; a paused priority freezes every flow that shares it".into(),
        flows,
    });
}

fn victims(x: &Input, out: &mut Vec<Finding>) {
    let mut flows: Vec<&Flow> = x.flows.iter().filter(|f| f.stalls > 0).collect();
    if flows.is_empty() {
        return;
    }
    flows.sort_by_key(|f| std::cmp::Reverse(f.stall_paused_ns));
    let parts: Vec<String> = flows
        .iter()
        .take(5)
        .map(|f| {
            format!(
                "{} priority {}: {} stalls, {} µs paused while stalled",
                x.describe(f),
                f.priority.unwrap_or(0),
                f.stalls,
                fmt_us(f.stall_paused_ns)
            )
        })
        .collect();
    let mut ids: Vec<u32> = flows.iter().map(|f| f.id).collect();
    ids.sort_unstable();
    out.push(Finding {
        id: "pfc-victims",
        severity: "warning",
        title: format!("{} flows stalled while their priority was paused", flows.len()),
        detail: parts.join("; "),
        recommendation: "These flows were frozen by pauses (head-of-line blocking, a congestion tree): fix the congested port that sends the pauses, not the victims — ECN-mark earlier, spread elephant flows (ECMP entropy), or move bulk traffic to another priority".into(),
        flows: ids,
    });
}

fn ce_cnp(x: &Input, out: &mut Vec<Finding>) {
    let unattributed = x.summary.totals.cnps_unattributed;
    let reaction = x.summary.ce_to_cnp.as_ref().map(|r| {
        format!(
            "; CE→CNP reaction {}–{} µs (mean {:.1} µs over {} CNPs)",
            r.min_us, r.max_us, r.mean_us, r.samples
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
                    "flow {} ({} → {} QP {}, DSCP {}): {} CE, 0 CNPs{}",
                    r.flow_id,
                    fmt_ip(&r.src_ip),
                    fmt_ip(&r.dst_ip),
                    r.dest_qp,
                    r.dscp.map(|d| d.to_string()).unwrap_or("-".into()),
                    r.ce,
                    if r.paired_qp.is_none() {
                        " (reverse direction never seen)"
                    } else {
                        ""
                    }
                )
            })
            .collect();
        out.push(Finding {
            id: "ce-without-cnp",
            severity: "warning",
            title: format!("{ce} CE-marked packets on {} flows got no CNP back", silent.len()),
            detail: parts.join("; ") + reaction.as_deref().unwrap_or(""),
            recommendation: "The ECN→CNP path is broken: enable DCQCN's notification point (CNP generation) for this priority on the receiving NICs, check the DSCP of data packets maps to the ECN-enabled queue and priority, and that CNPs get a DSCP/priority the fabric forwards (and the tap sees)".into(),
            flows: silent.iter().map(|r| r.flow_id).collect(),
        });
    }
    let loud: Vec<&FlowRow> = x.rows.iter().filter(|r| r.cnps > 0 && r.ce == 0).collect();
    if !loud.is_empty() || unattributed > 0 {
        let cnps: u64 = loud.iter().map(|r| r.cnps).sum();
        let mut detail = format!(
            "{cnps} CNPs to {} flows that carried no CE mark",
            loud.len()
        );
        if unattributed > 0 {
            detail.push_str(&format!(
                "; {unattributed} CNPs matched no flow (no request flow paired with their QP)"
            ));
        }
        out.push(Finding {
            id: "cnp-without-ce",
            severity: "info",
            title: format!("{} CNPs without CE seen at the tap", cnps + unattributed),
            detail: detail + reaction.as_deref().unwrap_or(""),
            recommendation: "Usually the tap sits upstream of the marking queue (the CE mark was set after it); otherwise check which device sends these CNPs and whether their QPs match live connections".into(),
            flows: loud.iter().map(|r| r.flow_id).collect(),
        });
    }
}

fn link_pause(x: &Input, out: &mut Vec<Finding>) {
    let n = x.summary.frames.pause;
    if n == 0 {
        return;
    }
    out.push(Finding {
        id: "link-pause",
        severity: "warning",
        title: format!("{n} 802.3x PAUSE frames (link-level, not PFC)"),
        detail: format!(
            "{n} 802.3x PAUSE frames: a global pause stops every priority of the link, lossy traffic included; they are not counted as PFC"
        ),
        recommendation: "Disable global flow control on ports that run PFC (ethtool -A <iface> rx off tx off; the switch's flowcontrol setting)".into(),
        flows: Vec::new(),
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
