//! In-band Network Telemetry over UDP (P4.org INT Dataplane Specification
//! v2.1, §5.7.2 "INT over TCP/UDP" and §5.8 "INT-MD Metadata Header
//! Format"): the 4-byte shim after the UDP header ([`Shim`]), the 12-byte
//! INT-MD metadata header ([`MdHeader`]) and the per-hop metadata stack,
//! newest hop first ([`Metadata`], one hop's words as the instruction
//! bitmap lays them out; the Telemetry Report's `RepMdBits` use the same
//! bits, `wire::report`).
//!
//! An INT packet is recognised either by a DSCP value the operator
//! reserves (the UDP destination port is the original one) or by a UDP
//! destination port the operator chooses, the original port then carried
//! in the shim (NPT 1). [`Signal`] says which applies to a frame.
//!
//! `no_std`, no allocation; every read is bounds-checked (a short buffer is
//! an [`Error`], never a panic).
use super::{be16, be24, be32};

/// Where each field starts, named once after the spec.
pub mod field {
    /// The shim header for TCP/UDP.
    pub mod shim {
        /// Type (4 bits), NPT (2), reserved (2).
        pub const TYPE_NPT: usize = 0;
        pub const TYPE_SHIFT: u8 = 4;
        pub const NPT_SHIFT: u8 = 2;
        pub const NPT_MASK: u8 = 0x03;
        /// Length of the INT-MD header and stack in 4-byte words (the
        /// shim itself not counted since v2.0).
        pub const LENGTH: usize = 1;
        /// NPT 0: reserved byte, then the original DSCP (6 bits) and 2
        /// reserved; NPT 1: the original UDP destination port; NPT 2: a
        /// reserved byte, then the original IP protocol.
        pub const PORT_PROTO_DSCP: usize = 2;
    }

    /// The INT-MD metadata header, from its first byte.
    pub mod md {
        /// Ver (4 bits), D, E, M, and the first reserved bit.
        pub const VER_FLAGS: usize = 0;
        pub const VER_SHIFT: u8 = 4;
        pub const D: u8 = 0x08;
        pub const E: u8 = 0x04;
        pub const M: u8 = 0x02;
        /// Three reserved bits, Hop ML (5 bits, in 4-byte words).
        pub const HOP_ML: usize = 2;
        pub const HOP_ML_MASK: u8 = 0x1F;
        pub const REMAINING_HOP_CNT: usize = 3;
        pub const INSTRUCTION_BITMAP: usize = 4;
        pub const DOMAIN_SPECIFIC_ID: usize = 6;
        pub const DS_INSTRUCTION: usize = 8;
        pub const DS_FLAGS: usize = 10;
    }

    /// Instruction bitmap bits (bit 0 is the most significant), each
    /// asking every hop for 4 bytes of metadata but bits 4–6 (8 bytes);
    /// the Checksum Complement (bit 15) comes last.
    pub mod bits {
        pub const NODE_ID: u16 = 0x8000;
        /// Level 1 ingress interface id (16 bits) + egress (16 bits).
        pub const L1_PORTS: u16 = 0x4000;
        pub const HOP_LATENCY: u16 = 0x2000;
        /// Queue id (8 bits) + queue occupancy (24 bits).
        pub const QUEUE: u16 = 0x1000;
        pub const INGRESS_TIMESTAMP: u16 = 0x0800;
        pub const EGRESS_TIMESTAMP: u16 = 0x0400;
        /// Level 2 ingress interface id (32 bits) + egress (32 bits).
        pub const L2_PORTS: u16 = 0x0200;
        pub const EGRESS_TX_UTILIZATION: u16 = 0x0100;
        /// Buffer id (8 bits) + buffer occupancy (24 bits).
        pub const BUFFER: u16 = 0x0080;
        /// The bits whose metadata is 8 bytes long.
        pub const EIGHT_BYTES: u16 = INGRESS_TIMESTAMP | EGRESS_TIMESTAMP | L2_PORTS;
        /// INT-MD: Checksum Complement. In a telemetry report's
        /// `RepMdBits`: queue id (8 bits) + drop reason (8) + padding (16).
        pub const LAST: u16 = 0x0001;
    }
}

/// The shim's length.
pub const SHIM_LEN: usize = 4;
/// The INT-MD metadata header's length.
pub const MD_HEADER_LEN: usize = 12;
/// INT header type 1: INT-MD (the one with a metadata stack).
pub const TYPE_MD: u8 = 1;
/// NPT 1: the UDP payload follows the INT stack; the shim holds the
/// original UDP destination port.
pub const NPT_UDP_PAYLOAD: u8 = 1;
/// NPT 2: the original L4 header follows the INT stack (a new UDP header
/// was inserted); the shim holds the original IP protocol.
pub const NPT_L4_HEADER: u8 = 2;
/// The metadata header version this decoder reads.
pub const VERSION: u8 = 2;
/// A metadata word a hop could not fill (spec: "all-ones reserved value").
pub const INVALID: u32 = u32::MAX;

/// Why an INT header could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The buffer ends before the header (or the stack the shim declares).
    Truncated,
    /// A length that cannot be: a stack shorter than the metadata header,
    /// a per-hop length shorter than the instructions ask for.
    Invalid,
}

/// How the operator marked INT packets, when it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// The IP DSCP has the reserved value: the shim follows the UDP header
    /// and the destination port is the original one.
    Dscp,
    /// The UDP destination port is INT's: the shim carries the original.
    Port,
}

/// The 4-byte INT shim header for TCP/UDP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shim<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Shim<T> {
    /// Wraps `buffer` after checking it holds the shim.
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        if buffer.as_ref().len() < SHIM_LEN {
            return Err(Error::Truncated);
        }
        Ok(Shim { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// INT header type: 1 INT-MD, 2 INT-Destination, 3 INT-MX.
    pub fn int_type(&self) -> u8 {
        self.b()[field::shim::TYPE_NPT] >> field::shim::TYPE_SHIFT
    }

    /// Next Protocol Type (meaningful with port signalling only).
    pub fn npt(&self) -> u8 {
        (self.b()[field::shim::TYPE_NPT] >> field::shim::NPT_SHIFT) & field::shim::NPT_MASK
    }

    /// Length of the INT headers after the shim, in 4-byte words.
    pub fn length(&self) -> u8 {
        self.b()[field::shim::LENGTH]
    }

    /// Bytes of INT after the shim (metadata header and stack).
    pub fn int_len(&self) -> usize {
        usize::from(self.length()) * 4
    }

    /// NPT 1: the original UDP destination port.
    pub fn original_port(&self) -> u16 {
        be16(self.b(), field::shim::PORT_PROTO_DSCP)
    }

    /// NPT 2: the original IP protocol.
    pub fn original_protocol(&self) -> u8 {
        self.b()[field::shim::PORT_PROTO_DSCP + 1]
    }

    /// NPT 0: the original DSCP (optional: 0 when the source left it out).
    pub fn original_dscp(&self) -> u8 {
        self.b()[field::shim::PORT_PROTO_DSCP + 1] >> 2
    }
}

/// The 12-byte INT-MD metadata header and the stack after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MdHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> MdHeader<T> {
    /// Wraps `buffer`, the metadata header and stack (`Shim::int_len`
    /// bytes), after checking it holds the header and a per-hop length no
    /// shorter than the instruction bitmap asks for.
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        if buffer.as_ref().len() < MD_HEADER_LEN {
            return Err(Error::Truncated);
        }
        let h = MdHeader { buffer };
        if h.hop_len() < metadata_len(h.instruction_bitmap()) {
            return Err(Error::Invalid);
        }
        Ok(h)
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    pub fn version(&self) -> u8 {
        self.b()[field::md::VER_FLAGS] >> field::md::VER_SHIFT
    }

    /// D: the sink discards the packet after extracting the metadata.
    pub fn discard(&self) -> bool {
        self.b()[field::md::VER_FLAGS] & field::md::D != 0
    }

    /// E: a hop could not add its metadata (remaining hop count 0).
    pub fn max_hop_count_exceeded(&self) -> bool {
        self.b()[field::md::VER_FLAGS] & field::md::E != 0
    }

    /// M: a hop could not add its metadata without exceeding the MTU.
    pub fn mtu_exceeded(&self) -> bool {
        self.b()[field::md::VER_FLAGS] & field::md::M != 0
    }

    /// Hop ML: each hop's metadata, in 4-byte words.
    pub fn hop_ml(&self) -> u8 {
        self.b()[field::md::HOP_ML] & field::md::HOP_ML_MASK
    }

    /// Each hop's metadata in bytes.
    pub fn hop_len(&self) -> usize {
        usize::from(self.hop_ml()) * 4
    }

    pub fn remaining_hop_count(&self) -> u8 {
        self.b()[field::md::REMAINING_HOP_CNT]
    }

    pub fn instruction_bitmap(&self) -> u16 {
        be16(self.b(), field::md::INSTRUCTION_BITMAP)
    }

    pub fn domain_specific_id(&self) -> u16 {
        be16(self.b(), field::md::DOMAIN_SPECIFIC_ID)
    }

    pub fn ds_instruction(&self) -> u16 {
        be16(self.b(), field::md::DS_INSTRUCTION)
    }

    pub fn ds_flags(&self) -> u16 {
        be16(self.b(), field::md::DS_FLAGS)
    }

    /// The metadata stack: every byte after the header.
    pub fn stack(&self) -> &[u8] {
        self.b().get(MD_HEADER_LEN..).unwrap_or(&[])
    }

    /// Hops in the stack (whole `hop_len` slices; source-only domain
    /// specific metadata, which the spec lets the source add beyond Hop ML,
    /// makes the last slice short and is not read).
    pub fn hop_count(&self) -> usize {
        match self.hop_len() {
            0 => 0,
            n => self.stack().len() / n,
        }
    }

    /// Hop `i` of the stack, 0 the newest (the hop nearest the capture).
    pub fn hop(&self, i: usize) -> Option<Metadata<&[u8]>> {
        let n = self.hop_len();
        let at = i.checked_mul(n)?;
        let bytes = self.stack().get(at..at.checked_add(n)?)?;
        Metadata::new_checked(bytes, self.instruction_bitmap()).ok()
    }
}

/// Bytes of baseline metadata the bits of `bitmap` ask for (4 each, 8 for
/// bits 4–6).
pub const fn metadata_len(bitmap: u16) -> usize {
    (bitmap.count_ones() + (bitmap & field::bits::EIGHT_BYTES).count_ones()) as usize * 4
}

/// One hop's baseline metadata, laid out as `bitmap` says: each set bit's
/// words in bit order (most significant first), the last bit's at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metadata<T: AsRef<[u8]>> {
    buffer: T,
    bitmap: u16,
}

impl<T: AsRef<[u8]>> Metadata<T> {
    /// Wraps one hop's metadata after checking it holds every word
    /// `bitmap` asks for (domain specific words may follow; they are not
    /// read).
    pub fn new_checked(buffer: T, bitmap: u16) -> Result<Self, Error> {
        if buffer.as_ref().len() < metadata_len(bitmap) {
            return Err(Error::Truncated);
        }
        Ok(Metadata { buffer, bitmap })
    }

    pub fn bitmap(&self) -> u16 {
        self.bitmap
    }

    /// Where `bit`'s metadata starts, when the bitmap has it: after every
    /// more significant bit's (the last bit, 15, comes after all others,
    /// as every other bit is more significant anyway).
    fn at(&self, bit: u16) -> Option<usize> {
        if self.bitmap & bit == 0 {
            return None;
        }
        let before = self.bitmap & !(bit | (bit - 1));
        Some(metadata_len(before))
    }

    fn word(&self, bit: u16, offset: usize) -> Option<u32> {
        let at = self.at(bit)? + offset;
        let b = self.buffer.as_ref().get(at..at + 4)?;
        Some(be32(b, 0))
    }

    /// A 4-byte value, `None` when not asked for or all ones (a hop's
    /// "not available").
    fn valid(&self, bit: u16, offset: usize) -> Option<u32> {
        self.word(bit, offset).filter(|&w| w != INVALID)
    }

    fn valid64(&self, bit: u16) -> Option<u64> {
        let hi = self.word(bit, 0)?;
        let lo = self.word(bit, 4)?;
        let v = (u64::from(hi) << 32) | u64::from(lo);
        (v != u64::MAX).then_some(v)
    }

    /// Node ID (bit 0; in a telemetry report the group header's instead).
    pub fn node_id(&self) -> Option<u32> {
        self.valid(field::bits::NODE_ID, 0)
    }

    /// Level 1 ingress interface id.
    pub fn ingress_port(&self) -> Option<u16> {
        self.valid(field::bits::L1_PORTS, 0)
            .map(|w| (w >> 16) as u16)
    }

    /// Level 1 egress interface id.
    pub fn egress_port(&self) -> Option<u16> {
        self.valid(field::bits::L1_PORTS, 0).map(|w| w as u16)
    }

    /// Hop latency, in the device's unit (docs/inputs.md).
    pub fn hop_latency(&self) -> Option<u32> {
        self.valid(field::bits::HOP_LATENCY, 0)
    }

    pub fn queue_id(&self) -> Option<u8> {
        self.valid(field::bits::QUEUE, 0).map(|w| (w >> 24) as u8)
    }

    /// Queue occupancy (24 bits), in the device's unit.
    pub fn queue_occupancy(&self) -> Option<u32> {
        let at = self.at(field::bits::QUEUE)?;
        self.valid(field::bits::QUEUE, 0)?;
        Some(be24(self.buffer.as_ref(), at + 1))
    }

    pub fn ingress_timestamp(&self) -> Option<u64> {
        self.valid64(field::bits::INGRESS_TIMESTAMP)
    }

    pub fn egress_timestamp(&self) -> Option<u64> {
        self.valid64(field::bits::EGRESS_TIMESTAMP)
    }

    /// Level 2 ingress interface id.
    pub fn l2_ingress_port(&self) -> Option<u32> {
        self.valid(field::bits::L2_PORTS, 0)
    }

    /// Level 2 egress interface id.
    pub fn l2_egress_port(&self) -> Option<u32> {
        self.valid(field::bits::L2_PORTS, 4)
    }

    pub fn egress_tx_utilization(&self) -> Option<u32> {
        self.valid(field::bits::EGRESS_TX_UTILIZATION, 0)
    }

    pub fn buffer_id(&self) -> Option<u8> {
        self.valid(field::bits::BUFFER, 0).map(|w| (w >> 24) as u8)
    }

    pub fn buffer_occupancy(&self) -> Option<u32> {
        self.valid(field::bits::BUFFER, 0).map(|w| w & 0x00FF_FFFF)
    }

    /// Bit 15's word as it stands (INT-MD: the checksum complement; a
    /// telemetry report: queue id, drop reason, padding).
    pub fn last_word(&self) -> Option<u32> {
        self.word(field::bits::LAST, 0)
    }
}

#[cfg(test)]
mod tests;
