//! PFC findings: link speed, storms, the congestion tree, pressure, victims,
//! 802.3x pauses (`docs/analysis.md`, *PFC*, *Victims*, *Congestion tree*).

use serde_json::json;

use crate::analyze::{Finding, Flow, fmt_count, fmt_duration, fmt_gbps, fmt_pct as pct, fmt_pfc};

use super::input::{Input, params, share};

/// A flow faster than its tap's link speed: the speed is wrong, and with it
/// every pause duration.
pub(super) fn link_speed(x: &Input, out: &mut Vec<Finding>) {
    for t in &x.summary.taps {
        let limit = t.link_speed_bps as f64 / 1e9;
        // (flow, its gbps)
        let fast: Vec<(&Flow, f64)> = x
            .flows()
            .filter(|f| f.iface == t.iface && f.packets >= 2)
            .map(|f| (f, f.rate_gbps(f.bytes)))
            .filter(|&(_, gbps)| gbps > limit)
            .collect();
        let Some(&(top, top_gbps)) = fast.iter().max_by(|a, b| a.1.total_cmp(&b.1)) else {
            continue;
        };
        out.push(Finding {
            wireshark: None,
            id: "link-speed",
            impact: x.traffic_share(&fast.iter().map(|(f, _)| f.id).collect::<Vec<_>>()),
            severity: "warning",
            title: format!(
                "{}: a flow ran at {}, above the {} link speed assumed",
                t.iface_name,
                fmt_gbps(top_gbps),
                fmt_gbps(limit)
            ),
            detail: format!(
                "{} on {} ran faster than {} (flow {} at {}): the link is faster than assumed, so every PFC pause duration computed from its quanta is too long by the same factor.",
                fmt_count(fast.len() as u64, "flow"),
                t.iface_name,
                fmt_gbps(limit),
                top.id,
                fmt_gbps(top_gbps)
            ),
            recommendation: format!(
                "Give the tap's real speed: --link-speed {}=400G (or the port's speed).",
                t.iface_name
            ),
            flows: fast.iter().map(|(f, _)| f.id).collect(),
            params: params([
                ("assumed_link_speed_bps", json!(t.link_speed_bps)),
                ("max_flow_gbps", json!(top_gbps)),
            ]),
        });
    }
}

pub(super) fn storms(x: &Input, out: &mut Vec<Finding>) {
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
        impact: stormy.iter().map(|p| p.fraction).fold(0.0, f64::max).min(1.0),
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

pub(super) fn pressure(x: &Input, out: &mut Vec<Finding>) {
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
        impact: worst.fraction.min(1.0),
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

pub(super) fn victims(x: &Input, out: &mut Vec<Finding>) {
    let mut flows: Vec<&Flow> = x.flows().filter(|f| f.stalls > 0).collect();
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
        impact: x.traffic_share(&ids),
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

pub(super) fn link_pause(x: &Input, out: &mut Vec<Finding>) {
    let n = x.summary.frames.pause;
    if n == 0 {
        return;
    }
    out.push(Finding {
        wireshark: None,
        id: "link-pause",
        impact: share(n, x.summary.frames.total),
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
