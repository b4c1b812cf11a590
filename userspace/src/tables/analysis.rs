//! The analyzer's tables: `flows`, `events`, `pfc`, `timeline`, `hops`,
//! `nics`, `uet_paths`
//! (docs/tables.md). `iface` columns hold the interface's name.
//!
//! Integer columns are signed and wider than the analyzer's unsigned
//! fields (docs/tables.md, "Numbers"): the builders take the unsigned value
//! and [`super::format`] widens it, so a column's type says the mapping.
use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int16Builder, Int32Builder, Int64Builder, StringBuilder,
    TimestampMicrosecondBuilder,
};

use std::sync::Arc;

use arrow_array::ArrayRef;

use super::format::{AppendValue, WithRows, micros};
use super::{ColumnEncoding, Columns};
use crate::Result;
use crate::addr::{Ip, Mac};
use crate::analyze::hops::HopRow;
use crate::analyze::{Analysis, Event, FlowRow, PfcInterval, TimelineRow, Trigger};
use crate::analyze::{Latency, NicRow};
use crate::columns;
use crate::transport::uet;
use crate::transport::uet::paths::PathRow;

/// A row and the names of the run's interfaces.
pub struct Named<'a, R> {
    pub row: &'a R,
    pub ifaces: &'a [String],
}

impl<R> Named<'_, R> {
    fn iface(&self, index: u16) -> &str {
        self.ifaces
            .get(usize::from(index))
            .map(String::as_str)
            .unwrap_or("?")
    }
}

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

/// A QP's own column: null on a UET PDC's row (docs/tables.md,
/// "flows.parquet").
fn qp<T>(n: &Named<'_, FlowRow>, v: T) -> Option<T> {
    n.row.transport.uet.is_none().then_some(v)
}

/// The transport whose flow `row` is (`roce`, `uet`: the registry's
/// names).
pub(crate) fn flow_transport(row: &FlowRow) -> &'static str {
    use rocescope_common::wire::TransportId;
    let t = if row.transport.uet.is_some() {
        TransportId::Uet
    } else {
        TransportId::Roce
    };
    t.entry().name
}

/// `flows.parquet`: the columns every flow has ([`FlowBase`]), then UET's
/// ([`uet::FLOW_COLUMNS`]), null on a QP's row.
#[derive(Default)]
pub struct FlowColumns {
    base: FlowBase,
    uet: UetFlowColumns,
}

/// One builder per [`uet::FLOW_COLUMNS`] entry, in its order.
struct UetFlowColumns(Vec<UetBuilder>);

enum UetBuilder {
    Count(Int64Builder),
    Us(Float64Builder),
}

impl Default for UetFlowColumns {
    fn default() -> Self {
        Self::with_rows(1024)
    }
}

impl UetFlowColumns {
    fn with_rows(rows: usize) -> Self {
        let builder = |c: &uet::FlowColumn| match c.value {
            uet::FlowValue::Count(_) => UetBuilder::Count(WithRows::with_rows(rows)),
            uet::FlowValue::Us(_) => UetBuilder::Us(WithRows::with_rows(rows)),
        };
        UetFlowColumns(uet::FLOW_COLUMNS.iter().map(builder).collect())
    }
}

impl Columns for FlowColumns {
    type Row<'a> = Named<'a, FlowRow>;

    fn append(&mut self, row: &Self::Row<'_>) {
        self.base.append(row);
        let values = row.row.transport.uet.as_deref();
        for (c, b) in uet::FLOW_COLUMNS.iter().zip(&mut self.uet.0) {
            match (c.value, b) {
                (uet::FlowValue::Count(f), UetBuilder::Count(b)) => {
                    b.append_value_opt(values.and_then(f))
                }
                (uet::FlowValue::Us(f), UetBuilder::Us(b)) => {
                    b.append_value_opt(values.and_then(f))
                }
                // Built from the same entries: never mismatched.
                _ => {}
            }
        }
    }

    fn len(&self) -> usize {
        self.base.len()
    }

    fn finish(&mut self) -> Vec<(&'static str, ArrayRef)> {
        let rows = self.base.len().max(1024);
        let mut columns = self.base.finish();
        let built = std::mem::replace(&mut self.uet, UetFlowColumns::with_rows(rows));
        for (c, b) in uet::FLOW_COLUMNS.iter().zip(built.0) {
            let array: ArrayRef = match b {
                UetBuilder::Count(mut b) => Arc::new(b.finish()),
                UetBuilder::Us(mut b) => Arc::new(b.finish()),
            };
            columns.push((c.name, array));
        }
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
    pub struct TimelineColumns for TimelineRow {
        flow_id: Int64Builder = |r| Some(r.flow_id),
        bin_start_ns: Int64Builder = |r| Some(r.bin_start_ns as i64),
        bin_start: TimestampMicrosecondBuilder = |r| Some(micros(r.bin_start_ns)),
        bin_ns: Int64Builder = |r| Some(r.bin_ns as i64),
        packets: Int64Builder = |r| Some(r.packets),
        bytes: Int64Builder = |r| Some(r.bytes),
        retrans_packets: Int64Builder = |r| Some(r.retrans_packets),
        ce: Int64Builder = |r| Some(r.ce),
        cnps: Int64Builder = |r| Some(r.cnps),
        gbps: Float64Builder = |r| Some(r.gbps),
        goodput_gbps: Float64Builder = |r| Some(r.goodput_gbps),
        paused_ns: Int64Builder = |r| Some(r.paused_ns as i64),
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

/// The tables transports add beside the shared ones, each written at the
/// end of the run as `<name>.parquet` (or the dataset's `<name>/`): one
/// entry per table, and its line in [`transport_tables`].
pub const TRANSPORT_TABLES: [&str; 1] = [UET_PATHS];
const UET_PATHS: &str = "uet_paths";

/// What writes a table of [`TRANSPORT_TABLES`]: the output directory's
/// `TableSet` or the dataset, each its own way.
pub(crate) trait TableWriter {
    /// Table `name`'s rows, each with the time that partitions it.
    fn table<'a, C: Columns>(
        &mut self,
        name: &'static str,
        rows: impl Iterator<Item = (u64, C::Row<'a>)>,
    ) -> Result<()>;
}

/// Writes every table of [`TRANSPORT_TABLES`] from `analysis`, in order.
pub(crate) fn transport_tables(
    w: &mut impl TableWriter,
    analysis: &Analysis,
    ifaces: &[String],
) -> Result<()> {
    let paths = analysis.transport_tables.uet_paths.iter();
    w.table::<UetPathColumns>(
        UET_PATHS,
        paths.map(|row| (row.first_ts_ns, Named { row, ifaces })),
    )
}
