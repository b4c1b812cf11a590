//! Retransmission livelock: a flow that rewinds to the same PSN again and
//! again with no ACK progress between (see "Retransmission livelock" in
//! `docs/analysis.md`).
//!
//! A lost packet is resent once and gets through; when the same PSN needs a
//! third rewind and nothing was acknowledged meanwhile, something drops that
//! packet every time: a hop whose MTU is smaller than the frame (an MTU black
//! hole), an ACL, a route that goes nowhere. The requester will spend its
//! retry count on it and move the QP to the error state.
//!
//! O(1) per rewind and per ACK, a few words per flow. The runs here (a
//! [`Flow`](super::flows::Flow) owns one); the finding,
//! `retransmission-livelock`, in `findings/livelock.rs`.

use super::psn;

/// Rewinds to one PSN, with no ACK progress between, from which on a flow is
/// in a livelock.
pub(crate) const LIVELOCK_REWINDS: u64 = 3;

/// One run of rewinds to the same PSN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Run {
    pub psn: u32,
    pub rewinds: u64,
    pub first_ts: u64,
    pub last_ts: u64,
}

/// The flow's current run and its longest.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Livelock {
    current: Option<Run>,
    pub worst: Option<Run>,
}

impl Livelock {
    /// A rewind to `psn` at `now`.
    pub fn rewind(&mut self, psn: u32, now: u64) {
        let run = match self.current {
            // Records out of time order (taps merged, a clock stepped back)
            // widen the run: it spans first_ts..=last_ts either way.
            Some(r) if r.psn == psn => Run {
                rewinds: r.rewinds + 1,
                first_ts: r.first_ts.min(now),
                last_ts: r.last_ts.max(now),
                ..r
            },
            _ => Run {
                psn,
                rewinds: 1,
                first_ts: now,
                last_ts: now,
            },
        };
        self.current = Some(run);
        if self.worst.is_none_or(|w| run.rewinds > w.rewinds) {
            self.worst = Some(run);
        }
    }

    /// An ACK up to `a`: once it covers the run's PSN the run is over.
    pub fn acked(&mut self, a: u32) {
        if self.current.is_some_and(|r| psn::diff(a, r.psn) >= 0) {
            self.current = None;
        }
    }

    /// The longest run, when it is a livelock.
    pub fn livelock(&self) -> Option<Run> {
        self.worst.filter(|w| w.rewinds >= LIVELOCK_REWINDS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_rewinds_to_one_psn_without_progress() {
        let mut l = Livelock::default();
        l.rewind(7, 10);
        l.rewind(7, 20);
        assert_eq!(l.livelock(), None);
        l.acked(6); // progress below the PSN: still stuck on it
        l.rewind(7, 30);
        assert_eq!(
            l.livelock(),
            Some(Run {
                psn: 7,
                rewinds: 3,
                first_ts: 10,
                last_ts: 30
            })
        );
    }

    /// The `analyzer` fuzz target's finding: a rewind timestamped before
    /// the run's first made the finding's `last_ts - first_ts` underflow.
    #[test]
    fn a_rewind_earlier_than_the_first_widens_the_run() {
        let mut l = Livelock::default();
        l.rewind(7, 1_000);
        l.rewind(7, 400);
        l.rewind(7, 700);
        let run = l.livelock().expect("three rewinds");
        assert_eq!((run.first_ts, run.last_ts), (400, 1_000));
    }

    #[test]
    fn progress_or_another_psn_starts_a_new_run() {
        let mut l = Livelock::default();
        l.rewind(7, 10);
        l.rewind(7, 20);
        l.acked(7);
        l.rewind(7, 30);
        l.rewind(9, 40);
        l.rewind(9, 50);
        assert_eq!(l.livelock(), None);
        assert_eq!(l.worst.map(|w| (w.psn, w.rewinds)), Some((7, 2)));
    }
}
