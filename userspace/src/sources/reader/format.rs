//! What a stream holds: its capture format, sniffed from its magic number
//! (decompressing it first when it is compressed), and the `Read` adapter
//! the pcap-parser readers read it through.
use std::cell::RefCell;
use std::io::{self, Cursor, Read};
use std::path::Path;
use std::rc::Rc;

use super::SHB_TYPE;
use crate::error::{Error, Result};
use crate::sources::compress::{Compression, Decompressed, Progress, read_fully};

/// `Read` adapter: fills the whole buffer when it can (so pcap-parser's
/// single-read constructors see a whole header even from a pipe), retries
/// on `Interrupted`, and keeps the I/O error for the error message
/// (pcap-parser reports only "ReadError"). An error after some bytes were
/// read is held back until those bytes are handed out.
pub(super) struct FullRead<R> {
    pub(super) inner: R,
    pub(super) held: Option<io::Error>,
    pub(super) error: Rc<RefCell<Option<io::Error>>>,
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
pub(super) struct Sniffed {
    pub(super) format: Format,
    /// The (decompressed) stream from the start of the capture.
    pub(super) stream: Box<dyn Read>,
    pub(super) compression: Option<(Compression, Progress)>,
}

/// The capture format of stream `r` (decompressing it if it is
/// compressed), and the stream from the start of the capture again.
pub(super) fn sniff(path: &Path, r: Box<dyn Read>) -> Result<Sniffed> {
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
pub(in crate::sources) fn probe(path: &Path, r: Box<dyn Read>) -> Result<()> {
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
pub(super) enum Format {
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
