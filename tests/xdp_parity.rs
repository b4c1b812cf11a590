//! Kernel/userspace decoder parity: every frame of the real captures and of
//! a synth-built corpus (plus every cut of each, and byte-flipped variants)
//! goes through the XDP program with BPF_PROG_TEST_RUN and through
//! `decode::decode`; the records must be identical except `ts_ns` (the
//! kernel's clock) and the ICRC (`icrc`, `ICRC_CHECKED`, `ICRC_OK`: the
//! kernel does not check it, by design). The corpus has RoCEv1 (GRH)
//! frames next to RoCEv2 ones, and UET's (every PDS type and SES header
//! over UDP; the native IP mode in a test of its own). Corpus frames are also run
//! split into a linear part and fragments at every header byte, so the
//! program's reads beyond the linear part are compared too.
//!
//! Needs root (loading BPF programs); skipped with a message otherwise.
use crate::common;

use rocescope::live::{Program, Tap};
use rocescope::sources::CaptureReader;
use rocescope::{Kind, PacketRecord, decode, flags, proto};

const XDP_DROP: u32 = 1;
const XDP_PASS: u32 = 2;

fn root() -> bool {
    // SAFETY: no arguments, no failure.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("SKIPPED: the XDP parity test needs root (it loads a BPF program)");
    }
    root
}

/// The ICRC only userspace reads, cleared (on RoCE's records: writing
/// RoCE's view would make any other record RoCE's).
fn without_icrc(r: &mut PacketRecord) {
    if r.transport() == Some(rocescope::wire::TransportId::Roce) {
        r.roce_mut().icrc = 0;
    }
}

/// The userspace record with what the kernel cannot or does not set masked.
fn expected(frame: &[u8]) -> PacketRecord {
    let mut r = decode::decode(proto::linktype::ETHERNET, frame, frame.len() as u32);
    without_icrc(&mut r);
    // The kernel checks no ICRC, so it has no use for knowing a datagram cut.
    r.flags &= !(flags::ICRC_CHECKED | flags::ICRC_OK | flags::CUT);
    r
}

struct Checker {
    tap: Tap,
    runs: u64,
    records: u64,
}

impl Checker {
    fn new(drop_after_capture: bool) -> Checker {
        let tap = Tap::load(
            Program::Decoder,
            drop_after_capture,
            rocescope::live::RingTuning::default(),
        )
        .expect("the XDP program loads");
        Checker {
            tap,
            runs: 0,
            records: 0,
        }
    }

    /// Runs one frame through both decoders; returns the kernel's verdict.
    fn check(&mut self, what: &str, frame: &[u8]) -> u32 {
        // The kernel refuses test frames shorter than an Ethernet header.
        assert!(frame.len() >= proto::ethernet::HEADER_LEN);
        let verdict = self
            .tap
            .test_run(frame)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        self.runs += 1;
        self.compare(what, frame);
        verdict
    }

    /// The kernel's record of `frame` (just run) against userspace's.
    fn compare(&mut self, what: &str, frame: &[u8]) {
        let want = expected(frame);
        let got = self.tap.next_record();
        if want.kind() == Kind::Other {
            assert_eq!(
                got, None,
                "{what}: the kernel recorded a frame userspace drops"
            );
        } else {
            let mut got =
                got.unwrap_or_else(|| panic!("{what}: no record from the kernel; want {want:?}"));
            self.records += 1;
            assert_ne!(got.ts_ns, 0, "{what}: the kernel sets ts_ns");
            got.ts_ns = 0;
            assert_eq!(
                got,
                want,
                "{what} ({} bytes): kernel (left) and userspace (right) differ",
                frame.len()
            );
        }
        assert_eq!(self.tap.next_record(), None, "{what}: one record per frame");
    }

    /// `check` with the frame's bytes from `linear` on in fragments.
    fn check_split(&mut self, what: &str, frame: &[u8], linear: usize) -> u32 {
        let verdict = self
            .tap
            .test_run_split(frame, linear as u32)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        self.runs += 1;
        self.compare(what, frame);
        verdict
    }

    /// The frame whole and cut at every length down to the Ethernet header.
    fn check_with_cuts(&mut self, what: &str, frame: &[u8]) {
        for len in (proto::ethernet::HEADER_LEN..=frame.len()).rev() {
            let v = self.check(&format!("{what} cut to {len}"), &frame[..len]);
            assert_eq!(v, XDP_PASS, "{what}: XDP_PASS by default");
        }
    }
}

fn capture_frames(path: &std::path::Path) -> Vec<Vec<u8>> {
    let mut r = CaptureReader::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        assert_eq!(f.linktype, proto::linktype::ETHERNET);
        out.push(f.data.to_vec());
    }
    out
}

#[test]
fn real_captures_match() {
    if !root() {
        return;
    }
    let mut c = Checker::new(false);
    let mut frames = 0;
    // UET from xdp2's generators too (tests/data/README.md): bytes nobody
    // here laid out, whole and cut, the CCX ones invalid at the SES.
    for name in [
        "oferby-proxy-roce.pcap",
        "connectx4lx-cnp.pcap",
        "xdp2-uet_pds.pcap",
        "xdp2-uet_ses.pcap",
    ] {
        for (i, f) in capture_frames(&common::shared_capture(name))
            .iter()
            .enumerate()
        {
            c.check_with_cuts(&format!("{name} frame {}", i + 1), f);
            frames += 1;
        }
    }
    assert_eq!(frames, 124 + 19 + 17);
    assert!(c.records > 105 + 36, "{} records", c.records);
    let counters = c.tap.counters().unwrap();
    assert_eq!(counters.frames, c.runs);
    assert_eq!(counters.records, c.records);
    assert_eq!(counters.ring_full, 0);
}

#[test]
fn synth_corpus_matches() {
    if !root() {
        return;
    }
    let mut c = Checker::new(false);
    let corpus = common::corpus::decoder_frames();
    assert!(corpus.len() > 100);
    for (name, frame) in &corpus {
        c.check_with_cuts(name, frame);
    }
    for (i, frame) in common::corpus::conversation().iter().enumerate() {
        c.check_with_cuts(&format!("conversation frame {i}"), frame);
    }
    // Kinds the corpus must have exercised, as the kernel reported them.
    let mut kinds = std::collections::BTreeSet::new();
    for (_, frame) in &corpus {
        kinds.insert(expected(frame).kind());
    }
    for k in [
        Kind::Other,
        Kind::Roce,
        Kind::Cnp,
        Kind::Pfc,
        Kind::Pause,
        Kind::Malformed,
        Kind::Uet,
    ] {
        assert!(kinds.contains(&k), "corpus lacks {k:?}");
    }
    // RoCEv1 records (GRH): 12 opcodes, IPv6 GIDs, a CNP, ERSPAN, a
    // datagram too short for a BTH, a GRH payload length past the frame.
    let v1 = corpus
        .iter()
        .filter(|(_, f)| expected(f).roce_version() == Some(1))
        .count();
    assert_eq!(v1, 17, "RoCEv1 records in the corpus");
    let counters = c.tap.counters().unwrap();
    assert_eq!(
        (counters.frames, counters.records, counters.ring_full),
        (c.runs, c.records, 0)
    );
    assert!(
        counters.parse_failures > 0,
        "cut frames count as parse failures"
    );
}

/// Multi-buffer frames: every corpus frame with its linear part ending at
/// each byte of its headers, so that every read either lies in the linear
/// part, straddles its end or lies wholly in the fragments (the program's
/// direct reads and its `bpf_xdp_load_bytes` fallback).
#[test]
fn split_frames_match() {
    if !root() {
        return;
    }
    let corpus = common::corpus::decoder_frames();
    let mut probe = Checker::new(false);
    if let Err(e) = probe
        .tap
        .test_run_split(&corpus[0].1, proto::ethernet::HEADER_LEN as u32)
    {
        eprintln!("SKIPPED: this kernel cannot split a test frame into fragments ({e})");
        return;
    }
    let mut c = Checker::new(false);
    for (name, frame) in &corpus {
        for linear in proto::ethernet::HEADER_LEN..frame.len().min(256) {
            c.check_split(&format!("{name} linear {linear}"), frame, linear);
        }
    }
    let counters = c.tap.counters().unwrap();
    assert_eq!(
        (counters.frames, counters.records, counters.ring_full),
        (c.runs, c.records, 0)
    );
}

/// Byte flips in the headers of corpus frames: both decoders must agree on
/// whatever comes out (a small deterministic fuzz).
#[test]
fn mutated_frames_match() {
    if !root() {
        return;
    }
    let mut c = Checker::new(false);
    let corpus = common::corpus::decoder_frames();
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut rand = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..6000 {
        let (name, frame) = &corpus[(rand() % corpus.len() as u64) as usize];
        let mut f = frame.clone();
        for _ in 0..1 + rand() % 3 {
            let at = (rand() % f.len().min(120) as u64) as usize;
            f[at] = rand() as u8;
        }
        let cut = proto::ethernet::HEADER_LEN + (rand() % (f.len() - 13) as u64) as usize;
        f.truncate(cut.max(proto::ethernet::HEADER_LEN));
        c.check(&format!("round {round}: mutated {name}"), &f);
    }
}

#[test]
fn drop_after_capture_drops_recorded_frames_only() {
    if !root() {
        return;
    }
    let mut c = Checker::new(true);
    for (name, frame) in common::corpus::decoder_frames() {
        let recorded = expected(&frame).kind() != Kind::Other;
        let v = c.check(&name, &frame);
        assert_eq!(v, if recorded { XDP_DROP } else { XDP_PASS }, "{name}");
    }
}

/// `--udp-port roce=4792` reaches the kernel: with RoCEv2 moved to 4792,
/// the XDP program records a frame to 4792 exactly as the userspace
/// decoder does, and drops one to 4791 as foreign UDP, as userspace does
/// (src/transport/tests.rs, `a_configured_port_replaces_the_default`).
#[test]
fn a_configured_udp_port_decodes_in_the_kernel_too() {
    use rocescope::live::LoadOptions;
    use rocescope::synth::frame::{RoceFrame, WireFrame};
    use rocescope::transport::{parse_udp_port, recognition};
    if !root() {
        return;
    }
    let reg = recognition(&[parse_udp_port("roce=4792").unwrap()], &[]).unwrap();
    let opts = LoadOptions {
        recognition: reg,
        ..LoadOptions::default()
    };
    let mut tap = Tap::load_with(Program::Decoder, &opts).expect("the XDP program loads");
    for (dport, want_kind) in [(4792, Kind::Roce), (4791, Kind::Other)] {
        let f = RoceFrame {
            udp_dport: dport,
            ..RoceFrame::default()
        };
        let mut frame = Vec::new();
        f.append(&mut frame);
        let mut want = PacketRecord::default();
        decode::decode_walk_with(
            &mut want,
            &reg,
            proto::linktype::ETHERNET,
            &frame,
            frame.len() as u32,
        );
        assert_eq!(want.kind(), want_kind, "userspace, port {dport}");
        without_icrc(&mut want);
        want.flags &= !(flags::ICRC_CHECKED | flags::ICRC_OK | flags::CUT);
        assert_eq!(tap.test_run(&frame).unwrap(), XDP_PASS);
        let got = tap.next_record().map(|mut r| {
            r.ts_ns = 0;
            r
        });
        let want = (want_kind != Kind::Other).then_some(want);
        assert_eq!(
            got, want,
            "kernel (left) and userspace (right), port {dport}"
        );
    }
}

/// Switch telemetry marked where the loader says (`TELEMETRY` global):
/// RoCE inside INT-MD (by port and by DSCP) and behind IFA decodes in the
/// kernel as in userspace; a telemetry report and cut INT give no record.
#[test]
fn telemetry_marks_decode_in_the_kernel_too() {
    use rocescope::live::LoadOptions;
    use rocescope::synth::frame::{RoceFrame, WireFrame};
    use rocescope::synth::telemetry::{Ifa, IfaHop, IntHop, IntMark, IntMd, Report};
    use rocescope::wire::Recognition;
    use rocescope::wire::telemetry::TelemetryMarks;
    if !root() {
        return;
    }
    let mut reg = Recognition::DEFAULT;
    reg.telemetry = TelemetryMarks {
        int_port: 5000,
        report_port: 32766,
        int_dscp: 46,
        ..TelemetryMarks::DEFAULT
    };
    let opts = LoadOptions {
        recognition: reg,
        ..LoadOptions::default()
    };
    let mut tap = Tap::load_with(Program::Decoder, &opts).expect("the XDP program loads");
    let f = RoceFrame::default();
    let mut plain = Vec::new();
    f.append(&mut plain);
    let hop = IntHop {
        node_id: 7,
        queue_occupancy: 9,
        ..IntHop::default()
    };
    let int = |mark| IntMd {
        mark,
        remaining_hop_count: 5,
        hops: vec![hop; 3],
    };
    let by_port = int(IntMark::Port(5000)).insert(&plain, &f.eth);
    let ifa = Ifa {
        protocol: 131,
        hop_limit: 8,
        hops: vec![IfaHop::default(); 2],
        udp_length_grows: true,
    }
    .insert(&plain, &f.eth);
    let report = Report {
        dst_mac: [2, 0, 0, 0, 0, 1],
        src_mac: [2, 0, 0, 0, 0, 2],
        ip: Default::default(),
        dport: 32766,
        hw_id: 0,
        sequence: 1,
        node_id: 7,
        dropped: false,
        congested_queue: false,
        tracked_flow: true,
        hop,
        drop: None,
        truncate: 64,
    }
    .frame(&by_port);
    let frames = [
        (by_port.clone(), Kind::Roce),
        (int(IntMark::Dscp(46)).insert(&plain, &f.eth), Kind::Roce),
        (ifa, Kind::Roce),
        (report, Kind::Other),
        (by_port[..60].to_vec(), Kind::Other),
    ];
    for (i, (frame, want_kind)) in frames.iter().enumerate() {
        let mut want = PacketRecord::default();
        decode::decode_walk_with(
            &mut want,
            &reg,
            proto::linktype::ETHERNET,
            frame,
            frame.len() as u32,
        );
        assert_eq!(want.kind(), *want_kind, "userspace, frame {i}");
        without_icrc(&mut want);
        want.flags &= !(flags::ICRC_CHECKED | flags::ICRC_OK | flags::CUT);
        assert_eq!(tap.test_run(frame).unwrap(), XDP_PASS);
        let got = tap.next_record().map(|mut r| {
            r.ts_ns = 0;
            r
        });
        let want = (*want_kind != Kind::Other).then_some(want);
        assert_eq!(got, want, "kernel (left) and userspace (right), frame {i}");
    }
}

/// UET's native IP mode, its protocol number as `--ip-proto uet=253` sets
/// it through the loader (`IP_PROTOCOLS` global), in records mode and in
/// summary mode: every UET test packet over IPv4 and IPv6 with the
/// entropy header, whole and cut at every length, decodes in the kernel
/// as in userspace.
#[test]
fn uet_native_ip_mode_decodes_in_the_kernel_too() {
    use crate::common::uet::NATIVE_PROTOCOL;
    use rocescope::transport::{parse_ip_protocol, recognition};
    if !root() {
        return;
    }
    let option = format!("uet={NATIVE_PROTOCOL}");
    let reg = recognition(&[], &[parse_ip_protocol(&option).unwrap()]).unwrap();
    for summary in [false, true] {
        native_in_the_kernel(reg, summary);
    }
}

fn native_in_the_kernel(reg: rocescope::wire::Recognition, summary: bool) {
    use crate::common::uet::{native_frame, vectors};
    use rocescope::live::LoadOptions;
    let opts = LoadOptions {
        recognition: reg,
        summary,
        // No periodic deltas in summary mode: UET records go up alone.
        flush_ns: Some(u64::MAX),
        ..LoadOptions::default()
    };
    let mut tap = Tap::load_with(Program::Decoder, &opts).expect("the XDP program loads");
    let mut records = 0;
    for v in vectors() {
        for ipv6 in [false, true] {
            let frame = native_frame(ipv6, 0xBEEF, &v.bytes);
            for len in (proto::ethernet::HEADER_LEN..=frame.len()).rev() {
                let cut = &frame[..len];
                let mut want = PacketRecord::default();
                decode::decode_walk_with(
                    &mut want,
                    &reg,
                    proto::linktype::ETHERNET,
                    cut,
                    len as u32,
                );
                want.flags &= !(flags::ICRC_CHECKED | flags::ICRC_OK | flags::CUT);
                assert_eq!(tap.test_run(cut).unwrap(), XDP_PASS);
                let got = tap.next_record().map(|mut r| {
                    r.ts_ns = 0;
                    r
                });
                let what = format!(
                    "{} native ipv6 {ipv6} cut to {len}, summary {summary}",
                    v.name
                );
                if want.kind() == Kind::Other {
                    assert_eq!(got, None, "{what}");
                } else {
                    records += 1;
                    assert_eq!(
                        got,
                        Some(want),
                        "{what}: kernel (left) and userspace (right)"
                    );
                }
            }
            assert_eq!(
                decode::decode(proto::linktype::ETHERNET, &frame, frame.len() as u32).kind(),
                Kind::Other,
                "{}: without the protocol configured",
                v.name
            );
        }
    }
    assert!(records > 500, "{records} UET records");
}
