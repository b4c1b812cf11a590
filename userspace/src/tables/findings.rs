//! The live tap's `findings` table (docs/tables.md, `findings`): one row
//! per finding that started, continued or ended at a report interval's end
//! (`live --report-interval`), as the `--findings` JSON lines.
use arrow_array::builder::{
    Float64Builder, Int64Builder, StringBuilder, TimestampMicrosecondBuilder,
};

use super::format::micros;
use crate::columns;
use crate::output::FindingRow;

columns! {
    pub struct FindingColumns for FindingRow {
        ts_ns: Int64Builder = |r| Some(r.ts_ns as i64),
        ts: TimestampMicrosecondBuilder = |r| Some(micros(r.ts_ns)),
        id: StringBuilder = |r| Some(r.id),
        severity: StringBuilder = |r| Some(r.severity.as_str()),
        state: StringBuilder = |r| Some(r.state.as_str()),
        reason: StringBuilder = |r| r.state.reason(),
        subject: StringBuilder = |r| r.subject.as_deref(),
        first_seen_ns: Int64Builder = |r| Some(r.first_seen_ns as i64),
        last_seen_ns: Int64Builder = |r| Some(r.last_seen_ns as i64),
        impact: Float64Builder = |r| Some(r.impact),
        title: StringBuilder = |r| Some(r.title.as_str()),
        evidence: StringBuilder = |r| Some(r.evidence.as_str()),
        params: StringBuilder = |r| Some(serde_json::to_string(&r.params).unwrap_or_default()),
    }
}
