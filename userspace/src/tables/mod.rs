//! (filled by its issue)
