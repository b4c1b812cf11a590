//! The PDC tracker on hand-made records: pairing by PDC ids, spurious
//! resends, NACKs by code on the NACK's sender, SACKed PSNs, retirement.

use crate::transport::FlowIds;
use rocescope_common::PacketRecord;
use rocescope_common::wire::uet::pds::field as pf;
use rocescope_common::wire::uet::{UetView, uet_present as present};

use super::*;
use crate::transport::uet::Pdcs;

const A: [u8; 16] = [1; 16];
const B: [u8; 16] = [2; 16];

fn rec(ts: u64, src: [u8; 16], dst: [u8; 16], u: UetView) -> PacketRecord {
    let mut r = PacketRecord {
        ts_ns: ts,
        src_ip: src,
        dst_ip: dst,
        frame_len: 100,
        ..PacketRecord::default()
    };
    *r.uet_mut() = u;
    r
}

/// A RUD request from A (PDC 1) to B (PDC 2).
fn request(ts: u64, psn: u32, retx: bool) -> PacketRecord {
    let flags = if retx { pf::FLAG_RETX } else { 0 };
    let u = UetView {
        pds_type: PdsType::RudRequest as u8,
        pds_flags: flags,
        psn,
        spdcid: 1,
        dpdcid: 2,
        present: present::PDS | present::PSN | present::PDC | present::DPDCID,
        ..UetView::default()
    };
    rec(ts, A, B, u)
}

/// An ACK_CC from B (PDC 2) to A (PDC 1).
fn ack(ts: u64, cack: u32, base: u32, bitmap: u64, ecn: bool) -> PacketRecord {
    let u = UetView {
        pds_type: PdsType::AckCc as u8,
        pds_flags: if ecn { pf::FLAG_M } else { 0 },
        cack_psn: cack,
        sack_base: base,
        sack_bitmap: bitmap,
        spdcid: 2,
        dpdcid: 1,
        present: present::PDS | present::PDC | present::DPDCID | present::ACK | present::SACK,
        ..UetView::default()
    };
    rec(ts, B, A, u)
}

/// A NACK from B naming `psn` with `code`.
fn nack(ts: u64, psn: u32, code: Code) -> PacketRecord {
    let u = UetView {
        pds_type: PdsType::Nack as u8,
        nack_code: code as u8,
        psn,
        spdcid: 2,
        dpdcid: 1,
        present: present::PDS | present::PSN | present::PDC | present::DPDCID | present::NACK,
        ..UetView::default()
    };
    rec(ts, B, A, u)
}

/// A PDC whose sender resent a SACKed PSN, and whose receiver ran out of
/// packet buffers once and saw one packet trimmed: both directions, by id.
pub(crate) fn sample() -> Vec<Pdc> {
    let mut t = Pdcs::default();
    let mut id = FlowIds::default();
    for r in [
        request(0, 0, false),
        request(10, 2, false), // 1 missing
        request(20, 3, false),
        ack(30, 0, 2, 0b11, true), // 0; 2 and 3 by SACK
        nack(35, 1, Code::NoPktBuffer),
        request(40, 1, true),  // the NACKed PSN resent: lost upstream
        request(50, 3, true),  // SACKed before: spurious
        request(60, 4, false), // trimmed on its way
        nack(65, 4, Code::Trimmed),
        request(70, 4, true),
        ack(80, 4, 5, 0, false),
    ] {
        t.record(&r, &mut id);
    }
    t.finish(100)
}

#[test]
fn a_pdc_pairs_its_directions_and_counts_what_its_data_became() {
    let pdcs = sample();
    let [a, b] = &pdcs[..] else {
        panic!("{pdcs:?}")
    };
    assert_eq!((a.id, a.key.spdcid, a.peer), (0, 1, Some(2)));
    assert_eq!((b.id, b.key.spdcid, b.peer), (1, 2, Some(1)));
    // A's data: 7 requests, 3 resent, 1 of them spurious; 1 went missing
    // and was resent after a NACK (NO_PKT_BUFFER: lost before the tap, not
    // NAK-lost: the receiver was not ready); 5 PSNs delivered, 2 first by SACK; 2
    // NACKed (one for want of buffers, one trimmed), the trimmed one no loss.
    assert_eq!((a.requests, a.retransmissions, a.spurious), (7, 3, 1));
    assert_eq!((a.gaps, a.gap), (1, [0, 1, 0, 0, 0]));
    assert_eq!(
        (a.covered.delivered, a.covered.sacked_psns, a.nacked),
        (5, 2, 2)
    );
    // The spurious resend of 3 was the timer's (no NACK named it).
    assert_eq!(a.timeout_resends, 1);
    assert_eq!((a.resend_wait.n, a.resend_wait.min), (1, 30));
    // B's packets: 2 ACKs (1 ECN-marked), 2 NACKs by code.
    assert_eq!((b.acks, b.acks_ecn, b.nacks), (2, 1, 2));
    assert_eq!((b.nacks_by.no_pkt_buffer, b.nacks_by.trimmed), (1, 1));
    assert_eq!(b.nacks_by.resources(), 1);
    assert_eq!((a.acks, b.requests), (0, 0));
}

#[test]
fn idle_directions_retire_by_the_rule_given_once_per_idle_time() {
    let mut t = Pdcs::default();
    let mut id = FlowIds::default();
    t.record(&request(0, 0, false), &mut id);
    t.record(&ack(5, 0, 1, 0, false), &mut id);
    // Nothing is idle yet at 50 with a 100 ns idle time.
    assert!(t.retire_idle(50, 100, |last| last + 100 < 50).is_empty());
    // Looked at once per idle time: not again before 150.
    assert!(t.retire_idle(120, 100, |last| last + 100 < 120).is_empty());
    let gone = t.retire_idle(200, 100, |last| last + 100 < 200);
    assert_eq!(gone.iter().map(|p| p.id).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(t.live().count(), 0);
    assert!(t.finish(300).is_empty());
}
