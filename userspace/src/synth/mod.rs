//! Synthetic traffic: the emitting side of the decoder.
//!
//! * [`frame`] builds complete Ethernet frames — RoCEv2 with every extension
//!   header its opcode implies and a valid (or deliberately broken) ICRC,
//!   CNPs, PFC and PAUSE frames, ERSPAN II/III encapsulation.
//! * [`capture_writer`] streams them into pcap or pcapng files.
//!
//! Nothing here depends on the decoder or the capture reader.
pub mod capture_writer;
pub mod frame;

pub use capture_writer::{CaptureWrite, PcapWriter, PcapngWriter};
pub use frame::{
    Bth, Erspan, ErspanVersion, EthHeader, ExtHeaders, IcrcMode, IpAddrs, IpHeader, PauseFrame,
    PfcFrame, RawFrame, RoceFrame, VlanTag, WireFrame,
};

#[cfg(test)]
mod tests;
