//! UET's findings in words: over its paths (`paths`: `uet-trimming`,
//! `uet-spray-imbalance`) and its PDC directions (`pdc`:
//! `uet-spurious-retransmissions`, `uet-receiver-resources`).

mod paths;
mod pdc;

use crate::analyze::findings::UetEvidence;

use super::{Names, Words};

/// What a `uet-*` finding says: UET's one arm in `word`.
pub(super) fn words(e: &UetEvidence, n: &Names) -> Words {
    match e {
        UetEvidence::Trimming(e) => paths::trimming(e, n),
        UetEvidence::Spray(e) => paths::spray_imbalance(e, n),
        UetEvidence::Spurious(e) => pdc::spurious(e, n),
        UetEvidence::Resources(e) => pdc::resources(e, n),
    }
}
