//! Decode throughput: a large synthetic capture (a realistic mix built with
//! `rocescope::synth`) is read with the capture reader alone (the baseline)
//! and read + decoded, in the same run; prints frames/s, MB/s and the ratio.
//!
//! `cargo bench -p rocescope --bench decode`
//! Environment: `ROCESCOPE_BENCH_FRAMES` (default 2 000 000),
//! `ROCESCOPE_BENCH_ROUNDS` (default 3; the best round counts).
use std::hint::black_box;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};

use rocescope::proto::linktype;
use rocescope::synth::frame::*;
use rocescope::synth::{CaptureWrite, PcapWriter};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// A fabric-like mix: 64 QPs doing RDMA WRITEs of 1 KiB MTU packets and
/// SENDs, their ACKs, some READs, CNPs, PFC, a few tagged and IPv6 frames.
/// Returns the bytes written.
fn write_capture(path: &Path, frames: usize) -> u64 {
    let mut w = PcapWriter::create(path, linktype::ETHERNET, 0).expect("create capture");
    let mut buf = Vec::with_capacity(2048);
    let mut psn = [0u32; 64];
    let mut bytes = 0u64;
    let mut ts = 1_760_000_000_000_000_000u64;
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    for n in 0..frames {
        // xorshift: deterministic, cheap.
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let qp = (rng % 64) as usize;
        let roll = (rng >> 8) % 100;
        ts += 200 + (rng >> 20) % 300;
        let mut f = RoceFrame::default();
        f.ip.addrs = IpAddrs::V4 {
            src: Ipv4Addr::new(10, 0, qp as u8, 1),
            dst: Ipv4Addr::new(10, 1, qp as u8, 1),
        };
        f.udp_sport = 0xC000 | qp as u16;
        f.bth.dest_qp = 0x100 + qp as u32;
        f.ip.ecn = if roll.is_multiple_of(17) { 3 } else { 2 };
        match roll {
            0..=54 => {
                f.bth.opcode = [0x06, 0x07, 0x07, 0x07, 0x08][n % 5];
                f.bth.psn = psn[qp];
                psn[qp] = (psn[qp] + 1) & 0xFF_FFFF;
                f.ext.reth_len = 65536;
                f.payload_len = 1024;
                f.write(&mut buf);
            }
            55..=64 => {
                f.bth.opcode = 0x04;
                f.bth.psn = psn[qp];
                psn[qp] = (psn[qp] + 1) & 0xFF_FFFF;
                f.payload_len = 64 + (rng >> 30) as usize % 512;
                f.eth.vlan = Some(VlanTag::dot1q(100, 3));
                f.write(&mut buf);
            }
            65..=84 => {
                f.bth.opcode = 0x11;
                f.ext.aeth_syndrome = if roll == 84 { 0x60 } else { 0x1F };
                f.bth.psn = psn[qp];
                f.write(&mut buf);
            }
            85..=89 => {
                f.bth.opcode = 0x0C;
                f.ext.reth_len = 4096;
                f.write(&mut buf);
            }
            90..=93 => {
                f.bth.opcode = 0x10;
                f.payload_len = 1024;
                f.ip.addrs = IpAddrs::V6 {
                    src: "fd00::1".parse().unwrap(),
                    dst: "fd00::2".parse().unwrap(),
                };
                f.write(&mut buf);
            }
            94..=97 => RoceFrame::cnp(0x100 + qp as u32).write(&mut buf),
            98 => PfcFrame::single(3, if n % 2 == 0 { 0xFFFF } else { 0 }).write(&mut buf),
            _ => {
                // Not of interest to the decoder: an ARP-sized frame.
                buf.clear();
                buf.extend_from_slice(&[0xFF; 6]);
                buf.extend_from_slice(&[0x02, 0, 0, 0, 0, 1, 0x08, 0x06]);
                buf.resize(60, 0);
            }
        }
        w.write_frame(0, ts, &buf).expect("write frame");
        bytes += buf.len() as u64;
    }
    w.finish().expect("flush capture");
    bytes
}

fn to_u32<T: TryInto<u32>>(v: T) -> u32 {
    v.try_into().ok().expect("fits in u32")
}

/// Reads every frame, touching its bytes' length only.
fn iterate(path: &Path) -> (usize, u64) {
    let mut reader = rocescope::sources::CaptureReader::open(path).expect("open");
    let (mut n, mut bytes) = (0usize, 0u64);
    while let Some(frame) = reader.next_frame().expect("read") {
        n += 1;
        bytes += black_box(frame.data).len() as u64;
    }
    (n, bytes)
}

/// Reads and decodes every frame.
fn decode_all(path: &Path) -> (usize, u64) {
    let mut reader = rocescope::sources::CaptureReader::open(path).expect("open");
    let (mut n, mut roce) = (0usize, 0u64);
    while let Some(frame) = reader.next_frame().expect("read") {
        let rec =
            rocescope::decode::decode(to_u32(frame.linktype), frame.data, to_u32(frame.orig_len));
        n += 1;
        roce += u64::from(black_box(rec).kind != 0);
    }
    (n, roce)
}

fn best_of(rounds: usize, mut f: impl FnMut() -> (usize, u64)) -> (Duration, (usize, u64)) {
    let mut best = Duration::MAX;
    let mut out = (0, 0);
    for _ in 0..rounds {
        let t = Instant::now();
        out = f();
        best = best.min(t.elapsed());
    }
    (best, out)
}

fn main() {
    let frames = env_usize("ROCESCOPE_BENCH_FRAMES", 2_000_000);
    let rounds = env_usize("ROCESCOPE_BENCH_ROUNDS", 3).max(1);
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("bench.pcap");

    let t = Instant::now();
    let bytes = write_capture(&path, frames);
    let mb = bytes as f64 / 1e6;
    println!(
        "built {frames} frames, {mb:.1} MB of frame data in {:.2} s ({:.0} frames/s with the synth builder + pcap writer)",
        t.elapsed().as_secs_f64(),
        frames as f64 / t.elapsed().as_secs_f64()
    );

    let (base, (n_base, _)) = best_of(rounds, || iterate(&path));
    let (dec, (n_dec, recorded)) = best_of(rounds, || decode_all(&path));
    assert_eq!(n_base, frames);
    assert_eq!(n_dec, frames);

    let report = |what: &str, d: Duration| {
        let s = d.as_secs_f64();
        println!(
            "{what:<18} {:>8.3} s  {:>12.0} frames/s  {:>9.1} MB/s",
            s,
            frames as f64 / s,
            mb / s
        );
    };
    report("read only", base);
    report("read + decode", dec);
    println!(
        "decode costs {:.2}x the bare read ({:.0} ns/frame of decoding); {recorded} of {frames} frames recorded",
        dec.as_secs_f64() / base.as_secs_f64(),
        (dec.as_secs_f64() - base.as_secs_f64()).max(0.0) * 1e9 / frames as f64
    );
}
