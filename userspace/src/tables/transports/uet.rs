//! UET's tables (docs/tables.md): a PDC direction's `uet_` columns on
//! `flows.parquet` ([`crate::transport::uet::FLOW_COLUMNS`]), and
//! `uet_paths.parquet` ([`UetPathColumns`]).

use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_array::builder::{
    Float64Builder, Int32Builder, Int64Builder, StringBuilder, TimestampMicrosecondBuilder,
};

use super::TableWriter;
use crate::Result;
use crate::addr::Ip;
use crate::analyze::Analysis;
use crate::columns;
use crate::tables::format::{AppendValue, Named, WithRows, micros};
use crate::transport::uet;
use crate::transport::uet::paths::PathRow;

/// `uet_paths.parquet`'s name.
pub const PATHS: &str = "uet_paths";

/// One builder per [`uet::FLOW_COLUMNS`] entry, in its order.
pub(super) struct FlowColumns(Vec<Builder>);

enum Builder {
    Count(Int64Builder),
    Us(Float64Builder),
}

impl FlowColumns {
    pub(super) fn with_rows(rows: usize) -> Self {
        let builder = |c: &uet::FlowColumn| match c.value {
            uet::FlowValue::Count(_) => Builder::Count(WithRows::with_rows(rows)),
            uet::FlowValue::Us(_) => Builder::Us(WithRows::with_rows(rows)),
        };
        FlowColumns(uet::FLOW_COLUMNS.iter().map(builder).collect())
    }

    /// A row's values: a PDC direction's, or none (a row not UET's).
    pub(super) fn append(&mut self, values: Option<&uet::PdcValues>) {
        for (c, b) in uet::FLOW_COLUMNS.iter().zip(&mut self.0) {
            match (c.value, b) {
                (uet::FlowValue::Count(f), Builder::Count(b)) => {
                    b.append_value_opt(values.and_then(f))
                }
                (uet::FlowValue::Us(f), Builder::Us(b)) => b.append_value_opt(values.and_then(f)),
                // Built from the same entries: never mismatched.
                _ => {}
            }
        }
    }

    /// The columns built, each named, after `columns`.
    pub(super) fn finish(self, columns: &mut Vec<(&'static str, ArrayRef)>) {
        for (c, b) in uet::FLOW_COLUMNS.iter().zip(self.0) {
            let array: ArrayRef = match b {
                Builder::Count(mut b) => Arc::new(b.finish()),
                Builder::Us(mut b) => Arc::new(b.finish()),
            };
            columns.push((c.name, array));
        }
    }
}

columns! {
    /// One row per tap, UET PDC direction and entropy value: its requests
    /// (docs/tables.md, `uet_paths.parquet`).
    pub struct UetPathColumns for Named<'a, PathRow> {
        iface: StringBuilder = |n| Some(n.iface(n.row.iface)),
        src_ip: StringBuilder = |n| n.row.key.map(|k| Ip(k.src_ip)),
        dst_ip: StringBuilder = |n| n.row.key.map(|k| Ip(k.dst_ip)),
        spdcid: Int32Builder = |n| n.row.key.map(|k| k.spdcid),
        dpdcid: Int32Builder = |n| n.row.dpdcid,
        entropy: Int32Builder = |n| n.row.entropy,
        pdc_entropies: Int64Builder = |n| n.row.key.map(|_| n.row.pdc_entropies),
        first_ts_ns: Int64Builder = |n| Some(n.row.first_ts_ns as i64),
        last_ts_ns: Int64Builder = |n| Some(n.row.last_ts_ns as i64),
        first_ts: TimestampMicrosecondBuilder = |n| Some(micros(n.row.first_ts_ns)),
        last_ts: TimestampMicrosecondBuilder = |n| Some(micros(n.row.last_ts_ns)),
        packets: Int64Builder = |n| Some(n.row.counts.packets),
        bytes: Int64Builder = |n| Some(n.row.counts.bytes),
        payload_bytes: Int64Builder = |n| Some(n.row.counts.payload_bytes),
        retrans_packets: Int64Builder = |n| Some(n.row.counts.retransmissions),
        trimmed: Int64Builder = |n| Some(n.row.counts.trimmed),
        late_packets: Int64Builder = |n| Some(n.row.counts.late),
        late_max_psns: Int64Builder = |n| Some(n.row.counts.late_max_psns),
        late_max_us: Float64Builder = |n| Some(n.row.counts.late_max_ns as f64 / 1e3),
        late_mean_us: Float64Builder = |n| Some(n.row.counts.mean_late_ns() / 1e3),
    }
}

/// Writes `uet_paths` from `analysis`.
pub(super) fn paths(
    w: &mut impl TableWriter,
    analysis: &Analysis,
    ifaces: &[String],
) -> Result<()> {
    let paths = analysis.transport_tables.uet_paths.iter();
    w.table::<UetPathColumns>(
        PATHS,
        paths.map(|row| (row.first_ts_ns, Named { row, ifaces })),
    )
}
