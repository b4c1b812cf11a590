//! `synth`: a scenario of the fabric model to a capture and its ground truth.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use rocescope_common::wire::TransportId;

use super::print::outln;
use crate::units::{self};
use crate::{Error, Result};

#[derive(Args)]
pub(crate) struct SynthArgs {
    /// The scenario to model.
    #[arg(value_name = "SCENARIO", value_parser = clap::builder::PossibleValuesParser::new(crate::synth::model::SCENARIOS.iter().copied()))]
    pub(crate) scenario: String,
    /// Capture to write: .pcapng (one interface per tap) or .pcap (one tap).
    #[arg(long, value_name = "FILE")]
    pub(crate) out: PathBuf,
    /// Ground truth JSON [default: next to the capture, NAME.truth.json].
    #[arg(long, value_name = "FILE")]
    pub(crate) truth: Option<PathBuf>,
    /// Also write the counter series its NICs would have shown: ethtool -S / rdma statistic
    /// text, or counters.parquet when FILE ends in .parquet.
    #[arg(long, value_name = "FILE")]
    pub(crate) counters: Option<PathBuf>,
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Stop once the taps have recorded this many frames (without --duration,
    /// the scenario's own time limit is lifted: big captures for benchmarks).
    #[arg(long, value_name = "N", value_parser = units::positive_count)]
    pub(crate) packets: Option<u64>,
    /// Simulated time (e.g. 5ms) [default: the scenario's].
    #[arg(long, value_name = "DURATION", value_parser = units::positive_duration)]
    pub(crate) duration: Option<u64>,
    /// NIC minimum retransmission timeout (e.g. 40us, 1.05ms).
    #[arg(long, value_name = "DURATION", value_parser = units::positive_duration)]
    pub(crate) min_rto: Option<u64>,
    /// WRED/ECN: start marking at this queue depth (e.g. 180KB).
    #[arg(long, value_name = "BYTES", value_parser = units::bytes)]
    pub(crate) ecn_min: Option<u64>,
    /// WRED/ECN: mark everything above this depth (e.g. 800KB).
    #[arg(long, value_name = "BYTES", value_parser = units::bytes)]
    pub(crate) ecn_max: Option<u64>,
    /// WRED/ECN: marking probability at ecn-max (e.g. 0.1).
    #[arg(long, value_name = "P", value_parser = units::probability)]
    pub(crate) ecn_pmax: Option<f64>,
    /// PFC XOFF threshold per ingress port and priority (e.g. 2800KB).
    #[arg(long, value_name = "BYTES", value_parser = units::bytes)]
    pub(crate) pfc_xoff: Option<u64>,
    /// PFC XON threshold (e.g. 2200KB).
    #[arg(long, value_name = "BYTES", value_parser = units::bytes)]
    pub(crate) pfc_xon: Option<u64>,
    /// Speed of every link (e.g. 100G, 400G).
    #[arg(long, value_name = "SPEED", value_parser = units::link_speed)]
    pub(crate) link_speed: Option<u64>,
    /// Any other knob by its dotted path, e.g. nic.ack_every=4 or flows.0.messages=10 (repeatable);
    /// KEY=@FILE takes the value (JSON) from FILE.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub(crate) set: Vec<String>,
    /// Keep at most this many bytes of each frame.
    #[arg(long, default_value_t = 0)]
    pub(crate) snaplen: u32,
    /// Deliver the mirrored frames inside ERSPAN (type II or III) over GRE.
    #[arg(long, value_name = "TYPE", value_enum)]
    pub(crate) erspan: Option<ErspanArg>,
    /// ERSPAN III: the units the switch stamps the model's time in (IEEE 1588 nanoseconds: the
    /// capture's own times, to the nanosecond).
    #[arg(long, value_name = "UNITS", value_enum, default_value_t = ErspanGranularity::Ieee1588, requires = "erspan")]
    pub(crate) erspan_granularity: ErspanGranularity,
    /// ERSPAN III: add the platform subheader with the timestamp's upper word (platform id 3;
    /// the seconds, id 5, for IEEE 1588).
    #[arg(long, requires = "erspan")]
    pub(crate) erspan_upper: bool,
    /// Only these taps (index, repeatable); a .pcap needs exactly one.
    #[arg(long, value_name = "N")]
    pub(crate) tap: Vec<usize>,
    /// Write as a NIC's RDMA sniffer (tcpdump -i mlx5_N) records: UDP source port 4791 and a
    /// rewritten source MAC on every RoCE frame (no ICRC matches), frames cut at N bytes
    /// (default 256; 0: not cut) with the original length recorded as the cut one.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "256")]
    pub(crate) sniffer: Option<u32>,
    /// The switches export their queues' occupancy and hop latency for each RoCE request:
    /// postcards (default) sends a collector a Telemetry Report v2.0 for each they forward and
    /// each they drop (UDP port 32766, on the capture's own `collector` interface); int-md (INT
    /// v2.1 over UDP, marked by UDP port 32767: analyse with --int-port 32767) and ifa (IFA 2.0,
    /// IP protocol 131) put the hops into the packets between switches. The truth lists every
    /// report and hop.
    #[arg(long, value_enum, value_name = "MODE", num_args = 0..=1, default_missing_value = "postcards")]
    pub(crate) telemetry: Option<crate::synth::model::postcards::TelemetryMode>,
}

/// `synth --erspan`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ErspanArg {
    #[value(alias = "2")]
    Ii,
    #[value(alias = "3")]
    Iii,
}

/// `synth --erspan-granularity`: ERSPAN III's Gra values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ErspanGranularity {
    #[value(name = "100us")]
    Us100,
    #[value(name = "100ns")]
    Ns100,
    #[value(name = "ieee1588")]
    Ieee1588,
}

pub(crate) fn synth(a: SynthArgs) -> Result<ExitCode> {
    use crate::synth::ErspanVersion;
    use crate::synth::model::{self, SCENARIOS, bridge};

    let mut cfg = model::preset(&a.scenario).ok_or_else(|| {
        Error::Usage(format!(
            "unknown scenario {:?}; known: {}",
            a.scenario,
            SCENARIOS.join(", ")
        ))
    })?;
    // The options' typed values go straight into the configuration; only
    // --set's dotted paths go through `model::set` (`Config::set`), after them.
    cfg.seed = a.seed;
    if let Some(ns) = a.duration {
        cfg.duration_ns = ns;
    }
    if let Some(ns) = a.min_rto {
        cfg.nic.min_rto_ns = ns;
    }
    let switch = &mut cfg.switch;
    for (value, field) in [
        (a.ecn_min, &mut switch.ecn_min),
        (a.ecn_max, &mut switch.ecn_max),
        (a.pfc_xoff, &mut switch.pfc_xoff),
        (a.pfc_xon, &mut switch.pfc_xon),
    ] {
        if let Some(v) = value {
            *field = v;
        }
    }
    if let Some(p) = a.ecn_pmax {
        switch.ecn_pmax = p;
    }
    if let Some(mode) = a.telemetry {
        cfg.switch.telemetry = Some(model::postcards::TelemetryCfg {
            mode,
            ..model::postcards::TelemetryCfg::default()
        });
    }
    if let Some(bps) = a.link_speed {
        cfg.link_gbps = bps as f64 / 1e9;
    }
    if let Some(n) = a.packets {
        cfg.max_frames = Some(usize::try_from(n).unwrap_or(usize::MAX));
        if a.duration.is_none() {
            cfg.duration_ns = u64::MAX;
        }
    }
    // Every --set read (and its syntax checked) before any is applied.
    let mut knobs: Vec<(String, String)> = Vec::with_capacity(a.set.len());
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
        model::set(&mut cfg, k, v)
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
        erspan_time: bridge::ErspanTime {
            granularity: match a.erspan_granularity {
                ErspanGranularity::Us100 => rocescope_common::hw_time::GRA_100_US,
                ErspanGranularity::Ns100 => rocescope_common::hw_time::GRA_100_NS,
                ErspanGranularity::Ieee1588 => rocescope_common::hw_time::GRA_IEEE_1588,
            },
            upper: a.erspan_upper,
        },
        taps: (!a.tap.is_empty()).then(|| a.tap.clone()),
        sniffer: a.sniffer,
    };
    let transport = run.transport();
    if transport != TransportId::Roce
        && (a.sniffer.is_some() || a.telemetry.is_some() || a.counters.is_some())
    {
        return Err(Error::Usage(format!(
            "synth {}: --sniffer, --telemetry and --counters are RoCE's (a {} scenario has none)",
            a.scenario,
            transport.entry().label
        )));
    }
    let truth = model::AnyTruth::of_capture(&run, &opts);
    let frames = bridge::write_capture(&run, &a.out, &opts)?;
    let truth_path = a.truth.unwrap_or_else(|| {
        let stem = a
            .out
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        a.out.with_file_name(format!("{stem}.truth.json"))
    });
    let mut text = truth.json().map_err(|e| Error::Write {
        path: truth_path.clone(),
        detail: e.to_string(),
    })?;
    text.push('\n');
    crate::tables::write_text(&truth_path, &text)?;
    if let Some(path) = &a.counters {
        let snaps = crate::synth::counters::snapshots(&run, &cfg);
        if path.extension().is_some_and(|e| e == "parquet") {
            crate::counters::collect::write_file(path, &snaps)?;
        } else {
            let text = crate::counters::parse::render_series(&snaps);
            crate::tables::write_text(path, &text)?;
        }
    }
    let written: Vec<&str> = truth
        .capture()
        .taps
        .iter()
        .map(|&t| run.taps[t].name.as_str())
        .collect();
    outln!(
        "{}: {frames} frames from {} taps ({}), truth in {}",
        a.out.display(),
        written.len(),
        written.join(", "),
        truth_path.display()
    )?;
    Ok(ExitCode::SUCCESS)
}
