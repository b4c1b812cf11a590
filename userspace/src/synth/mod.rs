//! (filled by its issue)
pub mod model;
