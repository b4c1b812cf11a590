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
//! O(1) per rewind and per ACK, a few words per flow.

use super::findings::Input;
use serde_json::json;

use super::findings::params;
use super::{Finding, Flow, fmt_duration, psn};

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
            Some(r) if r.psn == psn => Run {
                rewinds: r.rewinds + 1,
                last_ts: now,
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

/// `retransmission-livelock`: every flow in a livelock, the longest first.
pub(crate) fn finding(x: &Input, out: &mut Vec<Finding>) {
    let mut stuck: Vec<(&Flow, Run)> = x
        .flows
        .iter()
        .filter_map(|f| Some((f, f.livelock.livelock()?)))
        .collect();
    if stuck.is_empty() {
        return;
    }
    stuck.sort_by_key(|(f, r)| (std::cmp::Reverse(r.rewinds), f.id));
    let parts: Vec<String> = stuck
        .iter()
        .map(|(f, r)| {
            format!(
                "{} went back to PSN {} {} times from {} to {} ({}) with nothing acknowledged between; its largest frame was {} bytes",
                x.describe(f),
                r.psn,
                r.rewinds,
                x.at(r.first_ts),
                x.at(r.last_ts),
                fmt_duration(r.last_ts - r.first_ts),
                f.max_frame_len
            )
        })
        .collect();
    let (f, r) = stuck[0];
    out.push(Finding {
        id: "retransmission-livelock",
        impact: x.traffic_share(&stuck.iter().map(|(f, _)| f.id).collect::<Vec<_>>()),
        severity: "critical",
        title: format!(
            "{} resend the same PSN over and over (flow {} PSN {}: {}, no progress)",
            super::fmt_count(stuck.len() as u64, "flow"),
            f.id,
            r.psn,
            super::fmt_count(r.rewinds, "rewind")
        ),
        detail: parts.join("; "),
        recommendation: "Something drops this packet every time, not by chance: compare the frame's length with the MTU of every hop on the path (a RoCE MTU of 4096 needs an Ethernet MTU above 4200 bytes on every link and VLAN interface; a smaller one silently drops full-size frames while small messages pass), then check ACLs and the switches' discard counters for the flow's UDP port; the requester will spend its retry count (retry_cnt) on it and move the QP to the error state".into(),
        flows: stuck.iter().map(|(f, _)| f.id).collect(),
        params: params([
            ("flows", json!(stuck.len())),
            ("worst_flow", json!(f.id)),
            ("psn", json!(r.psn)),
            ("rewinds", json!(r.rewinds)),
            ("first_rewind_ns", json!(r.first_ts)),
            ("last_rewind_ns", json!(r.last_ts)),
            ("max_frame_len", json!(f.max_frame_len)),
        ]),
        wireshark: None,
    });
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
