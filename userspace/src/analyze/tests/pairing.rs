//! Flows, pairing, CM hints, CNP attribution, taps and priorities.

use super::*;

#[test]
fn two_qps_between_one_host_pair_get_their_own_cnps() {
    let (qb2, qa2) = (0x101, 0x201);
    let mut recs = vec![
        req(0, 1000),
        {
            let mut r = req(US, 500_000);
            r.roce_mut().dest_qp = qb2;
            r
        },
        // A CNP to the second QP before any pairing is known.
        cnp(2 * US, B, A, qa2),
    ];
    let mut ce = req(3 * US, 1001);
    ce.ecn = 3;
    recs.push(ce);
    recs.push(ack(4 * US, 1001)); // pairs QB with QA
    {
        let mut r = ack(5 * US, 500_000); // pairs qb2 with qa2
        r.roce_mut().dest_qp = qa2;
        recs.push(r);
    }
    recs.push(cnp(18 * US, B, A, QA));
    recs.push(cnp(30 * US, B, A, QA));
    recs.push(cnp(31 * US, B, A, 0x999)); // nobody's
    let r = run(&recs);
    let f1 = r.flow(A, QB);
    let f2 = r.flow(A, qb2);
    assert_eq!((f1.paired_qp, f2.paired_qp), (Some(QA), Some(qa2)));
    assert_eq!((f1.cnps, f2.cnps), (2, 1));
    assert_eq!((f1.ce, f2.ce), (1, 0));
    let t = &r.a.summary.totals;
    assert_eq!((t.cnps, t.cnps_unattributed, t.ce), (3, 1, 1));
    let ev: Vec<_> = r.events("cnp").iter().map(|e| e.flow_id).collect();
    assert_eq!(ev, [None, Some(0), Some(0), None]);
    assert_eq!(r.verdicts[2].flow_id, None);
    assert_eq!(r.verdicts[6].flow_id, Some(0));
    // CE at 3 µs answered at 18 µs.
    let rt = r.a.summary.ce_to_cnp.as_ref().expect("reaction");
    assert_eq!((rt.samples, rt.min_us, rt.max_us), (1, 15.0, 15.0));
    let c = r.finding("cnp-without-ce").expect("cnp-without-ce");
    assert_eq!(c.flows, vec![1]);
    assert!(c.detail.contains("1 CNP matched no flow"), "{}", c.detail);
    assert!(r.finding("ce-without-cnp").is_none());
}

#[test]
fn ce_without_cnp_on_a_paired_flow() {
    let mut a = req(0, 1);
    a.ecn = 3;
    let mut b = req(US, 2);
    b.ecn = 3;
    let r = run(&[a, b, ack(2 * US, 2)]);
    let f = r.finding("ce-without-cnp").expect("finding");
    assert_eq!(f.flows, vec![0]);
    assert!(
        f.detail
            .contains("flow 0 (10.0.0.1 → 10.0.0.2 QP 256, DSCP 26): 2 CE marks, 0 CNPs"),
        "{}",
        f.detail
    );
}

#[test]
fn pairing_waits_out_ambiguity() {
    let (qb2, qa2) = (0x101, 0x201);
    let other = |mut r: PacketRecord| {
        r.roce_mut().dest_qp = qb2;
        r
    };
    let resp2 = |mut r: PacketRecord| {
        r.roce_mut().dest_qp = qa2;
        r
    };
    let r = run(&[
        req(0, 10),
        req(US, 11),
        req(2 * US, 12),
        other(req(3 * US, 11)),
        other(req(4 * US, 12)),
        other(req(5 * US, 13)),
        // PSN 11 is in both ranges: no decision.
        resp2(ack(6 * US, 11)),
        // PSN 13 only in the second's.
        resp2(ack(7 * US, 13)),
        // PSN 10 now only fits the first (the second is taken).
        ack(8 * US, 10),
    ]);
    assert_eq!(r.flow(A, QB).paired_qp, Some(QA));
    assert_eq!(r.flow(A, qb2).paired_qp, Some(qa2));
    assert_eq!(r.flow(B, QA).paired_qp, Some(QB));
    assert_eq!(r.flow(B, qa2).paired_qp, Some(qb2));
}

#[test]
fn pair_hint_pairs_without_psns() {
    let mut an = Analyzer::new(Config::default());
    let mut sink = VecSink::default();
    an.pair_hint(0, A, QA, B, QB);
    an.push(&req(0, 10), &mut sink);
    an.push(&cnp(US, B, A, QA), &mut sink);
    let a = an.finish(&mut sink);
    assert_eq!(a.flows.len(), 1);
    assert_eq!((a.flows[0].paired_qp, a.flows[0].cnps), (Some(QA), 1));
}

#[test]
fn two_interfaces_seeing_the_same_frames() {
    let base = [
        req(0, 10),
        req(US, 11),
        ack(2 * US, 11),
        req(3 * US, 12),
        nak(4 * US, 12),
        req(5 * US, 12),
    ];
    let mut recs = Vec::new();
    for r in base {
        recs.push(on(r, 0));
        let mut r1 = on(r, 1);
        r1.ts_ns += 300;
        recs.push(r1);
    }
    let r = run(&recs);
    assert_eq!(r.a.flows.len(), 4);
    for iface in [0, 1] {
        let f = r.flow_on(iface, A, QB);
        assert_eq!(f.data_packets, 4);
        assert_eq!(
            (f.retrans_packets, f.rewinds, f.rewinds_nak, f.gaps),
            (1, 1, 1, 0)
        );
        let s = r.flow_on(iface, B, QA);
        assert_eq!((s.acks, s.naks, s.paired_qp), (1, 1, Some(QB)));
    }
    assert_eq!(r.a.summary.totals.retrans_packets, 2);
}

#[test]
fn ud_and_qp1_are_flows_without_sequence_analysis() {
    let mut mad = roce(0, A, B, ib::QP1, 0x64, 7);
    mad.flags |= flags::HAS_DETH;
    mad.payload_len = 256;
    let mut again = mad;
    again.ts_ns = US;
    again.roce_mut().psn = 3;
    let malformed = PacketRecord {
        ts_ns: 2 * US,
        kind: Kind::Malformed as u8,
        ..PacketRecord::default()
    };
    let r = run(&[mad, again, malformed]);
    assert_eq!(r.a.flows.len(), 1);
    let f = &r.a.flows[0];
    assert_eq!(
        (f.dest_qp, f.packets, f.data_packets, f.payload_bytes),
        (1, 2, 2, 512)
    );
    assert_eq!((f.retrans_packets, f.gaps, f.rewinds), (0, 0, 0));
    assert_eq!(
        r.verdicts[0],
        Verdict {
            flow_id: Some(0),
            retrans: None,
            ..Verdict::default()
        }
    );
    assert_eq!(r.verdicts[2], Verdict::default());
    assert_eq!(r.a.summary.frames.malformed, 1);
    assert_eq!(r.a.summary.totals.request_flows, 0);
}

#[test]
fn dscp_map_gives_untagged_flows_their_priority() {
    let mut map = [0u8; 64];
    map[26] = 5;
    let mut q = [0; 8];
    q[5] = 65535;
    let config = Config {
        dscp_to_priority: Some(map),
        ..Config::default()
    };
    let r = run_with(
        config,
        &[
            req(0, 1),
            pfc(10 * US, 1 << 5, q),
            pfc(60 * US, 1 << 5, [0; 8]),
            req(110 * US, 2),
        ],
    );
    // Bin 0 has packets, bin 100 µs has none during the pause... only bins
    // with traffic: 0 (paused 10..60 µs) and 100 µs.
    let tl: Vec<_> = r
        .sink
        .timeline
        .iter()
        .map(|t| (t.bin_start_ns, t.paused_ns))
        .collect();
    assert_eq!(tl, [(0, 50_000), (100_000, 0)]);
    // 110 µs idle with 50 µs paused: under half, but the pause began right
    // after the flow's packet and the flow stayed silent through all of it.
    assert_eq!(r.finding("pfc-victims").expect("victim").flows, vec![0]);
}
