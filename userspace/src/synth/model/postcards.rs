//! Switches that export telemetry (`synth --telemetry`; docs/synth-truth.md,
//! "telemetry"): a switch sends its collector Telemetry Report v2.0
//! postcards on the RoCE requests it forwards, at each packet's departure,
//! from its own queue state — the egress queue's occupancy when the packet
//! joined it (bytes, the packet not counted) and the hop latency from the
//! packet's arrival to its departure (ns): on every packet whose queue held
//! [`TelemetryCfg::congested_bytes`] or more (Q flag) and one in
//! [`TelemetryCfg::sample`] of the others; and a drop report (D flag, drop
//! reason [`DROP_REASON_TRAFFIC_MANAGER`]) on each it discards at the queue
//! limit. [`Postcard`]s are the model's log of what it sent: the truth.
//!
//! The collector is reached out of band (a management network): a report
//! is recorded when the switch sends it, on its own capture interface
//! (`collector`), and never queues behind the traffic it describes.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

use super::spec::FrameSpec;

/// The collector's UDP port (operators choose one; none is standard).
pub const COLLECTOR_PORT: u16 = 32766;

/// switch.p4's drop reason "traffic manager" (SWITCH_DROP_REASON_TRAFFIC_MANAGER
/// = 71, p4lang's switch programs): the egress queue had no room.
pub const DROP_REASON_TRAFFIC_MANAGER: u8 = 71;

/// The UDP destination port that marks INT-MD in synth's captures (the
/// original port moves into the shim; operators choose one, none is
/// standard): analyse them with `--int-port 32767`.
pub const INT_PORT: u16 = 32767;

/// The IP protocol that marks IFA in synth's captures: the draft's 131
/// (rocescope's `--ifa-proto` default).
pub const IFA_PROTOCOL: u8 = 131;

/// How the switches export what their queues did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum TelemetryMode {
    /// Telemetry Report v2.0 postcards and drop reports to a collector.
    #[default]
    Postcards,
    /// INT-MD over UDP (INT v2.1) in the packets themselves: the first
    /// switch inserts the shim and metadata header, every switch pushes
    /// its hop, the last (toward the host) strips them.
    IntMd,
    /// IFA 2.0 (draft-kumar-ippm-ifa) the same way: the header after IP,
    /// the metadata stack after UDP.
    Ifa,
}

impl TelemetryMode {
    /// The telemetry travels in the packets.
    pub fn in_band(self) -> bool {
        self != TelemetryMode::Postcards
    }

    pub fn is_postcards(&self) -> bool {
        *self == TelemetryMode::Postcards
    }
}

/// One switch's hop of in-band telemetry, as the model knew it: pushed
/// at the packet's departure from its queue state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InbandHop {
    pub node: usize,
    pub switch_id: u32,
    pub ingress_port: u16,
    pub egress_port: u16,
    /// The egress port (index into the run's ports), for its name.
    pub egress: usize,
    pub queue: u8,
    /// Bytes in the egress queue when the packet joined it.
    pub occupancy: u32,
    /// From arrival to departure.
    pub hop_latency_ns: u32,
    pub arrival_ns: u64,
    pub departure_ns: u64,
    /// The packet's IP TTL there, and the egress link's speed (Gb/s).
    pub ttl: u8,
    pub gbps: f64,
}

/// What the switches export.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TelemetryCfg {
    /// Reports to a collector, or INT-MD or IFA in the packets.
    #[serde(default)]
    pub mode: TelemetryMode,
    /// UDP destination port of the reports.
    pub collector_port: u16,
    /// Bytes of the packet a report carries (a truncated copy).
    pub truncate: u32,
    /// A queue holding at least this many bytes when the packet joined it
    /// is congested: every such packet is reported, with the Q flag.
    pub congested_bytes: u64,
    /// Of the other requests, each switch reports every this-many-th (1:
    /// all), so the reports show the quiet queues too.
    pub sample: u64,
}

impl Default for TelemetryCfg {
    fn default() -> Self {
        TelemetryCfg {
            mode: TelemetryMode::Postcards,
            collector_port: COLLECTOR_PORT,
            truncate: 128,
            congested_bytes: 64 * 1024,
            sample: 64,
        }
    }
}

/// One report a switch sent, as the model knew it.
#[derive(Clone, Debug, PartialEq)]
pub struct Postcard {
    /// When the switch sent it: the packet's departure (drop reports: the
    /// discard).
    pub ts_ns: u64,
    /// The switch (node index) and the id its reports carry.
    pub node: usize,
    pub switch_id: u32,
    /// Per switch, from 0 (22 bits on the wire).
    pub sequence: u32,
    /// The switch's own port numbers (1-based, in the order it was cabled).
    pub ingress_port: u16,
    pub egress_port: u16,
    /// The egress port (index into the run's ports), for its name.
    pub egress: usize,
    /// The egress queue: the packet's priority.
    pub queue: u8,
    /// Bytes in the egress queue when the packet joined it.
    pub occupancy: u32,
    /// From arrival to departure (drop reports: 0).
    pub hop_latency_ns: u32,
    pub arrival_ns: u64,
    pub dropped: bool,
    /// Drop reports: why (switch.p4's code).
    pub drop_reason: Option<u8>,
    /// Occupancy at or above `congested_bytes` (the Q flag).
    pub congested: bool,
    /// The configured flow the packet belongs to.
    pub flow: Option<usize>,
    /// The packet as it left (a drop report: as it arrived).
    pub packet: FrameSpec,
}

/// The most bytes one switch egress queue held, and when.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueuePeak {
    pub bytes: u64,
    pub at_ns: u64,
}

/// The model's own record of its queues and the reports it sent.
#[derive(Clone, Debug, Default)]
pub struct SwitchLog {
    /// What the switches export (`None`: telemetry off).
    pub cfg: Option<TelemetryCfg>,
    pub reports: Vec<Postcard>,
    /// Per port (index into the run's ports) and priority; hosts' ports
    /// stay zero.
    pub peaks: Vec<[QueuePeak; 8]>,
    /// Per switch egress queue `(port, priority)`: the configured flows
    /// whose packets joined it.
    pub crossed: BTreeMap<(usize, u8), BTreeSet<usize>>,
    /// In-band telemetry: per tap frame (index into the run's frames)
    /// carrying it, its stack, newest hop first.
    pub inband: BTreeMap<usize, Vec<InbandHop>>,
    next_sequence: Vec<u32>,
    /// Per switch: requests forwarded and not reported since its last
    /// sampled report.
    unsampled: Vec<u64>,
}

impl SwitchLog {
    /// An empty log of switches exporting `cfg` (`None`: nothing).
    pub fn new(cfg: Option<TelemetryCfg>) -> SwitchLog {
        SwitchLog {
            cfg,
            ..SwitchLog::default()
        }
    }

    /// A packet of `flow` joined queue `prio` of port `port`, which now
    /// holds `bytes`.
    pub fn joined(&mut self, port: usize, prio: u8, flow: Option<usize>, bytes: u64, now: u64) {
        if let Some(flow) = flow {
            self.crossed.entry((port, prio)).or_default().insert(flow);
        }
        if self.peaks.len() <= port {
            self.peaks.resize(port + 1, [QueuePeak::default(); 8]);
        }
        let peak = &mut self.peaks[port][prio as usize & 7];
        if bytes > peak.bytes {
            *peak = QueuePeak { bytes, at_ns: now };
        }
    }

    /// The in-band mode, if the switches put telemetry into the packets.
    pub fn in_band(&self) -> Option<TelemetryMode> {
        self.cfg.as_ref().map(|c| c.mode).filter(|m| m.in_band())
    }

    /// The bytes in-band telemetry adds to tap frame `frame` on the wire.
    pub fn inband_len(&self, frame: usize) -> usize {
        let Some(hops) = self.inband.get(&frame) else {
            return 0;
        };
        use rocescope_common::wire::{ifa, int};
        match self.in_band() {
            Some(TelemetryMode::IntMd) => {
                int::SHIM_LEN
                    + int::MD_HEADER_LEN
                    + hops.len() * crate::synth::telemetry::INT_HOP_LEN
            }
            Some(TelemetryMode::Ifa) => {
                ifa::HEADER_LEN + ifa::MD_HEADER_LEN + hops.len() * ifa::HOP_LEN
            }
            _ => 0,
        }
    }

    /// Whether a switch reports a request whose queue held `depth` bytes:
    /// drops and congested queues always, the rest one in `sample`.
    pub fn reports(&mut self, node: usize, depth: u64, dropped: bool) -> Option<bool> {
        let cfg = self.cfg.as_ref()?;
        let congested = depth >= cfg.congested_bytes;
        if self.unsampled.len() <= node {
            self.unsampled.resize(node + 1, 0);
        }
        let count = &mut self.unsampled[node];
        *count += 1;
        let sampled = *count >= cfg.sample.max(1);
        if sampled {
            *count = 0;
        }
        (dropped || congested || sampled).then_some(congested)
    }

    /// Logs `card`, numbering it in its switch's sequence.
    pub fn send(&mut self, mut card: Postcard) {
        if self.next_sequence.len() <= card.node {
            self.next_sequence.resize(card.node + 1, 0);
        }
        let next = &mut self.next_sequence[card.node];
        card.sequence = *next;
        *next = next.wrapping_add(1) & 0x3F_FFFF;
        self.reports.push(card);
    }
}

/// A switch's id in its reports: its node index plus one (0 reads as "no
/// switch" in many collectors).
pub fn switch_id(node: usize) -> u32 {
    node as u32 + 1
}

/// A port as the telemetry truth names it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortName {
    pub node: String,
    pub node_index: usize,
    /// `NODE-TOWARD`.
    pub name: String,
    /// Its number on its node (what reports say).
    pub number: u16,
}
