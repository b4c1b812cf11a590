//! `timeline.parquet`'s columns (docs/tables.md): one row per flow and time
//! bin with traffic. Rows come often (the live bench's 16 busy flows fill a
//! 100 µs bin every ~3 frames), so they are kept as they come, one copy of
//! the row each, and become the columns' arrays once per batch: no Arrow
//! builder per column and row, and no validity bitmap (no value is null).
//! The file is the one the builders made: the same schema, and every
//! column's values (types as [`super::format`] says: `u64` as `Int64`).
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, TimestampMicrosecondArray};

use super::format::micros;
use super::{ColumnEncoding, Columns};
use crate::analyze::TimelineRow;

/// How `timeline.parquet` is encoded (docs/tables.md, "Parquet encoding"):
/// `DELTA_BINARY_PACKED` where a dictionary costs more to build than it
/// saves. The bin's start and width change rarely from row to row (deltas
/// of 0 take no bits), `flow_id`s of a bin are close together, and
/// `retrans_packets`, `ce` and `cnps` are small counts, mostly 0; interning
/// each value into a dictionary was most of a row's encoding cost. The
/// other columns keep their dictionaries (few distinct values, far apart).
const TIMELINE_ENCODING: ColumnEncoding = ColumnEncoding {
    delta: &[
        "flow_id",
        "bin_start_ns",
        "bin_start",
        "bin_ns",
        "retrans_packets",
        "ce",
        "cnps",
    ],
    ..ColumnEncoding::DEFAULT
};

/// The rows of the batch being filled.
#[derive(Default)]
pub struct TimelineColumns {
    rows: Vec<TimelineRow>,
}

impl TimelineColumns {
    /// One `Int64` column: `value` of every buffered row.
    fn ints(&self, value: impl Fn(&TimelineRow) -> i64) -> ArrayRef {
        Arc::new(Int64Array::from_iter_values(self.rows.iter().map(value)))
    }

    fn floats(&self, value: impl Fn(&TimelineRow) -> f64) -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(self.rows.iter().map(value)))
    }
}

impl Columns for TimelineColumns {
    type Row<'a> = TimelineRow;
    const ENCODING: ColumnEncoding = TIMELINE_ENCODING;

    #[inline]
    fn append(&mut self, row: &TimelineRow) {
        self.rows.push(row.clone());
    }

    fn len(&self) -> usize {
        self.rows.len()
    }

    fn finish(&mut self) -> Vec<(&'static str, ArrayRef)> {
        let bin_start = TimestampMicrosecondArray::from_iter_values(
            self.rows.iter().map(|r| micros(r.bin_start_ns)),
        )
        .with_timezone("UTC");
        let columns: Vec<(&'static str, ArrayRef)> = vec![
            ("flow_id", self.ints(|r| i64::from(r.flow_id))),
            ("bin_start_ns", self.ints(|r| r.bin_start_ns as i64)),
            ("bin_start", Arc::new(bin_start)),
            ("bin_ns", self.ints(|r| r.bin_ns as i64)),
            ("packets", self.ints(|r| r.packets as i64)),
            ("bytes", self.ints(|r| r.bytes as i64)),
            ("retrans_packets", self.ints(|r| r.retrans_packets as i64)),
            ("ce", self.ints(|r| r.ce as i64)),
            ("cnps", self.ints(|r| r.cnps as i64)),
            ("gbps", self.floats(|r| r.gbps)),
            ("goodput_gbps", self.floats(|r| r.goodput_gbps)),
            ("paused_ns", self.ints(|r| r.paused_ns as i64)),
        ];
        // The vector keeps its room for the next batch.
        self.rows.clear();
        columns
    }
}
