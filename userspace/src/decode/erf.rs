//! Endace ERF records as pcap's LINKTYPE_ERF (197) carries them, what
//! `ibdump` writes on InfiniBand ports: a 16-byte record header, extension
//! headers while the type byte's top bit (then each extension header's)
//! says another follows, then the record's payload.
//!
//! ```text
//! 0-7: timestamp (little-endian, 32.32 fixed point) | 8: type | 9: flags
//! 10-11: rlen | 12-13: lctr / colour | 14-15: wlen      (big-endian)
//! ```
//! `rlen` is the record's length (header, extension headers and captured
//! payload, with any padding); `wlen` the payload's length on the wire.
use rocescope_common::proto::erf;

use crate::view::{field, fixed_view};

fixed_view! {
    /// The ERF record header (16 bytes).
    Erf, erf::HEADER_LEN
}

/// Why an ERF record cannot be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErfError {
    /// Fewer bytes than the 16-byte record header.
    Truncated,
    /// An extension header runs past the captured bytes.
    ExtensionCut,
    /// `rlen` is shorter than the headers it must hold.
    RecordLength,
}

impl core::fmt::Display for ErfError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            ErfError::Truncated => "shorter than the 16-byte ERF record header",
            ErfError::ExtensionCut => "an ERF extension header runs past the record",
            ErfError::RecordLength => "its rlen is shorter than its ERF headers",
        })
    }
}

impl<T: AsRef<[u8]>> Erf<T> {
    /// Timestamp: seconds in the high 32 bits, a binary fraction below.
    pub fn timestamp(&self) -> u64 {
        u64::from_le_bytes(field::bytes::<8>(self.bytes(), 0))
    }

    /// Record type (low 7 bits of the type byte): `erf::TYPE_*`.
    pub fn record_type(&self) -> u8 {
        field::u8_at(self.bytes(), 8) & erf::TYPE_MASK
    }

    /// An extension header follows the record header.
    pub fn has_extension(&self) -> bool {
        field::u8_at(self.bytes(), 8) & erf::TYPE_EXT_FLAG != 0
    }

    pub fn flags(&self) -> u8 {
        field::u8_at(self.bytes(), 9)
    }

    /// Record length: headers, captured payload and padding.
    pub fn rlen(&self) -> u16 {
        field::be16(self.bytes(), 10)
    }

    /// Loss counter (or colour, by record type).
    pub fn lctr(&self) -> u16 {
        field::be16(self.bytes(), 12)
    }

    /// The payload's length on the wire.
    pub fn wlen(&self) -> u16 {
        field::be16(self.bytes(), 14)
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Erf<&'a T> {
    /// The extension headers (8 bytes each).
    pub fn extensions_len(&self) -> Result<usize, ErfError> {
        let bytes = <T as AsRef<[u8]>>::as_ref(self.buffer);
        let mut at = erf::HEADER_LEN;
        let mut more = self.has_extension();
        while more {
            let ext = bytes
                .get(at..at + erf::EXT_HEADER_LEN)
                .ok_or(ErfError::ExtensionCut)?;
            more = ext[0] & erf::TYPE_EXT_FLAG != 0;
            at += erf::EXT_HEADER_LEN;
        }
        Ok(at - erf::HEADER_LEN)
    }

    /// The payload as captured: after the extension headers, up to `rlen`
    /// (or the end of the bytes, when the capture kept less). Each step is
    /// bounded by the bytes given, so a corrupt record costs no more than
    /// its length.
    pub fn payload(&self) -> Result<&'a [u8], ErfError> {
        let bytes = <T as AsRef<[u8]>>::as_ref(self.buffer);
        let start = erf::HEADER_LEN + self.extensions_len()?;
        let rlen = usize::from(self.rlen());
        if rlen < start {
            return Err(ErfError::RecordLength);
        }
        Ok(field::head(field::tail(bytes, start), rlen - start))
    }
}

/// A record's header checked and its payload found, in one call: what the
/// walk and the reader's warnings both need.
pub fn record(bytes: &[u8]) -> Result<(Erf<&[u8]>, &[u8]), ErfError> {
    let erf = Erf::new_checked(bytes).map_err(|_| ErfError::Truncated)?;
    let payload = erf.payload()?;
    Ok((erf, payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(ty: u8, rlen: u16, wlen: u16) -> Vec<u8> {
        let mut h = 0x0000_0001_8000_0000u64.to_le_bytes().to_vec(); // 1.5 s
        h.extend_from_slice(&[ty, 0x04]);
        h.extend_from_slice(&rlen.to_be_bytes());
        h.extend_from_slice(&7u16.to_be_bytes());
        h.extend_from_slice(&wlen.to_be_bytes());
        h
    }

    #[test]
    fn fields_and_payload() {
        let mut r = header(erf::TYPE_INFINIBAND, 16 + 6, 30);
        r.extend_from_slice(&[1, 2, 3, 4, 5, 6, 0xEE]); // one byte beyond rlen
        let (e, payload) = record(&r).unwrap();
        assert_eq!(e.timestamp(), 0x0000_0001_8000_0000);
        assert_eq!(
            (e.record_type(), e.has_extension(), e.flags()),
            (21, false, 4)
        );
        assert_eq!((e.rlen(), e.lctr(), e.wlen()), (22, 7, 30));
        assert_eq!(payload, &[1, 2, 3, 4, 5, 6]);
        // A capture that kept less than rlen: what there is.
        assert_eq!(record(&r[..19]).unwrap().1, &[1, 2, 3]);
    }

    #[test]
    fn extension_headers_are_stepped_over() {
        let mut r = header(erf::TYPE_INFINIBAND | erf::TYPE_EXT_FLAG, 16 + 16 + 2, 2);
        r.extend_from_slice(&[0x80 | 3, 0, 0, 0, 0, 0, 0, 0]); // another follows
        r.extend_from_slice(&[4, 0, 0, 0, 0, 0, 0, 0]);
        r.extend_from_slice(&[0xAB, 0xCD]);
        let (e, payload) = record(&r).unwrap();
        assert_eq!(e.extensions_len(), Ok(16));
        assert_eq!(payload, &[0xAB, 0xCD]);
    }

    #[test]
    fn bad_records_say_why() {
        assert_eq!(record(&[0; 15]).unwrap_err(), ErfError::Truncated);
        let mut r = header(erf::TYPE_INFINIBAND | erf::TYPE_EXT_FLAG, 40, 8);
        r.extend_from_slice(&[0x80, 0, 0, 0, 0, 0, 0, 0, 0x01, 0]); // second one cut
        assert_eq!(record(&r).unwrap_err(), ErfError::ExtensionCut);
        let r = header(erf::TYPE_INFINIBAND, 12, 0);
        assert_eq!(record(&r).unwrap_err(), ErfError::RecordLength);
    }
}
