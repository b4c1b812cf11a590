//! Retransmission findings: ghost retransmissions (with the NIC timeout
//! advice), real loss, RNR NAKs (`docs/analysis.md`, *Ghost retransmissions*,
//! *NIC retransmission timeout*, *Rewinds*, *NAKs*).

use crate::analyze::rto::{ACK_TIMEOUT_UNIT_NS, NicTimeout};
use crate::analyze::{Flow, PfcInterval, Severity, Trigger};

use super::input::{FlowRef, Input, timeout_exponent};
use super::{Diagnosis, Evidence};

/// `ghost-retransmissions`' evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct Ghost {
    pub flows: u64,
    /// Timeout rewinds with evidence of delay, and of them those the
    /// flow's priority was paused during.
    pub timeouts: u64,
    pub paused: u64,
    /// Resent packets already acknowledged, of all resent.
    pub spurious: u64,
    pub retrans: u64,
    /// The shortest and longest idle time before a timeout rewind.
    pub idle_min_ns: Option<u64>,
    pub idle_max_ns: u64,
    /// The longest pause that covered a ghost timeout rewind.
    pub longest: Option<PfcInterval>,
    /// The most telling rewind.
    pub worst: Option<GhostRewind>,
    /// What the timeout must exceed (the longest covering pause, else twice
    /// the longest wait), the exponent T that does, and its timeout.
    pub target_ns: u64,
    pub exponent: u32,
    pub timeout_ns: u64,
    /// The longest pause on these flows' priorities.
    pub pause_max_ns: Option<u64>,
    /// The senders' NIC timeouts, one per sender (the tap with the most
    /// samples).
    pub nics: Vec<NicTimeout>,
    /// The congested switch queue these flows crossed, when the switches'
    /// telemetry says (`congested-queue`; set when the run ends).
    pub telemetry: Option<super::queues::QueueCitation>,
}

/// One rewind of a ghost retransmission's flow.
#[derive(Clone, Debug, PartialEq)]
pub struct GhostRewind {
    pub flow: FlowRef,
    pub ts_ns: u64,
    pub psn: u32,
    pub depth: u32,
    pub idle_ns: u64,
    pub trigger: Trigger,
    /// Rewound PSNs already acknowledged.
    pub acked: u32,
    /// The flow's resent packets, and those already acknowledged.
    pub flow_retrans: u64,
    pub flow_spurious: u64,
    /// The priority paused during the idle time, for how long, and the
    /// pause that covered it when found.
    pub paused: Option<(u8, u64)>,
    pub cover: Option<PfcInterval>,
}

pub(super) fn ghost(x: &Input) -> Option<Diagnosis> {
    let flows: Vec<&Flow> = x
        .flows_if(x.census.rare > 0)
        .filter(|f| f.rewind().rewinds_timeout_ghost > 0 || f.sequence().spurious > 0)
        .collect();
    if flows.is_empty() {
        return None;
    }
    let timeouts: u64 = flows.iter().map(|f| f.rewind().rewinds_timeout_ghost).sum();
    let paused: u64 = flows
        .iter()
        .map(|f| f.rewind().timeout_rewinds_paused)
        .sum();
    let spurious: u64 = flows.iter().map(|f| f.sequence().spurious).sum();
    let retrans: u64 = flows.iter().map(|f| f.retrans()).sum();
    let idle_min = flows
        .iter()
        .filter(|f| f.rewind().rewinds_timeout > 0)
        .map(|f| f.rewind().timeout_idle_min_ns)
        .min();
    let idle_max = flows
        .iter()
        .map(|f| f.rewind().timeout_idle_max_ns)
        .max()
        .unwrap_or(0);
    let longest = x.longest_covering_pause();
    let worst = flows
        .iter()
        .filter_map(|f| Some((f, f.rewind().note?)))
        .max_by_key(|(_, n)| n.rank())
        .map(|(f, n)| {
            let cover = n.cover.filter(|_| n.paused_ns > 0);
            GhostRewind {
                flow: FlowRef::from(*f),
                ts_ns: n.ts,
                psn: n.psn,
                depth: n.depth,
                idle_ns: n.idle_ns,
                trigger: n.trigger,
                acked: n.acked,
                flow_retrans: f.retrans(),
                flow_spurious: f.sequence().spurious,
                paused: cover.map(|c| (c.priority, n.paused_ns)),
                cover: cover.and_then(|c| {
                    x.pfc
                        .iter()
                        .find(|p| {
                            p.iface == f.iface
                                && p.src_mac == c.src_mac
                                && p.priority == c.priority
                                && p.start_ns == c.start_ns
                        })
                        .cloned()
                }),
            }
        });
    let target = match longest {
        Some(p) => p.end_ns - p.start_ns,
        None => idle_max.saturating_mul(2).max(1),
    };
    let t = timeout_exponent(target);
    let pause_max = flows
        .iter()
        .flat_map(|f| {
            x.pfc
                .iter()
                .filter(move |p| p.iface == f.iface && Some(p.priority) == f.priority())
        })
        .map(|p| p.end_ns - p.start_ns)
        .max();
    let ids: Vec<u32> = flows.iter().map(|f| f.id).collect();
    // A sender seen at several taps: the tap with the most to say.
    let mut nics: Vec<&NicTimeout> = Vec::new();
    for n in x
        .summary
        .nic_timeouts
        .iter()
        .filter(|n| n.flows.iter().any(|id| ids.contains(id)))
    {
        match nics.iter_mut().find(|b| b.src_ip == n.src_ip) {
            Some(b) if (n.samples, n.bounded) > (b.samples, b.bounded) => *b = n,
            Some(_) => {}
            None => nics.push(n),
        }
    }
    Some(Diagnosis {
        severity: if paused > 0 || spurious > 0 {
            Severity::Critical
        } else {
            Severity::Warning
        },
        impact: x.traffic_share(&ids),
        flows: ids,
        evidence: Evidence::Ghost(Box::new(Ghost {
            flows: flows.len() as u64,
            timeouts,
            paused,
            spurious,
            retrans,
            idle_min_ns: idle_min,
            idle_max_ns: idle_max,
            longest: longest.cloned(),
            worst,
            target_ns: target,
            exponent: t,
            timeout_ns: ACK_TIMEOUT_UNIT_NS << t,
            pause_max_ns: pause_max,
            nics: nics.into_iter().cloned().collect(),
            telemetry: None,
        })),
    })
}

/// `real-loss`'s evidence: sums over its flows.
#[derive(Clone, Debug, PartialEq)]
pub struct RealLoss {
    pub flows: u64,
    pub naks: u64,
    pub nak_rewinds: u64,
    /// Missing PSNs a NAK named, and those first seen in a resend.
    pub nak_lost: u64,
    pub before_tap: u64,
    /// Timeout rewinds nothing shows were delays.
    pub timeouts: u64,
    /// The flow with the most loss.
    pub most: Option<MostLoss>,
}

/// The flow with the most loss.
#[derive(Clone, Debug, PartialEq)]
pub struct MostLoss {
    pub flow: FlowRef,
    pub nak_rewinds: u64,
    pub max_depth: u32,
    pub lost: u64,
}

/// `real-loss`: only what the capture shows was lost (NAKs, PSNs first seen
/// in a resend, timeouts nothing shows were delays). Unresolved PSNs are not
/// evidence: the summary's capture facts say them.
pub(super) fn real_loss(x: &Input) -> Option<Diagnosis> {
    // A NAK naming a frame a switch trimmed, and the rewind it caused, are
    // congestion, not loss (docs/analysis.md, "RoCE: trimmed frames").
    let nak_rewinds = |f: &Flow| {
        f.rewind()
            .rewinds_nak
            .saturating_sub(f.rewind().rewinds_trim)
    };
    let naks = |f: &Flow| f.nak().naks.saturating_sub(f.nak().trim_naks);
    let flows: Vec<&Flow> = x
        .flows_if(x.census.rare > 0)
        .filter(|f| {
            nak_rewinds(f) > 0
                || naks(f) > 0
                || f.sequence().gap_counts.lost() > 0
                || f.rewind().rewinds_timeout_unexplained > 0
        })
        .collect();
    if flows.is_empty() {
        return None;
    }
    let sum = |g: fn(&Flow) -> u64| -> u64 { flows.iter().map(|f| g(f)).sum() };
    let most = flows
        .iter()
        .max_by_key(|f| {
            (
                nak_rewinds(f)
                    + f.sequence().gap_counts.lost()
                    + f.rewind().rewinds_timeout_unexplained,
                f.rewind().max_depth,
            )
        })
        .map(|f| MostLoss {
            flow: FlowRef::from(*f),
            nak_rewinds: nak_rewinds(f),
            max_depth: f.rewind().max_depth,
            lost: f.sequence().gap_counts.lost(),
        });
    let ids: Vec<u32> = flows.iter().map(|f| f.id).collect();
    Some(Diagnosis {
        severity: Severity::Warning,
        impact: x.traffic_share(&ids),
        flows: ids,
        evidence: Evidence::RealLoss(RealLoss {
            flows: flows.len() as u64,
            naks: sum(naks),
            nak_rewinds: sum(nak_rewinds),
            nak_lost: sum(|f| f.sequence().gap_counts.nak_lost),
            before_tap: sum(|f| f.sequence().gap_counts.lost_before_tap),
            timeouts: sum(|f| f.rewind().rewinds_timeout_unexplained),
            most,
        }),
    })
}

/// `receiver-not-ready`'s evidence: RNR NAKs and the rewinds they caused,
/// over `flows` flows.
#[derive(Clone, Debug, PartialEq)]
pub struct Rnr {
    pub flows: u64,
    pub rnr_naks: u64,
    pub rnr_rewinds: u64,
}

pub(super) fn rnr(x: &Input) -> Option<Diagnosis> {
    let flows: Vec<&Flow> = x
        .flows_if(x.census.rare > 0)
        .filter(|f| f.nak().rnr_naks > 0 || f.rewind().rewinds_rnr > 0)
        .collect();
    if flows.is_empty() {
        return None;
    }
    let ids: Vec<u32> = flows.iter().map(|f| f.id).collect();
    Some(Diagnosis {
        severity: Severity::Warning,
        impact: x.traffic_share(&ids),
        flows: ids,
        evidence: Evidence::Rnr(Rnr {
            flows: flows.len() as u64,
            rnr_naks: flows.iter().map(|f| f.nak().rnr_naks).sum(),
            rnr_rewinds: flows.iter().map(|f| f.rewind().rewinds_rnr).sum(),
        }),
    })
}
