//! The HTML report's counters section (`report --html … --counters …`):
//! the counters' rates on the capture's time axis and the
//! capture-against-counters table.
use std::fmt::Write as _;

use super::{esc, figure, plots};
use crate::counters::model::Series;
use crate::counters::reconcile::Reconciliation;

/// What each plot draws: its axis, the counters, and a factor on their rates.
const PLOTS: [(&str, &str, &[&str], f64); 3] = [
    (
        "pause received, % of time",
        "Each NIC's rx_prio{p}_pause_duration as a share of time between two snapshots; shaded: the capture's PFC pauses",
        &[
            "rx_prio0_pause_duration",
            "rx_prio1_pause_duration",
            "rx_prio2_pause_duration",
            "rx_prio3_pause_duration",
            "rx_prio4_pause_duration",
            "rx_prio5_pause_duration",
            "rx_prio6_pause_duration",
            "rx_prio7_pause_duration",
        ],
        // µs per second → %.
        1e-4,
    ),
    (
        "CNPs per s",
        "CNPs sent (notification point) and handled or ignored (reaction point) per second",
        &["np_cnp_sent", "rp_cnp_handled", "rp_cnp_ignored"],
        1.0,
    ),
    (
        "per s",
        "ACK timeouts, NAKs received and adaptive retransmissions per second",
        &[
            "local_ack_timeout_err",
            "packet_seq_err",
            "roce_adp_retrans",
            "roce_adp_retrans_to",
        ],
        1.0,
    ),
];

/// Appends the section to the page `h`.
pub fn section(
    h: &mut String,
    series: &[Series],
    r: &Reconciliation,
    pauses: &[(u64, u64)],
    t0: u64,
    t1: u64,
) -> Result<(), String> {
    h.push_str("<h2>NIC counters</h2>\n<p class=note>A counter's rate is constant between two snapshots: each is a flat step over its interval, drawn where it overlaps the capture.</p>\n");
    for (axis, caption, names, scale) in PLOTS {
        let mut lines = Vec::new();
        for s in series {
            for name in names {
                let steps: Vec<(u64, u64, f64)> = s
                    .steps(name)
                    .iter()
                    .filter_map(|st| st.rate().map(|v| (st.from_ns, st.to_ns, v * scale)))
                    .collect();
                if steps.iter().any(|&(_, _, v)| v > 0.0) {
                    lines.push((format!("{} {name}", s.endpoint), steps));
                }
            }
        }
        if !lines.is_empty() {
            let svg = plots::steps(&lines, pauses, t0, t1, axis)?;
            figure(h, "counters", &svg, caption);
        }
    }
    h.push_str("<p class=note>Capture against counters (docs/counters.md, “Reconciliation”):</p>\n<table><tr><th>interface</th><th>counters of</th><th>quantity</th><th>prio</th><th>capture</th><th>counters</th><th>coverage</th><th>verdict</th></tr>\n");
    for c in &r.comparisons {
        let band = match c.counters_high {
            Some(hi) if hi != c.counters_low => format!("{} … {hi}", c.counters_low),
            Some(_) => c.counters_low.to_string(),
            None => format!("≥ {}", c.counters_low),
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0} %</td><td>{}</td></tr>",
            esc(&c.iface),
            esc(&c.endpoint),
            c.quantity,
            c.priority.map(|p| p.to_string()).unwrap_or_default(),
            c.capture,
            esc(&band),
            c.coverage * 100.0,
            c.verdict
        );
    }
    h.push_str("</table>\n");
    for w in &r.warnings {
        let _ = writeln!(h, "<p class=note>{}</p>", esc(w));
    }
    Ok(())
}
