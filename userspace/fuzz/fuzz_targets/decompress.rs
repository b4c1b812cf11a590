//! The decompressing reader. First byte: the mode (mod 7), then the input.
//!
//! * 0-2: the rest is a capture (any bytes); compressed here with gzip,
//!   zstd or lz4, and cut at a point the next two bytes choose, it must read
//!   as a prefix of what the plain bytes give (the whole of it when not
//!   cut), with the same frames and the same fatal error, if any; plain
//!   bytes that are compressed themselves are refused (one layer is undone).
//! * 3-5: the codec's magic number, then the rest as compressed data (what
//!   a damaged file holds): no panic, no hang, coherent frames.
//! * 6: the rest as it is, through the magic detection.
#![no_main]

use std::io::{Cursor, Write};

use libfuzzer_sys::fuzz_target;
use rocescope::sources::{CaptureReader, Compression};

/// Number, interface, timestamp and bytes of every frame, and whether the
/// reading ended in an error.
type Frames = (Vec<(u64, u32, u64, Vec<u8>)>, bool);

fn read(bytes: Vec<u8>) -> Option<Frames> {
    let mut r = CaptureReader::from_reader("fuzz", Cursor::new(bytes)).ok()?;
    let mut frames = Vec::new();
    let mut failed = false;
    loop {
        match r.next_frame() {
            Ok(Some(f)) => {
                assert!(f.data.len() <= f.orig_len as usize);
                let iface = f.iface;
                frames.push((f.number, iface, f.ts_ns, f.data.to_vec()));
                assert!((iface as usize) < r.interfaces().len());
            }
            Ok(None) => break,
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    assert!(
        r.next_frame().is_ok_and(|f| f.is_none()),
        "stays at the end"
    );
    Some((frames, failed))
}

fn compress(codec: u8, plain: &[u8]) -> Vec<u8> {
    match codec {
        0 => {
            let mut g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            g.write_all(plain).expect("in memory");
            g.finish().expect("in memory")
        }
        1 => zstd::encode_all(plain, 1).expect("in memory"),
        _ => {
            let mut l = lz4_flex::frame::FrameEncoder::new(Vec::new());
            l.write_all(plain).expect("in memory");
            l.finish().expect("in memory")
        }
    }
}

const MAGIC: [[u8; 4]; 3] = [
    [0x1f, 0x8b, 0x08, 0x00],
    [0x28, 0xb5, 0x2f, 0xfd],
    [0x04, 0x22, 0x4d, 0x18],
];

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 7 {
        codec @ 0..=2 => {
            let Some((cut, plain)) = rest.split_first_chunk::<2>() else {
                return;
            };
            let compressed = compress(codec, plain);
            let keep = usize::from(u16::from_le_bytes(*cut));
            let whole = keep >= compressed.len();
            let given = compressed[..keep.min(compressed.len())].to_vec();
            let got = read(given);
            // One layer of compression is undone, not two: compressed
            // data compressed again is refused.
            if let Some(magic) = plain.first_chunk::<4>()
                && Compression::detect(*magic).is_some()
            {
                assert!(got.is_none(), "compressed twice read as a capture");
                return;
            }
            let want = read(plain.to_vec());
            match (want, got) {
                (Some(want), Some(got)) if whole => assert_eq!(want, got, "whole stream"),
                (Some(want), Some(got)) => {
                    assert!(got.0.len() <= want.0.len(), "a cut stream gives less");
                    assert_eq!(&want.0[..got.0.len()], &got.0[..], "a prefix");
                }
                (None, Some(_)) => panic!("compressed, not a capture became one"),
                (Some(_), None) => assert!(!whole, "whole, a capture stays one"),
                (None, None) => {}
            }
        }
        codec @ 3..=5 => {
            let mut bytes = MAGIC[usize::from(codec - 3)].to_vec();
            bytes.extend_from_slice(rest);
            let _ = read(bytes);
        }
        _ => {
            let _ = read(rest.to_vec());
        }
    }
});
