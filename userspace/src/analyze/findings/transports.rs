//! The transports beside RoCE in the diagnosis: each one's findings in its
//! own module here (`transports/<transport>/`), its evidence one arm of
//! [`TransportEvidence`] (the collector's `Evidence::Transport`), and its
//! findings over the paths it tracks run by [`finding`]. One entry per
//! transport in each: a registration point (docs/build.md, "Adding a
//! transport"). Its findings over its own flows, made at the end of the
//! run from their rows, are called by the analyzer's end of run.

pub mod uet;

use super::{Diagnosis, Input};

/// What a transport's finding found: one arm per transport, each its own
/// evidence enum (one variant per finding id).
#[derive(Clone, Debug, PartialEq)]
pub enum TransportEvidence {
    /// The `uet-*` findings.
    Uet(uet::UetEvidence),
}

impl TransportEvidence {
    /// The finding's `id` (docs/report.md).
    pub fn id(&self) -> &'static str {
        match self {
            TransportEvidence::Uet(e) => e.id(),
        }
    }
}

/// The transports' findings over what `x` holds of their paths, in the
/// registry's order.
pub(super) fn finding(x: &Input, out: &mut Vec<Diagnosis>) {
    out.extend(uet::trimming::finding(x));
    out.extend(uet::spray::finding(x));
}
