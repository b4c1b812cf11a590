//! Capture times as calendar dates (chrono, already the counters' RFC 3339
//! parser and printer: one calendar in the program).

/// Nanoseconds since the Unix epoch as ISO 8601 UTC with microseconds
/// (`2026-01-01T00:00:00.000000Z`).
pub(crate) fn fmt_utc(ns: u64) -> String {
    // Any u64 of nanoseconds (up to the year 2554) is a valid chrono time.
    let secs = (ns / 1_000_000_000) as i64;
    let sub = (ns % 1_000_000_000) as u32;
    chrono::DateTime::from_timestamp(secs, sub)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}
