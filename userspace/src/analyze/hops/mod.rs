//! Cross-tap frame matching (`docs/analysis.md`, "Cross-tap matching"):
//! the same transmission seen at several taps, the clock offset of each
//! tap pair, and per (flow, upstream tap, downstream tap) what reached the
//! downstream tap and how long it took (`hops.parquet`, docs/tables.md).
//!
//! A RoCEv2 frame keeps its ICRC across L3 hops, so the **key** `(source
//! and destination IP, dest QP, PSN, opcode, ICRC)` names a frame at every
//! tap. The sightings of one key, in time order, fall into **sessions**
//! (a sighting more than the match window after the key's previous one, at
//! any tap, starts a new session), and within a session into
//! **transmissions**: a tap's n-th sighting of the key belongs to the
//! highest n any tap has reached so far (a resend passes each tap after the
//! frame before it did, so the tap that sees it first opens the next
//! transmission, and a tap that missed a transmission joins the current
//! one). `sql/hops.sql` is the same definition for a dataset (window
//! functions: a running count per tap, a running maximum).
//!
//! Memory is bounded by the keys seen within one window plus one tally per
//! (flow, tap set) and one delay sketch per (flow, tap pair).

use std::collections::{BTreeMap, VecDeque};

use super::hash::FastMap;
use rocescope_common::proto::ib::QPN_MASK;
use rocescope_common::{PacketRecord, flags};
use serde::Serialize;

mod clocks;
mod sketch;
mod tally;
#[cfg(test)]
mod tests;

use clocks::offsets;
pub use clocks::{ClockOffset, OffsetSource};
pub use sketch::Sketch;
use tally::Tallies;

/// Default match window: longer than a path's one-way delay plus the clock
/// offset of hosts kept in step by NTP or PTP, shorter than a NIC's
/// retransmission timeout (4.096 µs × 2^T, T ≥ 10 in practice).
pub const DEFAULT_WINDOW_NS: u64 = 2_000_000;

/// Taps a transmission can be tallied at (bits of a mask); frames of
/// interfaces beyond are not matched.
pub const MAX_TAPS: u16 = 64;

/// `(src_ip, dst_ip, dest_qp)`: one flow, whatever tap sees it.
pub type NetFlow = ([u8; 16], [u8; 16], u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    flow: NetFlow,
    psn: u32,
    opcode: u8,
    /// Null when the frame was cut before its ICRC.
    icrc: Option<u32>,
}

/// The open transmission of a key and the key's recent sightings.
#[derive(Debug)]
struct KeyState {
    last_any: u64,
    /// The open transmission's number in the session (the highest `occ`).
    number: u32,
    /// A tap saw the key twice in the session (a resend, or identical
    /// frames such as duplicate ACKs): which record belongs to which
    /// transmission is a guess, so their delays are left out.
    ambiguous: bool,
    /// Sightings per tap in the session.
    occ: Vec<(u16, u32)>,
    /// The open transmission's sighting per tap, in time order.
    group: Vec<(u16, u64)>,
}

/// Per tap: its first and latest frame, for which transmissions it could
/// have seen.
#[derive(Clone, Copy, Debug, Default)]
struct TapRange {
    first: Option<u64>,
    last: u64,
}

/// A frame's key, tap and time.
type Sighting = (Key, u16, u64);

/// Per direction across a tap pair: (min, max, matched) of `t_b - t_a`.
pub(super) type Direction = Option<(i64, i64, u64)>;

/// One flow between taps `a < b`.
pub(super) type PairKey = (NetFlow, u16, u16);

/// The matched transmissions of one flow between taps `a < b`: signed
/// delays `t_b - t_a`, and the first and last sighting at each tap.
#[derive(Clone, Debug, Default)]
pub(super) struct Pair {
    matched: u64,
    /// Transmissions tap a recorded first (raw clocks).
    a_first: u64,
    /// Of the unambiguous ones.
    delays: Sketch,
    a: (u64, u64),
    b: (u64, u64),
}

/// The streaming matcher.
///
/// While every frame comes from one tap it only keeps the last window of
/// frames (nothing to match yet, and single-tap analysis pays no hashing);
/// the first frame of a second tap replays them into the matching.
#[derive(Debug)]
pub(crate) struct Matcher {
    window_ns: u64,
    /// The one tap seen so far and its last window of frames.
    solo: Option<(u16, VecDeque<Sighting>)>,
    keys: FastMap<Key, KeyState>,
    /// Keys by their last sighting, for expiry.
    order: VecDeque<(Key, u64)>,
    watermark: u64,
    taps: Vec<TapRange>,
    tallies: Tallies,
    pairs: FastMap<PairKey, Pair>,
    /// Frames that came more than a window after a later frame: not matched.
    pub late: u64,
    /// Keys open at once, at most (the window's memory).
    pub peak_keys: usize,
}

impl Matcher {
    pub(crate) fn new(window_ns: u64) -> Self {
        Matcher {
            window_ns,
            solo: None,
            keys: FastMap::default(),
            order: VecDeque::new(),
            watermark: 0,
            taps: Vec::new(),
            tallies: Tallies::default(),
            pairs: FastMap::default(),
            late: 0,
            peak_keys: 0,
        }
    }

    /// One RoCE BTH frame (not a mirror copy), in time order.
    pub(crate) fn push(&mut self, rec: &PacketRecord) {
        if rec.iface >= MAX_TAPS {
            return;
        }
        let key = Key {
            flow: (rec.src_ip, rec.dst_ip, rec.dest_qp & QPN_MASK),
            psn: rec.psn,
            opcode: rec.opcode,
            icrc: rec.has(flags::ICRC_CHECKED).then_some(rec.icrc),
        };
        let (now, iface) = (rec.ts_ns, rec.iface);
        match &mut self.solo {
            None if self.taps.is_empty() => self.solo = Some((iface, VecDeque::new())),
            Some((tap, recent)) if *tap == iface => {
                while recent
                    .front()
                    .is_some_and(|f| now.saturating_sub(f.2) > self.window_ns)
                {
                    recent.pop_front();
                }
                recent.push_back((key, iface, now));
                return;
            }
            Some(_) => {
                if let Some((_, recent)) = self.solo.take() {
                    for (k, i, t) in recent {
                        self.sighting(k, i, t);
                    }
                }
            }
            None => {}
        }
        if let Some((_, recent)) = &mut self.solo {
            recent.push_back((key, iface, now));
            return;
        }
        self.sighting(key, iface, now);
    }

    fn sighting(&mut self, key: Key, iface: u16, now: u64) {
        if now.saturating_add(self.window_ns) < self.watermark {
            self.late += 1;
            return;
        }
        let i = usize::from(iface);
        if self.taps.len() <= i {
            self.taps.resize(i + 1, TapRange::default());
        }
        let tap = &mut self.taps[i];
        tap.first.get_or_insert(now);
        tap.last = tap.last.max(now);
        if now > self.watermark {
            self.watermark = now;
            self.expire(false);
        }
        let w = self.window_ns;
        let mut closed = None;
        match self.keys.get_mut(&key) {
            Some(st) => {
                if now.abs_diff(st.last_any) > w {
                    // A new session of the key.
                    closed = Some((std::mem::take(&mut st.group), st.ambiguous));
                    st.occ.clear();
                    st.number = 0;
                    st.ambiguous = false;
                }
                let n = match st.occ.iter_mut().find(|(t, _)| *t == iface) {
                    Some(o) => {
                        o.1 += 1;
                        o.1
                    }
                    None => {
                        st.occ.push((iface, 1));
                        1
                    }
                };
                st.ambiguous |= n > 1;
                if n > st.number {
                    // This tap's n-th sighting: the n-th transmission (the
                    // earlier ones passed it already).
                    if st.number > 0 && closed.is_none() {
                        closed = Some((std::mem::take(&mut st.group), true));
                    }
                    st.number = n;
                }
                if !st.group.iter().any(|&(t, _)| t == iface) {
                    st.group.push((iface, now));
                }
                st.last_any = st.last_any.max(now);
                self.order.push_back((key, st.last_any));
            }
            None => {
                self.keys.insert(
                    key,
                    KeyState {
                        last_any: now,
                        number: 1,
                        ambiguous: false,
                        occ: vec![(iface, 1)],
                        group: vec![(iface, now)],
                    },
                );
                self.order.push_back((key, now));
                self.peak_keys = self.peak_keys.max(self.keys.len());
            }
        }
        if let Some((g, ambiguous)) = closed {
            self.close(key.flow, &g, ambiguous);
        }
    }

    /// Closes the keys last seen more than a window ago (all of them at
    /// the end).
    fn expire(&mut self, all: bool) {
        while let Some(&(k, t)) = self.order.front() {
            if !all && self.watermark.saturating_sub(t) <= self.window_ns {
                break;
            }
            self.order.pop_front();
            if self.keys.get(&k).is_some_and(|st| st.last_any == t)
                && let Some(st) = self.keys.remove(&k)
            {
                self.close(k.flow, &st.group, st.ambiguous);
            }
        }
    }

    /// Tallies a finished transmission and its delays.
    fn close(&mut self, flow: NetFlow, group: &[(u16, u64)], ambiguous: bool) {
        let Some(&(_, start)) = group.iter().min_by_key(|g| g.1) else {
            return;
        };
        let mut seen = 0u64;
        for &(t, _) in group {
            seen |= 1 << t;
        }
        self.tallies.add(flow, seen, start, &self.taps);
        for (x, &(a, ta)) in group.iter().enumerate() {
            for &(b, tb) in &group[x + 1..] {
                let ((a, ta), (b, tb)) = if a < b {
                    ((a, ta), (b, tb))
                } else {
                    ((b, tb), (a, ta))
                };
                let p = self.pairs.entry((flow, a, b)).or_default();
                if p.matched == 0 {
                    p.a = (ta, ta);
                    p.b = (tb, tb);
                }
                p.matched += 1;
                p.a_first += u64::from(ta <= tb);
                p.a = (p.a.0.min(ta), p.a.1.max(ta));
                p.b = (p.b.0.min(tb), p.b.1.max(tb));
                if !ambiguous {
                    p.delays.add(tb as i64 - ta as i64);
                }
            }
        }
    }

    /// Closes what is open and computes the tap pairs' clock offsets and
    /// the hops. `imposed`: `--clock-offset` per tap index; `flow_id`: the
    /// flow id of a flow at a tap.
    pub(crate) fn finish(
        mut self,
        imposed: &BTreeMap<u16, i64>,
        flow_id: impl Fn(u16, NetFlow) -> Option<u32>,
    ) -> Option<Matching> {
        if self.solo.is_some() || self.taps.is_empty() {
            return None;
        }
        self.expire(true);
        // The end of the capture decides the silent taps.
        let counts = std::mem::take(&mut self.tallies).finish(&self.taps);
        let clocks = offsets(&self.pairs, imposed);
        let offset = |a: u16, b: u16| {
            clocks
                .iter()
                .find(|c| c.tap_a == a && c.tap_b == b)
                .map_or(0, |c| c.offset_ns)
        };
        let mut hops = Vec::new();
        for (&(flow, a, b), p) in &self.pairs {
            let s = &p.delays;
            let off = offset(a, b);
            let forward = if s.n > 0 {
                s.quantile(0.5) - off >= 0
            } else {
                p.a_first * 2 >= p.matched
            };
            let (up, down) = if forward { (a, b) } else { (b, a) };
            let delays = (s.n > 0).then(|| {
                if forward {
                    (
                        s.min - off,
                        s.quantile(0.5) - off,
                        s.quantile(0.99) - off,
                        s.max - off,
                    )
                } else {
                    (
                        off - s.max,
                        off + s.quantile_negated(0.5),
                        off + s.quantile_negated(0.99),
                        off - s.min,
                    )
                }
            });
            let (ub, db) = (1u64 << up, 1u64 << down);
            let mut h = HopRow {
                src_ip: flow.0,
                dst_ip: flow.1,
                dest_qp: flow.2,
                up_iface: up,
                down_iface: down,
                up_flow_id: flow_id(up, flow),
                first_ts_ns: if forward { p.a.0 } else { p.b.0 },
                last_ts_ns: if forward { p.a.1 } else { p.b.1 },
                down_flow_id: flow_id(down, flow),
                delay_min_ns: delays.map(|d| d.0),
                delay_p50_ns: delays.map(|d| d.1),
                delay_p99_ns: delays.map(|d| d.2),
                delay_max_ns: delays.map(|d| d.3),
                clock_offset_ns: if forward { off } else { -off },
                ..HopRow::default()
            };
            for &(seen, live, n) in counts.get(&flow).into_iter().flatten() {
                if live & (ub | db) != ub | db {
                    continue;
                }
                match (seen & ub != 0, seen & db != 0) {
                    (true, true) => {
                        h.frames_up += n;
                        h.matched += n;
                    }
                    (true, false) => {
                        h.frames_up += n;
                        h.missing_down += n;
                    }
                    (false, true) => h.down_only += n,
                    (false, false) => {}
                }
            }
            hops.push(h);
        }
        // A tap's place on a flow's path: how many of its taps come before it.
        let mut depth: FastMap<(NetFlow, u16), u32> = FastMap::default();
        for h in &hops {
            *depth
                .entry(((h.src_ip, h.dst_ip, h.dest_qp), h.down_iface))
                .or_default() += 1;
        }
        for h in &mut hops {
            let flow = (h.src_ip, h.dst_ip, h.dest_qp);
            let at = |t| depth.get(&(flow, t)).copied().unwrap_or(0);
            h.adjacent = at(h.down_iface) == at(h.up_iface) + 1;
        }
        hops.sort_by_key(|h| (h.up_iface, h.down_iface, h.src_ip, h.dst_ip, h.dest_qp));
        Some(Matching {
            hops,
            clocks,
            late: self.late,
            window_ns: self.window_ns,
            peak_keys: self.peak_keys,
        })
    }
}

/// A row of `hops.parquet`: one flow between an upstream and a downstream
/// tap.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HopRow {
    pub src_ip: [u8; 16],
    pub dst_ip: [u8; 16],
    pub dest_qp: u32,
    pub up_iface: u16,
    pub down_iface: u16,
    pub up_flow_id: Option<u32>,
    pub down_flow_id: Option<u32>,
    /// The first and last matched frame at the upstream tap.
    pub first_ts_ns: u64,
    pub last_ts_ns: u64,
    /// Transmissions seen upstream while both taps recorded.
    pub frames_up: u64,
    pub matched: u64,
    pub missing_down: u64,
    pub down_only: u64,
    /// One-way delay of the matched frames, corrected for the clock offset:
    /// of those no tap saw twice within the session (null without any).
    pub delay_min_ns: Option<i64>,
    pub delay_p50_ns: Option<i64>,
    pub delay_p99_ns: Option<i64>,
    pub delay_max_ns: Option<i64>,
    /// The downstream tap's clock minus the upstream tap's, as corrected.
    pub clock_offset_ns: i64,
    /// No other tap of the flow lies between the two: the flow's next tap.
    pub adjacent: bool,
}

/// The outcome of the matching.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Matching {
    pub hops: Vec<HopRow>,
    pub clocks: Vec<ClockOffset>,
    /// Frames more than a window out of time order: not matched.
    pub late: u64,
    pub window_ns: u64,
    pub peak_keys: usize,
}
