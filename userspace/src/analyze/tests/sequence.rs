//! PSN sequencing: in-order flows, wraps, NAK, RNR and timeout rewinds, spurious resends, gaps, READ consumption.

use super::*;

#[test]
fn in_order_flow_and_its_acks() {
    let r = run(&[
        req(0, 10),
        req(US, 11),
        ack(2 * US, 11),
        req(3 * US, 12),
        ack(4 * US, 12),
    ]);
    assert_eq!(r.a.flows.len(), 2);
    let f = r.flow(A, QB);
    assert_eq!(f.flow_id, 0);
    assert_eq!(f.paired_qp, Some(QA));
    assert_eq!(
        (f.packets, f.data_packets, f.bytes, f.payload_bytes),
        (3, 3, 3300, 3072)
    );
    assert_eq!(
        (f.retrans_packets, f.rewinds, f.gaps, f.spurious_retrans),
        (0, 0, 0, 0)
    );
    assert_eq!((f.udp_sport, f.pcp, f.dscp), (Some(49152), None, Some(26)));
    assert_eq!((f.first_ts_ns, f.last_ts_ns), (0, 3 * US));
    assert_eq!(f.max_idle_us, 2.0);
    // 3300 bytes over 3 µs.
    assert_eq!(f.gbps, 3300.0 * 8.0 / 3000.0);
    assert_eq!(f.goodput_gbps, 3072.0 * 8.0 / 3000.0);
    let s = r.flow(B, QA);
    assert_eq!(s.flow_id, 1);
    assert_eq!(s.paired_qp, Some(QB));
    assert_eq!(
        (s.packets, s.data_packets, s.acks, s.naks, s.rnr_naks),
        (2, 0, 2, 0, 0)
    );
    assert_eq!(
        r.verdicts,
        vec![
            Verdict {
                flow_id: Some(0),
                retrans: Some(false),
                ..Verdict::default()
            },
            Verdict {
                flow_id: Some(0),
                retrans: Some(false),
                ..Verdict::default()
            },
            Verdict {
                flow_id: Some(1),
                retrans: None,
                ..Verdict::default()
            },
            Verdict {
                flow_id: Some(0),
                retrans: Some(false),
                ..Verdict::default()
            },
            Verdict {
                flow_id: Some(1),
                retrans: None,
                ..Verdict::default()
            },
        ]
    );
    let t = &r.a.summary.totals;
    assert_eq!(
        (t.flows, t.request_flows, t.response_flows, t.paired_flows),
        (2, 1, 1, 1)
    );
    assert_eq!((t.packets, t.data_packets, t.acks), (5, 3, 2));
    assert!(r.a.summary.findings.is_empty());
    assert_eq!(r.a.summary.frames.total, 5);
    assert_eq!(r.a.summary.frames.roce, 5);
    assert_eq!(r.a.summary.duration_ns, 4 * US);
}

#[test]
fn psn_wraps_at_2_pow_24() {
    let r = run(&[
        req(0, 0xFF_FFFE),
        req(US, 0xFF_FFFF),
        req(2 * US, 0),
        req(3 * US, 1),
        // Timeout: back to 0xFFFFFF, 500 µs later.
        req(503 * US, 0xFF_FFFF),
        req(504 * US, 0),
        req(505 * US, 1),
        req(506 * US, 2),
    ]);
    let f = r.flow(A, QB);
    assert_eq!((f.data_packets, f.retrans_packets, f.gaps), (8, 3, 0));
    assert_eq!(
        (f.rewinds, f.rewinds_timeout, f.max_rewind_depth),
        (1, 1, 3)
    );
    assert_eq!(f.retrans_rate, 3.0 / 8.0);
    assert_eq!(f.max_idle_us, 500.0);
    let rw = r.events("rewind");
    assert_eq!(rw.len(), 1);
    assert_eq!(rw[0].psn, Some(0xFF_FFFF));
    assert_eq!(rw[0].depth, Some(3));
    assert_eq!(rw[0].trigger, Some(Trigger::Timeout));
    assert_eq!(rw[0].idle_us, Some(500.0));
    assert_eq!(rw[0].ts_ns, 503 * US);
    assert_eq!(
        r.retrans(),
        [false, false, false, false, true, true, true, false].map(Some)
    );
    // Goodput counts only first transmissions.
    assert_eq!(f.goodput_gbps, 5.0 * 1024.0 * 8.0 / 506_000.0);
}

#[test]
fn nak_triggers_rewind() {
    let r = run(&nak_rewind());
    let f = r.flow(A, QB);
    assert_eq!(
        (
            f.retrans_packets,
            f.rewinds,
            f.rewinds_nak,
            f.rewinds_timeout
        ),
        (3, 1, 1, 0)
    );
    assert_eq!((f.max_rewind_depth, f.spurious_retrans, f.gaps), (3, 0, 0));
    let s = r.flow(B, QA);
    assert_eq!((s.acks, s.naks, s.rnr_naks), (1, 1, 0));
    let rw = r.events("rewind");
    assert_eq!(rw.len(), 1);
    assert_eq!(
        (rw[0].psn, rw[0].depth, rw[0].trigger),
        (Some(102), Some(3), Some(Trigger::Nak))
    );
    assert_eq!(rw[0].idle_us, Some(3.0));
    let n = r.events("nak");
    assert_eq!(n.len(), 1);
    assert_eq!((n[0].flow_id, n[0].psn), (Some(1), Some(102)));
    assert_eq!(
        n[0].detail,
        EventDetail::Nak(NakDetail {
            psn: 102,
            rnr: false,
            code: ib::aeth::NAK_PSN_SEQUENCE_ERROR,
            request_flow: Some(0),
        })
    );
    r.assert_nak_loss();
    assert!(r.finding("ghost-retransmissions").is_none());
}

#[test]
fn rnr_nak_triggers_rnr_rewind() {
    let r = run(&[
        req(0, 100),
        req(US, 101),
        rnr(2 * US, 101),
        req(100 * US, 101),
        req(101 * US, 102),
    ]);
    let f = r.flow(A, QB);
    assert_eq!(
        (f.retrans_packets, f.rewinds, f.rewinds_rnr, f.rewinds_nak),
        (1, 1, 1, 0)
    );
    assert_eq!(f.max_rewind_depth, 1);
    assert_eq!(r.flow(B, QA).rnr_naks, 1);
    assert_eq!(r.events("rnr_nak").len(), 1);
    assert_eq!(r.events("rewind")[0].trigger, Some(Trigger::Rnr));
    assert!(r.finding("receiver-not-ready").is_some());
}

#[test]
fn stale_or_foreign_nak_is_a_timeout() {
    let r = run(&[
        req(0, 100),
        req(US, 101),
        req(2 * US, 102),
        nak(3 * US, 101),
        // NAK-triggered rewind to 101.
        req(4 * US, 101),
        req(5 * US, 102),
        // Back to 101 again with no new NAK: the old one was answered.
        req(600 * US, 101),
        req(601 * US, 102),
        // A NAK for 102, but the NIC rewinds to 100: timeout.
        nak(602 * US, 102),
        req(1200 * US, 100),
        // The resend of 102 is sequential and consumes the NAK for 102...
        req(1201 * US, 101),
        req(1202 * US, 102),
        // ...so this rewind to 102 is a timeout too.
        req(1800 * US, 102),
    ]);
    let f = r.flow(A, QB);
    assert_eq!(f.rewinds, 4);
    assert_eq!((f.rewinds_nak, f.rewinds_rnr, f.rewinds_timeout), (1, 0, 3));
    assert_eq!(f.retrans_packets, 8);
    assert_eq!(f.max_rewind_depth, 3);
    let triggers: Vec<_> = r
        .events("rewind")
        .iter()
        .map(|e| e.trigger.unwrap())
        .collect();
    assert_eq!(
        triggers,
        [
            Trigger::Nak,
            Trigger::Timeout,
            Trigger::Timeout,
            Trigger::Timeout
        ]
    );
    let depths: Vec<_> = r
        .events("rewind")
        .iter()
        .map(|e| e.depth.unwrap())
        .collect();
    assert_eq!(depths, [2, 2, 3, 1]);
}

#[test]
fn spurious_resends_were_already_acked() {
    let mut recs: Vec<_> = (0..10).map(|i| req(i * US, i as u32)).collect();
    recs.push(ack(10 * US, 5));
    // Timeout rewind to 3: 3, 4, 5 had been acknowledged.
    recs.extend((3..10).map(|i| req(400 * US + i as u64 * US, i)));
    let r = run(&recs);
    let f = r.flow(A, QB);
    assert_eq!(
        (f.retrans_packets, f.spurious_retrans, f.rewinds_timeout),
        (7, 3, 1)
    );
    assert_eq!(f.max_rewind_depth, 7);
    let e = &r.events("rewind")[0];
    assert!(
        matches!(
            e.detail,
            EventDetail::Rewind(RewindDetail {
                psn: 3,
                acked: 3,
                trigger: Trigger::Timeout,
                ..
            })
        ),
        "{:?}",
        e.detail
    );
    let g = r.finding("ghost-retransmissions").expect("ghost");
    assert_eq!(g.severity, Severity::Critical);
    assert_eq!(g.flows, vec![0]);
    assert!(
        g.detail
            .contains("3 of 7 retransmitted packets had already been acknowledged"),
        "{}",
        g.detail
    );
}

#[test]
fn gaps_count_missing_psns() {
    let r = run(&[
        req(0, 10),
        req(US, 11),
        req(2 * US, 15),
        req(3 * US, 16),
        // Back to 14, which was never seen, and then on with new PSNs: 14
        // was late (reordered), not resent: no retransmission, no rewind.
        req(4 * US, 14),
        req(5 * US, 20),
    ]);
    let f = r.flow(A, QB);
    assert_eq!(
        (f.gaps, f.retrans_packets, f.rewinds, f.max_rewind_depth),
        (2, 0, 0, 0)
    );
    let g = r.events("gap");
    assert_eq!(g.len(), 2);
    assert_eq!((g[0].psn, g[0].depth), (Some(12), Some(3)));
    assert_eq!((g[1].psn, g[1].depth), (Some(17), Some(3)));
    // 12, 13 and 17..=19 were never seen and nothing acknowledged them.
    assert_eq!(
        (f.gap_late, f.gap_unresolved, f.gap_capture_lost),
        (1, 5, 0)
    );
    assert_eq!((f.late_max_us, f.late_max_psns), (Some(2.0), Some(2)));
    let late = r.events("late");
    assert_eq!(
        (late.len(), late[0].psn, late[0].ts_ns),
        (1, Some(14), 4 * US)
    );
    assert!(r.finding("reordering").is_some());
    assert!(r.finding("ghost-retransmissions").is_none());
    // Unknown is not loss: a capture fact, no finding (docs/analysis.md,
    // "Gaps").
    assert!(r.finding("real-loss").is_none());
    assert_eq!(
        r.a.summary.capture_facts,
        [
            "the capture ends before, or lacks the direction that shows, what became of 5 PSNs it never saw (neither resent, NAKed nor acknowledged in it): unknown, not counted as loss"
        ]
    );
}

#[test]
fn read_requests_consume_one_psn_per_response_packet() {
    let read = |ts: u64, psn: u32, len: u32| {
        let mut r = roce(ts, A, B, QB, op::READ_REQUEST, psn);
        r.flags |= flags::HAS_RETH;
        r.roce_mut().reth_len = len;
        r
    };
    let resp = |ts: u64, o: u8, psn: u32, len: u32| {
        let mut r = roce(ts, B, A, QA, o, psn);
        if o != op::READ_RESPONSE_MIDDLE {
            r.flags |= flags::HAS_AETH;
        }
        r.payload_len = len;
        r
    };
    // Re-issued within microseconds, as no real requester would: no mirror
    // copies in this sequence test.
    let r = run_with(
        Config {
            dup_window_ns: 0,
            ..Config::default()
        },
        &[
            // MTU unknown: 4096 bytes may take up to 16 PSNs (at 256).
            read(0, 10, 4096),
            // The READ took 10..=13 (MTU 1024): 14 is in order.
            req(US, 14),
            resp(2 * US, op::READ_RESPONSE_FIRST, 10, 1024),
            resp(3 * US, op::READ_RESPONSE_MIDDLE, 11, 1024),
            // Now the MTU is known (1024): 3000 bytes take 3 PSNs.
            read(4 * US, 15, 3000),
            req(5 * US, 18),
            // Re-issued READ: a retransmission, back 9 PSNs.
            read(6 * US, 10, 4096),
            // 14 follows the READ's 4 PSNs: sequential.
            req(7 * US, 14),
            // 25 is after next (19): a gap of 6.
            req(8 * US, 25),
        ],
    );
    let f = r.flow(A, QB);
    assert_eq!(f.data_packets, 7);
    assert_eq!(
        (f.retrans_packets, f.rewinds, f.max_rewind_depth),
        (2, 1, 9)
    );
    assert_eq!(f.gaps, 1);
    assert_eq!(r.events("gap")[0].psn, Some(19));
    assert_eq!(r.events("gap")[0].depth, Some(6));
    let s = r.flow(B, QA);
    assert_eq!(
        (s.packets, s.acks, s.payload_bytes, s.paired_qp),
        (2, 0, 2048, Some(QB))
    );
    // The READ response ACK-covers PSN 10: the re-issued READ was spurious.
    assert_eq!(f.spurious_retrans, 1);
}

#[test]
fn both_ends_sending_requests_share_flows_with_the_responses() {
    let b_req = |ts: u64, psn: u32| {
        let mut r = roce(ts, B, A, QA, op::SEND_ONLY, psn);
        r.payload_len = 64;
        r
    };
    let a_ack = |ts: u64, psn: u32| {
        let mut r = roce(ts, A, B, QB, op::ACKNOWLEDGE, psn);
        r.flags |= flags::HAS_AETH;
        r
    };
    let r = run(&[
        req(0, 10),
        req(US, 11),
        b_req(2 * US, 500),
        b_req(3 * US, 501),
        ack(4 * US, 11),
        a_ack(5 * US, 501),
        b_req(300 * US, 500),
        req(301 * US, 10),
    ]);
    assert_eq!(r.a.flows.len(), 2);
    let fa = r.flow(A, QB);
    let fb = r.flow(B, QA);
    assert_eq!((fa.paired_qp, fb.paired_qp), (Some(QA), Some(QB)));
    for f in [fa, fb] {
        assert_eq!((f.packets, f.data_packets, f.acks), (4, 3, 1));
        assert_eq!(
            (f.retrans_packets, f.rewinds_timeout, f.spurious_retrans),
            (1, 1, 1)
        );
    }
    let t = &r.a.summary.totals;
    assert_eq!(
        (t.request_flows, t.response_flows, t.paired_flows),
        (2, 2, 2)
    );
}

/// Found by the `analyzer` fuzz target: a pause starting near the end of
/// the u64 nanosecond range overflowed its deadline (`t + duration`); so did
/// a timeline bin's end and a storm's event time. They saturate.
#[test]
fn timestamps_near_u64_max_do_not_overflow() {
    let end = u64::MAX - 10;
    // Its resend 5 ns after the original is no mirror copy here.
    let config = Config {
        storm_ns: u64::MAX,
        bin_ns: 1_000_000_000,
        dup_window_ns: 0,
        ..Config::default()
    };
    let r = run_with(
        config,
        &[
            tagged(req(end - 5, 1), 3),
            pfc3(end - 2, 65535),
            pfc3(end, 65535),
            tagged(req(end, 2), 3),
            tagged(req(end, 1), 3),
        ],
    );
    assert_eq!(r.a.pfc.len(), 1);
    assert_eq!(r.a.pfc[0].start_ns, end - 2);
    assert_eq!(r.a.pfc[0].end_ns, end);
    assert_eq!(r.a.pfc[0].ended_by, PauseEnd::CaptureEnd);
    assert_eq!(r.a.flows[0].retrans_packets, 1);
    assert!(render_text(&r.a, r.a.summary.frames.total, Some(80)).contains("rewind"));
}
