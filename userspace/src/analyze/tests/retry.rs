//! Retry exhaustion against livelock (docs/analysis.md, "Retry exhaustion").

use super::*;

/// PSN 4 vanishes every time, PSN 5 behind it gets through: the responder
/// NAKs once (it expected 4), re-acknowledges 3 once, then stays quiet; the
/// requester resends 4 after that NAK and after six timeouts 131.072 µs
/// apart (T = 5), then falls silent. A request of another connection ends
/// the capture at 1 ms.
#[test]
fn retries_spent_while_the_responder_answers_are_exhaustion_with_mtu_advice() {
    const GAP: u64 = 131_072;
    let mut recs = Vec::new();
    for psn in 0..4 {
        recs.push(req(psn as u64 * US, psn));
    }
    recs.push(ack(10 * US, 3));
    recs.push(req(20 * US, 4));
    recs.push(req(21 * US, 5));
    recs.push(nak(25 * US, 4));
    let mut at = 26 * US;
    recs.push(req(at, 4));
    recs.push(req(at + US, 5));
    recs.push(ack(28 * US, 3));
    for _ in 0..6 {
        at += GAP;
        recs.push(req(at, 4));
        recs.push(req(at + US, 5));
    }
    let last = at + US;
    recs.push(roce(1_000 * US, B, A, 0x300, op::SEND_ONLY, 0));
    let r = run(&recs);

    let f = r.finding("retry-exhausted").expect("retry-exhausted");
    let p = |k: &str| f.params[k].clone();
    assert_eq!(
        (
            p("retries"),
            p("retry_count"),
            p("timeout_ns"),
            p("timeout_exponent")
        ),
        (7.into(), 7.into(), GAP.into(), 5.into())
    );
    assert_eq!(
        (p("first_retry_ns"), p("last_retry_ns"), p("silent_from_ns")),
        ((26 * US).into(), at.into(), last.into())
    );
    assert_eq!(
        (
            p("reverse_packets"),
            p("reverse_naks"),
            p("flows_nothing_came_back")
        ),
        (1.into(), 0.into(), 0.into())
    );
    assert!(
        f.detail
            .contains("Retry count 7 (assumed: no CM REQ in the capture gives it); 1 of the retries followed a sequence-error NAK. The reverse direction answered 1 time from the first retry on (0 NAKs, 0 ACKs acknowledging PSNs before 4)"),
        "{}",
        f.detail
    );
    assert!(
        f.recommendation.contains(
            "The responder answered but never got this packet: compare the frame's length"
        ),
        "{}",
        f.recommendation
    );
    // Seven rewinds to one PSN: the flow's run is still a livelock's length,
    // but the finding is the exhaustion.
    assert_eq!(r.flow(A, QB).livelock_psn, Some(4));
    assert!(r.finding("retransmission-livelock").is_none());
}

/// The same requester still resending when the capture ends (its last
/// resend less than a timeout before the end): no exhaustion yet, a
/// livelock.
#[test]
fn a_requester_still_resending_at_the_end_is_a_livelock() {
    let mut recs = vec![req(0, 0), ack(5 * US, 0), req(10 * US, 1)];
    for k in 1..=7 {
        recs.push(req(10 * US + k * 65_536, 1));
    }
    recs.push(roce(
        10 * US + 7 * 65_536 + 30 * US,
        B,
        A,
        0x300,
        op::SEND_ONLY,
        0,
    ));
    let r = run(&recs);
    assert!(r.finding("retry-exhausted").is_none());
    let f = r.finding("retransmission-livelock").expect("livelock");
    assert_eq!(
        (f.params["psn"].clone(), f.params["rewinds"].clone()),
        (1.into(), 7.into())
    );
}
