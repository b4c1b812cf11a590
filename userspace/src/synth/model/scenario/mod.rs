//! Scenario configuration: one struct with every knob, named presets, and a
//! generic `key.path=value` override so the CLI can change any of them.

use serde::{Deserialize, Serialize};

mod presets;

pub use presets::SCENARIOS;

/// Which way a mirror session copies a port's traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    /// Frames the port transmits.
    Tx,
    /// Frames the port receives.
    Rx,
    Both,
}

/// A mirrored point: the port of `node` that faces `toward`, and how well
/// the mirror session records it. A mirror is passive: its impairments draw
/// from their own random stream (one per tap), so the fabric does exactly
/// the same with or without them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TapPoint {
    pub node: String,
    pub toward: String,
    pub dir: Dir,
    /// Probability the mirror fails to record a frame it should copy (the
    /// mirrored traffic exceeds the mirror port: mirror congestion).
    #[serde(default)]
    pub drop: f64,
    /// Probability a recorded frame is recorded a second time (a SPAN
    /// session mirroring the frame both where it enters and where it leaves).
    #[serde(default)]
    pub duplicate: f64,
    /// The copy's delay after the first record: 0 is an exact copy (same
    /// timestamp, same bytes).
    #[serde(default)]
    pub dup_gap_ns: u64,
    /// The copy is the frame as the switch routes it out (L3 egress): IP TTL
    /// one less and the IPv4 header checksum updated; the ICRC, which masks
    /// the TTL, is unchanged. The Ethernet header is kept.
    #[serde(default)]
    pub dup_egress: bool,
}

impl TapPoint {
    pub fn new(node: &str, toward: &str, dir: Dir) -> TapPoint {
        TapPoint {
            node: node.into(),
            toward: toward.into(),
            dir,
            drop: 0.0,
            duplicate: 0.0,
            dup_gap_ns: 0,
            dup_egress: false,
        }
    }
    pub fn name(&self) -> String {
        let d = match self.dir {
            Dir::Tx => "tx",
            Dir::Rx => "rx",
            Dir::Both => "both",
        };
        format!("{}-{}-{}", self.node, self.toward, d)
    }
}

/// One RC connection: host `s{src}` writes to host `r{dst}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlowCfg {
    pub src: usize,
    pub dst: usize,
    /// RDMA WRITE message size in bytes.
    pub msg_bytes: u32,
    /// Messages to write; `None` keeps writing until the run ends.
    pub messages: Option<u64>,
    pub start_ns: u64,
    /// UDP source port (ECMP entropy); `None` derives one from the flow index.
    pub udp_sport: Option<u16>,
    /// First PSN (24 bits): set near 2^24 to exercise wrap-around.
    pub start_psn: u32,
    /// Offered load cap in Gb/s (the application's rate); `None`: line rate.
    #[serde(default)]
    pub gbps: Option<f64>,
    /// This connection's RoCE path MTU, when its NICs were configured apart
    /// from the fabric's `mtu`.
    #[serde(default)]
    pub mtu: Option<u32>,
    /// This connection's priority (PCP) and DSCP for its data and ACKs,
    /// when its NICs were configured apart from the fabric's `data_prio` and
    /// `data_dscp` (a NIC left at TOS 0).
    #[serde(default)]
    pub prio: Option<u8>,
    #[serde(default)]
    pub dscp: Option<u8>,
    /// This connection's requester runs DCQCN (`nic.dcqcn.enabled`) unless
    /// `false` here: a NIC with congestion control off, whose rate CNPs do
    /// not change (`--set flows.N.dcqcn=false`).
    #[serde(default)]
    pub dcqcn: Option<bool>,
}

impl FlowCfg {
    pub fn new(src: usize, dst: usize, msg_bytes: u32, messages: Option<u64>) -> FlowCfg {
        FlowCfg {
            src,
            dst,
            msg_bytes,
            messages,
            start_ns: 0,
            udp_sport: None,
            start_psn: 0,
            gbps: None,
            mtu: None,
            prio: None,
            dscp: None,
            dcqcn: None,
        }
    }
}

/// DCQCN reaction point parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dcqcn {
    pub enabled: bool,
    /// α gain g.
    pub g: f64,
    /// Period of α decay and rate increase.
    pub timer_ns: u64,
    /// Fast-recovery stages before additive increase.
    pub fast_stages: u32,
    /// Additive increase step, Gb/s.
    pub rai_gbps: f64,
    pub min_gbps: f64,
}

/// RoCE NIC behaviour (every host the same).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NicCfg {
    /// Retransmission timeout; restarted on ACK progress.
    pub min_rto_ns: u64,
    /// Responder coalesces ACKs: one every this many in-order packets (and on ack_req).
    pub ack_every: u32,
    /// Set AckReq every this many packets (besides each message's last).
    pub ack_req_every: u32,
    /// Maximum unacknowledged packets per QP.
    pub max_outstanding: u32,
    /// Notification point: send CNPs for CE-marked arrivals.
    pub cnp_enabled: bool,
    /// At most one CNP per QP per this interval.
    pub cnp_interval_ns: u64,
    /// Mark data packets ECT(0).
    pub ect: bool,
    pub dcqcn: Dcqcn,
    /// Receive buffer PFC thresholds (bytes).
    pub rx_xoff: u64,
    pub rx_xon: u64,
    pub pfc_enabled: bool,
    /// The responder accepts request packets that arrive out of order
    /// (within `max_outstanding` of the expected PSN) and places them,
    /// without a sequence-error NAK, as NICs with adaptive-routing support
    /// do; the ACK covers them once the missing ones have arrived. `false`:
    /// every PSN past the expected one is a sequence error (one NAK per gap).
    #[serde(default)]
    pub ooo_tolerant: bool,
}

/// Switch buffer, ECN and PFC settings (every switch the same).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwitchCfg {
    pub ecn_enabled: bool,
    /// WRED/ECN on the egress queue of a priority: bytes.
    pub ecn_min: u64,
    pub ecn_max: u64,
    /// Marking probability at ecn_max (0..=1); above ecn_max everything is marked.
    pub ecn_pmax: f64,
    pub pfc_enabled: bool,
    /// Per ingress port and priority, bytes.
    pub pfc_xoff: u64,
    pub pfc_xon: u64,
    /// Egress queue limit per priority; beyond it the switch drops (a discard).
    pub queue_limit: u64,
    /// A switch trims a RoCE request that would take its egress queue past
    /// this many bytes instead of queueing it whole (0: never): its payload
    /// cut, re-marked `trim_dscp`, queued on `cnp_prio`'s queue (UET's
    /// switches trim so too, `uet.trim_bytes`).
    #[serde(default)]
    pub trim_bytes: u64,
    #[serde(default = "default_trim_dscp")]
    pub trim_dscp: u8,
    /// Telemetry reports to a collector (`synth --telemetry`; `None`: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<super::postcards::TelemetryCfg>,
}

/// A receiver's processing rate changes at `at_ns` (`gbps` 0 = stops draining).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RateChange {
    pub host: usize,
    pub at_ns: u64,
    pub gbps: f64,
}

/// A receiver that stalls periodically (host memory or PCIe pressure): from
/// `start_ns`, for `slow_ns` of every `period_ns` it drains at `gbps`, the
/// rest of the time at its normal rate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Slowdown {
    pub host: usize,
    pub start_ns: u64,
    pub period_ns: u64,
    pub slow_ns: u64,
    pub gbps: f64,
}

/// Random impairment on the link from `node` toward `toward`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Impairment {
    pub node: String,
    pub toward: String,
    /// Probability a frame is lost on the wire.
    pub loss: f64,
    /// Probability a RoCE frame arrives with a bit error: its ICRC fails at
    /// every tap past this link, switches forward it (cut-through) and the
    /// receiving NIC discards it.
    pub corrupt: f64,
    /// Probability a routed frame (RoCE, CNP) takes a longer path to the far
    /// end of this link (adaptive routing, a path change) and arrives
    /// `reorder_delay_ns` later than it would have: frames sent after it
    /// overtake it.
    #[serde(default)]
    pub reorder: f64,
    #[serde(default)]
    pub reorder_delay_ns: u64,
    /// Frames longer than this (bytes on the wire) are dropped: a hop whose
    /// MTU is smaller than the frames, an MTU black hole. 0: no limit.
    #[serde(default)]
    pub max_frame: u32,
    /// DSCP rewrites `[from, to]` the switch `node` applies to the RoCE
    /// frames and CNPs it sends toward `toward` (a QoS policy remarking on
    /// the path). The model's switches keep queueing a frame on the priority
    /// its sender gave it.
    #[serde(default)]
    pub remark_dscp: Vec<[u8; 2]>,
}

/// A fabric and its traffic. Topology: senders `s0..` on `leaf0`, receivers
/// `r0..` on `leaf1`, `spines` spines `spine0..` joining the two leaves (ECMP).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Config {
    pub name: String,
    pub seed: u64,
    /// Simulated time limit.
    pub duration_ns: u64,
    /// Stop once the taps have recorded this many frames (`--packets`).
    pub max_frames: Option<usize>,
    pub senders: usize,
    pub receivers: usize,
    pub spines: usize,
    pub link_gbps: f64,
    pub prop_ns: u64,
    /// RoCE path MTU (payload bytes per packet).
    pub mtu: u32,
    /// Priority (PCP) and DSCP of data and ACKs, and of CNPs.
    pub data_prio: u8,
    pub data_dscp: u8,
    pub cnp_prio: u8,
    pub cnp_dscp: u8,
    /// 802.1Q VLAN on every RoCE frame (PCP = priority).
    pub vlan: Option<u16>,
    /// PFC quanta sent in XOFF frames (refreshed at half their duration).
    pub pfc_quanta: u16,
    /// The priorities PFC runs on (the lossless ones), at NICs and
    /// switches alike; `None`: every priority.
    #[serde(default)]
    pub pfc_priorities: Option<Vec<u8>>,
    pub nic: NicCfg,
    pub switch: SwitchCfg,
    /// Receiver processing rates in Gb/s, one per receiver; missing or 0 entries = line rate.
    pub rx_gbps: Vec<f64>,
    pub rate_changes: Vec<RateChange>,
    #[serde(default)]
    pub slowdowns: Vec<Slowdown>,
    pub impairments: Vec<Impairment>,
    pub flows: Vec<FlowCfg>,
    pub taps: Vec<TapPoint>,
    /// A scenario of a transport beside RoCE: that transport's own knobs,
    /// as JSON under its name (`--set NAME.KNOB=VALUE`), which its model
    /// reads and checks (`super::TransportModel`); empty: RoCE.
    #[serde(flatten)]
    pub transport: serde_json::Map<String, serde_json::Value>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            name: "custom".into(),
            seed: 1,
            duration_ns: 2_000_000,
            max_frames: None,
            senders: 2,
            receivers: 2,
            spines: 1,
            link_gbps: 100.0,
            prop_ns: 500,
            mtu: 4096,
            data_prio: 3,
            data_dscp: 26,
            cnp_prio: 6,
            cnp_dscp: 48,
            vlan: None,
            pfc_quanta: 0xFFFF,
            pfc_priorities: None,
            nic: NicCfg {
                min_rto_ns: 1_050_000,
                ack_every: 8,
                ack_req_every: 16,
                max_outstanding: 256,
                cnp_enabled: true,
                cnp_interval_ns: 50_000,
                ect: true,
                dcqcn: Dcqcn {
                    enabled: true,
                    g: 1.0 / 16.0,
                    timer_ns: 55_000,
                    fast_stages: 5,
                    rai_gbps: 5.0,
                    min_gbps: 1.0,
                },
                rx_xoff: 256 * 1024,
                rx_xon: 160 * 1024,
                pfc_enabled: true,
                ooo_tolerant: false,
            },
            switch: SwitchCfg {
                ecn_enabled: true,
                ecn_min: 180 * 1024,
                ecn_max: 800 * 1024,
                ecn_pmax: 0.10,
                pfc_enabled: true,
                pfc_xoff: 2800 * 1024,
                pfc_xon: 2200 * 1024,
                queue_limit: 16 * 1024 * 1024,
                trim_bytes: 0,
                trim_dscp: default_trim_dscp(),
                telemetry: None,
            },
            rx_gbps: vec![],
            rate_changes: vec![],
            slowdowns: vec![],
            impairments: vec![],
            flows: vec![
                FlowCfg::new(0, 0, 65536, Some(64)),
                FlowCfg::new(1, 1, 65536, Some(64)),
            ],
            taps: vec![
                TapPoint::new("leaf0", "s0", Dir::Both),
                TapPoint::new("leaf1", "r0", Dir::Both),
            ],
            transport: serde_json::Map::new(),
        }
    }
}

impl Config {
    /// Choose UDP source ports so that flow `i` hashes onto leaf0's uplink
    /// `uplinks[i]` (toward `spine{uplinks[i]}`).
    pub fn pin_flows(&mut self, uplinks: &[usize]) {
        for (i, &uplink) in uplinks.iter().enumerate().take(self.flows.len()) {
            let (src, dst) = (self.flows[i].src, self.flows[i].dst);
            let mut sport = super::hosts::ephemeral_port(i, 97);
            for _ in 0..0x4000 {
                let pick = super::switch::ecmp_pick(
                    super::hosts::sender_ip(src),
                    super::hosts::receiver_ip(dst),
                    sport,
                    super::hosts::responder_qpn(i),
                    self.spines,
                );
                if pick == uplink {
                    break;
                }
                sport = sport.wrapping_add(1).max(0xC000);
            }
            self.flows[i].udp_sport = Some(sport);
        }
    }

    /// Override one knob by its dotted path, e.g. `nic.min_rto_ns=1050000`,
    /// `switch.ecn_pmax=0.1`, `flows.0.messages=10`. The value is JSON
    /// (a bare word is taken as a string).
    pub fn set(&mut self, path: &str, value: &str) -> Result<(), String> {
        let mut root = serde_json::to_value(&*self).map_err(|e| e.to_string())?;
        let mut cur = &mut root;
        for key in path.split('.') {
            cur = match cur {
                serde_json::Value::Object(m) => m.get_mut(key),
                serde_json::Value::Array(a) => key.parse::<usize>().ok().and_then(|i| a.get_mut(i)),
                _ => None,
            }
            .ok_or_else(|| format!("no setting `{path}` (at `{key}`)"))?;
        }
        *cur =
            serde_json::from_str(value).unwrap_or_else(|_| serde_json::Value::String(value.into()));
        *self = serde_json::from_value(root).map_err(|e| format!("`{path}={value}`: {e}"))?;
        Ok(())
    }
}

/// The DSCP a trimmed packet is re-marked with, by RoCE's switches and
/// the other transports' (an operator's choice, no standard value:
/// docs/analysis.md).
pub(crate) fn default_trim_dscp() -> u8 {
    46
}
