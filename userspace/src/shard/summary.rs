//! The N analyzers' summaries of a sharded run merged by the rules of
//! docs/live.md ("Sharded analysis"): what the findings judged over the N
//! together read ([`summary`]), and what the outputs close with
//! ([`super::whole`]).
use crate::analyze::dups::TapDuplicates;
use crate::analyze::{FrameCounts, Reaction, Summary, Totals};

/// Another analyzer's summary of the same run added to `s` (the rules of
/// [`super::whole`]'s docs), but its frames and the transports' totals (added by
/// the caller) and what is read again from the sums once every analyzer's
/// is in ([`finish_summary`]).
pub(super) fn add_summary(s: &mut Summary, o: &Summary) {
    add_totals(&mut s.totals, &o.totals);
    s.ce_to_cnp = reaction(s.ce_to_cnp.take(), o.ce_to_cnp.as_ref());
    for tap in &o.taps {
        match s.taps.iter_mut().find(|t| t.iface == tap.iface) {
            Some(t) => {
                t.records += tap.records;
                // An analyzer's clock moves at a batch's first and
                // last record: the tap's own are the earliest and
                // latest any analyzer saw.
                t.first_ts_ns = match (t.first_ts_ns, tap.first_ts_ns) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                t.last_ts_ns = t.last_ts_ns.max(tap.last_ts_ns);
                t.duplicates += tap.duplicates;
                t.duplicate_gaps = match (t.duplicate_gaps.take(), &tap.duplicate_gaps) {
                    (Some(mut d), Some(e)) => {
                        merge_copies(&mut d, e);
                        Some(d)
                    }
                    (d, e) => d.or_else(|| e.clone()),
                };
                t.capture_lost += tap.capture_lost;
                t.icrc_checked += tap.icrc_checked;
                t.icrc_failed += tap.icrc_failed;
                t.trimmed += tap.trimmed;
                t.sniffer |= tap.sniffer;
            }
            None => s.taps.push(tap.clone()),
        }
    }
    for (tree, other) in s.pfc_trees.iter_mut().zip(&o.pfc_trees) {
        for (node, theirs) in tree.nodes.iter_mut().zip(&other.nodes) {
            node.victims.extend(&theirs.victims);
        }
    }
    for c in &o.clock_offsets {
        match s
            .clock_offsets
            .iter_mut()
            .find(|d| (d.tap_a, d.tap_b) == (c.tap_a, c.tap_b))
        {
            Some(d) if d.matched < c.matched => *d = c.clone(),
            Some(_) => {}
            None => s.clock_offsets.push(c.clone()),
        }
    }
    if let Some(theirs) = &o.matching {
        match &mut s.matching {
            Some(m) => {
                m.peak_keys += theirs.peak_keys;
                m.late_frames += theirs.late_frames;
            }
            None => s.matching = Some(theirs.clone()),
        }
    }
    s.nic_timeouts.extend(o.nic_timeouts.iter().cloned());
    s.retirement = match (s.retirement.take(), &o.retirement) {
        (Some(mut r), Some(o)) => {
            r.retired_flows += o.retired_flows;
            r.transports.add(&o.transports);
            r.interim_rows += o.interim_rows;
            r.peak_live_flows += o.peak_live_flows;
            for (&id, &n) in &o.evidence_omitted {
                *r.evidence_omitted.entry(id).or_default() += n;
            }
            r.rows_streamed_at_end += o.rows_streamed_at_end;
            Some(r)
        }
        (r, o) => r.or_else(|| o.clone()),
    };
}

/// What is read again from the sums once every analyzer's summary is in.
pub(super) fn finish_summary(s: &mut Summary) {
    s.totals.retrans_rate = ratio(s.totals.retrans_packets, s.totals.data_packets);
    for tree in &mut s.pfc_trees {
        for node in &mut tree.nodes {
            node.victims.sort_unstable();
            node.victims.dedup();
        }
    }
}

/// The N analyzers' summaries (in analyzer order) as one, for the findings
/// judged over the N together ([`crate::analyze::Ending::judge`]): what [`super::whole::analysis`] makes
/// of them, but the taps' records (the PFC/PAUSE records counted again stay
/// in: no finding reads them) and the hop count.
pub fn summary(first: &Summary, rest: &[&Summary]) -> Summary {
    let mut s = first.clone();
    let mut frames = FrameCounts::default();
    frames.add(&s.frames, true);
    for o in rest {
        frames.add(&o.frames, false);
        add_summary(&mut s, o);
        s.transports.add(&o.transports);
    }
    s.frames = frames;
    finish_summary(&mut s);
    s
}

/// One tap's mirror copies as two analyzers counted them: their gap
/// histograms added, the median read again as `dups` reads it.
fn merge_copies(to: &mut TapDuplicates, more: &TapDuplicates) {
    if more.copies == 0 {
        return;
    }
    to.min_gap_ns = if to.copies == 0 {
        more.min_gap_ns
    } else {
        to.min_gap_ns.min(more.min_gap_ns)
    };
    to.copies += more.copies;
    to.max_gap_ns = to.max_gap_ns.max(more.max_gap_ns);
    to.same_timestamp += more.same_timestamp;
    for (a, b) in to.histogram.iter_mut().zip(more.histogram) {
        *a += b;
    }
    let mut seen = 0;
    for (b, &n) in to.histogram.iter().enumerate() {
        seen += n;
        if seen * 2 >= to.copies {
            to.typical_gap_ns = if b == 0 { 0 } else { 1 << (b - 1) };
            break;
        }
    }
}

pub(super) fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

fn reaction(a: Option<Reaction>, b: Option<&Reaction>) -> Option<Reaction> {
    match (a, b) {
        (Some(a), Some(b)) => {
            let samples = a.samples + b.samples;
            Some(Reaction {
                samples,
                min_us: a.min_us.min(b.min_us),
                mean_us: (a.mean_us * a.samples as f64 + b.mean_us * b.samples as f64)
                    / samples as f64,
                max_us: a.max_us.max(b.max_us),
            })
        }
        (a, b) => a.or_else(|| b.cloned()),
    }
}

/// `to += more`, but the PFC intervals and storms (analyzer 0's alone).
pub(super) fn add_totals(to: &mut Totals, more: &Totals) {
    macro_rules! add {
        ($($f:ident),*) => { $( to.$f += more.$f; )* };
    }
    add!(
        flows,
        request_flows,
        response_flows,
        paired_flows,
        packets,
        bytes,
        data_packets,
        payload_bytes,
        retrans_packets,
        rewinds,
        rewinds_nak,
        rewinds_rnr,
        rewinds_timeout,
        spurious_retrans,
        gaps,
        acks,
        naks,
        rnr_naks,
        ce,
        cnps,
        cnps_unattributed,
        rewinds_timeout_ghost,
        icrc_errors,
        mirror_copies,
        trimmed
    );
    to.gaps_resolved.sum(&more.gaps_resolved);
}
