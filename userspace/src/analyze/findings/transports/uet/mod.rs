//! UET's findings: over its PDC directions (`pdc`: spurious
//! retransmissions, receiver resources; docs/analysis.md, "UET: PDCs") and
//! its paths (`trimming`, `spray`: docs/analysis.md, "UET: spraying and
//! trimming"), each an evidence struct rendered by `render::transports::uet`.

pub(in crate::analyze) mod pdc;
pub(super) mod spray;
pub(super) mod trimming;

pub use pdc::{PdcRef, ResourcePdc, SpuriousPdc, UetResources, UetSpurious};
pub use spray::{
    HEAVY_FACTOR, Heavy, LATE_FACTOR, LATE_FLOOR_NS, Late, SPRAY_MIN_PACKETS, SprayImbalance,
    UnevenPdc,
};
pub use trimming::{TrimmedPdc, UetTrimming};

/// What a `uet-*` finding found, one variant per finding id: UET's one arm
/// in `findings::transports::TransportEvidence`.
#[derive(Clone, Debug, PartialEq)]
pub enum UetEvidence {
    /// `uet-trimming`.
    Trimming(UetTrimming),
    /// `uet-spray-imbalance`.
    Spray(SprayImbalance),
    /// `uet-spurious-retransmissions`.
    Spurious(Box<UetSpurious>),
    /// `uet-receiver-resources`.
    Resources(Box<UetResources>),
}

impl UetEvidence {
    /// The finding's `id` (docs/report.md).
    pub fn id(&self) -> &'static str {
        match self {
            UetEvidence::Trimming(_) => "uet-trimming",
            UetEvidence::Spray(_) => "uet-spray-imbalance",
            UetEvidence::Spurious(_) => "uet-spurious-retransmissions",
            UetEvidence::Resources(_) => "uet-receiver-resources",
        }
    }
}
