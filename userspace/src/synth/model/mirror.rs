//! A tap's recording impairments (`taps.N.drop`, `duplicate`, `dup_gap_ns`,
//! `dup_egress`; docs/synth.md), one per tap, shared by the RoCE fabric and
//! the UET one: each draws from the tap's own random stream, so a mirror's
//! decisions never shift the fabric's.

use super::scenario::TapPoint;
use super::spec::{FrameSpec, TapFrame};
use super::switch::Rng;

/// What a mirror does with one frame passing its port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Recording {
    /// It should have recorded the frame and did not.
    Dropped,
    Once,
    /// Recorded, then again `gap_ns` later; `egress`: the copy is the frame
    /// as the switch routed it out.
    Twice {
        gap_ns: u64,
        egress: bool,
    },
}

impl Recording {
    /// The second record of `frame`, recorded at tap `tap` at `now`
    /// (`None` unless [`Recording::Twice`]).
    pub(crate) fn copy(self, now: u64, tap: usize, frame: &FrameSpec) -> Option<TapFrame> {
        let Recording::Twice { gap_ns, egress } = self else {
            return None;
        };
        Some(TapFrame {
            ts_ns: now + gap_ns,
            tap,
            frame: if egress {
                frame.routed()
            } else {
                frame.clone()
            },
        })
    }
}

#[derive(Debug)]
pub(crate) struct Mirror {
    drop: f64,
    duplicate: f64,
    dup_gap_ns: u64,
    dup_egress: bool,
    rng: Rng,
}

/// Tap `t`'s drop and duplicate probabilities are probabilities.
pub(crate) fn check(t: usize, tp: &TapPoint) -> Result<(), String> {
    for (what, p) in [("drop", tp.drop), ("duplicate", tp.duplicate)] {
        if !(0.0..=1.0).contains(&p) {
            return Err(format!(
                "taps.{t}.{what} = {p}: a probability is between 0 and 1"
            ));
        }
    }
    Ok(())
}

impl Mirror {
    /// Tap `t`'s mirror in a run seeded `seed`.
    pub(crate) fn new(t: usize, tp: &TapPoint, seed: u64) -> Mirror {
        Mirror {
            drop: tp.drop,
            duplicate: tp.duplicate,
            dup_gap_ns: tp.dup_gap_ns,
            dup_egress: tp.dup_egress,
            rng: Rng::new(seed ^ 0x4D49_5252_4F52_0000u64.wrapping_add((t as u64 + 1) << 8)),
        }
    }

    /// How it records the next frame; `copyable`: a second mirror point may
    /// see the frame (not a PFC frame, which ends at the port it arrives on
    /// and starts at the one that sends it).
    pub(crate) fn record(&mut self, copyable: bool) -> Recording {
        if self.rng.chance(self.drop) {
            Recording::Dropped
        } else if copyable && self.rng.chance(self.duplicate) {
            Recording::Twice {
                gap_ns: self.dup_gap_ns,
                egress: self.dup_egress,
            }
        } else {
            Recording::Once
        }
    }
}
