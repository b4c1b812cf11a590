//! The trim rule both transports judge from the wire (docs/analysis.md,
//! "UET: spraying and trimming" and "RoCE: trimmed frames"): a switch that
//! would drop a packet cuts its payload, keeps the headers and re-marks
//! its DSCP, so a trimmed packet is shorter than a whole one of its flow
//! and carries another DSCP than that one's.

/// Whether a packet of `len` bytes with `dscp` is cut and re-marked
/// against a whole packet of its flow (`whole_len` bytes with
/// `whole_dscp`): shorter, and another DSCP. Either alone is not a trim: a
/// message's short last packet keeps the data DSCP, a remarking policy
/// keeps the length.
pub fn cut_and_remarked(dscp: u8, len: u32, whole_dscp: u8, whole_len: u32) -> bool {
    dscp != whole_dscp && len < whole_len
}
