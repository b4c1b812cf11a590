//! Findings from counters alone: each computes a [`CounterDiagnosis`]
//! holding the deltas (and the span their rates are taken over) that prove
//! it; `crate::counters::words` words it into the capture analysis'
//! [`crate::analyze::Finding`] vocabulary. docs/counters.md defines each
//! one and its thresholds.
pub use super::evidence::{
    Corruption, CounterDiagnosis, CounterEvidence, Ghost, Loss, Peer, Quote, Storm, StormPriority,
};
use super::model::{Series, Step};
use crate::analyze::Severity;
use crate::analyze::{rank_by, share, timeout_exponent};

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
const RETRIES: [&str; 2] = ["req_transport_retries_exceeded", "req_rnr_retries_exceeded"];
const STORM_EVENTS: [&str; 2] = [
    "tx_pause_storm_warning_events",
    "tx_pause_storm_error_events",
];

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

    fn quote(&self, name: &str) -> Quote {
        Quote {
            name: name.to_string(),
            delta: self.d(name),
            present: self.s.has(name),
        }
    }

    fn quotes(&self, names: &[&str]) -> Vec<Quote> {
        names.iter().map(|n| self.quote(n)).collect()
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

    fn diagnosis(
        &self,
        severity: Severity,
        impact: f64,
        evidence: CounterEvidence,
    ) -> CounterDiagnosis {
        CounterDiagnosis {
            severity,
            impact,
            endpoint: self.s.endpoint.to_string(),
            span_s: self.span_s,
            evidence,
        }
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
pub fn diagnose(series: &[Series]) -> Vec<CounterDiagnosis> {
    let mut out = Vec::new();
    for s in series.iter().filter(|s| s.snapshots.len() >= 2) {
        let v = View::new(s);
        out.extend(ghost(&v));
        out.extend(loss(&v));
        out.extend(retries(&v));
        storm_and_pressure(&v, &mut out);
        out.extend(np_silent(&v));
        out.extend(cc_ignored(&v));
        out.extend(corruption(&v));
    }
    cnps_unhandled(series, &mut out);
    rank_by(&mut out, |d| (d.severity, d.impact));
    out
}

/// Timeouts / adaptive retransmissions while the port was paused, with no
/// discard or corruption to explain them.
fn ghost(v: &View) -> Option<CounterDiagnosis> {
    let retrans = v.sum(&TIMEOUTS);
    let durations = v.prio_names("rx", "pause_duration");
    let paused_us: u64 = durations.iter().map(|n| v.d(n)).sum();
    if retrans == 0 || paused_us == 0 {
        return None;
    }
    if v.discards() + v.sum(&CORRUPTION) > 0 {
        return None;
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
        return None;
    }
    let intervals = v.s.snapshots.len() - 1;
    // The longest pause lies within one interval: its pause time bounds it.
    let (worst_priority, worst_us) = durations
        .iter()
        .enumerate()
        .flat_map(|(p, n)| {
            v.s.steps(n)
                .into_iter()
                .map(move |s| (p, s.delta.unwrap_or(0)))
        })
        .max_by_key(|&(p, d)| (d, std::cmp::Reverse(p)))
        .unwrap_or((0, 0));
    let local = || DISCARDS.iter().chain(CORRUPTION.iter());
    let evidence = Ghost {
        retransmissions: retrans,
        paused_us,
        together,
        intervals,
        timeouts: v.quotes(&TIMEOUTS),
        paused: durations
            .iter()
            .filter(|n| v.d(n) > 0)
            .map(|n| v.quote(n))
            .collect(),
        flat: local().filter(|n| v.s.has(n)).copied().collect(),
        flat_prio_discards: !v.prio_discards().is_empty(),
        missing: local().filter(|n| !v.s.has(n)).copied().collect(),
        sequence: v.quotes(&SEQUENCE),
        duplicate_requests: v.quote("duplicate_request"),
        worst_us,
        worst_priority,
        timeout_exponent: timeout_exponent(worst_us.saturating_mul(1000)),
    };
    Some(v.diagnosis(
        Severity::Critical,
        share(together as u64, intervals as u64),
        CounterEvidence::Ghost(evidence),
    ))
}

/// Sequence errors: critical with local discards or corruption to explain
/// them, a warning (the loss is elsewhere on the path) without.
fn loss(v: &View) -> Option<CounterDiagnosis> {
    let seq = v.sum(&SEQUENCE);
    if seq == 0 {
        return None;
    }
    let prio_discards = v.prio_discards();
    let discards = v.discards();
    let corrupt = v.sum(&CORRUPTION);
    let local: Vec<Quote> = DISCARDS
        .iter()
        .chain(CORRUPTION.iter())
        .map(|n| n.to_string())
        .chain(prio_discards.into_iter().filter(|n| v.d(n) > 0))
        .filter(|n| v.s.has(n))
        .map(|n| v.quote(&n))
        .collect();
    let severity = if discards + corrupt > 0 {
        Severity::Critical
    } else {
        Severity::Warning
    };
    Some(v.diagnosis(
        severity,
        v.rose_share(&SEQUENCE),
        CounterEvidence::Loss(Loss {
            sequence_errors: seq,
            discards,
            corrupted: corrupt,
            sequence: v.quotes(&SEQUENCE),
            local,
        }),
    ))
}

/// Requesters that gave up: transport or RNR retries exhausted.
/// (`rnr_nak_retry_err` is not one: it counts RNR NAKs that did *not*
/// exceed the retry limit.)
fn retries(v: &View) -> Option<CounterDiagnosis> {
    let n = v.sum(&RETRIES);
    (n > 0).then(|| {
        v.diagnosis(
            Severity::Critical,
            v.rose_share(&RETRIES),
            CounterEvidence::Retries {
                exhausted: n,
                counters: v.quotes(&RETRIES),
                timeouts: v.quotes(&TIMEOUTS),
            },
        )
    })
}

/// Pause time close to the interval (storm), storm events, or any pause
/// time at all (pressure).
fn storm_and_pressure(v: &View, out: &mut Vec<CounterDiagnosis>) {
    let events = v.sum(&STORM_EVENTS);
    let mut priorities = Vec::new();
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
                priorities.push(StormPriority {
                    received: dir == "rx",
                    priority: p,
                    hits,
                    intervals: steps.len(),
                    max_fraction: fractions.iter().cloned().fold(0.0, f64::max),
                    duration: v.quote(&name),
                });
            }
        }
    }
    let stormy_rx = |p: u8| priorities.iter().any(|s| s.received && s.priority == p);
    let mut pressure = Vec::new();
    if v.span_s > 0.0 {
        for p in 0..8u8 {
            let name = format!("rx_prio{p}_pause_duration");
            let us = v.d(&name);
            if us == 0 || stormy_rx(p) {
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
            pressure.push(v.diagnosis(
                severity,
                fraction.min(1.0),
                CounterEvidence::Pressure {
                    priority: p,
                    fraction,
                    duration: v.quote(&name),
                    pauses: v.quote(&format!("rx_prio{p}_pause")),
                    transitions: v.quote(&format!("rx_prio{p}_pause_transition")),
                },
            ));
        }
    }
    if !priorities.is_empty() || events > 0 {
        out.push(v.diagnosis(
            Severity::Critical,
            storm_share.min(1.0),
            CounterEvidence::Storm(Storm {
                priorities,
                events,
                error_events: v.d("tx_pause_storm_error_events"),
                event_counters: v.quotes(&STORM_EVENTS),
            }),
        ));
    }
    out.extend(pressure);
}

/// CE-marked packets arrived but the notification point sent no CNP.
fn np_silent(v: &View) -> Option<CounterDiagnosis> {
    let marked = v.d("np_ecn_marked_roce_packets");
    if marked == 0 || !v.s.has("np_cnp_sent") || v.d("np_cnp_sent") > 0 {
        return None;
    }
    Some(v.diagnosis(
        Severity::Critical,
        v.rose_share(&["np_ecn_marked_roce_packets"]),
        CounterEvidence::NpSilent {
            marked: v.quote("np_ecn_marked_roce_packets"),
            cnps_sent: v.quote("np_cnp_sent"),
        },
    ))
}

/// CNPs reached the reaction point and were ignored.
fn cc_ignored(v: &View) -> Option<CounterDiagnosis> {
    (v.d("rp_cnp_ignored") > 0).then(|| {
        v.diagnosis(
            Severity::Warning,
            v.rose_share(&["rp_cnp_ignored"]),
            CounterEvidence::CcIgnored {
                ignored: v.quote("rp_cnp_ignored"),
                handled: v.quote("rp_cnp_handled"),
            },
        )
    })
}

/// CNPs sent by one endpoint that no other endpoint handled or ignored.
fn cnps_unhandled(series: &[Series], out: &mut Vec<CounterDiagnosis>) {
    let usable: Vec<View> = series
        .iter()
        .filter(|s| s.snapshots.len() >= 2)
        .map(View::new)
        .collect();
    for v in &usable {
        if v.d("np_cnp_sent") == 0 {
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
        out.push(
            v.diagnosis(
                Severity::Critical,
                v.rose_share(&["np_cnp_sent"]),
                CounterEvidence::CnpsUnhandled {
                    sent: v.quote("np_cnp_sent"),
                    peers: others
                        .iter()
                        .map(|o| Peer {
                            endpoint: o.s.endpoint.to_string(),
                            span_s: o.span_s,
                            handled: o.quote("rp_cnp_handled"),
                        })
                        .collect(),
                },
            ),
        );
    }
}

/// FCS/symbol errors (frames lost), or FEC corrections rising (margin lost).
fn corruption(v: &View) -> Option<CounterDiagnosis> {
    let bad = v.sum(&CORRUPTION);
    let corrected = v.d("rx_corrected_bits_phy");
    if bad == 0 && corrected == 0 {
        return None;
    }
    let severity = if bad > 0 {
        Severity::Critical
    } else {
        Severity::Warning
    };
    Some(v.diagnosis(
        severity,
        v.rose_share(&[&CORRUPTION[..], &["rx_corrected_bits_phy"]].concat()),
        CounterEvidence::Corruption(Corruption {
            damaged: bad,
            corrected,
            counters: v.quotes(&CORRUPTION),
            corrected_bits: v.quote("rx_corrected_bits_phy"),
            bits: v.d("rx_bits_phy"),
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::Finding;
    use crate::counters::model::{Endpoint, Snapshot, Source, into_series};

    /// The findings as `counters report` words them.
    fn diagnose(series: &[Series]) -> Vec<Finding> {
        super::diagnose(series)
            .iter()
            .map(crate::counters::words::word)
            .collect()
    }

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
