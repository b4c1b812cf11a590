//! The counters' side in words: `rocescope counters report` (each
//! endpoint's deltas, then the findings), a counter finding's title,
//! detail and advice from its [`CounterDiagnosis`], and the capture
//! against the counters (its table and its findings, from
//! [`Disagreement`]s) (docs/counters.md).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::analyze::{Analysis, Finding, Severity, rank_findings};
use crate::counters::diagnose::{
    self, CounterDiagnosis, CounterEvidence, Ghost, Loss, Quote, STORM_FRACTION, Storm,
};
use crate::counters::reconcile::{
    self, COUNT_SLACK, Comparison, Disagreement, PAUSE_SLACK_US, REL_TOLERANCE, Reconciliation,
};
use crate::counters::{Endpoint, Loaded};

use crate::render::{fmt_utc, render_findings};

/// What `rocescope counters report` prints.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub endpoints: Vec<EndpointReport>,
    pub findings: Vec<Finding>,
    pub warnings: Vec<String>,
}

/// One endpoint in `counters report --json`.
#[derive(Clone, Debug, Serialize)]
pub struct EndpointReport {
    #[serde(flatten)]
    pub endpoint: Endpoint,
    pub snapshots: usize,
    pub first_ts_ns: Option<u64>,
    pub last_ts_ns: Option<u64>,
    pub span_s: f64,
    pub counters: usize,
    /// Total delta and mean rate (per second) of every counter a finding
    /// reads, when the input has it.
    pub deltas: BTreeMap<String, Delta>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Delta {
    pub delta: u64,
    pub rate: f64,
}

impl Report {
    pub fn new(loaded: &Loaded) -> Self {
        let endpoints = loaded
            .series
            .iter()
            .map(|s| {
                let span = s.span_s();
                let deltas = s
                    .names()
                    .into_iter()
                    .filter(|n| diagnose::used_counter(n))
                    .map(|n| {
                        let d = s.delta(n);
                        let rate = if span > 0.0 { d as f64 / span } else { 0.0 };
                        (n.to_string(), Delta { delta: d, rate })
                    })
                    .collect();
                EndpointReport {
                    endpoint: s.endpoint.clone(),
                    snapshots: s.snapshots.len(),
                    first_ts_ns: s.first_ns(),
                    last_ts_ns: s.last_ns(),
                    span_s: span,
                    counters: s.names().len(),
                    deltas,
                }
            })
            .collect();
        Report {
            endpoints,
            findings: diagnose::diagnose(&loaded.series)
                .iter()
                .map(word)
                .collect(),
            warnings: loaded.warnings.clone(),
        }
    }

    /// The terminal report: each endpoint's span and its non-zero deltas,
    /// then the findings as the capture report prints them.
    pub fn render_text(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(o, "rocescope counters report");
        let _ = writeln!(o);
        for e in &self.endpoints {
            let _ = writeln!(
                o,
                "{}: {} snapshots, {} .. {} ({}), {} counters",
                e.endpoint,
                e.snapshots,
                e.first_ts_ns.map(fmt_utc).unwrap_or_default(),
                e.last_ts_ns.map(fmt_utc).unwrap_or_default(),
                fmt_seconds(e.span_s),
                e.counters
            );
            let moved: Vec<String> = e
                .deltas
                .iter()
                .filter(|(_, d)| d.delta > 0)
                .map(|(n, d)| format!("{n} +{}", d.delta))
                .collect();
            if !moved.is_empty() {
                let _ = writeln!(o, "  rising: {}", moved.join(", "));
            }
        }
        let _ = writeln!(o);
        render_findings(&mut o, &self.findings);
        o
    }
}

/// `120.0 s`, or `0.002999 s` for the short series of a synth run.
fn fmt_seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.1} s")
    } else {
        format!("{s:.6} s")
    }
}

fn rate(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}")
    } else if r >= 1.0 {
        format!("{r:.1}")
    } else {
        format!("{r:.3}")
    }
}

/// Quotes as a finding's detail shows them, over a series of `span_s`.
struct Shown {
    span_s: f64,
}

impl Shown {
    /// `name +D (R/s)`.
    fn one(&self, q: &Quote) -> String {
        let (name, d) = (&q.name, q.delta);
        if !q.present {
            format!("{name} (not in the input)")
        } else if self.span_s > 0.0 && d > 0 {
            format!("{name} +{d} ({}/s)", rate(d as f64 / self.span_s))
        } else {
            format!("{name} +{d}")
        }
    }

    fn all(&self, quotes: &[Quote]) -> String {
        self.list(quotes).join(", ")
    }

    fn list(&self, quotes: &[Quote]) -> Vec<String> {
        quotes.iter().map(|q| self.one(q)).collect()
    }
}

/// What a finding says.
struct Said {
    title: String,
    detail: String,
    recommendation: String,
}

/// The finding `counters report` and the capture report show for `d`.
pub fn word(d: &CounterDiagnosis) -> Finding {
    let at = d.endpoint.as_str();
    let show = Shown { span_s: d.span_s };
    let said = match &d.evidence {
        CounterEvidence::Ghost(e) => ghost(e, at, d.span_s, &show),
        CounterEvidence::Loss(e) => loss(e, at, &show),
        CounterEvidence::Retries {
            exhausted,
            counters,
            timeouts,
        } => Said {
            title: format!("Requesters on {at} exhausted their retries {exhausted} times"),
            detail: format!("{at}: {}; {}", show.all(counters), show.all(timeouts)),
            recommendation: "A QP that exceeds its retry count goes to the error state and the application sees a failed work request: find the loss or the stall (the other findings) before raising retry_cnt".into(),
        },
        CounterEvidence::Storm(e) => storm(e, at, &show),
        CounterEvidence::Pressure {
            priority: p,
            fraction,
            duration,
            pauses,
            transitions,
        } => Said {
            title: format!("Priority {p} of {at} paused {:.2} % of the time", fraction * 100.0),
            detail: format!(
                "{at}: {}, {}, {} over {}",
                show.one(duration),
                show.one(pauses),
                show.one(transitions),
                fmt_seconds(d.span_s)
            ),
            recommendation: "Pauses received on a lossless priority stop the NIC's sends: tune ECN to mark before the switch's PFC threshold so DCQCN slows senders first".into(),
        },
        CounterEvidence::NpSilent { marked, cnps_sent } => Said {
            title: format!(
                "{} CE-marked RoCE packets reached {at} and no CNP was sent back",
                marked.delta
            ),
            detail: format!("{at}: {}, {}", show.one(marked), show.one(cnps_sent)),
            recommendation: "The notification point ignores ECN: enable DCQCN's notification point on this NIC for the RoCE priority (mlnx_qos / the ecn sysfs knobs, roce_np enable), or the senders never slow down and PFC does all the work".into(),
        },
        CounterEvidence::CcIgnored { ignored, handled } => Said {
            title: format!("{at} ignored {} CNPs", ignored.delta),
            detail: format!("{at}: {}, {}", show.one(ignored), show.one(handled)),
            recommendation: "The reaction point received CNPs and did not slow down: enable DCQCN's reaction point for the RoCE priority on this NIC (roce_rp enable), so CE marks turn into lower send rates".into(),
        },
        CounterEvidence::CnpsUnhandled { sent, peers } => Said {
            title: format!(
                "{at} sent {} CNPs and none was handled by the other endpoints",
                sent.delta
            ),
            detail: format!(
                "{at}: {}; {}",
                show.one(sent),
                peers
                    .iter()
                    .map(|p| {
                        let theirs = Shown { span_s: p.span_s };
                        format!("{}: {}", p.endpoint, theirs.one(&p.handled))
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            recommendation: "CNPs are lost or misrouted between the notification and reaction points: check that CNPs travel on a priority the switches forward (often a dedicated DSCP/priority for CNPs), are not dropped by ACLs, and reach the senders' NICs".into(),
        },
        CounterEvidence::Corruption(e) => {
            let mut detail = format!(
                "{at}: {}, {}",
                show.all(&e.counters),
                show.one(&e.corrected_bits)
            );
            if e.bits > 0 {
                let _ = write!(
                    detail,
                    "; corrected bit rate {:.2e} of {} bits received",
                    e.corrected as f64 / e.bits as f64,
                    e.bits
                );
            }
            Said {
                title: if d.severity == Severity::Critical {
                    format!("Link corruption on {at}: {} frames damaged", e.damaged)
                } else {
                    format!(
                        "FEC is correcting errors on {at}: {} corrected bits",
                        e.corrected
                    )
                },
                detail,
                recommendation: "A link with rising FCS/symbol errors or FEC corrections has a bad cable, transceiver or dirty connector: check the module (mlxlink, ethtool -m), reseat or replace it; a damaged RoCE frame is a lost frame, recovered only by a NAK or a timeout".into(),
            }
        }
    };
    Finding {
        wireshark: None,
        id: d.evidence.id(),
        severity: d.severity,
        impact: d.impact,
        title: said.title,
        detail: said.detail,
        recommendation: said.recommendation,
        flows: Vec::new(),
        params: Default::default(),
    }
}

fn ghost(e: &Ghost, at: &str, span_s: f64, show: &Shown) -> Said {
    let mut checked: Vec<String> = e.flat.iter().map(|n| format!("{n} +0")).collect();
    if e.flat_prio_discards {
        checked.push("rx_prio*_discards +0".into());
    }
    let mut detail = format!(
        "{at}: {} while {} (pause received: the port could not send for {:.1} % of the {}); in {} of {} intervals both rose; flat: {}",
        show.all(&e.timeouts),
        show.list(&e.paused).join(", "),
        e.paused_us as f64 / 1e4 / span_s.max(1e-9),
        fmt_seconds(span_s),
        e.together,
        e.intervals,
        if checked.is_empty() {
            "none of the discard/CRC counters is in the input".to_string()
        } else {
            checked.join(", ")
        }
    );
    if !e.missing.is_empty() {
        let _ = write!(detail, " (not in the input: {})", e.missing.join(", "));
    }
    let _ = write!(
        detail,
        "; sequence errors: {}; {}",
        show.all(&e.sequence),
        show.one(&e.duplicate_requests)
    );
    Said {
        title: format!(
            "Ghost-drop signature on {at}: {} timeouts/adaptive retransmissions while paused {} µs, with no discards or CRC errors",
            e.retransmissions, e.paused_us
        ),
        detail,
        recommendation: format!(
            "Packets were delayed behind PFC pauses, not lost: raise the minimum retransmission timeout above the longest pause. The counters bound it by the most pause time in one interval ({} µs on priority {}): the local ACK timeout is 4.096 µs × 2^T, so T ≥ {} (ibv_modify_qp attr.timeout / NCCL_IB_TIMEOUT, or the NIC's minimum-RTO setting); a capture of the same minutes gives the exact longest pause. Then shorten the pauses: mark ECN earlier than PFC triggers",
            e.worst_us, e.worst_priority, e.timeout_exponent
        ),
    }
}

fn loss(e: &Loss, at: &str, show: &Shown) -> Said {
    let local = if e.local.is_empty() {
        "none in the input".to_string()
    } else {
        show.all(&e.local)
    };
    let detail = format!("{at}: {}; local evidence: {local}", show.all(&e.sequence));
    let (title, recommendation) = if e.discards + e.corrupted > 0 {
        (
            format!(
                "Real loss on {at}: {} sequence errors with {} discards and {} corrupted frames",
                e.sequence_errors, e.discards, e.corrupted
            ),
            "Frames are being lost at this port: discards mean the receive buffer overflowed (PFC headroom, or PFC not enabled on the RoCE priority); CRC/symbol errors mean a bad link (see link-corruption)",
        )
    } else {
        (
            format!(
                "Real loss elsewhere on the path of {at}: {} sequence errors, no local discards or CRC errors",
                e.sequence_errors
            ),
            "The PSN holes were made upstream: check the switches' discard and FCS counters on the RoCE priority along the path, and the peer's receive counters",
        )
    };
    Said {
        title,
        detail,
        recommendation: recommendation.into(),
    }
}

fn storm(e: &Storm, at: &str, show: &Shown) -> Said {
    let storms: Vec<String> = e
        .priorities
        .iter()
        .map(|s| {
            format!(
                "priority {} {} for ≥ {:.0} % of {} of {} intervals (at most {:.1} %), {}",
                s.priority,
                if s.received {
                    "paused by the peer"
                } else {
                    "pausing the peer"
                },
                STORM_FRACTION * 100.0,
                s.hits,
                s.intervals,
                s.max_fraction * 100.0,
                show.one(&s.duration)
            )
        })
        .collect();
    let stormy = if e.priorities.is_empty() {
        String::new()
    } else {
        let prios: Vec<String> = e
            .priorities
            .iter()
            .map(|s| s.priority.to_string())
            .collect();
        format!("priority {} paused nearly all the time, ", prios.join(", "))
    };
    Said {
        title: format!("PFC storm on {at}: {stormy}{} storm events", e.events),
        detail: format!(
            "{at}: {}{}{}",
            storms.join("; "),
            if storms.is_empty() { "" } else { "; " },
            show.all(&e.event_counters)
        ),
        recommendation: if e.error_events > 0 {
            "The NIC's PFC watchdog stopped sending pauses (storm error events): frames may have been dropped meanwhile. Find the receiver that cannot drain (a stuck host, a loop of pauses), and keep the watchdog on"
        } else {
            "A port paused for whole intervals: something downstream cannot drain. Find the receiver that stopped (a stuck host, a deadlock of pauses) and enable a PFC watchdog on the switches"
        }
        .into(),
    }
}

/// Reconciles a finished analysis with loaded counters: the findings,
/// worded, join the analysis' (ranked again); the table is returned for
/// summary.json and the terminal.
pub fn reconcile_files(analysis: &mut Analysis, loaded: &Loaded) -> Reconciliation {
    let r = reconcile::reconcile(analysis, &loaded.series);
    let findings = &mut analysis.summary.findings;
    findings.extend(reconciled_findings(&r));
    rank_findings(findings);
    r
}

/// The reconciliation's findings, in words.
pub fn reconciled_findings(r: &Reconciliation) -> impl Iterator<Item = Finding> + '_ {
    r.disagreements.iter().map(disagreement)
}

fn disagreement(d: &Disagreement) -> Finding {
    let describe = |c: &Comparison| {
        let prio = c
            .priority
            .map(|p| format!(" priority {p}"))
            .unwrap_or_default();
        let band = match c.counters_high {
            Some(h) if h != c.counters_low => format!("{}..{}", c.counters_low, h),
            Some(_) => format!("{}", c.counters_low),
            None => format!("≥ {}", c.counters_low),
        };
        format!(
            "{}{prio}: capture {}, counters {band} ({})",
            c.quantity, c.capture, c.counters_from
        )
    };
    let (iface, endpoint) = (&d.iface, &d.endpoint);
    let window = d.rows.first().map_or(0.0, |c| c.window_s);
    let coverage = d.rows.first().map_or(0.0, |c| c.coverage);
    let detail = format!(
        "{iface} against {endpoint} over {window:.3} s of counters ({:.0} % covered by the capture): {}; tolerance ±{:.0} % (+{COUNT_SLACK} events, +{PAUSE_SLACK_US} µs of pause)",
        coverage * 100.0,
        d.rows.iter().map(describe).collect::<Vec<_>>().join("; "),
        REL_TOLERANCE * 100.0
    );
    let (title, recommendation) = if d.verdict == "capture-incomplete" {
        (
            format!("The capture on {iface} misses what {endpoint} counted"),
            "The tap lost frames (mirror oversubscribed, SPAN drops, capture buffer overflow, snaplen/filter): findings from this capture under-count; capture with a larger buffer, a dedicated mirror port, or a filter on RoCE traffic only",
        )
    } else {
        (
            format!("The capture on {iface} shows more than {endpoint} counted"),
            "The counters are not of the link this capture saw (check the host/iface/device/port mapping), or the capture mixes more links than one NIC port carries",
        )
    };
    Finding {
        wireshark: None,
        id: d.verdict,
        severity: Severity::Warning,
        impact: d.impact,
        title,
        detail,
        recommendation: recommendation.into(),
        flows: Vec::new(),
        params: Default::default(),
    }
}

/// The comparison table for the terminal.
pub fn reconciliation_text(r: &Reconciliation) -> String {
    let mut o = String::new();
    let _ = writeln!(o);
    let _ = writeln!(o, "Capture against counters:");
    if r.comparisons.is_empty() {
        let _ = writeln!(o, "  nothing to compare");
    }
    for c in &r.comparisons {
        let high = c.counters_high.map_or("∞".to_string(), |h| format!("{h}"));
        let _ = writeln!(
            o,
            "  {} {:<16} {:>4} capture {:>12} counters {:>12}..{:<12} {} ({})",
            c.iface,
            c.quantity,
            c.priority.map(|p| format!("p{p}")).unwrap_or_default(),
            c.capture,
            c.counters_low,
            high,
            c.verdict,
            c.endpoint
        );
    }
    for w in &r.warnings {
        let _ = writeln!(o, "  note: {w}");
    }
    o
}
