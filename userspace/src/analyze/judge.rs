//! The findings at the end of input, judged once: over one analyzer's
//! state, or over a sharded run's N analyzers' together (docs/live.md,
//! "Sharded analysis"), so that N analyzers tell what one tells.
//!
//! Together: the flows every analyzer holds (live and kept as evidence,
//! a flow id naming its analyzer), analyzer 0's pause state (the whole
//! one), the summary the caller merged, and the aggregates merged by the
//! types that own them — the pauses that covered ghost rewinds and the
//! answered pairs joined, the QoS marks joined ([`qos::Marks::add`]), the
//! census added ([`Census::merge`]), the hop rows joined and sorted as one
//! analyzer sorts them, the transports' inputs and evidence joined. The NICs'
//! latency histograms merged per NIC and tap (exact: fixed buckets). Not
//! merged: each analyzer's ECMP groups' bins (a bin is loaded or not by
//! every analyzer's frames in it: each analyzer's load is judged, over
//! every flow).

use super::findings::input::{Census, Part, ids_of, slots_of};
use super::findings::{self, Diagnosis, Input};
use super::finish::Ending;
use super::rows::TransportInput;
use super::{Analyzer, PfcInterval, Summary, hops, nics, qos};

impl Ending {
    /// The findings over `ends` (analyzer `k` of a sharded run at `k`),
    /// ranked: over `summary`, the N summaries merged (`None`: one
    /// analyzer's own). One analyzer's are exactly its own findings.
    pub fn judge(ends: &mut [Ending], summary: Option<&Summary>) -> Vec<Diagnosis> {
        let mut diagnoses = match &mut *ends {
            [] => return Vec::new(),
            [one] => {
                let census = std::mem::take(&mut one.census);
                let a = &one.analyzer;
                findings::diagnose(&Input {
                    flows: &a.flows,
                    retired: &a.retired,
                    by_id: ids_of(&a.flows, &a.retired),
                    others: &[],
                    pfc: &a.pfc.rows,
                    summary: summary.unwrap_or(&one.summary),
                    ghost_covers: &a.ghost_covers,
                    ecmp: &a.ecmp,
                    qos: &a.qos,
                    hops: &one.hop_rows,
                    nics: &a.nics.rows_per_tap(),
                    transports: a.transport_input(&one.ended),
                    census,
                })
            }
            all => {
                let summary = summary.unwrap_or(&all[0].summary);
                let analyzers: Vec<&Analyzer> = all.iter().map(|e| &e.analyzer).collect();
                let mut census = Census::default();
                let mut hops: Vec<hops::HopRow> = Vec::new();
                for e in all.iter() {
                    census.merge(&e.census);
                    hops.extend(e.hop_rows.iter().cloned());
                }
                hops.sort_by_key(|h| (h.up_iface, h.down_iface, h.src_ip, h.dst_ip, h.dest_qp));
                let mut transports = all[0].analyzer.transport_input(&all[0].ended);
                for e in &all[1..] {
                    transports.add(e.analyzer.transport_input(&e.ended));
                }
                let pfc = &all[0].analyzer.pfc.rows;
                let judged = Judged {
                    summary,
                    pfc,
                    hops: &hops,
                    transports,
                    census,
                };
                together(&analyzers, judged)
            }
        };
        // The transports' own findings over their flows, every analyzer's.
        let mut kept = Vec::with_capacity(ends.len());
        for e in ends.iter_mut() {
            kept.push(e.analyzer.transport_kept(&e.ended));
        }
        let mut kept = kept.into_iter();
        if let Some(mut all) = kept.next() {
            kept.for_each(|more| all.add(more));
            all.findings(summary.unwrap_or(&ends[0].summary), &mut diagnoses);
        }
        diagnoses
    }
}

/// What the findings over N analyzers together read beside their flows:
/// at the end or over a running window, the caller's.
pub(super) struct Judged<'a> {
    /// The N summaries merged.
    pub summary: &'a Summary,
    /// Analyzer 0's pauses (the whole pause state).
    pub pfc: &'a [PfcInterval],
    /// Every analyzer's hop rows, sorted as one analyzer sorts them.
    pub hops: &'a [hops::HopRow],
    pub transports: TransportInput<'a>,
    pub census: Census,
}

/// The findings over analyzers `all` (N > 1, in analyzer order) together
/// (module docs).
pub(super) fn together(all: &[&Analyzer], judged: Judged) -> Vec<Diagnosis> {
    let (a, rest) = all.split_first().expect("N analyzers");
    let others: Vec<Part> = rest
        .iter()
        .map(|b| Part {
            flows: &b.flows,
            retired: &b.retired,
            by_id: Some(slots_of(&b.flows)),
            ecmp: &b.ecmp,
        })
        .collect();
    let mut ghost_covers = a.ghost_covers.clone();
    let mut qos = a.qos.clone();
    for b in rest {
        ghost_covers.extend(b.ghost_covers.iter().copied());
        qos::Marks::add(&mut qos, &b.qos);
    }
    let each: Vec<&nics::Nics> = all.iter().map(|b| &b.nics).collect();
    let nics = nics::Nics::rows_per_tap_of(&each);
    findings::diagnose(&Input {
        flows: &a.flows,
        retired: &a.retired,
        by_id: Some(slots_of(&a.flows)),
        others: &others,
        pfc: judged.pfc,
        summary: judged.summary,
        ghost_covers: &ghost_covers,
        ecmp: &a.ecmp,
        qos: &qos,
        hops: judged.hops,
        nics: &nics,
        transports: judged.transports,
        census: judged.census,
    })
}
