//! The NIC's effective retransmission timeout, measured from its own
//! timeout rewinds (see "NIC retransmission timeout" in `docs/analysis.md`).
//!
//! A requester's transport timer runs while requests are outstanding: it
//! starts with the first request sent when nothing was outstanding and
//! restarts on every ACK that makes progress, on a NAK, and when it fires.
//! When it fires, the requester rewinds to the oldest unacknowledged PSN. So
//! a timeout rewind that nothing held up came one timeout after the timer's
//! last (re)start, as seen at the tap; a rewind whose wait a pause overlapped
//! only bounds it (the timer fired somewhere in the pause, and the resend
//! waited for the pause to end).
//!
//! O(1) per packet, a few words per flow.

use serde::Serialize;

use super::compact::Opt64;
use super::psn;

/// IB local ACK timeout unit: 4.096 µs × 2^T.
pub(crate) const ACK_TIMEOUT_UNIT_NS: u64 = 4096;

/// The IB local ACK timeout exponent T whose timeout 4.096 µs × 2^T is
/// nearest (on a log scale) to `ns`.
pub(crate) fn nearest_exponent(ns: u64) -> u8 {
    let x = ns.max(1) as f64 / ACK_TIMEOUT_UNIT_NS as f64;
    x.log2().round().clamp(0.0, 31.0) as u8
}

/// A flow's timer as the capture shows it (what its timeout rewinds
/// measured, [`Waits`], lives with the flow's rewinds).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Timer {
    /// When the timer last (re)started; none while nothing is outstanding
    /// (8 bytes, not `Option<u64>`'s 16: every flow holds two).
    started: Opt64,
    /// `started` as of the flow's previous packet: the timer in effect when
    /// the idle time before a rewind began.
    started_before_idle: Opt64,
    /// Highest PSN acknowledged so far (progress restarts the timer).
    acked: Option<u32>,
}

/// Timeout rewinds' waits: exact ones (no pause overlapped the wait) and
/// bounds from the ones a pause held up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Waits {
    pub samples: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    /// Paused rewinds: the timeout is above `lower_ns` (the sender was
    /// still sending new data that long after the timer started) and at
    /// most `upper_ns` (the resend came that long after).
    pub bounded: u64,
    pub lower_ns: u64,
    pub upper_ns: u64,
}

impl Waits {
    fn sample(&mut self, ns: u64) {
        if self.samples == 0 {
            (self.min_ns, self.max_ns) = (ns, ns);
        } else {
            self.min_ns = self.min_ns.min(ns);
            self.max_ns = self.max_ns.max(ns);
        }
        self.samples += 1;
    }

    fn bound(&mut self, lower: u64, upper: u64) {
        if self.bounded == 0 {
            (self.lower_ns, self.upper_ns) = (lower, upper);
        } else {
            self.lower_ns = self.lower_ns.max(lower);
            self.upper_ns = self.upper_ns.min(upper);
        }
        self.bounded += 1;
    }

    /// The bounds, when they agree: rewinds whose bounds contradict each
    /// other (a replay's timing, a timer restarted by something the tap did
    /// not see) bound nothing.
    pub fn bounds(&self) -> Option<(u64, u64)> {
        (self.bounded > 0 && self.lower_ns < self.upper_ns)
            .then_some((self.lower_ns, self.upper_ns))
    }

    /// Merges another flow's waits (one sender's flows).
    pub fn merge(&mut self, o: &Waits) {
        if o.samples > 0 {
            let n = self.samples;
            self.sample(o.min_ns);
            self.max_ns = self.max_ns.max(o.max_ns);
            self.samples = n + o.samples;
        }
        if o.bounded > 0 {
            let n = self.bounded;
            self.bound(o.lower_ns, o.upper_ns);
            self.bounded = n + o.bounded;
        }
    }
}

impl Timer {
    /// A request sent at `now`: it starts the timer when nothing was
    /// outstanding.
    pub fn sent(&mut self, now: u64) {
        if self.started == Opt64::NONE {
            self.started = Opt64::some(now);
        }
    }

    /// An ACK up to `a` at `now`; `next` is one past the highest PSN sent.
    pub fn acked(&mut self, a: u32, next: Option<u32>, now: u64) {
        let progress = self.acked.is_none_or(|p| psn::diff(a, p) > 0);
        if !progress {
            return;
        }
        self.acked = Some(a);
        let outstanding = next.is_some_and(|n| psn::diff(n, psn::add(a, 1)) > 0);
        self.started = if outstanding {
            Opt64::some(now)
        } else {
            Opt64::NONE
        };
    }

    /// ACKs the live tap only counted (summary mode) raised the highest
    /// ACKed PSN to `a` by `now`, their last: the timer restarts then when
    /// that was progress (how much is outstanding is not known yet: the
    /// requests may come in a later delta).
    pub fn acked_counted(&mut self, a: u32, now: u64) {
        if self.acked.is_none_or(|p| psn::diff(a, p) > 0) {
            self.acked = Some(a);
            self.started = Opt64::some(now);
        }
    }

    /// The highest PSN acknowledged so far.
    pub fn highest_acked(&self) -> Option<u32> {
        self.acked
    }

    /// A NAK restarts the timer (the requester resends at once).
    pub fn nak(&mut self, now: u64) {
        self.started = Opt64::some(now);
    }

    /// A timeout rewind at `now` after `idle` ns of silence, `paused` ns of
    /// which the flow's priority was paused: measured or bounded, and the
    /// timer restarts (it fired). Returns the wait when it was measured.
    pub fn timeout_rewind(
        &mut self,
        waits: &mut Waits,
        now: u64,
        idle: u64,
        paused: u64,
    ) -> Option<u64> {
        let mut measured = None;
        if paused == 0 {
            if let Some(s) = self.started.get() {
                let wait = now.saturating_sub(s);
                waits.sample(wait);
                measured = Some(wait);
            }
        } else if let Some(s) = self.started_before_idle.get() {
            let lower = now.saturating_sub(idle).saturating_sub(s);
            waits.bound(lower, now.saturating_sub(s));
        }
        self.started = Opt64::some(now);
        measured
    }

    /// The flow's packet at the end of its processing: the timer in effect
    /// when the next idle time begins.
    pub fn packet_done(&mut self) {
        self.started_before_idle = self.started;
    }
}

/// One sender's timeout as one tap shows it, over its request flows there
/// (`summary.json` `nic_timeouts`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NicTimeout {
    pub iface: String,
    pub src_ip: String,
    /// Request flows with timeout rewinds from this sender.
    pub flows: Vec<u32>,
    /// Timeout rewinds no pause held up: their waits (the estimate is the
    /// shortest: anything between the timer and the tap only adds).
    pub samples: u64,
    pub timeout_us: Option<f64>,
    pub max_wait_us: Option<f64>,
    /// The IB local ACK timeout exponent nearest to the estimate.
    pub exponent: Option<u8>,
    /// Timeout rewinds a pause held up: the timeout lies in
    /// `(lower_us, upper_us]`.
    pub bounded: u64,
    pub lower_us: Option<f64>,
    pub upper_us: Option<f64>,
}

impl NicTimeout {
    pub(crate) fn new(iface: String, src_ip: String, flows: Vec<u32>, w: &Waits) -> Self {
        let us = |ns: u64| ns as f64 / 1000.0;
        let measured = w.samples > 0;
        let bounds = w.bounds();
        NicTimeout {
            iface,
            src_ip,
            flows,
            samples: w.samples,
            timeout_us: measured.then(|| us(w.min_ns)),
            max_wait_us: measured.then(|| us(w.max_ns)),
            exponent: measured.then(|| nearest_exponent(w.min_ns)),
            bounded: w.bounded,
            lower_us: bounds.map(|b| us(b.0)),
            upper_us: bounds.map(|b| us(b.1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_exponent_on_a_log_scale() {
        assert_eq!(nearest_exponent(0), 0);
        assert_eq!(nearest_exponent(4096), 0);
        assert_eq!(nearest_exponent(33_000), 3); // 32.8 µs
        assert_eq!(nearest_exponent(66_600), 4); // 65.5 µs, plus the tap's legs
        assert_eq!(nearest_exponent(1_050_000), 8); // 1.05 ms
        assert_eq!(nearest_exponent(u64::MAX), 31);
    }

    #[test]
    fn a_rewind_nothing_held_up_measures_from_the_last_restart() {
        let mut t = Timer::default();
        let mut w = Waits::default();
        t.sent(100);
        t.packet_done();
        t.sent(200); // already running
        t.packet_done();
        t.acked(0, Some(5), 1_000); // progress: restart
        t.acked(0, Some(5), 2_000); // no progress
        t.timeout_rewind(&mut w, 41_000, 40_800, 0);
        assert_eq!((w.samples, w.min_ns), (1, 40_000));
        // Fired: the next measures from the rewind.
        t.timeout_rewind(&mut w, 81_500, 40_000, 0);
        assert_eq!((w.min_ns, w.max_ns), (40_000, 40_500));
        // Everything acknowledged: the timer stops; the next send starts it.
        t.acked(9, Some(10), 90_000);
        t.sent(95_000);
        t.timeout_rewind(&mut w, 135_000, 39_000, 0);
        assert_eq!(w.samples, 3);
        assert_eq!(w.min_ns, 40_000);
    }

    #[test]
    fn a_paused_rewind_only_bounds_the_timeout() {
        let mut t = Timer::default();
        let mut w = Waits::default();
        t.sent(119_607);
        t.packet_done();
        // ACK progress during the pause, after the timer fired.
        t.acked(3, Some(9), 232_231);
        t.timeout_rewind(&mut w, 233_833, 100_331, 100_000);
        assert_eq!(w.samples, 0);
        assert_eq!(w.bounded, 1);
        assert_eq!(
            (w.lower_ns, w.upper_ns),
            (233_833 - 100_331 - 119_607, 233_833 - 119_607)
        );
        assert_eq!(w.bounds(), Some((13_895, 114_226)));
        // A second rewind whose bounds contradict the first's: no bound.
        t.packet_done();
        t.timeout_rewind(&mut w, 400_000, 10_000, 5_000);
        assert_eq!(w.bounded, 2);
        assert_eq!(w.bounds(), None);
    }
}
