//! The command line: clap's definitions of every subcommand and its options
//! (values typed as they are parsed, by the parsers in [`crate::units`]),
//! and one function per subcommand. `main.rs` parses and calls [`run`].
//!
//! * `args`: the options `analyze`, `report`, `extract`, `diff` and `live`
//!   share (the captures, the analysis, the dataset);
//! * `commands`: `analyze`, `report`, `extract`, `diff`; `synth`;
//!   `counters`; `live` and `replay` (the `live` feature); `print`: what
//!   they print besides their results (warnings, the exit status).

mod args;
mod commands;
mod counters;
#[cfg(feature = "live")]
mod live;
mod print;
mod synth;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::Result;
use crate::wireshark::ExtractWhat;
use args::{DatasetArgs, Input};
use commands::DiffArgs;
use counters::CountersCommand;
use synth::SynthArgs;

#[derive(Parser)]
#[command(
    name = "rocescope",
    version,
    about = "Why is a lossless RoCEv2 fabric slow? Ghost drops, PFC congestion trees and broken ECN, from what the wire saw."
)]
pub struct Cli {
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
        #[command(flatten)]
        shards: args::ShardArgs,
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
    Live(Box<live::LiveArgs>),
    #[cfg(feature = "live")]
    /// Send a capture's frames out of an interface (AF_PACKET), e.g. into a veth pair to test `live`.
    Replay(Box<live::ReplayArgs>),
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
#[derive(clap::Args)]
struct NotBuilt {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    _args: Vec<String>,
}

/// Runs one command line's subcommand.
pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Analyze {
            input,
            out,
            dataset,
            shards,
        } => commands::analyze(input, out, dataset, shards),
        Command::Report {
            input,
            json,
            width,
            html,
        } => commands::report(input, json, width, html),
        Command::Synth(args) => synth::synth(*args),
        Command::Counters(c) => counters::counters(c),
        Command::Extract { input, select, out } => commands::extract(input, select, out),
        Command::Diff(args) => commands::diff(&args),
        #[cfg(feature = "live")]
        Command::Live(args) => live::live(*args),
        #[cfg(not(feature = "live"))]
        Command::LiveNotBuilt(_) => Err(not_built("live")),
        #[cfg(not(feature = "live"))]
        Command::ReplayNotBuilt(_) => Err(not_built("replay")),
        #[cfg(feature = "live")]
        Command::Replay(args) => live::replay(*args),
    }
}

#[cfg(not(feature = "live"))]
fn not_built(command: &str) -> crate::Error {
    crate::Error::Usage(format!(
        "`{command}` is not in this build: it was built without the `live` feature (offline analysis only); \
         the live tap and replay need a default build, which needs nightly Rust with rust-src and bpf-linker \
         (cargo install --path userspace; see docs/build.md)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

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
