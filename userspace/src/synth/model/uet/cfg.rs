//! What UET adds to a scenario's [`Config`]: [`UetCfg`], kept in the
//! config's transport part under [`KEY`] (`--set uet.KNOB=VALUE`).

use crate::synth::model::scenario::{Config, default_trim_dscp};
use serde::{Deserialize, Serialize};

/// UET's name in a scenario's transport part (`Config::transport`).
pub const KEY: &str = "uet";

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
            trim_dscp: default_trim_dscp(),
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

impl UetCfg {
    /// The UET knobs of `cfg`; `None` for a scenario of another transport.
    pub fn of(cfg: &Config) -> Result<Option<UetCfg>, String> {
        cfg.transport
            .get(KEY)
            .map(|v| serde_json::from_value(v.clone()).map_err(|e| e.to_string()))
            .transpose()
    }

    /// Sets `cfg`'s UET knobs to these (a UET scenario).
    pub fn put(&self, cfg: &mut Config) {
        let v = serde_json::to_value(self).expect("UetCfg serializes");
        cfg.transport.insert(KEY.into(), v);
    }
}
