//! Ultra Ethernet Transport in the fabric model: RUD PDCs whose initiators
//! spray every packet on a new entropy value (the UDP source port ECMP
//! hashes, so the entropy chooses the path), switches that trim a request
//! (payload cut, DSCP re-marked, headers sent ahead) when their queue
//! passes a threshold instead of pausing, targets that answer each packet
//! with an ACK_CC (cumulative PSN, SACK bitmap, NSCC state) or a TRIMMED
//! NACK, and initiators with a per-packet retransmit timer and NSCC's
//! window (docs/synth.md, "UET"; the truth in docs/synth-truth.md, "UET").
//!
//! A scenario is a [`Config`] whose `uet` is set: the topology, links,
//! flows (one PDC each), taps and impairments are the RoCE model's knobs;
//! [`UetCfg`] holds what UET adds. `nic.min_rto_ns` is the retransmit
//! timeout.

pub mod net;
pub mod pdc;
pub mod truth;
pub mod wire;

#[cfg(test)]
mod tests;

use super::fabric::Run;
use super::scenario::{Config, Dir, FlowCfg, Impairment, TapPoint};
use pdc::{PdcSummary, Reason};
use serde::{Deserialize, Serialize};

/// NSCC's window (bytes) and its reactions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Nscc {
    pub init_cwnd: u64,
    pub max_cwnd: u64,
    /// Queueing delay NSCC aims at: an acknowledged packet's send-to-ACK
    /// time above it is "delay high".
    pub target_delay_ns: u64,
    /// Multiplicative decrease at full excess delay with ECN.
    pub md: f64,
    /// Window growth per window acknowledged, in packets: below target
    /// delay without ECN, and above it without ECN.
    pub fast_increase: f64,
    pub fair_increase: f64,
}

/// What UET adds to a scenario (`--set uet.KNOB=VALUE`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UetCfg {
    /// Entropy values each PDC sprays over, one per packet in turn.
    pub entropies: u16,
    /// A switch trims a request that would take its egress queue past
    /// this many bytes.
    pub trim_bytes: u64,
    /// The DSCP a trimmed packet is re-marked with.
    pub trim_dscp: u8,
    /// A switch marks CE on an ECT request joining a queue above this.
    pub ecn_bytes: u64,
    /// Beyond this a queue (trimmed headers' too) drops.
    pub queue_limit: u64,
    pub nscc: Nscc,
}

impl Default for UetCfg {
    fn default() -> UetCfg {
        UetCfg {
            entropies: 8,
            trim_bytes: 64 * 1024,
            trim_dscp: 46,
            ecn_bytes: 24 * 1024,
            queue_limit: 1 << 20,
            nscc: Nscc {
                init_cwnd: 64 * 1024,
                max_cwnd: 256 * 1024,
                target_delay_ns: 10_000,
                md: 0.5,
                fast_increase: 1.0,
                fair_increase: 0.25,
            },
        }
    }
}

/// The UET scenarios.
pub const SCENARIOS: &[&str] = &["uet-incast", "uet-spray"];

/// Fills `c` (a default configuration named `name`) for UET scenario
/// `name`; false for another name.
pub fn preset(c: &mut Config, name: &str) -> bool {
    let mut u = UetCfg::default();
    match name {
        "uet-incast" => {
            // Eight initiators write into r0 at once over two spines: the
            // queue at leaf1's port toward r0 passes the trim threshold,
            // r0 NACKs the trimmed packets and the initiators resend them;
            // the retransmit timer (8 µs) is shorter than what a packet
            // can wait in the queues, so some resends are spurious.
            c.senders = 8;
            c.receivers = 1;
            c.spines = 2;
            c.duration_ns = 1_000_000;
            c.nic.min_rto_ns = 8_000;
            c.flows = (0..8)
                .map(|s| FlowCfg {
                    start_ns: s as u64 * 200,
                    ..FlowCfg::new(s, 0, 32 * 1024, Some(6))
                })
                .collect();
            u.trim_bytes = 48 * 1024;
            u.ecn_bytes = 16 * 1024;
            u.nscc.init_cwnd = 32 * 1024;
            u.nscc.target_delay_ns = 8_000;
            c.taps = vec![
                TapPoint::new("leaf1", "r0", Dir::Both),
                TapPoint::new("leaf0", "s0", Dir::Both),
            ];
        }
        "uet-spray" => {
            // Two PDCs on four spines, each spraying over eight entropy
            // values; the path through spine2 is slower (every frame 3 µs
            // late on spine2 -> leaf1) and lossier (5 % lost there). No
            // queue builds: what the capture shows is the per-entropy
            // reordering and the losses the timer recovers.
            c.senders = 2;
            c.receivers = 2;
            c.spines = 4;
            c.duration_ns = 1_000_000;
            c.nic.min_rto_ns = 40_000;
            c.flows = (0..2)
                .map(|s| FlowCfg {
                    gbps: None,
                    ..FlowCfg::new(s, s, 32 * 1024, Some(16))
                })
                .collect();
            u.nscc.init_cwnd = 48 * 1024;
            c.impairments = vec![Impairment {
                node: "spine2".into(),
                toward: "leaf1".into(),
                loss: 0.05,
                reorder: 1.0,
                reorder_delay_ns: 3_000,
                ..Impairment::default()
            }];
            c.taps = vec![
                TapPoint::new("leaf0", "s0", Dir::Both),
                TapPoint::new("leaf1", "r0", Dir::Both),
            ];
        }
        _ => return false,
    }
    c.uet = Some(u);
    true
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

impl UetLog {
    fn event(&self, ts_ns: u64, port: usize, pkt: &net::Pkt, switch: bool) -> NetEvent {
        NetEvent {
            ts_ns,
            port,
            pdc: pkt.pdc,
            send: pkt.send,
            switch,
            frames_before: self.frame_sends.len(),
        }
    }

    fn trim(&mut self, ts_ns: u64, port: usize, pkt: &net::Pkt) {
        self.trims.push(self.event(ts_ns, port, pkt, true));
    }

    fn drop(&mut self, ts_ns: u64, port: usize, pkt: &net::Pkt, switch: bool) {
        self.drops.push(self.event(ts_ns, port, pkt, switch));
    }
}

/// Runs a UET scenario (`cfg.uet` set).
pub fn simulate(cfg: &Config) -> Result<Run, String> {
    let u = cfg.uet.clone().unwrap_or_default();
    Ok(net::Net::new(cfg, &u)?.run())
}
