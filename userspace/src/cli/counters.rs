//! `counters collect` and `counters report`: NIC counters sampled, or
//! diagnosed from alone.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

use crate::units::{self};
use crate::{Error, Result};

use super::print::{outln, print_json_or_text};

#[derive(Subcommand)]
pub(crate) enum CountersCommand {
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

pub(crate) fn counters(c: CountersCommand) -> Result<ExitCode> {
    use crate::counters::{self, collect};
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
                host: host.unwrap_or_else(crate::tables::dataset::local_host_name),
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
            outln!(
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
            )?;
            Ok(ExitCode::SUCCESS)
        }
        CountersCommand::Report { files, json } => {
            let loaded = counters::load(&files)?;
            for w in &loaded.warnings {
                eprintln!("rocescope: warning: {w}");
            }
            let report = crate::counters::words::Report::new(&loaded);
            print_json_or_text(json, &report, "report", || report.render_text())?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
