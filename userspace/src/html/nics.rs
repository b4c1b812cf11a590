//! The page's NIC table: how fast each NIC reacts (`docs/report.md`, "NIC
//! reaction latencies"; the cells are the text report's).

use std::fmt::Write as _;

use super::esc;
use crate::analyze::{Analysis, Latency};
use crate::render::{latency_cell, latency_headings, nic_name, shown_nics};

/// The section, when any NIC reacted in the capture.
pub(super) fn section(h: &mut String, analysis: &Analysis) {
    let (rows, more) = shown_nics(analysis);
    if rows.is_empty() {
        return;
    }
    h.push_str("<h2>NIC reaction latencies</h2>\n<p class=note>At the tap: p50 · p99 · max (samples); docs/analysis.md says what each includes where the tap sits.</p>\n");
    h.push_str("<table><tr><th>NIC</th>");
    for heading in latency_headings() {
        let _ = write!(h, "<th>{}</th>", esc(heading));
    }
    h.push_str("</tr>\n");
    for n in rows {
        let _ = write!(h, "<tr><td>{}</td>", esc(&nic_name(n)));
        for k in Latency::ALL {
            let _ = write!(h, "<td>{}</td>", esc(&latency_cell(n, k)));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    if more > 0 {
        let _ = writeln!(h, "<p class=note>… {more} more in nics.parquet</p>");
    }
}
