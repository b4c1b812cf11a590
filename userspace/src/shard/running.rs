//! A sharded run's analyzers read as one while the run goes on: what the
//! live tap's metrics and its findings as they happen see
//! ([`crate::output::Analysing`]), merged by the rules of the end of the run
//! (docs/live.md, "Sharded analysis"; [`super::analyzers`],
//! [`super::whole`]).
//!
//! * [`Running`]: frames by kind and the running totals added (the
//!   PFC/PAUSE frames analyzer 0's), the flows held added, the PFC
//!   priorities and senders analyzer 0's (its pause state is the whole one);
//! * [`Interim`]: analyzer 0's summary (its clock every record moved, its
//!   PFC the whole), frames and totals added, the transports' totals
//!   added; the findings merged as at the end
//!   ([`super::analyzers::merge_diagnoses`]); the window's pauses analyzer
//!   0's.
//!
//! An open PFC pause counts up to the last record of its interface over
//! every analyzer (analyzer 0 may not have taken it). Each look asks every
//! analyzer thread after the batches sent before it, and waits for all: a
//! watch looks once a publishing or report interval, not once a batch.
use super::Parallel;
use super::analyzers::merge_diagnoses;
use super::whole::{add_totals, ratio};
use crate::analyze::{FrameCounts, Interim, Running, TapEnd};
use crate::output::Analysing;

impl Analysing for Parallel {
    fn running(&mut self, out: &mut Running) -> Option<()> {
        let ends = self.tap_ends()?;
        let all = self
            .gather(move |a| {
                let mut r = Running::default();
                a.running_to(&mut r, &ends);
                r
            })
            .ok()?;
        merge_running(all, out);
        Some(())
    }

    fn findings_now(&mut self, from_ns: u64, now_ns: u64) -> Option<Interim> {
        let all = self.gather(move |a| a.findings_now(from_ns, now_ns)).ok()?;
        merge_interims(all)
    }

    fn findings_at_stop(&mut self, from_ns: u64, now_ns: u64) -> Option<Interim> {
        let ends = self.tap_ends()?;
        let all = self
            .gather(move |a| a.findings_at_stop_to(from_ns, now_ns, &ends))
            .ok()?;
        merge_interims(all)
    }
}

impl Parallel {
    /// Where each interface's records end over every analyzer: an open
    /// pause runs to its interface's last record, which may be another
    /// analyzer's than the one holding the whole pause state.
    fn tap_ends(&mut self) -> Option<Vec<TapEnd>> {
        let all = self.gather(|a| a.tap_ends()).ok()?;
        let mut ends: Vec<TapEnd> = Vec::new();
        for theirs in all {
            if ends.len() < theirs.len() {
                ends.resize(theirs.len(), TapEnd::default());
            }
            for (end, t) in ends.iter_mut().zip(theirs) {
                *end = end.join(t);
            }
        }
        Some(ends)
    }
}

/// The analyzers' snapshots, in analyzer order, as one into `out`.
fn merge_running(all: Vec<Running>, out: &mut Running) {
    let mut all = all.into_iter();
    let Some(first) = all.next() else {
        *out = Running::default();
        return;
    };
    *out = first;
    for r in all {
        out.frames.add(&r.frames, false);
        out.totals.retrans_packets += r.totals.retrans_packets;
        out.totals.spurious_retrans += r.totals.spurious_retrans;
        out.totals.ce += r.totals.ce;
        out.flows += r.flows;
    }
}

/// The analyzers' findings over one interval, in analyzer order, as one.
fn merge_interims(all: Vec<Interim>) -> Option<Interim> {
    let diagnoses = merge_diagnoses(all.iter().map(|i| i.diagnoses.as_slice()));
    let mut all = all.into_iter();
    let mut whole = all.next()?;
    let s = &mut whole.summary;
    let mut frames = FrameCounts::default();
    frames.add(&s.frames, true);
    for other in all {
        let o = &other.summary;
        frames.add(&o.frames, false);
        add_totals(&mut s.totals, &o.totals);
        s.transports.add(&o.transports);
    }
    s.frames = frames;
    s.totals.retrans_rate = ratio(s.totals.retrans_packets, s.totals.data_packets);
    whole.diagnoses = diagnoses;
    Some(whole)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::*;
    use crate::analyze::{self, Analyzer, VecSink};
    use crate::shard::analyzers::CROSS_PAIR_FINDINGS;
    use crate::shard::tests::sample_records;

    /// Two analyzers read as one give what one analyzer gives, on every
    /// sample: the running snapshot whole, and over the run's span the
    /// interim's frame counts, totals and findings (but those comparing
    /// address pairs, which a shard cannot judge: as at the end).
    #[test]
    fn two_analyzers_read_as_one_give_what_one_gives() {
        let mut compared = 0;
        for (path, records) in sample_records() {
            let Some(first) = records.first().map(|r| r.ts_ns) else {
                continue;
            };
            let last = records.last().map_or(first, |r| r.ts_ns) + 1;
            let mut one = Analyzer::new(analyze::Config::default());
            let mut sink = VecSink::default();
            for r in &records {
                one.push(r, &mut sink);
            }
            let mut two = Parallel::new(&analyze::Config::default(), 2).unwrap();
            for batch in records.chunks(4096) {
                two.push_batch(Arc::new(batch.to_vec()), &mut VecSink::default())
                    .unwrap();
            }
            let (mut want, mut got) = (Running::default(), Running::default());
            one.running(&mut want);
            Analysing::running(&mut two, &mut got).unwrap();
            assert_eq!(got, want, "{}: running", path.display());
            let want = one.findings_now(first, last);
            let got = Analysing::findings_now(&mut two, first, last).unwrap();
            assert_eq!(
                got.summary.frames,
                want.summary.frames,
                "{}",
                path.display()
            );
            assert_eq!(
                got.summary.totals,
                want.summary.totals,
                "{}",
                path.display()
            );
            assert_eq!(
                got.summary.transports,
                want.summary.transports,
                "{}",
                path.display()
            );
            assert_eq!(got.pfc, want.pfc, "{}: the window's pauses", path.display());
            // A finding two analyzers raise appears once per analyzer (as at
            // the end): the flows each names, counted per finding.
            let judged = |i: &Interim| -> BTreeMap<&'static str, usize> {
                let mut named = BTreeMap::new();
                for d in &i.diagnoses {
                    let id = d.evidence.id();
                    if !CROSS_PAIR_FINDINGS.contains(&id) {
                        *named.entry(id).or_default() += d.flows.len();
                    }
                }
                named
            };
            assert_eq!(judged(&got), judged(&want), "{}: findings", path.display());
            compared += 1;
        }
        assert!(compared >= 15, "samples compared: {compared}");
    }
}
