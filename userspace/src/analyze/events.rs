//! The events (`events.parquet`, docs/tables.md): what the trackers hand
//! the [`Sink`](super::Sink) as each happens. An event's `detail` is a
//! value here, one struct per kind of event; `crate::render::events`
//! words it into the table's `detail` column.

use serde::Serialize;

use super::rows::{GapClass, PauseEnd, Trigger};

/// What an event is (`events.parquet`'s `kind`; docs/tables.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Rewind,
    Gap,
    /// A missing PSN resolved (`late`, `lost_before_tap`, …).
    Resolved(GapClass),
    Nak,
    RnrNak,
    Cnp,
    PfcPause,
    PfcStorm,
}

impl EventKind {
    /// As in `events.parquet`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Rewind => "rewind",
            EventKind::Gap => "gap",
            EventKind::Resolved(class) => class.as_str(),
            EventKind::Nak => "nak",
            EventKind::RnrNak => "rnr_nak",
            EventKind::Cnp => "cnp",
            EventKind::PfcPause => "pfc_pause",
            EventKind::PfcStorm => "pfc_storm",
        }
    }
}

/// A row of `events.parquet`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Event {
    pub ts_ns: u64,
    pub iface: u16,
    pub flow_id: Option<u32>,
    pub kind: EventKind,
    pub psn: Option<u32>,
    pub depth: Option<u32>,
    /// For rewinds: what triggered it.
    pub trigger: Option<Trigger>,
    pub idle_us: Option<f64>,
    /// What the `detail` column tells, as values; its variant is the one
    /// of `kind`.
    pub detail: EventDetail,
}

/// An event's particulars, one variant per [`EventKind`] (the resolved
/// gap classes share one, `late` has its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventDetail {
    PfcPause(PauseStart),
    PfcStorm(Storm),
    Rewind(RewindDetail),
    Gap(Missing),
    Late(LatePsn),
    Resolved(ResolvedPsns),
    Nak(NakDetail),
    Cnp(CnpDetail),
}

/// A sender paused a priority that was not paused by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PauseStart {
    pub priority: u8,
    pub src_mac: [u8; 6],
    pub quanta: u16,
    /// The quanta at the tap's link speed.
    pub pause_ns: u64,
}

/// One sender's pause of a priority lasted longer than the storm
/// threshold (`--storm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Storm {
    pub priority: u8,
    pub src_mac: [u8; 6],
    pub start_ns: u64,
    /// How long the pause lasted.
    pub paused_ns: u64,
    pub threshold_ns: u64,
    /// PFC frames that made up the pause.
    pub frames: u64,
    pub ended_by: PauseEnd,
}

/// A go-back-N rewind: the sender resent from `psn` after it had sent up
/// to `next`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RewindDetail {
    /// The next PSN the flow expected before the rewind.
    pub next: u32,
    /// The PSN resent.
    pub psn: u32,
    pub depth: u32,
    pub trigger: Trigger,
    /// How long before the rewind the NAK or RNR NAK that triggered it was
    /// seen; none for a timeout.
    pub nak_before_ns: Option<u64>,
    pub idle_ns: u64,
    /// Of the rewound PSNs, those already acknowledged.
    pub acked: u32,
    /// `psn` had never been seen before.
    pub lost_before_tap: bool,
    /// The pause that covered the most of the idle time, if any did.
    pub paused: Option<PausedIdle>,
}

/// The part of a rewind's idle time a pause covered, and which pause.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PausedIdle {
    pub priority: u8,
    pub paused_ns: u64,
    pub src_mac: [u8; 6],
    /// When that pause began.
    pub start_ns: u64,
}

/// PSNs skipped: `first..=last`, `psns` of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Missing {
    pub psns: u32,
    pub first: u32,
    pub last: u32,
}

/// A missing PSN arrived late, without a resend (`late`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LatePsn {
    pub psn: u32,
    /// How long after it went missing.
    pub late_ns: u64,
    /// How many PSNs after it had been seen first.
    pub psns_late: u32,
}

/// Missing PSNs `first..=last` resolved other than `late`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ResolvedPsns {
    pub class: GapClass,
    pub psns: u32,
    pub first: u32,
    pub last: u32,
    /// How long they had been missing.
    pub missing_ns: u64,
}

/// A NAK or an RNR NAK.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct NakDetail {
    pub psn: u32,
    pub rnr: bool,
    /// The AETH syndrome's low 5 bits: the NAK code, or the RNR timer
    /// code.
    pub code: u8,
    /// The request flow it answers, when paired.
    pub request_flow: Option<u32>,
}

/// A CNP, from the receiver (`src_ip`) to the sender's QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CnpDetail {
    pub src_ip: [u8; 16],
    pub dst_ip: [u8; 16],
    pub qp: u32,
    /// Since the first CE this CNP answers, when the flow's CE was seen.
    pub reaction_ns: Option<u64>,
}
