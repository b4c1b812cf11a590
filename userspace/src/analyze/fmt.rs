//! The one duration format the events' `detail` (events.parquet) prints
//! with, until those details are typed; everything else a person reads is
//! formatted in `crate::render::fmt`, which re-exports these.

use super::rows::PauseEnd;

/// A value scaled to the unit its size calls for: ns below 1 µs, µs below
/// 1 ms, ms below 1 s, s above, with `decimals[i]` decimals in unit `i`
/// (a value that rounds up to 1000 of a unit moves to the next one).
pub(crate) fn scaled(ns: u64, decimals: [usize; 4]) -> String {
    const UNITS: [(&str, f64); 4] = [("ns", 1.0), ("µs", 1e3), ("ms", 1e6), ("s", 1e9)];
    let x = ns as f64;
    let mut i = UNITS
        .iter()
        .rposition(|&(_, scale)| x >= scale)
        .unwrap_or(0);
    // 999.96 µs is 1.00 ms, not "1000.0 µs".
    if i < 3 {
        let shown = format!("{:.*}", decimals[i], x / UNITS[i].1);
        if shown.parse::<f64>().is_ok_and(|v| v >= 1000.0) {
            i += 1;
        }
    }
    let (unit, scale) = UNITS[i];
    format!("{:.*} {unit}", decimals[i], x / scale)
}

/// A duration for a person, in the unit its size calls for: `850 ns`,
/// `100.3 µs`, `249.81 ms`, `12.50 s`. Every duration the report, the
/// findings and the events' `detail` print goes through here.
pub fn fmt_duration(ns: u64) -> String {
    scaled(ns, [0, 1, 2, 2])
}

/// How a pause interval ended (`pfc.parquet`'s `ended_by`), in words.
pub fn fmt_ended_by(ended_by: PauseEnd) -> &'static str {
    match ended_by {
        PauseEnd::Xon => "ended by an XON",
        PauseEnd::Expiry => "ran out without a refresh",
        PauseEnd::CaptureEnd => "still paused when the capture ended",
    }
}
