//! UET's TSS (encryption) header: the security header before an encrypted
//! PDS header. What follows it is encrypted and ends in a 16-byte
//! integrity check value: it is counted, never decoded.
use super::{Error, Header, be32, be64};

/// Where each TSS field starts.
pub mod field {
    /// Type (5 bits), SP (1), reserved (1), AN (1), SDI (24).
    pub const WORD0: usize = 0;
    pub const TYPE_SHIFT: u32 = 27;
    pub const SP: u32 = 0x0400_0000;
    pub const AN: u32 = 0x0100_0000;
    pub const SDI_MASK: u32 = 0x00FF_FFFF;
    /// With SP: the 4-byte SSI, then the TSC.
    pub const SSI: usize = 4;
}

/// The type field's value for a TSS header (the PDS types' number 1).
pub const TYPE: u8 = 1;
/// The header without the SSI.
pub const BASE_LEN: usize = 12;
/// With SP set: the SSI's 4 bytes more.
pub const WITH_SSI_LEN: usize = 16;
/// The integrity check value at the end of the encrypted part.
pub const ICV_LEN: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tss<'a> {
    buf: &'a [u8],
}

impl<'a> Tss<'a> {
    /// The TSS header at the start of `buf`, whole (12 bytes, 16 with SP).
    pub fn new_checked(buf: &'a [u8]) -> Result<Tss<'a>, Error> {
        if buf.len() < BASE_LEN {
            return Err(Error::Truncated(Header::Tss));
        }
        let t = Tss { buf };
        if t.tss_type() != TYPE {
            return Err(Error::UnknownType(Header::Tss, t.tss_type()));
        }
        if buf.len() < t.header_len() {
            return Err(Error::Truncated(Header::Tss));
        }
        Ok(t)
    }

    fn word0(&self) -> u32 {
        be32(self.buf, field::WORD0)
    }

    pub fn tss_type(&self) -> u8 {
        (self.word0() >> field::TYPE_SHIFT) as u8
    }

    /// SP: the header carries an SSI.
    pub fn sp(&self) -> bool {
        self.word0() & field::SP != 0
    }

    /// AN: the association number.
    pub fn an(&self) -> bool {
        self.word0() & field::AN != 0
    }

    /// SDI: the secure domain index (24 bits).
    pub fn sdi(&self) -> u32 {
        self.word0() & field::SDI_MASK
    }

    /// SSI, when SP is set.
    pub fn ssi(&self) -> Option<u32> {
        self.sp().then(|| be32(self.buf, field::SSI))
    }

    /// TSC: the transmit security counter.
    pub fn tsc(&self) -> u64 {
        be64(self.buf, self.header_len() - 8)
    }

    pub fn header_len(&self) -> usize {
        if self.sp() { WITH_SSI_LEN } else { BASE_LEN }
    }

    /// The encrypted bytes after the header, the integrity check value
    /// included.
    pub fn encrypted_len(&self) -> usize {
        self.buf.len() - self.header_len()
    }
}
