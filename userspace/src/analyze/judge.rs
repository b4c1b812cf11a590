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

use super::finish::Ending;
use super::findings::input::{Census, Part, ids_of, slots_of};
use super::findings::{self, Diagnosis, Input};
use super::{Summary, hops, nics, qos};

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
            all => together(all, summary.unwrap_or(&all[0].summary)),
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

/// The findings over N analyzers' state together (module docs).
fn together(ends: &[Ending], summary: &Summary) -> Vec<Diagnosis> {
    let (first, rest) = ends.split_first().expect("N analyzers");
    let a = &first.analyzer;
    let others: Vec<Part> = rest
        .iter()
        .map(|e| Part {
            flows: &e.analyzer.flows,
            retired: &e.analyzer.retired,
            by_id: Some(slots_of(&e.analyzer.flows)),
            ecmp: &e.analyzer.ecmp,
        })
        .collect();
    let mut ghost_covers = a.ghost_covers.clone();
    let mut qos = a.qos.clone();
    let mut census = Census::default();
    census.merge(&first.census);
    let mut hop_rows: Vec<hops::HopRow> = first.hop_rows.clone();
    let mut transports = a.transport_input(&first.ended);
    for e in rest {
        let b = &e.analyzer;
        ghost_covers.extend(b.ghost_covers.iter().copied());
        qos::Marks::add(&mut qos, &b.qos);
        census.merge(&e.census);
        hop_rows.extend(e.hop_rows.iter().cloned());
        transports.add(b.transport_input(&e.ended));
    }
    let all: Vec<&nics::Nics> = ends.iter().map(|e| &e.analyzer.nics).collect();
    let nics = nics::Nics::rows_per_tap_of(&all);
    hop_rows.sort_by_key(|h| (h.up_iface, h.down_iface, h.src_ip, h.dst_ip, h.dest_qp));
    findings::diagnose(&Input {
        flows: &a.flows,
        retired: &a.retired,
        by_id: Some(slots_of(&a.flows)),
        others: &others,
        pfc: &a.pfc.rows,
        summary,
        ghost_covers: &ghost_covers,
        ecmp: &a.ecmp,
        qos: &qos,
        hops: &hop_rows,
        nics: &nics,
        transports,
        census,
    })
}
