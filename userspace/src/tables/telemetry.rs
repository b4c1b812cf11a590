//! `telemetry.parquet`: one row per hop per INT-MD packet, IFA packet or
//! telemetry report (docs/tables.md), joined to `flows.parquet` by
//! `flow_id` as it arrived (`analyze::telemetry`), written as it comes.
use arrow_array::builder::{
    BooleanBuilder, Int16Builder, Int32Builder, Int64Builder, StringBuilder,
    TimestampMicrosecondBuilder,
};

use super::format::micros;
use crate::addr::Ip;
use crate::columns;
use crate::telemetry::TelemetryRow;

/// A row with its interface's and file's names.
pub struct Joined<'a> {
    pub row: &'a TelemetryRow,
    pub iface: &'a str,
    pub file: Option<&'a str>,
}

columns! {
    /// docs/tables.md, `telemetry.parquet`.
    pub struct TelemetryColumns for Joined<'a> {
        ts_ns: Int64Builder = |j| Some(j.row.ts_ns as i64),
        ts: TimestampMicrosecondBuilder = |j| Some(micros(j.row.ts_ns)),
        iface: StringBuilder = |j| Some(j.iface),
        file: StringBuilder = |j| j.file,
        frame: Int64Builder = |j| Some(j.row.frame as i64),
        source: StringBuilder = |j| j.row.source.map(|s| s.as_str()),
        hop: Int32Builder = |j| Some(i32::from(j.row.hop)),
        report_index: Int32Builder = |j| j.row.report_index.map(i32::from),
        switch_id: Int64Builder = |j| j.row.switch_id.map(i64::from),
        hw_id: Int16Builder = |j| j.row.hw_id.map(i16::from),
        ingress_port: Int64Builder = |j| j.row.ingress_port.map(i64::from),
        egress_port: Int64Builder = |j| j.row.egress_port.map(i64::from),
        l2_ingress_port: Int64Builder = |j| j.row.l2_ingress_port.map(i64::from),
        l2_egress_port: Int64Builder = |j| j.row.l2_egress_port.map(i64::from),
        queue_id: Int16Builder = |j| j.row.queue_id.map(i16::from),
        queue_occupancy: Int64Builder = |j| j.row.queue_occupancy.map(i64::from),
        hop_latency: Int64Builder = |j| j.row.hop_latency.map(i64::from),
        ingress_ts: Int64Builder = |j| j.row.ingress_ts.map(|v| v as i64),
        egress_ts: Int64Builder = |j| j.row.egress_ts.map(|v| v as i64),
        egress_tx_utilization: Int64Builder = |j| j.row.egress_tx_utilization.map(i64::from),
        buffer_id: Int16Builder = |j| j.row.buffer_id.map(i16::from),
        buffer_occupancy: Int64Builder = |j| j.row.buffer_occupancy.map(i64::from),
        sequence: Int64Builder = |j| j.row.sequence.map(i64::from),
        dropped: BooleanBuilder = |j| j.row.dropped,
        congested_queue: BooleanBuilder = |j| j.row.congested_queue,
        tracked_flow: BooleanBuilder = |j| j.row.tracked_flow,
        intermediate: BooleanBuilder = |j| j.row.intermediate,
        drop_reason: Int16Builder = |j| j.row.drop_reason.map(i16::from),
        ifa_congestion: Int16Builder = |j| j.row.ifa_congestion.map(i16::from),
        ifa_port_speed: Int16Builder = |j| j.row.ifa_port_speed.map(i16::from),
        ifa_vendor_word5: Int64Builder = |j| j.row.ifa_vendor.map(|w| i64::from(w[0])),
        ifa_vendor_word6: Int64Builder = |j| j.row.ifa_vendor.map(|w| i64::from(w[1])),
        ifa_vendor_word7: Int64Builder = |j| j.row.ifa_vendor.map(|w| i64::from(w[2])),
        src_ip: StringBuilder = |j| j.row.src_ip.map(Ip),
        dst_ip: StringBuilder = |j| j.row.dst_ip.map(Ip),
        dest_qp: Int64Builder = |j| j.row.dest_qp.map(i64::from),
        psn: Int64Builder = |j| j.row.psn.map(i64::from),
        flow_id: Int64Builder = |j| j.row.flow_id.map(i64::from),
    }
}
