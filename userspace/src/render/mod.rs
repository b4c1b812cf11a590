//! The telling: what the analysis found, in words, numbers as a person
//! reads them, dates and Wireshark filters. `analyze` computes (a finding
//! is a [`Diagnosis`] holding its evidence); this module words it, and
//! never computes what the analysis did not (docs/report.md).
//!
//! * [`tell`]: the step after `Analyzer::finish` every run takes — the
//!   diagnoses and capture facts worded into `summary.json`'s findings and
//!   `capture_facts`, each flow's and finding's Wireshark filter filled in;
//! * `facts`: a capture fact's sentence;
//! * `findings`: a diagnosis' title, detail, advice and `params`;
//! * [`report`]: the terminal report and `report --json`;
//! * `transports`: the lines of the transports beside RoCE (their totals
//!   and ECN) in the report and the HTML page, and their own findings;
//! * `words`: what a finding says and the names it uses, which `findings`
//!   and `transports` build;
//! * [`nics`]: the NIC reaction latencies' cells, lines and JSON;
//! * [`wireshark`]: display filters and Decode As hints (docs/wireshark.md);
//! * `events`: an event's `detail` (`events.parquet`), the `Display` of
//!   `analyze::EventDetail`;
//! * [`fmt`]: values as a person reads them (durations, counts, rates,
//!   shares, addresses, flows);
//! * [`date`]: capture times as calendar dates.

pub mod date;
mod events;
mod facts;
mod findings;
pub mod fmt;
pub mod nics;
pub mod report;
pub(crate) mod transports;
pub mod wireshark;
mod words;

use crate::analyze::Analysis;

pub(crate) use date::fmt_utc;
#[cfg(test)]
pub(crate) use findings::marks_words;
pub use findings::{queue_name, word};
pub use fmt::{
    fmt_count, fmt_delay, fmt_duration, fmt_ended_by, fmt_flow, fmt_flow_end, fmt_gbps, fmt_ip,
    fmt_mac, fmt_ns, fmt_offset, fmt_pause_sender, fmt_pause_tap, fmt_pct, fmt_pfc,
};
pub(crate) use nics::{latency_cell, latency_headings, nic_name, shown_nics};
pub use report::{
    flow_json, frames_line, impact_words, more_findings, render_findings, render_json, render_text,
    shown_findings,
};

/// Words the diagnoses into `analysis.summary.findings` (in their rank
/// order) and the capture facts into `analysis.summary.capture_facts`, and
/// fills the flows' and findings' Wireshark filters: what
/// `summary.json`, the tables and the reports show.
pub fn tell(analysis: &mut Analysis) {
    let summary = &analysis.summary;
    let findings = analysis
        .diagnoses
        .iter()
        .map(|d| word(d, summary))
        .collect();
    analysis.summary.findings = findings;
    let facts = analysis
        .facts
        .iter()
        .map(|f| facts::fact_words(f, &analysis.summary))
        .collect();
    analysis.summary.capture_facts = facts;
    let origins = &analysis.origins;
    wireshark::annotate(
        &mut analysis.flows,
        &mut analysis.summary.findings,
        |iface| origins.get(usize::from(iface)).copied().unwrap_or_default(),
    );
}
