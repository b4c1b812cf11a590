//! The summary's serialisation and the printed values.

use super::*;

#[test]
fn summary_serializes() {
    let r = run(&[req(0, 1), pfc3(US, 10)]);
    let json = serde_json::to_value(&r.a.summary).unwrap();
    assert_eq!(json["pfc"][0]["priority"], 3);
    assert_eq!(json["pfc"][0]["frames"], 1);
    assert_eq!(json["frames"]["pfc"], 1);
    assert!(json["findings"].is_array());
}

#[test]
fn utc_and_offsets_print_readably() {
    assert_eq!(crate::render::fmt_utc(0), "1970-01-01T00:00:00.000000Z");
    assert_eq!(
        crate::render::fmt_utc(1_767_225_600_000_000_836),
        "2026-01-01T00:00:00.000000Z"
    );
    assert_eq!(
        crate::render::fmt_utc(951_782_400_123_456_789),
        "2000-02-29T00:00:00.123456Z"
    );
    // The last nanosecond a u64 holds: microseconds cut, not rounded.
    assert_eq!(
        crate::render::fmt_utc(u64::MAX),
        "2554-07-21T23:34:33.709551Z"
    );
    assert_eq!(crate::render::fmt_offset(700_525), "t+700.5 µs");
    assert_eq!(crate::render::fmt_offset(124_567_891), "t+124.568 ms");
    assert_eq!(crate::render::fmt_offset(12_345_678_901), "t+12.345679 s");
}

/// One formatter for every duration: the unit its size calls for, so a
/// 250 ms pause never prints as "249808.0 µs"; counts take their plural.
#[test]
fn durations_counts_and_rates_print_in_human_units() {
    use crate::render::{fmt_count, fmt_duration, fmt_ended_by, fmt_gbps};
    assert_eq!(fmt_duration(850), "850 ns");
    assert_eq!(fmt_duration(100_300), "100.3 µs");
    assert_eq!(fmt_duration(249_808_000), "249.81 ms");
    assert_eq!(fmt_duration(999_960), "1.00 ms");
    assert_eq!(fmt_duration(12_500_000_000), "12.50 s");
    assert_eq!(fmt_count(1u64, "flow"), "1 flow");
    assert_eq!(fmt_count(2u64, "flow"), "2 flows");
    assert_eq!(fmt_count(1u64, "CNP"), "1 CNP");
    assert_eq!(fmt_count(0u64, "NAK"), "0 NAKs");
    assert_eq!(fmt_count(3u64, "mirror copy"), "3 mirror copies");
    assert_eq!(fmt_gbps(119.191), "119.19 Gb/s");
    assert_eq!(fmt_gbps(0.22), "220.0 Mb/s");
    assert_eq!(
        fmt_ended_by(crate::analyze::PauseEnd::CaptureEnd),
        "still paused when the capture ended"
    );
}
