//! `report --json`: `summary.json` with every row of `flows.parquet`,
//! `hops.parquet` and `nics.parquet` as JSON.
use serde_json::Value;

use crate::analyze::{Analysis, FlowRow};
use crate::render::fmt_ip;

/// A flow's row as `flows.parquet` holds it: `iface` by name, addresses as
/// text (docs/tables.md), every other column as it is.
pub fn flow_json(a: &Analysis, row: &FlowRow) -> Value {
    let mut v = serde_json::to_value(row).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.insert("iface".into(), a.summary.iface_name(row.iface).into());
        m.insert("src_ip".into(), fmt_ip(&row.src_ip).into());
        m.insert("dst_ip".into(), fmt_ip(&row.dst_ip).into());
    }
    v
}

/// A row of `hops.parquet` as JSON.
fn hop_json(a: &Analysis, h: &crate::analyze::hops::HopRow) -> Value {
    let mut v = serde_json::to_value(h).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.insert("up_iface".into(), a.summary.iface_name(h.up_iface).into());
        m.insert(
            "down_iface".into(),
            a.summary.iface_name(h.down_iface).into(),
        );
        m.insert("src_ip".into(), fmt_ip(&h.src_ip).into());
        m.insert("dst_ip".into(), fmt_ip(&h.dst_ip).into());
    }
    v
}

/// `report --json`: `summary.json` (without `input`), `flows`, `hops` and
/// `nics`, one object per row of `flows.parquet`, `hops.parquet` and
/// `nics.parquet`.
pub fn render_json(a: &Analysis) -> Value {
    let mut v = serde_json::to_value(&a.summary).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        let flows = a.flows.iter().map(|r| flow_json(a, r)).collect();
        m.insert("flows".into(), Value::Array(flows));
        let hops = a.hops.iter().map(|h| hop_json(a, h)).collect();
        m.insert("hops".into(), Value::Array(hops));
        let nics = a.nics.iter().map(crate::render::nics::nic_json).collect();
        m.insert("nics".into(), Value::Array(nics));
    }
    v
}
