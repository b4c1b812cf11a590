//! Ultra Ethernet Transport in the fabric model: RUD PDCs whose initiators
//! spray every packet on a new entropy value (the UDP source port ECMP
//! hashes, so the entropy chooses the path), switches that trim a request
//! (payload cut, DSCP re-marked, headers sent ahead) when their queue
//! passes a threshold instead of pausing, targets that answer each packet
//! with an ACK_CC (cumulative PSN, SACK bitmap, NSCC state) or a TRIMMED
//! NACK, and initiators with a per-packet retransmit timer and NSCC's
//! window (docs/synth.md, "UET"; the truth in docs/synth-truth.md, "UET").
//!
//! A scenario is a [`Config`] whose transport part holds `uet`: the
//! topology, links, flows (one PDC each), taps and impairments are the RoCE
//! model's knobs; [`UetCfg`] holds what UET adds. `nic.min_rto_ns` is the
//! retransmit timeout. [`Model`] is how `model` reaches it (its
//! `TRANSPORTS`): the presets, `simulate`, the knobs' check and the truth.

pub mod cfg;
pub mod frame;
pub mod log;
pub mod net;
pub mod pdc;
pub mod truth;

#[cfg(test)]
mod tests;

use super::bridge::CaptureOptions;
use super::fabric::Run;
use super::scenario::{Config, Dir, FlowCfg, Impairment, TapPoint};
use super::truth::CaptureTruth;
use super::{TransportModel, TransportTruth};
pub use cfg::{Nscc, UetCfg};
pub use log::{DeliverEvent, NackEvent, NetEvent, SendEvent, UetLog};

/// The UET scenarios.
pub const SCENARIOS: &[&str] = &["uet-incast", "uet-spray"];

/// UET scenario `name`'s configuration; `None` for another name.
pub fn preset(name: &str) -> Option<Config> {
    let mut c = Config {
        name: name.into(),
        ..Config::default()
    };
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
        _ => return None,
    }
    u.put(&mut c);
    Some(c)
}

/// Runs a UET scenario (its [`UetCfg`] set).
pub fn simulate(cfg: &Config) -> Result<Run, String> {
    let u = UetCfg::of(cfg)?.unwrap_or_default();
    Ok(net::Net::new(cfg, &u)?.run())
}

/// The record a UET run kept (`None`: a run of another transport).
pub fn log_of(run: &Run) -> Option<&UetLog> {
    run.log_as()
}

/// UET's model, as `model` reaches it.
pub struct Model;

impl TransportModel for Model {
    fn scenarios(&self) -> &'static [&'static str] {
        SCENARIOS
    }

    fn preset(&self, name: &str) -> Option<Config> {
        preset(name)
    }

    fn check(&self, cfg: &Config) -> Result<(), String> {
        UetCfg::of(cfg).map(|_| ())
    }

    fn simulate(&self, cfg: &Config) -> Option<Result<Run, String>> {
        cfg.transport.contains_key(cfg::KEY).then(|| simulate(cfg))
    }

    fn truth(&self, run: &Run, opts: &CaptureOptions) -> Option<Box<dyn TransportTruth>> {
        let log = log_of(run)?;
        Some(Box::new(truth::UetTruth::of_capture(run, log, opts)))
    }
}

impl TransportTruth for truth::UetTruth {
    fn capture(&self) -> &CaptureTruth {
        &self.capture
    }

    fn json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self)
    }
}
