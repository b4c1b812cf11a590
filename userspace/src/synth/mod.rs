//! Synthetic traffic: the emitting side of the decoder.
//!
//! * [`frame`] builds complete Ethernet frames — RoCEv2 with every extension
//!   header its opcode implies and a valid (or deliberately broken) ICRC,
//!   CNPs, PFC and PAUSE frames, ERSPAN II/III encapsulation.
//! * [`ib_frame`] builds native InfiniBand packets (LRH, GRH, VCRC) and
//!   the ERF records `ibdump` wraps them in.
//! * [`capture_writer`] streams them into pcap or pcapng files.
//! * [`model`] simulates a small RoCE fabric and says what its mirror taps saw.
//! * [`counters`] says what its NICs' counters would have shown.
//!
//! Nothing here depends on the decoder or the capture reader.
pub mod capture_writer;
pub mod counters;
pub mod frame;
pub mod ib_frame;
pub mod model;
pub mod telemetry;

pub use capture_writer::{CaptureWrite, PcapWriter, PcapngWriter};
pub use frame::{
    Bth, Erspan, ErspanVersion, EthHeader, ExtHeaders, IcrcMode, IpAddrs, IpHeader, PauseFrame,
    PfcFrame, RawFrame, RoceFrame, RoceVersion, VlanTag, WireFrame,
};

#[cfg(test)]
mod tests;
