//! UET's selective-ACK sequencing behind [`Sequencing`] (docs/analysis.md,
//! "UET: PDCs"; docs/build.md, "The Sequencing interface").
//!
//! A RUD or ROD request carries a 32-bit PSN and, when it is a resend, the
//! RETX flag; an ACK covers every PSN up to its cumulative PSN
//! (`cack_psn`) and, on ACK_CC/ACK_CCX, those `sack_base + i` whose bit
//! `i` of the SACK bitmap is set (docs/inputs.md, "UET headers"); a NACK
//! names one PSN with a code. Unlike go-back-N, a sender resends only what
//! is missing and says so: a missing PSN that arrives is a late original
//! without RETX and a resend with it, and a PSN seen before that comes
//! again with RETX is a retransmission — **spurious** when the tap had
//! already seen an ACK cover it.
//!
//! Bounded: a PDC direction holds at most [`WINDOW`] missing PSNs and
//! [`WINDOW`] SACKed PSNs beyond its cumulative ACK; past that the oldest
//! missing PSN resolves as the capture showed it so far and the farthest
//! SACKed PSN is forgotten (a later resend of it is then not called
//! spurious).

use std::collections::{BTreeMap, BTreeSet};

use crate::transport::sequencing::{
    Ack, Data, GapClass, Judgement, Nack, NackCode, Resolved, Sequencing,
};

/// Most PSNs one of a PDC direction's windows holds (docs/analysis.md,
/// "UET: PDCs", "Memory").
pub const WINDOW: usize = 4096;

/// `a - b` in 32-bit PSN arithmetic (a PDC's PSNs wrap at 2^32).
pub fn diff(a: u32, b: u32) -> i32 {
    a.wrapping_sub(b) as i32
}

/// What the ACKs of a PDC direction's data covered: every PSN up to
/// `cumulative`, and `sacked` beyond it; and how many distinct PSNs that
/// is (`delivered`), of them first covered by a SACK bit (`sacked_psns`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Covered {
    cumulative: Option<u32>,
    /// One before the first PSN the data showed: where the first
    /// cumulative ACK's coverage starts (the PDC's start PSN when the tap
    /// saw its first request).
    floor: Option<u32>,
    sacked: BTreeSet<u32>,
    pub delivered: u64,
    pub sacked_psns: u64,
}

impl Covered {
    /// The data showed `psn`: until the first cumulative ACK, the lowest
    /// PSN shown is where that ACK's coverage starts (sprayed packets come
    /// in any order).
    pub fn start_at(&mut self, psn: u32) {
        if self.cumulative.is_some() {
            return;
        }
        let below = psn.wrapping_sub(1);
        match self.floor {
            Some(f) if diff(below, f) >= 0 => {}
            _ => self.floor = Some(below),
        }
    }

    /// The highest cumulative PSN acknowledged.
    pub fn cumulative(&self) -> Option<u32> {
        self.cumulative
    }
}

/// Missing PSN → (missing since, a NACK that says it was lost named it).
type Missing = BTreeMap<u32, (u64, bool)>;

/// One PDC direction's sequencing: one past the highest PSN carried, and
/// its missing PSNs.
#[derive(Clone, Debug)]
pub struct Sack {
    next: u32,
    missing: Missing,
}

fn one(class: GapClass, psn: u32, since_ns: u64, at_ns: u64) -> Judgement {
    Judgement::Resolved(Resolved {
        class,
        lo: psn,
        len: 1,
        last: psn,
        since_ns,
        at_ns,
    })
}

/// How a missing PSN the ACKs covered resolves: the tap missed it, unless
/// a NACK said it was lost.
fn covered_class(nacked: bool) -> GapClass {
    if nacked {
        GapClass::NakLost
    } else {
        GapClass::CaptureLost
    }
}

impl Sack {
    fn resolve_covered(&mut self, ts: u64, acked: &Covered, out: &mut Vec<Judgement>) {
        if self.missing.is_empty() {
            return;
        }
        self.missing.retain(|&q, &mut (since, nacked)| {
            let covered = Self::covers(acked, q);
            if covered {
                out.push(one(covered_class(nacked), q, since, ts));
            }
            !covered
        });
    }

    /// `q` went missing at `ts`; the oldest resolves when the window is full.
    fn add_missing(&mut self, q: u32, ts: u64, acked: &Covered, out: &mut Vec<Judgement>) {
        if self.missing.len() >= WINDOW
            && let Some((old, (since, nacked))) = self.missing.pop_first()
        {
            let class = if Self::covers(acked, old) || nacked {
                covered_class(nacked)
            } else {
                GapClass::Unresolved
            };
            out.push(one(class, old, since, ts));
        }
        self.missing.insert(q, (ts, false));
    }
}

impl Sequencing for Sack {
    type Acked = Covered;

    fn acknowledge(acked: &mut Covered, ack: &Ack) -> u32 {
        let c = ack.cumulative();
        let from = match acked.cumulative.or(acked.floor) {
            Some(prev) if diff(c, prev) <= 0 => prev,
            Some(prev) => {
                // PSNs (prev, c] newly covered, but for those a SACK bit
                // covered before.
                let newly = diff(c, prev) as u64;
                let before = acked
                    .sacked
                    .iter()
                    .filter(|&&q| diff(q, prev) > 0 && diff(q, c) <= 0)
                    .count() as u64;
                acked.delivered += newly.saturating_sub(before);
                c
            }
            // No data seen and nothing acknowledged before: where the
            // coverage starts is unknown; it counts from here on.
            None => c,
        };
        acked.cumulative = Some(from);
        acked.sacked.retain(|&q| diff(q, from) > 0);
        if let Ack::Selective { base, bitmap, .. } = *ack {
            for k in 0..64u32 {
                let q = base.wrapping_add(k);
                if bitmap >> k & 1 == 1 && diff(q, from) > 0 && !acked.sacked.contains(&q) {
                    if acked.sacked.len() >= WINDOW {
                        // The farthest is forgotten (bounded; module docs).
                        acked.sacked.pop_last();
                    }
                    acked.sacked.insert(q);
                    acked.delivered += 1;
                    acked.sacked_psns += 1;
                }
            }
        }
        from
    }

    fn covers(acked: &Covered, q: u32) -> bool {
        acked.cumulative.is_some_and(|c| diff(q, c) <= 0) || acked.sacked.contains(&q)
    }

    fn start(d: &Data) -> Self {
        Sack {
            next: d.psn.wrapping_add(1),
            missing: Missing::new(),
        }
    }

    fn data(&mut self, d: &Data, acked: &Covered, out: &mut Vec<Judgement>) {
        let q = d.psn;
        let ahead = diff(q, self.next);
        if ahead >= 0 {
            if ahead > 0 {
                out.push(Judgement::GapOpened {
                    first: self.next,
                    psns: ahead as u32,
                    last: q.wrapping_sub(1),
                });
                // Past a window's worth only the last WINDOW are held.
                let skip = (ahead as usize).saturating_sub(WINDOW) as u32;
                if skip > 0 {
                    out.push(Judgement::Resolved(Resolved {
                        class: GapClass::Unresolved,
                        lo: self.next,
                        len: skip,
                        last: self.next.wrapping_add(skip - 1),
                        since_ns: d.ts,
                        at_ns: d.ts,
                    }));
                }
                let mut m = self.next.wrapping_add(skip);
                while m != q {
                    self.add_missing(m, d.ts, acked, out);
                    m = m.wrapping_add(1);
                }
            }
            self.next = q.wrapping_add(1);
            out.push(Judgement::New);
        } else if let Some((since, nacked)) = self.missing.remove(&q) {
            if d.retx {
                // Resent before the tap saw it: lost upstream.
                let class = if nacked || d.nacked.is_some_and(NackCode::lost) {
                    GapClass::NakLost
                } else {
                    GapClass::LostBeforeTap
                };
                out.push(one(class, q, since, d.ts));
            } else {
                // The original, overtaken (spraying: normal).
                out.push(Judgement::Late {
                    psn: q,
                    at_ns: d.ts,
                    since_ns: since,
                    psns_late: diff(self.next.wrapping_sub(1), q).max(0) as u32,
                });
            }
        } else if d.retx {
            out.push(Judgement::Retransmission {
                spurious: Self::covers(acked, q),
            });
        } else {
            // Seen before, and the sender does not say it resent it.
            out.push(Judgement::StrayCopy);
        }
    }

    fn ack(&mut self, ts: u64, acked: &Covered, out: &mut Vec<Judgement>) {
        self.resolve_covered(ts, acked, out);
    }

    fn nack(&mut self, n: &Nack) {
        // A trimmed packet is a congestion signal: the switch cut it on
        // purpose, the tap saw its header (docs/analysis.md, "UET: PDCs").
        if n.code != NackCode::Trimmed
            && n.code.lost()
            && let Some(m) = self.missing.get_mut(&n.psn)
        {
            m.1 = true;
        }
    }

    fn behind(&self, q: u32) -> bool {
        diff(q, self.next) < 0
    }

    fn next(&self) -> u32 {
        self.next
    }

    fn finish(&mut self, end: u64, acked: &Covered, out: &mut Vec<Judgement>) {
        self.resolve_covered(end, acked, out);
        for (q, (since, nacked)) in std::mem::take(&mut self.missing) {
            let class = if nacked {
                GapClass::NakLost
            } else {
                GapClass::Unresolved
            };
            out.push(one(class, q, since, end));
        }
    }
}

#[cfg(test)]
#[path = "sack_tests.rs"]
mod tests;
