//! 7. **Userspace CPU per frame** (part of `--bench live`;
//!    `ROCESCOPE_BENCH_ONLY=cpu` runs only this): rocescope's own CPU time
//!    (user + system of every thread but the sender's) per frame analysed,
//!    records mode, the sender paced (`ROCESCOPE_BENCH_CPU_PACED` frames/s,
//!    default 500 000) so that no ring drops, in `ROCESCOPE_BENCH_CPU_ROUNDS`
//!    (default 3) interleaved rounds of
//!
//!    * **drain only** (the baseline): the decoding program, a ring per
//!      CPU, `live`'s drain threads, one more thread that only counts the
//!      batches' items: what taking records off the rings costs;
//!    * **live, `--tables` without `packets`**: the merge, the analyzer,
//!      events, timeline, flows and the end-of-run tables;
//!    * **live, every table**: the same and `packets.parquet`;
//!    * **live, summary mode, without packets** (`--mode summary`): the
//!      kernel counts the in-order data packets of each flow and hands over
//!      deltas instead of records; per frame seen by the program, so it is
//!      comparable with records mode (the run stops by the interface going
//!      down once nothing has come for 300 ms: summary mode's records are
//!      fewer than the frames, so `--count` cannot end it);
//!    * with `ROCESCOPE_BENCH_CPU_ANALYZERS=N` (N > 1) also **live, without
//!      packets, N analyzers** (`live --analyzers N`, docs/live.md,
//!      "Sharded analysis"): the analyzer threads are `shards`, the
//!      dispatcher that feeds them and merges their results `analyzer`;
//!      and the same in summary mode (`live --mode summary --analyzers N`).
//!
//!    The process's CPU (`getrusage(RUSAGE_SELF)`) from the first frame sent
//!    to the end of the run (the tables closed), less the sending thread's
//!    (`RUSAGE_THREAD`: on veth the XDP program runs in the sender's
//!    softirq, so the kernel side is there) and the sampler's; loading and
//!    attaching the program (the verifier) come before and are left out.
//!    Per thread: `/proc/self/task/*/schedstat` sampled every 10 ms (the
//!    last sample of a thread that ends misses at most 10 ms of it).
use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rocescope::live::drain::Drains;
use rocescope::live::{self, LoadOptions, Program, RingLayout, RingTuning, Tap, XdpModeArg};

use super::{Rig, send, settle};

/// User + system time of the process (`RUSAGE_SELF`) or the calling
/// thread (`RUSAGE_THREAD`).
fn rusage(who: libc::c_int) -> Duration {
    // SAFETY: a zeroed rusage is valid; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer and `who`.
    unsafe { libc::getrusage(who, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn gettid() -> u32 {
    // SAFETY: no arguments, no failure.
    unsafe { libc::gettid() as u32 }
}

/// Which part of rocescope a thread is, by its name.
fn group(comm: &str) -> &'static str {
    match comm {
        c if c.starts_with("ring") => "drain",
        "live-run" => "merge+feed",
        c if c.starts_with("rocescope-analy") => "analyzer",
        c if c.starts_with("rocescope-shard") => "shards",
        c if c.starts_with("rocescope-write") => "writer",
        c if c.starts_with("rocescope-encod") => "encoder",
        "count-batches" => "counter",
        _ => "other",
    }
}

/// Each thread's name and CPU time (ns) since the sampler started, by tid.
type PerThread = BTreeMap<u32, (String, u64)>;

/// Samples every thread's CPU time (ns, `schedstat`) of this process.
struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<(PerThread, Duration)>,
}

impl Sampler {
    /// Leaves out the threads `skip` (the sender's tid).
    fn start(skip: u32) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let handle = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let me = gettid();
                let mut seen = PerThread::new();
                let mut first: BTreeMap<u32, u64> = BTreeMap::new();
                loop {
                    let last = stop.load(Ordering::Acquire);
                    for task in std::fs::read_dir("/proc/self/task").into_iter().flatten() {
                        let Ok(task) = task else { continue };
                        let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok())
                        else {
                            continue;
                        };
                        if tid == me || tid == skip {
                            continue;
                        }
                        let dir = task.path();
                        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
                        let ns = std::fs::read_to_string(dir.join("schedstat"))
                            .ok()
                            .and_then(|s| s.split(' ').next().and_then(|n| n.parse().ok()));
                        if let Some(ns) = ns {
                            let start = *first.entry(tid).or_insert(ns);
                            seen.insert(tid, (comm.trim_end().to_string(), ns - start));
                        }
                    }
                    if last {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                (seen, rusage(libc::RUSAGE_THREAD))
            })
        };
        Sampler { stop, handle }
    }

    /// CPU per thread group since the start, and the sampler's own CPU.
    fn finish(self) -> (BTreeMap<&'static str, Duration>, Duration) {
        self.stop.store(true, Ordering::Release);
        let (seen, own) = self.handle.join().expect("sampler");
        let mut groups = BTreeMap::new();
        for (comm, ns) in seen.values() {
            *groups.entry(group(comm)).or_insert(Duration::ZERO) += Duration::from_nanos(*ns);
        }
        (groups, own)
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Setup {
    DrainOnly,
    Live {
        packets: bool,
        analyzers: usize,
    },
    /// `live --mode summary`, without packets, with this many analyzers.
    Summary {
        analyzers: usize,
    },
}

impl Setup {
    fn name(self) -> String {
        match self {
            Setup::DrainOnly => "drain only (baseline)".into(),
            Setup::Summary { analyzers: 1 } => "live --mode summary, without packets".into(),
            Setup::Summary { analyzers } => {
                format!("live --mode summary, without packets, {analyzers} analyzers")
            }
            Setup::Live {
                packets: false,
                analyzers: 1,
            } => "live, without packets".into(),
            Setup::Live {
                packets: true,
                analyzers: 1,
            } => "live, every table".into(),
            Setup::Live { packets, analyzers } => format!(
                "live, {}, {analyzers} analyzers",
                if packets {
                    "every table"
                } else {
                    "without packets"
                }
            ),
        }
    }
}

/// One round's figures.
struct Round {
    frames: u64,
    cpu: Duration,
    groups: BTreeMap<&'static str, Duration>,
    drops: u64,
}

impl Round {
    fn ns_per_frame(&self, d: Duration) -> f64 {
        d.as_nanos() as f64 / self.frames.max(1) as f64
    }
}

/// Waits until `iface` has an XDP program attached (the verifier is done)
/// by the `live` run on `runner`. A run that ends before attaching (it
/// failed to load or attach) panics with `live`'s own error, and so does
/// one still not attached after `ATTACH_WAIT` (the verifier on a loaded
/// 2-core machine takes seconds, not minutes).
fn attached(iface: &str, runner: &JoinHandle<rocescope::Result<live::Outcome>>) -> bool {
    const ATTACH_WAIT: Duration = Duration::from_secs(180);
    let started = Instant::now();
    while started.elapsed() < ATTACH_WAIT {
        let out = Command::new("ip")
            .args(["link", "show", "dev", iface])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        if out.contains("xdp") {
            return true;
        }
        if runner.is_finished() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!(
        "no XDP program attached to {iface} after {} s (the live run is still loading)",
        ATTACH_WAIT.as_secs()
    );
}

/// Blocks SIGCHLD on the calling thread (and the threads it spawns): the
/// `ip` processes [`attached`] runs exit while `live` loads its program,
/// and a SIGCHLD routed to the loading thread makes the verifier give up
/// with `EAGAIN` (it stops whenever a signal is pending).
fn block_sigchld() {
    // SAFETY: a zeroed sigset is valid; the calls fill and apply it to
    // this thread alone.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Runs the comparison (see the module docs).
pub fn per_frame(rig: &Rig<'_>, rounds: usize, pps: f64) {
    let mut setups = vec![
        Setup::DrainOnly,
        Setup::Live {
            packets: false,
            analyzers: 1,
        },
        Setup::Live {
            packets: true,
            analyzers: 1,
        },
        Setup::Summary { analyzers: 1 },
    ];
    let sharded = std::env::var("ROCESCOPE_BENCH_CPU_ANALYZERS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 1);
    if let Some(analyzers) = sharded {
        setups.push(Setup::Live {
            packets: false,
            analyzers,
        });
        setups.push(Setup::Summary { analyzers });
    }
    println!(
        "  userspace CPU per frame (records mode, ring per CPU, sender paced at {pps:.0} frames/s, \
         {} frames, {rounds} interleaved rounds; ns of CPU per frame analysed):",
        rig.frames.len()
    );
    let mut all: Vec<Vec<Round>> = setups.iter().map(|_| Vec::new()).collect();
    for round in 1..=rounds {
        for (i, setup) in setups.iter().enumerate() {
            let r = match setup {
                Setup::DrainOnly => drain_only(rig, pps),
                Setup::Live { packets, analyzers } => {
                    live_run(rig, pps, live::TapMode::Records, *packets, *analyzers)
                }
                Setup::Summary { analyzers } => {
                    live_run(rig, pps, live::TapMode::Summary, false, *analyzers)
                }
            };
            let parts: Vec<String> = r
                .groups
                .iter()
                .map(|(g, d)| format!("{g} {:.0}", r.ns_per_frame(*d)))
                .collect();
            println!(
                "    round {round} {}: {} frames, {} drops, {:.0} ns/frame ({})",
                setup.name(),
                r.frames,
                r.drops,
                r.ns_per_frame(r.cpu),
                parts.join(", ")
            );
            all[i].push(r);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let base = median(&mut all[0].iter().map(|r| r.ns_per_frame(r.cpu)).collect());
    for (setup, rounds) in setups.iter().zip(&all) {
        let total = median(&mut rounds.iter().map(|r| r.ns_per_frame(r.cpu)).collect());
        let mut groups: Vec<&'static str> = rounds
            .iter()
            .flat_map(|r| r.groups.keys().copied())
            .collect();
        groups.dedup();
        groups.sort();
        groups.dedup();
        let parts: Vec<String> = groups
            .iter()
            .map(|g| {
                let mut v: Vec<f64> = rounds
                    .iter()
                    .map(|r| r.ns_per_frame(r.groups.get(g).copied().unwrap_or_default()))
                    .collect();
                format!("{g} {:.0}", median(&mut v))
            })
            .collect();
        println!(
            "  {}: median {total:.0} ns of CPU per frame = {:.2} × drain only ({})",
            setup.name(),
            total / base,
            parts.join(", ")
        );
    }
}

/// The baseline: `live`'s drain threads into a thread that counts items.
fn drain_only(rig: &Rig<'_>, pps: f64) -> Round {
    let opts = LoadOptions {
        ring: RingTuning::default(),
        layout: RingLayout::PerCpu,
        ..LoadOptions::default()
    };
    let mut tap = Tap::load_with(Program::Decoder, &opts).expect("load");
    let (drains, counted) = {
        // The drain threads inherit the CPUs of the thread that spawns them.
        let tap_cpus = rig.cpus.tap.clone();
        let rings = tap.take_rings();
        std::thread::spawn(move || {
            if let Some(c) = tap_cpus {
                c.pin_current_thread().expect("pin");
            }
            let (drains, mut rx) =
                Drains::spawn(rings, RingTuning::default().poll).expect("drains");
            let counted = Arc::new(AtomicU64::new(0));
            let c = counted.clone();
            std::thread::Builder::new()
                .name("count-batches".into())
                .spawn(move || {
                    while let Some(b) = rx.blocking_recv() {
                        c.fetch_add(b.items.len() as u64, Ordering::Relaxed);
                    }
                })
                .expect("counter");
            (drains, counted)
        })
        .join()
        .expect("spawn drains")
    };
    tap.attach(rig.iface, XdpModeArg::Auto).expect("attach");
    let sampler = Sampler::start(gettid());
    let (self0, main0) = (rusage(libc::RUSAGE_SELF), rusage(libc::RUSAGE_THREAD));
    let t0 = Instant::now();
    send(rig.sender, rig.frames, Some(pps));
    let _ = settle(&tap, t0);
    let records = tap.counters().expect("counters").records;
    while counted.load(Ordering::Relaxed) < records {
        std::thread::sleep(Duration::from_millis(1));
    }
    tap.detach();
    drains.finish();
    drains.join();
    let (self1, main1) = (rusage(libc::RUSAGE_SELF), rusage(libc::RUSAGE_THREAD));
    let (groups, sampler_cpu) = sampler.finish();
    let drops = tap.counters().expect("counters").ring_full;
    Round {
        frames: counted.load(Ordering::Relaxed),
        cpu: (self1 - self0).saturating_sub((main1 - main0) + sampler_cpu),
        groups,
        drops,
    }
}

/// `live` until it has analysed every frame sent: records mode ends at
/// `--count`; summary mode, whose records are fewer than the frames, by the
/// interface going down once nothing came for 300 ms.
fn live_run(
    rig: &Rig<'_>,
    pps: f64,
    tap_mode: live::TapMode,
    packets: bool,
    analyzers: usize,
) -> Round {
    let n = rig.frames.len() as u64;
    let summary = tap_mode == live::TapMode::Summary;
    let seen = Arc::new(AtomicU64::new(0));
    let out = tempfile::tempdir().expect("tempdir");
    let opts = live::Options {
        iface: rig.iface.to_string(),
        out: out.path().to_path_buf(),
        duration: Some(Duration::from_secs(120)),
        count: (!summary).then_some(n),
        mode: XdpModeArg::Auto,
        tap_mode,
        flush_ns: None,
        drop_after_capture: false,
        recognition: Default::default(),
        analyzer: Default::default(),
        progress: false,
        ring: RingTuning::default(),
        layout: RingLayout::PerCpu,
        cpus: rig.cpus.tap.clone(),
        records_seen: Some(seen.clone()),
        metrics: None,
        report_interval: live::monitor::DEFAULT_REPORT_INTERVAL,
        findings: None,
        time: Default::default(),
        packets,
        analyzers,
    };
    let runner = std::thread::Builder::new()
        .name("live-run".into())
        .spawn(move || {
            block_sigchld();
            live::run(&opts)
        })
        .expect("runner");
    if !attached(rig.iface, &runner) {
        match runner.join() {
            Ok(Ok(_)) => panic!(
                "the live run ended before its program was seen on {}",
                rig.iface
            ),
            Ok(Err(e)) => panic!("the live run failed before attaching to {}: {e}", rig.iface),
            Err(_) => panic!("the live run panicked before attaching to {}", rig.iface),
        }
    }
    let sampler = Sampler::start(gettid());
    let (self0, main0) = (rusage(libc::RUSAGE_SELF), rusage(libc::RUSAGE_THREAD));
    send(rig.sender, rig.frames, Some(pps));
    if summary {
        let mut last = seen.load(Ordering::Relaxed);
        let mut quiet = Instant::now();
        while !runner.is_finished() && quiet.elapsed() < Duration::from_millis(300) {
            std::thread::sleep(Duration::from_millis(1));
            let now = seen.load(Ordering::Relaxed);
            if now != last {
                (last, quiet) = (now, Instant::now());
            }
        }
        super::ip(&["link", "set", rig.iface, "down"]);
    }
    let outcome = runner.join().expect("runner").expect("live run");
    if summary {
        super::ip(&["link", "set", rig.iface, "up"]);
    }
    let (self1, main1) = (rusage(libc::RUSAGE_SELF), rusage(libc::RUSAGE_THREAD));
    let (groups, sampler_cpu) = sampler.finish();
    drop(out);
    Round {
        frames: if summary {
            outcome.facts.records + outcome.facts.summarized
        } else {
            outcome.records
        },
        cpu: (self1 - self0).saturating_sub((main1 - main0) + sampler_cpu),
        groups,
        drops: outcome.facts.ring_full_drops,
    }
}
