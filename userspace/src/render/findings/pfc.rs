//! The PFC findings in words: `link-speed`, `pfc-storm`, `pfc-pressure`,
//! `pfc-victims`, `link-pause`.

use serde_json::json;

use crate::analyze::findings::{LinkSpeed, Pressure, Storms, Victims};
use crate::render::{fmt_count, fmt_duration, fmt_gbps, fmt_pct as pct, fmt_pfc};

use super::{Names, Words, params};

pub(super) fn link_speed(e: &LinkSpeed) -> Words {
    let limit = e.link_speed_bps as f64 / 1e9;
    Words {
        title: format!(
            "{}: a flow ran at {}, above the {} link speed assumed",
            e.tap,
            fmt_gbps(e.top_gbps),
            fmt_gbps(limit)
        ),
        detail: format!(
            "{} on {} ran faster than {} (flow {} at {}): the link is faster than assumed, so every PFC pause duration computed from its quanta is too long by the same factor.",
            fmt_count(e.flows, "flow"),
            e.tap,
            fmt_gbps(limit),
            e.top,
            fmt_gbps(e.top_gbps)
        ),
        recommendation: format!(
            "Give the tap's real speed: --link-speed {}=400G (or the port's speed).",
            e.tap
        ),
        params: params([
            ("assumed_link_speed_bps", json!(e.link_speed_bps)),
            ("max_flow_gbps", json!(e.top_gbps)),
        ]),
    }
}

pub(super) fn storms(e: &Storms, x: &Names) -> Words {
    let parts: Vec<String> = e
        .ports
        .iter()
        .map(|p| {
            let mut s = format!(
                "{} priority {}: {}, paused {} of the capture",
                x.iface(p.iface),
                p.priority,
                fmt_count(p.storms, "storm"),
                pct(p.fraction)
            );
            if let Some(l) = &p.longest {
                s.push_str(&format!("; longest {}", x.pause_text(l)));
            }
            s + "."
        })
        .collect();
    Words {
        title: format!(
            "{} (a continuous pause over {}), the longest {}",
            fmt_count(e.storms, "PFC pause storm"),
            fmt_duration(e.storm_ns),
            fmt_duration(e.longest_ns)
        ),
        detail: parts.join("\n"),
        recommendation: "A priority paused this long is stuck (a receiver not draining, a PFC deadlock or a faulty NIC sending pauses): find the port behind the source MAC, enable the PFC watchdog to break storms, and check for cyclic buffer dependencies.".into(),
        params: params([
            ("storms", json!(e.storms)),
            ("storm_threshold_ns", json!(e.storm_ns)),
            ("longest_pause_ns", json!(e.longest_ns)),
        ]),
    }
}

pub(super) fn pressure(e: &Pressure, x: &Names) -> Words {
    let parts: Vec<String> = e
        .ports
        .iter()
        .map(|p| format!("{}.", fmt_pfc(&x.iface(p.iface), p)))
        .collect();
    let worst = &e.worst;
    Words {
        title: format!(
            "PFC paused {} priority {} {} of the capture ({})",
            x.iface(worst.iface),
            worst.priority,
            pct(worst.fraction),
            fmt_duration(worst.paused_ns)
        ),
        detail: parts.join("\n"),
        recommendation: "Let ECN act before PFC: set the ECN marking thresholds (WRED min/max) well below the PFC XOFF threshold so DCQCN slows senders before queues pause the link, and check the PFC headroom. A paused priority freezes every flow that shares it.".into(),
        params: params([
            ("max_paused_fraction", json!(worst.fraction)),
            ("max_paused_ns", json!(worst.paused_ns)),
            ("iface", json!(x.iface(worst.iface))),
            ("priority", json!(worst.priority)),
        ]),
    }
}

pub(super) fn victims(e: &Victims, x: &Names) -> Words {
    let parts: Vec<String> = e
        .shown
        .iter()
        .map(|v| {
            format!(
                "{} priority {}: {}, {} paused while stalled.",
                x.describe(&v.flow),
                v.priority,
                fmt_count(v.stalls, "stall"),
                fmt_duration(v.paused_ns)
            )
        })
        .collect();
    Words {
        title: format!(
            "{} stalled while {} priority was paused, up to {} each",
            fmt_count(e.flows, "flow"),
            if e.flows == 1 { "its" } else { "their" },
            fmt_duration(e.most_ns)
        ),
        detail: parts.join("\n"),
        recommendation: "These flows were frozen by pauses (head-of-line blocking, a congestion tree): fix the congested port that sends the pauses, not the victims — ECN-mark earlier, spread elephant flows (ECMP entropy), or move bulk traffic to another priority.".into(),
        params: params([
            ("victim_flows", json!(e.flows)),
            ("max_stall_paused_ns", json!(e.most_ns)),
        ]),
    }
}

pub(super) fn link_pause(frames: u64) -> Words {
    Words {
        title: format!(
            "{} (link-level, not PFC)",
            fmt_count(frames, "802.3x PAUSE frame")
        ),
        detail: format!(
            "{}: a global pause stops every priority of the link, lossy traffic included; they are not counted as PFC.",
            fmt_count(frames, "802.3x PAUSE frame")
        ),
        recommendation: "Disable global flow control on ports that run PFC (ethtool -A <iface> rx off tx off; the switch's flowcontrol setting).".into(),
        params: params([("pause_frames", json!(frames))]),
    }
}
