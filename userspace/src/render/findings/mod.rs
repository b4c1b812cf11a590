//! A diagnosis in words: its title, detail, recommendation and `params`
//! (docs/report.md lists them per finding), from its evidence and the
//! names the summary gives (interfaces, the capture's start). One file per
//! finding family, as in `analyze/findings/`; the transports' own findings
//! are worded where their other lines are (`render::transports`).

mod capture;
mod cnp_overload;
mod dcqcn;
mod ecmp;
mod ecn;
mod episodes;
mod hops;
mod livelock;
mod mtu;
mod nics;
mod pfc;
mod qos;
mod queues;
pub use queues::queue_name;
mod retrans;
mod unanswered;

use crate::analyze::{Diagnosis, Evidence, Finding, Summary};

use super::transports;
use super::words::{Names, Words, params};
#[cfg(test)]
pub(crate) use qos::marks_words;

/// The finding `summary.json` and the reports show for `d`; `s`: the
/// summary it belongs to.
pub fn word(d: &Diagnosis, s: &Summary) -> Finding {
    let names = Names(s);
    let w = match &d.evidence {
        Evidence::Unanswered(e) => unanswered::words(e, &names),
        Evidence::Mtu(e) => mtu::words(e, &names),
        Evidence::Livelock(e) => livelock::livelock(e, &names),
        Evidence::RetryExhausted(e) => livelock::retry_exhausted(e, &names),
        Evidence::Ghost(e) => retrans::ghost(e, &names),
        Evidence::RealLoss(e) => retrans::real_loss(e, &names),
        Evidence::Rnr(e) => retrans::rnr(e),
        Evidence::CeWithoutCnp(e) => ecn::ce_without_cnp(e),
        Evidence::CnpWithoutCe(e) => ecn::cnp_without_ce(e),
        Evidence::LinkSpeed(e) => pfc::link_speed(e),
        Evidence::Storms(e) => pfc::storms(e, &names),
        Evidence::Pressure(e) => pfc::pressure(e, &names),
        Evidence::Victims(e) => pfc::victims(e, &names),
        Evidence::LinkPause { frames } => pfc::link_pause(*frames),
        Evidence::SlowNic(e) => nics::slow_nic(e, &names),
        Evidence::Qos(e) => qos::qos_mismatch(e, &names),
        Evidence::Dcqcn(e) => dcqcn::dcqcn(e, &names),
        Evidence::CaptureLoss(e) => capture::capture_loss(e, &names),
        Evidence::MirrorCopies(e) => capture::mirror_copies(e, &names),
        Evidence::Reordering(e) => capture::reordering(e),
        Evidence::Sniffer(e) => capture::sniffer(e, &names),
        Evidence::Corrupted(e) => capture::corrupted(e, &names),
        Evidence::Trimmed(e) => capture::trimmed(e, &names),
        Evidence::CnpOverload(e) => cnp_overload::cnp_overload(e, &names),
        Evidence::HopLoss(e) => hops::hop_loss(e, &names),
        Evidence::HopQueueing(e) => hops::hop_queueing(e, &names),
        Evidence::Ecmp(e) => ecmp::ecmp_imbalance(e, &names),
        Evidence::CongestionTree(e) => {
            let mut w =
                episodes::congestion_tree(e, &names).unwrap_or_else(|| episodes::trees_missing(e));
            queues::cite(&mut w, e.telemetry.as_ref());
            w
        }
        Evidence::CongestedQueue(e) => queues::congested_queue(e, &names),
        Evidence::Transport(e) => transports::words(e, &names),
    };
    Finding {
        id: d.evidence.id(),
        severity: d.severity,
        impact: d.impact,
        title: w.title,
        detail: w.detail,
        recommendation: w.recommendation,
        flows: d.flows.clone(),
        params: w.params,
        wireshark: None,
    }
}
