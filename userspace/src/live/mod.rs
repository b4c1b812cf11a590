//! The live tap: an XDP program on a mirror port decodes frames in the
//! kernel; records come up a ring buffer per CPU into the same
//! [`RecordPipeline`] the offline reader feeds.
//!
//! ```text
//! NIC queues ─► XDP on CPU i (ebpf/rocescope-ebpf: decode, counters) ─► ring i ─► drain thread i ─┐
//!                                                                   tokio loop: merge by time ◄─┘ ─► RecordPipeline ─► tables
//! ```
//!
//! # Decisions
//!
//! * **Parity with the offline decoder** on every field but `ts_ns`,
//!   `frame`, `iface` and the ICRC: the kernel does not check the ICRC (a
//!   CRC over the whole packet per frame), so `ICRC_CHECKED`/`ICRC_OK` stay
//!   clear and `icrc_ok` is null in live tables, as for a cut frame. ERSPAN
//!   is unwrapped in the kernel too. See the XDP crate's docs.
//! * **Time**: the kernel stamps `bpf_ktime_get_ns()` (CLOCK_MONOTONIC);
//!   the wall-clock offset is measured once at start and added here.
//! * **A ring per CPU** (`--rings per-cpu`, the default; `shared`: one
//!   ring all CPUs write to): a thread per ring ([`drain`]) hands batches
//!   to the loop, which puts the rings back in time order within a bounded
//!   window ([`reorder`]: 50 ms or 131 072 items; a record later than that
//!   is counted in `late_records` and analysed at once). docs/live.md.
//! * **SIGHUP** completes the files the outputs have written so far and
//!   starts new ones ([`RecordPipeline::reopen_outputs`]); the run goes on.
//! * **Frame numbers** are assigned here, 1-based, in merged order:
//!   they number *records*, since frames of no interest never leave the kernel.
//! * **`--count N`** stops after N records (RoCE/CNP/PFC/PAUSE/malformed
//!   frames), like `tcpdump -c` counts what it keeps.
//! * **Stopping**: `--count`, `--duration`, Ctrl-C or SIGTERM, or the
//!   interface going down or away. In every case the program is detached,
//!   the ring buffer drained, the findings still active ended
//!   ([`monitor`]) and every table written; an interface that
//!   went away makes the run fail after writing.
//! * **Counters** (frames, records, ring-full drops, parse failures; in
//!   summary mode also frames summarized, deltas and ring-buffer bytes) are
//!   shown every second on a terminal, printed at exit and written to
//!   `summary.json` under `input.live` (with `mode`).
//! * **Metrics** (`--metrics ADDR:PORT`): Prometheus's text format on
//!   `/metrics` from snapshots the analyzer thread and this loop publish
//!   ([`metrics`]); the exporter listens before anything is attached.
//! * **Ring buffer** (`--ring-size`, default 64 MiB ≈ 320 000 records) and
//!   **batched wake-ups** (`--wakeup`, default 1 MiB): the kernel's default
//!   wakes the reader whenever a record finds it idle — up to one wake-up
//!   per record when it keeps up, each costing the XDP side an irq_work and
//!   the reader a poll round trip. The program instead asks for a wake-up
//!   only when the bytes waiting cross a multiple of 1 MiB
//!   (`BPF_RB_FORCE_WAKEUP`, else `BPF_RB_NO_WAKEUP`; not on every record
//!   past 1 MiB, which made each frame pay an irq_work while the reader
//!   was busy), and the reader drains the ring every 5 ms as well, so a
//!   trickle still arrives within 5 ms. Figures: docs/benchmarks.md
//!   ("Live").
//!
//! # Summary mode (`--mode summary`)
//!
//! For rates one record per frame cannot keep up with: the XDP program
//! keeps per-flow state in an LRU hash (`FLOWS`, 65 536 flows) and counts
//! there what the analyzer would only add up — in-order requests (PSN =
//! the flow's next, no READ ever on the flow) and plain ACKs — once the
//! analyzer has paired the flow. Every other frame (first of a flow,
//! retransmissions and rewinds, gaps, READs, NAKs, RNR NAKs, READ
//! responses, ACKs of unpaired flows, CNPs, PFC, PAUSE, UD, malformed)
//! still comes up as a record, right after a `FlowDelta` with its flow's
//! counts so far, so the analyzer judges it with exact state. Deltas also
//! come up every `--flush-interval` (10 ms) while a flow is active, and at
//! the end what the kernel still holds is read from `FLOWS` after the
//! program is detached and the ring drained. See
//! `rocescope_common::summary` and the XDP crate's `summary` module.
//!
//! * **Pairing goes back to the kernel**: the analyzer (on its pipeline
//!   thread; with `--analyzers N`, each analyzer its address pairs', whose
//!   deltas it takes) reports every pairing it makes through
//!   [`RecordPipeline::watch_pairings`]; this loop writes it to `PAIRS`
//!   (both directions, see [`Tap::pair`]). Until then the flows' frames are
//!   all forwarded: the analyzer pairs a response flow by where its ACK
//!   PSNs fall in a request flow's PSN range at each response, which counts
//!   held in the kernel would make stale. Hence flows that never get
//!   paired (no responses on the mirror, UC) save nothing, and neither do
//!   the first frames of a flow (an RTT plus a ring wake-up or two).
//! * **Exact** on every count column of `flows.parquet` and on the rewind,
//!   gap, NAK and CNP events, as in records mode (`tests/live.rs` replays
//!   the same captures in both modes), and `first_ts`/`last_ts`,
//!   `max_idle_us`, `gbps` follow (deltas carry the flow's last time and
//!   longest idle).
//! * **Approximate**: `timeline.parquet` spreads a delta's frames evenly
//!   over the bins between its first and last counted frame (the per-flow
//!   sums are exact; the shape within a flush interval, 10 ms by default,
//!   is smoothed); stalls (`pfc-victims`) are not looked for in the idle times
//!   of counted frames; the CE → CNP reaction time counts from the first CE
//!   of a delta, which may reach the analyzer after the CNP that answered
//!   it (CE and CNP counts are exact).
//! * `packets.parquet` holds the forwarded frames only; `frame` numbers
//!   records as always, and `--count N` counts records.
//! * **Limits**: an evicted flow (more active flows than `FLOWS` holds)
//!   loses its unsent counts, and its next frame restarts its kernel state,
//!   which the analyzer may take for a gap. Evictions are counted
//!   (`evicted_flows` in `input.live`): the kernel marks the record that
//!   starts a flow's state, and a second start of the same flow is one. A NAK for a PSN not sent yet
//!   is not consumed by the in-order send of that PSN when that send was
//!   only counted (real responders NAK PSNs already sent). Each flow's
//!   state is written only while one of its frames is processed and a
//!   flow's frames are handled one CPU at a time (RSS), so the map needs no
//!   locks; one shared map rather than per-CPU maps because a delta must
//!   read its partner's state, whose frames arrive on another queue.
pub mod cpus;
pub mod drain;
mod feeder;
pub mod metrics;
pub mod monitor;
pub mod netif;
pub mod reorder;
pub mod replay;
pub mod rings;
pub mod tap;

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use tokio::signal::unix::{SignalKind, signal};

use self::drain::{Batch, Drains};
use self::feeder::Feeder;
use self::metrics::{Metrics, TapSnapshot};
use self::reorder::Reorder;
pub use self::rings::{RingItem, RingLayout, RingTuning};
pub use self::tap::{Counters, LoadOptions, Program, Tap, XdpModeArg};
use crate::analyze::{self, Analysis};
use crate::output::{LiveFacts, RunFacts};
use crate::pipeline::RecordPipeline;
use crate::{Error, Result};

/// `--mode`: what the XDP program sends up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TapMode {
    /// One record per RoCE, CNP, PFC, PAUSE or malformed frame.
    #[default]
    Records,
    /// Per-flow counts in the kernel; records only for what the analyzer
    /// must see one by one (first frames, retransmissions, gaps, NAKs,
    /// READs, CNPs, PFC, …), plus periodic per-flow deltas.
    Summary,
}

impl TapMode {
    pub fn as_str(self) -> &'static str {
        match self {
            TapMode::Records => "records",
            TapMode::Summary => "summary",
        }
    }
}

/// What `rocescope live` was asked to do.
#[derive(Clone, Debug)]
pub struct Options {
    pub iface: String,
    pub out: PathBuf,
    pub duration: Option<Duration>,
    pub count: Option<u64>,
    pub mode: XdpModeArg,
    /// Records or summary (`--mode`).
    pub tap_mode: TapMode,
    /// Summary mode: the longest an active flow's counts wait in the kernel
    /// (default `live::DEFAULT_FLUSH_NS`, 10 ms).
    pub flush_ns: Option<u64>,
    pub drop_after_capture: bool,
    /// Where transports are recognised (`--udp-port`).
    pub recognition: rocescope_common::wire::Recognition,
    pub analyzer: analyze::Config,
    /// Show the counters every second on stderr (when it is a terminal).
    pub progress: bool,
    /// Ring buffer size (per ring) and wake-up batching.
    pub ring: RingTuning,
    /// A ring per CPU or one shared (`--rings`).
    pub layout: RingLayout,
    /// The CPUs rocescope's threads run on (`--cpus`); all when `None`.
    pub cpus: Option<cpus::CpuList>,
    /// Kept equal to the frames analysed so far: records, plus in summary
    /// mode the frames the deltas counted (for monitors and the benchmark).
    pub records_seen: Option<Arc<AtomicU64>>,
    /// Serve Prometheus metrics on `/metrics` there (`--metrics`, [`metrics`]).
    pub metrics: Option<SocketAddr>,
    /// How often the findings are evaluated while running
    /// (`--report-interval`, [`monitor`]).
    pub report_interval: Duration,
    /// Where the findings that start, continue and end go (`--findings`).
    pub findings: Option<monitor::FindingsTo>,
    /// `--time`: which clock times the records.
    pub time: crate::sources::TimeChoice,
    /// Write `packets.parquet` to `out` (`--tables` without `packets`
    /// leaves it out there too: a row per frame is most of the CPU a
    /// record costs, docs/benchmarks.md "Live").
    pub packets: bool,
    /// `--analyzers`: analyzer threads sharing the analysis by address
    /// pair (0 and 1: one), in either `--mode` (docs/live.md, "Sharded
    /// analysis").
    pub analyzers: usize,
}

/// What a live run produced besides the tables.
pub struct Outcome {
    pub analysis: Analysis,
    pub facts: LiveFacts,
    /// Records pushed into the pipeline.
    pub records: u64,
    /// Set when the interface went down or away: the tables hold what came before.
    pub stopped_by_error: Option<Error>,
}

/// Why the loop ended.
enum Stop {
    Count,
    Duration,
    Signal,
    Interface(String),
}

/// Runs the tap until it is told to stop; writes every table to `opts.out`.
pub fn run(opts: &Options) -> Result<Outcome> {
    run_with(opts, || Ok(Vec::new()))
}

/// [`run`], sending the results to `outputs` too (e.g. a partitioned
/// dataset, which rotates its files by time or size during a long run).
///
/// `outputs` is called only once the program is attached, like the output
/// directory is created only then: a run that cannot attach (no
/// privileges, another tap on the interface) leaves the file system alone.
pub fn run_with(
    opts: &Options,
    outputs: impl FnOnce() -> Result<Vec<Box<dyn crate::output::Output>>>,
) -> Result<Outcome> {
    if netif::index(&opts.iface).is_none() {
        return Err(Error::Interface {
            iface: opts.iface.clone(),
            detail: "no such interface (see `ip link`)".into(),
        });
    }
    // Before any thread of the run starts: they all inherit it.
    if let Some(cpus) = &opts.cpus {
        cpus.pin_current_thread()?;
    }
    // Before anything is attached: a port in use fails the run cleanly.
    let metrics = Metrics::new(&opts.iface);
    let exporter = opts
        .metrics
        .map(|addr| metrics::server::Exporter::start(addr, metrics.clone()))
        .transpose()?;
    let summary = opts.tap_mode == TapMode::Summary;
    let load = LoadOptions {
        drop_after_capture: opts.drop_after_capture,
        ring: opts.ring,
        layout: opts.layout,
        summary,
        flush_ns: opts.flush_ns,
        recognition: opts.recognition,
    };
    let mut tap = Tap::load_with(Program::Decoder, &load)?;
    let offset = tap::monotonic_to_wall_offset();
    let mode = tap.attach(&opts.iface, opts.mode)?;
    // Only once attached: a run that cannot attach (e.g. another tap holds
    // the interface) leaves the output directories alone.
    std::fs::create_dir_all(&opts.out).map_err(|e| Error::WriteIo {
        path: opts.out.clone(),
        detail: format!("cannot create the output directory: {e}"),
        source: e,
    })?;
    let mut pipeline = RecordPipeline::with_analyzers(
        crate::analyze::Config {
            recognition: opts.recognition,
            // Every record is the tap's (iface 0).
            one_tap: true,
            ..opts.analyzer.clone()
        },
        Some(&opts.out),
        crate::pipeline::Threads::Pipelined,
        opts.packets,
        opts.analyzers,
    )?;
    for o in outputs()? {
        pipeline.add_output(o);
    }
    let pairings = summary.then(|| pipeline.watch_pairings());
    if exporter.is_some() {
        pipeline.watch(metrics.tally());
    }
    let active = metrics.findings();
    pipeline.watch(Box::new(monitor::Monitor::new(
        opts.report_interval,
        opts.findings.clone(),
        active.clone(),
    )?));
    pipeline.name_iface(0, &opts.iface);
    let serving = exporter
        .as_ref()
        .map(|e| format!("; metrics on http://{}/metrics", e.addr()))
        .unwrap_or_default();
    eprintln!(
        "rocescope: XDP attached to {} ({mode} mode, {}); writing to {}{serving}; Ctrl-C stops",
        opts.iface,
        opts.tap_mode.as_str(),
        opts.out.display()
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| Error::Live(format!("cannot start the event loop: {e}")))?;
    let rings = tap.take_rings();
    let mut merge = Reorder::new(rings.len());
    let (drains, mut batches) = Drains::spawn(rings, opts.ring.poll)?;
    let mut feeder = Feeder {
        pipeline,
        offset,
        next_frame: 1,
        count: opts.count,
        seen: opts.records_seen.clone(),
        pairings,
        pairing_failed: false,
        delta_frames: 0,
        started_flows: Default::default(),
        evicted_flows: 0,
        times: crate::sources::FrameTimes::new(opts.time, 1),
        spares: drains.spares(),
        deltas_flushed: Instant::now(),
    };
    let publish = exporter.is_some().then_some(&*metrics);
    let stop = runtime.block_on(event_loop(
        opts,
        &mut tap,
        &mut batches,
        &mut merge,
        &mut feeder,
        publish,
        &active,
    ));

    // Detach first, then take whatever is still on the rings (the threads
    // empty them once more and end), then (summary mode) the counts still
    // held in the kernel.
    tap.detach();
    drains.finish();
    // Until the channel ends, so no thread stays blocked sending.
    let mut result = stop.as_ref().map(|_| ()).map_err(|_| None);
    while let Some(batch) = batches.blocking_recv() {
        if result.is_ok() && !feeder.full() {
            let now = drain::monotonic_ns();
            result = feeder.take(batch, &mut merge, Some(now)).map_err(Some);
        }
    }
    drains.join();
    let stop = stop?;
    if let Err(Some(e)) = result {
        return Err(e);
    }
    feeder.release(&mut merge, None)?;
    if summary && !feeder.full() {
        for d in tap.remaining_deltas()? {
            feeder.push_delta(d)?;
        }
    }
    let counters = tap.counters()?;
    let records_per_cpu = tap.records_per_cpu()?;
    // The final counters, for a scrape while the tables are written.
    metrics.publish_tap(TapSnapshot {
        counters,
        late_records: merge.late(),
        records_per_cpu: records_per_cpu.clone(),
    });
    let show = opts.progress && std::io::stderr().is_terminal();
    if show {
        eprint!("\r\x1b[K");
    }
    let (stopped_by, stopped_by_error) = match stop {
        Stop::Count => ("count", None),
        Stop::Duration => ("duration", None),
        Stop::Signal => ("signal", None),
        Stop::Interface(detail) => (
            "interface",
            Some(Error::Interface {
                iface: opts.iface.clone(),
                detail: format!("{detail}; the tables hold everything captured before"),
            }),
        ),
    };
    let facts = LiveFacts {
        iface: opts.iface.clone(),
        xdp_mode: mode.to_string(),
        frames: counters.frames,
        records: counters.records,
        ring_full_drops: counters.ring_full,
        parse_failures: counters.parse_failures,
        stopped_by: stopped_by.to_string(),
        mode: opts.tap_mode.as_str().to_string(),
        summarized: counters.summarized,
        deltas: counters.deltas,
        ring_bytes: counters.ring_bytes(),
        evicted_flows: feeder.evicted_flows,
        rings: opts.layout.as_str().to_string(),
        records_per_cpu,
        late_records: merge.late(),
    };
    let records = feeder.pipeline.records();
    let analysis = feeder.pipeline.finish(RunFacts {
        captures: Vec::new(),
        taps: Vec::new(),
        frames_read: counters.frames,
        records,
        warnings: Vec::new(),
        stopped_by: stopped_by_error.as_ref().map(|e| e.to_string()),
        decode: None,
        time: feeder.times.facts(std::slice::from_ref(&opts.iface)),
        live: Some(facts.clone()),
        // The ring carries records, not the hops' bytes (docs/live.md).
        telemetry: None,
    })?;
    Ok(Outcome {
        analysis,
        facts,
        records,
        stopped_by_error,
    })
}

async fn event_loop(
    opts: &Options,
    tap: &mut Tap,
    batches: &mut tokio::sync::mpsc::Receiver<Batch>,
    merge: &mut Reorder,
    feeder: &mut Feeder,
    metrics: Option<&Metrics>,
    active: &monitor::Active,
) -> Result<Stop> {
    let sig = |kind: SignalKind| {
        signal(kind).map_err(|e| Error::Live(format!("cannot watch signals: {e}")))
    };
    let mut interrupt = sig(SignalKind::interrupt())?;
    let mut terminate = sig(SignalKind::terminate())?;
    let mut hangup = sig(SignalKind::hangup())?;
    let deadline = opts.duration.map(|d| tokio::time::Instant::now() + d);
    let never = tokio::time::Instant::now() + Duration::from_secs(100 * 365 * 86400);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    // Items held for order leave once their window has passed, even when
    // no ring sends anything (polled only while the merge holds any: the
    // drain threads' rounds wake this loop every 5 ms anyway).
    let mut poll = tokio::time::interval(opts.ring.poll);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let show = opts.progress && std::io::stderr().is_terminal();
    let started = Instant::now();

    let stop = loop {
        if feeder.full() {
            break Stop::Count;
        }
        tokio::select! {
            batch = batches.recv() => {
                let Some(batch) = batch else {
                    return Err(Error::Live("the ring threads ended".into()));
                };
                feeder.take(batch, merge, Some(drain::monotonic_ns()))?;
                feeder.sync_pairings(tap)?;
            }
            _ = interrupt.recv() => break Stop::Signal,
            _ = terminate.recv() => break Stop::Signal,
            _ = hangup.recv() => {
                // Log rotation: what was written so far becomes complete
                // files; the run goes on into new ones.
                feeder.pipeline.reopen_outputs()?;
                eprintln!("rocescope: SIGHUP: outputs closed and reopened");
            }
            _ = tokio::time::sleep_until(deadline.unwrap_or(never)) => break Stop::Duration,
            _ = poll.tick(), if merge.held() > 0 => {
                feeder.release(merge, Some(drain::monotonic_ns()))?;
            }
            _ = tick.tick() => {
                // Nor in a half-full batch: the analyzer sees them within a second.
                feeder.pipeline.flush()?;
                feeder.sync_pairings(tap)?;
                match netif::state(&opts.iface) {
                    netif::State::Up => {}
                    netif::State::Down => break Stop::Interface("went down".into()),
                    netif::State::Gone => break Stop::Interface("disappeared".into()),
                }
                if show && let Ok(c) = tap.counters() {
                    eprint!(
                        "\r{}{}   ",
                        counters_line(&opts.iface, &c, started.elapsed()),
                        monitor::active_line(active)
                    );
                }
                if let Some(m) = metrics
                    && let (Ok(counters), Ok(records_per_cpu)) = (tap.counters(), tap.records_per_cpu())
                {
                    m.publish_tap(TapSnapshot { counters, late_records: merge.late(), records_per_cpu });
                }
            }
        }
    };
    Ok(stop)
}

/// One line of counters, as shown while running and at exit.
pub fn counters_line(iface: &str, c: &Counters, elapsed: Duration) -> String {
    let mut line = format!(
        "{iface}: {:.0} s, {} frames, {} records, {} ring-buffer-full drops, {} parse failures",
        elapsed.as_secs_f64(),
        c.frames,
        c.records,
        c.ring_full,
        c.parse_failures
    );
    if c.summarized + c.deltas > 0 {
        line.push_str(&summary_counts(c));
    }
    line
}

/// Summary mode's counters, as appended to the counters lines.
pub fn summary_counts(c: &Counters) -> String {
    let captured = c.records + c.summarized;
    format!(
        ", {} summarized, {} deltas, {} ring bytes ({:.1} per frame)",
        c.summarized,
        c.deltas,
        c.ring_bytes(),
        if captured == 0 {
            0.0
        } else {
            c.ring_bytes() as f64 / captured as f64
        }
    )
}
