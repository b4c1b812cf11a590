//! `counters.parquet`: one row per counter per snapshot.
//!
//! Columns (all nullable, signed, as the other tables: docs/tables.md,
//! "Conventions"): `ts_ns` (Int64, ns since the epoch), `ts` (its UTC
//! microsecond timestamp), `host`, `iface`, `device`, `port` (Int64),
//! `counter`, `priority` (Int16, when the name carries one), `value`
//! (Int64), `delta` (Int64, since the endpoint's previous snapshot; null
//! for the first one and after a counter reset), `rate` (Float64, delta per
//! second), `source` (`ethtool`, `rdma`, `sysfs`, `netdev`, …). Files of
//! earlier versions (unsigned `port` and `value`) still read.
use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::Path;

use arrow_array::builder::{
    Float64Builder, Int16Builder, Int64Builder, StringBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::{
    Array, ArrayRef, Int64Array, RecordBatch, StringArray, UInt32Array, UInt64Array,
};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::model::{Endpoint, Snapshot, Source, priority_of};
use crate::columns;
use crate::tables::ColumnEncoding;
use crate::tables::format::micros;
use crate::{Error, Result};

/// One row: a counter of a snapshot, with its change since the last one.
pub struct CounterRow<'a> {
    pub ts_ns: u64,
    pub endpoint: &'a Endpoint,
    pub counter: &'a str,
    pub value: u64,
    pub delta: Option<u64>,
    pub rate: Option<f64>,
    pub source: Source,
}

/// Names and endpoints repeat on every snapshot: dictionaries pay.
const ENCODING: ColumnEncoding = ColumnEncoding {
    delta: &["ts_ns"],
    ..ColumnEncoding::DEFAULT
};

columns! {
    pub struct CounterColumns for CounterRow<'a>, encoding = ENCODING {
        ts_ns: Int64Builder = |r| i64::try_from(r.ts_ns).ok(),
        ts: TimestampMicrosecondBuilder = |r| Some(micros(r.ts_ns)),
        host: StringBuilder = |r| r.endpoint.host.as_deref(),
        iface: StringBuilder = |r| r.endpoint.iface.as_deref(),
        device: StringBuilder = |r| r.endpoint.device.as_deref(),
        port: Int64Builder = |r| r.endpoint.port,
        counter: StringBuilder = |r| Some(r.counter),
        priority: Int16Builder = |r| priority_of(r.counter),
        value: Int64Builder = |r| Some(r.value),
        delta: Int64Builder = |r| r.delta,
        rate: Float64Builder = |r| r.rate,
        source: StringBuilder = |r| Some(r.source.as_str()),
    }
}

/// Parquet files start (and end) with `PAR1`.
pub fn is_parquet(path: &Path) -> Result<bool> {
    let mut magic = [0u8; 4];
    let mut f = File::open(path).map_err(|e| Error::Open {
        path: path.to_path_buf(),
        source: e,
    })?;
    Ok(f.read_exact(&mut magic).is_ok() && &magic == b"PAR1")
}

/// Reads a `counters.parquet` back into snapshots (deltas are recomputed
/// from the values).
pub fn read(path: &Path) -> Result<Vec<Snapshot>> {
    let bad = |detail: String| {
        Error::Usage(format!(
            "{}: {detail}; give a counters.parquet written by `rocescope counters collect`",
            path.display()
        ))
    };
    let file = File::open(path).map_err(|e| Error::Open {
        path: path.to_path_buf(),
        source: e,
    })?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.build())
        .map_err(|e| bad(e.to_string()))?;
    let mut snaps: HashMap<(u64, Endpoint), Snapshot> = HashMap::new();
    for batch in reader {
        let batch = batch.map_err(|e| bad(e.to_string()))?;
        let cols = Cols::of(&batch).map_err(bad)?;
        for i in 0..batch.num_rows() {
            let (Some(ts), Some(name), Some(value)) = (
                cols.ts.is_valid(i).then(|| cols.ts.value(i)),
                cols.counter.is_valid(i).then(|| cols.counter.value(i)),
                cols.value[i],
            ) else {
                continue;
            };
            let Ok(ts) = u64::try_from(ts) else { continue };
            let text = |a: &StringArray| a.is_valid(i).then(|| a.value(i).to_string());
            let endpoint = Endpoint {
                host: cols.host.and_then(text),
                iface: text(cols.iface),
                device: text(cols.device),
                port: cols.port[i].and_then(|p| u32::try_from(p).ok()),
            };
            let source =
                Source::from_name(cols.source.and_then(|a| a.is_valid(i).then(|| a.value(i))));
            snaps
                .entry((ts, endpoint.clone()))
                .or_insert_with(|| Snapshot::new(ts, endpoint))
                .set(name, value, source);
        }
    }
    let mut out: Vec<Snapshot> = snaps.into_values().collect();
    out.sort_by(|a, b| (a.ts_ns, &a.endpoint).cmp(&(b.ts_ns, &b.endpoint)));
    Ok(out)
}

struct Cols<'a> {
    ts: &'a Int64Array,
    /// Absent in a dataset's files (the `host=` directory names it).
    host: Option<&'a StringArray>,
    iface: &'a StringArray,
    device: &'a StringArray,
    port: Vec<Option<u64>>,
    counter: &'a StringArray,
    value: Vec<Option<u64>>,
    /// Optional: where each value was read.
    source: Option<&'a StringArray>,
}

impl<'a> Cols<'a> {
    fn of(batch: &'a RecordBatch) -> std::result::Result<Self, String> {
        fn col<'b, T: 'static>(
            b: &'b RecordBatch,
            name: &str,
        ) -> std::result::Result<&'b T, String> {
            b.column_by_name(name)
                .ok_or_else(|| format!("no `{name}` column"))?
                .as_any()
                .downcast_ref::<T>()
                .ok_or_else(|| format!("column `{name}` has an unexpected type"))
        }
        let ints = |name: &str| {
            batch
                .column_by_name(name)
                .ok_or_else(|| format!("no `{name}` column"))
                .and_then(|a| {
                    unsigned(a).ok_or_else(|| format!("column `{name}` has an unexpected type"))
                })
        };
        Ok(Cols {
            ts: col(batch, "ts_ns")?,
            host: col(batch, "host").ok(),
            iface: col(batch, "iface")?,
            device: col(batch, "device")?,
            port: ints("port")?,
            counter: col(batch, "counter")?,
            value: ints("value")?,
            source: col(batch, "source").ok(),
        })
    }
}

/// An integer column's values as the unsigned numbers they were: `Int64`
/// (the same 64 bits, docs/tables.md "Numbers"), or `UInt32`/`UInt64` as
/// files of earlier versions hold them.
fn unsigned(a: &ArrayRef) -> Option<Vec<Option<u64>>> {
    let any = a.as_any();
    if let Some(a) = any.downcast_ref::<Int64Array>() {
        return Some(a.iter().map(|v| v.map(|v| v as u64)).collect());
    }
    if let Some(a) = any.downcast_ref::<UInt64Array>() {
        return Some(a.iter().collect());
    }
    any.downcast_ref::<UInt32Array>()
        .map(|a| a.iter().map(|v| v.map(u64::from)).collect())
}
