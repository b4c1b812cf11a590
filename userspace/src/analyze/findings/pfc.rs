//! PFC findings: link speed, storms, the congestion tree, pressure, victims,
//! 802.3x pauses (`docs/analysis.md`, *PFC*, *Victims*, *Congestion tree*).

use crate::analyze::{Flow, PfcInterval, PfcSummary, Severity};

use super::input::{FlowRef, Input, share};
use super::{Diagnosis, Evidence};

/// Victims shown by name in `pfc-victims`' words (all are in its flows).
const SHOWN_VICTIMS: usize = 5;

/// `link-speed`'s evidence: flows on `tap` faster than its assumed speed.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkSpeed {
    /// The tap's name, as in the tables' `iface` column.
    pub tap: String,
    pub link_speed_bps: u64,
    pub flows: u64,
    /// The fastest flow and its rate.
    pub top: u32,
    pub top_gbps: f64,
}

/// `pfc-storm`'s evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct Storms {
    pub storms: u64,
    pub storm_ns: u64,
    pub longest_ns: u64,
    /// Each port and priority with storms.
    pub ports: Vec<StormPort>,
}

/// A port and priority with storms, and its longest pause.
#[derive(Clone, Debug, PartialEq)]
pub struct StormPort {
    pub iface: u16,
    pub priority: u8,
    pub storms: u64,
    pub fraction: f64,
    pub longest: Option<PfcInterval>,
}

/// `pfc-pressure`'s evidence: every paused port and priority, and the worst.
#[derive(Clone, Debug, PartialEq)]
pub struct Pressure {
    pub ports: Vec<PfcSummary>,
    pub worst: PfcSummary,
}

/// `pfc-victims`' evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct Victims {
    pub flows: u64,
    /// The longest paused time of a stalled flow.
    pub most_ns: u64,
    /// The most paused ones.
    pub shown: Vec<Victim>,
}

/// A flow that stalled while its priority was paused.
#[derive(Clone, Debug, PartialEq)]
pub struct Victim {
    pub flow: FlowRef,
    pub priority: u8,
    pub stalls: u64,
    pub paused_ns: u64,
}

/// A flow faster than its tap's link speed: the speed is wrong, and with it
/// every pause duration.
pub(super) fn link_speed(x: &Input, out: &mut Vec<Diagnosis>) {
    for t in &x.summary.taps {
        let limit = t.link_speed_bps as f64 / 1e9;
        // (flow, its gbps)
        let fast: Vec<(&Flow, f64)> = x
            .flows_if(x.census.faster_than(t.iface, limit))
            .filter(|f| f.iface == t.iface && f.packets() >= 2)
            .map(|f| (f, f.rate_gbps(f.bytes())))
            .filter(|&(_, gbps)| gbps > limit)
            .collect();
        let Some(&(top, top_gbps)) = fast.iter().max_by(|a, b| a.1.total_cmp(&b.1)) else {
            continue;
        };
        let ids: Vec<u32> = fast.iter().map(|(f, _)| f.id).collect();
        out.push(Diagnosis {
            severity: Severity::Warning,
            impact: x.traffic_share(&ids),
            flows: ids,
            evidence: Evidence::LinkSpeed(LinkSpeed {
                tap: t.iface_name.clone(),
                link_speed_bps: t.link_speed_bps,
                flows: fast.len() as u64,
                top: top.id,
                top_gbps,
            }),
        });
    }
}

pub(super) fn storms(x: &Input) -> Option<Diagnosis> {
    let stormy: Vec<_> = x.summary.pfc.iter().filter(|p| p.storms > 0).collect();
    if stormy.is_empty() {
        return None;
    }
    let mut ports = Vec::new();
    let mut flows = Vec::new();
    let mut longest_ns = 0;
    for p in &stormy {
        let longest = x
            .pfc
            .iter()
            .filter(|i| i.iface == p.iface && i.priority == p.priority)
            .max_by_key(|i| i.end_ns - i.start_ns);
        if let Some(l) = longest {
            longest_ns = longest_ns.max(l.end_ns - l.start_ns);
        }
        ports.push(StormPort {
            iface: p.iface,
            priority: p.priority,
            storms: p.storms,
            fraction: p.fraction,
            longest: longest.cloned(),
        });
        flows.extend(x.flows_on(p.iface, p.priority));
    }
    flows.sort_unstable();
    flows.dedup();
    Some(Diagnosis {
        severity: Severity::Critical,
        impact: stormy
            .iter()
            .map(|p| p.fraction)
            .fold(0.0, f64::max)
            .min(1.0),
        flows,
        evidence: Evidence::Storms(Storms {
            storms: stormy.iter().map(|p| p.storms).sum(),
            storm_ns: x.summary.storm_ns,
            longest_ns,
            ports,
        }),
    })
}

pub(super) fn pressure(x: &Input) -> Option<Diagnosis> {
    let paused: Vec<_> = x.summary.pfc.iter().filter(|p| p.paused_ns > 0).collect();
    let worst = *paused
        .iter()
        .max_by(|a, b| a.fraction.total_cmp(&b.fraction))?;
    let mut flows = Vec::new();
    for p in &paused {
        flows.extend(x.flows_on(p.iface, p.priority));
    }
    flows.sort_unstable();
    flows.dedup();
    Some(Diagnosis {
        severity: if worst.fraction >= 0.10 {
            Severity::Critical
        } else if worst.fraction >= 0.01 {
            Severity::Warning
        } else {
            Severity::Info
        },
        impact: worst.fraction.min(1.0),
        flows,
        evidence: Evidence::Pressure(Pressure {
            ports: paused.iter().map(|p| (*p).clone()).collect(),
            worst: worst.clone(),
        }),
    })
}

pub(super) fn victims(x: &Input) -> Option<Diagnosis> {
    let mut flows: Vec<&Flow> = x
        .flows_if(x.census.rare > 0)
        .filter(|f| f.rare().stalls > 0)
        .collect();
    if flows.is_empty() {
        return None;
    }
    flows.sort_by_key(|f| std::cmp::Reverse(f.rare().stall_paused_ns));
    let mut ids: Vec<u32> = flows.iter().map(|f| f.id).collect();
    ids.sort_unstable();
    Some(Diagnosis {
        severity: Severity::Warning,
        impact: x.traffic_share(&ids),
        flows: ids,
        evidence: Evidence::Victims(Victims {
            flows: flows.len() as u64,
            most_ns: flows.first().map_or(0, |f| f.rare().stall_paused_ns),
            shown: flows
                .iter()
                .take(SHOWN_VICTIMS)
                .map(|f| Victim {
                    flow: FlowRef::from(*f),
                    priority: f.priority().unwrap_or(0),
                    stalls: f.rare().stalls,
                    paused_ns: f.rare().stall_paused_ns,
                })
                .collect(),
        }),
    })
}

/// `link-pause`: 802.3x PAUSE frames (their count is the evidence).
pub(super) fn link_pause(x: &Input) -> Option<Diagnosis> {
    let n = x.summary.frames.pause;
    (n > 0).then(|| Diagnosis {
        severity: Severity::Warning,
        impact: share(n, x.summary.frames.total),
        flows: Vec::new(),
        evidence: Evidence::LinkPause { frames: n },
    })
}
