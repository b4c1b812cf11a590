//! What a run of the model produced: the frames the taps recorded, the
//! connections and ports as they ended, the pause episodes and the
//! fabric's counters ([`Run`]).

use crate::synth::model::postcards::{PortName, SwitchLog};
use crate::synth::model::qp::{QpStats, RateStep};
use crate::synth::model::scenario::Dir;
use crate::synth::model::spec::{FrameMeta, TapDrop, TapFrame, Trigger};
use rocescope_common::wire::TransportId;
use serde::Serialize;
use std::any::Any;
use std::net::Ipv4Addr;

/// What a port's own hardware counters would show (synth::counters turns
/// them into NIC counter names).
#[derive(Clone, Debug, Default, Serialize)]
pub struct PortCounters {
    pub node: String,
    pub toward: String,
    /// The host's address, when the port is a host's NIC.
    pub ip: Option<Ipv4Addr>,
    /// Frames put on the link into this port by its peer, per priority.
    pub sent: [u64; 8],
    /// Of those, frames that arrived intact.
    pub received: [u64; 8],
    /// Frames that arrived corrupted.
    pub corrupted: u64,
    /// PFC frames received per priority (XON included).
    pub pfc_received: [u64; 8],
    /// Time this port's transmitter was held by received PFC, per priority.
    pub paused_ns: [u64; 8],
}

/// A mirror tap as resolved on the built fabric.
#[derive(Clone, Debug, Serialize)]
pub struct TapInfo {
    pub name: String,
    pub node: String,
    pub toward: String,
    pub dir: Dir,
    pub link_gbps: f64,
}

/// Fabric-wide counters of the model.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FabricStats {
    pub events: u64,
    pub end_ns: u64,
    /// Discards by switches (queue limit): what a switch's counters show.
    pub switch_drops: u64,
    /// RoCE requests the switches trimmed (`switch.trim_bytes`).
    #[serde(skip_serializing_if = "crate::synth::model::is_zero")]
    pub trimmed: u64,
    pub link_drops: u64,
    pub corrupted: u64,
    pub pfc_frames_sent: u64,
    /// Frames the network delayed on a longer path (`reorder` impairments).
    pub reordered: u64,
    /// Frames the taps should have recorded and dropped (their `drop`).
    pub tap_dropped: u64,
    /// Second copies the taps recorded (their `duplicate`).
    pub tap_duplicates: u64,
    /// Stopped early because the taps recorded `max_frames`.
    pub truncated: bool,
}

/// One pause episode of a port (`docs/synth-truth.md`, "pfc_trees"): from
/// the XOFF it sent when the bytes received on a priority and still held
/// crossed its threshold, to its XON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PauseEpisode {
    /// The pausing port (index into `Run::ports`), its MAC and the priority.
    pub port: usize,
    pub mac: [u8; 6],
    pub priority: u8,
    pub onset_ns: u64,
    /// Its XON (`None`: still pausing when the run ended).
    pub end_ns: Option<u64>,
    /// Bytes received on the port and priority and still held at the onset.
    pub held_bytes: u64,
    /// The egress port where most of them waited (`None`: a NIC's receive
    /// queue).
    pub held_at: Option<usize>,
    /// The episode whose pause held that egress port at the onset (`None`:
    /// the port was not paused; the congestion began here).
    pub cause: Option<usize>,
}

/// Everything a run produced: the tap frames (time-ordered) with the
/// model's own annotations, and its counters.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    pub scenario: String,
    pub seed: u64,
    pub taps: Vec<TapInfo>,
    pub frames: Vec<TapFrame>,
    /// `meta[i]` annotates `frames[i]`.
    pub meta: Vec<FrameMeta>,
    /// Frames a tap should have recorded and did not (time-ordered).
    pub tap_drops: Vec<TapDrop>,
    /// Requests and responses (ACK, NAK) the network lost (a link or a
    /// switch), time-ordered: the truth of what vanished between taps.
    #[serde(skip)]
    pub net_drops: Vec<TapDrop>,
    pub qps: Vec<QpSummary>,
    pub fabric: FabricStats,
    /// Every port's counters.
    pub ports: Vec<PortCounters>,
    /// The requesters' retransmission timeout (`nic.min_rto_ns`).
    pub rto_ns: u64,
    /// Every pause episode of every port, by onset.
    #[serde(skip)]
    pub pauses: Vec<PauseEpisode>,
    /// Every link's propagation delay (`prop_ns`) and the longest frame
    /// any port sent: what bounds how late a tap records a PFC frame.
    pub prop_ns: u64,
    pub max_frame_len: u32,
    /// Every link's speed.
    pub link_gbps: f64,
    /// The switches' queue peaks and the telemetry reports they sent.
    #[serde(skip)]
    pub switch_log: SwitchLog,
    /// Every port's node, name (`NODE-TOWARD`) and number on its node,
    /// for the telemetry truth.
    #[serde(skip)]
    pub port_names: Vec<PortName>,
    /// The own record of a run of a transport beside RoCE (its model's,
    /// `crate::synth::model::TransportModel`); `None` for RoCE.
    #[serde(skip)]
    pub transport_log: Option<Box<dyn TransportLog>>,
}

impl Run {
    /// The transport the run's flows are (a scenario has one).
    pub fn transport(&self) -> TransportId {
        self.transport_log
            .as_ref()
            .map_or(TransportId::Roce, |l| l.transport())
    }

    /// The record a transport's model kept of the run, as its own type `T`.
    pub fn log_as<T: TransportLog>(&self) -> Option<&T> {
        let log: &dyn Any = &**self.transport_log.as_ref()?;
        log.downcast_ref()
    }
}

/// What the model of a transport beside RoCE records of a run, beside the
/// frames, for its truth: carried by [`Run::transport_log`].
pub trait TransportLog: Any + std::fmt::Debug + Send + Sync {
    /// The transport the run's flows are.
    fn transport(&self) -> TransportId;
    fn boxed_clone(&self) -> Box<dyn TransportLog>;
}

impl Clone for Box<dyn TransportLog> {
    fn clone(&self) -> Self {
        self.boxed_clone()
    }
}

/// One connection as configured, with what the model did on it.
#[derive(Clone, Debug, Serialize)]
pub struct QpSummary {
    pub src_ip: Ipv4Addr,
    pub dst_ip: Ipv4Addr,
    pub requester_qpn: u32,
    pub responder_qpn: u32,
    pub udp_sport: u16,
    /// Delivered payload over the run's simulated time (the application's goodput).
    pub goodput_gbps: f64,
    pub stats: QpStats,
    /// Indices the responder named in sequence-error NAKs.
    #[serde(skip)]
    pub nak_named: Vec<u64>,
    /// Each sequence-error NAK's cause: `(send_seq, resp_seq)` (`Qp::nak_causes`).
    #[serde(skip)]
    pub nak_causes: Vec<(u64, u64)>,
    /// The NAKs of trimmed requests: `(index named, resp_seq)`
    /// (`Qp::trim_naks`).
    #[serde(skip)]
    pub trim_naks: Vec<(u64, u64)>,
    /// Each NAK's first resend: `(resp_seq, send_seq)` (`Qp::nak_resends`).
    #[serde(skip)]
    pub nak_resends: Vec<(u64, u64)>,
    /// One past the highest index the responder acknowledged.
    #[serde(skip)]
    pub resp_acked: u64,
    /// The reason of each Go-Back-N rewind, in order.
    #[serde(skip)]
    pub rewinds: Vec<Trigger>,
    /// Every expiry of the retransmission timer with packets outstanding.
    #[serde(skip)]
    pub timer_fires: Vec<crate::synth::model::qp::TimerFire>,
    /// The most rewinds to one packet with no ACK progress between: its PSN
    /// and how many.
    #[serde(skip)]
    pub max_rewind_run: Option<(u32, u64)>,
    /// The connection's RoCE path MTU.
    #[serde(skip)]
    pub mtu: u32,
    /// The switch ports its requests left by (`NODE-TOWARD`), in path order.
    #[serde(skip)]
    pub requests_via: Vec<String>,
    /// Its data and ACKs' priority and DSCP as sent, and the DSCP rewrites
    /// its frames met (`NODE-TOWARD: FROM → TO`).
    #[serde(skip)]
    pub priority: u8,
    #[serde(skip)]
    pub dscp: u8,
    #[serde(skip)]
    pub dscp_rewrites: Vec<String>,
    /// Its requester's rate steps.
    #[serde(skip)]
    pub rate_log: Vec<RateStep>,
    /// Its requester runs DCQCN.
    #[serde(skip)]
    pub dcqcn: bool,
}
