//! A flow's packet sequence as its transport defines it, judged in
//! transport-neutral terms (docs/build.md, "The Sequencing interface").
//!
//! A transport implements [`Sequencing`] for the data flows it sequences:
//! data packets, acknowledgments and negative acknowledgments go in, and
//! [`Judgement`]s come out — new data, a gap opened, missing sequence
//! numbers resolved (late, lost before the tap, NACKed, missed by the
//! capture, unresolved), a retransmission and whether it was spurious, a
//! rewind. The analyzer acts on the judgements (counts, events, the rewind
//! record) and the findings read what it made of them, so gaps, late
//! packets and spurious retransmissions are judged the same way whatever
//! the transport. RoCE's go-back-N is `transport::roce::sequencing`; a
//! selective-ACK transport (UET's RUD/ROD) fits the same trait: its ACK is
//! an [`Ack::Selective`], its NACK carries a [`NackCode`], and its RETX flag
//! is [`Data::retx`] (the shape is in docs/build.md; the test below is a
//! small one, `transport::uet::sack` UET's own).

use serde::Serialize;

/// How a missing sequence number was resolved (docs/analysis.md, "Gaps").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GapClass {
    /// The original arrived later, with no resend covering it.
    Late,
    /// It first appeared in a resend.
    LostBeforeTap,
    /// A NACK named it.
    NakLost,
    /// Never seen, but an acknowledgment covered it: the tap missed it.
    CaptureLost,
    /// None of these by the end.
    Unresolved,
}

impl GapClass {
    /// The event `kind` and the column suffix.
    pub fn as_str(self) -> &'static str {
        match self {
            GapClass::Late => "late",
            GapClass::LostBeforeTap => "lost_before_tap",
            GapClass::NakLost => "nak_lost",
            GapClass::CaptureLost => "capture_lost",
            GapClass::Unresolved => "unresolved",
        }
    }
}

/// What a negative acknowledgment said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NackCode {
    /// The receiver expected this sequence number and got a later one
    /// (RoCE's PSN sequence error): it was lost.
    Sequence,
    /// The receiver was not ready (RoCE's RNR NAK; UET's no-resources
    /// codes): resend later, nothing was lost.
    NotReady,
    /// A switch trimmed the packet to its headers (UET's `TRIMMED`): a
    /// congestion signal, the payload was dropped on purpose.
    Trimmed,
    /// Any other code, as the transport numbers it (RoCE: the AETH's NAK
    /// code; UET: the NACK code).
    Other(u8),
}

impl NackCode {
    /// Whether the NACK says the named packet was lost (anything but "not
    /// ready").
    pub fn lost(self) -> bool {
        self != NackCode::NotReady
    }
}

/// A data packet of a flow, as its sequencing needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Data {
    pub ts: u64,
    /// Its sequence number.
    pub psn: u32,
    /// Sequence numbers it consumes: at least, at most (a RoCE READ request
    /// stands for its response packets, whose count the path MTU tells;
    /// `(1, 1)` for every other packet).
    pub consumes: (u32, u32),
    /// The sender marked it a retransmission (UET's RETX flag); go-back-N
    /// has no such mark and leaves it false.
    pub retx: bool,
    /// Its service never resends (RoCE's UC): a sequence number seen again
    /// is a stray copy, not a retransmission.
    pub never_resent: bool,
    /// A NACK naming this sequence number was awaiting it.
    pub nacked: Option<NackCode>,
}

/// What one acknowledgment said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ack {
    /// Every sequence number up to and including this one (go-back-N).
    Cumulative(u32),
    /// Every sequence number up to `cumulative`, and those `base + k` whose
    /// bit `k` of `bitmap` is set (UET's SACK).
    Selective {
        cumulative: u32,
        base: u32,
        bitmap: u64,
    },
}

impl Ack {
    /// The sequence number up to which everything is acknowledged.
    pub fn cumulative(&self) -> u32 {
        match *self {
            Ack::Cumulative(c) | Ack::Selective { cumulative: c, .. } => c,
        }
    }
}

/// A negative acknowledgment of one sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nack {
    pub ts: u64,
    pub psn: u32,
    pub code: NackCode,
}

/// Missing sequence numbers `[lo, lo + len)` (`last` the final one, in the
/// transport's arithmetic) resolved as `class` at `at_ns`, missing since
/// `since_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub class: GapClass,
    pub lo: u32,
    pub len: u32,
    pub last: u32,
    pub since_ns: u64,
    pub at_ns: u64,
}

/// A go-back-N rewind: the sender went back to `psn` and sends everything
/// after it again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rewind {
    pub psn: u32,
    /// The next new sequence number before it: the rewind's depth is
    /// `next - psn`.
    pub next: u32,
    pub depth: u32,
    /// Of the `depth` sequence numbers rewound, those already acknowledged.
    pub acked: u32,
    /// `psn` had never been seen: lost before the tap.
    pub lost: bool,
    pub at_ns: u64,
    /// It began at the packet being judged; otherwise at the first of the
    /// earlier arrivals left [`Judgement::Undecided`], whose rewind context
    /// (idle time, pause cover) the caller kept.
    pub here: bool,
}

/// What a packet (or an acknowledgment, or the flow's end) did to the
/// sequence, in the order it happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judgement {
    /// New data: at or past the next sequence number expected.
    New,
    /// New data past `psns` sequence numbers never seen, `first..=last`.
    GapOpened { first: u32, psns: u32, last: u32 },
    /// Missing sequence numbers resolved.
    Resolved(Resolved),
    /// A missing sequence number arrived as a late original.
    Late {
        psn: u32,
        at_ns: u64,
        since_ns: u64,
        /// How far behind the highest sequence number seen it arrived.
        psns_late: u32,
    },
    /// A missing sequence number arrived that the next packet tells apart
    /// (go-back-N: a late original, or the first packet of a resend): the
    /// caller keeps what a rewind starting here would record until a
    /// [`Judgement::Late`] or a [`Rewind`] not `here` decides it.
    Undecided,
    /// A sequence number seen before, sent again; spurious when the tap had
    /// seen it acknowledged.
    Retransmission { spurious: bool },
    /// The sender went back (go-back-N only).
    Rewind(Rewind),
    /// A sequence number seen before on a service that never resends.
    StrayCopy,
}

/// One flow's sequencing, per transport.
///
/// State is the implementation's and per flow: the caller holds one from
/// the flow's first data packet on ([`Sequencing::start`]), none for a flow
/// that carries no sequenced data, and the implementation allocates what
/// only some flows need (missing ranges, undecided arrivals) when they need
/// it, bounded (docs/analysis.md, "Memory").
pub trait Sequencing: Sized {
    /// What a flow's acknowledgments covered. It is kept on the flow that
    /// carried them, not the one they answer: acknowledgments may come
    /// before the analyzer knows which flow they answer.
    type Acked: Default + Clone + core::fmt::Debug;

    /// Records `ack` in `acked`; returns the sequence number up to which
    /// everything is now acknowledged.
    fn acknowledge(acked: &mut Self::Acked, ack: &Ack) -> u32;

    /// Whether `acked` covers `psn`.
    fn covers(acked: &Self::Acked, psn: u32) -> bool;

    /// The flow's first data packet.
    fn start(d: &Data) -> Self;

    /// A later data packet; `acked` is what the reverse flow has
    /// acknowledged (the default when it is not known).
    fn data(&mut self, d: &Data, acked: &Self::Acked, out: &mut Vec<Judgement>);

    /// The reverse flow's acknowledgments now cover `acked` (after
    /// [`Sequencing::acknowledge`]): missing sequence numbers they cover
    /// resolve.
    fn ack(&mut self, ts: u64, acked: &Self::Acked, out: &mut Vec<Judgement>);

    /// A negative acknowledgment, remembered for the missing sequence
    /// number it names.
    fn nack(&mut self, n: &Nack);

    /// Whether a packet with sequence number `psn` would go back (a resend
    /// or a late arrival), before it is judged.
    fn behind(&self, psn: u32) -> bool;

    /// One past the highest sequence number sent.
    fn next(&self) -> u32;

    /// The flow ends (retired, or the input ended) at `end`: arrivals left
    /// undecided are late originals, missing sequence numbers resolve by
    /// `acked` or stay unresolved.
    fn finish(&mut self, end: u64, acked: &Self::Acked, out: &mut Vec<Judgement>);
}

#[cfg(test)]
mod tests;
