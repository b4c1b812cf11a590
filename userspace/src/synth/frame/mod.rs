//! Frame builder: complete Ethernet frames with RoCEv2 or RoCEv1 (valid
//! ICRC), CNP, PFC, 802.3x PAUSE, optionally wrapped in ERSPAN II/III over
//! GRE.
//!
//! Each header is written at the offsets of [`rocescope_common::wire::field`],
//! the ones the decoder's walk reads at.
//!
//! Every frame type is a small plain struct with public fields and a
//! [`Default`]; [`WireFrame::write`] puts the frame into a caller's buffer
//! (cleared first, capacity reused), [`WireFrame::append`] adds it at the end
//! of what the buffer holds. Nothing is allocated per frame beyond the
//! buffer's growth.
//!
//! ```
//! use rocescope::synth::frame::{RoceFrame, WireFrame};
//! let mut buf = Vec::new();
//! let mut f = RoceFrame::default();
//! f.bth.opcode = 0x0A; // RC RDMA WRITE Only: a RETH follows the BTH
//! f.ext.reth_len = 4096;
//! f.payload_len = 1024;
//! f.write(&mut buf);
//! assert_eq!(buf.len(), 14 + 20 + 8 + 12 + 16 + 1024 + 4);
//! ```

use rocescope_common::proto::ip;
use rocescope_common::wire::field;

mod control;
mod erspan;
mod headers;
mod roce;

pub use control::{PauseFrame, PfcFrame, RawFrame};
pub use erspan::{Erspan, ErspanVersion, Wrapped};
pub use headers::{EthHeader, IpAddrs, IpHeader, VlanTag};
pub use roce::{Bth, ExtHeaders, GrhFields, IcrcMode, RoceFrame, RoceVersion};

/// Shortest Ethernet frame without its FCS: shorter frames get zero padding.
pub const MIN_FRAME_LEN: usize = 60;

/// Destination MAC of MAC Control frames (PAUSE and PFC).
pub const MAC_CONTROL_DST: [u8; 6] = [0x01, 0x80, 0xC2, 0x00, 0x00, 0x01];

/// Something that can be written as one Ethernet frame.
pub trait WireFrame {
    /// Appends the frame at the end of `out` (what `out` held is kept; the
    /// 60-byte minimum counts from where this frame starts).
    fn append(&self, out: &mut Vec<u8>);

    /// Replaces the contents of `out` with the frame.
    fn write(&self, out: &mut Vec<u8>) {
        out.clear();
        self.append(out);
    }
}

/// Writes `bytes` into `header` at the field offset `at`.
fn put(header: &mut [u8], at: usize, bytes: &[u8]) {
    header[at..at + bytes.len()].copy_from_slice(bytes);
}

/// RFC 1071 one's-complement sum of `data`, folded, not inverted.
fn ones_sum(data: &[u8], mut acc: u32) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        acc += u32::from(*last) << 8;
    }
    while acc > 0xFFFF {
        acc = (acc & 0xFFFF) + (acc >> 16);
    }
    acc
}

/// The IPv4 header checksum of `header` (its checksum field must be zero).
pub fn ipv4_checksum(header: &[u8]) -> u16 {
    !(ones_sum(header, 0) as u16)
}

/// Rewrites the length field (and the IPv4 checksum) of an IP header for
/// `payload_len` bytes of payload.
fn rewrite_ip_len(header: &mut [u8], payload_len: usize) {
    if header[0] >> 4 == 4 {
        use field::ipv4 as f4;
        let total = (header.len() + payload_len) as u16;
        put(header, f4::LENGTH, &total.to_be_bytes());
        put(header, f4::CHECKSUM, &[0, 0]);
        let sum = ipv4_checksum(header);
        put(header, f4::CHECKSUM, &sum.to_be_bytes());
    } else {
        put(
            header,
            field::ipv6::PAYLOAD_LEN,
            &(payload_len as u16).to_be_bytes(),
        );
    }
}

/// UDP checksum over the pseudo-header of `ip_header` and `datagram` (whose
/// checksum field must be zero). Zero results are sent as 0xFFFF.
fn udp_checksum(ip_header: &[u8], datagram: &[u8]) -> u16 {
    let len = datagram.len() as u32;
    let mut acc = u32::from(ip::PROTO_UDP) + (len & 0xFFFF) + (len >> 16);
    acc = if ip_header[0] >> 4 == 4 {
        ones_sum(
            &ip_header[field::ipv4::SRC_ADDR..field::ipv4::DST_ADDR + 4],
            acc,
        )
    } else {
        ones_sum(
            &ip_header[field::ipv6::SRC_ADDR..field::ipv6::DST_ADDR + 16],
            acc,
        )
    };
    let sum = !(ones_sum(datagram, acc) as u16);
    if sum == 0 { 0xFFFF } else { sum }
}

fn pad_min(out: &mut Vec<u8>, start: usize) {
    if out.len() - start < MIN_FRAME_LEN {
        out.resize(start + MIN_FRAME_LEN, 0);
    }
}
