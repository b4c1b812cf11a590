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
//! * [`uet`] — Ultra Ethernet's model on the same fabric, reached through
//!   [`TransportModel`] (its line in `TRANSPORTS`): its frames are
//!   [`FrameSpec::Transport`] ([`TransportFrame`]), its record of a run
//!   [`Run::transport_log`] ([`TransportLog`]), its knobs
//!   [`Config::transport`]'s, its truth a [`TransportTruth`].
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

use std::sync::LazyLock;

pub use fabric::{FabricStats, PauseEpisode, PortCounters, QpSummary, Run, TapInfo, TransportLog};
pub use qp::QpStats;
pub use scenario::{
    Config, Dcqcn, Dir, FlowCfg, Impairment, NicCfg, RateChange, Slowdown, SwitchCfg, TapPoint,
};
pub use spec::{
    Aeth, CnpSpec, FrameMeta, FrameSpec, PfcSpec, Reth, RoceSpec, TapFrame, TransportFrame,
    Trigger, Vlan,
};
pub use truth::{FlowTruth, PfcTruth, TapTruth, Truth};

/// The transports beside RoCE with a model of their own, built on the
/// fabric's: where a transport's model registers (docs/build.md, "Adding a
/// transport").
const TRANSPORTS: &[&dyn TransportModel] = &[&uet::Model];

/// A transport's model as the shared code reaches it: its scenarios, its
/// knobs in a [`Config`] (`Config::transport`), its runs and their truth.
pub trait TransportModel: Sync {
    /// Its scenarios' names (after RoCE's in [`SCENARIOS`]).
    fn scenarios(&self) -> &'static [&'static str];
    /// Its scenario `name`'s configuration; `None` for another name.
    fn preset(&self, name: &str) -> Option<Config>;
    /// Its knobs in `cfg`, if it holds any, are valid.
    fn check(&self, cfg: &Config) -> Result<(), String>;
    /// Runs `cfg` if it is a scenario of this transport, else `None`.
    fn simulate(&self, cfg: &Config) -> Option<Result<Run, String>>;
    /// The truth of `run`, its capture written with `opts`, if it is a
    /// run of this transport ([`Run::transport_log`]).
    fn truth(&self, run: &Run, opts: &bridge::CaptureOptions) -> Option<Box<dyn TransportTruth>>;
}

/// A run's truth, as a transport beside RoCE writes its own.
pub trait TransportTruth {
    /// What the capture holds: its taps, what they recorded.
    fn capture(&self) -> &truth::CaptureTruth;
    /// The truth as `synth --truth` writes it (pretty JSON).
    fn json(&self) -> serde_json::Result<String>;
}

/// Every scenario's name: RoCE's ([`scenario::SCENARIOS`]), then each
/// transport's in [`TRANSPORTS`]' order.
pub static SCENARIOS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    let others = TRANSPORTS.iter().flat_map(|t| t.scenarios());
    scenario::SCENARIOS.iter().chain(others).copied().collect()
});

/// A named scenario's configuration, RoCE's ([`Config::preset`]) or
/// another transport's; `None` for an unknown name.
pub fn preset(name: &str) -> Option<Config> {
    Config::preset(name).or_else(|| TRANSPORTS.iter().find_map(|t| t.preset(name)))
}

/// [`Config::set`], then the knobs of the transport beside RoCE that `cfg`
/// is a scenario of checked: as `Config::set` checks RoCE's, naming the
/// setting, and leaving `cfg` as it was on an error.
pub fn set(cfg: &mut Config, path: &str, value: &str) -> Result<(), String> {
    let mut next = cfg.clone();
    next.set(path, value)?;
    for t in TRANSPORTS {
        t.check(&next)
            .map_err(|e| format!("`{path}={value}`: {e}"))?;
    }
    *cfg = next;
    Ok(())
}

/// Run the model for `cfg`. Errors name the bad setting.
pub fn simulate(cfg: &Config) -> Result<Run, String> {
    match TRANSPORTS.iter().find_map(|t| t.simulate(cfg)) {
        Some(run) => run,
        None => Ok(fabric::Fabric::new(cfg)?.run()),
    }
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

/// A run's truth (`synth`'s `--truth`): RoCE's, or that of the transport
/// whose model made the run, each its own struct.
pub enum AnyTruth {
    Roce(Box<Truth>),
    Transport(Box<dyn TransportTruth>),
}

impl AnyTruth {
    /// The truth of `run`, its capture written with `opts`.
    pub fn of_capture(run: &Run, opts: &bridge::CaptureOptions) -> AnyTruth {
        match TRANSPORTS.iter().find_map(|t| t.truth(run, opts)) {
            Some(t) => AnyTruth::Transport(t),
            None => AnyTruth::Roce(Box::new(Truth::of_capture(run, opts))),
        }
    }

    /// What the capture holds: its taps, what they recorded.
    pub fn capture(&self) -> &truth::CaptureTruth {
        match self {
            AnyTruth::Roce(t) => &t.capture,
            AnyTruth::Transport(t) => t.capture(),
        }
    }

    /// The truth as `synth --truth` writes it (pretty JSON).
    pub fn json(&self) -> serde_json::Result<String> {
        match self {
            AnyTruth::Roce(t) => serde_json::to_string_pretty(t),
            AnyTruth::Transport(t) => t.json(),
        }
    }
}

/// For counters a run without what they count leaves out of its JSON (so
/// such a run's truth reads as before they existed).
fn is_zero(n: &u64) -> bool {
    *n == 0
}
