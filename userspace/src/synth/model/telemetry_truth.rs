//! The truth of the switches' telemetry (docs/synth-truth.md, "telemetry"):
//! every report as the model sent it and the queue the model congested
//! most, both from the model's own log ([`super::postcards::SwitchLog`]),
//! never from the capture.
use serde::Serialize;

use super::fabric::Run;
use super::postcards::{IFA_PROTOCOL, INT_PORT, TelemetryMode};
use super::spec::FrameSpec;

/// `truth.json`'s `telemetry` (present when the switches exported it).
#[derive(Clone, Debug, Serialize)]
pub struct TelemetryTruth {
    /// `int-md` or `ifa`; absent for postcards (the truth of a postcard
    /// run is what it was before the in-band modes).
    #[serde(skip_serializing_if = "TelemetryMode::is_postcards")]
    pub mode: TelemetryMode,
    /// The reports' UDP destination port (`--telemetry-report-port`).
    pub collector_port: u16,
    /// INT-MD's marking UDP port (`--int-port`), with `int-md`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub int_port: Option<u16>,
    /// IFA's IP protocol (`--ifa-proto`), with `ifa`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ifa_protocol: Option<u8>,
    /// Every report, in the order the switches sent them (postcards).
    pub reports: Vec<ReportTruth>,
    /// In-band modes: every tap frame that carried telemetry, in the
    /// order the taps recorded them, with its stack.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inband: Vec<InbandTruth>,
    /// The switch egress queue that held the most bytes in the run.
    pub congested_queue: Option<QueueTruth>,
}

/// One report: the reporting switch's own view of one packet.
#[derive(Clone, Debug, Serialize)]
pub struct ReportTruth {
    /// Sent at (model time, ns; the capture adds `capture.epoch_ns`).
    pub ts_ns: u64,
    pub switch: String,
    pub switch_id: u32,
    pub sequence: u32,
    pub ingress_port: u16,
    pub egress_port: u16,
    /// The egress port's name (`NODE-TOWARD`).
    pub port: String,
    pub queue: u8,
    /// Bytes ahead of the packet in its egress queue when it joined.
    pub occupancy: u32,
    /// Arrival to departure, ns (a drop report: 0).
    pub hop_latency_ns: u32,
    pub dropped: bool,
    pub drop_reason: Option<u8>,
    /// The Q flag: occupancy at or above the switch's ECN minimum.
    pub congested: bool,
    pub flow: Option<usize>,
    pub dest_qp: u32,
    pub psn: u32,
}

/// A tap frame carrying in-band telemetry.
#[derive(Clone, Debug, Serialize)]
pub struct InbandTruth {
    /// The tap (its interface name) and when it recorded the frame (model
    /// time, ns).
    pub tap: String,
    pub ts_ns: u64,
    pub dest_qp: u32,
    pub psn: u32,
    /// Newest hop first, as the stack holds them.
    pub hops: Vec<HopTruth>,
}

/// One switch's hop, from its queue state at the packet's departure.
#[derive(Clone, Debug, Serialize)]
pub struct HopTruth {
    pub switch: String,
    pub switch_id: u32,
    pub ingress_port: u16,
    pub egress_port: u16,
    /// The egress port's name (`NODE-TOWARD`).
    pub port: String,
    pub queue: u8,
    /// Bytes ahead of the packet in its egress queue when it joined.
    pub occupancy: u32,
    /// Arrival to departure, ns.
    pub hop_latency_ns: u32,
}

/// A switch egress queue at its fullest.
#[derive(Clone, Debug, Serialize)]
pub struct QueueTruth {
    pub switch: String,
    pub switch_id: u32,
    /// The egress port's name and its number on the switch.
    pub port: String,
    pub egress_port: u16,
    pub queue: u8,
    pub peak_bytes: u64,
    pub peak_ns: u64,
    /// The configured flows whose packets joined it.
    pub flows: Vec<usize>,
}

impl TelemetryTruth {
    /// `None` when the run's switches exported no telemetry.
    pub fn of(run: &Run) -> Option<TelemetryTruth> {
        let log = &run.switch_log;
        let cfg = log.cfg.as_ref()?;
        let name = |p: usize| run.port_names.get(p).cloned().unwrap_or_default();
        let reports = log
            .reports
            .iter()
            .map(|c| {
                let port = name(c.egress);
                let (dest_qp, psn) = match &c.packet {
                    FrameSpec::Roce(r) => (r.dest_qp, r.psn),
                    _ => (0, 0),
                };
                ReportTruth {
                    ts_ns: c.ts_ns,
                    switch: port.node,
                    switch_id: c.switch_id,
                    sequence: c.sequence,
                    ingress_port: c.ingress_port,
                    egress_port: c.egress_port,
                    port: port.name,
                    queue: c.queue,
                    occupancy: c.occupancy,
                    hop_latency_ns: c.hop_latency_ns,
                    dropped: c.dropped,
                    drop_reason: c.drop_reason,
                    congested: c.congested,
                    flow: c.flow,
                    dest_qp,
                    psn,
                }
            })
            .collect();
        // The fullest queue; the first port and priority on a tie.
        let mut best: Option<(usize, u8, super::postcards::QueuePeak)> = None;
        for (p, peaks) in log.peaks.iter().enumerate() {
            for (prio, peak) in peaks.iter().enumerate() {
                if peak.bytes > best.map_or(0, |b| b.2.bytes) {
                    best = Some((p, prio as u8, *peak));
                }
            }
        }
        let congested_queue = best.map(|(p, prio, peak)| {
            let port = name(p);
            QueueTruth {
                switch: port.node,
                switch_id: super::postcards::switch_id(port.node_index),
                port: port.name,
                egress_port: port.number,
                queue: prio,
                peak_bytes: peak.bytes,
                peak_ns: peak.at_ns,
                flows: log
                    .crossed
                    .get(&(p, prio))
                    .map(|f| f.iter().copied().collect())
                    .unwrap_or_default(),
            }
        });
        let inband = log
            .inband
            .iter()
            .filter_map(|(&i, hops)| {
                let f = run.frames.get(i)?;
                let FrameSpec::Roce(r) = &f.frame else {
                    return None;
                };
                Some(InbandTruth {
                    tap: run
                        .taps
                        .get(f.tap)
                        .map(|t| t.name.clone())
                        .unwrap_or_default(),
                    ts_ns: f.ts_ns,
                    dest_qp: r.dest_qp,
                    psn: r.psn,
                    hops: hops
                        .iter()
                        .map(|h| {
                            let port = name(h.egress);
                            HopTruth {
                                switch: port.node,
                                switch_id: h.switch_id,
                                ingress_port: h.ingress_port,
                                egress_port: h.egress_port,
                                port: port.name,
                                queue: h.queue,
                                occupancy: h.occupancy,
                                hop_latency_ns: h.hop_latency_ns,
                            }
                        })
                        .collect(),
                })
            })
            .collect();
        Some(TelemetryTruth {
            mode: cfg.mode,
            collector_port: cfg.collector_port,
            int_port: (cfg.mode == TelemetryMode::IntMd).then_some(INT_PORT),
            ifa_protocol: (cfg.mode == TelemetryMode::Ifa).then_some(IFA_PROTOCOL),
            reports,
            inband,
            congested_queue,
        })
    }
}
