//! A flow-heavy capture for the benchmarks (docs/benchmarks.md, "Flow-heavy
//! captures"): many short RC QPs between a few thousand hosts, each two RDMA
//! WRITE Only packets and the ACK that answers both, as a classic pcap
//! (Ethernet, IPv4, UDP 4791, valid ICRCs: the frames come from
//! `rocescope::synth::frame`, which computes them with `transport::roce::icrc`).
//!
//! QP `i` starts at `i / rate` seconds; its first WRITE goes at its start,
//! the second about half of `--active` later, the ACK at the end of
//! `--active`. Frames come out in capture-time order, written as they are
//! due: the generator holds only the frames still to come of the QPs
//! started within the last `--active` (a heap of `rate x active x 2`
//! entries), so a capture of any length streams through a pipe:
//!
//! ```sh
//! # 1M QPs, all started within one second, to a file:
//! cargo run --release -p rocescope --example flowgen -- --qps 1000000 --rate 1000000 --out q1m.pcap
//! # 3M QPs at 1,700 a second, each active a second (~30 min of capture time):
//! cargo run --release -p rocescope --example flowgen -- --qps 3000000 | rocescope report -
//! ```
//!
//! Everything about a QP (its hosts, QP numbers, first PSN, UDP source port,
//! the second WRITE's time) is a hash of its index, so a run is reproducible
//! byte for byte and needs no state per QP.
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use rocescope::proto::{ib, linktype};
use rocescope::synth::{
    Bth, CaptureWrite, EthHeader, ExtHeaders, IpAddrs, IpHeader, PcapWriter, RoceFrame, WireFrame,
    capture_writer::DEFAULT_SNAPLEN,
};

/// Capture time 0: 2026-01-01T00:00:00Z, as `rocescope synth` uses.
const EPOCH_NS: u64 = 1_767_225_600_000_000_000;

/// AETH syndrome of a plain ACK with no credit count (IBA 9.3.5, 0x1F:
/// "invalid credit count", what NICs without end-to-end credits send).
const ACK_NO_CREDITS: u8 = 0x1F;

#[derive(Parser, Debug)]
#[command(about = "Writes a capture of many short RC QPs (two WRITEs and an ACK each)")]
struct Args {
    /// QPs in the capture (each adds three frames).
    #[arg(long, default_value_t = 1_000_000)]
    qps: u64,
    /// QPs started per second of capture time.
    #[arg(long, default_value_t = 1_700.0)]
    rate: f64,
    /// How long each QP is active, in seconds: from its first WRITE to its ACK.
    #[arg(long, default_value_t = 1.0)]
    active: f64,
    /// Hosts the QPs run between (requester and responder differ).
    #[arg(long, default_value_t = 4096)]
    hosts: u32,
    /// Payload bytes of each WRITE.
    #[arg(long, default_value_t = 256)]
    payload: usize,
    /// Write the capture here; without it, to standard output.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// The three frames of a QP, in the order they are sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    FirstWrite,
    SecondWrite,
    Ack,
}

/// splitmix64's finaliser: the per-QP facts from its index.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// One QP's facts.
struct Qp {
    requester: u32,
    responder: u32,
    requester_qpn: u32,
    responder_qpn: u32,
    first_psn: u32,
    udp_sport: u16,
}

/// QP numbers from 0x100 up (below are QP0, QP1 and what drivers reserve),
/// two per QP, wrapping within 24 bits.
const QPN_BASE: u32 = 0x100;
const QPN_SPAN: u64 = (1 << 24) - QPN_BASE as u64;

impl Qp {
    fn new(i: u64, hosts: u32) -> Qp {
        let h = mix(i);
        let requester = (h % u64::from(hosts)) as u32;
        let other = ((h >> 32) % u64::from(hosts - 1)) as u32;
        let responder = (requester + 1 + other) % hosts;
        let qpn = |k: u64| QPN_BASE + ((2 * i + k) % QPN_SPAN) as u32;
        let h2 = mix(h);
        Qp {
            requester,
            responder,
            requester_qpn: qpn(0),
            responder_qpn: qpn(1),
            first_psn: (h2 & 0xFF_FFFF) as u32,
            // RoCEv2's source port carries flow entropy (Annex A17.3.1),
            // from the ephemeral range NICs use.
            udp_sport: 0xC000 | ((h2 >> 24) & 0x3FFF) as u16,
        }
    }
}

/// Host `n`'s address: 10.0.0.0/8 from 10.0.0.1 up.
fn host_ip(n: u32) -> Ipv4Addr {
    Ipv4Addr::from(0x0A00_0001 + n)
}

fn host_mac(n: u32) -> [u8; 6] {
    let b = (n + 1).to_be_bytes();
    [0x02, 0, b[0], b[1], b[2], b[3]]
}

/// The frame of `step` of QP `i`.
fn frame(i: u64, step: Step, a: &Args) -> RoceFrame {
    let qp = Qp::new(i, a.hosts);
    let (src, dst) = match step {
        Step::Ack => (qp.responder, qp.requester),
        _ => (qp.requester, qp.responder),
    };
    let mut f = RoceFrame {
        eth: EthHeader {
            dst: host_mac(dst),
            src: host_mac(src),
            outer_vlan: None,
            vlan: None,
        },
        ip: IpHeader {
            addrs: IpAddrs::V4 {
                src: host_ip(src),
                dst: host_ip(dst),
            },
            ..IpHeader::default()
        },
        udp_sport: qp.udp_sport,
        ..RoceFrame::default()
    };
    let second_psn = (qp.first_psn + 1) & 0xFF_FFFF;
    match step {
        Step::FirstWrite | Step::SecondWrite => {
            let second = step == Step::SecondWrite;
            f.bth = Bth {
                opcode: ib::op::WRITE_ONLY,
                dest_qp: qp.responder_qpn,
                // The second WRITE asks for the ACK that answers both.
                ack_req: second,
                psn: if second { second_psn } else { qp.first_psn },
                ..Bth::default()
            };
            f.ext = ExtHeaders {
                reth_va: 0x7F00_0000_0000 + (i << 16) + if second { 0x8000 } else { 0 },
                reth_rkey: (mix(i ^ 0x5A5A) & 0xFFFF_FFFF) as u32,
                reth_len: a.payload as u32,
                ..ExtHeaders::default()
            };
            f.payload_len = a.payload;
            f.payload_seed = f.bth.psn as u8;
        }
        Step::Ack => {
            f.bth = Bth {
                opcode: ib::op::ACKNOWLEDGE,
                dest_qp: qp.requester_qpn,
                psn: second_psn,
                ..Bth::default()
            };
            f.ext = ExtHeaders {
                aeth_syndrome: ACK_NO_CREDITS,
                aeth_msn: 2,
                ..ExtHeaders::default()
            };
        }
    }
    f
}

/// When QP `i` sends `step`, in ns of capture time.
fn due_ns(i: u64, step: Step, start_ns: u64, active_ns: u64) -> u64 {
    match step {
        Step::FirstWrite => start_ns,
        // Half way, give or take a fifth of the span.
        Step::SecondWrite => {
            let jitter = mix(i ^ 0xA5A5_A5A5) % (active_ns / 5 + 1);
            start_ns + active_ns * 2 / 5 + jitter
        }
        Step::Ack => start_ns + active_ns,
    }
}

fn run(a: &Args) -> io::Result<u64> {
    let out: Box<dyn Write> = match &a.out {
        Some(path) => Box::new(File::create(path)?),
        None => Box::new(io::stdout().lock()),
    };
    let mut w = PcapWriter::new(out, linktype::ETHERNET, DEFAULT_SNAPLEN)?;
    let spacing_ns = 1e9 / a.rate;
    let active_ns = (a.active * 1e9) as u64;
    let mut pending: BinaryHeap<Reverse<(u64, u64, Step)>> = BinaryHeap::new();
    let mut buf = Vec::with_capacity(2048);
    let mut emit = |ts: u64, i: u64, step: Step, w: &mut PcapWriter<_>| {
        frame(i, step, a).write(&mut buf);
        w.write_frame(0, EPOCH_NS + ts, &buf)
    };
    for i in 0..a.qps {
        let start = (i as f64 * spacing_ns) as u64;
        while let Some(&Reverse((ts, j, step))) = pending.peek() {
            if ts > start {
                break;
            }
            pending.pop();
            emit(ts, j, step, &mut w)?;
        }
        emit(start, i, Step::FirstWrite, &mut w)?;
        for step in [Step::SecondWrite, Step::Ack] {
            pending.push(Reverse((due_ns(i, step, start, active_ns), i, step)));
        }
    }
    while let Some(Reverse((ts, j, step))) = pending.pop() {
        emit(ts, j, step, &mut w)?;
    }
    let frames = w.frames();
    w.finish()?.flush()?;
    Ok(frames)
}

fn main() -> ExitCode {
    let a = Args::parse();
    let rate_ok = a.rate.is_finite() && a.rate > 0.0;
    let active_ok = a.active.is_finite() && a.active >= 0.0;
    if a.hosts < 2 || !rate_ok || !active_ok {
        eprintln!("flowgen: needs --hosts 2 or more, --rate above 0, --active 0 or more");
        return ExitCode::from(2);
    }
    if a.out.is_none() && io::stdout().is_terminal() {
        eprintln!("flowgen: standard output is a terminal: pipe it, or give --out FILE");
        return ExitCode::from(2);
    }
    match run(&a) {
        Ok(frames) => {
            eprintln!("flowgen: {} QPs, {frames} frames", a.qps);
            ExitCode::SUCCESS
        }
        // A reader that stops early (`| head -c`) is not an error here.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("flowgen: {e}");
            ExitCode::FAILURE
        }
    }
}
