//! Telemetry Report Format v2.0 (P4.org, §3): the 8-byte group header
//! after the UDP header whose destination port the operator chose
//! ([`GroupHeader`]), then one or more individual reports
//! ([`Report`], [`Reports`]), each a 4-byte header with the D/Q/F/I flags,
//! for report type INT the 8-byte main contents and the metadata its
//! `RepMdBits` name (the INT instruction bits, `wire::int::Metadata`),
//! then the inner contents: for inner types Ethernet, IPv4 and IPv6 the
//! truncated original packet.
//!
//! `no_std`, no allocation; every read is bounds-checked.
use super::int::{self, Metadata};
use super::{be16, be32};

/// Where each field starts, named once after the spec.
pub mod field {
    /// The Telemetry Report Group Header.
    pub mod group {
        /// Ver (4 bits), hw_id (6), sequence number (22).
        pub const VER_HW_SEQ: usize = 0;
        pub const VER_SHIFT: u32 = 28;
        pub const HW_ID_SHIFT: u32 = 22;
        pub const HW_ID_MASK: u32 = 0x3F;
        pub const SEQUENCE_MASK: u32 = 0x003F_FFFF;
        pub const NODE_ID: usize = 4;
    }

    /// The Individual Report Header.
    pub mod individual {
        /// RepType (4 bits), InType (4).
        pub const TYPES: usize = 0;
        /// In 4-byte words, the first word not counted; 0xFF: to the end
        /// of the UDP payload.
        pub const REPORT_LENGTH: usize = 1;
        pub const MD_LENGTH: usize = 2;
        /// D, Q, F, I, reserved (4).
        pub const FLAGS: usize = 3;
        pub const D: u8 = 0x80;
        pub const Q: u8 = 0x40;
        pub const F: u8 = 0x20;
        pub const I: u8 = 0x10;
        /// RepType INT's main contents, from the individual header's start.
        pub const REP_MD_BITS: usize = 4;
        pub const DOMAIN_SPECIFIC_ID: usize = 6;
        pub const DS_MD_BITS: usize = 8;
        pub const DS_MD_STATUS: usize = 10;
    }
}

pub const GROUP_HEADER_LEN: usize = 8;
pub const INDIVIDUAL_HEADER_LEN: usize = 4;
/// RepType INT's fixed main contents.
pub const INT_MAIN_LEN: usize = 8;
/// The version this decoder reads.
pub const VERSION: u8 = 2;
/// Report Length 0xFF: the report runs to the end of the UDP payload.
pub const LENGTH_TO_END: u8 = 0xFF;

/// Report types (RepType).
pub mod rep_type {
    pub const INNER_ONLY: u8 = 0;
    pub const INT: u8 = 1;
    pub const IOAM: u8 = 2;
}

/// Inner types (InType).
pub mod in_type {
    pub const NONE: u8 = 0;
    pub const TLV: u8 = 1;
    pub const DOMAIN_SPECIFIC: u8 = 2;
    pub const ETHERNET: u8 = 3;
    pub const IPV4: u8 = 4;
    pub const IPV6: u8 = 5;
}

/// Why a report could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The buffer ends before the header, or before the length it declares.
    Truncated,
    /// A version this decoder does not read, or lengths that contradict
    /// each other (metadata longer than the report).
    Invalid,
}

/// The Telemetry Report Group Header and the individual reports after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> GroupHeader<T> {
    /// Wraps the UDP payload after checking it holds a version 2 group
    /// header.
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        if buffer.as_ref().len() < GROUP_HEADER_LEN {
            return Err(Error::Truncated);
        }
        let h = GroupHeader { buffer };
        if h.version() != VERSION {
            return Err(Error::Invalid);
        }
        Ok(h)
    }

    fn word(&self) -> u32 {
        be32(self.buffer.as_ref(), field::group::VER_HW_SEQ)
    }

    pub fn version(&self) -> u8 {
        (self.word() >> field::group::VER_SHIFT) as u8
    }

    /// The subsystem of the node that sent the report (6 bits).
    pub fn hw_id(&self) -> u8 {
        ((self.word() >> field::group::HW_ID_SHIFT) & field::group::HW_ID_MASK) as u8
    }

    /// Per (node id, hw_id) and destination: gaps are lost reports (22 bits).
    pub fn sequence_number(&self) -> u32 {
        self.word() & field::group::SEQUENCE_MASK
    }

    pub fn node_id(&self) -> u32 {
        be32(self.buffer.as_ref(), field::group::NODE_ID)
    }

    /// The individual reports.
    pub fn reports(&self) -> Reports<'_> {
        Reports {
            rest: self.buffer.as_ref().get(GROUP_HEADER_LEN..).unwrap_or(&[]),
        }
    }
}

/// The individual reports of one telemetry report packet, in order; a
/// report that cannot be read ends the walk with its error.
#[derive(Clone, Debug)]
pub struct Reports<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Reports<'a> {
    type Item = Result<Report<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        match Report::new_checked(self.rest) {
            Ok(r) => {
                // Every report is at least its 4-byte header: the walk ends.
                self.rest = self.rest.get(r.len()..).unwrap_or(&[]);
                Some(Ok(r))
            }
            Err(e) => {
                self.rest = &[];
                Some(Err(e))
            }
        }
    }
}

/// One individual report, its bytes exactly (the rest of the UDP payload
/// for Report Length 0xFF).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Report<'a> {
    bytes: &'a [u8],
}

impl<'a> Report<'a> {
    /// The report at the start of `buffer`, after checking it holds the
    /// length its header declares and, for RepType INT, the main contents
    /// and metadata.
    pub fn new_checked(buffer: &'a [u8]) -> Result<Self, Error> {
        use field::individual as fi;
        let h = buffer
            .get(..INDIVIDUAL_HEADER_LEN)
            .ok_or(Error::Truncated)?;
        let len = match h[fi::REPORT_LENGTH] {
            LENGTH_TO_END => buffer.len(),
            words => INDIVIDUAL_HEADER_LEN + usize::from(words) * 4,
        };
        let bytes = buffer.get(..len).ok_or(Error::Truncated)?;
        let r = Report { bytes };
        if r.rep_type() == rep_type::INT {
            let main = INDIVIDUAL_HEADER_LEN + INT_MAIN_LEN;
            if len < main + r.md_len() {
                return Err(Error::Invalid);
            }
            if int::metadata_len(r.rep_md_bits()) > r.md_len() {
                return Err(Error::Invalid);
            }
        }
        Ok(r)
    }

    /// Bytes of the report, header included.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub fn rep_type(&self) -> u8 {
        self.bytes[field::individual::TYPES] >> 4
    }

    pub fn in_type(&self) -> u8 {
        self.bytes[field::individual::TYPES] & 0x0F
    }

    /// Report Length as carried (4-byte words after the first).
    pub fn report_length(&self) -> u8 {
        self.bytes[field::individual::REPORT_LENGTH]
    }

    /// MD Length as carried (4-byte words).
    pub fn md_length(&self) -> u8 {
        self.bytes[field::individual::MD_LENGTH]
    }

    fn md_len(&self) -> usize {
        usize::from(self.md_length()) * 4
    }

    fn flag(&self, bit: u8) -> bool {
        self.bytes[field::individual::FLAGS] & bit != 0
    }

    /// D: at least one packet matching a watchlist was dropped.
    pub fn dropped(&self) -> bool {
        self.flag(field::individual::D)
    }

    /// Q: congestion on a monitored queue.
    pub fn congested_queue(&self) -> bool {
        self.flag(field::individual::Q)
    }

    /// F: the report is for a tracked flow.
    pub fn tracked_flow(&self) -> bool {
        self.flag(field::individual::F)
    }

    /// I: a transit node's intermediate report (INT-MD).
    pub fn intermediate(&self) -> bool {
        self.flag(field::individual::I)
    }

    fn is_int(&self) -> bool {
        self.rep_type() == rep_type::INT
    }

    /// RepType INT: which baseline metadata the report carries (0 otherwise).
    pub fn rep_md_bits(&self) -> u16 {
        if self.is_int() {
            be16(self.bytes, field::individual::REP_MD_BITS)
        } else {
            0
        }
    }

    pub fn domain_specific_id(&self) -> Option<u16> {
        self.is_int()
            .then(|| be16(self.bytes, field::individual::DOMAIN_SPECIFIC_ID))
    }

    pub fn ds_md_bits(&self) -> Option<u16> {
        self.is_int()
            .then(|| be16(self.bytes, field::individual::DS_MD_BITS))
    }

    pub fn ds_md_status(&self) -> Option<u16> {
        self.is_int()
            .then(|| be16(self.bytes, field::individual::DS_MD_STATUS))
    }

    /// RepType INT: the reporting hop's metadata, as `RepMdBits` lays it
    /// out (bit 15: queue id and drop reason, `Report::drop_reason`).
    pub fn metadata(&self) -> Option<Metadata<&'a [u8]>> {
        if !self.is_int() {
            return None;
        }
        let at = INDIVIDUAL_HEADER_LEN + INT_MAIN_LEN;
        let md = self.bytes.get(at..at + self.md_len())?;
        Metadata::new_checked(md, self.rep_md_bits()).ok()
    }

    /// RepMdBits bit 15: the queue a dropped packet was in.
    pub fn drop_queue_id(&self) -> Option<u8> {
        self.metadata()?.last_word().map(|w| (w >> 24) as u8)
    }

    /// RepMdBits bit 15: why the packet was dropped (an enumeration of the
    /// device's; p4lang/switch's drop reason codes are the spec's example).
    pub fn drop_reason(&self) -> Option<u8> {
        self.metadata()?.last_word().map(|w| (w >> 16) as u8)
    }

    /// The inner contents: after the main contents and their metadata.
    pub fn inner(&self) -> &'a [u8] {
        let at = INDIVIDUAL_HEADER_LEN
            + if self.is_int() {
                INT_MAIN_LEN + self.md_len()
            } else {
                0
            };
        self.bytes.get(at..).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests;
