//! UET's findings: over its PDC directions (`pdc`: spurious
//! retransmissions, receiver resources; docs/analysis.md, "UET: PDCs") and
//! its paths (`trimming`, `spray`: docs/analysis.md, "UET: spraying and
//! trimming"), each an evidence struct rendered by `render::findings::uet`.

pub(in crate::analyze) mod pdc;
pub(super) mod spray;
pub(super) mod trimming;

pub use pdc::{PdcRef, ResourcePdc, SpuriousPdc, UetResources, UetSpurious};
pub use spray::{
    HEAVY_FACTOR, Heavy, LATE_FACTOR, LATE_FLOOR_NS, Late, SPRAY_MIN_PACKETS, SprayImbalance,
    UnevenPdc,
};
pub use trimming::{TrimmedPdc, UetTrimming};
