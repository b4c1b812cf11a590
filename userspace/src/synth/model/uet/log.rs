//! What a UET run of the model records (`uet::simulate`): its events and
//! per-PDC counts, the source of the UET truth (docs/synth-truth.md,
//! "UET"). `model::fabric::Run` carries it as its transport's log
//! (`TransportLog`; `super::log_of` reads it back).

use crate::synth::model::fabric::TransportLog;
use rocescope_common::wire::TransportId;
use serde::Serialize;
use std::net::Ipv4Addr;

/// Why the initiator resent a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Reason {
    /// A NACK with this code named it.
    Nack(u8),
    /// Its retransmit timer expired.
    Timeout,
}

/// What the model counted on one PDC (docs/synth-truth.md, "UET").
#[derive(Clone, Debug, Default, Serialize)]
pub struct PdcSummary {
    pub pdc: usize,
    pub src_ip: Option<Ipv4Addr>,
    pub dst_ip: Option<Ipv4Addr>,
    pub spdcid: u16,
    pub dpdcid: u16,
    pub start_psn: u32,
    pub packets: u64,
    pub entropies: Vec<u16>,
    pub packets_sent: u64,
    pub first_transmissions: u64,
    pub resends: u64,
    pub resends_nack: u64,
    pub resends_timeout: u64,
    pub spurious_resends: u64,
    pub timeouts: u64,
    pub nacks_received: u64,
    pub acks_received: u64,
    pub acked_packets: u64,
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    pub duplicates_received: u64,
    pub trimmed_received: u64,
    pub ce_received: u64,
    pub acks_sent: u64,
    pub nacks_sent: u64,
    pub done_ns: Option<u64>,
    pub cwnd_initial: u64,
    pub cwnd_min: u64,
    pub cwnd_max: u64,
    pub cwnd_final: u64,
    pub cwnd_decreases: u64,
}

/// One request packet leaving its initiator.
#[derive(Clone, Debug, Serialize)]
pub struct SendEvent {
    pub pdc: usize,
    /// Its index in the PDC (PSN = start PSN + index).
    pub idx: u64,
    pub ts_ns: u64,
    /// A resend, and why; `None`: the first transmission.
    pub reason: Option<Reason>,
    pub entropy: u16,
    /// A resend of a packet the target already held whole when it left.
    pub spurious: bool,
}

/// A request a switch trimmed, or a packet the network dropped.
#[derive(Clone, Debug, Serialize)]
pub struct NetEvent {
    pub ts_ns: u64,
    /// The egress port (trims, switch drops) or the receiving port (link
    /// losses), as `NODE-TOWARD` in `UetLog::port_names`.
    pub port: usize,
    pub pdc: usize,
    pub send: Option<usize>,
    /// Dropped by a switch (queue limit), not lost on a link.
    pub switch: bool,
    /// Tap records made before it (`Run::frames` up to here).
    pub frames_before: usize,
}

/// A request the target placed.
#[derive(Clone, Debug, Serialize)]
pub struct DeliverEvent {
    pub pdc: usize,
    pub idx: u64,
    pub ts_ns: u64,
    pub send: Option<usize>,
}

/// A NACK the target sent.
#[derive(Clone, Debug, Serialize)]
pub struct NackEvent {
    pub pdc: usize,
    pub idx: u64,
    pub code: u8,
    pub ts_ns: u64,
}

/// The model's own record of a UET run: every send, trim, drop, delivery
/// and NACK, and which send each request record is.
#[derive(Clone, Debug, Default)]
pub struct UetLog {
    pub sends: Vec<SendEvent>,
    pub trims: Vec<NetEvent>,
    pub drops: Vec<NetEvent>,
    pub delivers: Vec<DeliverEvent>,
    pub nacks: Vec<NackEvent>,
    /// `frame_sends[i]`: the send `Run::frames[i]` records (requests).
    pub frame_sends: Vec<Option<usize>>,
    pub pdcs: Vec<PdcSummary>,
    pub port_names: Vec<String>,
    pub rto_ns: u64,
    pub end_ns: u64,
    pub timeouts: u64,
}

impl TransportLog for UetLog {
    fn transport(&self) -> TransportId {
        TransportId::Uet
    }

    fn boxed_clone(&self) -> Box<dyn TransportLog> {
        Box::new(self.clone())
    }
}
