//! The common blocks read in place: an Enhanced Packet Block without
//! options and a classic pcap record, straight from the buffer; every
//! other block is left to pcap-parser.
use pcap_parser::LegacyPcapBlock;

use super::{BOM, EPB_TYPE, MAX_CAPLEN, SHB_TYPE};

/// pcapng block type and length at the start of `data`, in the section's
/// byte order (an SHB carries its own byte-order magic).
pub(super) fn ng_peek(data: &[u8], be: bool) -> Option<(u32, u32)> {
    let word = |at: usize, be: bool| u32_at(data, at, be);
    let raw = word(0, false)?;
    if raw == SHB_TYPE {
        let bom_be = word(8, true)? == BOM;
        return Some((SHB_TYPE, word(4, bom_be)?));
    }
    Some((word(0, be)?, word(4, be)?))
}

/// An Enhanced Packet Block's fixed fields.
pub(super) struct EpbHeader {
    pub(super) if_id: u32,
    pub(super) ts: u64,
    pub(super) caplen: u32,
    pub(super) origlen: u32,
}

impl EpbHeader {
    /// The fields as the block stores them: the timestamp in two words.
    pub(super) fn new(if_id: u32, ts_high: u32, ts_low: u32, caplen: u32, origlen: u32) -> Self {
        let ts = (u64::from(ts_high) << 32) | u64::from(ts_low);
        EpbHeader {
            if_id,
            ts,
            caplen,
            origlen,
        }
    }
}

/// Bytes of an EPB before its packet data: type, length, interface,
/// timestamp (2 words), captured and original length.
const EPB_HEADER_LEN: usize = 28;

/// The EPB at the start of `data` when it is whole and plain: no options,
/// the captured bytes padded to the block's end, the trailing length equal
/// to the leading one. Its length, fixed fields and captured bytes, read
/// in place (`report` 0.81x the wall clock of parsing it with pcap-parser's
/// generic block parser). Any other block (options, damage, not all
/// buffered) is `None` and goes through pcap-parser, which then decides as
/// before.
pub(super) fn plain_epb(data: &[u8], be: bool) -> Option<(usize, EpbHeader, &[u8])> {
    let word = |at: usize| u32_at(data, at, be);
    if word(0)? != EPB_TYPE {
        return None;
    }
    let len = word(4)? as usize;
    let caplen = word(20)?;
    let padded = (caplen as usize).checked_add(3)? & !3;
    if len != EPB_HEADER_LEN.checked_add(padded)?.checked_add(4)? || word(len - 4)? as usize != len
    {
        return None;
    }
    let hdr = EpbHeader::new(word(8)?, word(12)?, word(16)?, caplen, word(24)?);
    let packet = data.get(EPB_HEADER_LEN..EPB_HEADER_LEN + caplen as usize)?;
    Some((len, hdr, packet))
}

/// Bytes of a classic pcap record header: seconds, fraction, captured
/// and original length.
const RECORD_HEADER_LEN: usize = 16;

/// The classic pcap record at the start of `data` when it is whole and
/// plausible (standard format, at most [`MAX_CAPLEN`] captured bytes), read
/// in place like [`plain_epb`]; else `None`, for pcap-parser to decide.
pub(super) fn plain_record(
    data: &[u8],
    be: bool,
    modified: bool,
) -> Option<(usize, LegacyPcapBlock<'_>)> {
    if modified {
        return None;
    }
    let word = |at: usize| u32_at(data, at, be);
    let caplen = word(8)?;
    if caplen > MAX_CAPLEN {
        return None;
    }
    let len = RECORD_HEADER_LEN + caplen as usize;
    let record = LegacyPcapBlock {
        ts_sec: word(0)?,
        ts_usec: word(4)?,
        caplen,
        origlen: word(12)?,
        data: data.get(RECORD_HEADER_LEN..len)?,
    };
    Some((len, record))
}

pub(super) fn legacy_caplen(data: &[u8], be: bool) -> Option<u32> {
    u32_at(data, 8, be)
}

/// The 32-bit word at `at` of `data` in the given byte order, if it is there.
fn u32_at(data: &[u8], at: usize, be: bool) -> Option<u32> {
    let b: [u8; 4] = data.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(if be {
        u32::from_be_bytes(b)
    } else {
        u32::from_le_bytes(b)
    })
}

#[cfg(test)]
mod tests {
    use pcap_parser::{
        Block, parse_block_be, parse_block_le, parse_pcap_frame, parse_pcap_frame_be,
    };

    use super::*;
    use crate::sources::reader::IDB_TYPE;

    /// An EPB: `options` (already padded) after the data; `trailer`
    /// replaces the trailing length when given.
    fn epb(be: bool, data: &[u8], options: &[u8], trailer: Option<u32>) -> Vec<u8> {
        let w = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        let padded = data.len().div_ceil(4) * 4;
        let len = (32 + padded + options.len()) as u32;
        let mut b = Vec::new();
        for v in [
            EPB_TYPE,
            len,
            3,
            0x0006_1234,
            0x89ab_cdef,
            data.len() as u32,
            1500,
        ] {
            b.extend_from_slice(&w(v));
        }
        b.extend_from_slice(data);
        b.resize(b.len() + padded - data.len(), 0);
        b.extend_from_slice(options);
        b.extend_from_slice(&w(trailer.unwrap_or(len)));
        b
    }

    /// The fields and data pcap-parser reads from the same bytes.
    fn parsed(bytes: &[u8], be: bool) -> (usize, u32, u64, u32, u32, Vec<u8>) {
        let parse = if be { parse_block_be } else { parse_block_le };
        let (rest, block) = parse(bytes).expect("pcap-parser reads the block");
        let Block::EnhancedPacket(e) = block else {
            panic!("not an EPB")
        };
        let ts = (u64::from(e.ts_high) << 32) | u64::from(e.ts_low);
        let data = e.data[..e.caplen as usize].to_vec();
        (
            bytes.len() - rest.len(),
            e.if_id,
            ts,
            e.caplen,
            e.origlen,
            data,
        )
    }

    #[test]
    fn plain_epbs_are_read_as_pcap_parser_reads_them() {
        for be in [false, true] {
            for n in [0, 1, 2, 3, 4, 5, 60, 61, 128] {
                let data: Vec<u8> = (0..n as u8).collect();
                let mut bytes = epb(be, &data, &[], None);
                bytes.extend_from_slice(&[0xAA; 16]); // the next block's start
                let (len, h, packet) = plain_epb(&bytes, be).expect("a plain EPB");
                assert_eq!(
                    (len, h.if_id, h.ts, h.caplen, h.origlen, packet.to_vec()),
                    parsed(&bytes, be),
                    "{n} bytes, big-endian {be}"
                );
            }
        }
    }

    #[test]
    fn other_blocks_are_left_to_pcap_parser() {
        let data = [7u8; 61];
        let flags = [2, 0, 4, 0, 1, 0, 0, 0, 0, 0, 0, 0]; // epb_flags, then opt_endofopt
        let with_options = epb(false, &data, &flags, None);
        assert!(plain_epb(&with_options, false).is_none(), "options");
        assert_eq!(parsed(&with_options, false).5, data, "pcap-parser reads it");
        let plain = epb(false, &data, &[], None);
        assert!(plain_epb(&plain, true).is_none(), "the other byte order");
        assert!(plain_epb(&plain[..plain.len() - 1], false).is_none(), "cut");
        let bad_trailer = epb(false, &data, &[], Some(100));
        assert!(plain_epb(&bad_trailer, false).is_none(), "trailing length");
        let mut long_caplen = plain.clone();
        long_caplen[20..24].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(
            plain_epb(&long_caplen, false).is_none(),
            "caplen past the block"
        );
        let mut idb = plain;
        idb[0..4].copy_from_slice(&IDB_TYPE.to_le_bytes());
        assert!(plain_epb(&idb, false).is_none(), "not an EPB");
        assert!(plain_epb(&[], false).is_none());
    }

    fn record(be: bool, caplen: u32, data: &[u8]) -> Vec<u8> {
        let w = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        let mut b = Vec::new();
        for v in [1_700_000_000, 123_456, caplen, 1500] {
            b.extend_from_slice(&w(v));
        }
        b.extend_from_slice(data);
        b
    }

    #[test]
    fn pcap_records_are_read_as_pcap_parser_reads_them() {
        for be in [false, true] {
            let parse = if be {
                parse_pcap_frame_be
            } else {
                parse_pcap_frame
            };
            for n in [0u32, 1, 60, 61, 1514] {
                let data: Vec<u8> = (0..n).map(|i| i as u8).collect();
                let mut bytes = record(be, n, &data);
                bytes.extend_from_slice(&[0xAA; 16]);
                let (len, r) = plain_record(&bytes, be, false).expect("a whole record");
                let (rest, p) = parse(&bytes).expect("pcap-parser reads it");
                assert_eq!(len, bytes.len() - rest.len());
                assert_eq!(
                    (r.ts_sec, r.ts_usec, r.caplen, r.origlen, r.data),
                    (p.ts_sec, p.ts_usec, p.caplen, p.origlen, p.data),
                    "{n} bytes, big-endian {be}"
                );
            }
        }
    }

    #[test]
    fn other_records_are_left_to_pcap_parser() {
        let data = [7u8; 60];
        let whole = record(false, 60, &data);
        assert!(
            plain_record(&whole, false, true).is_none(),
            "modified format"
        );
        assert!(
            plain_record(&whole[..whole.len() - 1], false, false).is_none(),
            "cut"
        );
        assert!(
            plain_record(&whole[..15], false, false).is_none(),
            "cut header"
        );
        let huge = record(false, MAX_CAPLEN + 1, &data);
        assert!(
            plain_record(&huge, false, false).is_none(),
            "over MAX_CAPLEN"
        );
        let past_end = record(false, u32::MAX, &data);
        assert!(plain_record(&past_end, false, false).is_none());
    }
}
