//! 6. **Ring layouts** (part of `--bench live`): a veth pair with a queue
//!    per producing CPU (XPS maps CPU i to transmit queue i, whose peer's
//!    NAPI, and so the XDP program, runs on CPU i), 1 and 2 senders pinned
//!    to CPU 0 and 1, flat out and paced, into a bare `XDP_PASS`, the
//!    decoder on one shared ring, and the decoder on a ring per CPU — each
//!    ring drained by `live`'s own drain threads, whose batches one more
//!    thread only counts (no analysis, no tables: the kernel side and the
//!    rings). Rate = frames XDP saw / (first send → last frame seen).
//!
//!    Once per ring tuning of `ROCESCOPE_BENCH_RINGS_RING` (`SIZE/WAKEUP,…`,
//!    default `64MiB/1MiB,512KiB/128KiB`: live's own `--ring-size` and
//!    `--wakeup`, then a ring whose few milliseconds of buffer at this
//!    host's rates stand for the default ring's at a 400G port's), each
//!    ring that size, and the rings per CPU once more at half that size
//!    each: the same memory as the one shared ring.
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rocescope::live::cpus::CpuList;
use rocescope::live::drain::Drains;
use rocescope::live::replay::RawSender;
use rocescope::live::{LoadOptions, Program, RingLayout, RingTuning, Tap, XdpModeArg};

use super::{ring_tuning, send, settle};

/// What runs on the tap end.
#[derive(Clone, Copy)]
enum Setup {
    Pass,
    /// The decoder with its rings, each of the tuning's size.
    Decoder(RingLayout, RingTuning),
}

impl Setup {
    fn name(self) -> String {
        match self {
            Setup::Pass => "XDP_PASS".into(),
            Setup::Decoder(RingLayout::Shared, t) => {
                format!("shared ring of {} KiB", t.bytes >> 10)
            }
            Setup::Decoder(RingLayout::PerCpu, t) => {
                format!("ring per CPU of {} KiB", t.bytes >> 10)
            }
        }
    }
}

/// The rings' tunings (`ROCESCOPE_BENCH_RINGS_RING=SIZE/WAKEUP,…`).
fn tunings() -> Vec<RingTuning> {
    std::env::var("ROCESCOPE_BENCH_RINGS_RING")
        .unwrap_or_else(|_| "64MiB/1MiB,512KiB/128KiB".into())
        .split(',')
        .map(ring_tuning)
        .collect()
}

/// Runs the comparison in the bench's namespace `ns`.
pub fn compare(ns: &str, frames: &[Vec<u8>], paced_per_cpu: f64) {
    // The drain threads inherit this thread's CPUs: all of them, not the
    // sender's.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    CpuList::parse(&format!("0-{}", cpus - 1))
        .and_then(|c| c.pin_current_thread())
        .expect("unpin");
    let id = std::process::id();
    let (a, b) = (format!("rsqa{id}"), format!("rsqb{id}"));
    let ok = Command::new("ip")
        .args(["link", "add", &a, "numtxqueues", "2", "numrxqueues", "2"])
        .args(["type", "veth", "peer", "name", &b, "numtxqueues", "2"])
        .args(["numrxqueues", "2"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "ip link add (two queues)");
    for dev in [&a, &b] {
        assert!(
            Command::new("ip")
                .args(["link", "set", dev, "up"])
                .status()
                .is_ok_and(|s| s.success())
        );
    }
    for (queue, mask) in [(0, "1"), (1, "2")] {
        let set = format!("echo {mask} > /sys/class/net/{a}/queues/tx-{queue}/xps_cpus");
        let ok = Command::new("ip")
            .args(["netns", "exec", ns, "sh", "-c", &set])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "{set}");
    }
    for whole in tunings() {
        println!(
            "  ring layouts (veth with 2 queues, a sender per producing CPU, {} frames in all, rings of {} KiB waking every {} KiB):",
            frames.len(),
            whole.bytes >> 10,
            whole.wakeup_bytes >> 10
        );
        layouts(&a, &b, frames, paced_per_cpu, whole);
    }
}

/// Each layout with 1 and 2 producing CPUs, flat out and paced, the
/// rings of `whole`'s size (and per CPU also of half its size).
fn layouts(a: &str, b: &str, frames: &[Vec<u8>], paced_per_cpu: f64, whole: RingTuning) {
    let half = RingTuning::new(
        Some(u64::from(whole.bytes / 2)),
        Some(whole.wakeup_bytes.min(u64::from(whole.bytes / 2))),
    )
    .expect("half ring tuning");
    for producers in [1usize, 2] {
        for pace in [None, Some(paced_per_cpu)] {
            let mut line = format!(
                "    {producers} CPU{}, {}:",
                if producers > 1 { "s" } else { "" },
                pace.map_or("flat out".to_string(), |p| format!(
                    "paced {p:.0}/s per CPU"
                ))
            );
            for setup in [
                Setup::Pass,
                Setup::Decoder(RingLayout::Shared, whole),
                Setup::Decoder(RingLayout::PerCpu, whole),
                Setup::Decoder(RingLayout::PerCpu, half),
            ] {
                let (rate, records, drops) = run(a, b, frames, producers, pace, setup);
                line.push_str(&format!(
                    " {} {:.0} frames/s ({records} records, {drops} drops);",
                    setup.name(),
                    rate
                ));
            }
            println!("{line}");
        }
    }
}

/// One round: returns frames/s XDP saw, records and ring-full drops.
fn run(
    a: &str,
    b: &str,
    frames: &[Vec<u8>],
    producers: usize,
    pace: Option<f64>,
    setup: Setup,
) -> (f64, u64, u64) {
    let (program, layout, ring) = match setup {
        Setup::Pass => (Program::BarePass, RingLayout::Shared, RingTuning::default()),
        Setup::Decoder(layout, ring) => (Program::Decoder, layout, ring),
    };
    let opts = LoadOptions {
        ring,
        layout,
        ..LoadOptions::default()
    };
    let mut tap = Tap::load_with(program, &opts).expect("load");
    tap.attach(b, XdpModeArg::Auto).expect("attach");
    let (drains, mut batches) = Drains::spawn(tap.take_rings(), ring.poll).expect("drain threads");
    let taken = Arc::new(AtomicU64::new(0));
    let counter = {
        let taken = taken.clone();
        std::thread::spawn(move || {
            while let Some(batch) = batches.blocking_recv() {
                taken.fetch_add(batch.items.len() as u64, Ordering::Relaxed);
            }
        })
    };
    let share = frames.len().div_ceil(producers);
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for (cpu, part) in frames.chunks(share).enumerate() {
            s.spawn(move || {
                CpuList::parse(&cpu.to_string())
                    .and_then(|c| c.pin_current_thread())
                    .expect("pin the sender");
                let sender = RawSender::open(a).expect("raw socket");
                send(&sender, part, pace);
            });
        }
    });
    let (seen, span) = settle(&tap, t0);
    let c = tap.counters().expect("counters");
    // Let the drain threads catch up before stopping them.
    let deadline = Instant::now() + Duration::from_secs(10);
    while taken.load(Ordering::Relaxed) < c.records && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    tap.detach();
    drains.finish();
    counter.join().expect("counter thread");
    drains.join();
    (seen as f64 / span.as_secs_f64(), c.records, c.ring_full)
}
