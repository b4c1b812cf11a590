//! `rocescope synth`'s model: a compact, deterministic discrete-event
//! simulation of a small RoCEv2 leaf-spine fabric that emits what mirror
//! ports would capture, together with the ground truth.
//!
//! * [`scenario`] — [`Config`] (every knob) and the named presets.
//! * [`fabric`] — the event loop: ports with per-priority queues, PFC,
//!   WRED/ECN, links, taps.
//! * [`hosts`] — the addressing plan: host IPs and QP numbers.
//! * [`qp`] — RC requester (Go-Back-N, RTO, DCQCN) and responder state.
//! * [`spec`] — [`FrameSpec`]: the plain data a frame builder turns into bytes.
//! * [`truth`] — [`Truth`]: per-tap counters in the analyzer's vocabulary;
//!   [`hop_truth`] what passed between taps, [`pause_truth`] who paused whom,
//!   [`nic_truth`] how fast the NICs reacted.
//!
//! ```
//! use rocescope::synth::model::{Config, simulate, Truth};
//! let mut cfg = Config::preset("healthy").unwrap();
//! cfg.set("flows.0.messages", "2").unwrap();
//! let run = simulate(&cfg).unwrap();
//! let truth = Truth::of(&run);
//! assert!(truth.flows.iter().all(|f| f.retrans_packets == 0));
//! ```
pub mod bridge;
pub mod fabric;
pub mod hop_truth;
pub mod hosts;
pub mod inband;
mod mirror;
pub mod nic_truth;
pub mod pause_truth;
pub mod postcards;
pub mod qp;
pub mod scenario;
pub mod spec;
pub mod switch;
pub mod telemetry_truth;
pub mod truth;
pub mod uet;

#[cfg(test)]
mod tests;

pub use fabric::{FabricStats, PauseEpisode, PortCounters, QpSummary, Run, TapInfo};
pub use qp::QpStats;
pub use scenario::{
    Config, Dcqcn, Dir, FlowCfg, Impairment, NicCfg, RateChange, SCENARIOS, Slowdown, SwitchCfg,
    TapPoint,
};
pub use spec::{
    Aeth, CnpSpec, FrameMeta, FrameSpec, PfcSpec, Reth, RoceSpec, TapFrame, Trigger, Vlan,
};
pub use truth::{FlowTruth, PfcTruth, TapTruth, Truth};

/// A named scenario's configuration, RoCE's ([`Config::preset`]) or
/// UET's ([`uet::preset`]); `None` for an unknown name.
pub fn preset(name: &str) -> Option<Config> {
    Config::preset(name).or_else(|| uet::preset(name))
}

/// Run the model for `cfg`. Errors name the bad setting.
pub fn simulate(cfg: &Config) -> Result<Run, String> {
    if cfg.uet.is_some() {
        return uet::simulate(cfg);
    }
    Ok(fabric::Fabric::new(cfg)?.run())
}

/// Run a named scenario with a seed (and optional `--packets` limit).
pub fn run_scenario(
    name: &str,
    seed: u64,
    max_frames: Option<usize>,
) -> Result<(Run, Truth), String> {
    let mut cfg = preset(name)
        .ok_or_else(|| format!("unknown scenario `{name}`; known: {}", SCENARIOS.join(", ")))?;
    cfg.seed = seed;
    if max_frames.is_some() {
        cfg.max_frames = max_frames;
    }
    let run = simulate(&cfg)?;
    let truth = Truth::of(&run);
    Ok((run, truth))
}

/// A run's truth, written as its transport's own struct (`synth`'s
/// `--truth`): RoCE's, or UET's (`uet::truth`).
#[derive(serde::Serialize)]
#[serde(untagged)]
pub enum AnyTruth {
    Roce(Box<Truth>),
    Uet(Box<uet::truth::UetTruth>),
}

impl AnyTruth {
    /// The truth of `run`, its capture written with `opts`.
    pub fn of_capture(run: &Run, opts: &bridge::CaptureOptions) -> AnyTruth {
        match run.uet.as_deref() {
            Some(log) => AnyTruth::Uet(Box::new(uet::truth::UetTruth::of_capture(run, log, opts))),
            None => AnyTruth::Roce(Box::new(Truth::of_capture(run, opts))),
        }
    }

    /// What the capture holds: its taps, what they recorded.
    pub fn capture(&self) -> &truth::CaptureTruth {
        match self {
            AnyTruth::Roce(t) => &t.capture,
            AnyTruth::Uet(t) => &t.capture,
        }
    }
}

/// For counters a run without what they count leaves out of its JSON (so
/// such a run's truth reads as before they existed).
fn is_zero(n: &u64) -> bool {
    *n == 0
}
