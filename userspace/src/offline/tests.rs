//! The offline job's own checks (the end-to-end ones are in tests/).

use super::*;
use crate::pipeline::BATCH;
use crate::synth::capture_writer::{CaptureWrite, PcapWriter};
use crate::synth::frame::{RoceFrame, WireFrame};

/// A frame written twice (same bytes, same timestamp) is warned about
/// once per file, with the count at the end: next to its original in a
/// batch and across the pipeline's batch boundary, pipelined or inline;
/// the same timestamp with other bytes is no duplicate.
#[test]
fn frames_captured_twice_are_counted_in_both_layouts() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("dups.pcap");
    let mut w = PcapWriter::create(&path, 1, 0).expect("a capture");
    let mut bytes = Vec::new();
    let mut number = 0u64;
    let mut write = |psn: u32, ts: u64| {
        let mut f = RoceFrame::default();
        f.bth.psn = psn;
        f.write(&mut bytes);
        w.write_frame(0, ts, &bytes).expect("written");
        number += 1;
        number
    };
    let ts = |i: u64| 1_700_000_000_000_000_000 + i * 1000;
    let mut dups = Vec::new();
    for i in 0..BATCH as u64 + 10 {
        // Every frame is a record: the BATCH-th one ends the first batch.
        let written = write(i as u32, ts(i));
        // Again, next to it; the last record of the first batch again,
        // as the first record of the second one.
        if i == 5 || written == BATCH as u64 {
            dups.push(write(i as u32, ts(i)));
        }
        // Same timestamp, other bytes.
        if i == 7 {
            write(1 << 20, ts(i));
        }
    }
    w.finish().expect("flushed");
    for threads in [Threads::Pipelined, Threads::Inline] {
        let opts = Options {
            threads,
            ..Options::default()
        };
        let out = run(std::slice::from_ref(&path), &opts, None).expect("analysed");
        let warned: Vec<_> = out
            .warnings
            .iter()
            .filter(|w| w.contains("duplicate"))
            .collect();
        assert_eq!(warned.len(), 2, "{threads:?}: {warned:?}");
        assert!(
            warned[0].contains(&format!("frame {} duplicates", dups[0])),
            "{warned:?}"
        );
        assert!(
            warned[1].contains("2 frames in all duplicate"),
            "{threads:?}: {warned:?}"
        );
    }
}
