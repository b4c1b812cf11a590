//! The analyzer's tables: `flows`, `events`, `pfc`, `timeline`
//! ([`super::timeline`]), `hops`, `nics`, and the transports' own
//! (`super::transports`)
//! (docs/tables.md). `iface` columns hold the interface's name.
//!
//! Integer columns are signed and wider than the analyzer's unsigned
//! fields (docs/tables.md, "Numbers"): the builders take the unsigned value
//! and [`super::format`] widens it, so a column's type says the mapping.
use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int16Builder, Int32Builder, Int64Builder, StringBuilder,
    TimestampMicrosecondBuilder,
};

use arrow_array::ArrayRef;

use super::format::micros;
use super::transports::TransportFlowColumns;
use super::{ColumnEncoding, Columns};
use crate::addr::{Ip, Mac};
use crate::analyze::hops::HopRow;
use crate::analyze::{Event, FlowRow, PfcInterval, Trigger};
use crate::analyze::{Latency, NicRow};
use crate::columns;

pub use super::format::Named;
pub use super::timeline::TimelineColumns;
pub use super::transports::TRANSPORT_TABLES;
pub(crate) use super::transports::{TableWriter, transport_tables};

columns! {
    pub struct FlowBase for Named<'a, FlowRow> {
        flow_id: Int64Builder = |n| Some(n.row.flow_id),
        iface: StringBuilder = |n| Some(n.iface(n.row.iface)),
        src_ip: StringBuilder = |n| Some(Ip(n.row.src_ip)),
        dst_ip: StringBuilder = |n| Some(Ip(n.row.dst_ip)),
        dest_qp: Int64Builder = |n| qp(n, n.row.dest_qp),
        paired_qp: Int64Builder = |n| n.row.paired_qp,
        roce_version: Int16Builder = |n| n.row.roce_version,
        udp_sport: Int32Builder = |n| n.row.udp_sport,
        pcp: Int16Builder = |n| n.row.pcp,
        dscp: Int16Builder = |n| n.row.dscp,
        first_ts_ns: Int64Builder = |n| Some(n.row.first_ts_ns as i64),
        last_ts_ns: Int64Builder = |n| Some(n.row.last_ts_ns as i64),
        first_ts: TimestampMicrosecondBuilder = |n| Some(micros(n.row.first_ts_ns)),
        last_ts: TimestampMicrosecondBuilder = |n| Some(micros(n.row.last_ts_ns)),
        packets: Int64Builder = |n| Some(n.row.packets),
        bytes: Int64Builder = |n| Some(n.row.bytes),
        data_packets: Int64Builder = |n| Some(n.row.data_packets),
        payload_bytes: Int64Builder = |n| Some(n.row.payload_bytes),
        retrans_packets: Int64Builder = |n| Some(n.row.retrans_packets),
        retrans_rate: Float64Builder = |n| Some(n.row.retrans_rate),
        rewinds: Int64Builder = |n| qp(n, n.row.rewinds),
        rewinds_nak: Int64Builder = |n| qp(n, n.row.rewinds_nak),
        rewinds_rnr: Int64Builder = |n| qp(n, n.row.rewinds_rnr),
        rewinds_timeout: Int64Builder = |n| qp(n, n.row.rewinds_timeout),
        max_rewind_depth: Int64Builder = |n| qp(n, n.row.max_rewind_depth),
        spurious_retrans: Int64Builder = |n| Some(n.row.spurious_retrans),
        gaps: Int64Builder = |n| Some(n.row.gaps),
        acks: Int64Builder = |n| Some(n.row.acks),
        naks: Int64Builder = |n| Some(n.row.naks),
        rnr_naks: Int64Builder = |n| qp(n, n.row.rnr_naks),
        ce: Int64Builder = |n| Some(n.row.ce),
        cnps: Int64Builder = |n| qp(n, n.row.cnps),
        gbps: Float64Builder = |n| Some(n.row.gbps),
        goodput_gbps: Float64Builder = |n| Some(n.row.goodput_gbps),
        max_idle_us: Float64Builder = |n| Some(n.row.max_idle_us),
        rewinds_timeout_ghost: Int64Builder = |n| qp(n, n.row.rewinds_timeout_ghost),
        gap_late: Int64Builder = |n| Some(n.row.gap_late),
        gap_lost_before_tap: Int64Builder = |n| Some(n.row.gap_lost_before_tap),
        gap_nak_lost: Int64Builder = |n| Some(n.row.gap_nak_lost),
        gap_capture_lost: Int64Builder = |n| Some(n.row.gap_capture_lost),
        gap_unresolved: Int64Builder = |n| Some(n.row.gap_unresolved),
        late_max_us: Float64Builder = |n| n.row.late_max_us,
        late_max_psns: Int64Builder = |n| n.row.late_max_psns,
        icrc_errors: Int64Builder = |n| n.row.icrc_errors,
        mirror_copies: Int64Builder = |n| Some(n.row.mirror_copies),
        display_filter: StringBuilder = |n| Some(n.row.display_filter.as_str()),
        decode_as: StringBuilder = |n| Some(n.row.decode_as.as_str()),
        nic_timeout_samples: Int64Builder = |n| qp(n, n.row.nic_timeout_samples),
        nic_timeout_us: Float64Builder = |n| n.row.nic_timeout_us,
        nic_timeout_max_us: Float64Builder = |n| n.row.nic_timeout_max_us,
        nic_timeout_exponent: Int16Builder = |n| n.row.nic_timeout_exponent,
        nic_timeout_bounded: Int64Builder = |n| qp(n, n.row.nic_timeout_bounded),
        nic_timeout_lower_us: Float64Builder = |n| n.row.nic_timeout_lower_us,
        nic_timeout_upper_us: Float64Builder = |n| n.row.nic_timeout_upper_us,
        max_rewinds_one_psn: Int64Builder = |n| qp(n, n.row.max_rewinds_one_psn),
        livelock_psn: Int64Builder = |n| n.row.livelock_psn,
        dcqcn_reactions: Int64Builder = |n| qp(n, n.row.dcqcn_reactions),
        dcqcn_reaction_us: Float64Builder = |n| n.row.dcqcn_reaction_us,
        dcqcn_reaction_max_us: Float64Builder = |n| n.row.dcqcn_reaction_max_us,
        dcqcn_recovery_us: Float64Builder = |n| n.row.dcqcn_recovery_us,
        dcqcn_cnps_without_reaction: Int64Builder = |n| qp(n, n.row.dcqcn_cnps_without_reaction),
        service: StringBuilder = |n| n.row.service,
        link: StringBuilder = |n| qp(n, n.row.link),
        becn: Int64Builder = |n| qp(n, n.row.becn),
        interim: BooleanBuilder = |n| Some(n.row.interim),
        transport: StringBuilder = |n| Some(flow_transport(n.row)),
        trimmed: Int64Builder = |n| qp(n, n.row.trimmed),
    }
}

/// A QP's own column: null on another transport's flow's row
/// (docs/tables.md, "flows.parquet").
fn qp<T>(n: &Named<'_, FlowRow>, v: T) -> Option<T> {
    n.row.transport.transport().is_none().then_some(v)
}

/// The transport whose flow `row` is (`roce`, `uet`: the registry's
/// names).
pub(crate) fn flow_transport(row: &FlowRow) -> &'static str {
    use rocescope_common::wire::TransportId;
    let t = row.transport.transport().unwrap_or(TransportId::Roce);
    t.entry().name
}

/// `flows.parquet`: the columns every flow has ([`FlowBase`]), then the
/// transports' beside RoCE ([`TransportFlowColumns`]), null on a QP's row.
#[derive(Default)]
pub struct FlowColumns {
    base: FlowBase,
    transports: TransportFlowColumns,
}

impl Columns for FlowColumns {
    type Row<'a> = Named<'a, FlowRow>;

    fn append(&mut self, row: &Self::Row<'_>) {
        self.base.append(row);
        self.transports.append(row.row);
    }

    fn len(&self) -> usize {
        self.base.len()
    }

    fn finish(&mut self) -> Vec<(&'static str, ArrayRef)> {
        let rows = self.base.len().max(1024);
        let mut columns = self.base.finish();
        self.transports.finish(rows, &mut columns);
        columns
    }
}

/// Events: dictionary pages only where few values repeat. Times are unique
/// and details (names, PSNs, addresses in text) rarely repeat, so their
/// dictionaries only filled up to fall back to plain in every row group (a
/// 2 MB dictionary page each time: the events writer's memory grew with
/// the capture).
const EVENT_ENCODING: ColumnEncoding = ColumnEncoding {
    dictionary: Some(&["iface", "flow_id", "kind", "depth", "trigger"]),
    ..ColumnEncoding::DEFAULT
};

columns! {
    pub struct EventColumns for Named<'a, Event>, encoding = EVENT_ENCODING {
        ts_ns: Int64Builder = |n| Some(n.row.ts_ns as i64),
        ts: TimestampMicrosecondBuilder = |n| Some(micros(n.row.ts_ns)),
        iface: StringBuilder = |n| Some(n.iface(n.row.iface)),
        flow_id: Int64Builder = |n| n.row.flow_id,
        kind: StringBuilder = |n| Some(n.row.kind.as_str()),
        psn: Int64Builder = |n| n.row.psn,
        depth: Int64Builder = |n| n.row.depth,
        trigger: StringBuilder = |n| n.row.trigger.map(Trigger::as_str),
        idle_us: Float64Builder = |n| n.row.idle_us,
        detail: StringBuilder = |n| Some(&n.row.detail),
    }
}

columns! {
    pub struct PfcColumns for Named<'a, PfcInterval> {
        iface: StringBuilder = |n| Some(n.iface(n.row.iface)),
        src_mac: StringBuilder = |n| Some(Mac(n.row.src_mac)),
        priority: Int16Builder = |n| Some(n.row.priority),
        start_ns: Int64Builder = |n| Some(n.row.start_ns as i64),
        end_ns: Int64Builder = |n| Some(n.row.end_ns as i64),
        start_ts: TimestampMicrosecondBuilder = |n| Some(micros(n.row.start_ns)),
        end_ts: TimestampMicrosecondBuilder = |n| Some(micros(n.row.end_ns)),
        frames: Int64Builder = |n| Some(n.row.frames),
        ended_by: StringBuilder = |n| Some(n.row.ended_by.as_str()),
        duration_ns: Int64Builder = |n| Some(n.row.end_ns.saturating_sub(n.row.start_ns) as i64),
    }
}

columns! {
    pub struct HopColumns for Named<'a, HopRow> {
        src_ip: StringBuilder = |n| Some(Ip(n.row.src_ip)),
        dst_ip: StringBuilder = |n| Some(Ip(n.row.dst_ip)),
        dest_qp: Int64Builder = |n| Some(n.row.dest_qp),
        up_iface: StringBuilder = |n| Some(n.iface(n.row.up_iface)),
        down_iface: StringBuilder = |n| Some(n.iface(n.row.down_iface)),
        up_flow_id: Int64Builder = |n| n.row.up_flow_id,
        down_flow_id: Int64Builder = |n| n.row.down_flow_id,
        first_ts_ns: Int64Builder = |n| Some(n.row.first_ts_ns as i64),
        last_ts_ns: Int64Builder = |n| Some(n.row.last_ts_ns as i64),
        first_ts: TimestampMicrosecondBuilder = |n| Some(micros(n.row.first_ts_ns)),
        last_ts: TimestampMicrosecondBuilder = |n| Some(micros(n.row.last_ts_ns)),
        frames_up: Int64Builder = |n| Some(n.row.frames_up),
        matched: Int64Builder = |n| Some(n.row.matched),
        missing_down: Int64Builder = |n| Some(n.row.missing_down),
        down_only: Int64Builder = |n| Some(n.row.down_only),
        delay_min_ns: Int64Builder = |n| n.row.delay_min_ns,
        delay_p50_ns: Int64Builder = |n| n.row.delay_p50_ns,
        delay_p99_ns: Int64Builder = |n| n.row.delay_p99_ns,
        delay_max_ns: Int64Builder = |n| n.row.delay_max_ns,
        clock_offset_ns: Int64Builder = |n| Some(n.row.clock_offset_ns),
        adjacent: BooleanBuilder = |n| Some(n.row.adjacent),
    }
}

columns! {
    /// One row per NIC: how fast it reacts (docs/tables.md, `nics.parquet`).
    pub struct NicColumns for NicRow {
        nic_mac: StringBuilder = |n| Some(Mac(n.mac)),
        nic_ip: StringBuilder = |n| Some(Ip(n.ip)),
        nak_generation_count: Int64Builder = |n| Some(n.summary(Latency::NakGeneration).count),
        nak_generation_p50_ns: Int64Builder = |n| n.summary(Latency::NakGeneration).p50_ns,
        nak_generation_p99_ns: Int64Builder = |n| n.summary(Latency::NakGeneration).p99_ns,
        nak_generation_max_ns: Int64Builder = |n| n.summary(Latency::NakGeneration).max_ns,
        nak_reaction_count: Int64Builder = |n| Some(n.summary(Latency::NakReaction).count),
        nak_reaction_p50_ns: Int64Builder = |n| n.summary(Latency::NakReaction).p50_ns,
        nak_reaction_p99_ns: Int64Builder = |n| n.summary(Latency::NakReaction).p99_ns,
        nak_reaction_max_ns: Int64Builder = |n| n.summary(Latency::NakReaction).max_ns,
        timeout_retrans_count: Int64Builder = |n| Some(n.summary(Latency::TimeoutRetrans).count),
        timeout_retrans_p50_ns: Int64Builder = |n| n.summary(Latency::TimeoutRetrans).p50_ns,
        timeout_retrans_p99_ns: Int64Builder = |n| n.summary(Latency::TimeoutRetrans).p99_ns,
        timeout_retrans_max_ns: Int64Builder = |n| n.summary(Latency::TimeoutRetrans).max_ns,
        cnp_generation_count: Int64Builder = |n| Some(n.summary(Latency::CnpGeneration).count),
        cnp_generation_p50_ns: Int64Builder = |n| n.summary(Latency::CnpGeneration).p50_ns,
        cnp_generation_p99_ns: Int64Builder = |n| n.summary(Latency::CnpGeneration).p99_ns,
        cnp_generation_max_ns: Int64Builder = |n| n.summary(Latency::CnpGeneration).max_ns,
    }
}
