//! From the matcher's tap pairs and tallies to `hops.parquet`'s rows
//! (docs/tables.md): which tap of a pair is upstream, the delays corrected
//! for the pair's clock offset, what reached the downstream tap, and whether
//! the two taps are adjacent on the flow's path.
use serde::Serialize;

use super::clocks::ClockOffset;
use super::{NetFlow, Pair, PairKey};
use crate::analyze::hash::FastMap;

/// The hops of every flow between two taps, sorted by (upstream tap,
/// downstream tap, flow). `counts`: per flow, (taps that saw, taps that
/// were recording, transmissions) from the tallies; `flow_id`: the flow id
/// of a flow at a tap.
pub(super) fn hop_rows(
    pairs: &FastMap<PairKey, Pair>,
    counts: &FastMap<NetFlow, Vec<(u64, u64, u64)>>,
    clocks: &[ClockOffset],
    flow_id: impl Fn(u16, NetFlow) -> Option<u32>,
) -> Vec<HopRow> {
    let offset = |a: u16, b: u16| {
        clocks
            .iter()
            .find(|c| c.tap_a == a && c.tap_b == b)
            .map_or(0, |c| c.offset_ns)
    };
    let mut hops = Vec::new();
    for (&(flow, a, b), p) in pairs {
        let s = &p.delays;
        let off = offset(a, b);
        let forward = if s.n > 0 {
            s.quantile(0.5).saturating_sub(off) >= 0
        } else {
            p.a_first * 2 >= p.matched
        };
        let (up, down) = if forward { (a, b) } else { (b, a) };
        let delays = (s.n > 0).then(|| {
            if forward {
                (
                    s.min.saturating_sub(off),
                    s.quantile(0.5).saturating_sub(off),
                    s.quantile(0.99).saturating_sub(off),
                    s.max.saturating_sub(off),
                )
            } else {
                (
                    off.saturating_sub(s.max),
                    off.saturating_add(s.quantile_negated(0.5)),
                    off.saturating_add(s.quantile_negated(0.99)),
                    off.saturating_sub(s.min),
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
    hops
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
