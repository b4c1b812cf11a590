//! `rocescope`: the command line over the library.
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
#[cfg(feature = "live")]
use rocescope::live::{self, TapMode, XdpModeArg};
use rocescope::offline::{self, Options};
use rocescope::units::{self, TapSpeed};
use rocescope::{Error, Result, analyze};

#[derive(Parser)]
#[command(
    name = "rocescope",
    version,
    about = "Why is a lossless RoCEv2 fabric slow? Ghost drops, PFC congestion trees and broken ECN, from what the wire saw."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Analyse captures and write every table (Parquet) and summary.json to --out
    /// and/or into a host/hour-partitioned dataset (--dataset).
    Analyze {
        #[command(flatten)]
        input: Input,
        /// Directory for packets/flows/events/pfc/timeline.parquet and summary.json (created if missing).
        #[arg(long, value_name = "DIR", required_unless_present = "dataset")]
        out: Option<PathBuf>,
        #[command(flatten)]
        dataset: DatasetArgs,
    },
    /// Analyse captures and print the diagnosis (no tables written).
    Report {
        #[command(flatten)]
        input: Input,
        /// Print summary.json (findings with their machine-readable `params`) and every
        /// flow's row as JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Wrap the text at this many columns [default: the terminal's width; not wrapped
        /// when stdout is not a terminal].
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(20..=10000))]
        width: Option<u16>,
        /// Also write a self-contained HTML report (findings, flows, inline SVG plots).
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
    /// Simulate a small RoCE fabric and write what its mirror ports capture, with ground truth.
    Synth(Box<SynthArgs>),
    /// NIC counters (ethtool -S, rdma statistic, sysfs): sample them, or diagnose from them alone.
    #[command(subcommand)]
    Counters(CountersCommand),
    /// Write the frames of one finding or flow to a pcapng for Wireshark (docs/wireshark.md).
    Extract {
        #[command(flatten)]
        input: Input,
        #[command(flatten)]
        select: ExtractWhat,
        /// The pcapng to write (replaced if it exists).
        #[arg(long, value_name = "FILE.pcapng")]
        out: PathBuf,
    },
    /// Compare two runs (captures or `analyze --out` directories): the before/after table of a fix.
    Diff(Box<DiffArgs>),
    #[cfg(feature = "live")]
    /// Tap a mirror port with an XDP program and write every table to --out when stopped (Ctrl-C, SIGTERM, --duration, --count).
    Live {
        /// The interface receiving the mirrored traffic.
        #[arg(long, value_name = "IF")]
        iface: String,
        /// Directory for the tables and summary.json (created if missing).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Stop after this long (e.g. 30s, 5m).
        #[arg(long, value_name = "DURATION", value_parser = units::positive_duration)]
        duration: Option<u64>,
        /// Stop after this many records (RoCE, CNP, PFC, PAUSE or malformed frames).
        #[arg(long, value_name = "N", value_parser = units::positive_count)]
        count: Option<u64>,
        /// native: driver XDP only; skb: generic XDP; auto: native where the driver supports it.
        #[arg(long, value_enum, default_value_t = XdpModeArg::Auto, value_name = "MODE")]
        xdp_mode: XdpModeArg,
        /// Drop the frames that were recorded (XDP_DROP) instead of passing them to the kernel stack.
        #[arg(long)]
        drop_after_capture: bool,
        /// records: one record per frame of interest; summary: per-flow counts in the kernel, records only for anomalies (retransmissions, gaps, NAKs, CNPs, PFC, …) — for rates records cannot keep up with.
        #[arg(long, value_enum, default_value_t = TapMode::Records, value_name = "MODE")]
        mode: TapMode,
        /// Summary mode: the longest an active flow's counts wait in the kernel (e.g. 10ms); also the timeline's resolution for counted frames (shorter: more deltas).
        #[arg(long, value_name = "DURATION", default_value = "10ms", value_parser = units::positive_duration)]
        flush_interval: u64,
        /// Ring buffer between the XDP program and rocescope (a power of two, e.g. 64MiB): what absorbs a burst while rocescope is busy.
        /// [default: 64MiB]
        #[arg(long, value_name = "SIZE", value_parser = units::bytes)]
        ring_size: Option<u64>,
        /// Wake rocescope only once this much waits on the ring, and again per further SIZE while it lags (0: on every record that finds it idle); the rest is drained every 5 ms.
        /// [default: 1MiB]
        #[arg(long, value_name = "SIZE", value_parser = units::bytes)]
        wakeup: Option<u64>,
        /// Run rocescope's threads only on these CPUs (e.g. 2-3): keep them off the CPUs that take the mirror port's receive interrupts, where the XDP program runs.
        #[arg(long, value_name = "LIST")]
        cpus: Option<String>,
        #[command(flatten)]
        analysis: AnalysisArgs,
        #[command(flatten)]
        dataset: DatasetArgs,
    },
    #[cfg(feature = "live")]
    /// Send a capture's frames out of an interface (AF_PACKET), e.g. into a veth pair to test `live`.
    Replay {
        /// An Ethernet pcap or pcapng file.
        #[arg(value_name = "CAPTURE")]
        capture: PathBuf,
        /// The interface to send on.
        #[arg(long, value_name = "IF")]
        iface: String,
        /// Frames per second (default: as fast as the interface takes them).
        #[arg(long, value_name = "N", value_parser = units::positive_count)]
        pps: Option<u64>,
        /// Only the frames captured on this pcapng interface (one tap of a multi-tap capture, as named in the `iface` column; a name that is not there gets the list): replayed whole, each frame comes once per tap that saw it, which looks like resends.
        #[arg(long, value_name = "NAME")]
        tap: Option<String>,
    },
    // A build without the `live` feature hides `live` and `replay` from the
    // help but still knows them, to say how to get them (not "unrecognized").
    #[cfg(not(feature = "live"))]
    #[command(name = "live", hide = true, disable_help_flag = true, about = NOT_BUILT)]
    LiveNotBuilt(NotBuilt),
    #[cfg(not(feature = "live"))]
    #[command(name = "replay", hide = true, disable_help_flag = true, about = NOT_BUILT)]
    ReplayNotBuilt(NotBuilt),
}

#[cfg(not(feature = "live"))]
const NOT_BUILT: &str = "Not in this build (built without the `live` feature): see docs/build.md";

// Whatever follows `live`/`replay` in a build without them.
#[cfg(not(feature = "live"))]
#[derive(Args)]
struct NotBuilt {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    _args: Vec<String>,
}

#[derive(Args)]
struct SynthArgs {
    /// The scenario to model.
    #[arg(value_name = "SCENARIO", value_parser = clap::builder::PossibleValuesParser::new(rocescope::synth::model::SCENARIOS))]
    scenario: String,
    /// Capture to write: .pcapng (one interface per tap) or .pcap (one tap).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Ground truth JSON [default: next to the capture, NAME.truth.json].
    #[arg(long, value_name = "FILE")]
    truth: Option<PathBuf>,
    /// Also write the counter series its NICs would have shown: ethtool -S / rdma statistic
    /// text, or counters.parquet when FILE ends in .parquet.
    #[arg(long, value_name = "FILE")]
    counters: Option<PathBuf>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Stop once the taps have recorded this many frames (without --duration,
    /// the scenario's own time limit is lifted: big captures for benchmarks).
    #[arg(long, value_name = "N", value_parser = units::positive_count)]
    packets: Option<u64>,
    /// Simulated time (e.g. 5ms) [default: the scenario's].
    #[arg(long, value_name = "DURATION", value_parser = units::positive_duration)]
    duration: Option<u64>,
    /// NIC minimum retransmission timeout (e.g. 40us, 1.05ms).
    #[arg(long, value_name = "DURATION", value_parser = units::positive_duration)]
    min_rto: Option<u64>,
    /// WRED/ECN: start marking at this queue depth (e.g. 180KB).
    #[arg(long, value_name = "BYTES", value_parser = units::bytes)]
    ecn_min: Option<u64>,
    /// WRED/ECN: mark everything above this depth (e.g. 800KB).
    #[arg(long, value_name = "BYTES", value_parser = units::bytes)]
    ecn_max: Option<u64>,
    /// WRED/ECN: marking probability at ecn-max (e.g. 0.1).
    #[arg(long, value_name = "P", value_parser = units::probability)]
    ecn_pmax: Option<f64>,
    /// PFC XOFF threshold per ingress port and priority (e.g. 2800KB).
    #[arg(long, value_name = "BYTES", value_parser = units::bytes)]
    pfc_xoff: Option<u64>,
    /// PFC XON threshold (e.g. 2200KB).
    #[arg(long, value_name = "BYTES", value_parser = units::bytes)]
    pfc_xon: Option<u64>,
    /// Speed of every link (e.g. 100G, 400G).
    #[arg(long, value_name = "SPEED", value_parser = units::link_speed)]
    link_speed: Option<u64>,
    /// Any other knob by its dotted path, e.g. nic.ack_every=4 or flows.0.messages=10 (repeatable);
    /// KEY=@FILE takes the value (JSON) from FILE.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Keep at most this many bytes of each frame.
    #[arg(long, default_value_t = 0)]
    snaplen: u32,
    /// Deliver the mirrored frames inside ERSPAN (type II or III) over GRE.
    #[arg(long, value_name = "TYPE", value_enum)]
    erspan: Option<ErspanArg>,
    /// Only these taps (index, repeatable); a .pcap needs exactly one.
    #[arg(long, value_name = "N")]
    tap: Vec<usize>,
    /// Write as a NIC's RDMA sniffer (tcpdump -i mlx5_N) records: UDP source port 4791 and a
    /// rewritten source MAC on every RoCE frame (no ICRC matches), frames cut at N bytes
    /// (default 256; 0: not cut) with the original length recorded as the cut one.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "256")]
    sniffer: Option<u32>,
}

/// `extract`: one finding or one flow.
#[derive(Args)]
#[group(required = true, multiple = false)]
struct ExtractWhat {
    /// A finding's id, as `report` and summary.json name it (e.g. ghost-retransmissions).
    #[arg(long, value_name = "ID")]
    finding: Option<String>,
    /// A flow_id, as in flows.parquet of the same captures.
    #[arg(long, value_name = "N")]
    flow: Option<u32>,
}

#[derive(Args)]
struct DiffArgs {
    /// The run before the fix: a capture, or a directory written by `analyze --out`.
    #[arg(value_name = "BEFORE")]
    before: PathBuf,
    /// The run after it.
    #[arg(value_name = "AFTER")]
    after: PathBuf,
    /// Print the comparison as JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Also write it as a self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Captures only: frames matching this tcpdump-syntax filter.
    #[arg(long, value_name = "EXPR")]
    filter: Option<String>,
    #[command(flatten)]
    analysis: AnalysisArgs,
}

/// `synth --erspan`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ErspanArg {
    #[value(alias = "2")]
    Ii,
    #[value(alias = "3")]
    Iii,
}

/// `analyze`/`live --dataset`: DIR/TABLE/host=NAME/date=YYYY-MM-DD/hour=H/part-<run>-<start>.parquet.
#[derive(Args)]
struct DatasetArgs {
    /// Also write the tables into this hive-partitioned dataset (a root per table; by host, UTC date and hour).
    #[arg(long, value_name = "DIR")]
    dataset: Option<PathBuf>,
    /// The host= partition [default: this machine's host name].
    #[arg(long, value_name = "NAME", requires = "dataset")]
    host: Option<String>,
    /// Start a new dataset file once a file spans this much capture time (e.g. 10m) [default: hourly].
    #[arg(long, value_name = "DURATION", requires = "dataset", value_parser = units::positive_duration)]
    rotate: Option<u64>,
    /// Start a new dataset file once a file holds about this much (e.g. 256MB).
    #[arg(
        long,
        value_name = "BYTES",
        default_value = "512MB",
        requires = "dataset",
        value_parser = units::bytes
    )]
    rotate_size: u64,
}

impl DatasetArgs {
    /// `identity`: what names the run in the dataset besides its start
    /// (docs/tables.md, "Dataset layout").
    fn writer(&self, identity: String) -> Result<Option<Box<dyn rocescope::pipeline::Output>>> {
        use rocescope::tables::dataset::{DatasetOptions, DatasetWriter, local_host_name};
        let Some(dir) = &self.dataset else {
            return Ok(None);
        };
        let host = self.host.clone().unwrap_or_else(local_host_name);
        let mut opts = DatasetOptions::new(dir, &host)?;
        opts.rotate_ns = self.rotate.unwrap_or(0);
        opts.rotate_bytes = self.rotate_size;
        opts.identity = identity;
        Ok(Some(Box::new(DatasetWriter::create(&opts)?)))
    }
}

#[derive(Args)]
struct Input {
    /// pcap or pcapng files (Ethernet, Linux cooked v1/v2, raw IP, BSD loopback; gzip, zstd or lz4
    /// compressed or not), directories of them, or - for standard input.
    #[arg(required = true, value_name = "CAPTURE")]
    captures: Vec<PathBuf>,
    #[command(flatten)]
    analysis: AnalysisArgs,
    /// Only frames matching this tcpdump-syntax filter (compiled by libpcap).
    #[arg(long, value_name = "EXPR")]
    filter: Option<String>,
    /// Counter snapshots of the same minutes (series text or counters.parquet): compared with the
    /// capture (capture-incomplete, counters-mismatch) and tabled in summary.json.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    counters: Vec<PathBuf>,
    /// 1: read, analyse and write on one thread; otherwise reading, analysis
    /// and table writing run on threads of their own (bounded queues between).
    #[arg(long, default_value_t = 0, value_name = "N")]
    threads: usize,
}

/// How records are analysed: shared by `analyze`, `report` and `live`.
#[derive(Args)]
struct AnalysisArgs {
    /// Link speed of the paused ports, to turn PFC quanta into time (e.g. 100G, 400G);
    /// TAP=SPEED sets one tap's (interface name as in the tables), repeatable.
    #[arg(long, default_value = "100G", value_name = "[TAP=]SPEED", value_parser = units::tap_link_speed)]
    link_speed: Vec<TapSpeed>,
    /// A frame recorded again at the same tap within this time is a mirror copy, not a
    /// retransmission (0 turns the check off).
    #[arg(long, default_value = "10us", value_name = "DURATION", value_parser = units::duration_or_off)]
    dup_window: u64,
    /// Frames of one transmission seen at several taps lie within this time of each other
    /// (cross-tap matching; memory holds one window of frames).
    #[arg(long, default_value = "2ms", value_name = "DURATION", value_parser = units::positive_duration)]
    match_window: u64,
    /// TAP's clock minus the other taps' (e.g. node1=+48us), instead of the offset estimated
    /// from traffic both ways; repeatable.
    #[arg(long, value_name = "TAP=±DURATION", value_parser = units::tap_clock_offset, allow_hyphen_values = true)]
    clock_offset: Vec<units::TapOffset>,
    /// Width of a timeline bin (e.g. 100us, 1ms).
    #[arg(long, default_value = "100us", value_name = "DURATION", value_parser = units::positive_duration)]
    bin: u64,
    /// A continuous pause longer than this is a PFC storm (e.g. 200ms, SONiC's watchdog default).
    #[arg(long, default_value = "200ms", value_name = "DURATION", value_parser = units::positive_duration)]
    storm: u64,
    /// The same as --storm; a bare number is milliseconds.
    #[arg(long, value_name = "MS", value_parser = units::milliseconds, conflicts_with = "storm")]
    storm_ms: Option<u64>,
    /// DSCP to priority for untagged frames, e.g. "26=3,48=6"; DSCPs not listed map to DSCP/8.
    #[arg(long, value_name = "MAP", value_parser = parse_dscp_map)]
    dscp_map: Option<[u8; 64]>,
    /// Interfaces that are parallel paths (an ECMP group), by name as in the tables, e.g.
    /// "leaf0-spine0,leaf0-spine1": their load balance is judged; repeatable.
    #[arg(long = "ecmp-group", value_name = "IF,IF…")]
    ecmp_group: Vec<analyze::EcmpGroup>,
}

impl AnalysisArgs {
    fn config(&self) -> analyze::Config {
        let mut link_speed_bps = 100_000_000_000;
        let mut tap_link_speed_bps = Vec::new();
        for item in &self.link_speed {
            match &item.tap {
                Some(tap) => tap_link_speed_bps.push((tap.clone(), item.bps)),
                None => link_speed_bps = item.bps,
            }
        }
        analyze::Config {
            link_speed_bps,
            bin_ns: self.bin,
            storm_ns: self.storm_ms.unwrap_or(self.storm),
            dscp_to_priority: self.dscp_map,
            tap_link_speed_bps,
            dup_window_ns: self.dup_window,
            ecmp_groups: self.ecmp_group.clone(),
            match_window_ns: self.match_window,
            clock_offsets: self
                .clock_offset
                .iter()
                .map(|o| (o.tap.clone(), o.ns))
                .collect(),
        }
    }
}

impl Input {
    fn options(&self) -> Result<Options> {
        Ok(Options {
            analyzer: self.analysis.config(),
            filter: self.filter.clone(),
            progress: true,
            threads: rocescope::pipeline::Threads::from_count(self.threads),
            // The process ends with the run: its reader may yield for good.
            source_yields: true,
        })
    }
}

/// `26=3,48=6` → a 64-entry DSCP → priority table (unlisted: DSCP / 8).
fn parse_dscp_map(text: &str) -> std::result::Result<[u8; 64], String> {
    let mut map: [u8; 64] = std::array::from_fn(|dscp| (dscp / 8) as u8);
    let bad = |item: &str| {
        format!(
            "entry {item:?}: write DSCP=PRIORITY pairs separated by commas, DSCP 0-63, priority 0-7 (e.g. 26=3,48=6)"
        )
    };
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (d, p) = item.split_once('=').ok_or_else(|| bad(item))?;
        let d: usize = d.trim().parse().map_err(|_| bad(item))?;
        let p: u8 = p.trim().parse().map_err(|_| bad(item))?;
        if d > 63 || p > 7 {
            return Err(bad(item));
        }
        map[d] = p;
    }
    Ok(map)
}

fn main() -> ExitCode {
    // Before anything else: may replace this process with itself.
    rocescope::heap::reexec_with_huge_pages();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("rocescope: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Analyze {
            input,
            out,
            dataset,
        } => {
            let opts = input.options()?;
            if let Some(out) = &out {
                std::fs::create_dir_all(out).map_err(|e| Error::Write {
                    path: out.clone(),
                    detail: format!("cannot create the output directory: {e}"),
                })?;
            }
            let identity = rocescope::tables::dataset::capture_identity(
                &input.captures,
                &format!("{:?} {:?}", opts.analyzer, opts.filter),
            );
            let extra = dataset.writer(identity)?.into_iter().collect();
            let counters = load_counters(&input.counters)?;
            let mut outcome = offline::run_with(&input.captures, &opts, out.as_deref(), extra)?;
            if let Some(loaded) = &counters {
                let r = rocescope::counters::reconcile_files(&mut outcome.analysis, loaded);
                if let Some(out) = &out {
                    add_to_summary_file(
                        &out.join("summary.json"),
                        &r,
                        &outcome.analysis.summary.findings,
                    )?;
                }
            }
            let to = [out.as_deref(), dataset.dataset.as_deref()]
                .into_iter()
                .flatten()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" and ");
            print_warnings(&outcome);
            println!(
                "{}; {}, {} → {}",
                analyze::frames_line(outcome.frames_read, &outcome.analysis.summary.frames),
                analyze::fmt_count(outcome.analysis.flows.len() as u64, "flow"),
                analyze::fmt_count(outcome.analysis.summary.findings.len() as u64, "finding"),
                to
            );
            for f in &outcome.analysis.summary.findings {
                println!("  [{}] {}", f.severity, f.title);
            }
            Ok(exit_code(&outcome))
        }
        Command::Report {
            input,
            json,
            width,
            html,
        } => {
            let opts = input.options()?;
            let counters = load_counters(&input.counters)?;
            let extra: Vec<Box<dyn rocescope::pipeline::Output>> = match &html {
                Some(path) => vec![Box::new(
                    rocescope::html::HtmlReport::new(path, &opts.analyzer).with_counters(
                        counters
                            .as_ref()
                            .map(|c| c.series.clone())
                            .unwrap_or_default(),
                    ),
                )],
                None => Vec::new(),
            };
            let mut outcome = offline::run_with(&input.captures, &opts, None, extra)?;
            let recon = counters
                .as_ref()
                .map(|c| rocescope::counters::reconcile_files(&mut outcome.analysis, c));
            if let Some(path) = &html {
                eprintln!("rocescope: HTML report → {}", path.display());
            }
            print_warnings(&outcome);
            if json {
                let mut summary = analyze::render_json(&outcome.analysis);
                if let Some(r) = &recon {
                    r.add_to_json(&mut summary);
                }
                let text = serde_json::to_string_pretty(&summary)
                    .map_err(|e| Error::Usage(format!("cannot print the summary: {e}")))?;
                println!("{text}");
            } else {
                let width = width.map(usize::from).or_else(terminal_width);
                print!(
                    "{}",
                    analyze::render_text(&outcome.analysis, outcome.frames_read, width)
                );
                if let Some(r) = &recon {
                    print!("{}", r.render_text());
                }
            }
            Ok(exit_code(&outcome))
        }
        Command::Synth(args) => synth(*args),
        Command::Counters(c) => counters(c),
        Command::Extract { input, select, out } => {
            use rocescope::wireshark::{self, Selection};
            // clap requires exactly one of the two.
            let what = match (select.finding, select.flow) {
                (Some(id), _) => Selection::Finding(id),
                (None, n) => Selection::Flow(n.unwrap_or_default()),
            };
            let mut opts = input.options()?;
            opts.source_yields = false;
            let x = wireshark::extract(&input.captures, &opts, &what, &out)?;
            let count = |n: usize, one: &str, many: &str| match n {
                1 => format!("1 {one}"),
                n => format!("{n} {many}"),
            };
            let of = match &what {
                Selection::Flow(n) => format!("flow {n}"),
                Selection::Finding(id) => {
                    format!("finding {id} ({})", count(x.flows.len(), "flow", "flows"))
                }
            };
            println!(
                "{}: {} of {of} from {} ({})",
                out.display(),
                count(x.frames as usize, "frame", "frames"),
                count(x.interfaces.len(), "interface", "interfaces"),
                x.interfaces.join(", ")
            );
            println!(
                "  display filter (for the original captures): {}",
                x.display_filter
            );
            println!(
                "  decode as: {}",
                x.decode_as
                    .iter()
                    .map(|d| format!("-d {d}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Diff(args) => {
            let opts = Options {
                analyzer: args.analysis.config(),
                filter: args.filter.clone(),
                progress: true,
                threads: rocescope::pipeline::Threads::default(),
                source_yields: false,
            };
            let d = rocescope::diff::Diff::of(&args.before, &args.after, &opts)?;
            if let Some(path) = &args.html {
                rocescope::diff::write_html(&d, path)?;
                eprintln!("rocescope: HTML diff → {}", path.display());
            }
            print_json_or_text(args.json, &d, "diff", || d.render_text())?;
            Ok(ExitCode::SUCCESS)
        }
        #[cfg(feature = "live")]
        Command::Live {
            iface,
            out,
            duration,
            count,
            xdp_mode,
            drop_after_capture,
            mode,
            flush_interval,
            ring_size,
            wakeup,
            cpus,
            analysis,
            dataset,
        } => {
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
                analyzer: analysis.config(),
                progress: true,
                ring,
                cpus: cpus
                    .as_deref()
                    .map(live::cpus::CpuList::parse)
                    .transpose()?,
                records_seen: None,
            };
            // Missing privileges are the likelier problem: say so first.
            live::tap::check_privileges()?;
            let identity = format!(
                "live {} {:?} {:?} {:?}",
                opts.iface, opts.mode, opts.tap_mode, opts.analyzer
            );
            let outcome = live::run_with(&opts, || {
                Ok(dataset.writer(identity.clone())?.into_iter().collect())
            })?;
            let f = &outcome.facts;
            println!(
                "{}: {}, {} ({} ring-buffer-full drops, {} parse failures), {}, {} → {} (stopped by {})",
                f.iface,
                analyze::fmt_count(f.frames, "frame"),
                analyze::fmt_count(outcome.records, "record"),
                f.ring_full_drops,
                f.parse_failures,
                analyze::fmt_count(outcome.analysis.flows.len() as u64, "flow"),
                analyze::fmt_count(outcome.analysis.summary.findings.len() as u64, "finding"),
                out.display(),
                f.stopped_by
            );
            if mode == TapMode::Summary {
                let c = live::Counters {
                    records: f.records,
                    summarized: f.summarized,
                    deltas: f.deltas,
                    ..live::Counters::default()
                };
                println!("  summary mode{}", live::summary_counts(&c));
                if f.evicted_flows > 0 {
                    eprintln!(
                        "rocescope: warning: {} flows were evicted from the kernel's flow map ({} flows) and lost their unsent counts",
                        f.evicted_flows,
                        rocescope_common::live::FLOWS_MAX
                    );
                }
            }
            for finding in &outcome.analysis.summary.findings {
                println!("  [{}] {}", finding.severity, finding.title);
            }
            match outcome.stopped_by_error {
                Some(e) => Err(e),
                None => Ok(ExitCode::SUCCESS),
            }
        }
        #[cfg(not(feature = "live"))]
        Command::LiveNotBuilt(_) => Err(not_built("live")),
        #[cfg(not(feature = "live"))]
        Command::ReplayNotBuilt(_) => Err(not_built("replay")),
        #[cfg(feature = "live")]
        Command::Replay {
            capture,
            iface,
            pps,
            tap,
        } => {
            let r = live::replay::replay(&capture, &iface, pps, tap.as_deref())?;
            for w in &r.warnings {
                eprintln!("rocescope: warning: {w}");
            }
            let rate = r.sent as f64 / r.elapsed.as_secs_f64().max(1e-9);
            println!(
                "{} frames sent on {iface} in {:.3} s ({rate:.0} frames/s), {} skipped{}",
                r.sent,
                r.elapsed.as_secs_f64(),
                r.skipped,
                if r.other_taps > 0 {
                    format!(", {} of other taps left out", r.other_taps)
                } else {
                    String::new()
                }
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

#[cfg(not(feature = "live"))]
fn not_built(command: &str) -> Error {
    Error::Usage(format!(
        "`{command}` is not in this build: it was built without the `live` feature (offline analysis only); \
         the live tap and replay need a default build, which needs nightly Rust with rust-src and bpf-linker \
         (cargo install --path userspace; see docs/build.md)"
    ))
}

fn synth(a: SynthArgs) -> Result<ExitCode> {
    use rocescope::synth::ErspanVersion;
    use rocescope::synth::model::{self, Config, SCENARIOS, Truth, bridge};

    let mut cfg = Config::preset(&a.scenario).ok_or_else(|| {
        Error::Usage(format!(
            "unknown scenario {:?}; known: {}",
            a.scenario,
            SCENARIOS.join(", ")
        ))
    })?;
    let mut knobs: Vec<(String, String)> = vec![("seed".into(), a.seed.to_string())];
    let mut knob = |key: &str, value: Option<u64>| {
        if let Some(v) = value {
            knobs.push((key.into(), v.to_string()));
        }
    };
    knob("duration_ns", a.duration);
    knob("nic.min_rto_ns", a.min_rto);
    knob("switch.ecn_min", a.ecn_min);
    knob("switch.ecn_max", a.ecn_max);
    knob("switch.pfc_xoff", a.pfc_xoff);
    knob("switch.pfc_xon", a.pfc_xon);
    if let Some(p) = a.ecn_pmax {
        knobs.push(("switch.ecn_pmax".into(), p.to_string()));
    }
    if let Some(bps) = a.link_speed {
        knobs.push(("link_gbps".into(), (bps as f64 / 1e9).to_string()));
    }
    if let Some(n) = a.packets {
        knobs.push(("max_frames".into(), n.to_string()));
        if a.duration.is_none() {
            knobs.push(("duration_ns".into(), u64::MAX.to_string()));
        }
    }
    for item in &a.set {
        let (k, v) = item.split_once('=').ok_or_else(|| {
            Error::Usage(format!(
                "--set {item:?}: write KEY=VALUE, e.g. nic.ack_every=4"
            ))
        })?;
        // KEY=@FILE: the value is the file's contents (e.g. a long flows list).
        let v = match v.trim().strip_prefix('@') {
            Some(file) => std::fs::read_to_string(file)
                .map_err(|e| Error::Usage(format!("--set {k}=@{file}: cannot read {file}: {e}")))?,
            None => v.trim().to_string(),
        };
        knobs.push((k.trim().into(), v));
    }
    for (k, v) in &knobs {
        cfg.set(k, v)
            .map_err(|e| Error::Usage(format!("synth {}: {e}", a.scenario)))?;
    }
    let erspan = a.erspan.map(|e| match e {
        ErspanArg::Ii => ErspanVersion::II,
        ErspanArg::Iii => ErspanVersion::III,
    });

    let run =
        model::simulate(&cfg).map_err(|e| Error::Usage(format!("synth {}: {e}", a.scenario)))?;
    let opts = bridge::CaptureOptions {
        snaplen: a.snaplen,
        erspan,
        taps: (!a.tap.is_empty()).then(|| a.tap.clone()),
        sniffer: a.sniffer,
    };
    let truth = Truth::of_capture(&run, &opts);
    let frames = bridge::write_capture(&run, &a.out, &opts)?;
    let truth_path = a.truth.unwrap_or_else(|| {
        let stem = a
            .out
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        a.out.with_file_name(format!("{stem}.truth.json"))
    });
    rocescope::tables::write_json(&truth_path, &truth)?;
    if let Some(path) = &a.counters {
        let snaps = rocescope::synth::counters::snapshots(&run, &cfg);
        if path.extension().is_some_and(|e| e == "parquet") {
            rocescope::counters::collect::write_file(path, &snaps)?;
        } else {
            let text = rocescope::counters::parse::render_series(&snaps);
            rocescope::tables::write_text(path, &text)?;
        }
    }
    let written: Vec<&str> = truth
        .capture
        .taps
        .iter()
        .map(|&t| run.taps[t].name.as_str())
        .collect();
    println!(
        "{}: {frames} frames from {} taps ({}), truth in {}",
        a.out.display(),
        written.len(),
        written.join(", "),
        truth_path.display()
    );
    Ok(ExitCode::SUCCESS)
}

#[derive(Subcommand)]
enum CountersCommand {
    /// Sample a host's counters every --interval and write counters.parquet (Ctrl-C or --count stops it).
    Collect {
        /// The network interface (ethtool -S IF, /sys/class/net/IF/statistics).
        #[arg(long, value_name = "IF")]
        iface: String,
        /// The RDMA device and port on it, e.g. mlx5_0 or mlx5_0/2 [port: 1].
        #[arg(long, value_name = "DEV[/PORT]", value_parser = parse_rdma_dev)]
        rdma_dev: Option<(String, u32)>,
        /// Time between snapshots (e.g. 1s, 500ms, 1m).
        #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_interval)]
        interval: std::time::Duration,
        /// The Parquet file to write; an existing one is appended to.
        #[arg(
            long,
            value_name = "FILE",
            required_unless_present = "dataset",
            conflicts_with = "dataset"
        )]
        out: Option<PathBuf>,
        /// Write DIR/host=NAME/hour=YYYY-MM-DDTHH/counters-<start>.parquet instead: a new file each UTC hour.
        #[arg(long, value_name = "DIR")]
        dataset: Option<PathBuf>,
        /// With --dataset: also start a new file once a file spans this long (e.g. 10m).
        #[arg(long, value_name = "DURATION", requires = "dataset", value_parser = parse_interval)]
        rotate: Option<std::time::Duration>,
        /// Stop after this many snapshots.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        count: Option<u64>,
        /// The host column [default: this machine's host name].
        #[arg(long, value_name = "NAME")]
        host: Option<String>,
        /// Where sysfs is mounted (a copy of it for tests).
        #[arg(long, value_name = "DIR", default_value = "/sys")]
        sysfs_root: PathBuf,
        /// The ethtool program, run as PROG -S IF.
        #[arg(long, value_name = "PROG", default_value = "ethtool")]
        ethtool_cmd: String,
        /// Do not run ethtool (sysfs counters only).
        #[arg(long)]
        no_ethtool: bool,
    },
    /// Diagnose from counters alone: ghost-drop signature, real loss, PFC storm, broken ECN, link corruption.
    Report {
        /// Snapshot series (`# ts=… host=… iface=… device=… port=…` then ethtool -S / rdma statistic
        /// output) or counters.parquet files.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Print the report as JSON (endpoints, deltas, findings, warnings).
        #[arg(long)]
        json: bool,
    },
}

fn parse_interval(text: &str) -> std::result::Result<std::time::Duration, String> {
    units::positive_duration(text).map(std::time::Duration::from_nanos)
}

/// `mlx5_0` or `mlx5_0/2`.
fn parse_rdma_dev(text: &str) -> std::result::Result<(String, u32), String> {
    let (dev, port) = match text.split_once('/') {
        Some((d, p)) => (
            d,
            p.parse::<u32>()
                .map_err(|_| format!("{text:?}: the port after / is a number, e.g. mlx5_0/1"))?,
        ),
        None => (text, 1),
    };
    if dev.is_empty() || dev.contains(['/', '.']) {
        return Err(format!("{text:?}: write DEV or DEV/PORT, e.g. mlx5_0/1"));
    }
    Ok((dev.to_string(), port))
}

fn counters(c: CountersCommand) -> Result<ExitCode> {
    use rocescope::counters::{self, collect};
    match c {
        CountersCommand::Collect {
            iface,
            rdma_dev,
            interval,
            out,
            dataset,
            rotate,
            count,
            host,
            sysfs_root,
            ethtool_cmd,
            no_ethtool,
        } => {
            let opts = collect::Options {
                host: host.unwrap_or_else(rocescope::tables::dataset::local_host_name),
                iface,
                rdma: rdma_dev,
                interval,
                count,
                out: match (out, dataset) {
                    (Some(file), _) => collect::Output::File(file),
                    (None, Some(dir)) => collect::Output::Dataset {
                        dir,
                        rotate_ns: rotate.map_or(0, |r| r.as_nanos() as u64),
                    },
                    (None, None) => {
                        return Err(Error::Usage(
                            "counters collect: give --out FILE or --dataset DIR".into(),
                        ));
                    }
                },
                sysfs: sysfs_root,
                ethtool: (!no_ethtool).then_some(ethtool_cmd),
            };
            let o = collect::run(&opts)?;
            let files: Vec<String> = o.files.iter().map(|f| f.display().to_string()).collect();
            println!(
                "{}: {} snapshots, {} rows{} (stopped by {})",
                files.join(", "),
                o.snapshots,
                o.rows,
                if o.kept_rows > 0 {
                    format!(" appended to {} already there", o.kept_rows)
                } else {
                    String::new()
                },
                o.stopped_by
            );
            Ok(ExitCode::SUCCESS)
        }
        CountersCommand::Report { files, json } => {
            let loaded = counters::load(&files)?;
            for w in &loaded.warnings {
                eprintln!("rocescope: warning: {w}");
            }
            let report = counters::Report::new(&loaded);
            print_json_or_text(json, &report, "report", || report.render_text())?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `--counters`: read before the captures, so a bad file fails at once.
fn load_counters(files: &[PathBuf]) -> Result<Option<rocescope::counters::Loaded>> {
    if files.is_empty() {
        return Ok(None);
    }
    let loaded = rocescope::counters::load(files)?;
    for w in &loaded.warnings {
        eprintln!("rocescope: warning: {w}");
    }
    Ok(Some(loaded))
}

/// summary.json gets every finding (the capture's and the
/// reconciliation's, in severity order) and the comparison table.
fn add_to_summary_file(
    path: &std::path::Path,
    r: &rocescope::counters::reconcile::Reconciliation,
    findings: &[analyze::Finding],
) -> Result<()> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::Write {
        path: path.to_path_buf(),
        detail: format!("cannot read back to add the counters: {e}"),
    })?;
    let mut summary: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::Write {
        path: path.to_path_buf(),
        detail: format!("cannot read back to add the counters: {e}"),
    })?;
    if let Some(obj) = summary.as_object_mut() {
        obj.insert(
            "findings".into(),
            serde_json::to_value(findings).unwrap_or_default(),
        );
    }
    r.add_to_json(&mut summary);
    rocescope::tables::write_json(path, &summary)
}

/// Prints `value` as JSON with `json`, else `text()`.
fn print_json_or_text(
    json: bool,
    value: &impl serde::Serialize,
    what: &str,
    text: impl FnOnce() -> String,
) -> Result<()> {
    if json {
        let text = serde_json::to_string_pretty(value)
            .map_err(|e| Error::Usage(format!("cannot print the {what}: {e}")))?;
        println!("{text}");
    } else {
        print!("{}", text());
    }
    Ok(())
}

/// The terminal's width when stdout is one; `None` (no wrapping) for a
/// pipe or a file, where the reader's tools do their own.
fn terminal_width() -> Option<usize> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    console::Term::stdout()
        .size_checked()
        .map(|(_, cols)| usize::from(cols))
}

fn print_warnings(outcome: &offline::Outcome) {
    for w in &outcome.warnings {
        eprintln!("rocescope: warning: {w}");
    }
    for n in &outcome.notes {
        eprintln!("rocescope: note: {n}");
    }
}

/// A run stopped by a read error, or one of which nothing could be
/// decoded, still wrote what it had, but fails.
fn exit_code(outcome: &offline::Outcome) -> ExitCode {
    match outcome.failure() {
        Some(e) => {
            eprintln!("rocescope: error: {e}");
            ExitCode::FAILURE
        }
        None => ExitCode::SUCCESS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dscp_map_parses_and_defaults() {
        let m = parse_dscp_map("26=3, 48=6").unwrap();
        assert_eq!(m[26], 3);
        assert_eq!(m[48], 6);
        assert_eq!(m[46], 5);
        assert!(parse_dscp_map("64=1").is_err());
        assert!(parse_dscp_map("26:3").is_err());
    }

    /// A build without the `live` feature leaves `live` and `replay` out of
    /// the help, and typed anyway they name the feature; a default build
    /// lists and parses them.
    #[test]
    fn live_and_replay_need_the_live_feature() {
        use clap::CommandFactory;
        let help = Cli::command().render_help().to_string();
        for name in ["live", "replay"] {
            let listed = help
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{name} ")));
            assert_eq!(
                listed,
                cfg!(feature = "live"),
                "{name} in the help:\n{help}"
            );
        }
        let cli = Cli::try_parse_from(["rocescope", "replay", "x.pcap", "--iface", "lo"]).unwrap();
        #[cfg(feature = "live")]
        assert!(matches!(cli.command, Command::Replay { .. }));
        #[cfg(not(feature = "live"))]
        {
            let e = run(cli).err().unwrap().to_string();
            assert!(e.contains("`replay` is not in this build"), "{e}");
            assert!(e.contains("without the `live` feature"), "{e}");
        }
    }
}
