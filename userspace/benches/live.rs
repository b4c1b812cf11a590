//! Live-path throughput on a veth pair, against a bare XDP_PASS baseline in
//! the same run.
//!
//! `sudo cargo bench -p rocescope --bench live` (skips without root)
//!
//! A network namespace with a veth pair is created (and deleted at the
//! end); this process enters it. RoCE RDMA WRITE frames (256-byte payload,
//! 16 QPs, in order) with one ACK per 8 requests going back are sent as
//! fast as one AF_PACKET socket can into one end while the other end runs
//!
//! 1. **baseline**: `rocescope_pass` — `XDP_PASS` plus one per-CPU counter
//!    increment (so both runs count what XDP saw the same way);
//! 2. **ring only**, per ring tuning: the decoding XDP program and the ring
//!    buffer, with a consumer that only copies records out — what the
//!    kernel side and the ring sustain without analysis or tables;
//! 3. **live, records mode**, per ring tuning: the whole live path — the
//!    decoding XDP program, the ring buffer, the tokio consumer, the
//!    analyzer and the Parquet tables (`live::run` with `--count`);
//! 4. **live, summary mode** (`--mode summary`), per ring tuning: the same,
//!    with the in-kernel per-flow counts; ends when the analysed frames
//!    stop moving;
//! 5. **at a fixed offered rate** (`ROCESCOPE_BENCH_PACED` frames/s,
//!    default 1 000 000; 0 skips it): the sender paced, `XDP_PASS` and then
//!    records mode with the default ring, each against the other.
//!
//! 6. **Ring layouts**: one shared ring against a ring per CPU with one
//!    and two producing CPUs, flat out and paced
//!    (`ROCESCOPE_BENCH_RINGS_PACED` frames/s per CPU, default 300 000),
//!    per ring tuning (`ROCESCOPE_BENCH_RINGS_RING`): see `live/rings.rs`.
//!    `ROCESCOPE_BENCH_ONLY=rings` runs only this (and the program cost).
//! 7. **Userspace CPU per frame**: rocescope's own CPU time per frame
//!    analysed, with and without the `packets` table, against the drain
//!    threads alone, interleaved rounds: see `live/cpu.rs`.
//!    `ROCESCOPE_BENCH_ONLY=cpu` runs only this.
//!
//! Before those, each program's cost per frame in the kernel alone
//! (BPF_PROG_TEST_RUN repeating a WRITE, an ACK and a non-RoCE UDP frame): what the
//! sender pays for it on veth, without the sender's own noise.
//!
//! Rate = frames seen by XDP / (first send → last frame seen by XDP); for
//! the live runs also end to end: frames analysed (records, plus frames
//! counted in deltas) / (first send → last one analysed). A live round
//! counts only with zero ring-buffer drops; after drops the sender is paced
//! at 90 % of the rate the consumer reached, and the run repeated. Ring
//! bytes per frame = (records × 200 + deltas × 136) / frames analysed.
//!
//! The sender runs on CPU 0 and rocescope (`live --cpus 1`, the ring-only
//! consumer likewise) on CPU 1, as on a capture box where the receive
//! interrupts, and so the XDP program, have cores of their own;
//! `ROCESCOPE_BENCH_CPUS=none` lets the scheduler place everything (then
//! rocescope's threads take time from the sender's CPU, and so from XDP).
//!
//! Environment: `ROCESCOPE_BENCH_LIVE_FRAMES` (default 300 000),
//! `ROCESCOPE_BENCH_LIVE_PAIRS` (host pairs the 16 QPs spread over, default 1),
//! `ROCESCOPE_BENCH_CPUS` (`SENDER/TAP` CPU lists, default `0/1`, or `none`),
//! `ROCESCOPE_BENCH_PACED` (frames/s, default 1 000 000, 0: skipped),
//! `ROCESCOPE_BENCH_RING` (ring tunings, `SIZE/WAKEUP,…`, default
//! `16MiB/0,64MiB/1MiB`: the kernel's wake-ups with the old ring, then the
//! defaults).
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use std::hint::black_box;
use std::net::Ipv4Addr;

use rocescope::live::cpus::CpuList;
use rocescope::live::replay::RawSender;
use rocescope::live::{self, Program, RingTuning, Tap, XdpModeArg};
use rocescope::synth::frame::{IpAddrs, RoceFrame, WireFrame};
use rocescope::units;

#[path = "live/cpu.rs"]
mod cpu;
#[path = "live/rings.rs"]
mod rings;

fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

struct Netns(String);

impl Drop for Netns {
    fn drop(&mut self) {
        ip(&["netns", "delete", &self.0]);
    }
}

fn frames(n: usize) -> Vec<Vec<u8>> {
    const QPS: usize = 16;
    const ACK_EVERY: u32 = 8;
    // `ROCESCOPE_BENCH_LIVE_PAIRS` (default 1, at most 16): the QPs spread
    // over that many host pairs 10.0.P.1 → 10.0.P.2, for `--analyzers`
    // (which splits by address pair) to have pairs to split.
    let pairs: usize = std::env::var("ROCESCOPE_BENCH_LIVE_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .clamp(1, QPS);
    let hosts = |qp: usize| {
        let p = (qp % pairs) as u8;
        (Ipv4Addr::new(10, 0, p, 1), Ipv4Addr::new(10, 0, p, 2))
    };
    let mut psn = [0u32; QPS];
    let mut out = Vec::with_capacity(n);
    let mut i = 0;
    while out.len() < n {
        let qp = i % QPS;
        i += 1;
        let mut f = RoceFrame::default();
        if pairs > 1 {
            let (src, dst) = hosts(qp);
            f.ip.addrs = IpAddrs::V4 { src, dst };
        }
        f.bth.opcode = 0x0A;
        f.bth.dest_qp = 0x100 + qp as u32;
        f.bth.psn = psn[qp];
        f.ext.reth_len = 256;
        f.payload_len = 256;
        let mut b = Vec::new();
        f.write(&mut b);
        out.push(b);
        if psn[qp] % ACK_EVERY == ACK_EVERY - 1 && out.len() < n {
            // The responder's ACK, to the requester's QP (0x1000 + qp).
            let mut a = RoceFrame::default();
            let (requester, responder) = hosts(qp);
            a.ip.addrs = IpAddrs::V4 {
                src: responder,
                dst: requester,
            };
            a.bth.opcode = 0x11;
            a.bth.dest_qp = 0x1000 + qp as u32;
            a.bth.psn = psn[qp];
            a.ext.aeth_syndrome = 0x1F;
            let mut b = Vec::new();
            a.write(&mut b);
            out.push(b);
        }
        psn[qp] = (psn[qp] + 1) & 0xFF_FFFF;
    }
    out
}

/// Sends every frame, paced at `pps` if given; returns when done.
fn send(sender: &RawSender, frames: &[Vec<u8>], pps: Option<f64>) {
    let start = Instant::now();
    for (i, f) in frames.iter().enumerate() {
        if let Some(pps) = pps {
            let due = start + Duration::from_secs_f64(i as f64 / pps);
            while Instant::now() < due {
                std::hint::spin_loop();
            }
        }
        sender.send(f).expect("send");
    }
}

/// Waits until the XDP frame counter stops moving (20 ms without change);
/// returns it and when it last moved.
fn settle(tap: &Tap, since: Instant) -> (u64, Duration) {
    let mut last = tap.counters().unwrap().frames;
    let mut moved = since.elapsed();
    let mut quiet = Instant::now();
    while quiet.elapsed() < Duration::from_millis(20) {
        std::thread::sleep(Duration::from_micros(200));
        let now = tap.counters().unwrap().frames;
        if now != last {
            last = now;
            moved = since.elapsed();
            quiet = Instant::now();
        }
    }
    (last, moved)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    // SAFETY: no arguments, no failure.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: the live benchmark needs root (netns, XDP)");
        return;
    }
    let n: usize = std::env::var("ROCESCOPE_BENCH_LIVE_FRAMES")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(300_000);
    let id = std::process::id();
    let ns = Netns(format!("rocescope-bench-{id}"));
    let (a, b) = (format!("rsba{id}"), format!("rsbb{id}"));
    assert!(ip(&["netns", "add", &ns.0]), "ip netns add");
    assert!(ip(&[
        "-n", &ns.0, "link", "add", &a, "type", "veth", "peer", "name", &b
    ]));
    assert!(ip(&["-n", &ns.0, "link", "set", &a, "up"]));
    assert!(ip(&["-n", &ns.0, "link", "set", &b, "up"]));
    let nsfile = std::fs::File::open(format!("/run/netns/{}", ns.0)).expect("netns file");
    // SAFETY: a valid netns fd; this (still single) thread moves into it.
    assert_eq!(
        unsafe { libc::setns(nsfile.as_raw_fd(), libc::CLONE_NEWNET) },
        0
    );

    let frames = frames(n);
    let rings_paced: f64 = std::env::var("ROCESCOPE_BENCH_RINGS_PACED")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(300_000.0);
    if std::env::var("ROCESCOPE_BENCH_ONLY").as_deref() == Ok("rings") {
        program_cost(&frames);
        rings::compare(&ns.0, &frames, rings_paced);
        return;
    }
    let sender = RawSender::open(&a).expect("raw socket");
    let cpus = Pinning::from_env();
    cpus.pin_sender();
    let cpu_rounds: usize = std::env::var("ROCESCOPE_BENCH_CPU_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let cpu_paced: f64 = std::env::var("ROCESCOPE_BENCH_CPU_PACED")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(500_000.0);
    if std::env::var("ROCESCOPE_BENCH_ONLY").as_deref() == Ok("cpu") {
        let rig = Rig {
            iface: &b,
            sender: &sender,
            frames: &frames,
            cpus: &cpus,
        };
        cpu::per_frame(&rig, cpu_rounds, cpu_paced);
        return;
    }
    println!(
        "live path on veth ({n} frames: RoCE RDMA WRITE of {} bytes, an ACK per 8)",
        frames[0].len()
    );

    // 1. Baseline.
    let mut base = Tap::load(Program::BarePass, false, RingTuning::default()).expect("load");
    let mode = base.attach(&b, XdpModeArg::Auto).expect("attach");
    let t0 = Instant::now();
    send(&sender, &frames, None);
    let (seen, span) = settle(&base, t0);
    drop(base);
    let base_rate = seen as f64 / span.as_secs_f64();
    println!(
        "  baseline XDP_PASS ({mode}): {seen} frames seen in {:.3} s = {:.0} frames/s",
        span.as_secs_f64(),
        base_rate
    );

    program_cost(&frames);

    let rig = Rig {
        iface: &b,
        sender: &sender,
        frames: &frames,
        cpus: &cpus,
    };
    let tunings = tunings();
    // 2. The ring path alone: the decoding program, the ring, a consumer
    //    that only copies records out (no analysis, no tables).
    for t in &tunings {
        ring_only(&rig, *t, base_rate);
    }
    // 3. The whole live path in both modes, paced down until no ring-buffer drops.
    for t in &tunings {
        for mode in [live::TapMode::Records, live::TapMode::Summary] {
            live_rounds(&rig, mode, *t, base_rate, None);
        }
    }
    // 5. A fixed offered rate, default ring: does records mode take every
    //    frame a bare XDP_PASS program sees at that rate?
    let paced: f64 = std::env::var("ROCESCOPE_BENCH_PACED")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(1_000_000.0);
    if paced > 0.0 {
        let mut base = Tap::load(Program::BarePass, false, RingTuning::default()).expect("load");
        base.attach(&b, XdpModeArg::Auto).expect("attach");
        let t0 = Instant::now();
        send(&sender, &frames, Some(paced));
        let (seen, span) = settle(&base, t0);
        drop(base);
        let paced_rate = seen as f64 / span.as_secs_f64();
        println!(
            "  sender paced at {paced:.0} frames/s: XDP_PASS saw {seen} frames at {paced_rate:.0} frames/s"
        );
        let t = RingTuning::default();
        live_rounds(&rig, live::TapMode::Records, t, paced_rate, Some(paced));
    }
    // 7. rocescope's own CPU per frame (before 6, which unpins this thread).
    cpu::per_frame(&rig, cpu_rounds, cpu_paced);
    // 6. Ring layouts with one and two producing CPUs.
    rings::compare(&ns.0, &frames, rings_paced);
}

/// What every phase sends and where: the tap's interface, the sender, the
/// frames, and the CPUs.
struct Rig<'a> {
    iface: &'a str,
    sender: &'a RawSender,
    frames: &'a [Vec<u8>],
    cpus: &'a Pinning,
}

/// Where the sender and the tap run (`ROCESCOPE_BENCH_CPUS`, see the
/// module docs): on a veth pair the XDP program runs in the sender's
/// context, so the sender's CPU stands in for the mirror port's receive
/// interrupts, which a capture box keeps rocescope off (`live --cpus`).
struct Pinning {
    sender: Option<CpuList>,
    tap: Option<CpuList>,
}

impl Pinning {
    fn from_env() -> Self {
        let spec = std::env::var("ROCESCOPE_BENCH_CPUS").unwrap_or_else(|_| "0/1".into());
        if spec == "none" {
            println!("  unpinned: the sender and rocescope share every CPU");
            return Pinning {
                sender: None,
                tap: None,
            };
        }
        let (s, t) = spec
            .split_once('/')
            .expect("ROCESCOPE_BENCH_CPUS=SENDER/TAP or none");
        let p = Pinning {
            sender: Some(CpuList::parse(s).expect("sender CPUs")),
            tap: Some(CpuList::parse(t).expect("tap CPUs")),
        };
        println!(
            "  sender (and so the XDP program) on CPU {}, rocescope on CPU {} (live --cpus)",
            p.sender.as_ref().unwrap(),
            p.tap.as_ref().unwrap()
        );
        p
    }

    fn pin_sender(&self) {
        if let Some(c) = &self.sender {
            c.pin_current_thread().expect("pin the sender");
        }
    }
}

/// What each program costs per frame in the kernel alone
/// (BPF_PROG_TEST_RUN repeating one frame; the kernel's mean per run, min
/// over interleaved rounds): the sender pays this on veth.
fn program_cost(frames: &[Vec<u8>]) {
    const REPEAT: u32 = 100_000;
    const ROUNDS: usize = 5;
    let write = &frames[0];
    let ack = frames
        .iter()
        .find(|f| f.len() != write.len())
        .expect("an ACK among the frames");
    // Not RoCE: the WRITE to another UDP port (no record).
    let mut other = write.clone();
    assert_eq!(
        other[36..38],
        4791u16.to_be_bytes(),
        "UDP port of an untagged IPv4 frame"
    );
    other[36..38].copy_from_slice(&4792u16.to_be_bytes());
    let mut pass = Tap::load(Program::BarePass, false, RingTuning::default()).expect("load");
    let mut dec = Tap::load(Program::Decoder, false, RingTuning::default()).expect("load");
    let mut best = [Duration::MAX; 4];
    for _ in 0..ROUNDS {
        for (i, frame) in [write, write, ack, &other].into_iter().enumerate() {
            let tap = if i == 0 { &mut pass } else { &mut dec };
            let (_, t) = tap.test_run_repeat(frame, REPEAT).expect("test run");
            best[i] = best[i].min(t);
            while tap.next_record().is_some() {}
        }
    }
    println!(
        "  program cost per frame (BPF_PROG_TEST_RUN, min of {ROUNDS} × {REPEAT}): \
         XDP_PASS {} ns, decoder {} ns on the WRITE, {} ns on the ACK, {} ns on UDP \
         to another port; the verifier walked {} instructions",
        best[0].as_nanos(),
        best[1].as_nanos(),
        best[2].as_nanos(),
        best[3].as_nanos(),
        dec.verified_instructions()
            .map_or("?".to_string(), |n| n.to_string())
    );
}

/// Ring tunings compared (`ROCESCOPE_BENCH_RING`, see the module docs).
fn tunings() -> Vec<RingTuning> {
    let spec =
        std::env::var("ROCESCOPE_BENCH_RING").unwrap_or_else(|_| "16MiB/0,64MiB/1MiB".into());
    spec.split(',').map(ring_tuning).collect()
}

/// One ring tuning, `SIZE/WAKEUP` (`64MiB/1MiB`).
fn ring_tuning(spec: &str) -> RingTuning {
    let (size, wakeup) = spec.split_once('/').expect("SIZE/WAKEUP");
    RingTuning::new(
        Some(units::bytes(size).expect("ring size")),
        Some(units::bytes(wakeup).expect("wake-up bytes")),
    )
    .expect("ring tuning")
}

fn describe(t: RingTuning) -> String {
    let wake = if t.wakeup_bytes == 0 {
        "wake-up on catch-up".to_string()
    } else {
        format!(
            "wake-up every {} KiB + {} ms poll",
            t.wakeup_bytes >> 10,
            t.poll.as_millis()
        )
    };
    format!("ring {} MiB, {wake}", t.bytes >> 20)
}

/// The decoding program and a busy consumer that copies records off the ring.
fn ring_only(rig: &Rig<'_>, t: RingTuning, base_rate: f64) {
    let Rig {
        iface,
        sender,
        frames,
        cpus,
    } = *rig;
    let mut tap = Tap::load(Program::Decoder, false, t).expect("load");
    tap.attach(iface, XdpModeArg::Auto).expect("attach");
    let mut ring = tap.take_rings().pop().expect("ring").ring;
    let stop = Arc::new(AtomicBool::new(false));
    let taken = Arc::new(AtomicU64::new(0));
    let consumer = {
        let (stop, taken) = (stop.clone(), taken.clone());
        let tap_cpus = cpus.tap.clone();
        std::thread::spawn(move || {
            if let Some(c) = tap_cpus {
                c.pin_current_thread().expect("pin the consumer");
            }
            let mut n = 0u64;
            let mut sum = 0u64;
            loop {
                match ring.next() {
                    Some(item) => {
                        if let Some(rec) = live::rings::record_from_bytes(&item) {
                            sum = sum.wrapping_add(u64::from(rec.roce().psn));
                            n += 1;
                        }
                    }
                    None if stop.load(Ordering::Relaxed) => break,
                    None => std::thread::sleep(t.poll.min(Duration::from_micros(200))),
                }
                if n.is_multiple_of(4096) {
                    taken.store(n, Ordering::Relaxed);
                }
            }
            taken.store(n, Ordering::Relaxed);
            black_box(sum);
        })
    };
    let t0 = Instant::now();
    send(sender, frames, None);
    let (seen, span) = settle(&tap, t0);
    stop.store(true, Ordering::Relaxed);
    consumer.join().unwrap();
    let c = tap.counters().unwrap();
    let rate = seen as f64 / span.as_secs_f64();
    println!(
        "  ring only ({}): {seen} frames, {} records taken, {} ring-buffer drops; XDP side {rate:.0} frames/s = {:.2} × baseline",
        describe(t),
        taken.load(Ordering::Relaxed),
        c.ring_full,
        rate / base_rate
    );
}

fn live_rounds(
    rig: &Rig<'_>,
    mode: live::TapMode,
    ring: RingTuning,
    base_rate: f64,
    paced: Option<f64>,
) {
    let Rig {
        iface: b,
        sender,
        frames,
        cpus,
    } = *rig;
    let n = frames.len();
    let label = format!("{} ({})", mode.as_str(), describe(ring));
    let summary = mode == live::TapMode::Summary;
    let mut pps: Option<f64> = paced;
    for round in 1..=5 {
        let seen = Arc::new(AtomicU64::new(0));
        let out = tempfile::tempdir().unwrap();
        let opts = live::Options {
            iface: b.to_string(),
            out: out.path().to_path_buf(),
            duration: Some(Duration::from_secs(60)),
            // Summary mode has far fewer records: it stops when idle.
            count: (!summary).then_some(n as u64),
            mode: XdpModeArg::Auto,
            tap_mode: mode,
            flush_ns: None,
            drop_after_capture: false,
            recognition: Default::default(),
            analyzer: Default::default(),
            progress: false,
            ring,
            layout: live::RingLayout::Shared,
            cpus: cpus.tap.clone(),
            records_seen: Some(seen.clone()),
            metrics: None,
            report_interval: live::monitor::DEFAULT_REPORT_INTERVAL,
            findings: None,
            time: Default::default(),
            packets: true,
            analyzers: 1,
        };
        let done = Arc::new(AtomicBool::new(false));
        let t0 = Instant::now();
        let runner = {
            let done = done.clone();
            std::thread::spawn(move || {
                let r = live::run(&opts);
                done.store(true, Ordering::SeqCst);
                r
            })
        };
        // Let it attach (the message goes to stderr; wait for the XDP program).
        std::thread::sleep(Duration::from_millis(800));
        let t_send = Instant::now();
        send(sender, frames, pps);
        let sent_for = t_send.elapsed();
        // The run ends by itself at --count; after drops it never gets
        // there: wait until the consumer stops making progress, then stop
        // it through the interface (down, then up again).
        let mut last = (0, t_send.elapsed());
        let mut quiet = Instant::now();
        while !done.load(Ordering::SeqCst) && quiet.elapsed() < Duration::from_millis(300) {
            std::thread::sleep(Duration::from_micros(500));
            let now = seen.load(Ordering::Relaxed);
            if now != last.0 {
                last = (now, t_send.elapsed());
                quiet = Instant::now();
            }
        }
        let analysed_by = if done.load(Ordering::SeqCst) {
            t_send.elapsed()
        } else {
            last.1
        };
        if !done.load(Ordering::SeqCst) {
            ip(&["link", "set", b, "down"]);
        }
        let outcome = runner.join().unwrap().expect("live run");
        ip(&["link", "set", b, "up"]);
        let f = &outcome.facts;
        let _ = t0;
        let rate = f.frames as f64 / sent_for.as_secs_f64();
        let analysed = f.records + f.summarized;
        let e2e = analysed as f64 / analysed_by.as_secs_f64();
        println!(
            "  {} round {round} ({}): {} frames seen, {} records + {} summarized in {} deltas, \
             {} ring-buffer drops, {:.1} ring bytes per frame; \
             XDP side {:.0} frames/s, end to end {:.0} frames/s{}",
            label,
            f.xdp_mode,
            f.frames,
            f.records,
            f.summarized,
            f.deltas,
            f.ring_full_drops,
            f.ring_bytes as f64 / analysed.max(1) as f64,
            rate,
            e2e,
            pps.map(|p| format!(", sender paced at {p:.0}/s"))
                .unwrap_or_default()
        );
        if f.ring_full_drops == 0 && analysed >= n as u64 {
            println!(
                "  {} sustained with zero ring drops: {:.0} frames/s end to end = {:.2} × baseline",
                label,
                e2e,
                e2e / base_rate
            );
            return;
        }
        pps = Some(0.9 * e2e);
    }
    println!("  {label}: no round without ring-buffer drops");
}
