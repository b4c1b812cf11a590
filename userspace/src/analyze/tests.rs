//! Hand-made record sequences with exact expected numbers.

use super::*;
use rocescope_common::proto::ib::op;

const A: [u8; 16] = v4(10, 0, 0, 1);
const B: [u8; 16] = v4(10, 0, 0, 2);
/// Responder QP (requests from A go to it) and requester QP (responses to A).
const QB: u32 = 0x100;
const QA: u32 = 0x200;
const MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
const US: u64 = 1000;

const fn v4(a: u8, b: u8, c: u8, d: u8) -> [u8; 16] {
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d]
}

fn roce(ts: u64, src: [u8; 16], dst: [u8; 16], qp: u32, opcode: u8, psn: u32) -> PacketRecord {
    PacketRecord {
        ts_ns: ts,
        kind: Kind::Roce as u8,
        flags: flags::HAS_IPV4 | flags::HAS_UDP | flags::HAS_BTH | flags::HAS_PAYLOAD_LEN,
        src_ip: src,
        dst_ip: dst,
        dest_qp: qp,
        psn,
        opcode,
        dscp: 26,
        ecn: 0b10,
        udp_sport: 49152,
        frame_len: 70,
        cap_len: 70,
        ..PacketRecord::default()
    }
}

/// RC RDMA WRITE Only, 1024 bytes, A → B QP `QB`.
fn req(ts: u64, psn: u32) -> PacketRecord {
    let mut r = roce(ts, A, B, QB, op::WRITE_ONLY, psn);
    r.flags |= flags::HAS_RETH;
    r.reth_len = 1024;
    r.payload_len = 1024;
    r.frame_len = 1100;
    r
}

fn aeth(ts: u64, psn: u32, syndrome: u8) -> PacketRecord {
    let mut r = roce(ts, B, A, QA, op::ACKNOWLEDGE, psn);
    r.flags |= flags::HAS_AETH;
    r.aeth_syndrome = syndrome;
    r
}

fn ack(ts: u64, psn: u32) -> PacketRecord {
    aeth(ts, psn, 0x1F)
}

fn nak(ts: u64, psn: u32) -> PacketRecord {
    aeth(ts, psn, 0x60)
}

fn rnr(ts: u64, psn: u32) -> PacketRecord {
    aeth(ts, psn, 0x2E)
}

fn cnp(ts: u64, from: [u8; 16], to: [u8; 16], qp: u32) -> PacketRecord {
    let mut r = roce(ts, from, to, qp, ib::OPCODE_CNP, 0);
    r.kind = Kind::Cnp as u8;
    r.flags |= flags::BECN;
    r.dscp = 48;
    r
}

fn pfc(ts: u64, enable: u8, quanta: [u16; 8]) -> PacketRecord {
    PacketRecord {
        ts_ns: ts,
        kind: Kind::Pfc as u8,
        flags: flags::HAS_PFC,
        src_mac: MAC,
        pfc_enable: enable,
        pfc_quanta: quanta,
        frame_len: 64,
        cap_len: 64,
        ..PacketRecord::default()
    }
}

/// Priority 3 paused for `q` quanta (5.12 ns each at 100 Gb/s).
fn pfc3(ts: u64, q: u16) -> PacketRecord {
    let mut quanta = [0; 8];
    quanta[3] = q;
    pfc(ts, 1 << 3, quanta)
}

fn tagged(mut r: PacketRecord, pcp: u8) -> PacketRecord {
    r.flags |= flags::HAS_VLAN;
    r.vlan = 100;
    r.pcp = pcp;
    r
}

fn on(mut r: PacketRecord, iface: u16) -> PacketRecord {
    r.iface = iface;
    r
}

struct Run {
    verdicts: Vec<Verdict>,
    a: Analysis,
    sink: VecSink,
}

impl Run {
    fn flow(&self, src: [u8; 16], qp: u32) -> &FlowRow {
        self.flow_on(0, src, qp)
    }
    fn flow_on(&self, iface: u16, src: [u8; 16], qp: u32) -> &FlowRow {
        self.a
            .flows
            .iter()
            .find(|f| f.iface == iface && f.src_ip == src && f.dest_qp == qp)
            .expect("flow")
    }
    fn events(&self, kind: &str) -> Vec<&Event> {
        self.sink.events.iter().filter(|e| e.kind == kind).collect()
    }
    fn finding(&self, id: &str) -> Option<&Finding> {
        self.a.summary.findings.iter().find(|f| f.id == id)
    }
    fn retrans(&self) -> Vec<Option<bool>> {
        self.verdicts.iter().map(|v| v.retrans).collect()
    }
}

fn run_with(config: Config, recs: &[PacketRecord]) -> Run {
    let mut an = Analyzer::new(config);
    let mut sink = VecSink::default();
    let verdicts = recs.iter().map(|r| an.push(r, &mut sink)).collect();
    let a = an.finish(&mut sink);
    Run { verdicts, a, sink }
}

fn run(recs: &[PacketRecord]) -> Run {
    run_with(Config::default(), recs)
}

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
    assert_eq!(rw[0].trigger, Some("timeout"));
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
    let r = run(&[
        req(0, 100),
        req(US, 101),
        req(2 * US, 102),
        req(3 * US, 103),
        req(4 * US, 104),
        ack(5 * US, 101),
        nak(6 * US, 102),
        req(7 * US, 102),
        req(8 * US, 103),
        req(9 * US, 104),
        req(10 * US, 105),
    ]);
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
        (Some(102), Some(3), Some("nak"))
    );
    assert_eq!(rw[0].idle_us, Some(3.0));
    let n = r.events("nak");
    assert_eq!(n.len(), 1);
    assert_eq!((n[0].flow_id, n[0].psn), (Some(1), Some(102)));
    assert!(
        n[0].detail.contains("PSN sequence error"),
        "{}",
        n[0].detail
    );
    let loss = r.finding("real-loss").expect("real-loss");
    assert_eq!(loss.flows, vec![0, 1]);
    assert!(
        loss.detail
            .contains("NAK-driven loss: 1 NAK, 1 NAK-triggered rewind"),
        "{}",
        loss.detail
    );
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
    assert_eq!(r.events("rewind")[0].trigger, Some("rnr"));
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
    assert_eq!(triggers, ["nak", "timeout", "timeout", "timeout"]);
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
        e.detail
            .contains("3 of the rewound PSNs already acknowledged"),
        "{}",
        e.detail
    );
    let g = r.finding("ghost-retransmissions").expect("ghost");
    assert_eq!(g.severity, "critical");
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
    assert!(
        r.finding("real-loss")
            .unwrap()
            .detail
            .contains("Unresolved gaps: 5 PSNs never seen and never acknowledged")
    );
}

#[test]
fn ghost_drop_under_pfc_pause_is_diagnosed() {
    // The acceptance scenario: priority 3 is paused for 335.5 µs; the
    // sender's 250 µs timer fires during it and it goes back 6 PSNs, 4 of
    // them already acknowledged.
    let mut recs = Vec::new();
    for i in 0..8u32 {
        recs.push(tagged(req(i as u64 * US, 1000 + i), 3));
    }
    recs.push(tagged(ack(8 * US, 1001), 3));
    recs.push(tagged(ack(9 * US, 1003), 3));
    recs.push(pfc3(10 * US, 65535)); // until 10 + 335.539 µs
    for i in 0..6u32 {
        recs.push(tagged(req(257 * US + i as u64 * US, 1002 + i), 3));
    }
    recs.push(tagged(req(400 * US, 1008), 3));
    let r = run(&recs);
    let f = r.flow(A, QB);
    assert_eq!((f.retrans_packets, f.spurious_retrans), (6, 2));
    assert_eq!(
        (f.rewinds, f.rewinds_timeout, f.max_rewind_depth),
        (1, 1, 6)
    );
    assert_eq!(f.pcp, Some(3));
    let e = &r.events("rewind")[0];
    assert_eq!(e.idle_us, Some(250.0));
    assert!(
        e.detail
            .contains("priority 3 paused 247.0 µs of the idle time"),
        "{}",
        e.detail
    );
    assert_eq!(r.a.pfc.len(), 1);
    assert_eq!(
        r.a.pfc[0],
        PfcInterval {
            iface: 0,
            src_mac: MAC,
            priority: 3,
            start_ns: 10 * US,
            end_ns: 10 * US + 335_539,
            frames: 1,
            ended_by: "expiry",
        }
    );
    let g = r.finding("ghost-retransmissions").expect("ghost");
    assert_eq!(g.severity, "critical");
    for want in [
        "flow 0 (10.0.0.1 → 10.0.0.2 QP 256, if0)",
        "rewound 6 PSNs back to PSN 1002 after 250.0 µs idle, on a timeout (no NAK preceded it)",
        "2 of the 6 rewound PSNs had already been acknowledged",
        "priority 3 was paused for 247.0 µs of that idle time",
        "covered by the pause of 335.5 µs on if0 priority 3 by 02:00:00:00:00:0b (from t+10.0 µs, 1 frame, ran out without a refresh)",
        "1 of them while the flow's priority was paused",
    ] {
        assert!(g.detail.contains(want), "missing {want:?} in {}", g.detail);
    }
    assert!(
        g.recommendation.contains("T ≥ 7 (524.3 µs)"),
        "{}",
        g.recommendation
    );
    let v = r.finding("pfc-victims").expect("victims");
    // The ACK flow fell silent as the pause began and stayed so to the end.
    assert_eq!(v.flows, vec![0, 1]);
    assert!(r.finding("pfc-pressure").is_some());
    let text = render_text(&r.a, r.a.summary.frames.total, None);
    assert!(text.contains("ghost-retransmissions"), "{text}");
    assert!(text.contains("rewound 6 PSNs back to PSN 1002"), "{text}");
    assert!(text.contains("Top flows by retransmissions"), "{text}");
}

#[test]
fn two_qps_between_one_host_pair_get_their_own_cnps() {
    let (qb2, qa2) = (0x101, 0x201);
    let mut recs = vec![
        req(0, 1000),
        {
            let mut r = req(US, 500_000);
            r.dest_qp = qb2;
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
        r.dest_qp = qa2;
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
        r.dest_qp = qb2;
        r
    };
    let resp2 = |mut r: PacketRecord| {
        r.dest_qp = qa2;
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
fn pfc_refresh_xon_expiry_and_capture_end() {
    let q = |p: u8, n: u16| {
        let mut quanta = [0; 8];
        quanta[p as usize] = n;
        quanta
    };
    let recs = [
        // Priority 3: paused at 0 for 5120 ns, refreshed at 3000, XON at 6000.
        pfc(0, 1 << 3, q(3, 1000)),
        pfc(3000, 1 << 3, q(3, 1000)),
        pfc(6000, 1 << 3, q(3, 0)),
        // An XON with nothing paused.
        pfc(7000, 1 << 3, q(3, 0)),
        // 512 ns at 10 µs, expires at 10512; the next frame starts a new one.
        pfc(10_000, 1 << 3, q(3, 100)),
        // A refresh arriving exactly at expiry keeps the pause.
        pfc(20_000, 1 << 3, q(3, 100)),
        pfc(20_512, 1 << 3, q(3, 100)),
        // Priority 4 bit clear: its quanta are ignored. Priority 6 paused until past the end.
        {
            let mut quanta = q(6, 65535);
            quanta[4] = 500;
            pfc(30_000, 1 << 6, quanta)
        },
        // 802.3x PAUSE: not PFC.
        PacketRecord {
            ts_ns: 35_000,
            kind: Kind::Pause as u8,
            flags: flags::HAS_PAUSE,
            pause_quanta: 65535,
            ..PacketRecord::default()
        },
        req(40_000, 1),
    ];
    let r = run(&recs);
    let p = &r.a.pfc;
    let rows: Vec<_> = p
        .iter()
        .map(|i| (i.priority, i.start_ns, i.end_ns, i.frames, i.ended_by))
        .collect();
    assert_eq!(
        rows,
        [
            (3, 0, 6000, 2, "xon"),
            (3, 10_000, 10_512, 1, "expiry"),
            (3, 20_000, 21_024, 2, "expiry"),
            (6, 30_000, 40_000, 1, "capture_end"),
        ]
    );
    assert_eq!(r.events("pfc_pause").len(), 4);
    assert_eq!(r.events("pfc_storm").len(), 0);
    let s = &r.a.summary;
    assert_eq!((s.frames.pfc, s.frames.pause, s.frames.total), (8, 1, 10));
    assert_eq!(s.duration_ns, 40_000);
    assert_eq!(s.pfc.len(), 2);
    let p3 = &s.pfc[0];
    assert_eq!(
        (p3.iface, p3.priority, p3.frames, p3.xon_frames),
        (0, 3, 7, 2)
    );
    assert_eq!(p3.paused_ns, 6000 + 512 + 1024);
    assert_eq!(p3.fraction, 7536.0 / 40_000.0);
    assert_eq!(p3.storms, 0);
    let p6 = &s.pfc[1];
    assert_eq!(
        (p6.priority, p6.frames, p6.xon_frames, p6.paused_ns),
        (6, 1, 0, 10_000)
    );
    assert_eq!(s.totals.pfc_intervals, 4);
    assert!(r.finding("link-pause").is_some());
    let pr = r.finding("pfc-pressure").expect("pressure");
    assert_eq!(pr.severity, "critical"); // 25 % on priority 6
}

#[test]
fn pauses_from_two_senders_are_unioned_per_priority() {
    let mut other = pfc3(1000, 1000); // 1000..6120
    other.src_mac = [0x02, 0, 0, 0, 0, 0x0c];
    let r = run(&[pfc3(0, 1000), other, req(10_000, 1)]);
    assert_eq!(r.a.pfc.len(), 2);
    assert_eq!(r.a.summary.pfc[0].paused_ns, 6120);
    assert_eq!(r.a.summary.pfc[0].frames, 2);
}

#[test]
fn pfc_storm_is_a_long_continuous_pause() {
    let config = Config {
        storm_ns: 1_000_000,
        ..Config::default()
    };
    let mut recs = Vec::new();
    // Refreshed every 200 µs for 2 ms, then XON.
    for i in 0..10 {
        recs.push(pfc3(i * 200 * US, 65535));
    }
    recs.push(pfc3(2000 * US, 0));
    // A short one later: not a storm.
    recs.push(pfc3(3000 * US, 1000));
    recs.push(tagged(req(4000 * US, 1), 3));
    let r = run_with(config, &recs);
    assert_eq!(r.a.pfc.len(), 2);
    assert_eq!(
        (
            r.a.pfc[0].start_ns,
            r.a.pfc[0].end_ns,
            r.a.pfc[0].frames,
            r.a.pfc[0].ended_by
        ),
        (0, 2000 * US, 10, "xon")
    );
    let s = r.events("pfc_storm");
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].ts_ns, 1_000_000);
    assert_eq!(r.a.summary.pfc[0].storms, 1);
    assert_eq!(r.a.summary.totals.pfc_storms, 1);
    let f = r.finding("pfc-storm").expect("storm");
    assert_eq!(f.severity, "critical");
    assert_eq!(f.flows, vec![0]);
    assert_eq!(r.a.summary.findings[0].severity, "critical");
}

#[test]
fn timeline_bins_with_pause_time() {
    // Priority 3 paused 120..170 µs.
    let recs = [
        tagged(req(10 * US, 1), 3),
        tagged(req(50 * US, 2), 3),
        pfc3(120 * US, 65535),
        tagged(req(150 * US, 3), 3),
        pfc3(170 * US, 0),
        tagged(req(350 * US, 1), 3), // a retransmission (rewind)
    ];
    let r = run(&recs);
    let tl = &r.sink.timeline;
    assert_eq!(tl.len(), 3);
    let rows: Vec<_> = tl
        .iter()
        .map(|t| {
            (
                t.flow_id,
                t.bin_start_ns,
                t.bin_ns,
                t.packets,
                t.bytes,
                t.retrans_packets,
                t.paused_ns,
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (0, 0, 100_000, 2, 2200, 0, 0),
            (0, 100_000, 100_000, 1, 1100, 0, 50_000),
            (0, 300_000, 100_000, 1, 1100, 1, 0),
        ]
    );
    assert_eq!(tl[0].gbps, 2200.0 * 8.0 / 100_000.0);
    assert_eq!(tl[0].goodput_gbps, 2048.0 * 8.0 / 100_000.0);
    assert_eq!(tl[2].goodput_gbps, 0.0);
    // The idle 150 → 350 µs held 20 µs of pause: less than half, and the
    // rewind's idle overlaps it, so it is a stall.
    assert_eq!(
        r.a.summary
            .findings
            .iter()
            .filter(|f| f.id == "pfc-victims")
            .count(),
        1
    );
}

#[test]
fn timeline_counts_ce_and_cnps() {
    let mut a = req(0, 1);
    a.ecn = 3;
    let r = run(&[a, ack(US, 1), cnp(20 * US, B, A, QA), req(250 * US, 2)]);
    let tl: Vec<_> = r
        .sink
        .timeline
        .iter()
        .filter(|t| t.flow_id == 0)
        .map(|t| (t.bin_start_ns, t.packets, t.ce, t.cnps))
        .collect();
    assert_eq!(tl, [(0, 1, 1, 1), (200_000, 1, 0, 0)]);
}

#[test]
fn read_requests_consume_one_psn_per_response_packet() {
    let read = |ts: u64, psn: u32, len: u32| {
        let mut r = roce(ts, A, B, QB, op::READ_REQUEST, psn);
        r.flags |= flags::HAS_RETH;
        r.reth_len = len;
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
fn ud_and_qp1_are_flows_without_sequence_analysis() {
    let mut mad = roce(0, A, B, ib::QP1, 0x64, 7);
    mad.flags |= flags::HAS_DETH;
    mad.payload_len = 256;
    let mut again = mad;
    again.ts_ns = US;
    again.psn = 3;
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

#[test]
fn summary_serializes() {
    let r = run(&[req(0, 1), pfc3(US, 10)]);
    let json = serde_json::to_value(&r.a.summary).unwrap();
    assert_eq!(json["pfc"][0]["priority"], 3);
    assert_eq!(json["pfc"][0]["frames"], 1);
    assert_eq!(json["frames"]["pfc"], 1);
    assert!(json["findings"].is_array());
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

#[test]
fn a_long_idle_mostly_paused_is_a_stall() {
    // Untagged, DSCP 26 → priority 3 by default. Idle 0 → 40 µs, paused
    // 10 → 35 µs (XON): 25 of 40 µs.
    let r = run(&[
        req(0, 1),
        pfc3(10 * US, 65535),
        pfc3(35 * US, 0),
        req(40 * US, 2),
    ]);
    let v = r.finding("pfc-victims").expect("victims");
    assert_eq!(v.flows, vec![0]);
    assert!(
        v.detail.contains("1 stall, 25.0 µs paused while stalled"),
        "{}",
        v.detail
    );
    assert_eq!(r.flow(A, QB).rewinds, 0);
}

#[test]
fn utc_and_offsets_print_readably() {
    assert_eq!(super::fmt_utc(0), "1970-01-01T00:00:00.000000Z");
    assert_eq!(
        super::fmt_utc(1_767_225_600_000_000_836),
        "2026-01-01T00:00:00.000000Z"
    );
    assert_eq!(
        super::fmt_utc(951_782_400_123_456_789),
        "2000-02-29T00:00:00.123456Z"
    );
    assert_eq!(super::fmt_offset(700_525), "t+700.5 µs");
    assert_eq!(super::fmt_offset(124_567_891), "t+124.568 ms");
    assert_eq!(super::fmt_offset(12_345_678_901), "t+12.345679 s");
}

/// One formatter for every duration: the unit its size calls for, so a
/// 250 ms pause never prints as "249808.0 µs"; counts take their plural.
#[test]
fn durations_counts_and_rates_print_in_human_units() {
    use super::{fmt_count, fmt_duration, fmt_ended_by, fmt_gbps};
    assert_eq!(fmt_duration(850), "850 ns");
    assert_eq!(fmt_duration(100_300), "100.3 µs");
    assert_eq!(fmt_duration(249_808_000), "249.81 ms");
    assert_eq!(fmt_duration(999_960), "1.00 ms");
    assert_eq!(fmt_duration(12_500_000_000), "12.50 s");
    assert_eq!(fmt_count(1u64, "flow"), "1 flow");
    assert_eq!(fmt_count(2u64, "flow"), "2 flows");
    assert_eq!(fmt_count(1u64, "CNP"), "1 CNP");
    assert_eq!(fmt_count(0u64, "NAK"), "0 NAKs");
    assert_eq!(fmt_count(3u64, "mirror copy"), "3 mirror copies");
    assert_eq!(fmt_gbps(119.191), "119.19 Gb/s");
    assert_eq!(fmt_gbps(0.22), "220.0 Mb/s");
    assert_eq!(
        fmt_ended_by("capture_end"),
        "still paused when the capture ended"
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
    assert_eq!(r.a.pfc[0].ended_by, "capture_end");
    assert_eq!(r.a.flows[0].retrans_packets, 1);
    assert!(render_text(&r.a, r.a.summary.frames.total, Some(80)).contains("rewind"));
}

/// Summary mode: the frames the kernel counted, as one delta, leave the
/// analyzer where the frames themselves would have, so the rewind after
/// them is judged the same (depth, spurious, idle) and every count adds up.
#[test]
fn a_delta_stands_for_its_frames() {
    use rocescope_common::summary::{FlowDelta, FlowKey, delta_flags};
    let head = [req(0, 0), ack(US, 0)];
    // Counted in the kernel: in-order requests 1..=9 (5 CE-marked) and a
    // plain ACK of 5.
    let mut counted: Vec<PacketRecord> = (1..=9).map(|p| req(p as u64 * 10 * US, p)).collect();
    counted[4].ecn = 3;
    let ack5 = ack(95 * US, 5);
    let tail = [req(300 * US, 3), req(310 * US, 4), req(320 * US, 10)];

    let mut all = Analyzer::new(Config::default());
    let mut sink = VecSink::default();
    for r in head.iter().chain(&counted).chain([&ack5]).chain(&tail) {
        all.push(r, &mut sink);
    }

    let mut summarized = Analyzer::new(Config::default());
    summarized.log_pairings();
    let mut sink2 = VecSink::default();
    for r in &head {
        summarized.push(r, &mut sink2);
    }
    assert_eq!(
        summarized.take_pairings().len(),
        1,
        "paired by the first ACK"
    );
    let key = |src, dst, qp| FlowKey {
        src_ip: src,
        dst_ip: dst,
        dest_qp: qp,
    };
    let requests = FlowDelta {
        last_ts_ns: 90 * US,
        first_ts_ns: 10 * US,
        first_ce_ts_ns: 50 * US,
        max_idle_ns: 10 * US,
        packets: 9,
        bytes: 9 * 1100,
        payload_bytes: 9 * 1024,
        data_packets: 9,
        ce: 1,
        key: key(A, B, QB),
        next_psn: 10,
        mtu: 0,
        flags: delta_flags::PARTNER | delta_flags::PARTNER_ACKED,
        partner_acked_psn: 5,
        ..FlowDelta::default()
    };
    let acks = FlowDelta {
        last_ts_ns: 95 * US,
        first_ts_ns: 95 * US,
        max_idle_ns: 94 * US,
        packets: 1,
        bytes: 70,
        acks: 1,
        responses: 1,
        key: key(B, A, QA),
        acked_psn: 5,
        flags: delta_flags::ACKED,
        ..FlowDelta::default()
    };
    summarized.apply_delta(0, &acks, &mut sink2);
    summarized.apply_delta(0, &requests, &mut sink2);
    for r in &tail {
        summarized.push(r, &mut sink2);
    }

    let (a, b) = (all.finish(&mut sink), summarized.finish(&mut sink2));
    assert_eq!(b.flows, a.flows);
    assert_eq!(b.summary.totals, a.summary.totals);
    assert_eq!(b.summary.frames, a.summary.frames);
    let f = &a.flows[0];
    assert_eq!(
        (f.rewinds, f.spurious_retrans, f.retrans_packets),
        (1, 2, 2)
    );
    let rewinds = |s: &VecSink| -> Vec<Event> {
        s.events
            .iter()
            .filter(|e| e.kind == "rewind")
            .cloned()
            .collect()
    };
    assert_eq!(rewinds(&sink2), rewinds(&sink));
    // The timeline: the same sums per flow (here the counted frames span
    // one 100 µs bin, so the same rows too).
    assert_eq!(sink2.timeline, sink.timeline);
}

/// A delta spanning many bins is spread over them, shares adding up exactly.
#[test]
fn a_delta_spreads_over_the_bins_it_spans() {
    use rocescope_common::summary::{FlowDelta, FlowKey};
    let mut a = Analyzer::new(Config::default());
    let mut sink = VecSink::default();
    a.push(&req(0, 0), &mut sink);
    let d = FlowDelta {
        first_ts_ns: 10 * US,
        last_ts_ns: 1009 * US,
        packets: 1000,
        bytes: 1_100_000,
        payload_bytes: 1_024_000,
        data_packets: 1000,
        ce: 7,
        first_ce_ts_ns: 20 * US,
        key: FlowKey {
            src_ip: A,
            dst_ip: B,
            dest_qp: QB,
        },
        next_psn: 1001,
        ..FlowDelta::default()
    };
    a.apply_delta(0, &d, &mut sink);
    a.finish(&mut sink);
    let rows = &sink.timeline;
    assert_eq!(rows.len(), 11, "bins 0, 100, …, 1000 µs: {rows:?}");
    let sum = |get: fn(&TimelineRow) -> u64| rows.iter().map(get).sum::<u64>();
    assert_eq!(sum(|r| r.packets), 1001);
    assert_eq!(sum(|r| r.bytes), 1_100_000 + 1100);
    assert_eq!(sum(|r| r.ce), 7);
    // 10 µs..=1009 µs at one frame per µs: 90 in the first bin (plus the
    // record), 100 in each full one, 10 in the last.
    let packets: Vec<u64> = rows.iter().map(|r| r.packets).collect();
    assert_eq!(
        packets,
        [91, 100, 100, 100, 100, 100, 100, 100, 100, 100, 10]
    );
}
