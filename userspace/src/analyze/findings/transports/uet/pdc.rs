//! UET's per-PDC findings (docs/analysis.md, "UET: PDCs"):
//! `uet-spurious-retransmissions` — RETX resends of PSNs the tap had
//! already seen acknowledged, with the resend waits (the retransmit
//! timeout the capture shows) against the ACK delays it saw — and
//! `uet-receiver-resources` — NACKs whose code says the receiver ran short
//! (NO_PKT_BUFFER, NO_PDC_AVAIL, PSN_OOR_WINDOW, the other "no resource"
//! codes). A TRIMMED NACK is neither: it is a congestion signal. Computed
//! from the PDC directions (`crate::transport::uet::Pdc`), never from a
//! QP's flow: the RoCE findings never see a PDC.

use std::collections::BTreeMap;

use crate::analyze::Severity;
use crate::transport::uet::pdc::NackCounts;
use crate::transport::uet::{Pdc, PdcKey};

use super::super::TransportEvidence;
use super::UetEvidence;
use crate::analyze::findings::input::share;
use crate::analyze::findings::{Diagnosis, Evidence};

/// PDC directions listed per finding; the rest are counted.
pub const LISTED: usize = 10;

/// One PDC direction named by a finding.
#[derive(Clone, Debug, PartialEq)]
pub struct PdcRef {
    pub id: u32,
    pub iface: u16,
    pub src_ip: [u8; 16],
    pub dst_ip: [u8; 16],
    pub spdcid: u16,
    pub dpdcid: Option<u16>,
}

impl From<&Pdc> for PdcRef {
    fn from(p: &Pdc) -> PdcRef {
        PdcRef {
            id: p.id,
            iface: p.key.iface,
            src_ip: p.key.src_ip,
            dst_ip: p.key.dst_ip,
            spdcid: p.key.spdcid,
            dpdcid: p.peer,
        }
    }
}

/// One PDC direction's spurious resends.
#[derive(Clone, Debug, PartialEq)]
pub struct SpuriousPdc {
    pub pdc: PdcRef,
    pub requests: u64,
    pub retransmissions: u64,
    pub spurious: u64,
    /// The shortest wait from a PSN's send to its timer resend (no NACK
    /// between): the retransmit timeout as the tap sees it.
    pub resend_wait_min_ns: Option<u64>,
    /// The longest time from a send to the first ACK covering it.
    pub ack_delay_max_ns: Option<u64>,
}

/// `uet-spurious-retransmissions`' evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct UetSpurious {
    /// The worst first (most spurious resends), at most [`LISTED`].
    pub pdcs: Vec<SpuriousPdc>,
    pub other_pdcs: usize,
    pub spurious: u64,
    pub retransmissions: u64,
    /// Over the PDCs with spurious resends.
    pub resend_wait_min_ns: Option<u64>,
    pub ack_delay_max_ns: Option<u64>,
    /// Of `retransmissions`, those a NACK naming their PSN came before.
    pub nack_resends: u64,
    /// Every NACK the run's receivers sent, by code: why the rest of the
    /// resends went out.
    pub nacks: NackCounts,
}

/// One PDC direction's NACKs for want of resources (the receiver's
/// direction: the one that sent them).
#[derive(Clone, Debug, PartialEq)]
pub struct ResourcePdc {
    pub pdc: PdcRef,
    pub nacks: NackCounts,
}

/// `uet-receiver-resources`' evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct UetResources {
    /// The most NACKs first, at most [`LISTED`].
    pub pdcs: Vec<ResourcePdc>,
    pub other_pdcs: usize,
    /// Summed over every PDC direction.
    pub nacks: NackCounts,
}

fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        _ => a.or(b),
    }
}

/// Both findings from `pdcs` (every PDC direction the run holds: live at
/// the end and the retired ones kept as evidence); `requests`, every UET
/// request the run saw, for the impact.
pub(crate) fn findings(pdcs: &[Pdc], requests: u64, out: &mut Vec<Diagnosis>) {
    out.extend(spurious(pdcs, requests));
    out.extend(resources(pdcs, requests));
}

/// `uet-trimming` and `uet-spray-imbalance` name PDC directions by their
/// keys (their counts are `uet_paths`', per tap): their `flows` become
/// the rows of those directions among `pdcs` (the directions the run
/// holds: live at the end, retired ones kept as evidence) — a key's own,
/// else the direction answering it, whose frames the same filter shows —
/// so they carry a Wireshark filter and `extract --finding` takes their
/// frames (docs/wireshark.md). A direction retired and not kept is named
/// by its key in the evidence alone.
pub(crate) fn name_rows(pdcs: &[Pdc], diagnoses: &mut [Diagnosis]) {
    let mut ids: BTreeMap<PdcKey, Vec<u32>> = BTreeMap::new();
    for p in pdcs {
        ids.entry(p.key).or_default().push(p.id);
    }
    for d in diagnoses {
        let keys: Vec<(PdcKey, Option<u16>)> = match &d.evidence {
            Evidence::Transport(TransportEvidence::Uet(UetEvidence::Trimming(t))) => {
                t.named.clone()
            }
            Evidence::Transport(TransportEvidence::Uet(UetEvidence::Spray(s))) => {
                s.named.iter().map(|&key| (key, None)).collect()
            }
            _ => continue,
        };
        for (key, dpdcid) in keys {
            let answering = dpdcid.map(|spdcid| PdcKey {
                src_ip: key.dst_ip,
                dst_ip: key.src_ip,
                spdcid,
                ..key
            });
            let named = ids
                .get(&key)
                .or_else(|| answering.and_then(|k| ids.get(&k)));
            for &id in named.into_iter().flatten() {
                if !d.flows.contains(&id) {
                    d.flows.push(id);
                }
            }
        }
    }
}

/// The PDC directions with a nonzero `count`, the most first (then by
/// flow id); `None` when there is none.
fn worst(pdcs: &[Pdc], count: impl Fn(&Pdc) -> u64) -> Option<Vec<&Pdc>> {
    let mut hit: Vec<&Pdc> = pdcs.iter().filter(|p| count(p) > 0).collect();
    hit.sort_by_key(|p| (std::cmp::Reverse(count(p)), p.id));
    (!hit.is_empty()).then_some(hit)
}

fn spurious(pdcs: &[Pdc], requests: u64) -> Option<Diagnosis> {
    let hit = worst(pdcs, |p| p.spurious)?;
    let wait = |p: &Pdc| (p.resend_wait.n > 0).then_some(p.resend_wait.min);
    let delay = |p: &Pdc| (p.ack_delay.n > 0).then_some(p.ack_delay.max);
    let spurious: u64 = hit.iter().map(|p| p.spurious).sum();
    let mut nacks = NackCounts::default();
    for p in pdcs {
        nacks.sum(&p.nacks_by);
    }
    let e = UetSpurious {
        pdcs: hit
            .iter()
            .take(LISTED)
            .map(|p| SpuriousPdc {
                pdc: PdcRef::from(*p),
                requests: p.requests,
                retransmissions: p.retransmissions,
                spurious: p.spurious,
                resend_wait_min_ns: wait(p),
                ack_delay_max_ns: delay(p),
            })
            .collect(),
        other_pdcs: hit.len().saturating_sub(LISTED),
        spurious,
        retransmissions: hit.iter().map(|p| p.retransmissions).sum(),
        resend_wait_min_ns: hit.iter().map(|p| wait(p)).fold(None, min_opt),
        ack_delay_max_ns: hit.iter().filter_map(|p| delay(p)).max(),
        nack_resends: hit
            .iter()
            .map(|p| p.retransmissions - p.timeout_resends)
            .sum(),
        nacks,
    };
    Some(Diagnosis {
        severity: Severity::Warning,
        impact: share(spurious, requests),
        flows: hit.iter().map(|p| p.id).collect(),
        evidence: Evidence::Transport(TransportEvidence::Uet(UetEvidence::Spurious(Box::new(e)))),
    })
}

fn resources(pdcs: &[Pdc], requests: u64) -> Option<Diagnosis> {
    let hit = worst(pdcs, |p| p.nacks_by.resources())?;
    let mut nacks = NackCounts::default();
    for p in &hit {
        nacks.sum(&p.nacks_by);
    }
    let e = UetResources {
        pdcs: hit
            .iter()
            .take(LISTED)
            .map(|p| ResourcePdc {
                pdc: PdcRef::from(*p),
                nacks: p.nacks_by,
            })
            .collect(),
        other_pdcs: hit.len().saturating_sub(LISTED),
        nacks,
    };
    Some(Diagnosis {
        severity: Severity::Warning,
        impact: share(nacks.resources(), requests),
        flows: hit.iter().map(|p| p.id).collect(),
        evidence: Evidence::Transport(TransportEvidence::Uet(UetEvidence::Resources(Box::new(e)))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pdcs_resource_nacks_and_spurious_resends_are_findings_trimming_is_neither() {
        let pdcs = crate::transport::uet::pdc::tests::sample();
        let mut out = Vec::new();
        findings(&pdcs, 8, &mut out);
        let ids: Vec<_> = out.iter().map(|d| d.evidence.id()).collect();
        assert_eq!(
            ids,
            ["uet-spurious-retransmissions", "uet-receiver-resources"]
        );
        let Evidence::Transport(TransportEvidence::Uet(UetEvidence::Spurious(s))) =
            &out[0].evidence
        else {
            panic!()
        };
        assert_eq!((s.spurious, s.retransmissions, s.nack_resends), (1, 3, 2));
        assert_eq!((s.resend_wait_min_ns, s.nacks.trimmed), (Some(30), 1));
        assert_eq!(out[0].flows, [0]);
        let Evidence::Transport(TransportEvidence::Uet(UetEvidence::Resources(r))) =
            &out[1].evidence
        else {
            panic!()
        };
        // Named on the receiver's direction, the one that sent them.
        assert_eq!((r.nacks.no_pkt_buffer, r.nacks.trimmed), (1, 1));
        assert_eq!((r.pdcs.len(), r.pdcs[0].pdc.spdcid), (1, 2));
        assert_eq!(out[1].impact, 1.0 / 8.0);
        // Trimming alone raises neither.
        let mut trimmed_only = pdcs.clone();
        for p in &mut trimmed_only {
            p.spurious = 0;
            p.nacks_by.no_pkt_buffer = 0;
        }
        let mut out = Vec::new();
        findings(&trimmed_only, 8, &mut out);
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn trimming_names_its_directions_rows_or_the_answering_ones() {
        use super::super::{TrimmedPdc, UetTrimming};
        let pdcs = crate::transport::uet::pdc::tests::sample();
        let (a, b) = (pdcs[0].key, pdcs[1].key);
        let trimmed = |key: PdcKey, dpdcid: Option<u16>| TrimmedPdc {
            key,
            dpdcid,
            requests: 1,
            trimmed: 1,
            retransmissions: 0,
            ce: 0,
            answers: Default::default(),
            first_trim_ns: None,
            inflight_before: None,
            inflight_after: None,
        };
        // A's direction by its key; one the tap saw only the answers of
        // (no row of its own) by B's, which answered it; one unknown at all.
        let unseen = PdcKey { iface: 9, ..a };
        let answered_only = PdcKey { spdcid: 77, ..a };
        let mut d = vec![Diagnosis {
            severity: Severity::Warning,
            impact: 0.0,
            flows: Vec::new(),
            evidence: Evidence::Transport(TransportEvidence::Uet(UetEvidence::Trimming(
                UetTrimming {
                    taps: Vec::new(),
                    pdcs: vec![trimmed(a, Some(b.spdcid))],
                    other_pdcs: 2,
                    // The listed one and the two counted are all named.
                    named: [a, answered_only, unseen]
                        .map(|k| (k, Some(b.spdcid)))
                        .to_vec(),
                },
            ))),
        }];
        name_rows(&pdcs, &mut d);
        assert_eq!(d[0].flows, [pdcs[0].id, pdcs[1].id]);
    }
}
