//! What a counter finding holds: the deltas that prove it, computed in
//! [`super::diagnose`] and worded in `crate::counters::words`.
use crate::analyze::Severity;

/// One counter's delta over a series, as a finding quotes it (with the
/// series' span, its mean rate).
#[derive(Clone, Debug, PartialEq)]
pub struct Quote {
    pub name: String,
    pub delta: u64,
    /// Whether the input has the counter at all (a missing one is said so,
    /// never shown as +0).
    pub present: bool,
}

/// A finding from one endpoint's counters (or, for `ecn-path-broken` by
/// unhandled CNPs, from the sender's and its peers').
#[derive(Clone, Debug, PartialEq)]
pub struct CounterDiagnosis {
    pub severity: Severity,
    /// The share of the series' intervals (or of its time) the evidence
    /// covers (docs/counters.md).
    pub impact: f64,
    /// The endpoint, as `Endpoint`'s `Display` names it.
    pub endpoint: String,
    /// Seconds the endpoint's series spans: the quotes' rates are over it.
    pub span_s: f64,
    pub evidence: CounterEvidence,
}

#[derive(Clone, Debug, PartialEq)]
pub enum CounterEvidence {
    Ghost(Ghost),
    Loss(Loss),
    Retries {
        exhausted: u64,
        counters: Vec<Quote>,
        timeouts: Vec<Quote>,
    },
    Storm(Storm),
    Pressure {
        priority: u8,
        /// Pause time received over the series' span.
        fraction: f64,
        duration: Quote,
        pauses: Quote,
        transitions: Quote,
    },
    /// CE-marked packets reached the notification point, no CNP left it.
    NpSilent {
        marked: Quote,
        cnps_sent: Quote,
    },
    /// CNPs reached the reaction point and were ignored.
    CcIgnored {
        ignored: Quote,
        handled: Quote,
    },
    /// CNPs sent that no other endpoint handled or ignored: the sender's
    /// count, and each peer's handled count.
    CnpsUnhandled {
        sent: Quote,
        peers: Vec<Peer>,
    },
    Corruption(Corruption),
}

impl CounterEvidence {
    /// The finding's id (docs/counters.md).
    pub fn id(&self) -> &'static str {
        match self {
            CounterEvidence::Ghost(_) => "ghost-drop-signature",
            CounterEvidence::Loss(_) => "real-loss",
            CounterEvidence::Retries { .. } => "retries-exceeded",
            CounterEvidence::Storm(_) => "pfc-storm",
            CounterEvidence::Pressure { .. } => "pfc-pressure",
            CounterEvidence::NpSilent { .. } | CounterEvidence::CnpsUnhandled { .. } => {
                "ecn-path-broken"
            }
            CounterEvidence::CcIgnored { .. } => "cc-not-reacting",
            CounterEvidence::Corruption(_) => "link-corruption",
        }
    }
}

/// `ghost-drop-signature`: timeouts while paused, nothing lost locally.
#[derive(Clone, Debug, PartialEq)]
pub struct Ghost {
    /// Timeouts and adaptive retransmissions, summed.
    pub retransmissions: u64,
    pub paused_us: u64,
    /// Intervals in which both rose, of all.
    pub together: usize,
    pub intervals: usize,
    pub timeouts: Vec<Quote>,
    /// The receive pause durations that rose.
    pub paused: Vec<Quote>,
    /// The discard and corruption counters the input has, all flat.
    pub flat: Vec<&'static str>,
    /// Whether per-priority discard counters were checked (flat) too.
    pub flat_prio_discards: bool,
    /// The discard and corruption counters the input lacks.
    pub missing: Vec<&'static str>,
    pub sequence: Vec<Quote>,
    pub duplicate_requests: Quote,
    /// The most pause time in one interval (µs) and its priority: a bound
    /// on the longest pause.
    pub worst_us: u64,
    pub worst_priority: usize,
    /// The local ACK timeout exponent above `worst_us`.
    pub timeout_exponent: u32,
}

/// `real-loss`: sequence errors, with or without local evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct Loss {
    pub sequence_errors: u64,
    pub discards: u64,
    pub corrupted: u64,
    pub sequence: Vec<Quote>,
    /// Discard and corruption counters the input has (per-priority
    /// discards only when they rose).
    pub local: Vec<Quote>,
}

/// An endpoint that could have handled another's CNPs.
#[derive(Clone, Debug, PartialEq)]
pub struct Peer {
    pub endpoint: String,
    /// Its own series' span (its quote's rate is over it).
    pub span_s: f64,
    pub handled: Quote,
}

/// `pfc-storm`: priorities paused for whole intervals, or storm events.
#[derive(Clone, Debug, PartialEq)]
pub struct Storm {
    pub priorities: Vec<StormPriority>,
    /// Storm warning and error events, summed, and each.
    pub events: u64,
    pub error_events: u64,
    pub event_counters: Vec<Quote>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StormPriority {
    /// Paused by the peer (`rx`), or pausing it.
    pub received: bool,
    pub priority: u8,
    /// Intervals at least `STORM_FRACTION` paused, of all.
    pub hits: usize,
    pub intervals: usize,
    /// The largest paused share of one interval.
    pub max_fraction: f64,
    pub duration: Quote,
}

/// `link-corruption`: damaged frames, or FEC corrections.
#[derive(Clone, Debug, PartialEq)]
pub struct Corruption {
    pub damaged: u64,
    pub corrected: u64,
    pub counters: Vec<Quote>,
    pub corrected_bits: Quote,
    /// Bits received (`rx_bits_phy`), when counted.
    pub bits: u64,
}
