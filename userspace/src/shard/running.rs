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
//!   added; the findings judged once over the N analyzers together, as at
//!   the end ([`Analyzer::judge_window`]: each thread lends its analyzer,
//!   [`Parallel::lend`]); the window's pauses analyzer 0's.
//!
//! An open PFC pause counts up to the last record of its interface over
//! every analyzer (analyzer 0 may not have taken it). Each look asks every
//! analyzer thread after the batches sent before it, and waits for all: a
//! watch looks once a publishing or report interval, not once a batch.
use super::Parallel;
use super::summary::{add_totals, ratio};
use crate::analyze::{Analyzer, FrameCounts, Interim, Running, TapEnd};
use crate::output::{Analysing, Stopped};

impl Analysing for Parallel {
    fn running(&mut self, out: &mut Running) -> Result<(), Stopped> {
        let ends = self.tap_ends().ok_or(Stopped)?;
        let all = self
            .gather(move |a| {
                let mut r = Running::default();
                a.running_to(&mut r, &ends);
                r
            })
            .map_err(|_| Stopped)?;
        merge_running(all, out);
        Ok(())
    }

    fn findings_now(&mut self, from_ns: u64, now_ns: u64) -> Result<Interim, Stopped> {
        self.lend(move |all| judge(all, from_ns, now_ns, false))
            .map_err(|_| Stopped)
    }

    fn findings_at_stop(&mut self, from_ns: u64, now_ns: u64) -> Result<Interim, Stopped> {
        self.lend(move |all| judge(all, from_ns, now_ns, true))
            .map_err(|_| Stopped)
    }
}

/// The findings over `[from_ns, now_ns)` of the analyzers `all` judged
/// together ([`Analyzer::judge_window`]): analyzer 0's window (its clock
/// every record moved, its pause state the whole one), frames, totals and
/// the transports' totals added. At the stop (`at_stop`) a running pause
/// closes at its interface's last record over every analyzer.
fn judge(all: &[Analyzer], from_ns: u64, now_ns: u64, at_stop: bool) -> Interim {
    let mut ends: Vec<TapEnd> = Vec::new();
    if at_stop {
        for a in all {
            let theirs = a.tap_ends();
            if ends.len() < theirs.len() {
                ends.resize(theirs.len(), TapEnd::default());
            }
            for (end, t) in ends.iter_mut().zip(theirs) {
                *end = end.join(t);
            }
        }
    }
    let close = |iface: u16| match ends.get(usize::from(iface)) {
        Some(t) if at_stop && t.seen => t.last_ts.min(now_ns),
        _ => now_ns,
    };
    let mut windows = all.iter().map(|a| a.window(from_ns, now_ns, close));
    let (mut summary, pfc) = windows.next().expect("a sharded run has an analyzer");
    let mut frames = FrameCounts::default();
    frames.add(&summary.frames, true);
    for (o, _) in windows {
        frames.add(&o.frames, false);
        add_totals(&mut summary.totals, &o.totals);
        summary.transports.add(&o.transports);
    }
    summary.frames = frames;
    summary.totals.retrans_rate =
        ratio(summary.totals.retrans_packets, summary.totals.data_packets);
    let each: Vec<&Analyzer> = all.iter().collect();
    let diagnoses = Analyzer::judge_window(&each, &summary, &pfc, from_ns);
    Interim {
        summary,
        diagnoses,
        pfc,
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

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::Arc;

    use super::*;
    use crate::analyze::{self, Analyzer, FlowRow, Severity, VecSink};
    use crate::shard::tests::sample_records;

    /// A flow's key in a row: what names it whatever its id.
    type Key = (u16, [u8; 16], [u8; 16], u32, u64);

    /// Each finding as compared: id, severity, the flows named (by key),
    /// impact; sorted.
    type Judged = Vec<(&'static str, Severity, BTreeSet<Key>, String)>;

    fn judged(i: &Interim, keys: &BTreeMap<u32, Key>) -> Judged {
        let mut out: Judged = i
            .diagnoses
            .iter()
            .map(|d| {
                let flows = d.flows.iter().map(|id| keys[id]).collect();
                let impact = format!("{:.12}", d.impact);
                (d.evidence.id(), d.severity, flows, impact)
            })
            .collect();
        out.sort();
        out
    }

    fn keys<'a>(rows: impl Iterator<Item = &'a FlowRow>) -> BTreeMap<u32, Key> {
        rows.map(|r| {
            let key = (r.iface, r.src_ip, r.dst_ip, r.dest_qp, r.first_ts_ns);
            (r.flow_id, key)
        })
        .collect()
    }

    /// Two and three analyzers read as one give what one analyzer gives,
    /// on every sample: the running snapshot whole, and over the run's span
    /// the interim's frame counts, totals, the window's pauses and the
    /// findings, judged over the analyzers together (each once: id,
    /// severity, flows, impact), now and at the stop.
    #[test]
    fn two_and_three_analyzers_read_as_one_give_what_one_gives() {
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
            let want_now = one.findings_now(first, last);
            let want_stop = one.findings_at_stop(first, last);
            let mut want = Running::default();
            one.running(&mut want);
            let end = one.finish(&mut sink);
            let want_keys = keys(sink.flows.iter().chain(&end.flows));
            for n in [2, 3] {
                let mut many = Parallel::new(&analyze::Config::default(), n).unwrap();
                let mut sink = VecSink::default();
                for batch in records.chunks(4096) {
                    many.push_batch(Arc::new(batch.to_vec()), &mut sink)
                        .unwrap();
                }
                let at = format!("{}: {n} analyzers", path.display());
                let mut got = Running::default();
                Analysing::running(&mut many, &mut got).unwrap();
                assert_eq!(got, want, "{at}: running");
                let now = Analysing::findings_now(&mut many, first, last).unwrap();
                let stop = Analysing::findings_at_stop(&mut many, first, last).unwrap();
                let merged = many.finish(&mut sink).unwrap();
                let got_keys = keys(sink.flows.iter().chain(&merged.flows));
                for (got, want) in [(&now, &want_now), (&stop, &want_stop)] {
                    assert_eq!(got.summary.frames, want.summary.frames, "{at}");
                    assert_eq!(got.summary.totals, want.summary.totals, "{at}");
                    assert_eq!(got.summary.transports, want.summary.transports, "{at}");
                    assert_eq!(got.pfc, want.pfc, "{at}: the window's pauses");
                    assert_eq!(
                        judged(got, &got_keys),
                        judged(want, &want_keys),
                        "{at}: findings"
                    );
                }
                compared += 1;
            }
        }
        assert!(compared >= 30, "samples compared: {compared}");
    }
}
