//! Findings from counters alone, in the capture analysis' [`Finding`]
//! vocabulary. Every finding quotes the deltas (and rates) that prove it;
//! docs/counters.md defines each one and its thresholds.
use super::model::{Series, Step};
use crate::analyze::{Finding, Severity};
use crate::analyze::{rank_findings, share, timeout_exponent};

/// A priority is in a storm during an interval when pause time covered at
/// least this share of it.
pub const STORM_FRACTION: f64 = 0.9;
/// `pfc-pressure` severity by the pause share of the whole series (as the
/// capture analysis grades it).
const PRESSURE_CRITICAL: f64 = 0.10;
const PRESSURE_WARNING: f64 = 0.01;

/// Requester-side retransmissions that no NAK asked for.
const TIMEOUTS: [&str; 3] = [
    "local_ack_timeout_err",
    "roce_adp_retrans",
    "roce_adp_retrans_to",
];
/// The NIC's own evidence of a frame lost on receive.
const DISCARDS: [&str; 2] = ["rx_discards_phy", "out_of_buffer"];
const PRIO_DISCARDS: [&str; 3] = ["discards", "buf_discard", "cong_discard"];
/// Frames damaged on the wire into this port.
const CORRUPTION: [&str; 3] = [
    "rx_crc_errors_phy",
    "rx_symbol_err_phy",
    "rx_pcs_symbol_err_phy",
];
/// The responder saw a PSN hole, or the requester was told of one.
const SEQUENCE: [&str; 3] = ["packet_seq_err", "out_of_sequence", "implied_nak_seq_err"];

/// Every counter a finding reads (the report shows their deltas).
pub fn used_counter(name: &str) -> bool {
    const FIXED: [&str; 17] = [
        "local_ack_timeout_err",
        "roce_adp_retrans",
        "roce_adp_retrans_to",
        "rx_discards_phy",
        "out_of_buffer",
        "rx_crc_errors_phy",
        "rx_symbol_err_phy",
        "rx_pcs_symbol_err_phy",
        "rx_corrected_bits_phy",
        "packet_seq_err",
        "out_of_sequence",
        "implied_nak_seq_err",
        "duplicate_request",
        "req_transport_retries_exceeded",
        "req_rnr_retries_exceeded",
        "tx_pause_storm_warning_events",
        "tx_pause_storm_error_events",
    ];
    FIXED.contains(&name)
        || name.starts_with("np_")
        || name.starts_with("rp_cnp")
        || name.starts_with("roce_slow_restart")
        || name == "rnr_nak_retry_err"
        || name == "rx_bits_phy"
        || name.starts_with("rx_prio")
        || name.starts_with("tx_prio")
}

/// One series, read for findings.
struct View<'a> {
    s: &'a Series,
    span_s: f64,
}

impl<'a> View<'a> {
    fn new(s: &'a Series) -> Self {
        View {
            s,
            span_s: s.span_s(),
        }
    }

    fn d(&self, name: &str) -> u64 {
        self.s.delta(name)
    }

    fn sum(&self, names: &[&str]) -> u64 {
        names.iter().map(|n| self.d(n)).sum()
    }

    /// `name +D (R/s)`, for details.
    fn show(&self, name: &str) -> String {
        let d = self.d(name);
        if !self.s.has(name) {
            return format!("{name} (not in the input)");
        }
        if self.span_s > 0.0 && d > 0 {
            format!("{name} +{d} ({}/s)", rate(d as f64 / self.span_s))
        } else {
            format!("{name} +{d}")
        }
    }

    fn show_all(&self, names: &[&str]) -> String {
        names
            .iter()
            .map(|n| self.show(n))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn show_present(&self, names: &[String]) -> String {
        let shown: Vec<String> = names
            .iter()
            .filter(|n| self.s.has(n))
            .map(|n| self.show(n))
            .collect();
        if shown.is_empty() {
            "none in the input".into()
        } else {
            shown.join(", ")
        }
    }

    fn prio_names(&self, dir: &str, what: &str) -> Vec<String> {
        (0..8).map(|p| format!("{dir}_prio{p}_{what}")).collect()
    }

    /// Discards per priority (`rx_prio{p}_discards`, …) that the input has.
    fn prio_discards(&self) -> Vec<String> {
        PRIO_DISCARDS
            .iter()
            .flat_map(|w| self.prio_names("rx", w))
            .filter(|n| self.s.has(n))
            .collect()
    }

    /// Frames the port dropped on receive: `rx_discards_phy` (or, without
    /// it, the per-priority discards, which count the same drops) plus the
    /// RDMA receive queues' `out_of_buffer`.
    fn discards(&self) -> u64 {
        let prio: u64 = self.prio_discards().iter().map(|n| self.d(n)).sum();
        self.d("rx_discards_phy").max(prio) + self.d("out_of_buffer")
    }

    /// The share of the series' intervals in which any of `names` rose:
    /// a counter finding's impact.
    fn rose_share<S: AsRef<str>>(&self, names: &[S]) -> f64 {
        let mut at: Vec<u64> = names
            .iter()
            .flat_map(|n| rising_at(&self.s.steps(n.as_ref())))
            .collect();
        at.sort_unstable();
        at.dedup();
        share(
            at.len() as u64,
            self.s.snapshots.len().saturating_sub(1) as u64,
        )
    }

    fn prefix(&self) -> String {
        self.s.endpoint.to_string()
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

/// Steps keyed by their end time, for "in the same interval" questions.
fn rising_at(steps: &[Step]) -> Vec<u64> {
    steps
        .iter()
        .filter(|s| s.delta.is_some_and(|d| d > 0))
        .map(|s| s.to_ns)
        .collect()
}

/// Findings from every series, ranked by severity, then impact.
pub fn diagnose(series: &[Series]) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in series.iter().filter(|s| s.snapshots.len() >= 2) {
        let v = View::new(s);
        ghost(&v, &mut out);
        loss(&v, &mut out);
        retries(&v, &mut out);
        storm_and_pressure(&v, &mut out);
        np_silent(&v, &mut out);
        cc_ignored(&v, &mut out);
        corruption(&v, &mut out);
    }
    cnps_unhandled(series, &mut out);
    rank_findings(&mut out);
    out
}

/// `impact`: the share of the series' intervals (or of its time) the
/// evidence covers (docs/counters.md).
fn finding(
    id: &'static str,
    severity: Severity,
    impact: f64,
    title: String,
    detail: String,
    recommendation: &str,
) -> Finding {
    Finding {
        wireshark: None,
        id,
        severity,
        impact,
        title,
        detail,
        recommendation: recommendation.to_string(),
        flows: Vec::new(),
        params: Default::default(),
    }
}

/// Timeouts / adaptive retransmissions while the port was paused, with no
/// discard or corruption to explain them.
fn ghost(v: &View, out: &mut Vec<Finding>) {
    let retrans = v.sum(&TIMEOUTS);
    let durations = v.prio_names("rx", "pause_duration");
    let paused_us: u64 = durations.iter().map(|n| v.d(n)).sum();
    if retrans == 0 || paused_us == 0 {
        return;
    }
    if v.discards() + v.sum(&CORRUPTION) > 0 {
        return;
    }
    // Both in the same interval: the retransmissions happened while paused.
    let mut retrans_at: Vec<u64> = TIMEOUTS
        .iter()
        .flat_map(|n| rising_at(&v.s.steps(n)))
        .collect();
    retrans_at.sort_unstable();
    retrans_at.dedup();
    let mut paused_at: Vec<u64> = durations
        .iter()
        .flat_map(|n| rising_at(&v.s.steps(n)))
        .collect();
    paused_at.sort_unstable();
    paused_at.dedup();
    let together = retrans_at
        .iter()
        .filter(|t| paused_at.binary_search(t).is_ok())
        .count();
    if together == 0 {
        return;
    }
    let intervals = v.s.snapshots.len() - 1;
    // The longest pause lies within one interval: its pause time bounds it.
    let (worst_prio, worst_us) = durations
        .iter()
        .enumerate()
        .flat_map(|(p, n)| {
            v.s.steps(n)
                .into_iter()
                .map(move |s| (p, s.delta.unwrap_or(0)))
        })
        .max_by_key(|&(p, d)| (d, std::cmp::Reverse(p)))
        .unwrap_or((0, 0));
    let paused_prios: Vec<String> = durations
        .iter()
        .filter(|n| v.d(n) > 0)
        .map(|n| v.show(n))
        .collect();
    let mut checked: Vec<String> = DISCARDS
        .iter()
        .chain(CORRUPTION.iter())
        .filter(|n| v.s.has(n))
        .map(|n| format!("{n} +0"))
        .collect();
    if !v.prio_discards().is_empty() {
        checked.push("rx_prio*_discards +0".into());
    }
    let missing: Vec<&str> = DISCARDS
        .iter()
        .chain(CORRUPTION.iter())
        .filter(|n| !v.s.has(n))
        .copied()
        .collect();
    let mut detail = format!(
        "{}: {} while {} (pause received: the port could not send for {:.1} % of the {}); in {together} of {intervals} intervals both rose; flat: {}",
        v.prefix(),
        v.show_all(&TIMEOUTS),
        paused_prios.join(", "),
        paused_us as f64 / 1e4 / v.span_s.max(1e-9),
        super::fmt_seconds(v.span_s),
        if checked.is_empty() {
            "none of the discard/CRC counters is in the input".to_string()
        } else {
            checked.join(", ")
        }
    );
    if !missing.is_empty() {
        detail.push_str(&format!(" (not in the input: {})", missing.join(", ")));
    }
    detail.push_str(&format!(
        "; sequence errors: {}; {}",
        v.show_all(&SEQUENCE),
        v.show("duplicate_request")
    ));
    let target_ns = worst_us.saturating_mul(1000);
    let t = timeout_exponent(target_ns);
    let recommendation = format!(
        "Packets were delayed behind PFC pauses, not lost: raise the minimum retransmission timeout above the longest pause. The counters bound it by the most pause time in one interval ({worst_us} µs on priority {worst_prio}): the local ACK timeout is 4.096 µs × 2^T, so T ≥ {t} (ibv_modify_qp attr.timeout / NCCL_IB_TIMEOUT, or the NIC's minimum-RTO setting); a capture of the same minutes gives the exact longest pause. Then shorten the pauses: mark ECN earlier than PFC triggers"
    );
    out.push(finding(
        "ghost-drop-signature",
        Severity::Critical,
        share(together as u64, intervals as u64),
        format!(
            "Ghost-drop signature on {}: {retrans} timeouts/adaptive retransmissions while paused {paused_us} µs, with no discards or CRC errors",
            v.prefix()
        ),
        detail,
        &recommendation,
    ));
}

/// Sequence errors: critical with local discards or corruption to explain
/// them, a warning (the loss is elsewhere on the path) without.
fn loss(v: &View, out: &mut Vec<Finding>) {
    let seq = v.sum(&SEQUENCE);
    if seq == 0 {
        return;
    }
    let prio_discards = v.prio_discards();
    let discards = v.discards();
    let corrupt = v.sum(&CORRUPTION);
    let local = discards + corrupt > 0;
    let evidence: Vec<String> = DISCARDS
        .iter()
        .chain(CORRUPTION.iter())
        .map(|n| n.to_string())
        .chain(prio_discards.into_iter().filter(|n| v.d(n) > 0))
        .collect();
    let detail = format!(
        "{}: {}; local evidence: {}",
        v.prefix(),
        v.show_all(&SEQUENCE),
        v.show_present(&evidence)
    );
    let (severity, title, rec) = if local {
        (
            Severity::Critical,
            format!(
                "Real loss on {}: {seq} sequence errors with {discards} discards and {corrupt} corrupted frames",
                v.prefix()
            ),
            "Frames are being lost at this port: discards mean the receive buffer overflowed (PFC headroom, or PFC not enabled on the RoCE priority); CRC/symbol errors mean a bad link (see link-corruption)",
        )
    } else {
        (
            Severity::Warning,
            format!(
                "Real loss elsewhere on the path of {}: {seq} sequence errors, no local discards or CRC errors",
                v.prefix()
            ),
            "The PSN holes were made upstream: check the switches' discard and FCS counters on the RoCE priority along the path, and the peer's receive counters",
        )
    };
    out.push(finding(
        "real-loss",
        severity,
        v.rose_share(&SEQUENCE),
        title,
        detail,
        rec,
    ));
}

/// Requesters that gave up: transport or RNR retries exhausted.
/// (`rnr_nak_retry_err` is not one: it counts RNR NAKs that did *not*
/// exceed the retry limit.)
fn retries(v: &View, out: &mut Vec<Finding>) {
    let names = ["req_transport_retries_exceeded", "req_rnr_retries_exceeded"];
    let n = v.sum(&names);
    if n == 0 {
        return;
    }
    out.push(finding(
        "retries-exceeded",
        Severity::Critical,
        v.rose_share(&names),
        format!("Requesters on {} exhausted their retries {n} times", v.prefix()),
        format!("{}: {}; {}", v.prefix(), v.show_all(&names), v.show_all(&TIMEOUTS)),
        "A QP that exceeds its retry count goes to the error state and the application sees a failed work request: find the loss or the stall (the other findings) before raising retry_cnt",
    ));
}

/// Pause time close to the interval (storm), storm events, or any pause
/// time at all (pressure).
fn storm_and_pressure(v: &View, out: &mut Vec<Finding>) {
    let events = [
        "tx_pause_storm_warning_events",
        "tx_pause_storm_error_events",
    ];
    let storm_events = v.sum(&events);
    let mut storms: Vec<String> = Vec::new();
    let mut stormy: Vec<(String, u8)> = Vec::new();
    // The most intervals one priority spent in a storm, as a share.
    let mut storm_share: f64 = 0.0;
    for dir in ["rx", "tx"] {
        for p in 0..8u8 {
            let name = format!("{dir}_prio{p}_pause_duration");
            let steps = v.s.steps(&name);
            let fractions: Vec<f64> = steps
                .iter()
                .filter_map(|s| {
                    let ns = s.to_ns - s.from_ns;
                    (ns > 0).then(|| s.delta.unwrap_or(0) as f64 * 1000.0 / ns as f64)
                })
                .collect();
            let hits = fractions.iter().filter(|&&f| f >= STORM_FRACTION).count();
            if hits > 0 {
                storm_share = storm_share.max(share(hits as u64, steps.len() as u64));
                let max = fractions.iter().cloned().fold(0.0, f64::max);
                storms.push(format!(
                    "priority {p} {} for ≥ {:.0} % of {hits} of {} intervals (at most {:.1} %), {}",
                    if dir == "rx" {
                        "paused by the peer"
                    } else {
                        "pausing the peer"
                    },
                    STORM_FRACTION * 100.0,
                    steps.len(),
                    max * 100.0,
                    v.show(&name)
                ));
                stormy.push((dir.to_string(), p));
            }
        }
    }
    if !storms.is_empty() || storm_events > 0 {
        let error_events = v.d("tx_pause_storm_error_events");
        out.push(finding(
            "pfc-storm",
            Severity::Critical,
            storm_share.min(1.0),
            format!(
                "PFC storm on {}: {}{storm_events} storm events",
                v.prefix(),
                if stormy.is_empty() {
                    String::new()
                } else {
                    let prios: Vec<String> = stormy.iter().map(|(_, p)| p.to_string()).collect();
                    format!("priority {} paused nearly all the time, ", prios.join(", "))
                }
            ),
            format!(
                "{}: {}{}{}",
                v.prefix(),
                storms.join("; "),
                if storms.is_empty() { "" } else { "; " },
                v.show_all(&events)
            ),
            if error_events > 0 {
                "The NIC's PFC watchdog stopped sending pauses (storm error events): frames may have been dropped meanwhile. Find the receiver that cannot drain (a stuck host, a loop of pauses), and keep the watchdog on"
            } else {
                "A port paused for whole intervals: something downstream cannot drain. Find the receiver that stopped (a stuck host, a deadlock of pauses) and enable a PFC watchdog on the switches"
            },
        ));
    }
    if v.span_s <= 0.0 {
        return;
    }
    for p in 0..8u8 {
        let name = format!("rx_prio{p}_pause_duration");
        let us = v.d(&name);
        if us == 0 || stormy.iter().any(|(d, q)| d == "rx" && *q == p) {
            continue;
        }
        let fraction = us as f64 / 1e6 / v.span_s;
        let severity = if fraction >= PRESSURE_CRITICAL {
            Severity::Critical
        } else if fraction >= PRESSURE_WARNING {
            Severity::Warning
        } else {
            Severity::Info
        };
        out.push(finding(
            "pfc-pressure",
            severity,
            fraction.min(1.0),
            format!(
                "Priority {p} of {} paused {:.2} % of the time",
                v.prefix(),
                fraction * 100.0
            ),
            format!(
                "{}: {}, {}, {} over {}",
                v.prefix(),
                v.show(&name),
                v.show(&format!("rx_prio{p}_pause")),
                v.show(&format!("rx_prio{p}_pause_transition")),
                super::fmt_seconds(v.span_s)
            ),
            "Pauses received on a lossless priority stop the NIC's sends: tune ECN to mark before the switch's PFC threshold so DCQCN slows senders first",
        ));
    }
}

/// CE-marked packets arrived but the notification point sent no CNP.
fn np_silent(v: &View, out: &mut Vec<Finding>) {
    let marked = v.d("np_ecn_marked_roce_packets");
    if marked == 0 || !v.s.has("np_cnp_sent") || v.d("np_cnp_sent") > 0 {
        return;
    }
    out.push(finding(
        "ecn-path-broken",
        Severity::Critical,
        v.rose_share(&["np_ecn_marked_roce_packets"]),
        format!(
            "{marked} CE-marked RoCE packets reached {} and no CNP was sent back",
            v.prefix()
        ),
        format!(
            "{}: {}, {}",
            v.prefix(),
            v.show("np_ecn_marked_roce_packets"),
            v.show("np_cnp_sent")
        ),
        "The notification point ignores ECN: enable DCQCN's notification point on this NIC for the RoCE priority (mlnx_qos / the ecn sysfs knobs, roce_np enable), or the senders never slow down and PFC does all the work",
    ));
}

/// CNPs reached the reaction point and were ignored.
fn cc_ignored(v: &View, out: &mut Vec<Finding>) {
    let ignored = v.d("rp_cnp_ignored");
    if ignored == 0 {
        return;
    }
    out.push(finding(
        "cc-not-reacting",
        Severity::Warning,
        v.rose_share(&["rp_cnp_ignored"]),
        format!("{} ignored {ignored} CNPs", v.prefix()),
        format!(
            "{}: {}, {}",
            v.prefix(),
            v.show("rp_cnp_ignored"),
            v.show("rp_cnp_handled")
        ),
        "The reaction point received CNPs and did not slow down: enable DCQCN's reaction point for the RoCE priority on this NIC (roce_rp enable), so CE marks turn into lower send rates",
    ));
}

/// CNPs sent by one endpoint that no other endpoint handled or ignored.
fn cnps_unhandled(series: &[Series], out: &mut Vec<Finding>) {
    let usable: Vec<View> = series
        .iter()
        .filter(|s| s.snapshots.len() >= 2)
        .map(View::new)
        .collect();
    for v in &usable {
        let sent = v.d("np_cnp_sent");
        if sent == 0 {
            continue;
        }
        let others: Vec<&View> = usable
            .iter()
            .filter(|o| o.s.endpoint != v.s.endpoint && o.s.has("rp_cnp_handled"))
            .collect();
        if others.is_empty() {
            continue;
        }
        let received: u64 = others
            .iter()
            .map(|o| o.d("rp_cnp_handled") + o.d("rp_cnp_ignored"))
            .sum();
        if received > 0 {
            continue;
        }
        let names: Vec<String> = others
            .iter()
            .map(|o| format!("{}: {}", o.prefix(), o.show("rp_cnp_handled")))
            .collect();
        out.push(finding(
            "ecn-path-broken",
            Severity::Critical,
            v.rose_share(&["np_cnp_sent"]),
            format!(
                "{} sent {sent} CNPs and none was handled by the other endpoints",
                v.prefix()
            ),
            format!(
                "{}: {}; {}",
                v.prefix(),
                v.show("np_cnp_sent"),
                names.join("; ")
            ),
            "CNPs are lost or misrouted between the notification and reaction points: check that CNPs travel on a priority the switches forward (often a dedicated DSCP/priority for CNPs), are not dropped by ACLs, and reach the senders' NICs",
        ));
    }
}

/// FCS/symbol errors (frames lost), or FEC corrections rising (margin lost).
fn corruption(v: &View, out: &mut Vec<Finding>) {
    let bad = v.sum(&CORRUPTION);
    let corrected = v.d("rx_corrected_bits_phy");
    if bad == 0 && corrected == 0 {
        return;
    }
    let bits = v.d("rx_bits_phy");
    let mut detail = format!(
        "{}: {}, {}",
        v.prefix(),
        v.show_all(&CORRUPTION),
        v.show("rx_corrected_bits_phy")
    );
    if bits > 0 {
        detail.push_str(&format!(
            "; corrected bit rate {:.2e} of {} bits received",
            corrected as f64 / bits as f64,
            bits
        ));
    }
    let (severity, title) = if bad > 0 {
        (
            Severity::Critical,
            format!("Link corruption on {}: {bad} frames damaged", v.prefix()),
        )
    } else {
        (
            Severity::Warning,
            format!(
                "FEC is correcting errors on {}: {corrected} corrected bits",
                v.prefix()
            ),
        )
    };
    out.push(finding(
        "link-corruption",
        severity,
        v.rose_share(&[&CORRUPTION[..], &["rx_corrected_bits_phy"]].concat()),
        title,
        detail,
        "A link with rising FCS/symbol errors or FEC corrections has a bad cable, transceiver or dirty connector: check the module (mlxlink, ethtool -m), reseat or replace it; a damaged RoCE frame is a lost frame, recovered only by a NAK or a timeout",
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::model::{Endpoint, Snapshot, Source, into_series};

    /// Two snapshots a minute apart with the given (name, first, last) values.
    fn series(values: &[(&str, u64, u64)]) -> Vec<Series> {
        let ep = Endpoint {
            host: Some("h".into()),
            ..Endpoint::default()
        };
        let mut a = Snapshot::new(0, ep.clone());
        let mut b = Snapshot::new(60_000_000_000, ep);
        for &(n, x, y) in values {
            a.set(n, x, Source::Rdma);
            b.set(n, y, Source::Rdma);
        }
        into_series(vec![a, b])
    }

    #[test]
    fn exhausted_retries_but_not_rnr_naks_within_the_limit() {
        let f = diagnose(&series(&[
            ("req_transport_retries_exceeded", 1, 4),
            ("rnr_nak_retry_err", 0, 50),
        ]));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].id, "retries-exceeded");
        assert_eq!(
            f[0].title,
            "Requesters on host h exhausted their retries 3 times"
        );
        assert!(
            f[0].detail
                .contains("req_transport_retries_exceeded +3 (0.050/s)")
        );
        // RNR NAKs that stayed within the retry limit are no finding.
        assert!(diagnose(&series(&[("rnr_nak_retry_err", 0, 50)])).is_empty());
    }

    #[test]
    fn a_single_snapshot_or_a_reset_makes_no_finding() {
        let one = into_series(vec![{
            let mut s = Snapshot::new(0, Endpoint::default());
            s.set("rx_crc_errors_phy", 9, Source::Ethtool);
            s
        }]);
        assert!(diagnose(&one).is_empty());
        // 9 → 2: a reset, not -7 errors and not +2.
        assert!(diagnose(&series(&[("rx_crc_errors_phy", 9, 2)])).is_empty());
    }

    #[test]
    fn corrected_bits_alone_are_a_warning() {
        let f = diagnose(&series(&[("rx_corrected_bits_phy", 0, 600)]));
        assert_eq!(f.len(), 1);
        assert_eq!(
            (f[0].id, f[0].severity),
            ("link-corruption", Severity::Warning)
        );
        assert_eq!(
            f[0].title,
            "FEC is correcting errors on host h: 600 corrected bits"
        );
    }
}
