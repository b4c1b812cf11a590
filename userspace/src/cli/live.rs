//! `live` (the XDP tap) and `replay` (a capture sent out of an interface).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::print::outln;
use crate::live::{self, TapMode, XdpModeArg};
use crate::units::{self};
use crate::{Error, Result};

use super::args::{AnalysisArgs, DatasetArgs};

/// `live`.
#[derive(Args)]
pub(crate) struct LiveArgs {
    /// The interface receiving the mirrored traffic.
    #[arg(long, value_name = "IF")]
    pub(crate) iface: String,
    /// Directory for the tables and summary.json (created if missing).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: PathBuf,
    /// Stop after this long (e.g. 30s, 5m).
    #[arg(long, value_name = "DURATION", value_parser = units::positive_duration)]
    pub(crate) duration: Option<u64>,
    /// Stop after this many records (RoCE, CNP, PFC, PAUSE or malformed frames).
    #[arg(long, value_name = "N", value_parser = units::positive_count)]
    pub(crate) count: Option<u64>,
    /// native: driver XDP only; skb: generic XDP; auto: native where the driver supports it.
    #[arg(long, value_enum, default_value_t = XdpModeArg::Auto, value_name = "MODE")]
    pub(crate) xdp_mode: XdpModeArg,
    /// Drop the frames that were recorded (XDP_DROP) instead of passing them to the kernel stack.
    #[arg(long)]
    pub(crate) drop_after_capture: bool,
    /// records: one record per frame of interest; summary: per-flow counts in the kernel, records only for anomalies (retransmissions, gaps, NAKs, CNPs, PFC, …) — for rates records cannot keep up with.
    #[arg(long, value_enum, default_value_t = TapMode::Records, value_name = "MODE")]
    pub(crate) mode: TapMode,
    /// Summary mode: the longest an active flow's counts wait in the kernel (e.g. 10ms); also the timeline's resolution for counted frames (shorter: more deltas).
    #[arg(long, value_name = "DURATION", default_value = "10ms", value_parser = units::positive_duration)]
    pub(crate) flush_interval: u64,
    /// per-cpu: a ring buffer per CPU, each drained by its own thread and merged back in time order; shared: one ring all CPUs write to (stops scaling beyond one or two receiving CPUs).
    #[arg(long, value_enum, default_value_t = live::RingLayout::PerCpu, value_name = "LAYOUT")]
    pub(crate) rings: live::RingLayout,
    /// Each ring buffer between the XDP program and rocescope (a power of two, e.g. 64MiB): what absorbs a burst while rocescope is busy.
    /// [default: 64MiB]
    #[arg(long, value_name = "SIZE", value_parser = units::bytes)]
    pub(crate) ring_size: Option<u64>,
    /// Wake rocescope only once this much waits on the ring, and again per further SIZE while it lags (0: on every record that finds it idle); the rest is drained every 5 ms.
    /// [default: 1MiB]
    #[arg(long, value_name = "SIZE", value_parser = units::bytes)]
    pub(crate) wakeup: Option<u64>,
    /// Run rocescope's threads only on these CPUs (e.g. 2-3): keep them off the CPUs that take the mirror port's receive interrupts, where the XDP program runs.
    #[arg(long, value_name = "LIST")]
    pub(crate) cpus: Option<String>,
    #[command(flatten)]
    pub(crate) transports: super::args::TransportArgs,
    /// Serve Prometheus metrics (the text exposition format) on http://ADDR:PORT/metrics while running, e.g. 127.0.0.1:9464 or [::]:9464.
    #[arg(long, value_name = "ADDR:PORT")]
    pub(crate) metrics: Option<std::net::SocketAddr>,
    /// Evaluate the findings this often while running (wall time, e.g. 10s): each finding that starts, continues or ends goes to --findings, the dataset's findings table, the metrics and the status line.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = units::positive_duration)]
    pub(crate) report_interval: u64,
    /// Append each finding that starts, continues or ends to FILE as a JSON line (- for standard output); reopened on SIGHUP, never truncated.
    #[arg(long, value_name = "FILE")]
    pub(crate) findings: Option<String>,
    /// The streamed tables to write, comma-separated (default: all of packets, events, timeline, flows, findings; --dataset writes these, --out leaves out packets if it is not named). A long run on a fast port leaves out packets: a row per frame.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "LIST")]
    pub(crate) tables: Option<Vec<crate::tables::dataset::StreamedTable>>,
    #[command(flatten)]
    pub(crate) telemetry: super::args::TelemetryArgs,
    /// Frame times from the kernel's clock or the switch's ERSPAN III timestamps (docs/inputs.md,
    /// "Hardware time"; `sniffer` keeps the kernel's: a live tap is no sniffer capture); by default
    /// ERSPAN III time when the first record has it within 1 s.
    #[arg(long, value_enum, default_value_t = crate::sources::TimeChoice::Auto, value_name = "CLOCK")]
    pub(crate) time: crate::sources::TimeChoice,
    #[command(flatten)]
    pub(crate) analysis: AnalysisArgs,
    #[command(flatten)]
    pub(crate) dataset: DatasetArgs,
    #[command(flatten)]
    pub(crate) shards: super::args::ShardArgs,
}

/// `replay`.
#[derive(Args)]
pub(crate) struct ReplayArgs {
    /// An Ethernet pcap or pcapng file.
    #[arg(value_name = "CAPTURE")]
    pub(crate) capture: PathBuf,
    /// The interface to send on.
    #[arg(long, value_name = "IF")]
    pub(crate) iface: String,
    /// Frames per second (default: as fast as the interface takes them).
    #[arg(long, value_name = "N", value_parser = units::positive_count)]
    pub(crate) pps: Option<u64>,
    /// Only the frames captured on this pcapng interface (one tap of a multi-tap capture, as named in the `iface` column; a name that is not there gets the list): replayed whole, each frame comes once per tap that saw it, which looks like resends.
    #[arg(long, value_name = "NAME")]
    pub(crate) tap: Option<String>,
}

/// Every table `--tables` names.
const STREAMED: [crate::tables::dataset::StreamedTable; 5] = {
    use crate::tables::dataset::StreamedTable::*;
    [Packets, Events, Timeline, Flows, Findings]
};

/// `live`: tap a mirror port until stopped, then write every table.
pub(crate) fn live(args: LiveArgs) -> Result<ExitCode> {
    let LiveArgs {
        iface,
        out,
        duration,
        count,
        xdp_mode,
        drop_after_capture,
        mode,
        flush_interval,
        rings,
        ring_size,
        wakeup,
        cpus,
        transports,
        metrics,
        report_interval,
        findings,
        tables,
        telemetry,
        time,
        analysis,
        dataset,
        shards,
    } = args;
    // Every live option goes with several analyzers (docs/live.md, "Sharded analysis").
    let analyzers = shards.analyzers(&[])?;
    let ring = live::RingTuning::new(ring_size, wakeup)?;
    let opts = live::Options {
        iface,
        out: out.clone(),
        duration: duration.map(std::time::Duration::from_nanos),
        count,
        mode: xdp_mode,
        tap_mode: mode,
        flush_ns: Some(flush_interval),
        drop_after_capture,
        recognition: telemetry.recognition(&transports).map_err(Error::Usage)?,
        analyzer: analysis.config(),
        progress: true,
        ring,
        layout: rings,
        cpus: cpus
            .as_deref()
            .map(live::cpus::CpuList::parse)
            .transpose()?,
        records_seen: None,
        metrics,
        report_interval: std::time::Duration::from_nanos(report_interval),
        findings: findings.as_deref().map(live::monitor::FindingsTo::parse),
        time,
        packets: tables
            .as_ref()
            .is_none_or(|t| t.contains(&crate::tables::dataset::StreamedTable::Packets)),
        analyzers,
    };
    // Missing privileges are the likelier problem: say so first.
    live::tap::check_privileges()?;
    // The one tap is the interface: a typo fails before anything is attached.
    if let Some(unknown) = opts
        .analyzer
        .unknown_taps(std::slice::from_ref(&opts.iface))
    {
        return Err(crate::Error::Usage(unknown));
    }
    // The transports' and telemetry's places join it where they differ
    // from the defaults (as for captures), so default runs keep their id.
    let identity = format!(
        "live {} {:?} {}\n{}{}",
        opts.iface,
        opts.mode,
        opts.tap_mode.as_str(),
        opts.analyzer.identity(),
        crate::transport::identity(&opts.recognition)
    );
    let outcome = live::run_with(&opts, || {
        let writer = dataset.writer_with(identity.clone(), |o| {
            o.findings = true;
            if let Some(keep) = &tables {
                o.leave_out = STREAMED.into_iter().filter(|t| !keep.contains(t)).collect();
            }
        })?;
        Ok(writer.into_iter().collect())
    })?;
    let f = &outcome.facts;
    outln!(
        "{}: {}, {} ({} ring-buffer-full drops, {} parse failures), {}, {} → {} (stopped by {})",
        f.iface,
        crate::render::fmt_count(f.frames, "frame"),
        crate::render::fmt_count(outcome.records, "record"),
        f.ring_full_drops,
        f.parse_failures,
        crate::render::fmt_count(outcome.analysis.summary.totals.flows, "flow"),
        crate::render::fmt_count(outcome.analysis.summary.findings.len() as u64, "finding"),
        out.display(),
        f.stopped_by
    )?;
    if f.late_records > 0 {
        eprintln!(
            "rocescope: warning: {} records reached the analyzer after later ones (analysed out of order)",
            f.late_records
        );
    }
    if mode == TapMode::Summary {
        let c = live::Counters {
            records: f.records,
            summarized: f.summarized,
            deltas: f.deltas,
            ..live::Counters::default()
        };
        outln!("  summary mode{}", live::summary_counts(&c))?;
        if f.evicted_flows > 0 {
            eprintln!(
                "rocescope: warning: {} flows were evicted from the kernel's flow map ({} flows) and lost their unsent counts",
                f.evicted_flows,
                rocescope_common::live::FLOWS_MAX
            );
        }
    }
    for finding in &outcome.analysis.summary.findings {
        outln!("  [{}] {}", finding.severity, finding.title)?;
    }
    match outcome.stopped_by_error {
        Some(e) => Err(e),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// `replay`: send a capture's frames out of an interface.
pub(crate) fn replay(args: ReplayArgs) -> Result<ExitCode> {
    let ReplayArgs {
        capture,
        iface,
        pps,
        tap,
    } = args;
    let r = live::replay::replay(&capture, &iface, pps, tap.as_deref())?;
    for w in &r.warnings {
        eprintln!("rocescope: warning: {w}");
    }
    let rate = r.sent as f64 / r.elapsed.as_secs_f64().max(1e-9);
    outln!(
        "{} frames sent on {iface} in {:.3} s ({rate:.0} frames/s), {} skipped{}",
        r.sent,
        r.elapsed.as_secs_f64(),
        r.skipped,
        if r.other_taps > 0 {
            format!(", {} of other taps left out", r.other_taps)
        } else {
            String::new()
        }
    )?;
    Ok(ExitCode::SUCCESS)
}
