//! Streaming pcap / pcapng reader.
//!
//! [`CaptureReader`] reads a capture in blocks through pcap-parser's circular
//! buffer (the refill / consume loop), so a 10 GB capture never sits in
//! memory: the reader holds one buffer of [`BUFFER_CAPACITY`] bytes plus one
//! [`Interface`] per interface the file declares. The common blocks — an
//! Enhanced Packet Block without options, a classic pcap record — are read
//! in place ([`plain_epb`], [`plain_record`]); pcap-parser parses every
//! other block and decides what is damaged. See the module docs of
//! [`crate::sources`] for the decisions taken where the brief was silent.
use std::cell::RefCell;
use std::fmt;
use std::fs::File;
use std::io::{self, Cursor, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{
    Block, InterfaceDescriptionBlock, LegacyPcapBlock, LegacyPcapReader, OptionCode,
    PcapBlockOwned, PcapError, PcapHeader, PcapNGReader, SimplePacketBlock, UnknownBlock,
};

use super::compress::{Compression, Decompressed, Progress, read_fully};
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
const NS_PER_SEC: u64 = 1_000_000_000;

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

/// Per-interface timestamp scale.
#[derive(Debug, Clone, Copy)]
struct TsScale {
    /// Timestamp units per second.
    units: u64,
    /// if_tsoffset, in seconds.
    offset_s: i64,
}

struct State {
    path: PathBuf,
    /// The stream is decompressed (offsets are in the decompressed data).
    decompressed: Option<Compression>,
    interfaces: Vec<Interface>,
    scales: Vec<TsScale>,
    /// Classic pcap: timestamps' fraction is in ns (else µs).
    legacy_ns: bool,
    /// Classic pcap in the "modified" format (24-byte record headers).
    legacy_modified: bool,
    /// Index in `interfaces` of the current pcapng section's interface 0.
    section_base: usize,
    /// Current pcapng section is big-endian.
    section_be: bool,
    pcapng: bool,
    warnings: Vec<Warning>,
    warnings_noted: usize,
    warnings_dropped: u64,
    snaplen_warned: bool,
    /// A timestamp going backwards was warned about (once per file).
    backwards_warned: bool,
    /// Link types warned about as not decoded (once per link type).
    undecoded_warned: Vec<u32>,
    /// File offset of the first byte of the reader's buffered data.
    pos: u64,
    /// Length of the block of the frame last returned, consumed on the next call.
    pending: usize,
    number: u64,
    delivered: u64,
    last_ts: u64,
    done: bool,
}

/// What to do after looking at one block or parser result.
enum Step {
    /// Return a frame: the block is `len` bytes; its captured bytes are at
    /// `start..start + caplen` of the buffered data.
    Frame {
        len: usize,
        start: usize,
        caplen: usize,
        meta: Meta,
    },
    /// Consume this many bytes and go on.
    Consume(usize),
    NeedData,
    Eof,
    /// A warning with `stopped` was pushed; end of the frames.
    Stop,
    TooLarge,
    Corrupt(String),
    /// A fault that ends the run: an error naming the block at the front.
    Fatal(String),
    Io,
}

#[derive(Clone, Copy)]
struct Meta {
    number: u64,
    iface: u32,
    ts_ns: u64,
    linktype: u32,
    orig_len: u32,
}

/// `Read` adapter: fills the whole buffer when it can (so pcap-parser's
/// single-read constructors see a whole header even from a pipe), retries
/// on `Interrupted`, and keeps the I/O error for the error message
/// (pcap-parser reports only "ReadError"). An error after some bytes were
/// read is held back until those bytes are handed out.
struct FullRead<R> {
    inner: R,
    held: Option<io::Error>,
    error: Rc<RefCell<Option<io::Error>>>,
}

impl<R: Read> Read for FullRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let e = match self.held.take() {
            Some(e) => e,
            None => match read_fully(&mut self.inner, buf) {
                (n, None) => return Ok(n),
                (n, Some(e)) if n > 0 => {
                    self.held = Some(e);
                    return Ok(n);
                }
                (_, Some(e)) => e,
            },
        };
        let kind = e.kind();
        *self.error.borrow_mut() = Some(e);
        Err(io::Error::new(kind, "read failed"))
    }
}

/// What [`sniff`] found at the start of a stream.
struct Sniffed {
    format: Format,
    /// The (decompressed) stream from the start of the capture.
    stream: Box<dyn Read>,
    compression: Option<(Compression, Progress)>,
}

/// The capture format of stream `r` (decompressing it if it is
/// compressed), and the stream from the start of the capture again.
fn sniff(path: &Path, r: Box<dyn Read>) -> Result<Sniffed> {
    let (magic, r) = read_magic(path, r, None)?;
    let (magic, inner, compression) = match Compression::detect(magic) {
        None => (magic, r, None),
        Some(codec) => {
            let d = Decompressed::new(codec, r).map_err(|source| Error::Read {
                path: path.to_path_buf(),
                offset: 0,
                source,
            })?;
            let progress = d.progress();
            let (magic, r) = match read_magic(path, Box::new(d), Some(codec)) {
                Err(Error::NotACapture { .. }) if progress.take_cut() => {
                    return Err(Error::NotACapture {
                        path: path.to_path_buf(),
                        detail: format!(
                            "the {codec}-compressed data ends after {} bytes, before the capture's file header could be decompressed: the file was cut",
                            progress.compressed_bytes()
                        ),
                    });
                }
                other => other?,
            };
            (magic, r, Some((codec, progress)))
        }
    };
    let format = detect(magic).map_err(|detail| Error::NotACapture {
        path: path.to_path_buf(),
        detail: match &compression {
            Some((codec, _)) => format!("{codec}-compressed, and what it holds has {detail}"),
            None => detail,
        },
    })?;
    Ok(Sniffed {
        format,
        stream: inner,
        compression,
    })
}

/// Whether the stream starts like a capture (plain or compressed): reads
/// only its first bytes (and the first block of compressed data).
pub(super) fn probe(path: &Path, r: Box<dyn Read>) -> Result<()> {
    sniff(path, r).map(|_| ())
}

/// The first 4 bytes of `r`, and `r` from its start again. `codec`: `r`
/// is the decompressed data of such a stream (for messages).
fn read_magic(
    path: &Path,
    mut r: Box<dyn Read>,
    codec: Option<Compression>,
) -> Result<([u8; 4], Box<dyn Read>)> {
    let mut magic = [0u8; 4];
    let (n, err) = read_fully(&mut r, &mut magic);
    if let Some(source) = err {
        return Err(Error::Read {
            path: path.to_path_buf(),
            offset: n as u64,
            source,
        });
    }
    let what = match codec {
        Some(c) => format!("the {c}-compressed data"),
        None => "the file".to_string(),
    };
    let not_a_capture = |detail: String| Error::NotACapture {
        path: path.to_path_buf(),
        detail,
    };
    if n == 0 {
        return Err(not_a_capture(format!("{what} is empty")));
    }
    if n < 4 {
        return Err(not_a_capture(format!(
            "{what} is only {n} bytes long, too short for a file header"
        )));
    }
    Ok((magic, Box::new(Cursor::new(magic).chain(r))))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Pcap,
    PcapNg,
}

fn detect(magic: [u8; 4]) -> std::result::Result<Format, String> {
    match u32::from_le_bytes(magic) {
        0xa1b2_c3d4 | 0xa1b2_3c4d | 0xa1b2_cd34 | 0xd4c3_b2a1 | 0x4d3c_b2a1 => Ok(Format::Pcap),
        SHB_TYPE => Ok(Format::PcapNg),
        _ => {
            // Only what a compressed file holds reaches here with one of
            // these: rocescope undoes one layer of compression.
            if let Some(inner) = Compression::detect(magic) {
                return Err(format!(
                    "{inner}'s magic number: it was compressed twice; decompress the outer layer and give rocescope what that gives"
                ));
            }
            let hint = match magic {
                [0xfd, b'7', b'z', b'X'] => "; it is xz-compressed: unxz it first",
                [0x02, 0x21, 0x4c, 0x18] => "; it is in lz4's legacy format: lz4 -d it first",
                [b'B', b'Z', b'h', _] => "; it is bzip2-compressed: bunzip2 it first",
                _ => "",
            };
            Err(format!(
                "unknown magic number {:02x} {:02x} {:02x} {:02x}{hint}",
                magic[0], magic[1], magic[2], magic[3]
            ))
        }
    }
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

/// pcapng block type and length at the start of `data`, in the section's
/// byte order (an SHB carries its own byte-order magic).
fn ng_peek(data: &[u8], be: bool) -> Option<(u32, u32)> {
    let word = |at: usize, be: bool| u32_at(data, at, be);
    let raw = word(0, false)?;
    if raw == SHB_TYPE {
        let bom_be = word(8, true)? == BOM;
        return Some((SHB_TYPE, word(4, bom_be)?));
    }
    Some((word(0, be)?, word(4, be)?))
}

/// An Enhanced Packet Block's fixed fields.
struct EpbHeader {
    if_id: u32,
    ts: u64,
    caplen: u32,
    origlen: u32,
}

impl EpbHeader {
    /// The fields as the block stores them: the timestamp in two words.
    fn new(if_id: u32, ts_high: u32, ts_low: u32, caplen: u32, origlen: u32) -> Self {
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
fn plain_epb(data: &[u8], be: bool) -> Option<(usize, EpbHeader, &[u8])> {
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
fn plain_record(data: &[u8], be: bool, modified: bool) -> Option<(usize, LegacyPcapBlock<'_>)> {
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

fn legacy_caplen(data: &[u8], be: bool) -> Option<u32> {
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

/// `ts` in `units` per second, plus an offset in seconds, as ns since the
/// epoch; `None` when that is before 1970 or past the u64 ns range (2554).
fn scale_ts(ts: u64, scale: TsScale) -> Option<u64> {
    let units = scale.units.max(1);
    // The usual resolutions (ns, µs, ms) divide a second: no 128-bit division.
    let ns = if NS_PER_SEC.is_multiple_of(units) {
        i128::from(ts) * i128::from(NS_PER_SEC / units)
    } else {
        (u128::from(ts) * u128::from(NS_PER_SEC) / u128::from(units)) as i128
    } + i128::from(scale.offset_s) * i128::from(NS_PER_SEC);
    u64::try_from(ns).ok()
}

/// Units per second of an `if_tsresol` byte: 10^n, or 2^n with the top bit.
fn ts_units(resol: u8) -> Option<u64> {
    if resol & 0x80 == 0 {
        10u64.checked_pow(u32::from(resol))
    } else {
        1u64.checked_shl(u32::from(resol & 0x7f))
    }
}

impl State {
    /// Warnings about a frame about to be returned (its block starts at `pos`).
    fn on_frame(&mut self, meta: &Meta, data: &[u8]) {
        if meta.linktype == rocescope_common::proto::linktype::ERF
            && let Err(e) = crate::decode::erf::record(data)
        {
            self.warn(
                self.pos,
                format!(
                    "frame {} (interface {}) is a bad ERF record: {e}; it is skipped and counted",
                    meta.number, meta.iface
                ),
            );
        }
        if !self.backwards_warned && self.delivered > 0 && meta.ts_ns < self.last_ts {
            self.backwards_warned = true;
            self.warn(
                self.pos,
                format!(
                    "timestamps go backwards: frame {} is {} ns earlier than the frame before it; frames are analysed in file order (warned once per file)",
                    meta.number,
                    self.last_ts - meta.ts_ns
                ),
            );
        }
        if !crate::decode::decodes_linktype(meta.linktype)
            && self.undecoded_warned.len() < MAX_WARNINGS
            && !self.undecoded_warned.contains(&meta.linktype)
        {
            self.undecoded_warned.push(meta.linktype);
            self.warn(
                self.pos,
                format!(
                    "frame {} (interface {}) has link type {}, which rocescope does not decode (it reads {}): frames of this link type are skipped",
                    meta.number,
                    meta.iface,
                    meta.linktype,
                    crate::decode::DECODED_LINKTYPES
                ),
            );
        }
    }

    fn warn(&mut self, offset: u64, detail: String) {
        if self.warnings_noted >= MAX_WARNINGS {
            self.warnings_dropped += 1;
            return;
        }
        self.warnings_noted += 1;
        self.warnings.push(Warning {
            path: self.path.clone(),
            offset,
            frames_before: self.delivered,
            detail,
            stopped: false,
            decompressed: self.decompressed,
        });
    }

    /// Stops at the block at the front of the buffer.
    fn stop(&mut self, detail: String) {
        self.stop_at(self.pos, detail);
    }

    fn stop_at(&mut self, offset: u64, detail: String) {
        self.warnings.push(Warning {
            path: self.path.clone(),
            offset,
            frames_before: self.delivered,
            detail,
            stopped: true,
            decompressed: self.decompressed,
        });
        self.finish();
    }

    fn finish(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        if self.warnings_dropped > 0 {
            self.warnings.push(Warning {
                path: self.path.clone(),
                offset: self.pos,
                frames_before: self.delivered,
                detail: format!(
                    "{} more warnings like the ones above were not listed",
                    self.warnings_dropped
                ),
                stopped: false,
                decompressed: self.decompressed,
            });
        }
    }

    fn on_pcap_header(&mut self, h: &PcapHeader) {
        self.legacy_ns = h.is_nanosecond_precision();
        self.legacy_modified = h.is_modified_format();
        self.section_be = h.is_bigendian();
        // The upper bits of the link-type field carry FCS information.
        self.interfaces.push(Interface {
            name: None,
            linktype: (h.network.0 as u32) & 0xFFFF,
            snaplen: h.snaplen,
            drops: None,
        });
        self.scales.push(TsScale {
            units: if self.legacy_ns {
                NS_PER_SEC
            } else {
                1_000_000
            },
            offset_s: 0,
        });
    }

    fn on_block(&mut self, len: usize, block: &PcapBlockOwned<'_>, base: usize) -> Step {
        match block {
            PcapBlockOwned::LegacyHeader(h) => {
                if self.interfaces.is_empty() {
                    self.on_pcap_header(h);
                }
                Step::Consume(len)
            }
            PcapBlockOwned::Legacy(b) => self.on_legacy(len, b, base),
            PcapBlockOwned::NG(Block::SectionHeader(shb)) => {
                self.section_base = self.interfaces.len();
                self.section_be = shb.big_endian();
                Step::Consume(len)
            }
            PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => self.on_idb(len, idb),
            PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                let hdr =
                    EpbHeader::new(epb.if_id, epb.ts_high, epb.ts_low, epb.caplen, epb.origlen);
                let caplen = (epb.caplen as usize).min(epb.data.len());
                self.on_epb(len, &hdr, &epb.data[..caplen], base)
            }
            PcapBlockOwned::NG(Block::SimplePacket(spb)) => self.on_spb(len, spb, base),
            PcapBlockOwned::NG(Block::InterfaceStatistics(isb)) => {
                self.on_isb(isb);
                Step::Consume(len)
            }
            PcapBlockOwned::NG(Block::Unknown(ub)) => {
                let btype = if self.section_be {
                    ub.block_type.swap_bytes()
                } else {
                    ub.block_type
                };
                if btype == PB_TYPE {
                    self.on_pb(len, ub, base)
                } else {
                    Step::Consume(len)
                }
            }
            PcapBlockOwned::NG(_) => Step::Consume(len),
        }
    }

    fn frame_step(
        &mut self,
        len: usize,
        data: &[u8],
        base: usize,
        iface: usize,
        ts_ns: u64,
        orig_len: u32,
    ) -> Step {
        let caplen = data.len();
        let Some(start) = (data.as_ptr() as usize).checked_sub(base) else {
            self.stop("internal error locating the frame".into());
            return Step::Stop;
        };
        let Interface {
            linktype, snaplen, ..
        } = self.interfaces[iface];
        if snaplen != 0 && caplen > snaplen as usize && !self.snaplen_warned {
            self.snaplen_warned = true;
            self.warn(
                self.pos,
                format!(
                    "frame {}: {caplen} bytes captured, more than the interface's snaplen {snaplen}; kept them all (reported once per file)",
                    self.number
                ),
            );
        }
        Step::Frame {
            len,
            start,
            caplen,
            meta: Meta {
                number: self.number,
                iface: iface as u32,
                ts_ns,
                linktype,
                orig_len,
            },
        }
    }

    fn on_legacy(&mut self, len: usize, b: &LegacyPcapBlock<'_>, base: usize) -> Step {
        self.number += 1;
        if b.caplen > MAX_CAPLEN {
            self.stop(format!(
                "packet record claims {} captured bytes, more than the {MAX_CAPLEN} any capture tool writes: the file is damaged",
                b.caplen
            ));
            return Step::Stop;
        }
        let frac_ns = if self.legacy_ns {
            u64::from(b.ts_usec)
        } else {
            u64::from(b.ts_usec) * 1000
        };
        let ts_ns = u64::from(b.ts_sec) * NS_PER_SEC + frac_ns;
        if self.interfaces.is_empty() {
            self.stop("packet record before the file header".into());
            return Step::Stop;
        }
        self.frame_step(len, b.data, base, 0, ts_ns, b.origlen)
    }

    /// An Interface Statistics Block: its drop counters replace the
    /// interface's earlier ones (they count from the capture's start). An
    /// ISB for an undeclared interface, or a counter that does not parse, is
    /// left out.
    fn on_isb(&mut self, isb: &pcap_parser::pcapng::InterfaceStatisticsBlock<'_>) {
        // pcap-parser reads the option as little-endian whatever the
        // section's byte order.
        let be = self.section_be;
        let value = |v: Option<Result<u64, _>>| {
            v.and_then(Result::ok)
                .map(|x: u64| if be { x.swap_bytes() } else { x })
        };
        let drops = InterfaceDrops {
            ifdrop: value(isb.isb_ifdrop()),
            osdrop: value(isb.isb_osdrop()),
        };
        if drops == InterfaceDrops::default() {
            return;
        }
        let index = self.section_base.saturating_add(isb.if_id as usize);
        if let Some(i) = self.interfaces.get_mut(index) {
            i.drops = Some(drops);
        }
    }

    fn on_idb(&mut self, len: usize, idb: &InterfaceDescriptionBlock<'_>) -> Step {
        if self.interfaces.len() >= MAX_INTERFACES {
            self.stop(format!(
                "more than {MAX_INTERFACES} interface description blocks: the file is damaged"
            ));
            return Step::Stop;
        }
        let mut name = None;
        let mut resol = 6u8;
        let mut offset_s = 0i64;
        for opt in &idb.options {
            let Ok(v) = opt.as_bytes() else { continue };
            match opt.code {
                OptionCode::IfName => {
                    let s = String::from_utf8_lossy(v);
                    name = Some(s.trim_end_matches('\0').to_string());
                }
                OptionCode::IfTsresol => {
                    if let Some(&r) = v.first() {
                        resol = r;
                    }
                }
                OptionCode::IfTsoffset => {
                    if let Ok(b) = <[u8; 8]>::try_from(v) {
                        offset_s = if self.section_be {
                            i64::from_be_bytes(b)
                        } else {
                            i64::from_le_bytes(b)
                        };
                    }
                }
                _ => {}
            }
        }
        let index = self.interfaces.len();
        let units = match ts_units(resol) {
            Some(u) if u > 0 => u,
            _ => {
                self.warn(
                    self.pos,
                    format!(
                        "interface {index}: if_tsresol {resol:#04x} is no usable resolution; took its timestamps as microseconds"
                    ),
                );
                1_000_000
            }
        };
        self.interfaces.push(Interface {
            name,
            linktype: (idb.linktype.0 as u32) & 0xFFFF,
            snaplen: idb.snaplen,
            drops: None,
        });
        self.scales.push(TsScale { units, offset_s });
        Step::Consume(len)
    }

    /// Section-local interface id to file-wide index, or a skip warning.
    fn iface_index(&mut self, if_id: u32, what: &str) -> Option<usize> {
        let in_section = self.interfaces.len() - self.section_base;
        if (if_id as usize) < in_section {
            Some(self.section_base + if_id as usize)
        } else {
            self.warn(
                self.pos,
                format!(
                    "frame {}: {what} names interface {if_id}, but its section declares {in_section}; skipped that frame",
                    self.number
                ),
            );
            None
        }
    }

    fn oversized(&mut self, caplen: u32) -> bool {
        if caplen > MAX_CAPLEN {
            self.warn(
                self.pos,
                format!(
                    "frame {}: {caplen} captured bytes, more than the {MAX_CAPLEN} any capture tool writes; skipped that frame",
                    self.number
                ),
            );
            true
        } else {
            false
        }
    }

    fn timestamp(&self, ts: u64, iface: usize) -> Option<u64> {
        scale_ts(ts, *self.scales.get(iface)?)
    }

    /// A pcapng timestamp that is no time since 1970 in u64 nanoseconds:
    /// an error (saturating would put the frame at a made-up time).
    fn bad_timestamp(&self, ts: u64, iface: usize) -> Step {
        let scale = self.scales.get(iface).copied().unwrap_or(TsScale {
            units: 1_000_000,
            offset_s: 0,
        });
        let name = self
            .interfaces
            .get(iface)
            .and_then(|i| i.name.as_deref())
            .map(|n| format!(" {n:?}"))
            .unwrap_or_default();
        Step::Fatal(format!(
            "frame {} (interface {iface}{name}): timestamp {ts} at {} units per second plus if_tsoffset {} s is before 1970 or after 2554, which no capture can be: the interface's if_tsresol or if_tsoffset is wrong; fix them (e.g. rewrite the file with editcap) or capture again",
            self.number, scale.units, scale.offset_s
        ))
    }

    fn on_epb(&mut self, len: usize, hdr: &EpbHeader, data: &[u8], base: usize) -> Step {
        self.number += 1;
        let Some(iface) = self.iface_index(hdr.if_id, "enhanced packet block") else {
            return Step::Consume(len);
        };
        if self.oversized(hdr.caplen) {
            return Step::Consume(len);
        }
        let Some(ts_ns) = self.timestamp(hdr.ts, iface) else {
            return self.bad_timestamp(hdr.ts, iface);
        };
        self.frame_step(len, data, base, iface, ts_ns, hdr.origlen)
    }

    fn on_spb(&mut self, len: usize, spb: &SimplePacketBlock<'_>, base: usize) -> Step {
        self.number += 1;
        let Some(iface) = self.iface_index(0, "simple packet block") else {
            return Step::Consume(len);
        };
        let snaplen = self.interfaces[iface].snaplen;
        let mut caplen = (spb.origlen as usize).min(spb.data.len());
        if snaplen != 0 {
            caplen = caplen.min(snaplen as usize);
        }
        if self.oversized(caplen as u32) {
            return Step::Consume(len);
        }
        // An SPB carries no timestamp: it gets the previous frame's.
        let ts_ns = self.last_ts;
        self.frame_step(len, &spb.data[..caplen], base, iface, ts_ns, spb.origlen)
    }

    /// Obsolete Packet Block (type 2): iface u16, drops u16, ts high, ts
    /// low, caplen, origlen, data, options.
    fn on_pb(&mut self, len: usize, ub: &UnknownBlock<'_>, base: usize) -> Step {
        self.number += 1;
        let body = ub.data;
        let be = self.section_be;
        let u32_at = |at: usize| -> u32 {
            let b: [u8; 4] = body[at..at + 4].try_into().unwrap_or([0; 4]);
            if be {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        if body.len() < 20 {
            self.warn(
                self.pos,
                format!(
                    "frame {}: packet block too short for its header; skipped that frame",
                    self.number
                ),
            );
            return Step::Consume(len);
        }
        let if_id = {
            let b = [body[0], body[1]];
            if be {
                u16::from_be_bytes(b)
            } else {
                u16::from_le_bytes(b)
            }
        };
        let (ts_high, ts_low, caplen, origlen) = (u32_at(4), u32_at(8), u32_at(12), u32_at(16));
        let Some(iface) = self.iface_index(u32::from(if_id), "packet block") else {
            return Step::Consume(len);
        };
        if self.oversized(caplen) {
            return Step::Consume(len);
        }
        let Some(data) = body.get(20..20 + caplen as usize) else {
            self.warn(
                self.pos,
                format!(
                    "frame {}: packet block's captured length {caplen} overruns the block; skipped that frame",
                    self.number
                ),
            );
            return Step::Consume(len);
        };
        let ts = (u64::from(ts_high) << 32) | u64::from(ts_low);
        let Some(ts_ns) = self.timestamp(ts, iface) else {
            return self.bad_timestamp(ts, iface);
        };
        self.frame_step(len, data, base, iface, ts_ns, origlen)
    }
}

#[cfg(test)]
mod scale_tests {
    use super::*;

    /// The multiply-only path gives what the 128-bit division gives, for
    /// decimal and binary resolutions, offsets and timestamps near the limits.
    #[test]
    fn scaled_timestamps_match_the_exact_division() {
        let exact = |ts: u64, s: TsScale| {
            let ns = (u128::from(ts) * u128::from(NS_PER_SEC) / u128::from(s.units.max(1))) as i128
                + i128::from(s.offset_s) * i128::from(NS_PER_SEC);
            u64::try_from(ns).ok()
        };
        let units =
            (0..=9)
                .chain([12, 19])
                .filter_map(ts_units)
                .chain([1 << 20, 1 << 30, 1 << 63, 0]);
        for units in units {
            for offset_s in [0, 1, -1, 1_700_000_000, i64::MIN, i64::MAX] {
                for ts in [0, 1, 999, 1_700_000_000_123_456_789, u64::MAX / 3, u64::MAX] {
                    let s = TsScale { units, offset_s };
                    assert_eq!(
                        scale_ts(ts, s),
                        exact(ts, s),
                        "{ts} at {units}/s + {offset_s} s"
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod in_place_tests {
    use pcap_parser::{
        Block, parse_block_be, parse_block_le, parse_pcap_frame, parse_pcap_frame_be,
    };

    use super::*;

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
