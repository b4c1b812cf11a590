//! Counters that wrap: a reading of a clock's low bits taken back to the
//! whole value nearest a reference (ERSPAN III's 32-bit timestamps, a
//! sniffer's 48-bit MAC clock).

/// The value congruent to `low` modulo `span` nearest `reference`.
pub(super) fn nearest(reference: u128, low: u128, span: u128) -> u128 {
    let base = reference - reference % span + low;
    [base.checked_sub(span), Some(base), Some(base + span)]
        .into_iter()
        .flatten()
        .min_by_key(|v| v.abs_diff(reference))
        .unwrap_or(base)
}
