//! RoCE frames a switch trimmed (docs/analysis.md, "RoCE: trimmed frames"):
//! cut and re-marked, bytes that cannot be whole, and NAKed by their PSN.

use super::*;

/// [`req`] as the sender built it, its ICRC checked and passing.
fn whole(ts: u64, psn: u32) -> PacketRecord {
    let mut r = req(ts, psn);
    r.flags |= flags::ICRC_CHECKED | flags::ICRC_OK;
    r
}

/// [`req`] after a switch trimmed it to its headers and re-marked it DSCP
/// 46: `rewrote`, the switch made the IP length match (the ICRC fails);
/// otherwise it left it (the frame is shorter than its IP length on the
/// wire, and the capture holds all of it).
fn trimmed(ts: u64, psn: u32, rewrote: bool) -> PacketRecord {
    let mut r = req(ts, psn);
    r.dscp = 46;
    (r.frame_len, r.cap_len) = (78, 78);
    if rewrote {
        r.payload_len = 0;
        r.flags |= flags::ICRC_CHECKED;
    } else {
        r.flags |= flags::CUT;
    }
    r
}

/// PSN 102 arrives as `third`, 103 after it, the receiver NAKs `named`,
/// and the sender resends from 102.
fn trace(third: PacketRecord, named: u32) -> Vec<PacketRecord> {
    vec![
        whole(0, 100),
        whole(US, 101),
        third,
        whole(3 * US, 103),
        ack(4 * US, 101),
        nak(5 * US, named),
        whole(6 * US, 102),
        whole(7 * US, 103),
        ack(8 * US, 103),
    ]
}

fn ids(r: &Run) -> Vec<&str> {
    r.a.summary.findings.iter().map(|f| f.id).collect()
}

#[test]
fn a_trimmed_frame_the_receiver_naks_is_congestion_not_corruption_or_loss() {
    for rewrote in [true, false] {
        let r = run(&trace(trimmed(2 * US, 102, rewrote), 102));
        let f = r.flow(A, QB);
        assert_eq!((f.trimmed, f.icrc_errors), (1, Some(0)), "{rewrote}");
        assert_eq!(f.rewinds_nak, 1, "the resend is still a NAK rewind");
        let t = &r.a.summary.taps[0];
        assert_eq!((t.trimmed, t.icrc_failed), (1, 0));
        assert_eq!(r.a.summary.frames.cut, 0, "{rewrote}: not a cut frame");
        assert_eq!(r.a.summary.totals.trimmed, 1);
        let found = ids(&r);
        assert!(found.contains(&"trimming"), "{found:?}");
        for not in ["real-loss", "corrupted-frames"] {
            assert!(!found.contains(&not), "{rewrote}: {found:?}");
        }
        let w = r.finding("trimming").unwrap();
        assert!(w.title.contains("trimmed 1 RoCE frame"), "{}", w.title);
    }
}

#[test]
fn without_its_nak_or_its_remark_a_short_frame_is_what_it_looked_like() {
    // No NAK names it (the receiver named 103): an ICRC failure.
    let r = run(&trace(trimmed(2 * US, 102, true), 103));
    let f = r.flow(A, QB);
    assert_eq!((f.trimmed, f.icrc_errors), (0, Some(1)));
    assert_eq!(r.a.summary.taps[0].icrc_failed, 1);
    assert!(!ids(&r).contains(&"trimming"));
    // The IP length left, but no NAK: a cut frame.
    let r = run(&trace(trimmed(2 * US, 102, false), 103));
    assert_eq!((r.flow(A, QB).trimmed, r.a.summary.frames.cut), (0, 1));
    // Cut and failing its ICRC, but with the data DSCP (a short frame
    // corrupted, not re-marked): corruption, and its NAK is loss.
    let mut short = trimmed(2 * US, 102, true);
    short.dscp = 26;
    let r = run(&trace(short, 102));
    assert_eq!(
        (r.flow(A, QB).trimmed, r.flow(A, QB).icrc_errors),
        (0, Some(1))
    );
    assert!(ids(&r).contains(&"real-loss"), "{:?}", ids(&r));
    // A snap length cut a re-marked frame: shorter in the capture than on
    // the wire, never a trim.
    let mut snapped = trimmed(2 * US, 102, false);
    snapped.frame_len = 1000;
    snapped.cap_len = 128;
    let r = run(&trace(snapped, 102));
    assert_eq!((r.flow(A, QB).trimmed, r.a.summary.frames.cut), (0, 1));
}

#[test]
fn a_resend_before_the_nak_ends_the_wait() {
    // 102 trimmed, resent by a timeout, then a NAK naming 102: the NAK
    // answers the resend's loss, not the trim.
    let recs = vec![
        whole(0, 100),
        whole(US, 101),
        trimmed(2 * US, 102, true),
        whole(3 * US, 102),
        nak(4 * US, 102),
    ];
    let r = run(&recs);
    assert_eq!(r.flow(A, QB).trimmed, 0);
    assert_eq!(r.flow(A, QB).icrc_errors, Some(1));
}
