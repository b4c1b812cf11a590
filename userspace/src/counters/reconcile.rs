//! Capture against counters over the capture's time span: what the tap saw
//! on a link against what the NIC on that link counted. docs/counters.md
//! ("Reconciliation") states each comparison and its tolerance.
//!
//! Each quantity gives the counters' reading as a band `[low, high]` of
//! what the capture should show (a counter may or may not include what the
//! capture splits out, e.g. XON frames), and the capture's reading as a
//! band too. Beyond [`REL_TOLERANCE`] and the quantity's slack:
//! * the capture shows less than the counters' `low` → `capture-incomplete`
//!   (judged only when the counters' window is close to the capture's
//!   span, [`MIN_COVERAGE`]: a wider window counts events the capture
//!   never had a chance to see);
//! * the capture shows more than the counters' `high` → `counters-mismatch`
//!   (the window contains the capture, so this is never a matter of time:
//!   the counters are of another port, or count something else) — except
//!   for pause time when the capture misses PFC frames: a lost XON leaves
//!   the capture's pause running, so more is then `capture-incomplete`.
use serde::Serialize;

use super::model::{Series, sum};
use crate::analyze::Analysis;

/// Relative tolerance of every comparison.
pub const REL_TOLERANCE: f64 = 0.05;
/// `capture-incomplete` is judged only when the capture spans at least
/// this share of the counters' window.
pub const MIN_COVERAGE: f64 = 0.9;
/// Absolute slack for counts (frames, CNPs, NAKs, timeouts): events at the
/// window's edges.
pub const COUNT_SLACK: f64 = 2.0;
/// Absolute slack for pause time, µs: the counters' 1 µs resolution at
/// each end, and pauses running across the capture's first or last frame.
pub const PAUSE_SLACK_US: f64 = 20.0;

/// One row of `summary.json`'s `counters_reconciliation`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// The capture interface.
    pub iface: String,
    /// The counters' endpoint (host, iface, device/port).
    pub endpoint: String,
    /// `pfc_frames`, `pfc_paused_us`, `cnps`, `naks`, `timeout_rewinds`, `frames`.
    pub quantity: &'static str,
    pub priority: Option<u8>,
    /// The capture's reading (`capture_low` < `capture` when part of it may
    /// or may not be counted by the NIC).
    pub capture: f64,
    pub capture_low: f64,
    /// The counters' band for what the capture should show.
    pub counters_low: f64,
    /// `None`: no upper bound (the link carries events this NIC does not count).
    pub counters_high: Option<f64>,
    /// The counters and how they were combined.
    pub counters_from: String,
    /// Seconds between the two snapshots around the capture.
    pub window_s: f64,
    /// Capture span / window.
    pub coverage: f64,
    /// `agree`, `capture-incomplete`, `counters-mismatch`, or
    /// `not-judged` (window too wide to call the capture incomplete).
    pub verdict: &'static str,
}

/// Findings and the comparison table.
///
/// Timeouts are tabled beside the capture's timeout rewinds but never
/// judged: no bound holds between them.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Reconciliation {
    pub comparisons: Vec<Comparison>,
    /// The findings: `capture-incomplete` and `counters-mismatch`, one per
    /// verdict, interface and endpoint (`crate::counters::words` words them).
    #[serde(skip)]
    pub disagreements: Vec<Disagreement>,
    pub warnings: Vec<String>,
}

/// Rows of one verdict between one capture interface and one endpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct Disagreement {
    /// `capture-incomplete` or `counters-mismatch`: the finding's id.
    pub verdict: &'static str,
    pub iface: String,
    pub endpoint: String,
    pub impact: f64,
    pub rows: Vec<Comparison>,
}

/// How a row is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    /// Below the band: capture-incomplete; above: counters-mismatch.
    Band,
    /// The capture misses frames that would have cut this quantity short
    /// (lost XONs lengthen pauses): above the band is loss too.
    OverIsLoss,
    /// Tabled, never judged.
    Shown,
}

/// What the capture shows on one interface.
#[derive(Default)]
struct Seen {
    cnps: u64,
    naks: u64,
    timeouts: u64,
    /// RoCE packets of flows of each priority (CNPs are not flows).
    frames: [u64; 8],
}

fn seen(a: &Analysis, iface: u16) -> Seen {
    let s = &a.summary;
    let prio_of = |pcp: Option<u8>, dscp: Option<u8>| -> Option<usize> {
        if let Some(p) = pcp {
            return Some(usize::from(p & 7));
        }
        let d = usize::from(dscp? & 63);
        let p = s
            .dscp_to_priority
            .as_ref()
            .and_then(|m| m.get(d).copied())
            .unwrap_or((d >> 3) as u8);
        Some(usize::from(p & 7))
    };
    let mut out = Seen::default();
    // Every flow's row, the retired ones' summed (`Analysis::sums`).
    for (g, f) in a.sums().iter().filter(|(g, _)| g.iface == iface) {
        out.cnps += f.cnps;
        out.naks += f.naks;
        out.timeouts += f.rewinds_timeout;
        if let Some(p) = prio_of(g.pcp, g.dscp) {
            out.frames[p] += f.packets;
        }
    }
    // Unattributed CNPs have no flow, hence no interface: with one
    // interface they are this one's.
    if s.ifaces.len() <= 1 {
        out.cnps += s.totals.cnps_unattributed;
    }
    out
}

/// Compares the capture with every counter series that names one of its
/// interfaces (`iface=`, `host=` or `device=` equal to the capture
/// interface's name, or to what follows its `FILE/` prefix; a lone series
/// and a lone interface pair up anyway).
pub fn reconcile(a: &Analysis, all: &[Series]) -> Reconciliation {
    let mut r = Reconciliation::default();
    let s = &a.summary;
    let (Some(first), Some(last)) = (s.first_ts_ns, s.last_ts_ns) else {
        r.warnings
            .push("the capture is empty: nothing to reconcile the counters with".into());
        return r;
    };
    let ifaces: Vec<(u16, String)> = if s.ifaces.is_empty() {
        vec![(0, s.iface_name(0))]
    } else {
        s.ifaces.iter().map(|(&i, n)| (i, n.clone())).collect()
    };
    let lone = all.len() == 1 && ifaces.len() == 1;
    for series in all {
        let ep = &series.endpoint;
        // Several capture files name their interfaces `STEM/NAME`; a pcap
        // without interface names is named after its file's stem.
        let named = |n: &String| {
            let bare = n.rsplit_once('/').map_or(n.as_str(), |(_, b)| b);
            [&ep.iface, &ep.host, &ep.device]
                .iter()
                .any(|x| x.as_deref().is_some_and(|x| x == n || x == bare))
        };
        let matched: Vec<&(u16, String)> = ifaces.iter().filter(|(_, n)| named(n)).collect();
        let matched = if matched.is_empty() && lone {
            ifaces.iter().collect()
        } else {
            matched
        };
        if matched.is_empty() {
            r.warnings.push(format!(
                "{ep}: no capture interface is named like it (interfaces: {}); name the capture interface as the counters' iface=, host= or device=",
                ifaces.iter().map(|(_, n)| n.as_str()).collect::<Vec<_>>().join(", ")
            ));
            continue;
        }
        for (iface, name) in matched {
            compare(a, *iface, name, series, first, last, &mut r);
        }
    }
    r.disagreements = disagreements(&r.comparisons);
    r
}

#[allow(clippy::too_many_arguments)]
fn compare(
    a: &Analysis,
    iface: u16,
    name: &str,
    series: &Series,
    first: u64,
    last: u64,
    r: &mut Reconciliation,
) {
    let ep = &series.endpoint;
    let before = series.snapshots.iter().rev().find(|x| x.ts_ns <= first);
    let after = series.snapshots.iter().find(|x| x.ts_ns >= last);
    let (Some(s0), Some(s1)) = (before, after) else {
        r.warnings.push(format!(
            "{ep}: its snapshots do not surround the capture on {name} (a snapshot at or before the first frame and one at or after the last are needed)"
        ));
        return;
    };
    let (t0, t1) = (s0.ts_ns, s1.ts_ns);
    let window_s = (t1 - t0) as f64 / 1e9;
    let span = (last - first) as f64 / 1e9;
    let coverage = if t1 > t0 { span / window_s } else { 1.0 };
    let d = |n: &str| sum(&series.steps_within(n, t0, t1)) as f64;
    let has = |n: &str| series.has(n);
    let seen = seen(a, iface);
    let mut row = |quantity: &'static str,
                   priority: Option<u8>,
                   capture: f64,
                   capture_low: f64,
                   low: Option<f64>,
                   high: Option<f64>,
                   from: String,
                   slack: f64,
                   rule: Rule| {
        let under = low.is_some_and(|l| capture < l * (1.0 - REL_TOLERANCE) - slack);
        let over = high.is_some_and(|h| capture_low > h * (1.0 + REL_TOLERANCE) + slack);
        let over_is_loss = rule == Rule::OverIsLoss;
        let (incomplete, mismatch) = (under || (over && over_is_loss), over && !over_is_loss);
        let verdict = if rule == Rule::Shown {
            "not-judged"
        } else if mismatch {
            "counters-mismatch"
        } else if incomplete && coverage >= MIN_COVERAGE {
            "capture-incomplete"
        } else if incomplete {
            "not-judged"
        } else {
            "agree"
        };
        r.comparisons.push(Comparison {
            iface: name.to_string(),
            endpoint: ep.to_string(),
            quantity,
            priority,
            capture,
            capture_low,
            counters_low: low.unwrap_or(0.0),
            counters_high: high,
            counters_from: from,
            window_s,
            coverage,
            verdict,
        });
    };
    let pfc = |p: u8| {
        a.summary
            .pfc
            .iter()
            .find(|x| x.iface == iface && x.priority == p)
    };
    for p in 0..8u8 {
        let (rxp, txp) = (format!("rx_prio{p}_pause"), format!("tx_prio{p}_pause"));
        let (rxd, txd) = (
            format!("rx_prio{p}_pause_duration"),
            format!("tx_prio{p}_pause_duration"),
        );
        let seen_pfc = pfc(p);
        if has(&rxp) || has(&txp) {
            let n = d(&rxp) + d(&txp);
            // The summary's frames include the XON frames.
            let (frames, xon) = seen_pfc.map_or((0, 0), |x| (x.frames, x.xon_frames));
            if n > 0.0 || frames > 0 {
                row(
                    "pfc_frames",
                    Some(p),
                    frames as f64,
                    frames.saturating_sub(xon) as f64,
                    Some(n),
                    Some(n),
                    format!("{rxp} + {txp} (XON frames may or may not count)"),
                    COUNT_SLACK,
                    Rule::Band,
                );
            }
        }
        // Fewer PFC frames in the capture than the NIC counted.
        let pfc_lost = (has(&rxp) || has(&txp))
            && (seen_pfc.map_or(0, |x| x.frames) as f64) < d(&rxp) + d(&txp);
        if has(&rxd) || has(&txd) {
            let (rx, tx) = (d(&rxd), d(&txd));
            let us = seen_pfc.map_or(0, |x| x.paused_ns) as f64 / 1000.0;
            if rx + tx > 0.0 || us > 0.0 {
                row(
                    "pfc_paused_us",
                    Some(p),
                    us,
                    us,
                    Some(rx.max(tx)),
                    Some(rx + tx),
                    format!("max..sum of {rxd}, {txd} (µs; pauses both ways at once count twice)"),
                    PAUSE_SLACK_US,
                    if pfc_lost {
                        Rule::OverIsLoss
                    } else {
                        Rule::Band
                    },
                );
            }
        }
        let (rxk, txk) = (format!("rx_prio{p}_packets"), format!("tx_prio{p}_packets"));
        if (has(&rxk) || has(&txk)) && (d(&rxk) + d(&txk) > 0.0 || seen.frames[usize::from(p)] > 0)
        {
            let n = d(&rxk) + d(&txk);
            let cnps = d("np_cnp_sent") + d("rp_cnp_handled") + d("rp_cnp_ignored");
            let c = seen.frames[usize::from(p)] as f64;
            row(
                "frames",
                Some(p),
                c,
                c,
                Some((n - cnps).max(0.0)),
                Some(n),
                format!("{rxk} + {txk}, less the CNPs (other traffic on the priority counts too)"),
                COUNT_SLACK,
                Rule::Band,
            );
        }
    }
    let cnp_names = ["np_cnp_sent", "rp_cnp_handled", "rp_cnp_ignored"];
    if cnp_names.iter().any(|n| has(n)) {
        let n: f64 = cnp_names.iter().map(|x| d(x)).sum();
        if n > 0.0 || seen.cnps > 0 {
            row(
                "cnps",
                None,
                seen.cnps as f64,
                seen.cnps as f64,
                Some(n),
                Some(n),
                "np_cnp_sent + rp_cnp_handled + rp_cnp_ignored".into(),
                COUNT_SLACK,
                Rule::Band,
            );
        }
    }
    if has("packet_seq_err") {
        let (rx, oos) = (d("packet_seq_err"), d("out_of_sequence"));
        if rx + oos > 0.0 || seen.naks > 0 {
            // Without out_of_sequence the NAKs this NIC sent are unknown.
            let (high, from) = if has("out_of_sequence") {
                (
                    Some(rx + oos),
                    "packet_seq_err (NAKs received) .. + out_of_sequence (at most one NAK sent per out-of-sequence packet)",
                )
            } else {
                (
                    None,
                    "packet_seq_err (NAKs received; the NAKs sent are not counted without out_of_sequence)",
                )
            };
            row(
                "naks",
                None,
                seen.naks as f64,
                seen.naks as f64,
                Some(rx),
                high,
                from.into(),
                COUNT_SLACK,
                Rule::Band,
            );
        }
    }
    if has("local_ack_timeout_err") {
        let n = d("local_ack_timeout_err");
        if n > 0.0 || seen.timeouts > 0 {
            row(
                "timeout_rewinds",
                None,
                seen.timeouts as f64,
                seen.timeouts as f64,
                Some(n),
                None,
                "local_ack_timeout_err: shown, not judged (a timeout that fires while the sender is paused resends nothing the tap can see, and the link also carries the peers' rewinds)".into(),
                COUNT_SLACK,
                Rule::Shown,
            );
        }
    }
}

/// The rows that disagree, grouped by verdict, interface and endpoint
/// (sorted so), each group's impact the largest share of an event count
/// one side lacks.
fn disagreements(rows: &[Comparison]) -> Vec<Disagreement> {
    let mut groups: Vec<(&'static str, &str, &str)> = rows
        .iter()
        .filter(|c| c.verdict == "capture-incomplete" || c.verdict == "counters-mismatch")
        .map(|c| (c.verdict, c.iface.as_str(), c.endpoint.as_str()))
        .collect();
    groups.sort();
    groups.dedup();
    groups
        .into_iter()
        .map(|(verdict, iface, endpoint)| {
            let these: Vec<Comparison> = rows
                .iter()
                .filter(|c| c.verdict == verdict && c.iface == iface && c.endpoint == endpoint)
                .cloned()
                .collect();
            let impact = these
                .iter()
                .map(|c| {
                    if verdict == "capture-incomplete" {
                        (c.counters_low - c.capture) / c.counters_low
                    } else {
                        c.counters_high
                            .map_or(0.0, |high| (c.capture_low - high) / c.capture_low)
                    }
                })
                .filter(|x| x.is_finite())
                .fold(0.0, f64::max)
                .clamp(0.0, 1.0);
            Disagreement {
                verdict,
                iface: iface.to_string(),
                endpoint: endpoint.to_string(),
                impact,
                rows: these,
            }
        })
        .collect()
}

impl Reconciliation {
    /// `summary` (summary.json as a value) with the comparison table under
    /// `counters_reconciliation`.
    pub fn add_to_json(&self, summary: &mut serde_json::Value) {
        if let Some(obj) = summary.as_object_mut() {
            obj.insert(
                "counters_reconciliation".into(),
                serde_json::to_value(self).unwrap_or(serde_json::Value::Null),
            );
        }
    }
}
