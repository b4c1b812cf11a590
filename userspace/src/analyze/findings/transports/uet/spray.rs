//! `uet-spray-imbalance`: entropy values of a UET PDC direction that
//! carried far more than its others, or arrived far later — a path the
//! hash favoured, or a slower one (the counts:
//! `crate::transport::uet::paths`; the thresholds: "UET: spraying and
//! trimming" in docs/analysis.md). Worded in `render/transports/uet/paths.rs`.

use std::collections::BTreeMap;

use crate::analyze::Severity;
use crate::analyze::flows::kept::EVIDENCE_K;
use crate::transport::uet::PdcKey;
use crate::transport::uet::paths::{PathCounts, PathRow};

use super::super::TransportEvidence;
use super::UetEvidence;
use crate::analyze::findings::input::{Input, share};
use crate::analyze::findings::{Diagnosis, Evidence};

/// A direction needs this many requests at a tap to be judged.
pub const SPRAY_MIN_PACKETS: u64 = 32;
/// An entropy value with this many times its direction's mean requests
/// per value is heavy.
pub const HEAVY_FACTOR: f64 = 2.0;
/// An entropy value whose mean lateness is this many times that of its
/// direction's other values together, and at least [`LATE_FLOOR_NS`], is late.
pub const LATE_FACTOR: f64 = 4.0;
pub const LATE_FLOOR_NS: f64 = 1_000.0;
/// Directions listed; the rest are counted.
pub const SPRAY_PDCS_LISTED: usize = 5;

/// `uet-spray-imbalance`'s evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct SprayImbalance {
    /// The directions with a heavy or late value, the largest share of
    /// requests on such values first.
    pub pdcs: Vec<UnevenPdc>,
    pub other_pdcs: u64,
    /// Every uneven direction, in the same order, at most the evidence K:
    /// the rows the finding names (`uet::pdc::name_rows`).
    pub named: Vec<PdcKey>,
}

/// One PDC direction at one tap.
#[derive(Clone, Debug, PartialEq)]
pub struct UnevenPdc {
    pub key: PdcKey,
    pub requests: u64,
    /// Entropy values it used (kept ones).
    pub entropies: u64,
    pub heavy: Vec<Heavy>,
    pub late: Vec<Late>,
    /// The share of its requests on heavy or late values.
    pub share: f64,
}

/// A value that carried far more than the direction's mean.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Heavy {
    pub entropy: u16,
    pub packets: u64,
    /// Its requests over the direction's mean per value.
    pub factor: f64,
}

/// A value that arrived far later than the direction's others.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Late {
    pub entropy: u16,
    pub packets: u64,
    pub late_packets: u64,
    pub mean_late_ns: f64,
    pub max_late_ns: u64,
    /// The direction's other values' mean lateness, together.
    pub others_mean_late_ns: f64,
}

/// `uet-spray-imbalance`: see the module.
pub(crate) fn finding(x: &Input) -> Option<Diagnosis> {
    let rows = x.transports.uet_rows();
    let mut by_pdc: BTreeMap<PdcKey, Vec<&PathRow>> = BTreeMap::new();
    for r in &rows {
        if let (Some(key), Some(_)) = (r.key, r.entropy) {
            by_pdc.entry(key).or_default().push(r);
        }
    }
    let mut pdcs: Vec<UnevenPdc> = by_pdc
        .into_iter()
        .filter_map(|(key, paths)| uneven(key, &paths))
        .collect();
    if pdcs.is_empty() {
        return None;
    }
    pdcs.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.key.cmp(&b.key)));
    let impact = pdcs[0].share;
    let named = pdcs.iter().take(EVIDENCE_K).map(|p| p.key).collect();
    let other_pdcs = pdcs.len().saturating_sub(SPRAY_PDCS_LISTED) as u64;
    pdcs.truncate(SPRAY_PDCS_LISTED);
    Some(Diagnosis {
        severity: Severity::Warning,
        impact,
        flows: Vec::new(),
        evidence: Evidence::Transport(TransportEvidence::Uet(UetEvidence::Spray(SprayImbalance {
            pdcs,
            other_pdcs,
            named,
        }))),
    })
}

/// One direction's heavy and late values, if any.
fn uneven(key: PdcKey, paths: &[&PathRow]) -> Option<UnevenPdc> {
    let total = paths.iter().fold(PathCounts::default(), |mut t, p| {
        t.packets += p.counts.packets;
        t.late_sum_ns += p.counts.late_sum_ns;
        t
    });
    if total.packets < SPRAY_MIN_PACKETS || paths.len() < 2 {
        return None;
    }
    let mean = total.packets as f64 / paths.len() as f64;
    let mut heavy = Vec::new();
    let mut late = Vec::new();
    let mut flagged = 0;
    for p in paths {
        let (c, entropy) = (&p.counts, p.entropy.unwrap_or_default());
        let factor = c.packets as f64 / mean;
        let is_heavy = factor >= HEAVY_FACTOR;
        if is_heavy {
            heavy.push(Heavy {
                entropy,
                packets: c.packets,
                factor,
            });
        }
        let others = total.packets - c.packets;
        let others_mean = if others == 0 {
            0.0
        } else {
            (total.late_sum_ns - c.late_sum_ns) as f64 / others as f64
        };
        let own = c.mean_late_ns();
        let is_late = own >= LATE_FLOOR_NS && own >= LATE_FACTOR * others_mean;
        if is_late {
            late.push(Late {
                entropy,
                packets: c.packets,
                late_packets: c.late,
                mean_late_ns: own,
                max_late_ns: c.late_max_ns,
                others_mean_late_ns: others_mean,
            });
        }
        if is_heavy || is_late {
            flagged += c.packets;
        }
    }
    (!heavy.is_empty() || !late.is_empty()).then(|| UnevenPdc {
        key,
        requests: total.packets,
        entropies: paths.len() as u64,
        heavy,
        late,
        share: share(flagged, total.packets),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(entropy: u16, packets: u64, late_sum_ns: u64) -> PathRow {
        PathRow {
            key: Some(PdcKey {
                iface: 0,
                src_ip: [1; 16],
                dst_ip: [2; 16],
                spdcid: 7,
            }),
            dpdcid: None,
            entropy: Some(entropy),
            iface: 0,
            first_ts_ns: 0,
            last_ts_ns: 0,
            counts: PathCounts {
                packets,
                late: u64::from(late_sum_ns > 0),
                late_sum_ns,
                ..PathCounts::default()
            },
            pdc_entropies: 4,
        }
    }

    fn judged(rows: &[PathRow]) -> Option<UnevenPdc> {
        let refs: Vec<&PathRow> = rows.iter().collect();
        uneven(rows[0].key.unwrap(), &refs)
    }

    #[test]
    fn an_even_spray_is_no_finding() {
        let rows: Vec<PathRow> = (0..4).map(|e| row(e, 10, 2_000)).collect();
        assert_eq!(judged(&rows), None);
    }

    #[test]
    fn a_value_far_later_than_the_others_is_late_and_only_it() {
        // Entropy 3: 2.5 µs a request on average; the others 0.1 µs.
        let mut rows: Vec<PathRow> = (0..3).map(|e| row(e, 10, 1_000)).collect();
        rows.push(row(3, 10, 25_000));
        let u = judged(&rows).unwrap();
        assert!(u.heavy.is_empty());
        assert_eq!(u.late.len(), 1);
        let l = u.late[0];
        assert_eq!((l.entropy, l.mean_late_ns), (3, 2_500.0));
        assert_eq!(l.others_mean_late_ns, 100.0);
        assert_eq!(u.share, 0.25);
    }

    #[test]
    fn late_needs_a_microsecond_and_heavy_twice_the_mean() {
        // 4× the others' but under 1 µs: not late.
        let mut rows: Vec<PathRow> = (0..3).map(|e| row(e, 10, 100)).collect();
        rows.push(row(3, 10, 4_000));
        assert_eq!(judged(&rows), None);
        // 40 of 70 requests on one of 4 values: 2.3× the mean of 17.5.
        let mut rows: Vec<PathRow> = (0..3).map(|e| row(e, 10, 0)).collect();
        rows.push(row(3, 40, 0));
        let u = judged(&rows).unwrap();
        assert_eq!(u.heavy.len(), 1);
        assert_eq!(u.heavy[0].entropy, 3);
        // Too few requests to judge.
        let rows: Vec<PathRow> = vec![row(0, 2, 0), row(1, 20, 0)];
        assert_eq!(judged(&rows), None);
    }
}
