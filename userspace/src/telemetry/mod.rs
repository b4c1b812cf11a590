//! What the switches said: the hops of INT-MD, IFA and Telemetry Report
//! v2.0 (docs/inputs.md, "Switch telemetry"), one [`TelemetryRow`] per hop
//! per packet or report, for `telemetry.parquet` (docs/tables.md), and the
//! reports lost on the way, from their sequence numbers ([`lost`]).
//!
//! The shared walk (`rocescope_common::wire`) finds the telemetry and steps
//! over it to the RoCE packet; here its bytes are read through the typed
//! views (`wire::int`, `wire::report`, `wire::ifa`). Nothing here panics
//! or allocates by a length the bytes choose: a hop count is bounded by the
//! bytes captured, a row is pushed per whole hop.
use rocescope_common::wire::telemetry::{Found, Source};
use rocescope_common::wire::{self, Recognition, Span, ifa, int, report};
use rocescope_common::{Kind, PacketRecord, flags, proto};

pub mod lost;
pub mod marks;

pub use self::lost::{LostReports, SwitchReports};

/// One hop of switch telemetry (a row of `telemetry.parquet`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TelemetryRow {
    /// Time of the frame that carried it, in its file's clock (`--time`):
    /// its `packets.parquet` row's.
    pub ts_ns: u64,
    pub iface: u16,
    /// The frame's number in its file, and the file's index.
    pub frame: u64,
    pub capture: u16,
    pub source: Option<Source>,
    /// Its place in the frame: for INT-MD the stack position, 0 the newest
    /// hop; for IFA the stack position; for a report 0 is the reporting
    /// node's own metadata, 1… the INT-MD stack embedded in its truncated
    /// packet (newest first).
    pub hop: u16,
    /// Report: which individual report of the packet (0-based).
    pub report_index: Option<u16>,
    pub switch_id: Option<u32>,
    /// Report: the group header's hw_id.
    pub hw_id: Option<u8>,
    pub ingress_port: Option<u32>,
    pub egress_port: Option<u32>,
    /// INT level 2 interface ids.
    pub l2_ingress_port: Option<u32>,
    pub l2_egress_port: Option<u32>,
    pub queue_id: Option<u8>,
    pub queue_occupancy: Option<u32>,
    /// INT hop latency (the device's unit); IFA residence time (ns).
    pub hop_latency: Option<u32>,
    /// INT ingress/egress timestamps (device time); IFA receive time
    /// (seconds × 10⁹ + nanoseconds, its seconds 20 bits wide).
    pub ingress_ts: Option<u64>,
    pub egress_ts: Option<u64>,
    pub egress_tx_utilization: Option<u32>,
    pub buffer_id: Option<u8>,
    pub buffer_occupancy: Option<u32>,
    /// Report: sequence number and flags.
    pub sequence: Option<u32>,
    pub dropped: Option<bool>,
    pub congested_queue: Option<bool>,
    pub tracked_flow: Option<bool>,
    pub intermediate: Option<bool>,
    pub drop_reason: Option<u8>,
    /// IFA: congestion bits, egress port speed code, and the three
    /// vendor-dependent words.
    pub ifa_congestion: Option<u8>,
    pub ifa_port_speed: Option<u8>,
    pub ifa_vendor: Option<[u32; 3]>,
    /// The RoCE packet the telemetry is about (a report: its truncated
    /// copy), when its headers say.
    pub src_ip: Option<[u8; 16]>,
    pub dst_ip: Option<[u8; 16]>,
    pub dest_qp: Option<u32>,
    pub psn: Option<u32>,
    /// The flow (`flows.parquet`'s), joined when the analyzer takes the
    /// row (docs/analysis.md, "Telemetry and flows").
    pub flow_id: Option<u32>,
}

/// The hops a frame carried: `rec` the frame's record as the walk left it
/// (a RoCE record for INT-MD and IFA; for a report it is not used),
/// `frame` the bytes the walk read (`found`'s spans lie in them), `reg` the
/// recognition (a report's truncated packet is walked with it).
pub fn rows(
    found: &Found,
    frame: &[u8],
    rec: &PacketRecord,
    reg: &Recognition,
) -> Vec<TelemetryRow> {
    let mut out = Vec::new();
    match found.source {
        Source::IntMd => {
            let flow = RoceFields::of(rec);
            int_rows(
                span(frame, found.span),
                &flow,
                0,
                &TelemetryRow::default(),
                &mut out,
            );
        }
        Source::Ifa => ifa_rows(span(frame, found.span), &RoceFields::of(rec), &mut out),
        Source::Report => report_rows(span(frame, found.span), reg, &mut out),
    }
    out
}

fn span(frame: &[u8], s: Span) -> &[u8] {
    frame.get(s.at..s.end).unwrap_or(&[])
}

/// What a row says of the RoCE packet the telemetry is about.
#[derive(Clone, Copy, Default)]
struct RoceFields {
    src_ip: Option<[u8; 16]>,
    dst_ip: Option<[u8; 16]>,
    dest_qp: Option<u32>,
    psn: Option<u32>,
}

impl RoceFields {
    fn of(rec: &PacketRecord) -> RoceFields {
        let addressed = rec.has(flags::HAS_IPV4) || rec.has(flags::HAS_IPV6);
        let bth = rec.has(flags::HAS_BTH);
        RoceFields {
            src_ip: addressed.then_some(rec.src_ip),
            dst_ip: addressed.then_some(rec.dst_ip),
            dest_qp: bth.then_some(rec.roce().dest_qp),
            psn: bth.then_some(rec.roce().psn),
        }
    }

    fn fill(&self, row: &mut TelemetryRow) {
        row.src_ip = self.src_ip;
        row.dst_ip = self.dst_ip;
        row.dest_qp = self.dest_qp;
        row.psn = self.psn;
    }
}

/// One row per hop of the INT-MD stack in `bytes` (shim first), each
/// starting from `base`, numbered from `first_hop`.
fn int_rows(
    bytes: &[u8],
    flow: &RoceFields,
    first_hop: u16,
    base: &TelemetryRow,
    out: &mut Vec<TelemetryRow>,
) {
    let Ok(shim) = int::Shim::new_checked(bytes) else {
        return;
    };
    if shim.int_type() != int::TYPE_MD {
        return;
    }
    let end = (int::SHIM_LEN + shim.int_len()).min(bytes.len());
    let Some(Ok(md)) = bytes
        .get(int::SHIM_LEN..end)
        .map(int::MdHeader::new_checked)
    else {
        return;
    };
    for i in 0..md.hop_count() {
        let Some(m) = md.hop(i) else { break };
        let mut row = TelemetryRow {
            source: Some(Source::IntMd),
            hop: first_hop.saturating_add(u16::try_from(i).unwrap_or(u16::MAX)),
            switch_id: m.node_id(),
            ..base.clone()
        };
        if base.source.is_some() {
            row.source = base.source;
        }
        metadata(&m, &mut row);
        flow.fill(&mut row);
        out.push(row);
    }
}

/// The baseline metadata every INT hop and report shares.
fn metadata(m: &int::Metadata<&[u8]>, row: &mut TelemetryRow) {
    row.ingress_port = m.ingress_port().map(u32::from);
    row.egress_port = m.egress_port().map(u32::from);
    row.l2_ingress_port = m.l2_ingress_port();
    row.l2_egress_port = m.l2_egress_port();
    row.queue_id = m.queue_id();
    row.queue_occupancy = m.queue_occupancy();
    row.hop_latency = m.hop_latency();
    row.ingress_ts = m.ingress_timestamp();
    row.egress_ts = m.egress_timestamp();
    row.egress_tx_utilization = m.egress_tx_utilization();
    row.buffer_id = m.buffer_id();
    row.buffer_occupancy = m.buffer_occupancy();
}

fn ifa_rows(bytes: &[u8], flow: &RoceFields, out: &mut Vec<TelemetryRow>) {
    let Ok(md) = ifa::MdHeader::new_checked(bytes) else {
        return;
    };
    for i in 0..md.hop_count() {
        let Some(h) = md.hop(i) else { break };
        let mut row = TelemetryRow {
            source: Some(Source::Ifa),
            hop: u16::try_from(i).unwrap_or(u16::MAX),
            switch_id: Some(h.device_id()),
            ingress_port: Some(u32::from(h.ingress_port())),
            egress_port: Some(u32::from(h.egress_port())),
            queue_id: Some(h.queue_id()),
            hop_latency: Some(h.residence_time_ns()),
            ingress_ts: Some(
                u64::from(h.rx_timestamp_sec()) * 1_000_000_000 + u64::from(h.rx_timestamp_ns()),
            ),
            ifa_congestion: Some(h.congestion()),
            ifa_port_speed: Some(h.egress_port_speed()),
            ifa_vendor: Some(h.vendor_words()),
            ..TelemetryRow::default()
        };
        flow.fill(&mut row);
        out.push(row);
    }
}

/// A report packet's UDP payload: per individual report, the reporting
/// node's row, then the rows of the INT-MD stack its truncated packet
/// carries.
fn report_rows(payload: &[u8], reg: &Recognition, out: &mut Vec<TelemetryRow>) {
    let Ok(group) = report::GroupHeader::new_checked(payload) else {
        return;
    };
    for (index, r) in group.reports().enumerate() {
        let Ok(r) = r else { break };
        let base = TelemetryRow {
            source: Some(Source::Report),
            report_index: Some(u16::try_from(index).unwrap_or(u16::MAX)),
            switch_id: Some(group.node_id()),
            hw_id: Some(group.hw_id()),
            sequence: Some(group.sequence_number()),
            dropped: Some(r.dropped()),
            congested_queue: Some(r.congested_queue()),
            tracked_flow: Some(r.tracked_flow()),
            intermediate: Some(r.intermediate()),
            drop_reason: r.drop_reason(),
            ..TelemetryRow::default()
        };
        let (flow, embedded) = inner_packet(&r, reg);
        let mut row = base.clone();
        if let Some(m) = r.metadata() {
            metadata(&m, &mut row);
            if row.queue_id.is_none() {
                row.queue_id = r.drop_queue_id();
            }
        }
        flow.fill(&mut row);
        out.push(row);
        if let Some(stack) = embedded {
            // The embedded hops are the earlier switches': their own ids.
            let base = TelemetryRow {
                switch_id: None,
                hw_id: None,
                ..base
            };
            int_rows(stack, &flow, 1, &base, out);
        }
    }
}

/// A report's truncated packet walked as what its inner type says: the
/// RoCE packet's fields, and the INT-MD stack it carries, if any.
fn inner_packet<'a>(r: &report::Report<'a>, reg: &Recognition) -> (RoceFields, Option<&'a [u8]>) {
    use proto::linktype as lt;
    let linktype = match r.in_type() {
        report::in_type::ETHERNET => lt::ETHERNET,
        report::in_type::IPV4 => lt::IPV4,
        report::in_type::IPV6 => lt::IPV6,
        _ => return (RoceFields::default(), None),
    };
    let inner = r.inner();
    let mut rec = PacketRecord::default();
    let w = wire::walk_with(inner, reg, linktype, &mut rec, &mut ());
    if rec.kind() == Kind::Other {
        return (RoceFields::default(), None);
    }
    let stack = w
        .telemetry
        .filter(|t| t.source == Source::IntMd)
        .map(|t| span(inner, t.span));
    (RoceFields::of(&rec), stack)
}

/// What the reading side keeps of the switches' telemetry: the hops
/// counted and the lost reports. The rows themselves go on to the
/// analyzer as they are read (`RecordPipeline::telemetry`), which joins
/// them to their flows and streams them to the tables.
#[derive(Clone, Debug, Default)]
pub struct TelemetryLog {
    hops: u64,
    lost: LostReports,
}

impl TelemetryLog {
    /// The hops of a frame's telemetry (`rows`), a report's group header
    /// counted for the lost reports.
    pub fn read(
        &mut self,
        found: &Found,
        frame: &[u8],
        rec: &PacketRecord,
        reg: &Recognition,
    ) -> Vec<TelemetryRow> {
        if found.source == Source::Report {
            self.report(span(frame, found.span));
        }
        rows(found, frame, rec, reg)
    }

    /// A frame's rows, given its time, interface, number and file: counted,
    /// and ready for the analyzer.
    pub fn stamp(
        &mut self,
        rows: &mut [TelemetryRow],
        ts_ns: u64,
        iface: u16,
        frame: u64,
        capture: u16,
    ) {
        self.hops += rows.len() as u64;
        for row in rows {
            row.ts_ns = ts_ns;
            row.iface = iface;
            row.frame = frame;
            row.capture = capture;
        }
    }

    /// A report packet's group header, for the lost-report count.
    pub fn report(&mut self, payload: &[u8]) {
        if let Ok(g) = report::GroupHeader::new_checked(payload) {
            self.lost
                .report(g.node_id(), g.hw_id(), g.sequence_number());
        }
    }

    /// The run's telemetry facts, or `None` when the captures held none.
    pub fn finish(self) -> Option<TelemetryFacts> {
        let switches = self.lost.switches();
        if self.hops == 0 && switches.is_empty() {
            return None;
        }
        Some(TelemetryFacts {
            hops: self.hops,
            reports: switches.iter().map(|s| s.reports).sum(),
            lost_reports: self.lost.lost(),
            switches,
        })
    }
}

/// `summary.json`'s `input.telemetry` (docs/tables.md).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct TelemetryFacts {
    /// Hops read: rows of `telemetry.parquet`.
    pub hops: u64,
    /// Telemetry report packets captured.
    pub reports: u64,
    /// Reports lost before the capture, from the sequence numbers.
    pub lost_reports: u64,
    /// Per reporting switch (node id, hw_id).
    pub switches: Vec<SwitchReports>,
}

#[cfg(test)]
mod tests;
