//! Retransmission livelock and retry exhaustion: a flow that rewinds to the
//! same PSN again and again with no ACK progress between (see
//! "Retransmission livelock" and "Retry exhaustion" in `docs/analysis.md`).
//!
//! A lost packet is resent once and gets through; when the same PSN needs a
//! third rewind and nothing was acknowledged meanwhile, something drops that
//! packet every time: a hop whose MTU is smaller than the frame (an MTU black
//! hole), an ACL, a route that goes nowhere. The requester spends its retry
//! count (`retry_cnt`) on it; once the timer has fired `retry_cnt` times
//! with nothing acknowledged, the QP moves to the error state and sends
//! nothing more: that last run, followed by silence, is a retry exhaustion.
//!
//! O(1) per rewind and per response, a few words per flow. The runs here (a
//! [`Flow`](super::flows::Flow) owns one); the findings,
//! `retransmission-livelock` and `retry-exhausted`, in
//! `findings/livelock.rs`.

use super::psn;

/// Rewinds to one PSN, with no ACK progress between, from which on a flow is
/// in a livelock.
pub(crate) const LIVELOCK_REWINDS: u64 = 3;

/// The retry count assumed when no CM REQ in the capture gives the
/// connection's: 7, the largest (3 bits), what NCCL (`NCCL_IB_RETRY_CNT`)
/// and rdma_cm applications commonly set.
pub(crate) const DEFAULT_RETRY_COUNT: u8 = 7;

/// What triggered a rewind, as the requester's retry counters see it: a
/// timeout or a sequence-error NAK spends one of `retry_cnt` (Linux's
/// software RoCE, `rxe_comp.c`, takes both the same way), an RNR NAK one of
/// `rnr_retry` instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Trigger {
    Timeout,
    Nak,
    Rnr,
}

impl Trigger {
    /// The rewind's `trigger` (`events.parquet`).
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Timeout => "timeout",
            Trigger::Nak => "nak",
            Trigger::Rnr => "rnr",
        }
    }
}

/// One run of rewinds to the same PSN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub psn: u32,
    pub rewinds: u64,
    pub first_ts: u64,
    pub last_ts: u64,
}

/// What the current run says of the retry counters and the responder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Retries {
    /// Of the run's rewinds, those no NAK triggered (the requester's timer
    /// fired), and those an RNR NAK triggered.
    pub timeouts: u32,
    pub rnr: u32,
    /// The idle time before the first rewind.
    pub first_idle_ns: u64,
    /// The shortest time from a rewind to the next when a timeout made the
    /// next: the timer restarts when it fires, so this is one timeout as
    /// the tap sees it.
    pub min_gap_ns: Option<u64>,
    /// Packets the paired flow carried from the first rewind on, and the
    /// NAKs among them.
    pub answers: u32,
    pub naks: u32,
    /// ACKs from the first rewind on that acknowledged PSNs before the
    /// run's.
    pub progressed: u32,
}

/// The flow's current run and its longest.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Livelock {
    current: Option<(Run, Retries)>,
    pub worst: Option<Run>,
    /// Highest PSN acknowledged so far.
    acked: Option<u32>,
    /// The connection's retry count, when a CM REQ in the capture gave it.
    pub retry_count: Option<u8>,
}

/// A QP that spent its retry count on one PSN and then fell silent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exhausted {
    pub run: Run,
    pub retries: Retries,
    /// The retry count the run used up, and whether a CM REQ gave it.
    pub retry_count: u8,
    pub from_cm: bool,
    /// The timeout the capture shows: the shortest wait before a timeout
    /// retry (the idle time before the first retry when there is none).
    pub timeout_ns: u64,
    /// The flow's last packet: nothing was sent after it ...
    pub silent_from_ns: u64,
    /// ... for this long, to the end of the capture.
    pub silent_ns: u64,
}

impl Livelock {
    /// A rewind to `psn` at `now`, after `idle` ns with nothing sent.
    pub fn rewind(&mut self, psn: u32, now: u64, idle: u64, cause: Trigger) {
        let timeout = u32::from(cause == Trigger::Timeout);
        let rnr = u32::from(cause == Trigger::Rnr);
        let (run, retries) = match self.current {
            // Records out of time order (taps merged, a clock stepped back)
            // widen the run: it spans first_ts..=last_ts either way.
            Some((r, t)) if r.psn == psn => {
                let gap = now.abs_diff(r.last_ts);
                let run = Run {
                    rewinds: r.rewinds + 1,
                    first_ts: r.first_ts.min(now),
                    last_ts: r.last_ts.max(now),
                    ..r
                };
                let retries = Retries {
                    timeouts: t.timeouts.saturating_add(timeout),
                    rnr: t.rnr.saturating_add(rnr),
                    min_gap_ns: match cause {
                        Trigger::Timeout => Some(t.min_gap_ns.map_or(gap, |m| m.min(gap))),
                        _ => t.min_gap_ns,
                    },
                    ..t
                };
                (run, retries)
            }
            _ => (
                Run {
                    psn,
                    rewinds: 1,
                    first_ts: now,
                    last_ts: now,
                },
                Retries {
                    timeouts: timeout,
                    rnr,
                    first_idle_ns: idle,
                    ..Retries::default()
                },
            ),
        };
        self.current = Some((run, retries));
        if self.worst.is_none_or(|w| run.rewinds > w.rewinds) {
            self.worst = Some(run);
        }
    }

    /// An ACK up to `a`: once it covers the run's PSN the run is over.
    /// A livelock tracker made after ACKs up to `acked` (the flow's first
    /// rewind): progress is judged against them.
    pub fn after_acks(acked: Option<u32>) -> Self {
        Livelock {
            acked,
            ..Livelock::default()
        }
    }

    pub fn acked(&mut self, a: u32) {
        let progress = self.acked.is_none_or(|p| psn::diff(a, p) > 0);
        self.acked = Some(self.acked.map_or(a, |p| psn::max(p, a)));
        match &mut self.current {
            Some((r, _)) if psn::diff(a, r.psn) >= 0 => self.current = None,
            Some((_, t)) if progress => t.progressed = t.progressed.saturating_add(1),
            _ => {}
        }
    }

    /// A packet on the paired flow at `now` (`nak`: a NAK or RNR NAK).
    pub fn answered(&mut self, now: u64, nak: bool) {
        if let Some((_, t)) = self.current.as_mut().filter(|(r, _)| now >= r.first_ts) {
            t.answers = t.answers.saturating_add(1);
            t.naks = t.naks.saturating_add(u32::from(nak));
        }
    }

    /// The longest run, when it is a livelock.
    pub fn livelock(&self) -> Option<Run> {
        self.worst.filter(|w| w.rewinds >= LIVELOCK_REWINDS)
    }

    /// The last run, when it exhausted the retry count: as many rewinds to
    /// one PSN as the retry count, after timeouts (and sequence-error NAKs,
    /// which spend the same count; no RNR NAK), nothing acknowledged since,
    /// and the flow's last packet (`last_send_ns`) at least one more
    /// timeout before the capture's end (`end_ns`): the requester would have
    /// retried again by then, had it any retries left.
    pub fn exhausted(&self, last_send_ns: u64, end_ns: u64) -> Option<Exhausted> {
        let (run, retries) = self.current?;
        let retry_count = self.retry_count.unwrap_or(DEFAULT_RETRY_COUNT);
        let timeout_ns = retries.min_gap_ns.unwrap_or(retries.first_idle_ns);
        let exhausted = retry_count > 0
            && run.rewinds == u64::from(retry_count)
            && retries.timeouts > 0
            && retries.rnr == 0
            && timeout_ns > 0
            && end_ns.saturating_sub(last_send_ns) >= timeout_ns;
        exhausted.then_some(Exhausted {
            run,
            retries,
            retry_count,
            from_cm: self.retry_count.is_some(),
            timeout_ns,
            silent_from_ns: last_send_ns,
            silent_ns: end_ns.saturating_sub(last_send_ns),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_rewinds_to_one_psn_without_progress() {
        let mut l = Livelock::default();
        l.rewind(7, 10, 0, Trigger::Timeout);
        l.rewind(7, 20, 0, Trigger::Timeout);
        assert_eq!(l.livelock(), None);
        l.acked(6); // progress below the PSN: still stuck on it
        l.rewind(7, 30, 0, Trigger::Timeout);
        assert_eq!(
            l.livelock(),
            Some(Run {
                psn: 7,
                rewinds: 3,
                first_ts: 10,
                last_ts: 30
            })
        );
        let e = l.exhausted(30, 100).map(|e| e.retries);
        assert_eq!(e, None, "3 retries, not 7");
        assert_eq!(
            l.current.map(|(_, t)| t),
            Some(Retries {
                timeouts: 3,
                min_gap_ns: Some(10),
                progressed: 1,
                ..Retries::default()
            })
        );
    }

    /// Seven timeout rewinds to PSN 4, 65 µs apart, then silence: the last
    /// resend at 500 µs, the capture on until 600 µs.
    fn seven_timeouts(l: &mut Livelock) {
        for k in 0..7u64 {
            l.rewind(4, 100_000 + k * 65_000, 60_000, Trigger::Timeout);
        }
    }

    #[test]
    fn seven_timeout_retries_then_silence_exhaust_the_default_retry_count() {
        let mut l = Livelock::default();
        l.acked(3);
        seven_timeouts(&mut l);
        let e = l.exhausted(500_000, 600_000).expect("exhausted");
        assert_eq!(
            (e.retry_count, e.from_cm, e.timeout_ns, e.silent_from_ns),
            (7, false, 65_000, 500_000)
        );
        assert_eq!(e.silent_ns, 100_000);
        assert_eq!(
            (e.run.psn, e.run.rewinds, e.run.first_ts, e.run.last_ts),
            (4, 7, 100_000, 490_000)
        );
        assert_eq!(
            (e.retries.answers, e.retries.naks, e.retries.progressed),
            (0, 0, 0)
        );
        // Silent for less than a timeout: it may still retry.
        assert_eq!(l.exhausted(500_000, 560_000), None);
    }

    #[test]
    fn the_cm_retry_count_answers_and_naks() {
        let mut l = Livelock {
            retry_count: Some(3),
            ..Livelock::default()
        };
        seven_timeouts(&mut l);
        assert_eq!(l.exhausted(500_000, 600_000), None, "7 retries, not 3");
        let mut l = Livelock {
            retry_count: Some(3),
            ..Livelock::default()
        };
        l.rewind(4, 100_000, 60_000, Trigger::Timeout);
        l.answered(99_000, false); // before the run: not counted
        l.answered(120_000, true);
        l.acked(2); // progress below the stuck PSN
        l.answered(121_000, false);
        l.rewind(4, 165_000, 40_000, Trigger::Timeout);
        l.rewind(4, 230_000, 40_000, Trigger::Timeout);
        let e = l.exhausted(230_500, 400_000).expect("exhausted");
        assert_eq!((e.retry_count, e.from_cm, e.timeout_ns), (3, true, 65_000));
        assert_eq!(
            (e.retries.answers, e.retries.naks, e.retries.progressed),
            (2, 1, 1)
        );
        // A sequence-error NAK spends a retry too; an RNR NAK does not, and
        // NAKs alone are no timeouts.
        let cause = |k: u64, other: Trigger| if k == 3 { other } else { Trigger::Timeout };
        for (other, exhausted) in [(Trigger::Nak, true), (Trigger::Rnr, false)] {
            let mut l = Livelock::default();
            for k in 0..7u64 {
                l.rewind(4, 100_000 + k * 65_000, 60_000, cause(k, other));
            }
            assert_eq!(l.exhausted(500_000, 600_000).is_some(), exhausted);
        }
        let mut l = Livelock::default();
        for k in 0..7u64 {
            l.rewind(4, 100_000 + k * 65_000, 60_000, Trigger::Nak);
        }
        assert_eq!(l.exhausted(500_000, 600_000), None);
        // An ACK covering the PSN ends the run.
        let mut l = Livelock::default();
        seven_timeouts(&mut l);
        l.acked(4);
        assert_eq!(l.exhausted(500_000, 600_000), None);
    }

    /// The `analyzer` fuzz target's finding: a rewind timestamped before
    /// the run's first made the finding's `last_ts - first_ts` underflow.
    #[test]
    fn a_rewind_earlier_than_the_first_widens_the_run() {
        let mut l = Livelock::default();
        l.rewind(7, 1_000, 0, Trigger::Timeout);
        l.rewind(7, 400, 0, Trigger::Timeout);
        l.rewind(7, 700, 0, Trigger::Timeout);
        let run = l.livelock().expect("three rewinds");
        assert_eq!((run.first_ts, run.last_ts), (400, 1_000));
    }

    #[test]
    fn progress_or_another_psn_starts_a_new_run() {
        let mut l = Livelock::default();
        l.rewind(7, 10, 0, Trigger::Timeout);
        l.rewind(7, 20, 0, Trigger::Timeout);
        l.acked(7);
        l.rewind(7, 30, 0, Trigger::Timeout);
        l.rewind(9, 40, 0, Trigger::Timeout);
        l.rewind(9, 50, 0, Trigger::Timeout);
        assert_eq!(l.livelock(), None);
        assert_eq!(l.worst.map(|w| (w.psn, w.rewinds)), Some((7, 2)));
    }
}
