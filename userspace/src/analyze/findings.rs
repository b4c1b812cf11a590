//! The diagnosis: findings from the flows, the pause intervals and the totals.
//!
//! Severities: `critical` (the fabric is losing throughput to it now),
//! `warning` (it costs throughput or will), `info` (worth knowing).
//!
//! Here the input every finding reads, their `params`, the order they are
//! built in and their ranking; the findings themselves, one file per family,
//! in `findings/` (retransmissions, the capture, PFC, ECN), and in
//! `livelock`, `unanswered`, `mtu`, `ecmp` and `qos`. Their definitions: `docs/analysis.md`,
//! *Findings*; their text and `params`: `docs/report.md`.

mod capture;
mod ecn;
mod pfc;
mod retrans;

use std::collections::BTreeMap;

use serde_json::Value;

use super::rto::ACK_TIMEOUT_UNIT_NS;

use capture::{capture, corruption, reordering};
use ecn::ce_cnp;
use pfc::{link_pause, link_speed, pressure, storms, victims};
use retrans::{ghost, real_loss, rnr};

use super::{
    Finding, Flow, FlowRow, PfcInterval, Summary, fmt_count, fmt_duration, fmt_ended_by, fmt_ip,
    fmt_mac, fmt_offset, iface_name,
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
    /// The ECMP groups' load.
    pub ecmp: &'a super::ecmp::EcmpLoad,
    /// The DSCP and PCP pairs seen per tap.
    pub qos: &'a super::qos::Marks,
    /// `hops.parquet`'s rows (cross-tap matching).
    pub hops: &'a [super::hops::HopRow],
}

/// Smallest local ACK timeout exponent T whose timeout exceeds `ns`.
pub(crate) fn timeout_exponent(ns: u64) -> u32 {
    (0..31)
        .find(|&t| ACK_TIMEOUT_UNIT_NS << t > ns)
        .unwrap_or(31)
}

impl Input<'_> {
    pub(crate) fn iface(&self, i: u16) -> String {
        iface_name(&self.summary.ifaces, i)
    }

    /// The impact of a finding about `flows` (ids): the share of the
    /// capture's request packets they carry (docs/analysis.md, "Findings").
    pub(crate) fn traffic_share(&self, flows: &[u32]) -> f64 {
        // A flow's id is its index.
        let of: u64 = flows
            .iter()
            .filter_map(|&id| self.flows.get(id as usize))
            .map(|f| f.data_packets)
            .sum();
        share(of, self.summary.totals.data_packets)
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
    super::ecmp::finding(x, x.ecmp, &mut out);
    super::qos::finding(x, x.qos, &mut out);
    super::cnp_overload::finding(x, &mut out);
    super::dcqcn::finding(x, &mut out);
    super::hop_findings::finding(x, &mut out);
    real_loss(x, &mut out);
    reordering(x, &mut out);
    corruption(x, &mut out);
    link_speed(x, &mut out);
    rnr(x, &mut out);
    storms(x, &mut out);
    super::episodes::finding(x, &mut out);
    pressure(x, &mut out);
    victims(x, &mut out);
    ce_cnp(x, &mut out);
    link_pause(x, &mut out);
    rank_findings(&mut out);
    out
}

/// Critical, warning, info; within a severity the larger impact first, and
/// on equal impact the order they were made in (docs/analysis.md,
/// "Findings").
pub(crate) fn rank_findings(findings: &mut [Finding]) {
    let rank = |s: &str| match s {
        "critical" => 0,
        "warning" => 1,
        _ => 2,
    };
    findings.sort_by(|a, b| {
        rank(a.severity)
            .cmp(&rank(b.severity))
            .then(b.impact.total_cmp(&a.impact))
    });
}

/// A share in [0, 1]: `part` of `whole`, 0 of nothing.
pub(crate) fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 / whole as f64).min(1.0)
    }
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
