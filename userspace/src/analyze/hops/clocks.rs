//! Clock offsets of tap pairs ([`super`]; `docs/analysis.md`, "Clock
//! offsets"): the symmetric-delay estimate from traffic both ways.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Direction, Pair, PairKey};
use crate::analyze::hash::FastMap;

/// How a tap pair's clock offset was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OffsetSource {
    /// From traffic matched in both directions, which needed it (a raw
    /// delay below 0).
    Estimated,
    /// Traffic both ways, every raw delay at least 0: the clocks agree
    /// within the uncertainty, and no correction is made.
    Agree,
    /// `--clock-offset`.
    Imposed,
    /// Traffic in one direction only: taken as 0 (one clock).
    Assumed,
}

/// One tap pair's clock offset (`summary.json`'s `clock_offsets`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClockOffset {
    #[serde(rename = "tap_a_index")]
    pub tap_a: u16,
    #[serde(rename = "tap_b_index")]
    pub tap_b: u16,
    #[serde(rename = "tap_a")]
    pub tap_a_name: String,
    #[serde(rename = "tap_b")]
    pub tap_b_name: String,
    /// Tap b's clock minus tap a's, as applied to the delays.
    pub offset_ns: i64,
    /// The symmetric-delay estimate (null without traffic both ways).
    pub estimate_ns: Option<i64>,
    /// Half the sum of the two directions' shortest corrected delays: the
    /// offset is exact up to this when the paths are symmetric.
    pub uncertainty_ns: Option<i64>,
    pub source: OffsetSource,
    /// Shortest raw delays a → b and b → a (null without traffic that way).
    pub min_delay_ab_ns: Option<i64>,
    pub min_delay_ba_ns: Option<i64>,
    pub matched: u64,
}

/// The symmetric-delay estimate per tap pair: flows from the lower to the
/// higher IP address one way, the others the other way; `d_ab` the
/// shortest raw delay of the direction seen later at b, `d_ba` the other's;
/// offset `(d_ab − d_ba) / 2`, uncertainty `(d_ab + d_ba) / 2`. Applied
/// only when a raw delay is below 0: otherwise the clocks agree as far as
/// the traffic can tell (one clock, or synchronised ones), and a path that
/// is not symmetric (big frames one way, small ACKs back) would only skew
/// exact delays.
pub(super) fn offsets(
    pairs: &FastMap<PairKey, Pair>,
    imposed: &BTreeMap<u16, i64>,
) -> Vec<ClockOffset> {
    // Per tap pair and direction: (min, max, n) of t_b − t_a.
    let mut dirs: BTreeMap<(u16, u16), [Direction; 2]> = BTreeMap::new();
    for (&(flow, a, b), p) in pairs.iter().filter(|(_, p)| p.delays.n > 0) {
        let s = &p.delays;
        let d = usize::from(flow.0 > flow.1);
        let slot = &mut dirs.entry((a, b)).or_default()[d];
        *slot = Some(match *slot {
            None => (s.min, s.max, p.matched),
            Some((lo, hi, n)) => (lo.min(s.min), hi.max(s.max), n + p.matched),
        });
    }
    let mut out = Vec::new();
    for ((a, b), [x, y]) in dirs {
        let matched = x.map_or(0, |v| v.2) + y.map_or(0, |v| v.2);
        // The direction a → b has the larger delays.
        let (ab, ba) = match (x, y) {
            (Some(x), Some(y)) if x.0 >= y.0 => (Some(x), Some(y)),
            (Some(x), Some(y)) => (Some(y), Some(x)),
            (Some(v), None) | (None, Some(v)) if v.0 >= 0 => (Some(v), None),
            (Some(v), None) | (None, Some(v)) => (None, Some(v)),
            (None, None) => continue,
        };
        let d_ab = ab.map(|v| v.0);
        let d_ba = ba.map(|v| -v.1);
        let mut c = ClockOffset {
            tap_a: a,
            tap_b: b,
            tap_a_name: String::new(),
            tap_b_name: String::new(),
            offset_ns: 0,
            estimate_ns: None,
            uncertainty_ns: None,
            source: OffsetSource::Assumed,
            min_delay_ab_ns: d_ab,
            min_delay_ba_ns: d_ba,
            matched,
        };
        if let (Some(ab), Some(ba)) = (d_ab, d_ba) {
            let estimate = ab.saturating_sub(ba).div_euclid(2);
            c.estimate_ns = Some(estimate);
            c.uncertainty_ns = Some(ab.saturating_add(ba).div_euclid(2));
            if ab < 0 || ba < 0 {
                c.offset_ns = estimate;
                c.source = OffsetSource::Estimated;
            } else {
                c.source = OffsetSource::Agree;
            }
        }
        if imposed.contains_key(&a) || imposed.contains_key(&b) {
            let at = |t| imposed.get(&t).copied().unwrap_or(0);
            // Saturating: the library takes any i64 (the CLI at most 1e9 s).
            c.offset_ns = at(b).saturating_sub(at(a));
            c.source = OffsetSource::Imposed;
        }
        out.push(c);
    }
    out
}
