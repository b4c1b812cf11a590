//! Criterion benchmarks of each stage alone, so a regression in one shows
//! even when the whole job hides it: decode (frames already in memory),
//! analyze (records in memory) and write (every table from the analyzer's
//! output). The capture is the `stages` bench's mirror capture, smaller
//! (50k frames: 256 QPs, snaplen 128, ACKs, CE, CNPs, PFC).
//!
//! `cargo bench -p rocescope --bench per_stage` (criterion keeps the last
//! run under target/criterion and reports the change against it);
//! `ROCESCOPE_BENCH_CAPTURE` takes another capture.
mod common;

use std::hint::black_box;
use std::path::PathBuf;

use common::{analyse, analyse_only, make_capture, read_decode, write_tables};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rocescope::decode;
use rocescope::sources::CaptureReader;

const FRAMES: usize = 50_000;

fn stages(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let capture = match std::env::var_os("ROCESCOPE_BENCH_CAPTURE") {
        Some(p) => PathBuf::from(p),
        None => make_capture(tmp.path(), FRAMES),
    };
    // Frames in memory: the decode bench times the decoder, not the disk.
    let mut frames = Vec::new();
    let mut reader = CaptureReader::open(&capture).expect("open");
    while let Some(f) = reader.next_frame().expect("read") {
        frames.push((f.linktype, f.data.to_vec(), f.orig_len));
    }
    let recs = read_decode(&capture);
    let analysed = analyse(&recs);
    let out = tmp.path().join("out");
    std::fs::create_dir_all(&out).expect("mkdir");

    let mut g = c.benchmark_group("stage");
    g.sample_size(20);
    g.throughput(Throughput::Elements(frames.len() as u64));
    g.bench_function("decode", |b| {
        b.iter(|| {
            for (lt, data, len) in &frames {
                black_box(decode::decode(*lt, data, *len));
            }
        })
    });
    g.throughput(Throughput::Elements(recs.len() as u64));
    g.bench_function("analyze", |b| b.iter(|| analyse_only(&recs)));
    g.bench_function("write", |b| {
        b.iter(|| write_tables(&out, &recs, &analysed, true))
    });
    g.finish();
}

criterion_group!(benches, stages);
criterion_main!(benches);
