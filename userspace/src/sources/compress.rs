//! Compressed captures (gzip, zstd, lz4 frame format), recognised by their
//! magic bytes and decompressed while streaming, as Wireshark reads them.
//!
//! The decoders are the well-kept crates: flate2 (gzip, every member of a
//! multi-member file), zstd (libzstd; every frame, windows up to libzstd's
//! default limit of 128 MiB, so a file cannot make it allocate more) and
//! lz4_flex (the lz4 frame format, blocks of at most 4 MiB). Nothing is
//! held but the decoder's window and one block.
//!
//! A compressed stream cut short (the compressor killed mid-way, a file
//! copied while being written) reads as the end of the data: the capture
//! reader then sees a capture cut inside a record, warns and analyses every
//! frame before it, as for a plain file that was cut; [`Decompressed`] says
//! where the compressed data ended. Damaged compressed data is a read error
//! naming the compressed byte offset.
use std::cell::Cell;
use std::fmt;
use std::io::{self, Read};
use std::rc::Rc;

/// A compression format rocescope reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    Gzip,
    Zstd,
    Lz4,
}

impl Compression {
    /// The format whose magic number starts a stream (`None`: not one of them).
    pub fn detect(magic: [u8; 4]) -> Option<Compression> {
        match magic {
            [0x1f, 0x8b, ..] => Some(Compression::Gzip),
            [0x28, 0xb5, 0x2f, 0xfd] => Some(Compression::Zstd),
            [0x04, 0x22, 0x4d, 0x18] => Some(Compression::Lz4),
            _ => None,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::Lz4 => "lz4",
        }
    }

    /// The command that checks such a file, for messages.
    const fn test_command(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip -t",
            Compression::Zstd => "zstd -t",
            Compression::Lz4 => "lz4 -t",
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Compressed bytes read so far, and whether the stream was cut short.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    read: Rc<Cell<u64>>,
    cut: Rc<Cell<bool>>,
}

impl Progress {
    /// Compressed bytes consumed so far.
    pub fn compressed_bytes(&self) -> u64 {
        self.read.get()
    }

    /// The compressed data ended inside a gzip member / zstd or lz4 frame
    /// (true once: the flag is cleared).
    pub fn take_cut(&self) -> bool {
        self.cut.replace(false)
    }
}

/// Counts the compressed bytes handed to the decoder.
struct Counted<R> {
    inner: R,
    read: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.set(self.read.get() + n as u64);
        Ok(n)
    }
}

/// The decompressed bytes of a compressed stream.
pub struct Decompressed {
    decoder: Box<dyn Read>,
    codec: Compression,
    progress: Progress,
    ended: bool,
}

impl Decompressed {
    /// Decompresses `compressed`, which starts with `codec`'s magic number.
    pub fn new(codec: Compression, compressed: Box<dyn Read>) -> io::Result<Self> {
        let progress = Progress::default();
        let counted = Counted {
            inner: compressed,
            read: progress.read.clone(),
        };
        let decoder: Box<dyn Read> = match codec {
            Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(counted)),
            Compression::Zstd => Box::new(zstd::stream::read::Decoder::new(counted)?),
            Compression::Lz4 => Box::new(Lz4Frames::new(Box::new(counted))),
        };
        Ok(Self {
            decoder,
            codec,
            progress,
            ended: false,
        })
    }

    /// A handle on the compressed side's progress.
    pub fn progress(&self) -> Progress {
        self.progress.clone()
    }
}

impl Read for Decompressed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.ended {
            return Ok(0);
        }
        match self.decoder.read(buf) {
            Ok(n) => Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Err(e),
            Err(e) if is_cut(&e) => {
                // What came before is good: read it as the end of the data.
                self.ended = true;
                self.progress.cut.set(true);
                Ok(0)
            }
            Err(e) => {
                self.ended = true;
                Err(io::Error::new(
                    e.kind(),
                    format!(
                        "the {} data is damaged at about compressed byte {} ({e}); check the file with `{}`",
                        self.codec,
                        self.progress.compressed_bytes(),
                        self.codec.test_command()
                    ),
                ))
            }
        }
    }
}

/// Every frame of an lz4 stream: lz4_flex's decoder reads one frame, and
/// the `lz4` tool writes one per input file (`lz4 -c a b`, `cat`).
struct Lz4Frames {
    frame: Option<lz4_flex::frame::FrameDecoder<Box<dyn Read>>>,
}

impl Lz4Frames {
    fn new(r: Box<dyn Read>) -> Self {
        Self {
            frame: Some(lz4_flex::frame::FrameDecoder::new(r)),
        }
    }
}

impl Read for Lz4Frames {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let Some(frame) = &mut self.frame else {
                return Ok(0);
            };
            let n = frame.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            // The frame ended: another one may follow.
            let Some(frame) = self.frame.take() else {
                return Ok(0);
            };
            let mut rest = frame.into_inner();
            let mut magic = [0u8; 4];
            let (k, err) = read_fully(&mut rest, &mut magic);
            if let Some(e) = err {
                return Err(e);
            }
            if k == 0 {
                return Ok(0);
            }
            let head = io::Cursor::new(magic[..k].to_vec());
            self.frame = Some(lz4_flex::frame::FrameDecoder::new(Box::new(
                head.chain(rest),
            )));
        }
    }
}

/// The decoders' ways of saying the compressed data ended mid-stream.
fn is_cut(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::UnexpectedEof
}

/// Reads until `buf` is full, the reader ends, or an error (returned with
/// the count of bytes read before it).
pub(super) fn read_fully(r: &mut impl Read, buf: &mut [u8]) -> (usize, Option<io::Error>) {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k.min(buf.len() - n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (n, Some(e)),
        }
    }
    (n, None)
}

#[cfg(test)]
pub(super) mod tests {
    use std::io::Read;

    use super::*;

    /// Compressed `plain` in each format, with the crates' encoders, with
    /// content checksums as the `zstd` and `lz4` tools write them.
    pub(crate) fn compressed(codec: Compression, plain: &[u8]) -> Vec<u8> {
        use std::io::Write;
        match codec {
            Compression::Zstd => {
                let mut z = zstd::stream::Encoder::new(Vec::new(), 3).expect("zstd encodes");
                z.include_checksum(true).expect("a checksum");
                z.write_all(plain).expect("zstd encodes");
                z.finish().expect("zstd encodes")
            }
            Compression::Gzip => {
                let mut g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                g.write_all(plain).expect("gzip encodes");
                g.finish().expect("gzip encodes")
            }
            Compression::Lz4 => {
                let info = lz4_flex::frame::FrameInfo::new().content_checksum(true);
                let mut l = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
                l.write_all(plain).expect("lz4 encodes");
                l.finish().expect("lz4 encodes")
            }
        }
    }

    fn read_all(codec: Compression, bytes: Vec<u8>) -> (Vec<u8>, io::Result<()>, bool) {
        let mut d = Decompressed::new(codec, Box::new(io::Cursor::new(bytes))).expect("a decoder");
        let progress = d.progress();
        let mut out = Vec::new();
        let r = d.read_to_end(&mut out).map(|_| ());
        (out, r, progress.take_cut())
    }

    const CODECS: [Compression; 3] = [Compression::Gzip, Compression::Zstd, Compression::Lz4];

    /// Whole streams (also two concatenated, as `cat a.gz b.gz` makes)
    /// decompress to their bytes; a stream cut short ends early with the
    /// cut noted (the decoders say `UnexpectedEof`, which `is_cut` relies
    /// on); damaged data is an error naming the codec.
    #[test]
    fn whole_cut_and_damaged_streams() {
        let plain: Vec<u8> = (0..300_000u32)
            .flat_map(|i| (i % 251 * i).to_le_bytes())
            .collect();
        for codec in CODECS {
            let c = compressed(codec, &plain);
            assert_eq!(Compression::detect(c[..4].try_into().unwrap()), Some(codec));
            let (out, r, cut) = read_all(codec, c.clone());
            assert!(r.is_ok() && !cut && out == plain, "{codec} whole");

            let twice = [c.clone(), c.clone()].concat();
            let (out, r, cut) = read_all(codec, twice);
            assert!(r.is_ok() && !cut, "{codec} twice");
            assert_eq!(
                out,
                [plain.clone(), plain.clone()].concat(),
                "{codec} twice"
            );

            let (out, r, cut) = read_all(codec, c[..c.len() / 2].to_vec());
            assert!(r.is_ok() && cut, "{codec} cut: {r:?}");
            assert!(
                out.len() < plain.len() && plain.starts_with(&out),
                "{codec} cut"
            );

            let mut damaged = c.clone();
            let mid = damaged.len() / 2;
            for b in &mut damaged[mid..mid + 64] {
                *b ^= 0x5A;
            }
            let (_, r, _) = read_all(codec, damaged);
            let e = r.expect_err(&format!("{codec}: damaged data is an error"));
            assert!(e.to_string().contains(codec.name()), "{codec}: {e}");
        }
    }
}
