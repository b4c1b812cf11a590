//! Streaming capture writers: classic pcap (nanosecond timestamps) and
//! pcapng (one interface per tap, nanosecond `if_tsresol`).
//!
//! Both write through a [`BufWriter`] record by record; nothing of the
//! capture is kept in memory. Both little-endian.
//!
//! Kept rather than a crate's writer: pcap-parser's serializer (its
//! `serialize` feature) builds every block in a `Vec` of its own, one
//! allocation per frame on captures of millions, and `pcap-file` would be a
//! second pcap crate for the same ~150 lines; the committed samples
//! (`pcaps/`, byte for byte reproducible) pin the layout written here: SHB
//! with `shb_userappl`, an IDB per tap with `if_name` and `if_tsresol`, EPBs.
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use crate::{Error, Result};

/// Classic pcap magic for nanosecond timestamps.
pub const PCAP_MAGIC_NS: u32 = 0xA1B2_3C4D;
/// Default snaplen: nothing is cut.
pub const DEFAULT_SNAPLEN: u32 = 262_144;

/// pcapng block types.
pub const PCAPNG_SHB: u32 = 0x0A0D_0D0A;
pub const PCAPNG_IDB: u32 = 0x0000_0001;
pub const PCAPNG_EPB: u32 = 0x0000_0006;
pub const PCAPNG_BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;

/// What both writers offer: one frame at a time.
pub trait CaptureWrite {
    /// Writes one frame seen at `iface` (an id from the writer; classic pcap
    /// has one interface and ignores it) at `ts_ns` (ns since the Unix
    /// epoch), `orig_len` bytes long on the wire, of which `data` were kept
    /// (cut further to the snaplen).
    fn write_frame_orig(
        &mut self,
        iface: u32,
        ts_ns: u64,
        data: &[u8],
        orig_len: u32,
    ) -> io::Result<()>;

    /// Writes one whole frame.
    fn write_frame(&mut self, iface: u32, ts_ns: u64, data: &[u8]) -> io::Result<()> {
        let len = u32::try_from(data.len()).map_err(|_| too_long())?;
        self.write_frame_orig(iface, ts_ns, data, len)
    }

    /// Flushes what is buffered.
    fn flush(&mut self) -> io::Result<()>;
}

fn too_long() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "frame longer than 4 GiB")
}

fn create_file(path: &Path) -> Result<File> {
    File::create(path).map_err(|source| Error::Open {
        path: path.to_path_buf(),
        source,
    })
}

pub(crate) fn write_error(path: &Path, e: io::Error) -> Error {
    Error::WriteIo {
        path: path.to_path_buf(),
        detail: e.to_string(),
        source: e,
    }
}

/// Classic pcap writer (magic 0xA1B23C4D: nanosecond timestamps).
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: BufWriter<W>,
    snaplen: u32,
    frames: u64,
}

impl PcapWriter<File> {
    /// Creates `path` (replacing it) and writes the file header.
    pub fn create(path: impl AsRef<Path>, linktype: u32, snaplen: u32) -> Result<Self> {
        let path = path.as_ref();
        let file = create_file(path)?;
        PcapWriter::new(file, linktype, snaplen).map_err(|e| write_error(path, e))
    }
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header to `inner`. Records are cut to `snaplen` bytes
    /// (their original length is kept); 0 cuts nothing.
    pub fn new(inner: W, linktype: u32, snaplen: u32) -> io::Result<Self> {
        let mut out = BufWriter::with_capacity(1 << 16, inner);
        let mut header = [0u8; 24];
        header[0..4].copy_from_slice(&PCAP_MAGIC_NS.to_le_bytes());
        header[4..6].copy_from_slice(&2u16.to_le_bytes());
        header[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone, sigfigs: 0.
        header[16..20].copy_from_slice(&snaplen.to_le_bytes());
        header[20..24].copy_from_slice(&linktype.to_le_bytes());
        out.write_all(&header)?;
        Ok(PcapWriter {
            out,
            snaplen,
            frames: 0,
        })
    }

    /// Frames written so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Flushes and returns the underlying writer.
    pub fn finish(self) -> io::Result<W> {
        self.out.into_inner().map_err(|e| e.into_error())
    }
}

impl<W: Write> CaptureWrite for PcapWriter<W> {
    fn write_frame_orig(
        &mut self,
        _iface: u32,
        ts_ns: u64,
        data: &[u8],
        orig_len: u32,
    ) -> io::Result<()> {
        let len = u32::try_from(data.len()).map_err(|_| too_long())?;
        let incl = if self.snaplen == 0 {
            len
        } else {
            len.min(self.snaplen)
        };
        let mut rec = [0u8; 16];
        rec[0..4].copy_from_slice(&((ts_ns / 1_000_000_000) as u32).to_le_bytes());
        rec[4..8].copy_from_slice(&((ts_ns % 1_000_000_000) as u32).to_le_bytes());
        rec[8..12].copy_from_slice(&incl.to_le_bytes());
        rec[12..16].copy_from_slice(&orig_len.max(incl).to_le_bytes());
        self.out.write_all(&rec)?;
        self.out.write_all(&data[..incl as usize])?;
        self.frames += 1;
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// One interface of a pcapng capture.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Interface {
    snaplen: u32,
    /// Timestamp units per second.
    units: u64,
}

const NS_PER_SEC: u64 = 1_000_000_000;

/// pcapng writer: a section header, interfaces added with
/// [`PcapngWriter::add_interface`] (an IDB with `if_name` and
/// `if_tsresol` = 9), one Enhanced Packet Block per frame.
#[derive(Debug)]
pub struct PcapngWriter<W: Write> {
    out: BufWriter<W>,
    interfaces: Vec<Interface>,
    frames: u64,
}

impl PcapngWriter<File> {
    /// Creates `path` (replacing it) and writes the section header.
    pub fn create(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let file = create_file(path)?;
        PcapngWriter::new(file).map_err(|e| write_error(path, e))
    }
}

/// Appends one pcapng option (code, length, value padded to 4 bytes).
fn push_option(block: &mut Vec<u8>, code: u16, value: &[u8]) {
    block.extend_from_slice(&code.to_le_bytes());
    block.extend_from_slice(&(value.len() as u16).to_le_bytes());
    block.extend_from_slice(value);
    block.resize(block.len() + pad4(value.len()), 0);
}

const fn pad4(len: usize) -> usize {
    (4 - len % 4) % 4
}

/// Writes a block: type, total length, `body`, total length.
fn write_block(out: &mut impl Write, block_type: u32, body: &[u8]) -> io::Result<()> {
    let total = (12 + body.len()) as u32;
    out.write_all(&block_type.to_le_bytes())?;
    out.write_all(&total.to_le_bytes())?;
    out.write_all(body)?;
    out.write_all(&total.to_le_bytes())
}

impl<W: Write> PcapngWriter<W> {
    /// Writes the section header block (`shb_userappl` = rocescope).
    pub fn new(inner: W) -> io::Result<Self> {
        let mut out = BufWriter::with_capacity(1 << 16, inner);
        let mut body = Vec::with_capacity(48);
        body.extend_from_slice(&PCAPNG_BYTE_ORDER_MAGIC.to_le_bytes());
        body.extend_from_slice(&1u16.to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes());
        body.extend_from_slice(&u64::MAX.to_le_bytes()); // section length unknown
        push_option(&mut body, 4, b"rocescope synth"); // shb_userappl
        push_option(&mut body, 0, &[]);
        write_block(&mut out, PCAPNG_SHB, &body)?;
        Ok(PcapngWriter {
            out,
            interfaces: Vec::new(),
            frames: 0,
        })
    }

    /// Adds an interface (IDB) named `name` and returns its id (0, 1, …).
    /// Its frames are cut to `snaplen` bytes (0: no limit).
    pub fn add_interface(&mut self, name: &str, linktype: u16, snaplen: u32) -> io::Result<u32> {
        self.add_interface_with_units(name, linktype, snaplen, NS_PER_SEC)
    }

    /// [`PcapngWriter::add_interface`] with timestamps in `units` per
    /// second (`if_tsresol`): a power of 10 or of 2 up to 10^9; anything
    /// else is written in nanoseconds.
    pub fn add_interface_with_units(
        &mut self,
        name: &str,
        linktype: u16,
        snaplen: u32,
        units: u64,
    ) -> io::Result<u32> {
        let resol = (0..=9u32)
            .find(|&n| 10u64.pow(n) == units)
            .map(|n| n as u8)
            .or_else(|| {
                // Up to 2^28: a ns timestamp read from it rounds back.
                (units.is_power_of_two() && units <= 1 << 28)
                    .then(|| 0x80 | units.trailing_zeros() as u8)
            });
        let (resol, units) = match resol {
            Some(r) => (r, units),
            None => (9, NS_PER_SEC),
        };
        let mut body = Vec::with_capacity(32 + name.len());
        body.extend_from_slice(&linktype.to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes());
        body.extend_from_slice(&snaplen.to_le_bytes());
        push_option(&mut body, 2, name.as_bytes()); // if_name
        push_option(&mut body, 9, &[resol]); // if_tsresol
        push_option(&mut body, 0, &[]);
        write_block(&mut self.out, PCAPNG_IDB, &body)?;
        self.interfaces.push(Interface { snaplen, units });
        Ok((self.interfaces.len() - 1) as u32)
    }

    /// Frames written so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Flushes and returns the underlying writer.
    pub fn finish(self) -> io::Result<W> {
        self.out.into_inner().map_err(|e| e.into_error())
    }
}

impl<W: Write> CaptureWrite for PcapngWriter<W> {
    fn write_frame_orig(
        &mut self,
        iface: u32,
        ts_ns: u64,
        data: &[u8],
        orig_len: u32,
    ) -> io::Result<()> {
        let (snaplen, units) = match self.interfaces.get(iface as usize) {
            Some(i) => (i.snaplen, i.units),
            None => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("pcapng interface {iface} was not added"),
                ));
            }
        };
        let len = u32::try_from(data.len()).map_err(|_| too_long())?;
        let incl = if snaplen == 0 { len } else { len.min(snaplen) };
        let padded = incl as usize + pad4(incl as usize);
        let total = (32 + padded) as u32;
        let mut head = [0u8; 28];
        head[0..4].copy_from_slice(&PCAPNG_EPB.to_le_bytes());
        head[4..8].copy_from_slice(&total.to_le_bytes());
        head[8..12].copy_from_slice(&iface.to_le_bytes());
        // Back to the interface's units, to the nearest (a reader's
        // conversion to ns rounded by less than half a unit).
        let ts = if units == NS_PER_SEC {
            ts_ns
        } else {
            ((u128::from(ts_ns) * u128::from(units) + u128::from(NS_PER_SEC / 2))
                / u128::from(NS_PER_SEC)) as u64
        };
        head[12..16].copy_from_slice(&((ts >> 32) as u32).to_le_bytes());
        head[16..20].copy_from_slice(&(ts as u32).to_le_bytes());
        head[20..24].copy_from_slice(&incl.to_le_bytes());
        head[24..28].copy_from_slice(&orig_len.max(incl).to_le_bytes());
        self.out.write_all(&head)?;
        self.out.write_all(&data[..incl as usize])?;
        self.out.write_all(&[0u8; 3][..pad4(incl as usize)])?;
        self.out.write_all(&total.to_le_bytes())?;
        self.frames += 1;
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
