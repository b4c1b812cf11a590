//! Inband Flow Analyzer 2.0 (IETF draft-kumar-ippm-ifa): a 4-byte IFA
//! header between the IP header and the L4 header ([`Header`]; the IP
//! protocol is IFA's, 131 in the draft, and the header's next header is
//! the original), then after the L4 header a 4-byte metadata header
//! ([`MdHeader`]) and the metadata stack, 32 bytes per hop in the layout
//! local namespace 1 gives it ([`Hop`]).
//!
//! The layout was read from two implementations nobody here wrote, which
//! agree on it (docs/inputs.md, "Telemetry"): scapy's `contrib/ifa.py`
//! (citing draft 08) and a gopacket `layers/ifa.go`. Words 5–7 of a hop
//! differ between vendors (queue bytes, cells, or reserved): they are kept
//! raw ([`Hop::vendor_words`]).
//!
//! `no_std`, no allocation; every read is bounds-checked.
use super::{be16, be32};

/// Where each field starts, named once after the draft.
pub mod field {
    /// The IFA header.
    pub mod header {
        /// Ver (4 bits), GNS (4).
        pub const VER_GNS: usize = 0;
        pub const NEXT_HDR: usize = 1;
        /// Reserved (3 bits), MF, TS, I, TA, C.
        pub const FLAGS: usize = 2;
        pub const MF: u8 = 0x10;
        pub const TS: u8 = 0x08;
        pub const I: u8 = 0x04;
        pub const TA: u8 = 0x02;
        pub const C: u8 = 0x01;
        /// In 4-byte words.
        pub const MAX_LENGTH: usize = 3;
    }

    /// The metadata header after the L4 header.
    pub mod md {
        pub const REQUEST_VECTOR: usize = 0;
        /// L (loss), C (color), six reserved bits.
        pub const ACTION_VECTOR: usize = 1;
        pub const L: u8 = 0x80;
        pub const C: u8 = 0x40;
        pub const HOP_LIMIT: usize = 2;
        /// The stack's length in 4-byte words.
        pub const CURRENT_LENGTH: usize = 3;
    }

    /// One hop's metadata (local namespace 1).
    pub mod hop {
        /// LNS (4 bits), device id (20), IP TTL (8).
        pub const LNS_DEVICE_TTL: usize = 0;
        /// Egress port speed (4 bits), congestion (2), queue id (6),
        /// receive timestamp seconds (20).
        pub const SPEED_CN_QUEUE_SEC: usize = 4;
        pub const EGRESS_PORT: usize = 8;
        pub const INGRESS_PORT: usize = 10;
        pub const RX_TIMESTAMP_NS: usize = 12;
        pub const RESIDENCE_TIME_NS: usize = 16;
        /// Three vendor-dependent words.
        pub const VENDOR: usize = 20;
    }
}

pub const HEADER_LEN: usize = 4;
pub const MD_HEADER_LEN: usize = 4;
/// One hop's metadata.
pub const HOP_LEN: usize = 32;
/// The IP protocol the draft gives IFA (`--ifa-proto` moves it).
pub const DEFAULT_IP_PROTOCOL: u8 = 131;

/// Why an IFA header could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    Truncated,
}

/// The IFA header, between the IP header and the L4 header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Header<T> {
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        if buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(Header { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    pub fn version(&self) -> u8 {
        self.b()[field::header::VER_GNS] >> 4
    }

    /// Global namespace (0xF: none, each hop's LNS says its layout).
    pub fn gns(&self) -> u8 {
        self.b()[field::header::VER_GNS] & 0x0F
    }

    /// The original IP protocol (17 for RoCEv2's UDP).
    pub fn next_header(&self) -> u8 {
        self.b()[field::header::NEXT_HDR]
    }

    pub fn flags(&self) -> u8 {
        self.b()[field::header::FLAGS]
    }

    /// MF: a metadata fragmentation header precedes the metadata header.
    pub fn metadata_fragment(&self) -> bool {
        self.flags() & field::header::MF != 0
    }

    /// TS: tail stamping, the metadata at the end of the packet.
    pub fn tail_stamp(&self) -> bool {
        self.flags() & field::header::TS != 0
    }

    /// I: inband (the data packet itself, not a probe clone).
    pub fn inband(&self) -> bool {
        self.flags() & field::header::I != 0
    }

    /// TA: turn around.
    pub fn turn_around(&self) -> bool {
        self.flags() & field::header::TA != 0
    }

    /// C: a checksum header precedes the metadata header.
    pub fn checksum(&self) -> bool {
        self.flags() & field::header::C != 0
    }

    /// The stack's maximum length, in 4-byte words.
    pub fn max_length(&self) -> u8 {
        self.b()[field::header::MAX_LENGTH]
    }

    /// Headers this decoder does not step over precede or replace the
    /// metadata after the L4 header (MF, TS or C set).
    pub fn has_unread_headers(&self) -> bool {
        self.flags() & (field::header::MF | field::header::TS | field::header::C) != 0
    }
}

/// The metadata header after the L4 header, and the stack after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MdHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> MdHeader<T> {
    /// Wraps the metadata header and stack after checking the buffer holds
    /// the header and the stack its current length declares.
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let b = buffer.as_ref();
        if b.len() < MD_HEADER_LEN
            || b.len() < MD_HEADER_LEN + usize::from(b[field::md::CURRENT_LENGTH]) * 4
        {
            return Err(Error::Truncated);
        }
        Ok(MdHeader { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    pub fn request_vector(&self) -> u8 {
        self.b()[field::md::REQUEST_VECTOR]
    }

    pub fn action_vector(&self) -> u8 {
        self.b()[field::md::ACTION_VECTOR]
    }

    /// L: loss measurement.
    pub fn loss(&self) -> bool {
        self.action_vector() & field::md::L != 0
    }

    /// C: color.
    pub fn color(&self) -> bool {
        self.action_vector() & field::md::C != 0
    }

    pub fn hop_limit(&self) -> u8 {
        self.b()[field::md::HOP_LIMIT]
    }

    /// The stack's length in 4-byte words.
    pub fn current_length(&self) -> u8 {
        self.b()[field::md::CURRENT_LENGTH]
    }

    /// Bytes of this header and its stack.
    pub fn total_len(&self) -> usize {
        MD_HEADER_LEN + usize::from(self.current_length()) * 4
    }

    /// The whole hops of the stack.
    pub fn hop_count(&self) -> usize {
        usize::from(self.current_length()) * 4 / HOP_LEN
    }

    /// Hop `i`, in the order of the stack.
    pub fn hop(&self, i: usize) -> Option<Hop<&[u8]>> {
        let at = MD_HEADER_LEN + i.checked_mul(HOP_LEN)?;
        if i >= self.hop_count() {
            return None;
        }
        Hop::new_checked(self.b().get(at..at + HOP_LEN)?).ok()
    }
}

/// One hop's 32 bytes of metadata (local namespace 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Hop<T> {
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        if buffer.as_ref().len() < HOP_LEN {
            return Err(Error::Truncated);
        }
        Ok(Hop { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Local namespace: the layout of the rest (1 here).
    pub fn lns(&self) -> u8 {
        self.b()[field::hop::LNS_DEVICE_TTL] >> 4
    }

    /// Device id (20 bits).
    pub fn device_id(&self) -> u32 {
        (be32(self.b(), field::hop::LNS_DEVICE_TTL) >> 8) & 0x000F_FFFF
    }

    pub fn ip_ttl(&self) -> u8 {
        self.b()[field::hop::LNS_DEVICE_TTL + 3]
    }

    fn word1(&self) -> u32 {
        be32(self.b(), field::hop::SPEED_CN_QUEUE_SEC)
    }

    /// Egress port speed code (0 10G, 1 25G, 2 40G, 3 50G, 4 100G, 5 200G,
    /// 6 400G).
    pub fn egress_port_speed(&self) -> u8 {
        (self.word1() >> 28) as u8
    }

    /// Congestion (2 bits: ECN-like marks).
    pub fn congestion(&self) -> u8 {
        ((self.word1() >> 26) & 0x03) as u8
    }

    /// Queue id (6 bits).
    pub fn queue_id(&self) -> u8 {
        ((self.word1() >> 20) & 0x3F) as u8
    }

    /// Receive timestamp, seconds (20 bits).
    pub fn rx_timestamp_sec(&self) -> u32 {
        self.word1() & 0x000F_FFFF
    }

    pub fn egress_port(&self) -> u16 {
        be16(self.b(), field::hop::EGRESS_PORT)
    }

    pub fn ingress_port(&self) -> u16 {
        be16(self.b(), field::hop::INGRESS_PORT)
    }

    /// Receive timestamp, nanoseconds.
    pub fn rx_timestamp_ns(&self) -> u32 {
        be32(self.b(), field::hop::RX_TIMESTAMP_NS)
    }

    /// Residence time in the device, nanoseconds.
    pub fn residence_time_ns(&self) -> u32 {
        be32(self.b(), field::hop::RESIDENCE_TIME_NS)
    }

    /// Words 5, 6 and 7: vendor-dependent (queue bytes, cells, reserved).
    pub fn vendor_words(&self) -> [u32; 3] {
        let at = field::hop::VENDOR;
        [
            be32(self.b(), at),
            be32(self.b(), at + 4),
            be32(self.b(), at + 8),
        ]
    }
}

#[cfg(test)]
mod tests;
