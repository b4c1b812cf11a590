//! UET's findings in words: over its paths (`paths`: `uet-trimming`,
//! `uet-spray-imbalance`) and its PDC directions (`pdc`:
//! `uet-spurious-retransmissions`, `uet-receiver-resources`).

mod paths;
mod pdc;

pub(super) use paths::{spray_imbalance, trimming};
pub(super) use pdc::{resources, spurious};
