//! Rewinds and what they record: trigger, depth, idle and pause cover, and the
//! timeout rewinds awaiting the evidence that tells a ghost from a loss
//! (`docs/analysis.md`, *Rewinds*, *Ghost retransmissions*, *Spurious
//! retransmissions*).

use super::events::{Event, EventDetail, EventKind, PausedIdle, RewindDetail};
use super::livelock::Trigger;
use super::nics;
use super::pfc::Cover;
use super::responses::PendingNak;
use super::{Analyzer, Sink};

/// Shortest idle time that can make a stall without a rewind.
pub(super) const STALL_MIN_NS: u64 = 10_000;

/// A timeout rewind awaiting the evidence that tells delay from loss.
#[derive(Clone, Copy, Debug)]
pub(super) struct TimeoutRewind {
    pub(super) ts: u64,
    pub(super) psn: u32,
    /// Already ACKed when resent.
    pub(super) spurious: bool,
    /// The idle time before it overlapped a pause of the flow's priority on
    /// its tap.
    pub(super) cover: Option<Cover>,
    /// The rewound PSN was never seen before: lost upstream, not delayed.
    pub(super) lost: bool,
    /// First ACK covering the rewound PSN after the rewind.
    pub(super) acked_at: Option<u64>,
}

/// Most timeout rewinds awaiting evidence per flow; the oldest is decided
/// with what is known when a newer one needs room.
pub(super) const MAX_TIMEOUTS_PENDING: usize = 64;

/// What a rewind starting at a packet records beside its PSNs: the idle
/// time before it and the pause that covered it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct RewindContext {
    pub(super) idle: u64,
    pub(super) paused: u64,
    pub(super) cover: Option<Cover>,
}

/// What a rewind records: what the sequencing judged of it, and the idle
/// time, pause and NAK before it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Rewind {
    pub(super) went: crate::transport::sequencing::Rewind,
    pub(super) context: RewindContext,
    pub(super) nak: Option<PendingNak>,
}

/// A request flow's rewinds: counts, the note a finding quotes, the timeout
/// rewinds awaiting evidence, the livelock run. A flow has one from its
/// first rewind on; a flow that never rewinds
/// carries none (docs/analysis.md, "Memory").
#[derive(Clone, Debug)]
pub(crate) struct RewindHistory {
    pub rewinds: u64,
    pub rewinds_nak: u64,
    pub rewinds_rnr: u64,
    pub rewinds_timeout: u64,
    /// Of the NAK rewinds, those a NAK naming a trimmed frame caused (docs/analysis.md, "RoCE: trimmed frames").
    pub rewinds_trim: u64,
    pub max_depth: u32,
    /// Timeout rewinds whose idle time overlapped a pause.
    pub timeout_rewinds_paused: u64,
    pub timeout_idle_min_ns: u64,
    pub timeout_idle_max_ns: u64,
    pub note: Option<RewindNote>,
    /// At most [`MAX_TIMEOUTS_PENDING`].
    pub(super) timeouts: Vec<TimeoutRewind>,
    pub rewinds_timeout_ghost: u64,
    /// Timeout rewinds of PSNs the tap had seen and nothing showed delayed.
    pub rewinds_timeout_unexplained: u64,
    /// Rewinds to the same PSN without ACK progress.
    pub livelock: super::livelock::Livelock,
    /// What its timeout rewinds measured of the NIC's timer.
    pub waits: super::rto::Waits,
}

impl Default for RewindHistory {
    fn default() -> Self {
        RewindHistory {
            rewinds: 0,
            rewinds_nak: 0,
            rewinds_rnr: 0,
            rewinds_timeout: 0,
            rewinds_trim: 0,
            max_depth: 0,
            timeout_rewinds_paused: 0,
            timeout_idle_min_ns: u64::MAX,
            timeout_idle_max_ns: 0,
            note: None,
            timeouts: Vec::new(),
            rewinds_timeout_ghost: 0,
            rewinds_timeout_unexplained: 0,
            livelock: Default::default(),
            waits: Default::default(),
        }
    }
}

impl RewindHistory {
    /// A flow's history from its first rewind, after ACKs up to `acked`
    /// (its NIC timer's: every ACK it had seen before).
    pub(super) fn after_acks(acked: Option<u32>) -> Self {
        RewindHistory {
            livelock: super::livelock::Livelock::after_acks(acked),
            ..RewindHistory::default()
        }
    }
}

/// What a flow with no rewind history reads.
pub(super) static NO_REWINDS: std::sync::LazyLock<RewindHistory> =
    std::sync::LazyLock::new(RewindHistory::default);

/// The rewind a finding quotes for a flow.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RewindNote {
    pub ts: u64,
    pub psn: u32,
    pub depth: u32,
    pub trigger: Trigger,
    pub idle_ns: u64,
    /// Of the `depth` rewound PSNs, how many were already ACKed.
    pub acked: u32,
    /// Pause time within the idle window.
    pub paused_ns: u64,
    pub cover: Option<Cover>,
}

impl RewindNote {
    pub(super) fn rank(&self) -> (bool, bool, u32, std::cmp::Reverse<u64>) {
        (
            self.trigger == Trigger::Timeout && self.paused_ns > 0,
            self.trigger == Trigger::Timeout,
            self.depth,
            std::cmp::Reverse(self.ts),
        )
    }
}

/// Whether an idle time of `idle` ns starting at `from`, of which `paused` ns
/// were paused (`cover` the pause that covered the most), froze the flow:
/// most of it paused, or a pause of the flow's priority began right as the
/// flow went quiet (it was active until then) and lasted a stall's length.
pub(super) fn froze(idle: u64, paused: u64, cover: Option<Cover>, from: u64) -> bool {
    idle >= STALL_MIN_NS
        && paused > 0
        && (paused * 2 >= idle
            || (paused >= STALL_MIN_NS
                && cover.is_some_and(|c| c.start_ns <= from.saturating_add(STALL_MIN_NS))))
}

impl Analyzer {
    /// A Go-Back-N rewind: counted, noted, and an event.
    pub(super) fn rewind(
        &mut self,
        i: usize,
        iface: u16,
        now: u64,
        r: Rewind,
        sink: &mut impl Sink,
    ) {
        let Rewind { went, context, nak } = r;
        let (q, next, depth, acked_n, lost) =
            (went.psn, went.next, went.depth, went.acked, went.lost);
        let RewindContext {
            idle,
            paused,
            cover,
        } = context;
        let trigger = match nak {
            Some(n) if n.rnr() => Trigger::Rnr,
            Some(_) => Trigger::Nak,
            None => Trigger::Timeout,
        };
        let f = &mut self.flows[i];
        let acked = f.highest_acked();
        let timer = &mut f.sender.get_or_insert_with(Box::default).rto;
        let h = f
            .rare
            .get_or_insert_with(Box::default)
            .rewind
            .get_or_insert_with(|| Box::new(RewindHistory::after_acks(acked)));
        let wait = if matches!(trigger, Trigger::Nak | Trigger::Rnr) {
            None
        } else {
            timer.timeout_rewind(&mut h.waits, now, idle, paused)
        };
        h.rewinds += 1;
        h.rewinds_trim += u64::from(matches!(trigger, Trigger::Nak) && nak.is_some_and(|n| n.trim));
        h.livelock.rewind(q, now, idle, trigger);
        h.max_depth = h.max_depth.max(depth);
        match trigger {
            Trigger::Nak => h.rewinds_nak += 1,
            Trigger::Rnr => h.rewinds_rnr += 1,
            Trigger::Timeout => {
                h.rewinds_timeout += 1;
                h.timeout_idle_min_ns = h.timeout_idle_min_ns.min(idle);
                h.timeout_idle_max_ns = h.timeout_idle_max_ns.max(idle);
                if paused > 0 {
                    h.timeout_rewinds_paused += 1;
                }
                if let Some(wait) = wait {
                    let nic = (f.src_mac, f.src_ip);
                    self.nics
                        .sample(nic, iface, nics::Latency::TimeoutRetrans, wait);
                }
                if h.timeouts.len() >= MAX_TIMEOUTS_PENDING {
                    let t = h.timeouts.remove(0);
                    self.judge_timeout(i, t);
                }
                self.flows[i].rewind_mut().timeouts.push(TimeoutRewind {
                    ts: now,
                    psn: q,
                    spurious: acked_n > 0,
                    cover: cover.filter(|_| paused > 0),
                    lost,
                    acked_at: None,
                });
            }
        }
        let f = &mut self.flows[i];
        let note = RewindNote {
            ts: now,
            psn: q,
            depth,
            trigger,
            idle_ns: idle,
            acked: acked_n,
            paused_ns: paused,
            cover,
        };
        let h = f.rewind_mut();
        if h.note.is_none_or(|n| note.rank() > n.rank()) {
            h.note = Some(note);
        }
        let detail = RewindDetail {
            next,
            psn: q,
            depth,
            trigger,
            nak_before_ns: nak.map(|n| now.saturating_sub(n.ts)),
            idle_ns: idle,
            acked: acked_n,
            lost_before_tap: lost,
            paused: cover.filter(|_| paused > 0).map(|c| PausedIdle {
                priority: c.priority,
                paused_ns: paused,
                src_mac: c.src_mac,
                start_ns: c.start_ns,
            }),
        };
        sink.event(&Event {
            ts_ns: now,
            iface,
            flow_id: Some(f.id),
            kind: EventKind::Rewind,
            psn: Some(q),
            depth: Some(depth),
            trigger: Some(trigger),
            idle_us: Some(idle as f64 / 1000.0),
            detail: EventDetail::Rewind(detail),
        });
    }

    /// A timeout rewind decided: delayed (a ghost: already ACKed, ACKed
    /// sooner after the resend than a round trip allows, or paused while
    /// idle) or not.
    pub(super) fn judge_timeout(&mut self, i: usize, t: TimeoutRewind) {
        let f = &mut self.flows[i];
        let acked_late = match (t.acked_at, f.min_rtt_ns()) {
            (Some(at), Some(rtt)) => at.saturating_sub(t.ts) < rtt,
            _ => false,
        };
        let ghost = !t.lost && (t.spurious || acked_late || t.cover.is_some());
        if ghost {
            f.rewind_mut().rewinds_timeout_ghost += 1;
            if let Some(c) = t.cover {
                self.ghost_covers
                    .insert((f.iface, c.priority, c.src_mac, c.start_ns));
            }
        } else if !t.lost {
            f.rewind_mut().rewinds_timeout_unexplained += 1;
        }
    }
}
