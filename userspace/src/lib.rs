//! rocescope: why a "lossless" RoCEv2 fabric is slow.
//!
//! The library is a pipeline, and its folders are its stages:
//!
//! ```text
//! sources (pcap/pcapng reader, BPF filter) ─► decode (frame ─► PacketRecord)
//!     ─► analyze (per-QP PSN state, PFC state, findings) ─► tables (Parquet, JSON)
//! ```
//!
//! `live` is the other source: an XDP program decodes frames in the kernel
//! and hands records to the same pipeline; `live::replay` sends captures
//! out of an interface. It exists with the `live` cargo feature (the
//! default), which needs the eBPF toolchain to build (docs/build.md).
//!
//! `synth` goes the other way: it builds frames (valid ICRCs included) and
//! writes captures with known ground truth.
pub mod addr;
pub mod analyze;
pub mod cli;
pub mod counters;
pub mod decode;
pub mod diff;
pub mod error;
pub mod heap;
pub mod html;
#[cfg(feature = "live")]
pub mod live;
pub mod offline;
pub mod output;
pub mod pipeline;
pub mod progress;
pub mod render;
pub mod shard;
pub mod sources;
pub mod synth;
pub mod tables;
pub mod telemetry;
#[doc(hidden)]
pub mod testdata;
pub mod transport;
pub mod units;
pub mod view;
pub mod wireshark;

pub use error::{Error, Result};
pub use rocescope_common::{
    Kind, LinkControlView, PacketRecord, RoceView, flags, proto, summary, wire,
};
