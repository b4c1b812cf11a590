//! The truth between taps (`docs/synth-truth.md`, "hops"): per connection,
//! direction (its requests, its responses) and pair of taps that both
//! recorded its packets, what passed the upstream tap, what reached the
//! downstream one, what the network lost between them, and the one-way
//! delays, from the model's own record of every transmission (a request
//! transmission is `(flow, send_seq)`, a response one `(flow, resp_seq)`).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::fabric::Run;
use super::spec::{FrameMeta, FrameSpec};
use crate::analyze::hops::DEFAULT_WINDOW_NS;

/// Which packets of a connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// The requester's packets (first transmissions and resends).
    #[default]
    Requests,
    /// The responder's ACKs and NAKs (each sent once).
    Responses,
}

/// One connection's packets of one direction between two taps.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HopTruth {
    pub flow: usize,
    pub direction: Direction,
    pub up_tap: usize,
    pub down_tap: usize,
    pub up_iface: String,
    pub down_iface: String,
    /// Transmissions recorded at the upstream tap (of those that passed
    /// the first of the taps while both taps were recording RoCE frames:
    /// their first and last).
    pub frames_up: u64,
    /// Of them, recorded at the downstream tap too.
    pub matched: u64,
    /// Lost by a link or a switch after the upstream tap.
    pub dropped_between: u64,
    /// Passed the downstream tap, whose mirror failed to record them.
    pub down_tap_dropped: u64,
    /// Neither: still on their way when the run ended.
    pub in_flight: u64,
    /// Recorded downstream and not upstream (the upstream mirror dropped them).
    pub down_only: u64,
    /// Transmissions recorded at either tap that a tap of the capture
    /// recorded before another had recorded the transmission of the same
    /// frame before them (a ghost retransmission overtaking its original
    /// in a queue, identical ACKs in flight together): an analysis numbers
    /// such records by guess (`docs/analysis.md`, "Cross-tap matching"),
    /// so its `matched` and `missing_down` may each be off by up to this
    /// many.
    pub overtaken: u64,
    /// Of `frames_up`, resends.
    pub resent: u64,
    /// Of `matched`, those whose delays an analysis keeps: no tap recorded
    /// their frame twice within the match window ([`timed`]).
    pub timed: u64,
    /// Exact one-way delays of the timed ones (nearest-rank quantiles;
    /// below 0 when the downstream tap recorded a frame first, as a tap
    /// that records where a frame leaves a switch may, before one where
    /// the next frame enters). Null without any.
    pub delay_min_ns: Option<i64>,
    pub delay_p50_ns: Option<i64>,
    pub delay_p99_ns: Option<i64>,
    pub delay_max_ns: Option<i64>,
}

/// Nearest-rank quantile of sorted values.
fn rank(sorted: &[i64], q: f64) -> i64 {
    let r = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[r - 1]
}

/// A transmission: connection, direction, and its place in the order its
/// sender sent that direction's packets.
type Tx = (usize, Direction, u64);

fn tx_of(m: &FrameMeta) -> Option<Tx> {
    let flow = m.flow?;
    match (m.index, m.resp_seq) {
        (Some(_), _) => Some((flow, Direction::Requests, m.send_seq)),
        (None, Some(s)) => Some((flow, Direction::Responses, s)),
        (None, None) => None,
    }
}

/// What makes two records the same frame to an analysis (the same bytes
/// under the ICRC): a request packet's index (its resends are the same
/// frame); a response's PSN, syndrome and MSN (identical ACKs are).
type FrameKey = (usize, Direction, u64, u8, u32);

fn key_of(frame: &FrameSpec, m: &FrameMeta) -> Option<FrameKey> {
    let (flow, dir, _) = tx_of(m)?;
    let FrameSpec::Roce(r) = frame else {
        return None;
    };
    Some(match (dir, r.aeth) {
        (Direction::Responses, Some(a)) => (flow, dir, r.psn.into(), a.syndrome, a.msn),
        _ => (flow, dir, m.index.unwrap_or(0), 0, 0),
    })
}

/// The transmissions whose delays an analysis keeps
/// (`docs/analysis.md`, "Cross-tap matching"): the records of one frame
/// (`key_of`) at the taps `wanted` fall into sessions, a record more than
/// the default match window after the frame's previous record starting a
/// new one; a session in which a tap recorded the frame twice (a resend, a
/// repeated ACK) gives no delays.
fn timed(run: &Run, wanted: &[bool]) -> BTreeSet<Tx> {
    // Per frame: the open session's last record, records per tap, and
    // transmissions.
    type Session = (u64, BTreeMap<usize, u32>, BTreeSet<Tx>);
    let mut open: BTreeMap<FrameKey, Session> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let close = |(_, per_tap, txs): Session, out: &mut BTreeSet<Tx>| {
        if per_tap.values().all(|&n| n == 1) {
            out.extend(txs);
        }
    };
    for (f, m) in run.frames.iter().zip(&run.meta) {
        if m.copy || !wanted.get(f.tap).copied().unwrap_or(false) {
            continue;
        }
        let (Some(key), Some(tx)) = (key_of(&f.frame, m), tx_of(m)) else {
            continue;
        };
        if let Some(s) = open.get(&key)
            && f.ts_ns.saturating_sub(s.0) > DEFAULT_WINDOW_NS
            && let Some(s) = open.remove(&key)
        {
            close(s, &mut out);
        }
        let s = open.entry(key).or_default();
        s.0 = f.ts_ns;
        *s.1.entry(f.tap).or_default() += 1;
        s.2.insert(tx);
    }
    for s in open.into_values() {
        close(s, &mut out);
    }
    out
}

/// The hops of the taps `wanted` (indexed by tap).
pub fn of(run: &Run, wanted: &[bool]) -> Vec<HopTruth> {
    // Per transmission: first record per tap; its frame.
    let mut seen: BTreeMap<Tx, BTreeMap<usize, u64>> = BTreeMap::new();
    let mut frame: BTreeMap<Tx, FrameKey> = BTreeMap::new();
    let mut resends: BTreeSet<Tx> = BTreeSet::new();
    for (f, m) in run.frames.iter().zip(&run.meta) {
        let Some(tx) = tx_of(m) else {
            continue;
        };
        if m.copy || !wanted.get(f.tap).copied().unwrap_or(false) {
            continue;
        }
        if let Some(k) = key_of(&f.frame, m) {
            frame.insert(tx, k);
        }
        if m.retrans {
            resends.insert(tx);
        }
        seen.entry(tx).or_default().entry(f.tap).or_insert(f.ts_ns);
    }
    let timed = timed(run, wanted);
    // What each tap recorded of RoCE, first to last: a transmission it
    // missed counts only while it was recording (as the analyzer's).
    let mut range: BTreeMap<usize, (u64, u64)> = BTreeMap::new();
    for (f, m) in run.frames.iter().zip(&run.meta) {
        if m.copy
            || !wanted.get(f.tap).copied().unwrap_or(false)
            || !matches!(f.frame, FrameSpec::Roce(_))
        {
            continue;
        }
        let r = range.entry(f.tap).or_insert((f.ts_ns, f.ts_ns));
        r.0 = r.0.min(f.ts_ns);
        r.1 = r.1.max(f.ts_ns);
    }
    let recording = |tap: usize, t: u64| range.get(&tap).is_some_and(|r| r.0 <= t && t <= r.1);
    let lost: BTreeSet<Tx> = run
        .net_drops
        .iter()
        .filter_map(|d| tx_of(&d.meta))
        .collect();
    let mirror_dropped: BTreeSet<(Tx, usize)> = run
        .tap_drops
        .iter()
        .filter_map(|d| tx_of(&d.meta).map(|tx| (tx, d.tap)))
        .collect();
    // Which way each connection's direction crosses each pair: the way
    // most of its transmissions went (the median of t_b − t_a at least 0:
    // a first).
    let mut signed: BTreeMap<(usize, Direction, usize, usize), Vec<i64>> = BTreeMap::new();
    for (&(flow, dir, _), taps) in &seen {
        for (&a, &ta) in taps {
            for (&b, &tb) in taps.range(a + 1..) {
                signed
                    .entry((flow, dir, a, b))
                    .or_default()
                    .push(tb as i64 - ta as i64);
            }
        }
    }
    let mut out = Vec::new();
    for ((flow, dir, a, b), mut d) in signed {
        d.sort_unstable();
        let (up, down) = if rank(&d, 0.5) >= 0 { (a, b) } else { (b, a) };
        let mut h = HopTruth {
            flow,
            direction: dir,
            up_tap: up,
            down_tap: down,
            up_iface: run.taps[up].name.clone(),
            down_iface: run.taps[down].name.clone(),
            ..HopTruth::default()
        };
        let mut delays = Vec::new();
        let txs = (flow, dir, 0)..=(flow, dir, u64::MAX);
        for (&tx, taps) in seen.range(txs.clone()) {
            // A transmission one tap missed counts only if both were
            // recording when it passed the first tap.
            let start = taps.values().copied().min().unwrap_or(0);
            let both = recording(up, start) && recording(down, start);
            if taps.contains_key(&up) && (both || taps.contains_key(&down)) {
                h.resent += u64::from(resends.contains(&tx));
            }
            match (taps.get(&up), taps.get(&down)) {
                (Some(_), None) | (None, Some(_)) if !both => {}
                (Some(&tu), Some(&td)) => {
                    h.frames_up += 1;
                    h.matched += 1;
                    if timed.contains(&tx) {
                        delays.push(td as i64 - tu as i64);
                    }
                }
                (Some(_), None) => {
                    h.frames_up += 1;
                    if mirror_dropped.contains(&(tx, down)) {
                        h.down_tap_dropped += 1;
                    } else if lost.contains(&tx) {
                        h.dropped_between += 1;
                    } else {
                        h.in_flight += 1;
                    }
                }
                (None, Some(_)) => h.down_only += 1,
                (None, None) => {}
            }
        }
        // Per frame, in send order: each transmission's first and last
        // record at any tap, and whether this hop's taps recorded it.
        let mut by_frame: BTreeMap<FrameKey, Vec<(u64, u64, bool)>> = BTreeMap::new();
        for (tx, taps) in seen.range(txs) {
            if let (Some(&k), Some(first), Some(last)) =
                (frame.get(tx), taps.values().min(), taps.values().max())
            {
                let here = taps.contains_key(&up) || taps.contains_key(&down);
                by_frame.entry(k).or_default().push((*first, *last, here));
            }
        }
        for sends in by_frame.values() {
            for w in sends.windows(2) {
                let ((_, last_before, a), (first_next, _, b)) = (w[0], w[1]);
                h.overtaken += u64::from((a || b) && first_next < last_before);
            }
        }
        delays.sort_unstable();
        h.timed = delays.len() as u64;
        if let (Some(&lo), Some(&hi)) = (delays.first(), delays.last()) {
            h.delay_min_ns = Some(lo);
            h.delay_max_ns = Some(hi);
            h.delay_p50_ns = Some(rank(&delays, 0.5));
            h.delay_p99_ns = Some(rank(&delays, 0.99));
        }
        out.push(h);
    }
    out
}
