//! Every transport service keeps its own flows and is sequence-checked only
//! as far as it has a sequence (docs/analysis.md, "Flows" and "Sequence
//! analysis"): UD none, UC PSNs without ACKs, RD/DC and XRC like RC.
use super::*;

const C: [u8; 16] = v4(10, 0, 0, 3);

/// A UC SEND Only (0x24) from A to `dst`, QP `qp`.
fn uc(ts: u64, dst: [u8; 16], qp: u32, psn: u32) -> PacketRecord {
    let mut r = roce(ts, A, dst, qp, 0x24, psn);
    r.payload_len = 64;
    r
}

#[test]
fn uc_has_gaps_but_never_retransmits_nor_goes_unanswered() {
    let r = run(&[
        uc(0, B, QB, 10),
        uc(US, B, QB, 11),
        uc(2 * US, B, QB, 13),
        // 11 again, past the mirror-copy window (UC never resends): no
        // retransmission, no rewind.
        uc(30 * US, B, QB, 11),
        uc(31 * US, B, QB, 14),
    ]);
    let f = r.flow(A, QB);
    assert_eq!(f.service, Some("UC"));
    assert_eq!((f.packets, f.data_packets), (5, 5));
    assert_eq!(
        (f.retrans_packets, f.rewinds, f.spurious_retrans, f.gaps),
        (0, 0, 0, 1)
    );
    // 12 never came and nothing answers UC: unresolved.
    assert_eq!(
        (f.gap_late, f.gap_unresolved, f.gap_capture_lost),
        (0, 1, 0)
    );
    assert_eq!(r.retrans(), vec![Some(false); 5]);
    assert!(r.events("rewind").is_empty());

    // The same flow's 12 arriving late is reordering.
    let r = run(&[
        uc(0, B, QB, 10),
        uc(US, B, QB, 11),
        uc(2 * US, B, QB, 13),
        uc(3 * US, B, QB, 12),
        uc(4 * US, B, QB, 14),
    ]);
    let f = r.flow(A, QB);
    assert_eq!(
        (f.gaps, f.gap_late, f.gap_unresolved, f.retrans_packets),
        (1, 1, 0, 0)
    );
}

#[test]
fn only_acknowledged_services_can_go_unanswered() {
    // A → B: RC with its ACKs (the tap records answers). A → C for 2 ms,
    // nothing back: unanswered as RC, not as UC.
    let mut recs = vec![req(0, 1), ack(US, 1)];
    let to_c = |opcode: u8| -> Vec<PacketRecord> {
        (0..3)
            .map(|i| roce(i * 1000 * US, A, C, 0x700, opcode, 50 + i as u32))
            .collect()
    };
    recs.extend(to_c(0x24));
    let r = run(&recs);
    assert_eq!(r.flow(A, 0x700).service, Some("UC"));
    assert!(r.finding("unanswered-flows").is_none());

    let mut recs = vec![req(0, 1), ack(US, 1)];
    recs.extend(to_c(op::SEND_ONLY));
    let r = run(&recs);
    let f = r
        .finding("unanswered-flows")
        .expect("RC to C is unanswered");
    assert_eq!(f.flows, vec![r.flow(A, 0x700).flow_id]);
}

#[test]
fn ud_sends_have_no_sequence() {
    let ud = |ts, psn| {
        let mut r = roce(ts, A, B, 0x42, 0x64, psn);
        r.flags |= flags::HAS_DETH;
        r
    };
    let r = run(&[ud(0, 5), ud(US, 3), ud(2 * US, 9), ud(3 * US, 9)]);
    let f = r.flow(A, 0x42);
    assert_eq!(f.service, Some("UD"));
    assert_eq!(
        (f.data_packets, f.retrans_packets, f.rewinds, f.gaps),
        (4, 0, 0, 0)
    );
    assert_eq!(r.retrans(), vec![None; 4]);
}

#[test]
fn dc_and_xrc_are_sequenced_and_paired_like_rc() {
    // DC: WRITE Only (0x4A) to DCT 0x300, the ACK (0x51) to the DCI 0x301.
    // XRC: WRITE Only (0xAA) to SRQ QP 0x500, the ACK (0xB1) to 0x501.
    for (service, write, ack_op, tgt, ini) in [
        ("RD", 0x4A, 0x51, 0x300, 0x301),
        ("XRC", 0xAA, 0xB1, 0x500, 0x501),
    ] {
        let w = |ts, psn| {
            let mut r = roce(ts, A, B, tgt, write, psn);
            r.flags |= flags::HAS_RETH;
            r.roce_mut().reth_len = 64;
            r.payload_len = 64;
            r
        };
        let a = |ts, psn| {
            let mut r = roce(ts, B, A, ini, ack_op, psn);
            r.flags |= flags::HAS_AETH;
            r.roce_mut().aeth_syndrome = 0x1F;
            r
        };
        // 101 resent after its ACK (past the mirror-copy window): spurious.
        let r = run(&[
            w(0, 100),
            w(US, 101),
            a(2 * US, 101),
            w(30 * US, 101),
            w(31 * US, 103),
        ]);
        let f = r.flow(A, tgt);
        assert_eq!(f.service, Some(service));
        assert_eq!(f.paired_qp, Some(ini), "{service}");
        assert_eq!(
            (
                f.data_packets,
                f.retrans_packets,
                f.spurious_retrans,
                f.gaps
            ),
            (4, 1, 1, 1),
            "{service}"
        );
        let s = r.flow(B, ini);
        assert_eq!(
            (s.service, s.acks, s.paired_qp),
            (Some(service), 1, Some(tgt))
        );
    }
}

/// InfiniBand has no IP header: FECN is its CE mark, and a BECN on the
/// packets coming back answers it as a CNP would (docs/analysis.md, "CNPs").
#[test]
fn infiniband_fecn_is_ce_and_becn_back_answers_it() {
    let ib = |mut r: PacketRecord| {
        r.flags &= !(flags::HAS_IPV4 | flags::HAS_UDP);
        r.flags |= flags::IB_LRH;
        r
    };
    let marked = |ts, psn| {
        let mut r = ib(req(ts, psn));
        r.flags |= flags::FECN;
        r
    };
    let back = |ts, psn, becn: bool| {
        let mut r = ib(ack(ts, psn));
        if becn {
            r.flags |= flags::BECN;
        }
        r
    };
    for becn in [false, true] {
        let r = run(&[marked(0, 1), marked(US, 2), back(2 * US, 2, becn)]);
        let f = r.flow(A, QB);
        assert_eq!((f.ce, f.link, f.dscp), (2, "ib", None));
        assert_eq!(r.flow(B, QA).becn, u64::from(becn));
        assert_eq!(
            r.finding("ce-without-cnp").is_some(),
            !becn,
            "BECN back: {becn}"
        );
    }
}
