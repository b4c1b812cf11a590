//! `counters.parquet`: one row per counter per snapshot.
//!
//! Columns (all nullable, as the other tables): `ts_ns` (Int64, ns since
//! the epoch), `host`, `iface`, `device`, `port` (UInt32), `counter`,
//! `priority` (UInt8, when the name carries one), `value` (UInt64),
//! `delta` (UInt64, since the endpoint's previous snapshot; null for the
//! first one and after a counter reset), `rate` (Float64, delta per
//! second), `source` (`ethtool`, `rdma`, `sysfs`, `netdev`, …).
use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::Path;

use arrow_array::builder::{
    Float64Builder, Int64Builder, StringBuilder, UInt8Builder, UInt32Builder, UInt64Builder,
};
use arrow_array::{Array, Int64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::model::{Endpoint, Snapshot, Source, priority_of};
use crate::columns;
use crate::tables::ColumnEncoding;
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
        host: StringBuilder = |r| r.endpoint.host.as_deref(),
        iface: StringBuilder = |r| r.endpoint.iface.as_deref(),
        device: StringBuilder = |r| r.endpoint.device.as_deref(),
        port: UInt32Builder = |r| r.endpoint.port,
        counter: StringBuilder = |r| Some(r.counter),
        priority: UInt8Builder = |r| priority_of(r.counter),
        value: UInt64Builder = |r| Some(r.value),
        delta: UInt64Builder = |r| r.delta,
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
                cols.value.is_valid(i).then(|| cols.value.value(i)),
            ) else {
                continue;
            };
            let Ok(ts) = u64::try_from(ts) else { continue };
            let text = |a: &StringArray| a.is_valid(i).then(|| a.value(i).to_string());
            let endpoint = Endpoint {
                host: text(cols.host),
                iface: text(cols.iface),
                device: text(cols.device),
                port: cols.port.is_valid(i).then(|| cols.port.value(i)),
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
    host: &'a StringArray,
    iface: &'a StringArray,
    device: &'a StringArray,
    port: &'a UInt32Array,
    counter: &'a StringArray,
    value: &'a UInt64Array,
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
        Ok(Cols {
            ts: col(batch, "ts_ns")?,
            host: col(batch, "host")?,
            iface: col(batch, "iface")?,
            device: col(batch, "device")?,
            port: col(batch, "port")?,
            counter: col(batch, "counter")?,
            value: col(batch, "value")?,
            source: col(batch, "source").ok(),
        })
    }
}
