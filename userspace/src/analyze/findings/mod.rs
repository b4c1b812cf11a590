//! The diagnosis: findings from the flows, the pause intervals and the totals.
//!
//! Severities: `critical` (the fabric is losing throughput to it now),
//! `warning` (it costs throughput or will), `info` (worth knowing).
//!
//! Here the collector: the order the findings are built in and their
//! ranking. Below it, in this folder, `input`: the `Input` every finding
//! reads and the helpers they share (impact as a share);
//! then the findings themselves, one file per family, each using `input`
//! and the analyzer's lower layers, never another finding file nor this
//! collector: retransmissions (`retrans`), the capture, PFC, ECN,
//! `livelock` (and retry exhaustion), `unanswered`, `mtu`, `ecmp`, `qos`,
//! `cnp_overload`, `dcqcn`, `hops` (hop loss and queueing), `nics` (slow
//! NIC reactions), `episodes` (congestion episodes); and the transports'
//! beside RoCE, each in its module under `transports` (the registry: their
//! evidence is one arm here, [`Evidence::Transport`]). Each computes a
//! [`Diagnosis`] holding its [`Evidence`] (no words: `crate::render::findings`
//! words it, the transports' through `crate::render::transports`). Their definitions:
//! `docs/analysis.md`, *Findings*; their text and `params`: `docs/report.md`.

mod capture;
mod cnp_overload;
mod dcqcn;
pub(super) mod ecmp;
mod ecn;
mod episodes;
mod hops;
pub(super) mod input;
mod livelock;
mod mtu;
mod nics;
mod pfc;
mod qos;
pub mod queues;
mod retrans;
pub mod transports;
mod unanswered;

use capture::{capture, corruption, reordering, trimming};
use ecn::ce_cnp;
use pfc::{link_pause, link_speed, pressure, storms, victims};
use retrans::{ghost, real_loss, rnr};

use super::{Finding, Severity};

pub(crate) use crate::analyze::ecmp::{BUSY_FACTOR, ELEPHANT_SHARE, IDLE_FACTOR, LOADED_SHARE};
pub use capture::{CaptureLoss, Corrupted, MirrorCopies, Reordering, Sniffer, Trimmed};
pub(crate) use cnp_overload::{CNP_INTERVAL_NS, HELD_DOWN, NOT_FULL};
pub use cnp_overload::{CnpOverload, Destination, HeldDown};
pub use dcqcn::{Dcqcn, Deaf, Working};
pub use ecmp::{EcmpImbalance, Elephant, MemberUse, PairEntropy};
pub use ecn::{CeWithoutCnp, CnpWithoutCe, SilentCe};
pub use episodes::{CongestionTree, NodeAt, Spread, TapVictims, VICTIMS_LISTED};
pub use hops::{HopConn, HopDelay, HopLoss, HopQueueing, Vanished};
pub use input::FlowRef;
pub(crate) use input::Input;
pub use livelock::{Dead, Stuck};
pub use mtu::{Mtu, SmallMtu, TooBig};
pub use nics::SlowNic;
pub use pfc::{LinkSpeed, Pressure, StormPort, Storms, Victim, Victims};
pub use qos::{QosMismatch, Remarked, Unprotected};
pub use retrans::{Ghost, GhostRewind, MostLoss, RealLoss, Rnr};
pub use transports::TransportEvidence;
pub use unanswered::{SilentFlow, Unanswered};

/// A finding as the analyzer computes it: how bad it is, how much of the
/// capture it concerns, its flows and its evidence. `crate::render` words
/// it (title, detail, advice, `params`: docs/report.md).
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnosis {
    pub severity: Severity,
    /// In [0, 1], defined per finding (docs/analysis.md, "Findings").
    pub impact: f64,
    pub flows: Vec<u32>,
    pub evidence: Evidence,
}

/// What a finding found, one variant per finding id.
#[derive(Clone, Debug, PartialEq)]
pub enum Evidence {
    /// `unanswered-flows`.
    Unanswered(Unanswered),
    /// `mtu-mismatch`.
    Mtu(Mtu),
    /// `retransmission-livelock`: the flows, the most rewinds first.
    Livelock(Vec<Stuck>),
    /// `retry-exhausted`: the flows, the first to fall silent first.
    RetryExhausted(Vec<Dead>),
    /// `ghost-retransmissions`.
    Ghost(Box<Ghost>),
    /// `real-loss`.
    RealLoss(RealLoss),
    /// `receiver-not-ready`.
    Rnr(Rnr),
    /// `ce-without-cnp`.
    CeWithoutCnp(CeWithoutCnp),
    /// `cnp-without-ce`.
    CnpWithoutCe(CnpWithoutCe),
    /// `link-speed`, one per tap.
    LinkSpeed(LinkSpeed),
    /// `pfc-storm`.
    Storms(Storms),
    /// `pfc-pressure`.
    Pressure(Pressure),
    /// `pfc-victims`.
    Victims(Victims),
    /// `link-pause`: 802.3x PAUSE frames seen.
    LinkPause { frames: u64 },
    /// `slow-nic-reaction`, one per NIC, tap and latency.
    SlowNic(SlowNic),
    /// `qos-mismatch`.
    Qos(QosMismatch),
    /// `dcqcn-reaction`.
    Dcqcn(Dcqcn),
    /// `capture-loss`.
    CaptureLoss(CaptureLoss),
    /// `mirror-duplicates`.
    MirrorCopies(MirrorCopies),
    /// `reordering`.
    Reordering(Reordering),
    /// `sniffer-capture`, one per tap.
    Sniffer(Sniffer),
    /// `corrupted-frames`, one per tap.
    Corrupted(Corrupted),
    /// `trimming`, one per tap.
    Trimmed(Trimmed),
    /// `cnp-overload`.
    CnpOverload(CnpOverload),
    /// `hop-loss`, one per pair of adjacent taps.
    HopLoss(HopLoss),
    /// `hop-queueing`.
    HopQueueing(HopQueueing),
    /// `ecmp-imbalance`, one per group.
    Ecmp(EcmpImbalance),
    /// `pfc-congestion-tree`, one per root.
    CongestionTree(CongestionTree),
    /// `congested-queue`, one per switch queue.
    CongestedQueue(Box<queues::CongestedQueue>),
    /// A transport's own findings beside RoCE's (`transports`).
    Transport(TransportEvidence),
}

impl Evidence {
    /// The finding's `id` (docs/report.md).
    pub fn id(&self) -> &'static str {
        match self {
            Evidence::Unanswered(_) => "unanswered-flows",
            Evidence::Mtu(_) => "mtu-mismatch",
            Evidence::Livelock(_) => "retransmission-livelock",
            Evidence::RetryExhausted(_) => "retry-exhausted",
            Evidence::Ghost(_) => "ghost-retransmissions",
            Evidence::RealLoss(_) => "real-loss",
            Evidence::Rnr(_) => "receiver-not-ready",
            Evidence::CeWithoutCnp(_) => "ce-without-cnp",
            Evidence::CnpWithoutCe(_) => "cnp-without-ce",
            Evidence::LinkSpeed(_) => "link-speed",
            Evidence::Storms(_) => "pfc-storm",
            Evidence::Pressure(_) => "pfc-pressure",
            Evidence::Victims(_) => "pfc-victims",
            Evidence::LinkPause { .. } => "link-pause",
            Evidence::SlowNic(_) => "slow-nic-reaction",
            Evidence::Qos(_) => "qos-mismatch",
            Evidence::Dcqcn(_) => "dcqcn-reaction",
            Evidence::CaptureLoss(_) => "capture-loss",
            Evidence::MirrorCopies(_) => "mirror-duplicates",
            Evidence::Reordering(_) => "reordering",
            Evidence::Sniffer(_) => "sniffer-capture",
            Evidence::Corrupted(_) => "corrupted-frames",
            Evidence::Trimmed(_) => "trimming",
            Evidence::CnpOverload(_) => "cnp-overload",
            Evidence::HopLoss(_) => "hop-loss",
            Evidence::HopQueueing(_) => "hop-queueing",
            Evidence::Ecmp(_) => "ecmp-imbalance",
            Evidence::CongestionTree(_) => "pfc-congestion-tree",
            Evidence::CongestedQueue(_) => "congested-queue",
            Evidence::Transport(e) => e.id(),
        }
    }
}

pub(crate) fn diagnose(x: &Input) -> Vec<Diagnosis> {
    let mut out = Vec::new();
    capture(x, &mut out);
    out.extend(ghost(x));
    out.extend(livelock::retry_exhausted(x));
    out.extend(livelock::finding(x));
    out.extend(unanswered::finding(x));
    out.extend(mtu::finding(x));
    ecmp::finding(x, x.ecmp, &mut out);
    // A sharded run's: each analyzer's groups' bins (not merged).
    for p in x.others {
        ecmp::finding(x, p.ecmp, &mut out);
    }
    out.extend(qos::finding(x, x.qos));
    out.extend(cnp_overload::finding(x));
    out.extend(dcqcn::finding(x));
    hops::finding(x, &mut out);
    nics::finding(x, &mut out);
    transports::finding(x, &mut out);
    out.extend(real_loss(x));
    out.extend(reordering(x));
    corruption(x, &mut out);
    trimming(x, &mut out);
    link_speed(x, &mut out);
    out.extend(rnr(x));
    out.extend(storms(x));
    episodes::finding(x, &mut out);
    out.extend(pressure(x));
    out.extend(victims(x));
    ce_cnp(x, &mut out);
    out.extend(link_pause(x));
    rank_by(&mut out, |d| (d.severity, d.impact));
    out
}

/// Critical, warning, info; within a severity the larger impact first, and
/// on equal impact the order they were made in (docs/analysis.md,
/// "Findings").
pub(crate) fn rank_findings(findings: &mut [Finding]) {
    rank_by(findings, |f| (f.severity, f.impact));
}

/// `out` ranked again, after findings joined late (`congested-queue`).
pub(crate) fn rank_diagnoses(out: &mut [Diagnosis]) {
    rank_by(out, |d| (d.severity, d.impact));
}

/// Ranks by severity, then impact (larger first); equals keep their order.
pub(crate) fn rank_by<T>(items: &mut [T], key: impl Fn(&T) -> (Severity, f64)) {
    items.sort_by(|a, b| {
        let ((severity_a, impact_a), (severity_b, impact_b)) = (key(a), key(b));
        severity_a
            .cmp(&severity_b)
            .then(impact_b.total_cmp(&impact_a))
    });
}
