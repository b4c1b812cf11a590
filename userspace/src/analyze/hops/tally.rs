//! The tallies of a flow's transmissions ([`super`]): the taps that saw
//! each, and the taps recording at its time.
//!
//! A tap that has been silent since before a transmission began was
//! recording then if it records again later: only a later frame of that tap
//! decides it. Until then the transmission is held with the tap and its last
//! frame; once the tap's last frame is newer, that never changes, so the
//! held tallies are folded into the decided ones whenever they have doubled
//! since the last fold. After a fold every held tap's last frame is that
//! tap's latest: the tallies are bounded by flows and tap sets, whatever the
//! capture's length (a tap idle between bursts would otherwise hold one
//! tally per flow and burst).

use super::TapRange;
use crate::analyze::hash::FastMap;

/// Held tallies below this many are not folded.
const MIN_FOLD: usize = 1024;

/// A transmission's taps: those that saw it, and those recording at its
/// time (bits of a mask).
pub(super) type Decided = (u32, u64, u64);

/// A tally waiting on taps silent since before it: the tap and its last
/// frame then.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Held {
    taps: Decided,
    silent: Vec<(u16, u64)>,
}

#[derive(Debug)]
pub(super) struct Tallies {
    decided: FastMap<Decided, u64>,
    /// Per flow number: its last decided tally's taps (seen, live) and the
    /// transmissions counted with them not yet added to `decided` (0:
    /// none). A flow's transmissions mostly have the same taps, so
    /// `decided` is updated when they change, not once a transmission.
    last: Vec<(u64, u64, u64)>,
    held: FastMap<Held, u64>,
    /// The next fold: when `held` grows past this.
    pub(super) fold_at: usize,
}

impl Default for Tallies {
    fn default() -> Self {
        Tallies {
            decided: FastMap::default(),
            last: Vec::new(),
            held: FastMap::default(),
            fold_at: MIN_FOLD,
        }
    }
}

impl Tallies {
    /// One transmission of `flow` (a [`super::Matcher`] flow number) that started at `start`, seen by the taps
    /// of `seen`.
    pub(super) fn add(&mut self, flow: u32, seen: u64, start: u64, taps: &[TapRange]) {
        let mut live = seen;
        let mut silent = Vec::new();
        for (t, r) in taps.iter().enumerate() {
            let bit = 1u64 << t;
            if seen & bit != 0 || r.first.is_none_or(|f| f > start) {
                continue;
            }
            if r.last >= start {
                live |= bit;
            } else {
                silent.push((t as u16, r.last));
            }
        }
        if silent.is_empty() {
            let f = flow as usize;
            if self.last.len() <= f {
                self.last.resize(f + 1, (0, 0, 0));
            }
            let last = &mut self.last[f];
            if last.2 > 0 && (last.0, last.1) == (seen, live) {
                last.2 += 1;
                return;
            }
            if last.2 > 0 {
                *self.decided.entry((flow, last.0, last.1)).or_default() += last.2;
            }
            *last = (seen, live, 1);
            return;
        }
        let held = Held {
            taps: (flow, seen, live),
            silent,
        };
        *self.held.entry(held).or_default() += 1;
        if self.held.len() > self.fold_at {
            self.fold(taps);
            self.fold_at = self.fold_at.max(2 * self.held.len());
        }
    }

    /// Decides the held taps that have recorded since.
    fn fold(&mut self, taps: &[TapRange]) {
        for (mut h, n) in std::mem::take(&mut self.held) {
            h.silent.retain(|&(tap, last)| {
                let recorded = taps[usize::from(tap)].last > last;
                if recorded {
                    h.taps.2 |= 1 << tap;
                }
                !recorded
            });
            if h.silent.is_empty() {
                *self.decided.entry(h.taps).or_default() += n;
            } else {
                *self.held.entry(h).or_default() += n;
            }
        }
    }

    /// At the end of the capture: per flow, the transmissions by the taps
    /// that saw them and the taps recording (a tap silent since stays so).
    pub(super) fn finish(mut self, taps: &[TapRange]) -> FastMap<u32, Vec<(u64, u64, u64)>> {
        for (flow, (seen, live, n)) in (0u32..).zip(std::mem::take(&mut self.last)) {
            if n > 0 {
                *self.decided.entry((flow, seen, live)).or_default() += n;
            }
        }
        self.fold(taps);
        for (h, n) in self.held.drain() {
            *self.decided.entry(h.taps).or_default() += n;
        }
        let mut by_flow: FastMap<u32, Vec<(u64, u64, u64)>> = FastMap::default();
        for ((flow, seen, live), n) in self.decided {
            by_flow.entry(flow).or_default().push((seen, live, n));
        }
        by_flow
    }

    /// Tallies held at once (decided and held): what the matcher keeps per
    /// flow.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        let pending = (0u32..)
            .zip(&self.last)
            .filter(|&(flow, &(seen, live, n))| {
                n > 0 && !self.decided.contains_key(&(flow, seen, live))
            })
            .count();
        self.decided.len() + pending + self.held.len()
    }
}
