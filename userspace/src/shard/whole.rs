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
use super::summary::{add_summary, finish_summary};
use crate::analyze::{Analysis, CaptureFact, NicRow};

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

/// No analyzer: nothing analysed (never: a sharded run has at least one).
fn empty() -> Analysis {
    crate::analyze::Analyzer::new(crate::analyze::Config::default())
        .finish(&mut crate::analyze::VecSink::default())
}
