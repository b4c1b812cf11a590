//! Streaming pcap / pcapng reader.
//!
//! [`CaptureReader`] reads a capture in blocks through pcap-parser's circular
//! buffer (the refill / consume loop), so a 10 GB capture never sits in
//! memory: the reader holds one buffer of [`BUFFER_CAPACITY`] bytes plus one
//! [`Interface`] per interface the file declares. The common blocks — an
//! Enhanced Packet Block without options, a classic pcap record — are read
//! in place ([`in_place::plain_epb`], [`in_place::plain_record`]);
//! pcap-parser parses every other block and decides what is damaged. See the module docs of
//! [`crate::sources`] for the decisions taken where the brief was silent.
//!
//! The reader's parts, one idea each: [`format`] sniffs what a stream holds
//! (pcap or pcapng, compressed or not); [`state`] is the per-file state and
//! the warnings it keeps; [`blocks`] reads each block or record into a
//! frame, an interface or a skip; [`in_place`] reads the common blocks
//! without pcap-parser; [`timestamps`] scales a timestamp to ns.
mod blocks;
mod format;
mod in_place;
mod state;
mod timestamps;

use std::cell::RefCell;
use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{LegacyPcapReader, PcapBlockOwned, PcapError, PcapNGReader};

pub(super) use format::probe;
use format::{Format, FullRead, Sniffed, sniff};
use in_place::{legacy_caplen, ng_peek, plain_epb, plain_record};
use state::{State, Step};

use super::compress::{Compression, Progress};
use crate::error::{Error, Result};

/// Largest captured length accepted for one frame (libpcap's
/// `MAXIMUM_SNAPLEN`). A record claiming more is corrupt.
pub const MAX_CAPLEN: u32 = 256 * 1024;
/// Size of the read buffer: the largest block parsed in place. Larger
/// non-packet pcapng blocks are skipped by streaming over them.
pub const BUFFER_CAPACITY: usize = 1 << 20;
/// Most interfaces one file may declare (over all its sections).
pub const MAX_INTERFACES: usize = 65_536;
/// Most non-fatal warnings kept per file; later ones are only counted and
/// summed up in one last warning.
pub const MAX_WARNINGS: usize = 20;

const SHB_TYPE: u32 = 0x0A0D_0D0A;
const IDB_TYPE: u32 = 1;
const PB_TYPE: u32 = 2;
const SPB_TYPE: u32 = 3;
/// Interface Statistics: its drop counters say what the capture lost.
const ISB_TYPE: u32 = 5;
const EPB_TYPE: u32 = 6;
const BOM: u32 = 0x1A2B_3C4D;

/// One capture interface, as the file declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// pcapng `if_name` (None for classic pcap or when absent).
    pub name: Option<String>,
    /// LINKTYPE_* value (see `rocescope_common::proto::linktype`).
    pub linktype: u32,
    /// Snapshot length; 0 means "no limit".
    pub snaplen: u32,
    /// The capture's own drop counters from the last Interface Statistics
    /// Block for it (pcapng `isb_ifdrop`: dropped by the interface;
    /// `isb_osdrop`: dropped by the capture host), when it wrote any.
    pub drops: Option<InterfaceDrops>,
}

/// Frames an interface's capture says it dropped (pcapng ISB counters,
/// cumulative since the capture began).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InterfaceDrops {
    pub ifdrop: Option<u64>,
    pub osdrop: Option<u64>,
}

/// One captured frame, borrowed from the reader's buffer until the next
/// call to [`CaptureReader::next_frame`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// 1-based frame number in its file (counts every packet record,
    /// skipped ones included, so numbers match Wireshark's).
    pub number: u64,
    /// Index into [`CaptureReader::interfaces`] (0 for classic pcap).
    pub iface: u32,
    /// Nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// LINKTYPE_* of the frame's interface.
    pub linktype: u32,
    /// Length on the wire (never less than `data.len()`).
    pub orig_len: u32,
    /// Byte offset of its record (pcap) or block (pcapng) in the file
    /// (in the decompressed data of a compressed one).
    pub offset: u64,
    /// Captured bytes.
    pub data: &'a [u8],
}

/// Something wrong in a capture that did not stop the analysis of
/// everything before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub path: PathBuf,
    /// Byte offset in the file of the record concerned.
    pub offset: u64,
    /// Frames returned before the problem.
    pub frames_before: u64,
    /// What is wrong (and what was done about it).
    pub detail: String,
    /// True when the reader stopped there (the rest of the file is unread).
    pub stopped: bool,
    /// The file is compressed: `offset` is in the decompressed data.
    pub decompressed: Option<Compression>,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: at byte {}", self.path.display(), self.offset)?;
        if let Some(codec) = self.decompressed {
            write!(f, " of the {codec}-decompressed data")?;
        }
        write!(f, ": {}", self.detail)?;
        if self.stopped {
            write!(
                f,
                "; stopped reading there (analysed the {} frames before it)",
                self.frames_before
            )
        } else {
            Ok(())
        }
    }
}

/// Streaming reader over one pcap or pcapng capture.
pub struct CaptureReader {
    src: Box<dyn PcapReaderIterator>,
    io_error: Rc<RefCell<Option<io::Error>>>,
    /// The stream's compression, and how far the decoder got.
    compression: Option<(Compression, Progress)>,
    st: State,
}

impl CaptureReader {
    /// Opens a capture file.
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|source| Error::Open {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_reader(path, file)
    }

    /// Reads a capture from any byte stream; `name` names it in messages.
    /// A gzip, zstd or lz4 (frame format) stream is decompressed on the fly.
    pub fn from_reader(name: impl Into<PathBuf>, r: impl Read + 'static) -> Result<Self> {
        let path = name.into();
        let Sniffed {
            format,
            stream: inner,
            compression,
        } = sniff(&path, Box::new(r))?;
        let io_error = Rc::new(RefCell::new(None));
        let stream = FullRead {
            inner,
            held: None,
            error: io_error.clone(),
        };
        let header_error = |e: PcapError<&[u8]>, what: &str| -> Error {
            match e {
                PcapError::ReadError => Error::Read {
                    path: path.clone(),
                    offset: 0,
                    source: io_error
                        .borrow_mut()
                        .take()
                        .unwrap_or_else(|| io::Error::other("read failed")),
                },
                PcapError::Incomplete(_) | PcapError::UnexpectedEof | PcapError::BufferTooSmall => {
                    Error::NotACapture {
                        path: path.clone(),
                        detail: format!("the file ends inside its {what}"),
                    }
                }
                _ => Error::BadCapture {
                    path: path.clone(),
                    offset: 0,
                    detail: format!(
                        "the {what} is damaged; the file cannot be read (repair it, e.g. with pcapfix, or capture again)"
                    ),
                },
            }
        };
        let src: Box<dyn PcapReaderIterator> = match format {
            Format::Pcap => Box::new(
                LegacyPcapReader::new(BUFFER_CAPACITY, stream)
                    .map_err(|e| header_error(e, "24-byte pcap file header"))?,
            ),
            Format::PcapNg => Box::new(
                PcapNGReader::new(BUFFER_CAPACITY, stream)
                    .map_err(|e| header_error(e, "pcapng section header block"))?,
            ),
        };
        let decompressed = compression.as_ref().map(|(c, _)| *c);
        let mut reader = CaptureReader {
            src,
            io_error,
            compression,
            st: State {
                path,
                decompressed,
                interfaces: Vec::new(),
                scales: Vec::new(),
                legacy_ns: false,
                legacy_modified: false,
                section_base: 0,
                section_be: false,
                pcapng: format == Format::PcapNg,
                warnings: Vec::new(),
                warnings_noted: 0,
                warnings_dropped: 0,
                snaplen_warned: false,
                backwards_warned: false,
                undecoded_warned: Vec::new(),
                pos: 0,
                pending: 0,
                number: 0,
                delivered: 0,
                last_ts: 0,
                done: false,
            },
        };
        if format == Format::Pcap {
            // The legacy reader hands out the file header as its first block:
            // take it now so `interfaces()` is right before the first frame.
            let len = match reader.src.next() {
                Ok((len, PcapBlockOwned::LegacyHeader(h))) => {
                    reader.st.on_pcap_header(&h);
                    len
                }
                _ => 0,
            };
            reader.consume(len);
        }
        Ok(reader)
    }

    /// Interfaces declared so far (grows as pcapng IDBs appear; all
    /// sections of the file, in order).
    pub fn interfaces(&self) -> &[Interface] {
        &self.st.interfaces
    }

    /// Timestamp units per second of interface `iface` (`if_tsresol`, or
    /// a classic pcap's µs or ns), as its timestamps were read.
    pub fn ts_units(&self, iface: usize) -> Option<u64> {
        self.st.scales.get(iface).map(|s| s.units)
    }

    /// Warnings since the last call.
    pub fn take_warnings(&mut self) -> Vec<Warning> {
        std::mem::take(&mut self.st.warnings)
    }

    /// Bytes of the file read so far (up to the end of the frame last returned).
    pub fn offset(&self) -> u64 {
        self.st.pos + self.st.pending as u64
    }

    /// Byte offset of the record (pcap) or block (pcapng) of the frame last
    /// returned.
    pub fn frame_offset(&self) -> u64 {
        self.st.pos
    }

    /// The name given at open.
    pub fn path(&self) -> &Path {
        &self.st.path
    }

    fn consume(&mut self, n: usize) {
        // No shift here: pcap-parser's `consume` moves the unread half of the
        // buffer to its front whenever it passes the middle (a memmove of
        // half the file in all); `refill` shifts only the last partial block.
        self.src.consume_noshift(n);
        self.st.pos += n as u64;
    }

    fn io_err(&mut self) -> Error {
        self.st.done = true;
        Error::Read {
            path: self.st.path.clone(),
            offset: self.st.pos,
            source: self
                .io_error
                .borrow_mut()
                .take()
                .unwrap_or_else(|| io::Error::other("read failed")),
        }
    }

    /// The next frame, `Ok(None)` at the end of the capture (or where it
    /// is cut or corrupt: a warning then says where). An I/O error is an
    /// `Err` ([`Error::Read`]).
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>> {
        if self.st.pending > 0 {
            let n = self.st.pending;
            self.st.pending = 0;
            self.consume(n);
        }
        loop {
            if self.st.done {
                self.note_cut_stream();
                return Ok(None);
            }
            // pcap-parser 0.17 subtracts 12 from a block's length before
            // checking it for some block types (a panic in debug builds,
            // found by fuzzing): every block length is checked here first,
            // and blocks rocescope never reads are stepped over unparsed.
            if self.st.pcapng
                && let Some((btype, blen)) = ng_peek(self.src.data(), self.st.section_be)
            {
                if blen < 12 || blen % 4 != 0 {
                    self.st.stop(format!(
                        "damaged block (type {btype:#x}, length {blen}: under 12 or not a multiple of 4)"
                    ));
                    continue;
                }
                let wanted = matches!(
                    btype,
                    SHB_TYPE | IDB_TYPE | PB_TYPE | SPB_TYPE | ISB_TYPE | EPB_TYPE
                );
                if !wanted && self.src.data().len() >= blen as usize {
                    self.consume(blen as usize);
                    continue;
                }
            }
            let data = self.src.data();
            let base = data.as_ptr() as usize;
            let step = if self.st.pcapng {
                match plain_epb(data, self.st.section_be) {
                    Some((len, hdr, packet)) => self.st.on_epb(len, &hdr, packet, base),
                    None => self.parse_block(base),
                }
            } else {
                match plain_record(data, self.st.section_be, self.st.legacy_modified) {
                    Some((len, record)) => self.st.on_legacy(len, &record, base),
                    None => self.parse_block(base),
                }
            };
            match step {
                Step::Frame {
                    len,
                    start,
                    caplen,
                    meta,
                } => {
                    let Some(end) = start.checked_add(caplen) else {
                        self.st.stop("internal error locating the frame".into());
                        continue;
                    };
                    if self.src.data().get(start..end).is_none() {
                        self.st.stop("internal error locating the frame".into());
                        continue;
                    }
                    self.st.pending = len;
                    self.st.on_frame(&meta, &self.src.data()[start..end]);
                    self.st.delivered += 1;
                    self.st.last_ts = meta.ts_ns;
                    let data = &self.src.data()[start..end];
                    return Ok(Some(Frame {
                        number: meta.number,
                        iface: meta.iface,
                        ts_ns: meta.ts_ns,
                        linktype: meta.linktype,
                        orig_len: meta.orig_len.max(caplen as u32),
                        offset: self.st.pos,
                        data,
                    }));
                }
                Step::Consume(n) => self.consume(n),
                Step::NeedData => {
                    if let Some(detail) = self.complete_but_unparsed() {
                        self.st.stop(detail);
                        continue;
                    }
                    let before = self.src.data().len();
                    if self.src.refill().is_err() {
                        return Err(self.io_err());
                    }
                    if self.src.data().len() == before && !self.src.reader_exhausted() {
                        self.st
                            .stop("damaged block: it does not parse within its length".into());
                    }
                }
                Step::Eof => self.st.finish(),
                Step::Stop => {}
                Step::TooLarge => self.too_large()?,
                Step::Corrupt(detail) => self.st.stop(detail),
                Step::Fatal(detail) => {
                    self.st.done = true;
                    return Err(Error::BadCapture {
                        path: self.st.path.clone(),
                        offset: self.st.pos,
                        detail,
                    });
                }
                Step::Io => return Err(self.io_err()),
            }
        }
    }

    /// The compressed stream ended mid-way: say so once (the capture
    /// reader has warned about the record it cut, if any).
    fn note_cut_stream(&mut self) {
        let Some((codec, progress)) = &self.compression else {
            return;
        };
        if !progress.take_cut() {
            return;
        }
        let codec = *codec;
        let detail = format!(
            "the {codec}-compressed data ends mid-stream after {} compressed bytes (the compressor was stopped or the file cut): analysed every frame before",
            progress.compressed_bytes()
        );
        // Past the warning limit too: it explains the cut record's warning.
        self.st.warnings.push(Warning {
            path: self.st.path.clone(),
            offset: self.st.pos,
            frames_before: self.st.delivered,
            detail,
            stopped: true,
            decompressed: Some(codec),
        });
    }

    /// Bytes of the file itself consumed so far: the compressed bytes of a
    /// compressed capture, else [`Self::offset`] (a progress display
    /// measures them against the file's size).
    pub fn file_offset(&self) -> u64 {
        match &self.compression {
            Some((_, progress)) => progress.compressed_bytes(),
            None => self.offset(),
        }
    }

    /// The compression of the stream (`None`: a plain capture).
    pub fn compression(&self) -> Option<Compression> {
        self.compression.as_ref().map(|(c, _)| *c)
    }

    /// What to do with the next block, parsed by pcap-parser (`base`: the
    /// buffered data's address).
    fn parse_block(&mut self, base: usize) -> Step {
        match self.src.next() {
            Ok((len, block)) => self.st.on_block(len, &block, base),
            Err(PcapError::Eof) => Step::Eof,
            Err(PcapError::Incomplete(_)) => Step::NeedData,
            Err(PcapError::UnexpectedEof) => {
                self.st.stop(if self.st.pcapng {
                    "the capture ends inside a block (the file was cut, e.g. copied while being written)"
                        .to_string()
                } else {
                    "the capture ends inside a packet record (the file was cut, e.g. copied while being written)"
                        .to_string()
                });
                Step::Stop
            }
            Err(PcapError::BufferTooSmall) => Step::TooLarge,
            Err(PcapError::ReadError) => Step::Io,
            Err(_) => Step::Corrupt(if self.st.pcapng {
                "damaged block (bad length or contents)".to_string()
            } else {
                "damaged packet record".to_string()
            }),
        }
    }

    /// pcapng: the parser wants more bytes, but the block's own length says
    /// it is all in the buffer: the block is damaged (e.g. a captured length
    /// longer than the block).
    fn complete_but_unparsed(&self) -> Option<String> {
        if !self.st.pcapng {
            return None;
        }
        let (btype, blen) = ng_peek(self.src.data(), self.st.section_be)?;
        if blen >= 12 && blen as usize <= self.src.data().len() {
            Some(format!(
                "damaged block (type {btype:#x}, {blen} bytes): its contents overrun its length"
            ))
        } else {
            None
        }
    }

    /// A record or block larger than the buffer: skip it when it carries no
    /// packet and no interface, else stop.
    fn too_large(&mut self) -> Result<()> {
        if !self.st.pcapng {
            let caplen = legacy_caplen(self.src.data(), self.st.section_be);
            self.st.stop(format!(
                "packet record claims {} captured bytes, more than the {MAX_CAPLEN} any capture tool writes: the file is damaged",
                caplen.map_or_else(|| "too many".to_string(), |c| c.to_string())
            ));
            return Ok(());
        }
        let Some((btype, blen)) = ng_peek(self.src.data(), self.st.section_be) else {
            self.st.stop("damaged block header".into());
            return Ok(());
        };
        if blen < 12 || !blen.is_multiple_of(4) {
            self.st.stop(format!(
                "damaged block header (type {btype:#x}, length {blen})"
            ));
            return Ok(());
        }
        if (blen as usize) < BUFFER_CAPACITY {
            // It would fit: what pcap-parser found too large is inside it.
            self.st.stop(format!(
                "damaged block (type {btype:#x}, {blen} bytes): its contents overrun its length"
            ));
            return Ok(());
        }
        if matches!(btype, SHB_TYPE | IDB_TYPE | PB_TYPE | SPB_TYPE | EPB_TYPE) {
            self.st.stop(format!(
                "block of type {btype:#x} claims {blen} bytes, more than this reader's {BUFFER_CAPACITY}-byte limit: the file is damaged"
            ));
            return Ok(());
        }
        // Stream over a large block that holds no packet (e.g. a big
        // decryption-secrets or custom block).
        let block_start = self.st.pos;
        let mut left = blen as u64;
        loop {
            let n = (self.src.data().len() as u64).min(left);
            self.consume(n as usize);
            left -= n;
            if left == 0 {
                return Ok(());
            }
            if self.src.refill().is_err() {
                return Err(self.io_err());
            }
            if self.src.data().is_empty() && self.src.reader_exhausted() {
                self.st.stop_at(
                    block_start,
                    format!("the capture ends inside a {blen}-byte block (the file was cut)"),
                );
                return Ok(());
            }
        }
    }
}
