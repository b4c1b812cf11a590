//! How the NICs' reaction latencies read in the text report, the HTML page
//! and `report --json` (`docs/report.md`, "NIC reaction latencies"): one
//! place for the cells all three show.

use serde_json::{Value, json};

use crate::analyze::{Analysis, Latency, NicRow};
use crate::render::{fmt_duration, fmt_ip, fmt_mac};

/// Most NICs the text and the page list (all are in `nics.parquet`).
pub(crate) const SHOWN_NICS: usize = 12;

/// A NIC as the report names it: `10.0.0.2 (02:00:00:00:00:02)`.
pub(crate) fn nic_name(n: &NicRow) -> String {
    format!("{} ({})", fmt_ip(&n.ip), fmt_mac(&n.mac))
}

/// One latency's cell: `p50 2.0 µs · p99 2.1 µs · max 2.1 µs (5)`, or a dash
/// without samples.
pub(crate) fn latency_cell(n: &NicRow, kind: Latency) -> String {
    let s = n.summary(kind);
    match (s.p50_ns, s.p99_ns, s.max_ns) {
        (Some(p50), Some(p99), Some(max)) => format!(
            "p50 {} · p99 {} · max {} ({})",
            fmt_duration(p50),
            fmt_duration(p99),
            fmt_duration(max),
            s.count
        ),
        _ => "–".into(),
    }
}

/// The column headings, in [`Latency::ALL`]'s order.
pub(crate) fn latency_headings() -> [&'static str; 4] {
    Latency::ALL.map(|k| match k {
        Latency::NakGeneration => "NAK generation",
        Latency::NakReaction => "NAK reaction",
        Latency::TimeoutRetrans => "timeout",
        Latency::CnpGeneration => "CNP generation",
    })
}

/// The NICs shown: the most samples first, then by address; and how many
/// more there are.
pub(crate) fn shown_nics(a: &Analysis) -> (Vec<&NicRow>, usize) {
    let total = |n: &NicRow| -> u64 { Latency::ALL.iter().map(|&k| n.summary(k).count).sum() };
    let mut rows: Vec<&NicRow> = a.nics.iter().collect();
    rows.sort_by_key(|n| (std::cmp::Reverse(total(n)), n.mac, n.ip));
    let more = rows.len().saturating_sub(SHOWN_NICS);
    rows.truncate(SHOWN_NICS);
    (rows, more)
}

/// The text report's lines: one per NIC shown, then the rest counted.
pub(crate) fn nic_lines(a: &Analysis) -> Vec<String> {
    let (rows, more) = shown_nics(a);
    let headings = latency_headings();
    let mut lines: Vec<String> = rows
        .iter()
        .map(|n| {
            let cells: Vec<String> = Latency::ALL
                .iter()
                .zip(headings)
                .map(|(&k, h)| format!("{h} {}", latency_cell(n, k)))
                .collect();
            format!("{}: {}", nic_name(n), cells.join("; "))
        })
        .collect();
    if more > 0 {
        lines.push(format!("… {more} more in nics.parquet"));
    }
    lines
}

/// A row of `nics.parquet` as JSON: the same names and values.
pub(crate) fn nic_json(n: &NicRow) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("nic_mac".into(), fmt_mac(&n.mac).into());
    m.insert("nic_ip".into(), fmt_ip(&n.ip).into());
    for k in Latency::ALL {
        let s = n.summary(k);
        let name = k.as_str();
        m.insert(format!("{name}_count"), json!(s.count));
        m.insert(format!("{name}_p50_ns"), json!(s.p50_ns));
        m.insert(format!("{name}_p99_ns"), json!(s.p99_ns));
        m.insert(format!("{name}_max_ns"), json!(s.max_ns));
    }
    Value::Object(m)
}
