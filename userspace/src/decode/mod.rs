//! Frame decoding: zero-copy header views and the frame-to-record walk.
pub mod icrc;
