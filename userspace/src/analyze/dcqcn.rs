//! DCQCN reaction: how a sender's rate answers the CNPs it gets, measured
//! from its own request packets at the tap (see "DCQCN reaction" in
//! `docs/analysis.md`).
//!
//! A DCQCN reaction point cuts its rate when a CNP arrives and climbs back
//! on its timer; a NIC with congestion control off (or a CNP that never
//! reaches the reaction point) keeps sending as before. The sender's rate is
//! the one its packets show: the frame bits of a window of [`WINDOW`] gaps
//! before a CNP against each gap after it. The pacing of the packet after a
//! gap was chosen when the packet before it left, so the first packet sent
//! at a lower rate is the one before the first long gap.
//!
//! O(1) per request packet and per CNP. A flow that sends data holds its
//! last packets ([`Rate`], 72 bytes, from its first data packet on); what
//! its CNPs measured ([`Reaction`], ~130 bytes more) only from the first
//! CNP it could be measured against. The measurement here (a
//! [`Flow`](super::flows::Flow)'s sender's part owns a [`Rate`]); the finding,
//! `dcqcn-reaction`, in `findings/dcqcn.rs`.

/// Gaps the rate before a CNP (and the recovered rate) is measured over.
pub(crate) const WINDOW: usize = 8;
/// A gap at this fraction of the rate before the CNP or less is a drop.
pub(crate) const DROP: f64 = 0.75;
/// Back to this fraction of the rate before the first CNP is recovered.
pub(crate) const RECOVERED: f64 = 0.9;
/// Request packets after a CNP with no drop among them: no reaction.
pub(crate) const DECIDE_PACKETS: u32 = 16;

/// The last `WINDOW + 1` request packets: time and frame length, in 64
/// bytes (was 128; a `Rate` is 72, in a sending flow's part): times as `u32`
/// offsets from `base` (a window spans at most [`SPAN_MAX_NS`]), lengths as
/// `u16` (a RoCE frame is at most an IB MTU of 4096 bytes and its headers;
/// a longer one counts as 65,535 bytes). docs/analysis.md, "Memory".
#[derive(Clone, Copy, Debug, Default)]
struct Ring {
    base: u64,
    off: [u32; WINDOW + 1],
    len: [u16; WINDOW + 1],
    /// Packets held (up to `WINDOW + 1`) and the slot of the newest.
    n: u8,
    head: u8,
}

/// The longest a window of packets spans: a packet further from the
/// oldest held (a flow silent for seconds) starts the window over from the
/// packets within it.
pub(crate) const SPAN_MAX_NS: u64 = u32::MAX as u64;

impl Ring {
    fn ts(&self, slot: usize) -> u64 {
        self.base + u64::from(self.off[slot])
    }

    fn push(&mut self, ts: u64, len: u32) {
        if ts < self.base || ts - self.base > SPAN_MAX_NS {
            self.rebase(ts);
        }
        let head = (usize::from(self.head) + 1) % (WINDOW + 1);
        self.head = head as u8;
        self.off[head] = (ts - self.base) as u32;
        self.len[head] = len.min(u32::from(u16::MAX)) as u16;
        self.n = (self.n + 1).min(WINDOW as u8 + 1);
    }

    /// Makes room for a packet at `ts` outside the offsets' reach: the
    /// packets held that are within [`SPAN_MAX_NS`] of it stay, from the
    /// earliest of them and `ts`.
    fn rebase(&mut self, ts: u64) {
        let held = usize::from(self.n);
        // The newest packets within reach of `ts`, counted back from the
        // newest: the first out of reach ends the window.
        let kept = (0..held)
            .map(|back| self.ts(self.at(back)))
            .take_while(|&t| t.abs_diff(ts) <= SPAN_MAX_NS)
            .count();
        let base = (0..kept)
            .map(|back| self.ts(self.at(back)))
            .fold(ts, u64::min);
        for back in 0..kept {
            let slot = self.at(back);
            self.off[slot] = (self.ts(slot) - base) as u32;
        }
        self.base = base;
        self.n = kept as u8;
    }

    /// Slot `back` packets before the newest.
    fn at(&self, back: usize) -> usize {
        (usize::from(self.head) + WINDOW + 1 - back) % (WINDOW + 1)
    }

    /// Gb/s over the window's gaps, and when its oldest packet left.
    fn rate(&self) -> Option<(f64, u64)> {
        if usize::from(self.n) < WINDOW + 1 {
            return None;
        }
        let oldest = self.at(WINDOW);
        let span = self
            .ts(usize::from(self.head))
            .checked_sub(self.ts(oldest))?;
        let bits: u64 = (1..=WINDOW)
            .map(|b| u64::from(self.len[self.at(b)]) * 8)
            .sum();
        (span > 0).then(|| (bits as f64 / span as f64, self.ts(oldest)))
    }

    /// The newest gap: the packet before it (time) and its rate in Gb/s.
    fn last_gap(&self) -> Option<(u64, f64)> {
        if self.n < 2 {
            return None;
        }
        let prev = self.at(1);
        let gap = self
            .ts(usize::from(self.head))
            .saturating_sub(self.ts(prev));
        let bits = u64::from(self.len[prev]) * 8;
        Some((
            self.ts(prev),
            if gap == 0 {
                f64::INFINITY
            } else {
                bits as f64 / gap as f64
            },
        ))
    }
}

/// A CNP awaiting the sender's answer.
#[derive(Clone, Copy, Debug)]
struct Pending {
    cnp_ts: u64,
    before_gbps: f64,
    packets: u32,
}

/// CNPs from the first one until the rate is back.
#[derive(Clone, Copy, Debug)]
struct Run {
    base_gbps: f64,
    first_drop: Option<u64>,
}

/// A flow's sending rate as its last request packets show it, and, from
/// the first CNP measured against it on, its [`Reaction`].
#[derive(Clone, Debug, Default)]
pub(crate) struct Rate {
    ring: Ring,
    reaction: Option<Box<Reaction>>,
}

impl Rate {
    /// What its CNPs measured (an empty reaction before the first one).
    pub fn reaction(&self) -> &Reaction {
        self.reaction.as_deref().unwrap_or(&NO_REACTION)
    }

    /// A CNP attributed to the flow at `now`. One CNP is measured at a time:
    /// one arriving while another awaits its answer is part of it; one
    /// before the flow sent a window of packets measures nothing.
    pub fn cnp(&mut self, now: u64) {
        if self.reaction.as_ref().is_some_and(|r| r.pending.is_some()) {
            return;
        }
        let Some((before, _)) = self.ring.rate() else {
            return;
        };
        self.reaction
            .get_or_insert_with(Box::default)
            .cnp(now, before);
    }

    /// A request packet of `len` bytes at `now`; `paused(from, to)` says
    /// whether a pause of the flow's priority on its tap overlapped that
    /// time (a gap a pause explains says nothing about the rate).
    pub fn request(&mut self, now: u64, len: u32, paused: impl Fn(u64, u64) -> bool) {
        self.ring.push(now, len);
        if let Some(r) = &mut self.reaction {
            r.request(&self.ring, now, paused);
        }
    }

    /// Requests the live tap only counted (`live --mode summary`): their
    /// times are unknown, so what was being measured starts over.
    pub fn counted(&mut self) {
        self.ring = Ring::default();
        if let Some(r) = &mut self.reaction {
            r.pending = None;
            r.run = None;
        }
    }
}

/// One request flow's DCQCN reaction: what its packets did after its CNPs.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Reaction {
    pending: Option<Pending>,
    run: Option<Run>,
    /// CNPs the rate dropped after: how many, total and longest time from
    /// the CNP to the first packet sent at the lower rate.
    pub reactions: u64,
    pub reaction_sum_ns: u64,
    pub reaction_max_ns: u64,
    /// Runs whose rate came back: how many, total and longest time from the
    /// first drop to the rate back at [`RECOVERED`] of the rate before.
    pub recoveries: u64,
    pub recovery_sum_ns: u64,
    pub recovery_max_ns: u64,
    /// CNPs followed by [`DECIDE_PACKETS`] request packets none of which
    /// left after a drop, and the sum of the rates before them.
    pub without: u64,
    pub without_gbps_sum: f64,
}

/// What a flow with no data packet reads.
pub(super) static NO_REACTION: std::sync::LazyLock<Reaction> =
    std::sync::LazyLock::new(Reaction::default);

impl Reaction {
    /// A CNP at `now`, none pending, the rate before it `before` Gb/s.
    fn cnp(&mut self, now: u64, before: f64) {
        self.pending = Some(Pending {
            cnp_ts: now,
            before_gbps: before,
            packets: 0,
        });
        if self.run.is_none() {
            self.run = Some(Run {
                base_gbps: before,
                first_drop: None,
            });
        }
    }

    /// A request packet at `now`, the newest of `ring`.
    fn request(&mut self, ring: &Ring, now: u64, paused: impl Fn(u64, u64) -> bool) {
        if let Some(mut p) = self.pending {
            p.packets += 1;
            self.pending = Some(p);
            // Packets that left before the CNP was seen at the tap (a tap
            // far from the sender) do not count.
            if let Some((prev_ts, gbps)) = ring.last_gap().filter(|g| g.0 >= p.cnp_ts) {
                if gbps <= DROP * p.before_gbps {
                    self.pending = None;
                    if paused(prev_ts, now) {
                        self.run = None;
                    } else {
                        let t = prev_ts - p.cnp_ts;
                        self.reactions += 1;
                        self.reaction_sum_ns += t;
                        self.reaction_max_ns = self.reaction_max_ns.max(t);
                        if let Some(r) = &mut self.run {
                            r.first_drop.get_or_insert(prev_ts);
                        }
                    }
                } else if p.packets >= DECIDE_PACKETS {
                    self.pending = None;
                    self.without += 1;
                    self.without_gbps_sum += p.before_gbps;
                    if self.run.is_some_and(|r| r.first_drop.is_none()) {
                        self.run = None;
                    }
                }
            }
        }
        if let Some(r) = self.run
            && let Some(drop) = r.first_drop
            && let Some((gbps, oldest)) = ring.rate()
            && oldest >= drop
            && gbps >= RECOVERED * r.base_gbps
        {
            let t = now.saturating_sub(drop);
            self.recoveries += 1;
            self.recovery_sum_ns += t;
            self.recovery_max_ns = self.recovery_max_ns.max(t);
            self.run = None;
        }
    }

    /// Mean time from a CNP to the drop, µs.
    pub fn reaction_us(&self) -> Option<f64> {
        (self.reactions > 0).then(|| self.reaction_sum_ns as f64 / self.reactions as f64 / 1e3)
    }

    /// Mean time from a run's first drop to the rate back, µs.
    pub fn recovery_us(&self) -> Option<f64> {
        (self.recoveries > 0).then(|| self.recovery_sum_ns as f64 / self.recoveries as f64 / 1e3)
    }

    /// The sender does not slow down for CNPs: at least two went without a
    /// reaction and none had one.
    pub fn ignored(&self) -> bool {
        self.without >= 2 && self.reactions == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Packets of 1000 bytes every `gap` ns from `from`, `n` of them.
    fn send(r: &mut Rate, from: u64, gap: u64, n: u64) -> u64 {
        for k in 0..n {
            r.request(from + k * gap, 1000, |_, _| false);
        }
        from + n * gap
    }

    #[test]
    fn a_halved_rate_is_a_reaction_and_its_climb_back_a_recovery() {
        let mut r = Rate::default();
        // 8000 bits per 100 ns: 80 Gb/s.
        let t = send(&mut r, 0, 100, 20);
        r.cnp(t - 50);
        // Two more packets at the old pace, then 200 ns gaps (40 Gb/s).
        let t = send(&mut r, t, 100, 2);
        assert_eq!(r.reaction().reactions, 0);
        let t = send(&mut r, t, 200, 4);
        // The packet before the first long gap (2200 → 2400) left at 2200.
        assert_eq!(r.reaction().reactions, 1);
        assert_eq!(r.reaction().reaction_max_ns, 2200 - 1950);
        assert_eq!(r.reaction().recoveries, 0);
        // Back at 80 Gb/s: recovered once a whole window is at that pace.
        let end = send(&mut r, t, 100, 9);
        assert_eq!(r.reaction().recoveries, 1);
        assert_eq!(r.reaction().recovery_max_ns, end - 100 - 2200);
        assert!(!r.reaction().ignored());
    }

    #[test]
    fn cnps_the_rate_ignores_are_counted() {
        let mut r = Rate::default();
        let mut t = send(&mut r, 0, 100, 10);
        for _ in 0..3 {
            r.cnp(t);
            t = send(&mut r, t, 100, u64::from(DECIDE_PACKETS) + 4);
        }
        assert_eq!((r.reaction().reactions, r.reaction().without), (0, 3));
        assert!(r.reaction().ignored());
        assert_eq!(r.reaction().without_gbps_sum, 3.0 * 80.0);
    }

    #[test]
    fn a_reaction_is_held_from_the_first_cnp_a_window_measures() {
        let mut r = Rate::default();
        // 5 packets: 4 gaps, less than a window; the CNP measures nothing.
        let t = send(&mut r, 0, 100, 5);
        r.cnp(t);
        assert!(r.reaction.is_none());
        let t = send(&mut r, t, 100, 5);
        r.cnp(t);
        assert!(r.reaction.as_ref().is_some_and(|x| x.pending.is_some()));
        assert_eq!((r.reaction().reactions, r.reaction().without), (0, 0));
    }

    /// The window's times are offsets of 32 bits: a packet more than
    /// [`SPAN_MAX_NS`] after the oldest held starts the window over with
    /// the packets within reach (docs/analysis.md, "Memory").
    #[test]
    fn a_window_spans_at_most_its_offsets_reach() {
        assert_eq!(std::mem::size_of::<Rate>(), 72);
        let mut r = Rate::default();
        // Capture times far from 0, as a capture's epoch times are.
        let t0 = 1_700_000_000_000_000_000;
        let t = send(&mut r, t0, 100, 9);
        assert_eq!(r.ring.rate().map(|x| x.1), Some(t0));
        assert_eq!(r.ring.last_gap().map(|g| g.0), Some(t - 200));
        // Five seconds of silence: only the new packet is held.
        let t = send(&mut r, t + 5_000_000_000, 100, 8);
        assert!(r.ring.rate().is_none());
        let t = send(&mut r, t, 100, 1);
        assert_eq!(r.ring.rate(), Some((80.0, t - 900)));
        // Under the reach, a long gap is measured, as before.
        let mut r = Rate::default();
        let t = send(&mut r, t0, 100, 8);
        let late = t + 3_000_000_000;
        r.request(late, 1000, |_, _| false);
        assert_eq!(r.ring.rate().map(|x| x.1), Some(t0));
        // A frame longer than 65,535 bytes counts as 65,535.
        r.request(late + 10, 100_000, |_, _| false);
        r.request(late + 20, 1000, |_, _| false);
        assert_eq!(r.ring.last_gap(), Some((late + 10, 65535.0 * 8.0 / 10.0)));
    }

    #[test]
    fn a_gap_a_pause_explains_is_no_reaction() {
        let mut r = Rate::default();
        let t = send(&mut r, 0, 100, 10);
        r.cnp(t - 100);
        r.request(t + 5000, 1000, |_, _| true);
        assert_eq!((r.reaction().reactions, r.reaction().without), (0, 0));
    }
}
