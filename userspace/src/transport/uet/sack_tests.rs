//! UET's selective-ACK sequencing on hand-made sequences.

use super::*;

fn data(ts: u64, psn: u32, retx: bool) -> Data {
    Data {
        ts,
        psn,
        consumes: (1, 1),
        retx,
        never_resent: false,
        nacked: None,
    }
}

fn sack(cumulative: u32, base: u32, bitmap: u64) -> Ack {
    Ack::Selective {
        cumulative,
        base,
        bitmap,
    }
}

fn resolved(class: GapClass, psn: u32, since_ns: u64, at_ns: u64) -> Judgement {
    one(class, psn, since_ns, at_ns)
}

#[test]
fn sacked_psns_count_once_and_a_resend_of_one_is_spurious() {
    let mut acked = Covered::default();
    acked.start_at(0);
    let mut s = Sack::start(&data(0, 0, false));
    let mut out = Vec::new();
    for (ts, q) in [(10, 1), (20, 3), (30, 4)] {
        s.data(&data(ts, q, false), &acked, &mut out);
    }
    // 0 and 1 cumulatively; 3 and 4 by bits 0 and 1 from base 3.
    assert_eq!(Sack::acknowledge(&mut acked, &sack(1, 3, 0b11)), 1);
    assert_eq!((acked.delivered, acked.sacked_psns), (4, 2));
    // The same bits again, then the cumulative PSN past them: 2 and the
    // SACKed 3, 4 counted once.
    Sack::acknowledge(&mut acked, &sack(1, 3, 0b11));
    assert_eq!((acked.delivered, acked.sacked_psns), (4, 2));
    out.clear();
    s.data(&data(40, 4, true), &acked, &mut out);
    assert_eq!(out, [Judgement::Retransmission { spurious: true }]);
    Sack::acknowledge(&mut acked, &Ack::Cumulative(4));
    assert_eq!((acked.delivered, acked.sacked_psns), (5, 2));
    // A resend of a PSN not yet covered is no spurious one.
    out.clear();
    s.data(&data(50, 5, false), &acked, &mut out);
    s.data(&data(60, 5, true), &acked, &mut out);
    assert_eq!(
        out,
        [
            Judgement::New,
            Judgement::Retransmission { spurious: false }
        ]
    );
}

#[test]
fn missing_psns_resolve_late_lost_nacked_or_covered() {
    let acked = Covered::default();
    let mut s = Sack::start(&data(0, 10, false));
    let mut out = Vec::new();
    s.data(&data(10, 14, false), &acked, &mut out); // 11, 12, 13 missing
    assert_eq!(
        out,
        [
            Judgement::GapOpened {
                first: 11,
                psns: 3,
                last: 13
            },
            Judgement::New
        ]
    );
    out.clear();
    // 11 arrives without RETX: overtaken by 3 PSNs' worth (spraying).
    s.data(&data(20, 11, false), &acked, &mut out);
    // 12 comes as a resend: lost before the tap.
    s.data(&data(30, 12, true), &acked, &mut out);
    // A NACK that says 13 was lost, then its resend.
    s.nack(&Nack {
        ts: 35,
        psn: 13,
        code: NackCode::Sequence,
    });
    s.data(&data(40, 13, true), &acked, &mut out);
    assert_eq!(
        out,
        [
            Judgement::Late {
                psn: 11,
                at_ns: 20,
                since_ns: 10,
                psns_late: 3
            },
            resolved(GapClass::LostBeforeTap, 12, 10, 30),
            resolved(GapClass::NakLost, 13, 10, 40),
        ]
    );
    // 15, 16 and 18 missing; an ACK covers 16: the tap missed it; the
    // others stay unresolved to the end.
    out.clear();
    s.data(&data(50, 17, false), &acked, &mut out);
    s.data(&data(55, 19, false), &acked, &mut out);
    let mut covered = Covered::default();
    covered.start_at(10);
    Sack::acknowledge(&mut covered, &sack(14, 16, 0b10)); // 14; 17 by bit 1
    Sack::acknowledge(&mut covered, &sack(14, 16, 0b1)); // 16 by bit 0
    out.clear();
    s.ack(60, &covered, &mut out);
    assert_eq!(out, [resolved(GapClass::CaptureLost, 16, 50, 60)]);
    out.clear();
    s.finish(70, &covered, &mut out);
    assert_eq!(
        out,
        [
            resolved(GapClass::Unresolved, 15, 50, 70),
            resolved(GapClass::Unresolved, 18, 55, 70),
        ]
    );
}

#[test]
fn a_trimmed_nack_is_no_loss_and_psns_wrap_at_32_bits() {
    let acked = Covered::default();
    let mut s = Sack::start(&data(0, u32::MAX - 1, false));
    let mut out = Vec::new();
    s.data(&data(10, 1, false), &acked, &mut out); // MAX and 0 missing
    assert_eq!(
        out[0],
        Judgement::GapOpened {
            first: u32::MAX,
            psns: 2,
            last: 0
        }
    );
    assert!(s.behind(0) && !s.behind(2));
    s.nack(&Nack {
        ts: 15,
        psn: u32::MAX,
        code: NackCode::Trimmed,
    });
    out.clear();
    s.finish(20, &acked, &mut out);
    assert_eq!(
        out,
        [
            resolved(GapClass::Unresolved, 0, 10, 20),
            resolved(GapClass::Unresolved, u32::MAX, 10, 20),
        ]
    );
}

#[test]
fn a_gap_wider_than_the_window_holds_only_the_window() {
    let acked = Covered::default();
    let mut s = Sack::start(&data(0, 0, false));
    let mut out = Vec::new();
    let far = WINDOW as u32 + 11;
    s.data(&data(10, far, false), &acked, &mut out);
    assert_eq!(
        out[1],
        Judgement::Resolved(Resolved {
            class: GapClass::Unresolved,
            lo: 1,
            len: 10,
            last: 10,
            since_ns: 10,
            at_ns: 10,
        })
    );
    assert_eq!(s.missing.len(), WINDOW);
}
