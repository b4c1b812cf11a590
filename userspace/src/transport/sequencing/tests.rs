//! The trait holds for a selective-ACK transport: a small one (cumulative
//! PSN plus a SACK bitmap from a base, NACKs with a code, a RETX flag on the
//! packet; UET's shape, docs/build.md) judged through the same driver as
//! RoCE's go-back-N, with nothing added to the trait.

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::transport::roce::sequencing::GoBackN;

/// What a selective transport's ACKs covered: everything up to
/// `cumulative`, and `sacked` beyond it.
#[derive(Clone, Debug, Default)]
struct SackState {
    cumulative: Option<u32>,
    sacked: BTreeSet<u32>,
}

/// A selective-ACK sequencing with plain 32-bit PSNs: missing PSNs are
/// judged by the packet's RETX flag, not by where the PSN falls.
#[derive(Debug)]
struct Selective {
    next: u32,
    /// Missing PSN → (missing since, a NACK named it).
    missing: BTreeMap<u32, (u64, bool)>,
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

impl Selective {
    fn resolve_covered(&mut self, ts: u64, acked: &SackState, out: &mut Vec<Judgement>) {
        let covered: Vec<u32> = self
            .missing
            .keys()
            .copied()
            .filter(|&q| Self::covers(acked, q))
            .collect();
        for q in covered {
            if let Some((since, nacked)) = self.missing.remove(&q) {
                let class = if nacked {
                    GapClass::NakLost
                } else {
                    GapClass::CaptureLost
                };
                out.push(one(class, q, since, ts));
            }
        }
    }
}

impl Sequencing for Selective {
    type Acked = SackState;

    fn acknowledge(acked: &mut SackState, ack: &Ack) -> u32 {
        let c = ack.cumulative();
        acked.cumulative = Some(acked.cumulative.map_or(c, |p| p.max(c)));
        if let Ack::Selective { base, bitmap, .. } = *ack {
            for k in 0..64 {
                if bitmap >> k & 1 == 1 {
                    acked.sacked.insert(base + k);
                }
            }
        }
        acked.sacked.retain(|&q| q > c);
        c
    }

    fn covers(acked: &SackState, q: u32) -> bool {
        acked.cumulative.is_some_and(|c| q <= c) || acked.sacked.contains(&q)
    }

    fn start(d: &Data) -> Self {
        Selective {
            next: d.psn + 1,
            missing: BTreeMap::new(),
        }
    }

    fn data(&mut self, d: &Data, acked: &SackState, out: &mut Vec<Judgement>) {
        let q = d.psn;
        if q >= self.next {
            if q > self.next {
                out.push(Judgement::GapOpened {
                    first: self.next,
                    psns: q - self.next,
                    last: q - 1,
                });
                for m in self.next..q {
                    self.missing.insert(m, (d.ts, false));
                }
            }
            self.next = q + 1;
            out.push(Judgement::New);
        } else if let Some((since, nacked)) = self.missing.remove(&q) {
            // The RETX flag says what go-back-N has to wait for.
            if d.retx {
                let class = if nacked {
                    GapClass::NakLost
                } else {
                    GapClass::LostBeforeTap
                };
                out.push(one(class, q, since, d.ts));
            } else {
                out.push(Judgement::Late {
                    psn: q,
                    at_ns: d.ts,
                    since_ns: since,
                    psns_late: self.next - 1 - q,
                });
            }
        } else {
            out.push(Judgement::Retransmission {
                spurious: Self::covers(acked, q),
            });
        }
    }

    fn ack(&mut self, ts: u64, acked: &SackState, out: &mut Vec<Judgement>) {
        self.resolve_covered(ts, acked, out);
    }

    fn nack(&mut self, n: &Nack) {
        // A trimmed packet is a congestion signal, not a loss the tap missed.
        if n.code != NackCode::Trimmed
            && n.code.lost()
            && let Some(m) = self.missing.get_mut(&n.psn)
        {
            m.1 = true;
        }
    }

    fn behind(&self, q: u32) -> bool {
        q < self.next
    }

    fn next(&self) -> u32 {
        self.next
    }

    fn finish(&mut self, end: u64, acked: &SackState, out: &mut Vec<Judgement>) {
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

/// One thing on the wire, in capture order.
enum Step {
    Data { ts: u64, psn: u32, retx: bool },
    Ack { ts: u64, ack: Ack },
    Nack(Nack),
    End(u64),
}

/// The analyzer's side in miniature: a flow's sequencing from its first
/// data packet, the reverse flow's acknowledgments kept apart, every
/// judgement in order.
fn drive<S: Sequencing>(steps: &[Step]) -> Vec<Judgement> {
    let mut seq: Option<S> = None;
    let mut acked = S::Acked::default();
    let mut out = Vec::new();
    for step in steps {
        match *step {
            Step::Data { ts, psn, retx } => {
                let d = Data {
                    ts,
                    psn,
                    consumes: (1, 1),
                    retx,
                    never_resent: false,
                    nacked: None,
                };
                match seq.as_mut() {
                    None => seq = Some(S::start(&d)),
                    Some(s) => s.data(&d, &acked, &mut out),
                }
            }
            Step::Ack { ts, ack } => {
                S::acknowledge(&mut acked, &ack);
                if let Some(s) = seq.as_mut() {
                    s.ack(ts, &acked, &mut out);
                }
            }
            Step::Nack(n) => {
                if let Some(s) = seq.as_mut() {
                    s.nack(&n);
                }
            }
            Step::End(end) => {
                if let Some(s) = seq.as_mut() {
                    s.finish(end, &acked, &mut out);
                }
            }
        }
    }
    out
}

fn data(ts: u64, psn: u32, retx: bool) -> Step {
    Step::Data { ts, psn, retx }
}

#[test]
fn a_selective_transport_judges_by_its_sack_and_retx_flag() {
    let steps = [
        data(0, 0, false),
        data(10, 1, false),
        data(20, 3, false), // 2 missing
        data(30, 4, false),
        data(40, 6, false), // 5 missing
        // 0 and 1 cumulatively, 3 and 4 selectively.
        Step::Ack {
            ts: 50,
            ack: Ack::Selective {
                cumulative: 1,
                base: 3,
                bitmap: 0b11,
            },
        },
        data(60, 3, true),  // resent though SACKed: spurious
        data(70, 2, true),  // the missing PSN, flagged RETX: lost upstream
        data(80, 5, false), // the other, unflagged: a late original
        data(90, 8, false), // 7 missing
        Step::Nack(Nack {
            ts: 95,
            psn: 7,
            code: NackCode::Other(4),
        }),
        Step::End(100),
    ];
    assert_eq!(
        drive::<Selective>(&steps),
        [
            Judgement::New,
            Judgement::GapOpened {
                first: 2,
                psns: 1,
                last: 2
            },
            Judgement::New,
            Judgement::New,
            Judgement::GapOpened {
                first: 5,
                psns: 1,
                last: 5
            },
            Judgement::New,
            Judgement::Retransmission { spurious: true },
            one(GapClass::LostBeforeTap, 2, 20, 70),
            Judgement::Late {
                psn: 5,
                at_ns: 80,
                since_ns: 40,
                psns_late: 1
            },
            Judgement::GapOpened {
                first: 7,
                psns: 1,
                last: 7
            },
            Judgement::New,
            one(GapClass::NakLost, 7, 90, 100),
        ]
    );
}

#[test]
fn go_back_n_judges_the_same_packets_by_their_order() {
    // No flag, no SACK: the missing PSN 2 arriving is undecided until the
    // next packet, a resend of 3, says a rewind began at it; 3 was only
    // cumulatively unacknowledged, so its resend is no spurious one.
    let steps = [
        data(0, 0, false),
        data(10, 1, false),
        data(20, 3, false),
        Step::Ack {
            ts: 30,
            ack: Ack::Cumulative(1),
        },
        data(40, 2, false),
        data(50, 3, false),
        Step::End(60),
    ];
    let j = drive::<GoBackN>(&steps);
    assert_eq!(
        j,
        [
            Judgement::New,
            Judgement::GapOpened {
                first: 2,
                psns: 1,
                last: 2
            },
            Judgement::New,
            Judgement::Undecided,
            Judgement::Retransmission { spurious: false },
            Judgement::Rewind(Rewind {
                psn: 2,
                next: 4,
                depth: 2,
                acked: 0,
                lost: true,
                at_ns: 40,
                here: false,
            }),
            one(GapClass::LostBeforeTap, 2, 20, 40),
        ]
    );
}
