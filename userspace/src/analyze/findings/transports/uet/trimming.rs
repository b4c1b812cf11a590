//! `uet-trimming`: switches trimmed UET requests — cut them short and
//! re-marked them — instead of dropping them: where (the taps that
//! recorded trimmed requests or the receivers' trimmed NACKs), how much,
//! which PDCs, and whether ECN and NSCC's window reacted (the counts:
//! `crate::transport::uet::paths`; see "UET: spraying and trimming" in
//! docs/analysis.md). A congestion signal, never loss. Worded in
//! `render/transports/uet/paths.rs`.

use crate::analyze::Severity;
use crate::analyze::flows::kept::EVIDENCE_K;
use crate::transport::uet::PdcKey;
use crate::transport::uet::paths::{Answers, PdcSignals, TapTrims};

use super::super::TransportEvidence;
use super::UetEvidence;
use crate::analyze::findings::input::{Input, share};
use crate::analyze::findings::{Diagnosis, Evidence};

/// PDC directions listed; the rest are counted.
pub const TRIMMED_PDCS_LISTED: usize = 5;

/// `uet-trimming`'s evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct UetTrimming {
    /// The taps that recorded a trim signal, in interface order.
    pub taps: Vec<(u16, TapTrims)>,
    /// The PDC directions with the most trim signals (trimmed requests
    /// and trimmed NACKs), at most [`TRIMMED_PDCS_LISTED`].
    pub pdcs: Vec<TrimmedPdc>,
    /// Directions with a trim signal not listed.
    pub other_pdcs: u64,
    /// Every direction with a trim signal, the most first, at most
    /// the evidence K (docs/analysis.md, "Retirement"): with the receiving
    /// direction's PDC id, the rows the finding names
    /// (`uet::pdc::name_rows`), which an analyzer of a shard names the
    /// same way as the whole run.
    pub named: Vec<(PdcKey, Option<u16>)>,
}

/// One PDC direction at one tap and what its trims drew.
#[derive(Clone, Debug, PartialEq)]
pub struct TrimmedPdc {
    pub key: PdcKey,
    pub dpdcid: Option<u16>,
    pub requests: u64,
    pub trimmed: u64,
    pub retransmissions: u64,
    pub ce: u64,
    /// The ACKs (M flag: the target echoed a CE mark; NSCC state) and
    /// trimmed NACKs of its requests.
    pub answers: Answers,
    pub first_trim_ns: Option<u64>,
    /// Mean PSNs in flight before and after the first trim signal.
    pub inflight_before: Option<f64>,
    pub inflight_after: Option<f64>,
}

impl TrimmedPdc {
    fn of(s: &PdcSignals) -> TrimmedPdc {
        TrimmedPdc {
            key: s.key,
            dpdcid: s.dpdcid,
            requests: s.requests.packets,
            trimmed: s.requests.trimmed,
            retransmissions: s.requests.retransmissions,
            ce: s.ce,
            answers: s.answers,
            first_trim_ns: s.first_trim_ns,
            inflight_before: s.inflight_before,
            inflight_after: s.inflight_after,
        }
    }

    /// NSCC's window closed after the first trim: fewer PSNs in flight.
    pub fn window_closed(&self) -> Option<bool> {
        Some(self.inflight_after? < self.inflight_before?)
    }
}

/// `uet-trimming`: any tap recorded a trimmed request or a trimmed NACK.
pub(crate) fn finding(x: &Input) -> Option<Diagnosis> {
    let taps: Vec<(u16, TapTrims)> = x
        .transports
        .uet_taps()
        .iter()
        .filter(|(_, t)| t.trimmed > 0 || t.trimmed_nacks > 0)
        .map(|(i, t)| (*i, *t))
        .collect();
    if taps.is_empty() {
        return None;
    }
    // The trimmed requests' share where the taps saw them; else, upstream
    // of the trims, the trimmed NACKs' share.
    let (signals, requests) = taps.iter().fold((0, 0), |(s, r), (_, t)| {
        (s + t.trimmed.max(t.trimmed_nacks), r + t.requests)
    });
    let mut pdcs: Vec<TrimmedPdc> = x
        .transports
        .uet_signals()
        .iter()
        .filter(|s| s.requests.trimmed > 0 || s.answers.trimmed_nacks > 0)
        .map(TrimmedPdc::of)
        .collect();
    pdcs.sort_by_key(|p| {
        let signals = p.trimmed + p.answers.trimmed_nacks;
        (std::cmp::Reverse(signals), p.key)
    });
    let named = pdcs
        .iter()
        .take(EVIDENCE_K)
        .map(|p| (p.key, p.dpdcid))
        .collect();
    let other_pdcs = pdcs.len().saturating_sub(TRIMMED_PDCS_LISTED) as u64;
    pdcs.truncate(TRIMMED_PDCS_LISTED);
    Some(Diagnosis {
        severity: Severity::Warning,
        impact: share(signals, requests).min(1.0),
        flows: Vec::new(),
        evidence: Evidence::Transport(TransportEvidence::Uet(UetEvidence::Trimming(UetTrimming {
            taps,
            pdcs,
            other_pdcs,
            named,
        }))),
    })
}
