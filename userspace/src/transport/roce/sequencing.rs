//! RoCE's sequencing: go-back-N on 24-bit PSNs behind [`Sequencing`]
//! (docs/analysis.md, "Sequence analysis", "Retransmissions", "Gaps";
//! docs/build.md, "The Sequencing interface").
//!
//! An RC or XRC requester numbers its request packets and resends from the
//! oldest unacknowledged PSN when a sequence-error NAK or its timer says
//! so: everything after the rewound PSN is sent again. An ACK covers every
//! PSN up to its own. So a PSN below the next expected one is a
//! retransmission (and the start of a rewind unless it continues one), a
//! missing PSN that arrives is either a late original or the first packet
//! of a resend — which the next request packet tells — and a PSN past the
//! next expected one opens a gap.

use rocescope_common::proto::ib::{PSN_MASK, aeth, op};

use super::gaps::{self, Pending};
use super::psn;
use crate::transport::sequencing::{
    Ack, Data, GapClass, Judgement, Nack, NackCode, Rewind, Sequencing,
};

/// Smallest IB path MTU.
pub const MIN_MTU: u32 = 256;

/// Most undecided arrivals one run holds; a longer run is decided as late.
pub const MAX_FILLS: usize = 256;

/// PSNs a request packet consumes, `(at least, at most)`: a READ request
/// stands for its response packets, one per path MTU of its RETH's length
/// (`reth_len`; `mtu` 0 when no First or Middle packet has shown the path
/// MTU yet: between one and one per smallest MTU); any other packet one.
pub fn consumption(opcode: u8, reth_len: Option<u32>, mtu: u32) -> (u32, u32) {
    let Some(len) = reth_len.filter(|_| opcode & 0x1F == op::READ_REQUEST) else {
        return (1, 1);
    };
    let len = u64::from(len);
    let ceil = |m: u64| len.div_ceil(m).clamp(1, 1 << 22) as u32;
    if mtu > 0 {
        let n = ceil(u64::from(mtu));
        (n, n)
    } else {
        (1, ceil(u64::from(MIN_MTU)))
    }
}

/// What an AETH's syndrome says, when it is a NAK or an RNR NAK.
pub fn nack_code(syndrome: u8) -> Option<NackCode> {
    if aeth::is_rnr_nak(syndrome) {
        Some(NackCode::NotReady)
    } else if !aeth::is_nak(syndrome) {
        None
    } else if syndrome & 0x1F == aeth::NAK_PSN_SEQUENCE_ERROR {
        Some(NackCode::Sequence)
    } else {
        Some(NackCode::Other(syndrome & 0x1F))
    }
}

/// A request flow's go-back-N position, and its missing PSNs from its
/// first gap on (a flow that never skips a PSN carries none).
#[derive(Clone, Debug)]
pub struct GoBackN {
    first_psn: u32,
    /// One past the highest PSN carried.
    next: u32,
    /// One past the highest PSN an un-sized READ may have consumed (≥ next).
    slack_end: u32,
    /// The previous request packet: its PSN, a rewind goes back to or
    /// before it, and whether it was part of a resend.
    prev: Prev,
    missing: Option<Box<Missing>>,
}

/// The previous request packet's PSN (bits 0–23) and whether it was part
/// of a resend (a retransmission or a missing PSN filled by one: a forward
/// step continues that resend; bit 30), in 4 bytes that are never 0 (bit
/// 31): a flow's `Option<GoBackN>` takes no more room than a `GoBackN`,
/// 24 bytes (a test holds it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Prev(core::num::NonZeroU32);

impl Prev {
    const SET: u32 = 1 << 31;
    const RESENDING: u32 = 1 << 30;

    fn new(q: u32, resending: bool) -> Self {
        let bits = (q & PSN_MASK) | Self::SET | if resending { Self::RESENDING } else { 0 };
        // Bit 31 is set: never 0.
        Prev(core::num::NonZeroU32::new(bits).unwrap_or(core::num::NonZeroU32::MIN))
    }

    fn psn(self) -> u32 {
        self.0.get() & PSN_MASK
    }

    fn resending(self) -> bool {
        self.0.get() & Self::RESENDING != 0
    }
}

/// A flow's missing PSNs and the arrivals of missing PSNs awaiting their
/// verdict.
#[derive(Clone, Debug, Default)]
struct Missing {
    pending: Pending,
    fills: Option<FillRun>,
}

/// Consecutive request packets that filled gaps, awaiting the packet that
/// tells whether they began a resend.
#[derive(Clone, Debug)]
struct FillRun {
    /// What a rewind starting at the first fill would record.
    next: u32,
    acked: Option<u32>,
    /// At most [`MAX_FILLS`].
    fills: Vec<Fill>,
}

/// A missing PSN that arrived.
#[derive(Clone, Copy, Debug)]
struct Fill {
    psn: u32,
    ts: u64,
    /// When it went missing (the PSN after it was seen).
    since: u64,
    /// How far behind the highest PSN seen it arrived.
    psns_late: u32,
}

impl GoBackN {
    /// PSNs `[lo, hi)` the flow's requests have covered (READ slack
    /// included): what pairs a response flow with it.
    pub fn sent_range(&self) -> (u32, u32) {
        (self.first_psn, psn::max(self.next, self.slack_end))
    }

    /// In-order requests the live tap only counted (summary mode) brought
    /// `next` here: undecided arrivals were late originals.
    pub fn counted(&mut self, next: u32, out: &mut Vec<Judgement>) {
        self.decide_fills(false, out);
        self.next = next;
        self.slack_end = next;
        self.prev = Prev::new(psn::add(next, PSN_MASK), false);
    }

    fn missing_mut(&mut self) -> &mut Missing {
        self.missing.get_or_insert_with(Box::default)
    }

    /// A rewind to `q` from `next`, after ACKs up to `acked`.
    fn rewind(q: u32, next: u32, acked: Option<u32>, lost: bool, at_ns: u64, here: bool) -> Rewind {
        let depth = psn::diff(next, q).max(0) as u32;
        let acked = acked
            .map(|a| psn::diff(a, q) + 1)
            .filter(|&k| k > 0)
            .map(|k| (k as u32).min(depth))
            .unwrap_or(0);
        Rewind {
            psn: q,
            next,
            depth,
            acked,
            lost,
            at_ns,
            here,
        }
    }

    /// The pending fills are decided: the first packet of a resend
    /// (`resend`: a retransmission continued forward from them), or late
    /// originals.
    fn decide_fills(&mut self, resend: bool, out: &mut Vec<Judgement>) {
        let Some(run) = self.missing.as_mut().and_then(|m| m.fills.take()) else {
            return;
        };
        if resend {
            let Some(first) = run.fills.first() else {
                return;
            };
            let r = Self::rewind(first.psn, run.next, run.acked, true, first.ts, false);
            out.push(Judgement::Rewind(r));
            for fl in &run.fills {
                let r = gaps::resolved(GapClass::LostBeforeTap, fl.psn, 1, fl.since, fl.ts);
                out.push(Judgement::Resolved(r));
            }
            return;
        }
        out.extend(run.fills.iter().map(|fl| Judgement::Late {
            psn: fl.psn,
            at_ns: fl.ts,
            since_ns: fl.since,
            psns_late: fl.psns_late,
        }));
    }

    fn fills_pending(&self) -> bool {
        self.missing.as_ref().is_some_and(|m| m.fills.is_some())
    }
}

impl Sequencing for GoBackN {
    /// The highest PSN acknowledged.
    type Acked = Option<u32>;

    fn acknowledge(acked: &mut Option<u32>, ack: &Ack) -> u32 {
        let q = ack.cumulative();
        let a = match *acked {
            Some(a) => psn::max(a, q),
            None => q,
        };
        *acked = Some(a);
        a
    }

    fn covers(acked: &Option<u32>, q: u32) -> bool {
        acked.is_some_and(|a| psn::diff(a, q) >= 0)
    }

    fn start(d: &Data) -> Self {
        let q = d.psn;
        let (n_min, n_max) = d.consumes;
        GoBackN {
            first_psn: q,
            next: psn::add(q, n_min),
            slack_end: psn::add(q, n_max),
            prev: Prev::new(q, false),
            missing: None,
        }
    }

    fn data(&mut self, d: &Data, acked: &Option<u32>, out: &mut Vec<Judgement>) {
        let (q, now) = (d.psn, d.ts);
        let (n_min, n_max) = d.consumes;
        let forward = psn::diff(q, self.prev.psn()) > 0;
        // Whether this packet is part of a resend: unchanged unless judged.
        let mut resending = self.prev.resending();
        let next = self.next;
        let here = |lost| Judgement::Rewind(Self::rewind(q, next, *acked, lost, now, true));
        if psn::diff(q, next) < 0 {
            let filled = self.missing.as_mut().and_then(|m| m.pending.take(q));
            if let Some((since, nak_named)) = filled {
                // A PSN the tap missed, seen for the first time: no copy of
                // it was seen before, so it is no retransmission here.
                let continues = resending && forward;
                let this_psn = |class| Judgement::Resolved(gaps::resolved(class, q, 1, since, now));
                if nak_named || d.nacked.is_some() {
                    let class = if nak_named || d.nacked.is_some_and(NackCode::lost) {
                        GapClass::NakLost
                    } else {
                        GapClass::LostBeforeTap
                    };
                    self.decide_fills(false, out);
                    out.push(this_psn(class));
                    if !continues {
                        out.push(here(true));
                    }
                    resending = true;
                } else if continues {
                    out.push(this_psn(GapClass::LostBeforeTap));
                } else {
                    // A late original, or the first packet of a resend: the
                    // next request packet tells.
                    let acked = *acked;
                    let run = self.missing_mut().fills.get_or_insert_with(|| FillRun {
                        next,
                        acked,
                        fills: Vec::new(),
                    });
                    run.fills.push(Fill {
                        psn: q,
                        ts: now,
                        since,
                        psns_late: (psn::diff(next, q) - 1).max(0) as u32,
                    });
                    let full = run.fills.len() >= MAX_FILLS;
                    out.push(Judgement::Undecided);
                    if full {
                        self.decide_fills(false, out);
                    }
                    resending = false;
                }
            } else if d.never_resent {
                // Seen before, but UC never resends: a stray copy, neither a
                // retransmission nor a rewind, and the sequence goes on.
                out.push(Judgement::StrayCopy);
            } else {
                // Seen before: a retransmission.
                let spurious = Self::covers(acked, q);
                out.push(Judgement::Retransmission { spurious });
                let resend_began_at_fills = forward && self.fills_pending();
                self.decide_fills(resend_began_at_fills, out);
                // A rewind goes back: a forward step inside a resend (an ACK
                // covered the rest, or a PSN was lost upstream) continues it.
                if !(forward && (resending || resend_began_at_fills)) {
                    out.push(here(false));
                }
                resending = true;
            }
        } else {
            self.decide_fills(false, out);
            resending = false;
            let bound = psn::max(next, self.slack_end);
            let g = psn::diff(q, bound);
            if g > 0 {
                let g = g as u32;
                out.push(Judgement::GapOpened {
                    first: bound,
                    psns: g,
                    last: psn::add(q, PSN_MASK),
                });
                if let Some((lo, len, nak_named)) = self.missing_mut().pending.add(bound, g, now) {
                    let class = if nak_named {
                        GapClass::NakLost
                    } else if Self::covers(acked, psn::add(lo, len - 1)) {
                        GapClass::CaptureLost
                    } else {
                        GapClass::Unresolved
                    };
                    out.push(Judgement::Resolved(gaps::resolved(
                        class, lo, len, now, now,
                    )));
                }
            }
            self.next = psn::add(q, n_min);
            self.slack_end = psn::add(q, n_max);
            out.push(Judgement::New);
        }
        self.prev = Prev::new(q, resending);
    }

    fn ack(&mut self, ts: u64, acked: &Option<u32>, out: &mut Vec<Judgement>) {
        let (Some(a), Some(m)) = (*acked, self.missing.as_mut()) else {
            return;
        };
        if m.pending.is_empty() {
            return;
        }
        let mut resolved = Vec::new();
        m.pending.acked(a, ts, &mut resolved);
        out.extend(resolved.into_iter().map(Judgement::Resolved));
    }

    fn nack(&mut self, n: &Nack) {
        // A sequence error names the PSN the responder expected.
        if n.code == NackCode::Sequence
            && let Some(m) = self.missing.as_mut()
        {
            m.pending.nak(n.psn);
        }
    }

    fn behind(&self, q: u32) -> bool {
        psn::diff(q, self.next) < 0
    }

    fn next(&self) -> u32 {
        self.next
    }

    fn finish(&mut self, end: u64, acked: &Option<u32>, out: &mut Vec<Judgement>) {
        self.decide_fills(false, out);
        let Some(m) = self.missing.as_mut() else {
            return;
        };
        let mut resolved = Vec::new();
        m.pending.finish(*acked, end, &mut resolved);
        out.extend(resolved.into_iter().map(Judgement::Resolved));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::sequencing::Resolved;

    fn data(ts: u64, q: u32) -> Data {
        Data {
            ts,
            psn: q,
            consumes: (1, 1),
            retx: false,
            never_resent: false,
            nacked: None,
        }
    }

    #[test]
    fn a_gap_across_the_24_bit_wrap_and_its_psn_named_by_a_nak() {
        let mut s = GoBackN::start(&data(0, PSN_MASK - 1));
        let mut out = Vec::new();
        s.data(&data(10, 1), &None, &mut out); // 0xFFFFFF and 0 missing
        assert_eq!(
            out,
            [
                Judgement::GapOpened {
                    first: PSN_MASK,
                    psns: 2,
                    last: 0
                },
                Judgement::New
            ]
        );
        assert_eq!(s.next(), 2);
        assert!(s.behind(PSN_MASK) && !s.behind(2));
        s.nack(&Nack {
            ts: 20,
            psn: PSN_MASK,
            code: NackCode::Sequence,
        });
        out.clear();
        // The NAKed PSN resent: lost upstream, and the requester went back.
        s.data(&data(30, PSN_MASK), &Some(PSN_MASK - 1), &mut out);
        let Judgement::Rewind(r) = out[1] else {
            panic!("{out:?}");
        };
        assert_eq!(
            out[0],
            Judgement::Resolved(Resolved {
                class: GapClass::NakLost,
                lo: PSN_MASK,
                len: 1,
                last: PSN_MASK,
                since_ns: 10,
                at_ns: 30,
            })
        );
        assert_eq!(
            (r.psn, r.next, r.depth, r.acked, r.lost),
            (PSN_MASK, 2, 3, 0, true)
        );
        // The rest of the resend continues it; an ACK past the wrap leaves
        // nothing missing.
        out.clear();
        s.data(&data(40, 0), &None, &mut out);
        s.ack(50, &Some(1), &mut out);
        s.finish(60, &Some(1), &mut out);
        assert_eq!(
            out,
            [Judgement::Resolved(Resolved {
                class: GapClass::LostBeforeTap,
                lo: 0,
                len: 1,
                last: 0,
                since_ns: 10,
                at_ns: 40,
            })]
        );
    }

    #[test]
    fn a_flows_sequencing_is_24_bytes_with_or_without_one() {
        assert_eq!(std::mem::size_of::<Option<GoBackN>>(), 24);
        let p = Prev::new(PSN_MASK, true);
        assert_eq!((p.psn(), p.resending()), (PSN_MASK, true));
        let p = Prev::new(0, false);
        assert_eq!((p.psn(), p.resending()), (0, false));
    }

    #[test]
    fn uc_repeats_are_stray_copies_and_reads_consume_by_length() {
        let mut s = GoBackN::start(&data(0, 5));
        let mut out = Vec::new();
        let uc = Data {
            never_resent: true,
            ..data(1, 5)
        };
        s.data(&uc, &None, &mut out);
        assert_eq!(out, [Judgement::StrayCopy]);
        // A 4 KiB READ at a 1 KiB path MTU: four response PSNs; unknown
        // MTU: one to sixteen (256-byte minimum).
        assert_eq!(consumption(op::READ_REQUEST, Some(4096), 1024), (4, 4));
        assert_eq!(consumption(op::READ_REQUEST, Some(4096), 0), (1, 16));
        assert_eq!(consumption(op::READ_REQUEST, None, 1024), (1, 1));
        assert_eq!(nack_code(0x60), Some(NackCode::Sequence));
        assert_eq!(nack_code(0x62), Some(NackCode::Other(2)));
        assert_eq!(nack_code(0x21), Some(NackCode::NotReady));
        assert_eq!(nack_code(0x1F), None);
    }
}
