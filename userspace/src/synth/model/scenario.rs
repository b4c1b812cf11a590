//! Scenario configuration: one struct with every knob, named presets, and a
//! generic `key.path=value` override so the CLI can change any of them.

use serde::{Deserialize, Serialize};

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

/// RoCE's scenarios ([`Config::preset`]); `super::SCENARIOS` lists every
/// transport's.
pub const SCENARIOS: &[&str] = &[
    "healthy",
    "ghost-drop",
    "ghost-drop-fixed",
    "lossy-link",
    "lossy-spine",
    "incast",
    "pfc-storm",
    "ecn-broken",
    "ecmp-collision",
    "mirror-impaired",
    "corruption",
    "nic-timeout",
    "mtu-blackhole",
    "mtu-mismatch",
    "qos-mismatch",
    "ecn-overmark",
    "dcqcn-off",
];

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
    /// A named preset, or `None` for an unknown name (see [`SCENARIOS`]).
    pub fn preset(name: &str) -> Option<Config> {
        let mut c = Config {
            name: name.into(),
            ..Config::default()
        };
        match name {
            "healthy" => {
                // Each flow has its own spine: no shared queue anywhere.
                c.spines = 2;
                c.pin_flows(&[0, 1]);
            }
            "ghost-drop" | "ghost-drop-fixed" => {
                // A 400G fabric. Two writers into r0, whose host stalls for
                // 120 us of every 500 us (draining at 10 Gb/s), and a victim
                // s2 -> r1 sharing the leaf0 -> spine0 -> leaf1 path. The
                // writers' offered load (120 + 120 Gb/s) fits r0's link and
                // the victim's (150 Gb/s) fits the shared path: only the
                // stalls build queues, and PFC spreads them to the victim.
                c.senders = 3;
                c.receivers = 2;
                c.duration_ns = 3_000_000;
                c.link_gbps = 400.0;
                c.flows = vec![
                    FlowCfg {
                        gbps: Some(120.0),
                        ..FlowCfg::new(0, 0, 262_144, None)
                    },
                    FlowCfg {
                        gbps: Some(120.0),
                        ..FlowCfg::new(1, 0, 262_144, None)
                    },
                    FlowCfg {
                        gbps: Some(150.0),
                        ..FlowCfg::new(2, 1, 262_144, None)
                    },
                ];
                c.slowdowns = vec![Slowdown {
                    host: 0,
                    start_ns: 100_000,
                    period_ns: 500_000,
                    slow_ns: 120_000,
                    gbps: 10.0,
                }];
                c.taps = vec![
                    TapPoint::new("leaf0", "s2", Dir::Both),
                    TapPoint::new("leaf0", "s0", Dir::Both),
                    TapPoint::new("leaf1", "r0", Dir::Both),
                    TapPoint::new("spine0", "leaf1", Dir::Both),
                ];
                if name == "ghost-drop" {
                    // Before the fix: a short minimum RTO, ECN above PFC XOFF
                    // (so PFC fires first and ECN never gets a say).
                    c.nic.min_rto_ns = 40_000;
                    c.switch.ecn_min = 1600 * 1024;
                    c.switch.ecn_max = 3200 * 1024;
                    c.switch.ecn_pmax = 0.05;
                    c.switch.pfc_xoff = 200 * 1024;
                    c.switch.pfc_xon = 120 * 1024;
                }
                // ghost-drop-fixed keeps the defaults: min RTO 1.05 ms,
                // ECN 180 KB / 800 KB / 10 %, PFC 2800 KB / 2200 KB.
            }
            "lossy-link" => {
                c.duration_ns = 2_000_000;
                c.flows = vec![
                    // Starts just below 2^24: the PSNs wrap mid-run.
                    FlowCfg {
                        start_psn: 0xFF_FF00,
                        ..FlowCfg::new(0, 0, 65536, Some(48))
                    },
                    FlowCfg::new(1, 1, 65536, Some(48)),
                ];
                c.impairments = vec![Impairment {
                    node: "spine0".into(),
                    toward: "leaf1".into(),
                    loss: 0.002,
                    corrupt: 0.001,
                    ..Impairment::default()
                }];
                c.taps = vec![
                    TapPoint::new("leaf0", "s0", Dir::Both),
                    TapPoint::new("leaf0", "s1", Dir::Both),
                    TapPoint::new("leaf1", "r0", Dir::Both),
                    TapPoint::new("leaf1", "r1", Dir::Both),
                ];
            }
            "lossy-spine" => {
                // One spine whose link down to leaf1 loses 0.5 % of frames,
                // mirrored on both ends of that link and at s0's port: the
                // hop spine0 → leaf1 is where the frames vanish
                // (see docs/synth.md). Two flows share it at 40 Gb/s each.
                c.spines = 1;
                c.duration_ns = 2_000_000;
                c.flows = vec![
                    FlowCfg {
                        gbps: Some(40.0),
                        ..FlowCfg::new(0, 0, 65536, Some(32))
                    },
                    FlowCfg {
                        gbps: Some(40.0),
                        ..FlowCfg::new(1, 1, 65536, Some(32))
                    },
                ];
                c.impairments = vec![Impairment {
                    node: "spine0".into(),
                    toward: "leaf1".into(),
                    loss: 0.005,
                    ..Impairment::default()
                }];
                c.taps = vec![
                    TapPoint::new("leaf0", "s0", Dir::Both),
                    TapPoint::new("spine0", "leaf1", Dir::Both),
                    TapPoint::new("leaf1", "spine0", Dir::Both),
                ];
            }
            "incast" => {
                c.senders = 8;
                c.receivers = 1;
                c.duration_ns = 2_000_000;
                c.flows = (0..8)
                    .map(|s| FlowCfg {
                        start_ns: s as u64 * 1000,
                        ..FlowCfg::new(s, 0, 131_072, None)
                    })
                    .collect();
                c.switch.pfc_xoff = 64 * 1024;
                c.switch.pfc_xon = 40 * 1024;
                c.taps = vec![
                    TapPoint::new("leaf1", "r0", Dir::Both),
                    TapPoint::new("leaf0", "s0", Dir::Both),
                ];
            }
            "pfc-storm" => {
                // r0 stops draining for good; s1 -> r1 is the victim.
                c.duration_ns = 250_000_000;
                c.rx_gbps = vec![0.0, 0.0];
                c.rate_changes = vec![RateChange {
                    host: 0,
                    at_ns: 30_000,
                    gbps: 0.0,
                }];
                c.flows = vec![
                    FlowCfg::new(0, 0, 65536, None),
                    FlowCfg::new(1, 1, 65536, None),
                ];
                c.switch.pfc_xoff = 200 * 1024;
                c.switch.pfc_xon = 120 * 1024;
                c.taps = vec![
                    TapPoint::new("leaf1", "r0", Dir::Both),
                    TapPoint::new("leaf0", "s1", Dir::Both),
                ];
            }
            "ecn-broken" => {
                c.senders = 2;
                c.receivers = 1;
                c.flows = vec![
                    FlowCfg::new(0, 0, 131_072, Some(64)),
                    FlowCfg::new(1, 0, 131_072, Some(64)),
                ];
                c.nic.cnp_enabled = false;
                c.taps = vec![
                    TapPoint::new("leaf0", "s0", Dir::Both),
                    TapPoint::new("leaf1", "r0", Dir::Both),
                ];
            }
            "ecmp-collision" => {
                // Two elephants whose UDP source ports hash onto spine0; spine1 idles.
                c.senders = 2;
                c.receivers = 2;
                c.spines = 2;
                c.flows = vec![
                    FlowCfg::new(0, 0, 1 << 20, None),
                    FlowCfg::new(1, 1, 1 << 20, None),
                ];
                c.taps = vec![
                    TapPoint::new("leaf0", "spine0", Dir::Tx),
                    TapPoint::new("leaf0", "spine1", Dir::Tx),
                    TapPoint::new("leaf0", "s0", Dir::Both),
                ];
                c.pin_flows(&[0, 0]);
            }
            "mirror-impaired" => {
                // A clean network seen through poor mirrors: each flow has its
                // own spine (no shared queue, no PFC), both uplinks send one
                // frame in 100 on a path 2 us longer, and the responders
                // place out-of-order packets without a NAK. The receiver-side
                // mirror drops 1 % and records a tenth of the frames twice,
                // exactly; the sender-side one drops 1 % and records every
                // frame again 400 ns later (a cut-through switch's latency)
                // as the switch routed it out.
                c.spines = 2;
                c.pin_flows(&[0, 1]);
                c.nic.ooo_tolerant = true;
                c.impairments = ["spine0", "spine1"]
                    .iter()
                    .map(|spine| Impairment {
                        node: "leaf0".into(),
                        toward: (*spine).into(),
                        reorder: 0.01,
                        reorder_delay_ns: 2_000,
                        ..Impairment::default()
                    })
                    .collect();
                c.taps = vec![
                    TapPoint {
                        drop: 0.01,
                        duplicate: 0.1,
                        ..TapPoint::new("leaf1", "r0", Dir::Both)
                    },
                    TapPoint {
                        drop: 0.01,
                        duplicate: 1.0,
                        dup_gap_ns: 400,
                        dup_egress: true,
                        ..TapPoint::new("leaf0", "s1", Dir::Both)
                    },
                ];
            }
            "corruption" => {
                // Bit errors on spine0 -> leaf1: one frame in 50 arrives
                // with a bad ICRC. Two flows of 256-byte writes share the
                // link at 40 Gb/s each (no congestion); the receiving NICs
                // discard the bad frames and NAK the next one, the senders
                // resend. The tap at r0 sees the bad frames, the one at s0
                // only the NAKs and the resends. A resend hit again draws no
                // second NAK (one per sequence error): the timeout recovers
                // it, and the run lasts long enough for a few of those.
                c.spines = 1;
                c.duration_ns = 4_000_000;
                c.flows = vec![
                    FlowCfg {
                        gbps: Some(40.0),
                        ..FlowCfg::new(0, 0, 256, Some(2000))
                    },
                    FlowCfg {
                        gbps: Some(40.0),
                        ..FlowCfg::new(1, 1, 256, Some(2000))
                    },
                ];
                c.impairments = vec![Impairment {
                    node: "spine0".into(),
                    toward: "leaf1".into(),
                    corrupt: 0.02,
                    ..Impairment::default()
                }];
                c.taps = vec![
                    TapPoint::new("leaf1", "r0", Dir::Both),
                    TapPoint::new("leaf0", "s0", Dir::Both),
                ];
            }
            "nic-timeout" => {
                // A request-response workload: one 4 KB write outstanding
                // per connection, over a link that loses one frame in 20. A
                // lost write has no successor to reveal the hole, so every
                // loss is recovered by the requester's timer (65.536 µs: IB
                // local ACK timeout T = 4) with no pause to hold the resend
                // up: the taps at the senders see the NIC's timeout itself.
                c.duration_ns = 2_000_000;
                c.nic.min_rto_ns = 65_536;
                c.nic.max_outstanding = 1;
                c.flows = vec![
                    FlowCfg::new(0, 0, 4096, None),
                    FlowCfg::new(1, 1, 4096, None),
                ];
                c.impairments = vec![Impairment {
                    node: "spine0".into(),
                    toward: "leaf1".into(),
                    loss: 0.05,
                    ..Impairment::default()
                }];
                c.taps = vec![
                    TapPoint::new("leaf0", "s0", Dir::Both),
                    TapPoint::new("leaf0", "s1", Dir::Both),
                ];
            }
            "mtu-blackhole" => {
                // spine0 -> leaf1 carries frames of at most 1522 bytes (a
                // 1500-byte MTU hop) while the NICs use RoCE MTU 4096: s0's
                // 64 KB writes (4 KB frames) vanish there every time, s1's
                // 1 KB writes pass. s0's requester times out and resends
                // the same first packet again and again.
                c.duration_ns = 6_000_000;
                c.nic.max_outstanding = 16;
                c.flows = vec![
                    FlowCfg::new(0, 0, 65536, None),
                    FlowCfg {
                        gbps: Some(0.5),
                        ..FlowCfg::new(1, 1, 1024, None)
                    },
                ];
                c.impairments = vec![Impairment {
                    node: "spine0".into(),
                    toward: "leaf1".into(),
                    max_frame: 1522,
                    ..Impairment::default()
                }];
                // The spine's port toward leaf1 sees both connections: s0's
                // requests with nothing coming back, s1's and its ACKs.
                c.taps = vec![
                    TapPoint::new("leaf0", "s0", Dir::Both),
                    TapPoint::new("leaf0", "s1", Dir::Both),
                    TapPoint::new("spine0", "leaf1", Dir::Both),
                ];
            }
            "mtu-mismatch" => {
                // Three writers of 64 KB messages; the second QP from s0 to
                // r0 was set up with RoCE MTU 1024 while the fabric and the
                // other QPs use 4096 (a NIC or an application that asked for
                // less): it needs four packets where the others need one.
                c.senders = 2;
                c.receivers = 2;
                c.flows = vec![
                    FlowCfg {
                        gbps: Some(20.0),
                        ..FlowCfg::new(0, 0, 65536, None)
                    },
                    FlowCfg {
                        gbps: Some(20.0),
                        ..FlowCfg::new(1, 1, 65536, None)
                    },
                    FlowCfg {
                        gbps: Some(20.0),
                        mtu: Some(1024),
                        ..FlowCfg::new(0, 0, 65536, None)
                    },
                ];
                c.taps = vec![
                    TapPoint::new("leaf0", "s0", Dir::Both),
                    TapPoint::new("leaf0", "s1", Dir::Both),
                ];
            }
            "qos-mismatch" => {
                // PFC runs on priority 3 (DSCP 26), where two writers into
                // r0 congest leaf1's port toward r0 and pause the fabric;
                // s2's NIC was left at TOS 0: its writes to r1 go on DSCP 0,
                // priority 0, which nothing ever pauses (PFC is on for
                // priority 3 alone). spine0 remarks DSCP 26 to 10 toward leaf1,
                // leaf0 the CNPs' DSCP 48 to 0 toward s0. Tagged frames (VLAN 100) carry the
                // priority in their PCP.
                c.senders = 3;
                c.receivers = 2;
                c.spines = 2;
                c.duration_ns = 1_000_000;
                c.vlan = Some(100);
                c.flows = vec![
                    FlowCfg::new(0, 0, 131_072, None),
                    FlowCfg::new(1, 0, 131_072, None),
                    FlowCfg {
                        prio: Some(0),
                        dscp: Some(0),
                        gbps: Some(20.0),
                        ..FlowCfg::new(2, 1, 65536, None)
                    },
                ];
                c.switch.pfc_xoff = 64 * 1024;
                c.switch.pfc_xon = 40 * 1024;
                // ECN marks before PFC fires: CNPs come back.
                c.switch.ecn_min = 16 * 1024;
                c.switch.ecn_max = 48 * 1024;
                c.pfc_priorities = Some(vec![3]);
                c.impairments = vec![
                    Impairment {
                        node: "spine0".into(),
                        toward: "leaf1".into(),
                        remark_dscp: vec![[26, 10]],
                        ..Impairment::default()
                    },
                    // leaf0 rewrites the CNPs' DSCP 48 to 0 toward s0.
                    Impairment {
                        node: "leaf0".into(),
                        toward: "s0".into(),
                        remark_dscp: vec![[48, 0]],
                        ..Impairment::default()
                    },
                ];
                c.taps = vec![
                    TapPoint::new("leaf0", "s0", Dir::Both),
                    TapPoint::new("leaf0", "s2", Dir::Both),
                    TapPoint::new("leaf1", "r0", Dir::Both),
                ];
                // The writers share spine0, s2's flow has spine1.
                c.pin_flows(&[0, 0, 1]);
            }
            "ecn-overmark" => {
                // Four writers into r0 at 20, 21, 23 and 24 Gb/s: 88 % of
                // r0's link, no congestion. Their packets drift past each
                // other at leaf1's port toward r0 and now and then queue a
                // packet or two behind each other. The switches' ECN profile
                // marks from 2 KB of queue (everything from 8 KB): less than
                // one packet. r0 returns CNPs for these meetings and DCQCN
                // holds the writers well below what they offer and the link
                // carries; no queue comes near PFC. 1.5 ms, seen at r0's
                // port (where all four pass).
                c.duration_ns = 1_500_000;
                c.senders = 4;
                c.receivers = 1;
                c.flows = [20.0, 21.0, 23.0, 24.0]
                    .iter()
                    .enumerate()
                    .map(|(s, &gbps)| FlowCfg {
                        gbps: Some(gbps),
                        ..FlowCfg::new(s, 0, 65536, None)
                    })
                    .collect();
                c.switch.ecn_min = 2 * 1024;
                c.switch.ecn_max = 8 * 1024;
                c.switch.ecn_pmax = 1.0;
                c.taps = vec![TapPoint::new("leaf1", "r0", Dir::Both)];
            }
            "dcqcn-off" => {
                // Two writers into r0: s0 at line rate with DCQCN, s1 at
                // 60 Gb/s from a NIC with congestion control off
                // (flows.1.dcqcn=false) for 40 messages (about 0.35 ms).
                // The queue at leaf1's port toward r0 marks both; s0 halves
                // its rate at each CNP, s1 keeps sending at 60 Gb/s whatever
                // comes back; once s1 is done s0 climbs back to line rate,
                // by 20 Gb/s per DCQCN period (an additive increase that
                // fits the climb into a 1 ms run).
                c.duration_ns = 1_000_000;
                c.nic.dcqcn.rai_gbps = 20.0;
                c.senders = 2;
                c.receivers = 1;
                c.flows = vec![
                    FlowCfg::new(0, 0, 65536, None),
                    FlowCfg {
                        gbps: Some(60.0),
                        dcqcn: Some(false),
                        ..FlowCfg::new(1, 0, 65536, Some(40))
                    },
                ];
                c.taps = vec![
                    TapPoint::new("leaf0", "s0", Dir::Both),
                    TapPoint::new("leaf0", "s1", Dir::Both),
                ];
            }
            _ => return None,
        }
        Some(c)
    }

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
