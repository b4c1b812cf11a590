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
//!
//! Cost: every RoCE frame of a multi-tap capture is a sighting, so the
//! matcher is kept small per sighting (docs/benchmarks.md, "matcher"): a
//! flow is named by a number of its own (looked up by the analyzer's flow
//! index, not hashed per frame); a key is 16 bytes hashed in one round,
//! found through a table of 4-byte slot numbers (the key compared in its
//! slot); a key's state is one slot of two cache lines (each tap's
//! sightings in the session and in the open transmission in one entry,
//! inline up to [`keys::INLINE_TAPS`] taps: no allocation); the expiry
//! queue is a ring indexed by entry position, looked at only when the
//! watermark passes its first entry's due time; and a closed
//! transmission finds its flow's tap pairs and unchanged tallies in the
//! flow's own lists, not in maps.

use std::hash::BuildHasher;

use hashbrown::hash_table::Entry;
use std::collections::{BTreeMap, VecDeque};

use super::cache::prefetch_lines;
use super::hash::{FastMap, FastState};
use rocescope_common::proto::ib::QPN_MASK;
use rocescope_common::{PacketRecord, flags};

mod clocks;
mod feed;
mod keys;
mod rows;
mod sketch;
mod tally;
#[cfg(test)]
mod tests;

use clocks::offsets;
pub use clocks::{ClockOffset, OffsetSource};
pub(crate) use feed::Feed;
use keys::{Expiry, Key, Order, Slot};
pub use rows::{HopRow, Matching};
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

/// Per tap: its first and latest frame, for which transmissions it could
/// have seen.
#[derive(Clone, Copy, Debug, Default)]
struct TapRange {
    first: Option<u64>,
    last: u64,
}

/// A frame at the one tap of [`Matcher::solo`]: its key, whose flow is not
/// numbered yet (the flow is numbered only once a second tap is seen: a
/// single-tap capture keeps nothing per flow here), the analyzer's index of
/// its flow, the flow, and its time.
type Sighting = (Key, usize, NetFlow, u64);

/// What the matcher takes of a RoCE BTH frame: its flow, its key's fields,
/// its tap and its time (what [`Feed`] hands the matcher's thread).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seen {
    flow: NetFlow,
    ts_ns: u64,
    psn: u32,
    icrc: u32,
    has_icrc: bool,
    opcode: u8,
    iface: u16,
}

impl Seen {
    /// `None` for a frame of an interface beyond [`MAX_TAPS`]: not matched.
    fn of(rec: &PacketRecord) -> Option<Self> {
        if rec.iface >= MAX_TAPS {
            return None;
        }
        let icrc = rec.has(flags::ICRC_CHECKED);
        let roce = rec.roce();
        Some(Seen {
            flow: (rec.src_ip, rec.dst_ip, roce.dest_qp & QPN_MASK),
            ts_ns: rec.ts_ns,
            psn: roce.psn,
            icrc: if icrc { roce.icrc } else { 0 },
            has_icrc: icrc,
            opcode: roce.opcode,
            iface: rec.iface,
        })
    }
}

/// Per direction across a tap pair: (min, max, matched) of `t_b - t_a`.
pub(super) type Direction = Option<(i64, i64, u64)>;

/// One flow between taps `a < b`.
pub(super) type PairKey = (NetFlow, u16, u16);

/// The [`Pair`]s of each flow, by its [`Matcher::flows`] number: a flow
/// crosses a few taps, so its few tap pairs are found by a scan of its own
/// list, with no hashing (a map keyed by flow and taps was one hash and
/// probe per tap pair of every transmission).
#[derive(Debug, Default)]
struct FlowPairs(Vec<Vec<(u16, u16, Pair)>>);

impl FlowPairs {
    /// The pair of `flow` between taps `a < b`, made if new.
    fn get(&mut self, flow: u32, a: u16, b: u16) -> &mut Pair {
        let f = flow as usize;
        if self.0.len() <= f {
            self.0.resize_with(f + 1, Vec::new);
        }
        let list = &mut self.0[f];
        let at = match list.iter().position(|&(x, y, _)| (x, y) == (a, b)) {
            Some(at) => at,
            None => {
                list.push((a, b, Pair::default()));
                list.len() - 1
            }
        };
        &mut list[at].2
    }

    /// Pairs held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.iter().map(Vec::len).sum()
    }
}

/// Entries ahead of the first whose slot [`Matcher::expire`] prefetches.
const EXPIRY_PREFETCH: u64 = 8;

/// No [`Matcher::flows`] index yet.
const NO_FLOW: u32 = u32::MAX;

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
/// the first frame of a second tap replays them into the matching. A
/// source that can only ever have one tap (`live`) says so
/// ([`Matcher::one_tap`]) and the matcher keeps nothing at all: that
/// window was a `VecDeque` write a frame (6 % of `live`'s analyzer thread,
/// docs/benchmarks.md "livecpu2") for a replay that cannot happen.
#[derive(Debug)]
pub(crate) struct Matcher {
    window_ns: u64,
    /// The source has one tap: nothing is matched or kept.
    one_tap: bool,
    /// The one tap seen so far and its last window of frames.
    solo: Option<(u16, VecDeque<Sighting>)>,
    /// The flows matched, by the number keys name them with.
    flows: Vec<NetFlow>,
    flow_numbers: FastMap<NetFlow, u32>,
    /// Per analyzer flow index: its [`Matcher::flows`] number, or [`NO_FLOW`].
    by_flow_index: Vec<u32>,
    /// The open keys' slots, by the hash of their key (`hasher`): 4 bytes
    /// a bucket, the key read from the slot (the slot a sighting reads
    /// anyway); a closing key is found by its slot number, its key not
    /// compared.
    keys: hashbrown::HashTable<u32>,
    hasher: FastState,
    slots: Vec<Slot>,
    /// Slots of closed keys, reused first.
    free: Vec<u32>,
    /// A closing transmission's sightings (tap, time): the buffer kept.
    group: Vec<(u16, u64)>,
    /// Numbers of retired flows, reused first (one tap only: with several,
    /// the tallies hold the numbers to the end).
    free_numbers: Vec<u32>,
    /// Keys by their last sighting, for expiry.
    order: Order,
    /// The watermark past which `order`'s first entry expires (`u64::MAX`
    /// while it is empty): a frame before it does not look at `order`.
    due: u64,
    watermark: u64,
    taps: Vec<TapRange>,
    tallies: Tallies,
    pairs: FlowPairs,
    /// Frames that came more than a window after a later frame: not matched.
    pub late: u64,
    /// Keys open at once, at most (the window's memory).
    pub peak_keys: usize,
}

impl Matcher {
    pub(crate) fn new(window_ns: u64) -> Self {
        Matcher {
            window_ns,
            one_tap: false,
            solo: None,
            flows: Vec::new(),
            flow_numbers: FastMap::default(),
            by_flow_index: Vec::new(),
            keys: hashbrown::HashTable::new(),
            hasher: FastState::default(),
            slots: Vec::new(),
            free: Vec::new(),
            group: Vec::new(),
            free_numbers: Vec::new(),
            order: Order::default(),
            due: u64::MAX,
            watermark: 0,
            taps: Vec::new(),
            tallies: Tallies::default(),
            pairs: FlowPairs::default(),
            late: 0,
            peak_keys: 0,
        }
    }

    /// A matcher for a source with one tap: with nothing to match its
    /// frames against, [`Matcher::push`] keeps nothing and
    /// [`Matcher::finish`] finds no hops, as a capture whose frames all
    /// came from one tap does.
    pub(crate) fn one_tap(window_ns: u64) -> Self {
        Matcher {
            one_tap: true,
            ..Matcher::new(window_ns)
        }
    }

    /// One RoCE BTH frame (not a mirror copy), in time order; `flow_index`
    /// is the analyzer's index of its flow (one per tap and flow).
    pub(crate) fn push(&mut self, rec: &PacketRecord, flow_index: usize) {
        if !self.one_tap
            && let Some(seen) = Seen::of(rec)
        {
            self.push_seen(seen, flow_index);
        }
    }

    /// Whether frames of a second tap have come: from then on every
    /// frame is a sighting to match ([`Feed`] moves the matcher to a thread
    /// of its own).
    pub(crate) fn matching(&self) -> bool {
        self.solo.is_none() && !self.taps.is_empty()
    }

    /// [`Matcher::push`] of what it takes of the frame.
    pub(crate) fn push_seen(&mut self, seen: Seen, flow_index: usize) {
        let mut key = Key {
            flow: NO_FLOW,
            psn: seen.psn,
            icrc: seen.icrc,
            has_icrc: seen.has_icrc,
            opcode: seen.opcode,
        };
        if self.solo.is_some() || self.taps.is_empty() {
            self.push_solo(seen, key, flow_index);
            return;
        }
        key.flow = self.flow_number(flow_index, || seen.flow);
        self.sighting(key, seen.iface, seen.ts_ns);
    }

    /// [`Matcher::push`] while one tap has been seen: the frame is kept,
    /// or the second tap's first replays the kept ones (out of line: a
    /// multi-tap capture comes here until its second tap's first frame).
    #[inline(never)]
    fn push_solo(&mut self, seen: Seen, mut key: Key, flow_index: usize) {
        let flow = seen.flow;
        let (now, iface) = (seen.ts_ns, seen.iface);
        match &mut self.solo {
            None if self.taps.is_empty() => self.solo = Some((iface, VecDeque::new())),
            Some((tap, recent)) if *tap == iface => {
                while recent
                    .front()
                    .is_some_and(|f| now.saturating_sub(f.3) > self.window_ns)
                {
                    recent.pop_front();
                }
                recent.push_back((key, flow_index, flow, now));
                return;
            }
            Some(_) => {
                if let Some((tap, recent)) = self.solo.take() {
                    for (mut k, index, f, t) in recent {
                        k.flow = self.flow_number(index, || f);
                        self.sighting(k, tap, t);
                    }
                }
            }
            None => {}
        }
        if let Some((_, recent)) = &mut self.solo {
            recent.push_back((key, flow_index, flow, now));
            return;
        }
        key.flow = self.flow_number(flow_index, || flow);
        self.sighting(key, iface, now);
    }

    /// The analyzer's flow `flow_index` retired: its slot will be another
    /// flow's.
    pub(crate) fn forget(&mut self, flow_index: usize) {
        let Some(n) = self.by_flow_index.get_mut(flow_index) else {
            return;
        };
        let number = std::mem::replace(n, NO_FLOW);
        // While one tap is seen no tally names it: its number is free.
        if number != NO_FLOW && self.taps.is_empty() {
            if let Some(flow) = self.flows.get(number as usize) {
                self.flow_numbers.remove(flow);
            }
            self.free_numbers.push(number);
        }
    }

    /// The number of `flow`, the analyzer's flow `flow_index` (at some
    /// tap): hashed once per analyzer flow, then found by its index.
    fn flow_number(&mut self, flow_index: usize, flow: impl FnOnce() -> NetFlow) -> u32 {
        if let Some(&n) = self.by_flow_index.get(flow_index)
            && n != NO_FLOW
        {
            return n;
        }
        self.number_flow(flow(), flow_index)
    }

    /// [`Matcher::flow_number`] of a flow index not numbered yet.
    #[cold]
    fn number_flow(&mut self, flow: NetFlow, flow_index: usize) -> u32 {
        let n = match self.flow_numbers.get(&flow) {
            Some(&n) => n,
            None => {
                let n = match self.free_numbers.pop() {
                    Some(n) => {
                        self.flows[n as usize] = flow;
                        n
                    }
                    None => {
                        self.flows.push(flow);
                        (self.flows.len() - 1) as u32
                    }
                };
                self.flow_numbers.insert(flow, n);
                n
            }
        };
        if self.by_flow_index.len() <= flow_index {
            self.by_flow_index.resize(flow_index + 1, NO_FLOW);
        }
        self.by_flow_index[flow_index] = n;
        n
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
            if now > self.due {
                self.expire(false);
            }
        }
        let mut closed = None;
        let (slots, hasher) = (&self.slots, &self.hasher);
        let hash = hasher.hash_one(key);
        match self.keys.entry(
            hash,
            |&s| slots[s as usize].key == key,
            |&s| hasher.hash_one(slots[s as usize].key),
        ) {
            Entry::Occupied(e) => {
                let slot = *e.get();
                let s = &mut self.slots[slot as usize];
                closed = s.sight(iface, now, self.window_ns, &mut self.group);
                // The first entry with the key's final last sighting closes
                // it: a later time supersedes the entry before; the same
                // time (a frame not later than the key's last) gets an
                // entry superseded from the start, which holds expiry up
                // as any entry does.
                let superseded = now <= s.last_any;
                if !superseded {
                    s.last_any = now;
                    if let Some(before) = self.order.get_mut(s.entry) {
                        before.superseded = true;
                    }
                    s.entry = self.order.next();
                }
                let t = s.last_any;
                self.enqueue(Expiry {
                    slot,
                    superseded,
                    t,
                });
            }
            Entry::Vacant(e) => {
                let entry = self.order.next();
                let slot = match self.free.pop() {
                    Some(slot) => slot,
                    None => {
                        self.slots.push(Slot::default());
                        (self.slots.len() - 1) as u32
                    }
                };
                self.slots[slot as usize].open(key, entry, iface, now);
                e.insert(slot);
                self.enqueue(Expiry {
                    slot,
                    superseded: false,
                    t: now,
                });
                self.peak_keys = self.peak_keys.max(self.keys.len());
            }
        }
        if let Some(ambiguous) = closed {
            self.close_group(key.flow, ambiguous);
        }
    }

    /// [`close`]s the transmission held in `group`.
    #[inline]
    fn close_group(&mut self, flow: u32, ambiguous: bool) {
        close(
            &mut self.tallies,
            &mut self.pairs,
            &self.taps,
            flow,
            &self.group,
            ambiguous,
        );
    }

    /// Appends an entry to `order`.
    fn enqueue(&mut self, e: Expiry) {
        if self.order.is_empty() {
            self.due = e.t.saturating_add(self.window_ns);
        }
        self.order.push(e);
    }

    /// Closes the keys last seen more than a window ago (all of them at
    /// the end).
    fn expire(&mut self, all: bool) {
        while let Some(Expiry {
            slot,
            superseded,
            t,
        }) = self.order.front()
        {
            if !all && self.watermark.saturating_sub(t) <= self.window_ns {
                self.due = t.saturating_add(self.window_ns);
                return;
            }
            // The slot of an entry a few ahead starts loading: expiry
            // reads slots in the order of their last sightings, scattered
            // over thousands of open keys on a dense capture.
            if let Some(ahead) = self
                .order
                .slot_ahead(EXPIRY_PREFETCH)
                .and_then(|i| self.slots.get(i as usize))
            {
                prefetch_lines(ahead, std::mem::size_of::<Slot>());
            }
            self.order.pop_front();
            if superseded {
                continue;
            }
            // The key's last entry: it closes.
            let s = &mut self.slots[slot as usize];
            s.take_group(&mut self.group);
            let (key, ambiguous) = (s.key, s.ambiguous);
            let hash = self.hasher.hash_one(key);
            if let Ok(e) = self.keys.find_entry(hash, |&s| s == slot) {
                e.remove();
            }
            self.free.push(slot);
            self.close_group(key.flow, ambiguous);
        }
        self.due = u64::MAX;
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
        let by_flow = std::mem::take(&mut self.tallies).finish(&self.taps);
        let flows = &self.flows;
        let net = |n: u32| flows[n as usize];
        let pairs: FastMap<PairKey, Pair> = std::mem::take(&mut self.pairs.0)
            .into_iter()
            .zip(0u32..)
            .flat_map(|(list, n)| list.into_iter().map(move |(a, b, p)| ((n, a, b), p)))
            .map(|((n, a, b), p)| ((net(n), a, b), p))
            .collect();
        let counts: FastMap<NetFlow, Vec<(u64, u64, u64)>> =
            by_flow.into_iter().map(|(n, c)| (net(n), c)).collect();
        let clocks = offsets(&pairs, imposed);
        let hops = rows::hop_rows(&pairs, &counts, &clocks, flow_id);
        Some(Matching {
            hops,
            clocks,
            late: self.late,
            window_ns: self.window_ns,
            peak_keys: self.peak_keys,
        })
    }
}

/// Tallies a finished transmission and its delays.
fn close(
    tallies: &mut Tallies,
    pairs: &mut FlowPairs,
    taps: &[TapRange],
    flow: u32,
    group: &[(u16, u64)],
    ambiguous: bool,
) {
    let Some(&(_, start)) = group.iter().min_by_key(|g| g.1) else {
        return;
    };
    let mut seen = 0u64;
    for &(t, _) in group {
        seen |= 1 << t;
    }
    tallies.add(flow, seen, start, taps);
    for (x, &(a, ta)) in group.iter().enumerate() {
        for &(b, tb) in &group[x + 1..] {
            let ((a, ta), (b, tb)) = if a < b {
                ((a, ta), (b, tb))
            } else {
                ((b, tb), (a, ta))
            };
            let p = pairs.get(flow, a, b);
            if p.matched == 0 {
                p.a = (ta, ta);
                p.b = (tb, tb);
            }
            p.matched += 1;
            p.a_first += u64::from(ta <= tb);
            p.a = (p.a.0.min(ta), p.a.1.max(ta));
            p.b = (p.b.0.min(tb), p.b.1.max(tb));
            if !ambiguous {
                // Exact while the two are less than 2^63 ns apart, which a window is.
                p.delays.add(tb.wrapping_sub(ta) as i64);
            }
        }
    }
}
