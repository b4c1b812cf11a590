//! The diagnosis: findings from the flows, the pause intervals and the totals.
//!
//! Severities: `critical` (the fabric is losing throughput to it now),
//! `warning` (it costs throughput or will), `info` (worth knowing).
//!
//! Here the collector: the order the findings are built in and their
//! ranking. Below it, in this folder, `input`: the `Input` every finding
//! reads and the helpers they share (their `params`, impact as a share);
//! then the findings themselves, one file per family, each using `input`
//! and the analyzer's lower layers, never another finding file nor this
//! collector: retransmissions (`retrans`), the capture, PFC, ECN,
//! `livelock` (and retry exhaustion), `unanswered`, `mtu`, `ecmp`, `qos`,
//! `cnp_overload`, `dcqcn`, `hops` (hop loss and queueing), `nics` (slow
//! NIC reactions), `episodes` (congestion
//! episodes). Their definitions: `docs/analysis.md`, *Findings*; their text
//! and `params`: `docs/report.md`.

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
mod retrans;
mod unanswered;

use capture::{capture, corruption, reordering};
use ecn::ce_cnp;
use pfc::{link_pause, link_speed, pressure, storms, victims};
use retrans::{ghost, real_loss, rnr};

use super::Finding;

pub(crate) use input::Input;

pub(crate) fn diagnose(x: &Input) -> Vec<Finding> {
    let mut out = Vec::new();
    capture(x, &mut out);
    ghost(x, &mut out);
    livelock::retry_exhausted(x, &mut out);
    livelock::finding(x, &mut out);
    unanswered::finding(x, &mut out);
    mtu::finding(x, &mut out);
    ecmp::finding(x, x.ecmp, &mut out);
    qos::finding(x, x.qos, &mut out);
    cnp_overload::finding(x, &mut out);
    dcqcn::finding(x, &mut out);
    hops::finding(x, &mut out);
    nics::finding(x, &mut out);
    real_loss(x, &mut out);
    reordering(x, &mut out);
    corruption(x, &mut out);
    link_speed(x, &mut out);
    rnr(x, &mut out);
    storms(x, &mut out);
    episodes::finding(x, &mut out);
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
    findings.sort_by(|a, b| {
        a.severity
            .cmp(&b.severity)
            .then(b.impact.total_cmp(&a.impact))
    });
}
