//! Findings about the capture and the wire: capture loss and mirror copies,
//! reordering, corrupted and trimmed frames (`docs/analysis.md`, *Mirror
//! duplicates*, *Gaps*, *ICRC*, *RoCE: trimmed frames*). Worded in `render/findings/capture.rs`.

use rocescope_common::wire::TransportId;

use crate::analyze::dups::TapDuplicates;
use crate::analyze::{Flow, Severity};

use super::input::{Input, share};
use super::{Diagnosis, Evidence};

/// `capture-loss`'s evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct CaptureLoss {
    /// PSNs the responders acknowledged that the capture never recorded.
    pub frames_missed: u64,
    /// The flows that had them.
    pub flows: u64,
    /// Per tap that missed any (interface index, PSNs), in tap order.
    pub by_tap: Vec<(u16, u64)>,
    /// Per tap whose pcapng statistics count drops (interface index,
    /// dropped by the interface, by the capture host; `None`: not given).
    pub counted: Vec<(u16, Option<u64>, Option<u64>)>,
    /// Both counts of `counted` summed.
    pub counted_drops: u64,
}

/// `mirror-duplicates`' evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct MirrorCopies {
    /// Frames that were copies (left out of every other count).
    pub copies: u64,
    /// Per tap with copies: its interface index and their gaps.
    pub by_tap: Vec<(u16, TapDuplicates)>,
    /// The longest gap from an original to its copy, over the taps.
    pub max_gap_ns: Option<u64>,
    /// Of `copies`, those of the transports beside RoCE: per transport
    /// with any, in the order their flows came.
    pub transport_copies: Vec<(TransportId, u64)>,
}

/// `reordering`'s evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct Reordering {
    /// PSNs that arrived after later ones and were never resent.
    pub late_psns: u64,
    pub flows: u64,
    /// How late the latest was, in time and in PSNs (each the worst flow's).
    pub max_late_ns: u64,
    pub max_late_psns: u32,
}

/// `sniffer-capture`'s evidence: a tap whose ICRCs a NIC's sniffer broke.
#[derive(Clone, Debug, PartialEq)]
pub struct Sniffer {
    pub iface: u16,
    pub icrc_failed: u64,
    pub icrc_checked: u64,
}

/// `trimming`'s evidence: one tap's RoCE frames a switch trimmed and the
/// receiver NAKed (docs/analysis.md, "RoCE: trimmed frames").
#[derive(Clone, Debug, PartialEq)]
pub struct Trimmed {
    pub iface: u16,
    pub trimmed: u64,
    /// The flows with trimmed frames, their request packets and the
    /// rewinds the trims' NAKs caused.
    pub flows: u64,
    pub data_packets: u64,
    pub rewinds: u64,
}

/// `corrupted-frames`' evidence: one tap's frames failing their ICRC.
#[derive(Clone, Debug, PartialEq)]
pub struct Corrupted {
    pub iface: u16,
    pub icrc_failed: u64,
    pub icrc_checked: u64,
    /// `icrc_failed / icrc_checked`.
    pub failed_fraction: f64,
    /// Flows with a failed ICRC, and how many of them a NAK or rewind
    /// followed.
    pub flows: u64,
    pub followed: u64,
}

/// The capture itself: frames the tap missed (`capture-loss`) and mirror
/// copies (`mirror-duplicates`).
pub(super) fn capture(x: &Input, out: &mut Vec<Diagnosis>) {
    out.extend(capture_loss(x));
    out.extend(mirror_copies(x));
}

fn capture_loss(x: &Input) -> Option<Diagnosis> {
    let lost: Vec<&Flow> = x
        .flows_if(x.census.rare > 0)
        .filter(|f| f.sequence().gap_counts.capture_lost > 0)
        .collect();
    // What the capture says of itself (pcapng interface statistics).
    let counted: Vec<(u16, Option<u64>, Option<u64>)> = x
        .summary
        .taps
        .iter()
        .filter(|t| t.isb_ifdrop.unwrap_or(0) + t.isb_osdrop.unwrap_or(0) > 0)
        .map(|t| (t.iface, t.isb_ifdrop, t.isb_osdrop))
        .collect();
    // The other transports' flows, their gaps resolved alike (UET's:
    // docs/analysis.md, "UET: PDCs").
    let others_lost: Vec<u32> = x
        .transports
        .flows()
        .filter(|f| f.capture_lost > 0)
        .map(|f| f.id)
        .collect();
    if lost.is_empty() && others_lost.is_empty() && counted.is_empty() {
        return None;
    }
    let n: u64 = lost
        .iter()
        .map(|f| f.sequence().gap_counts.capture_lost)
        .chain(x.transports.flows().map(|f| f.capture_lost))
        .sum();
    let counted_drops: u64 = x
        .summary
        .taps
        .iter()
        .map(|t| t.isb_ifdrop.unwrap_or(0) + t.isb_osdrop.unwrap_or(0))
        .sum();
    Some(Diagnosis {
        severity: Severity::Warning,
        impact: share(n + counted_drops, x.summary.frames.total + counted_drops),
        flows: lost
            .iter()
            .map(|f| f.id)
            .chain(others_lost.iter().copied())
            .collect(),
        evidence: Evidence::CaptureLoss(CaptureLoss {
            frames_missed: n,
            flows: (lost.len() + others_lost.len()) as u64,
            by_tap: x
                .summary
                .taps
                .iter()
                .filter(|t| t.capture_lost > 0)
                .map(|t| (t.iface, t.capture_lost))
                .collect(),
            counted,
            counted_drops,
        }),
    })
}

fn mirror_copies(x: &Input) -> Option<Diagnosis> {
    let copies = x.summary.frames.mirror_copies;
    if copies == 0 {
        return None;
    }
    let by_tap: Vec<(u16, TapDuplicates)> = x
        .summary
        .taps
        .iter()
        .filter_map(|t| Some((t.iface, t.duplicate_gaps.clone()?)))
        .collect();
    let max_gap_ns = by_tap.iter().map(|(_, d)| d.max_gap_ns).max();
    let mut flows: Vec<u32> = x
        .flows_if(x.census.rare > 0)
        .filter(|f| f.rare().mirror_copies > 0)
        .map(|f| f.id)
        .chain(
            x.transports
                .flows()
                .filter(|f| f.mirror_copies > 0)
                .map(|f| f.id),
        )
        .collect();
    flows.sort_unstable();
    let mut transport_copies: Vec<(TransportId, u64)> = Vec::new();
    for f in x.transports.flows().filter(|f| f.mirror_copies > 0) {
        match transport_copies.iter_mut().find(|(t, _)| *t == f.transport) {
            Some((_, n)) => *n += f.mirror_copies,
            None => transport_copies.push((f.transport, f.mirror_copies)),
        }
    }
    Some(Diagnosis {
        severity: Severity::Info,
        impact: share(copies, x.summary.frames.total),
        flows,
        evidence: Evidence::MirrorCopies(MirrorCopies {
            copies,
            by_tap,
            max_gap_ns,
            transport_copies,
        }),
    })
}

/// Late PSNs: reordering, not loss.
pub(super) fn reordering(x: &Input) -> Option<Diagnosis> {
    let flows: Vec<&Flow> = x
        .flows_if(x.census.rare > 0)
        .filter(|f| f.sequence().gap_counts.late > 0)
        .collect();
    if flows.is_empty() {
        return None;
    }
    let ids: Vec<u32> = flows.iter().map(|f| f.id).collect();
    Some(Diagnosis {
        severity: Severity::Warning,
        impact: x.traffic_share(&ids),
        evidence: Evidence::Reordering(Reordering {
            late_psns: flows.iter().map(|f| f.sequence().gap_counts.late).sum(),
            flows: flows.len() as u64,
            max_late_ns: flows
                .iter()
                .filter_map(|f| f.sequence().late_max_ns)
                .max()
                .unwrap_or(0),
            max_late_psns: flows
                .iter()
                .map(|f| f.sequence().late_max_psns)
                .max()
                .unwrap_or(0),
        }),
        flows: ids,
    })
}

/// Frames failing their ICRC while others on the same tap pass
/// (`corrupted-frames`); a sniffer's rewritten capture said once, never as
/// corruption (`sniffer-capture`).
pub(super) fn corruption(x: &Input, out: &mut Vec<Diagnosis>) {
    for t in x.summary.taps.iter().filter(|t| t.sniffer) {
        out.push(Diagnosis {
            severity: Severity::Info,
            impact: share(t.icrc_failed, t.icrc_checked),
            flows: x
                .flows()
                .filter(|f| f.iface == t.iface)
                .map(|f| f.id)
                .collect(),
            evidence: Evidence::Sniffer(Sniffer {
                iface: t.iface,
                icrc_failed: t.icrc_failed,
                icrc_checked: t.icrc_checked,
            }),
        });
    }
    for t in x
        .summary
        .taps
        .iter()
        .filter(|t| !t.sniffer && t.icrc_failed > 0 && t.icrc_failed < t.icrc_checked)
    {
        let flows: Vec<&Flow> = x
            .flows_if(x.census.rare > 0)
            .filter(|f| f.iface == t.iface && f.rare().icrc_errors > 0)
            .collect();
        let followed = flows
            .iter()
            .filter(|f| {
                f.rewind().rewinds > 0
                    || f.paired()
                        .is_some_and(|p| x.table_of(f.id).get(p).is_some_and(|r| r.nak().naks > 0))
            })
            .count();
        let failed_fraction = t.icrc_failed as f64 / t.icrc_checked as f64;
        out.push(Diagnosis {
            severity: Severity::Warning,
            impact: failed_fraction,
            flows: flows.iter().map(|f| f.id).collect(),
            evidence: Evidence::Corrupted(Corrupted {
                iface: t.iface,
                icrc_failed: t.icrc_failed,
                icrc_checked: t.icrc_checked,
                failed_fraction,
                flows: flows.len() as u64,
                followed: followed as u64,
            }),
        });
    }
}

/// Frames a switch trimmed, per tap (`trimming`): a congestion signal the
/// receivers answered with NAKs, never corruption or loss.
pub(super) fn trimming(x: &Input, out: &mut Vec<Diagnosis>) {
    for t in x.summary.taps.iter().filter(|t| t.trimmed > 0) {
        let flows: Vec<&Flow> = x
            .flows_if(x.census.rare > 0)
            .filter(|f| f.iface == t.iface && f.trimmed() > 0)
            .collect();
        let data_packets = flows.iter().map(|f| f.data_packets()).sum();
        out.push(Diagnosis {
            severity: Severity::Warning,
            impact: share(t.trimmed, data_packets),
            flows: flows.iter().map(|f| f.id).collect(),
            evidence: Evidence::Trimmed(Trimmed {
                iface: t.iface,
                trimmed: t.trimmed,
                flows: flows.len() as u64,
                data_packets,
                rewinds: flows.iter().map(|f| f.rewind().rewinds_trim).sum(),
            }),
        });
    }
}
