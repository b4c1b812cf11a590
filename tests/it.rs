//! Every end-to-end test in one binary (as ripgrep does): each file of
//! `tests/` is a module here, so the test suite links arrow and parquet into
//! one executable instead of one per file. Run a group by its module name
//! (docs/build.md, "Tests"):
//!
//! ```sh
//! cargo test -p rocescope --test it analysis::       # tests/analysis.rs
//! cargo test -p rocescope --test it report::flows    # one test, or a prefix
//! ```
mod common;

mod analysis;
mod bad_captures;
mod cli;
mod counters;
mod evidence;
mod fabric;
mod handoff;
mod hardware_time;
mod inband_telemetry;
mod infiniband;
mod inputs;
mod oracle;
mod outputs;
mod pipeline;
mod real_captures;
mod report;
mod retire;
mod rotation;
mod seam;
mod sharded;
mod sniffer_time;
mod switches;
mod synth;
mod telemetry;
mod telemetry_join;
mod tshark_parity;
mod uet;
mod uet_paths;
mod uet_synth;
mod uet_xdp2;

// The live tap's: they load the XDP program (root; skipped otherwise).
#[cfg(feature = "live")]
mod live;
#[cfg(feature = "live")]
mod live_findings;
#[cfg(feature = "live")]
mod live_metrics;
#[cfg(feature = "live")]
mod live_sharded;
#[cfg(feature = "live")]
mod live_soak;
#[cfg(feature = "live")]
mod xdp_parity;
#[cfg(feature = "live")]
mod xdp_summary;
