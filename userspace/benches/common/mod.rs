//! What the benchmarks share: the benchmark capture, the decoded records,
//! the analyzer's output and the table writer, so each stage can be timed
//! alone. (Each bench compiles this module; not all use every item.)
#![allow(dead_code)]

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;

use rocescope::analyze::{self, Analysis, Analyzer, Event, Sink, TimelineRow, VecSink, Verdict};
use rocescope::decode;
use rocescope::output::RunFacts;
use rocescope::sources::CaptureReader;
use rocescope::tables::TableSet;
use rocescope::{Kind, PacketRecord};

/// A sink that drops events and timeline rows.
pub struct Null;
impl Sink for Null {
    fn event(&mut self, _: &Event) {}
    fn timeline(&mut self, _: &TimelineRow) {}
    fn flow(&mut self, _: &analyze::FlowRow) {}
}

pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// The benchmark capture of `scripts/bench.sh`: ghost-drop with 128
/// connections spread over its hosts, ECN marking early enough for CE and CNPs.
pub fn make_capture(dir: &Path, frames: usize) -> PathBuf {
    let path = dir.join("bench.pcapng");
    let flows: Vec<String> = (0..128)
        .map(|i| {
            format!(
                r#"{{"src":{},"dst":{},"msg_bytes":65536,"messages":null,"start_ns":{},"udp_sport":null,"start_psn":{},"gbps":3.0}}"#,
                i % 3,
                i % 2,
                i * 500,
                (i * 7919) % (1 << 24)
            )
        })
        .collect();
    let status = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["synth", "ghost-drop", "--out"])
        .arg(&path)
        .args([
            "--packets",
            &frames.to_string(),
            "--snaplen",
            "128",
            "--duration",
            "10s",
        ])
        .args([
            "--min-rto",
            "200us",
            "--ecn-min",
            "40KB",
            "--ecn-max",
            "300KB",
            "--ecn-pmax",
            "0.2",
        ])
        .arg("--set")
        .arg(format!("flows=[{}]", flows.join(",")))
        .stdout(std::process::Stdio::null())
        .status()
        .expect("rocescope synth runs");
    assert!(status.success(), "rocescope synth failed");
    path
}

/// Every frame of `path` decoded, frames of no interest left out.
pub fn read_decode(path: &Path) -> Vec<PacketRecord> {
    let mut recs = Vec::new();
    decode_each(path, |rec| recs.push(*rec));
    recs
}

/// Every frame of `path` decoded, `each` given the records of interest.
pub fn decode_each(path: &Path, mut each: impl FnMut(&PacketRecord)) {
    let mut r = CaptureReader::open(path).expect("open");
    // One record decoded into frame after frame, as the offline source does.
    let mut rec = PacketRecord::default();
    while let Some(f) = r.next_frame().expect("read") {
        decode::decode_into(&mut rec, f.linktype, f.data, f.orig_len);
        if rec.kind() == Kind::Other {
            continue;
        }
        rec.frame = f.number;
        rec.ts_ns = f.ts_ns;
        rec.iface = f.iface as u16;
        each(&rec);
    }
}

/// The analyzer over `recs`, events and timeline rows dropped.
pub fn analyse_only(recs: &[PacketRecord]) -> Analysis {
    let mut a = Analyzer::new(analyze::Config::default());
    for r in recs {
        black_box(a.push(r, &mut Null));
    }
    let mut analysis = a.finish(&mut Null);
    rocescope::render::tell(&mut analysis);
    analysis
}

/// The analyzer's whole output over `recs`, kept to time the writer alone.
pub struct Analysed {
    pub sink: VecSink,
    pub verdicts: Vec<Verdict>,
    pub analysis: Analysis,
}

pub fn analyse(recs: &[PacketRecord]) -> Analysed {
    let mut sink = VecSink::default();
    let mut verdicts = Vec::with_capacity(recs.len());
    let mut a = Analyzer::new(analyze::Config::default());
    for r in recs {
        verdicts.push(a.push(r, &mut sink));
    }
    let mut analysis = a.finish(&mut sink);
    rocescope::render::tell(&mut analysis);
    Analysed {
        sink,
        verdicts,
        analysis,
    }
}

/// Every table of `recs` into `out`, from the analyzer's output.
pub fn write_tables(out: &Path, recs: &[PacketRecord], a: &Analysed, encoder_thread: bool) {
    write_tables_with(out, recs, a, encoder_thread, true)
}

/// [`write_tables`]; without `packets`, every table but `packets.parquet`.
pub fn write_tables_with(
    out: &Path,
    recs: &[PacketRecord],
    a: &Analysed,
    encoder_thread: bool,
    packets: bool,
) {
    let mut t = TableSet::create_with_packets(out, encoder_thread, packets).expect("tables");
    for i in 0..16 {
        t.set_iface_name(i, &format!("if{i}"));
    }
    for e in &a.sink.events {
        t.event(e);
    }
    for row in &a.sink.timeline {
        t.timeline(row);
    }
    for (r, v) in recs.iter().zip(&a.verdicts) {
        t.packet(r, *v).expect("packet row");
    }
    t.close(&a.analysis, &RunFacts::default()).expect("close");
}
