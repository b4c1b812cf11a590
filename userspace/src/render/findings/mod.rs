//! A diagnosis in words: its title, detail, recommendation and `params`
//! (docs/report.md lists them per finding), from its evidence and the
//! names the summary gives (interfaces, the capture's start). One file per
//! finding family, as in `analyze/findings/`.

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
mod uet;
mod unanswered;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::analyze::findings::FlowRef;

use crate::analyze::{Diagnosis, Evidence, Finding, PfcInterval, Summary, iface_name};
use crate::render::{fmt_count, fmt_duration, fmt_ended_by, fmt_flow, fmt_mac, fmt_offset};
#[cfg(test)]
pub(crate) use qos::marks_words;

/// What a finding says.
struct Words {
    title: String,
    detail: String,
    recommendation: String,
    params: BTreeMap<&'static str, Value>,
}

/// A finding's `params`.
fn params<const N: usize>(items: [(&'static str, Value); N]) -> BTreeMap<&'static str, Value> {
    items.into_iter().collect()
}

/// The names a finding's words use.
struct Names<'a>(&'a Summary);

impl Names<'_> {
    fn iface(&self, i: u16) -> String {
        iface_name(&self.0.ifaces, i)
    }

    /// A tap by the name its summary gives it.
    fn tap(&self, iface: u16) -> String {
        self.0
            .taps
            .iter()
            .find(|t| t.iface == iface)
            .map_or_else(|| self.iface(iface), |t| t.iface_name.clone())
    }

    /// `flow 3 (10.0.0.1 → 10.0.0.2 QP 17, leaf0)`.
    fn describe(&self, f: &FlowRef) -> String {
        fmt_flow(f.id, &f.src_ip, &f.dst_ip, f.dest_qp, &self.iface(f.iface))
    }

    /// A pause interval: `25.0 µs on leaf0 priority 3 by aa:… (from t+…,
    /// 2 frames, ended by an XON)`.
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

    /// A capture time as an offset from the capture's first frame.
    fn at(&self, ts_ns: u64) -> String {
        fmt_offset(ts_ns.saturating_sub(self.0.first_ts_ns.unwrap_or(ts_ns)))
    }
}

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
        Evidence::Uet(e) => uet::words(e, &names),
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
