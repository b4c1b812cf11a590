//! The truth between taps (`docs/synth-truth.md`, "hops"): per connection
//! and pair of taps that both recorded its request packets, what passed
//! the upstream tap, what reached the downstream one, what the network lost
//! between them, and the one-way delays, from the model's own record of
//! every transmission (a request transmission is `(flow, send_seq)`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::fabric::Run;

/// One connection's request packets between two taps.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HopTruth {
    pub flow: usize,
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
    /// Resends that passed the upstream tap before the transmission
    /// before them (same PSN) passed the downstream one (a ghost
    /// retransmission overtaking its original in the queue): the analyzer
    /// pairs such a resend with its original's downstream record, so its
    /// delays are not the model's (docs/analysis.md, "Cross-tap matching").
    pub overtaken: u64,
    /// Of `frames_up`, resends (the analyzer leaves the delays of a frame
    /// a tap saw twice within its match window out).
    pub resent: u64,
    /// Exact one-way delays of the matched ones (nearest-rank quantiles;
    /// below 0 when the downstream tap recorded a frame first, as a tap
    /// that records where a frame leaves a switch may, before one where
    /// the next frame enters).
    pub delay_min_ns: i64,
    pub delay_p50_ns: i64,
    pub delay_p99_ns: i64,
    pub delay_max_ns: i64,
}

/// Nearest-rank quantile of sorted values.
fn rank(sorted: &[i64], q: f64) -> i64 {
    let r = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[r - 1]
}

/// The hops of the taps `wanted` (indexed by tap).
pub fn of(run: &Run, wanted: &[bool]) -> Vec<HopTruth> {
    // Per transmission: first record per tap; its packet index.
    let mut seen: BTreeMap<(usize, u64), BTreeMap<usize, u64>> = BTreeMap::new();
    let mut index: BTreeMap<(usize, u64), u64> = BTreeMap::new();
    let mut resends: std::collections::BTreeSet<(usize, u64)> = Default::default();
    for (f, m) in run.frames.iter().zip(&run.meta) {
        let (Some(flow), Some(i)) = (m.flow, m.index) else {
            continue;
        };
        if m.copy || !wanted.get(f.tap).copied().unwrap_or(false) {
            continue;
        }
        index.insert((flow, m.send_seq), i);
        if m.retrans {
            resends.insert((flow, m.send_seq));
        }
        seen.entry((flow, m.send_seq))
            .or_default()
            .entry(f.tap)
            .or_insert(f.ts_ns);
    }
    // What each tap recorded of RoCE, first to last: a transmission it
    // missed counts only while it was recording (as the analyzer's).
    let mut range: BTreeMap<usize, (u64, u64)> = BTreeMap::new();
    for (f, m) in run.frames.iter().zip(&run.meta) {
        if m.copy
            || !wanted.get(f.tap).copied().unwrap_or(false)
            || !matches!(f.frame, super::spec::FrameSpec::Roce(_))
        {
            continue;
        }
        let r = range.entry(f.tap).or_insert((f.ts_ns, f.ts_ns));
        r.0 = r.0.min(f.ts_ns);
        r.1 = r.1.max(f.ts_ns);
    }
    let recording = |tap: usize, t: u64| range.get(&tap).is_some_and(|r| r.0 <= t && t <= r.1);
    let key = |m: &super::spec::FrameMeta| m.flow.map(|f| (f, m.send_seq));
    let lost: std::collections::BTreeSet<(usize, u64)> =
        run.net_drops.iter().filter_map(|d| key(&d.meta)).collect();
    let mirror_dropped: std::collections::BTreeSet<(usize, u64, usize)> = run
        .tap_drops
        .iter()
        .filter_map(|d| key(&d.meta).map(|(f, s)| (f, s, d.tap)))
        .collect();
    // Which way each connection crosses each pair: the way most of its
    // transmissions went (the median of t_b − t_a at least 0: a first).
    let mut signed: BTreeMap<(usize, usize, usize), Vec<i64>> = BTreeMap::new();
    for (&(flow, _), taps) in &seen {
        for (&a, &ta) in taps {
            for (&b, &tb) in taps.range(a + 1..) {
                signed
                    .entry((flow, a, b))
                    .or_default()
                    .push(tb as i64 - ta as i64);
            }
        }
    }
    let dir: BTreeMap<(usize, usize, usize), (usize, usize)> = signed
        .into_iter()
        .map(|((flow, a, b), mut d)| {
            d.sort_unstable();
            let way = if rank(&d, 0.5) >= 0 { (a, b) } else { (b, a) };
            ((flow, a, b), way)
        })
        .collect();
    let mut out = Vec::new();
    for (&(flow, _, _), &(up, down)) in &dir {
        let mut h = HopTruth {
            flow,
            up_tap: up,
            down_tap: down,
            up_iface: run.taps[up].name.clone(),
            down_iface: run.taps[down].name.clone(),
            ..HopTruth::default()
        };
        let mut delays = Vec::new();
        for (&(f, s), taps) in seen.range((flow, 0)..=(flow, u64::MAX)) {
            // A transmission one tap missed counts only if both were
            // recording when it passed the first tap.
            let start = taps.values().copied().min().unwrap_or(0);
            let both = recording(up, start) && recording(down, start);
            if taps.contains_key(&up) && (both || taps.contains_key(&down)) {
                h.resent += u64::from(resends.contains(&(f, s)));
            }
            match (taps.get(&up), taps.get(&down)) {
                (Some(_), None) | (None, Some(_)) if !both => {}
                (Some(&tu), Some(&td)) => {
                    h.frames_up += 1;
                    h.matched += 1;
                    delays.push(td as i64 - tu as i64);
                }
                (Some(_), None) => {
                    h.frames_up += 1;
                    if mirror_dropped.contains(&(f, s, down)) {
                        h.down_tap_dropped += 1;
                    } else if lost.contains(&(f, s)) {
                        h.dropped_between += 1;
                    } else {
                        h.in_flight += 1;
                    }
                }
                (None, Some(_)) => h.down_only += 1,
                (None, None) => {}
            }
        }
        // Transmissions of one packet in send order: up time, down time.
        // Per packet index: (up, down) time of each of its transmissions.
        type Passes = Vec<(Option<u64>, Option<u64>)>;
        let mut by_packet: BTreeMap<u64, Passes> = BTreeMap::new();
        for (&(_, s), taps) in seen.range((flow, 0)..=(flow, u64::MAX)) {
            if let Some(&i) = index.get(&(flow, s)) {
                by_packet
                    .entry(i)
                    .or_default()
                    .push((taps.get(&up).copied(), taps.get(&down).copied()));
            }
        }
        for sends in by_packet.values() {
            for w in sends.windows(2) {
                if let ((_, Some(down_before)), (Some(up_next), _)) = (w[0], w[1])
                    && up_next < down_before
                {
                    h.overtaken += 1;
                }
            }
        }
        delays.sort_unstable();
        if let (Some(&lo), Some(&hi)) = (delays.first(), delays.last()) {
            h.delay_min_ns = lo;
            h.delay_max_ns = hi;
            h.delay_p50_ns = rank(&delays, 0.5);
            h.delay_p99_ns = rank(&delays, 0.99);
        }
        out.push(h);
    }
    out
}
