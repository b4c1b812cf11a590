//! The analyzers' analyses merged into one [`Analysis`]: what the outputs
//! close with at the end of a sharded run (`summary.json`, the tables held
//! to the end), by the merge rules of docs/live.md ("Sharded analysis").
//!
//! * analyzer 0's, whose pause state is the whole one and whose clock
//!   every record moved: the run's span, interface names, PFC (`pfc`, the
//!   per-port summaries, the congestion trees' nodes), the taps' first and
//!   last records (each the earliest and latest any analyzer saw: the
//!   others' clocks move only at a batch's ends), link speeds and capture
//!   drop counts, the interfaces' origins;
//! * added: frame counts ([`merge`]), `totals` (the PFC intervals and
//!   storms analyzer 0's), the transports' totals
//!   ([`Analysis::add_transports`]), per tap its records (less the
//!   PFC/PAUSE records the other analyzers took again), mirror copies,
//!   capture-lost PSNs, ICRC checks and trims, the retired rows' sums, the
//!   retirement counts, the cross-tap matching's late frames;
//! * joined: flow rows (by id), hop rows and the transports' tables
//!   (sorted as one analyzer sorts them), the trees' victims, the facts;
//! * the CE → CNP reaction: samples added, extremes kept, means weighted;
//! * what is **not** the unsharded value (docs/live.md): `nics` rows and
//!   `nic_timeouts` (a NIC's samples are split between the analyzers of
//!   its address pairs: one row per NIC and analyzer that saw it), the
//!   tap pairs' clock offsets (the entry with the most matched frames),
//!   `matching.peak_keys` (added: an upper bound), `peak_live_flows`
//!   (added: an upper bound), a tap's `sniffer` verdict (any analyzer's).
use std::collections::BTreeSet;

use super::analyzers::Merged;
use crate::analyze::dups::TapDuplicates;
use crate::analyze::{Analysis, CaptureFact, FrameCounts, NicRow, Reaction, Summary, Totals};

/// PFC and PAUSE records per interface index, as the dispatcher counted
/// them: every analyzer took each, analyzer 0's count stands.
pub type LinkLevelRecords = std::collections::BTreeMap<u16, u64>;

/// One [`Analysis`] from `merged`, its findings those [`merge`] ranked.
///
/// [`merge`]: super::analyzers::merge
pub fn analysis(merged: Merged, link_level: &LinkLevelRecords) -> Analysis {
    let Merged {
        flows,
        pfc,
        diagnoses,
        frames,
        shards,
    } = merged;
    let others = shards.len().saturating_sub(1) as u64;
    let mut shards = shards.into_iter();
    let Some(mut whole) = shards.next() else {
        return empty();
    };
    let rest: Vec<Analysis> = shards.collect();
    whole.flows = flows;
    whole.pfc = pfc;
    whole.diagnoses = diagnoses;
    let s = &mut whole.summary;
    s.frames = frames;
    for a in &rest {
        whole.written.extend(a.written.iter().copied());
        for (group, sums) in &a.retired_sums {
            let to = whole.retired_sums.entry(*group).or_default();
            to.rows += sums.rows;
            to.packets += sums.packets;
            to.cnps += sums.cnps;
            to.naks += sums.naks;
            to.rewinds_timeout += sums.rewinds_timeout;
            to.goodput_gbps += sums.goodput_gbps;
        }
        whole.hops.extend(a.hops.iter().cloned());
        NicRow::merge_rows(&mut whole.nics, &a.nics);
        add_summary(s, &a.summary);
    }
    // Every analyzer took the PFC/PAUSE records: analyzer 0's count them.
    for t in &mut s.taps {
        let again = link_level.get(&t.iface).copied().unwrap_or(0) * others;
        t.records = t.records.saturating_sub(again);
    }
    finish_summary(s);
    if let Some(m) = &mut s.matching {
        m.hops = whole.hops.len();
    }
    whole
        .hops
        .sort_by_key(|h| (h.up_iface, h.down_iface, h.src_ip, h.dst_ip, h.dest_qp));
    // The transports' own totals and tables (`analyze/transports/`).
    for a in &rest {
        whole.add_transports(a);
    }
    whole.facts = facts(&whole, &rest);
    whole
}

/// Another analyzer's summary of the same run added to `s` (the rules of
/// the module docs), but its frames and the transports' totals (added by
/// the caller) and what is read again from the sums once every analyzer's
/// is in ([`finish_summary`]).
fn add_summary(s: &mut Summary, o: &Summary) {
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
fn finish_summary(s: &mut Summary) {
    s.totals.retrans_rate = ratio(s.totals.retrans_packets, s.totals.data_packets);
    for tree in &mut s.pfc_trees {
        for node in &mut tree.nodes {
            node.victims.sort_unstable();
            node.victims.dedup();
        }
    }
}

/// The N analyzers' summaries (in analyzer order) as one, for the findings
/// judged over the N together ([`crate::analyze::Ending::judge`]): what [`analysis`] makes
/// of them, but the taps' records (the PFC/PAUSE records counted again stay
/// in: no finding reads them) and the hop count.
pub fn summary(all: &[&Summary]) -> Summary {
    let Some((first, rest)) = all.split_first() else {
        return empty().summary;
    };
    let mut s = (*first).clone();
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

/// The facts as one analyzer states them (in its order), from the merged
/// summary and every analyzer's own.
fn facts(whole: &Analysis, rest: &[Analysis]) -> Vec<CaptureFact> {
    let s = &whole.summary;
    let mut facts: Vec<CaptureFact> = s
        .taps
        .iter()
        .filter(|t| t.sniffer)
        .map(|t| CaptureFact::SnifferTap { iface: t.iface })
        .collect();
    if s.frames.cut > 0 {
        facts.push(CaptureFact::CutFrames {
            frames: s.frames.cut,
        });
    }
    let all = || std::iter::once(whole).chain(rest);
    // A group is silent when it is silent in every analyzer.
    for f in whole.facts.iter() {
        if matches!(f, CaptureFact::SilentEcmpGroup { .. }) && all().all(|a| a.facts.contains(f)) {
            facts.push(f.clone());
        }
    }
    let mut seen = BTreeSet::new();
    for f in all().flat_map(|a| &a.facts) {
        if let CaptureFact::UnnamedParallelPaths { taps, src, dst } = f
            && seen.insert((*taps, *src, *dst))
        {
            facts.push(f.clone());
        }
    }
    let lost: u64 = s.taps.iter().map(|t| t.capture_lost).sum();
    if lost > 0 {
        facts.push(CaptureFact::CaptureLost { psns: lost });
    }
    if s.totals.gaps_resolved.unresolved > 0 {
        facts.push(CaptureFact::Unresolved {
            psns: s.totals.gaps_resolved.unresolved,
        });
    }
    facts
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

/// No analyzer: nothing analysed (never: a sharded run has at least one).
fn empty() -> Analysis {
    crate::analyze::Analyzer::new(crate::analyze::Config::default())
        .finish(&mut crate::analyze::VecSink::default())
}
