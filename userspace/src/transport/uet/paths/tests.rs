use rocescope_common::wire::uet::pds::field as pf;
use rocescope_common::wire::uet::uet_present as present;
use rocescope_common::{Kind, PacketRecord, flags};

use super::*;

const IDLE: u64 = 1_000_000;
const DATA_DSCP: u8 = 26;
const TRIM_DSCP: u8 = 10;

fn ip(last: u8) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[10] = 0xff;
    a[11] = 0xff;
    a[15] = last;
    a
}

/// A RUD request of PDC 0x100 (1 → 2) at tap 0.
fn request(ts_ns: u64, psn: u32, entropy: u16, payload: u32, dscp: u8, retx: bool) -> PacketRecord {
    let mut r = PacketRecord {
        ts_ns,
        kind: Kind::Uet as u8,
        src_ip: ip(1),
        dst_ip: ip(2),
        dscp,
        ecn: 2,
        frame_len: 100 + payload,
        payload_len: payload,
        flags: flags::HAS_PAYLOAD_LEN,
        ..PacketRecord::default()
    };
    let u = r.uet_mut();
    u.present = present::PDS | present::PSN | present::PDC | present::DPDCID | present::ENTROPY;
    u.pds_type = PdsType::RudRequest as u8;
    u.pds_flags = if retx { pf::FLAG_RETX } else { 0 };
    u.psn = psn;
    u.spdcid = 0x100;
    u.dpdcid = 0x200;
    u.entropy = entropy;
    r
}

/// The target's answer (2 → 1) to PDC 0x100.
fn answer(ts_ns: u64, pds: PdsType) -> PacketRecord {
    let mut r = PacketRecord {
        ts_ns,
        kind: Kind::Uet as u8,
        src_ip: ip(2),
        dst_ip: ip(1),
        ..PacketRecord::default()
    };
    let u = r.uet_mut();
    u.present = present::PDS | present::PDC | present::DPDCID;
    u.pds_type = pds as u8;
    u.spdcid = 0x200;
    u.dpdcid = 0x100;
    r
}

fn key() -> PdcKey {
    PdcKey {
        iface: 0,
        src_ip: ip(1),
        dst_ip: ip(2),
        spdcid: 0x100,
    }
}

fn row(p: &Paths, entropy: u16) -> PathCounts {
    p.rows()
        .into_iter()
        .find(|r| r.entropy == Some(entropy))
        .unwrap()
        .counts
}

#[test]
fn a_short_request_with_another_dscp_is_trimmed_and_a_short_one_with_the_data_dscp_is_not() {
    let mut p = Paths::default();
    p.record(&request(0, 10, 1, 4096, DATA_DSCP, false), 0, IDLE);
    // Cut and re-marked: trimmed.
    p.record(&request(1, 11, 2, 0, TRIM_DSCP, false), 1, IDLE);
    // A message's last packet is short too, but keeps the data DSCP.
    p.record(&request(2, 12, 3, 1000, DATA_DSCP, false), 2, IDLE);
    // Re-marked but whole (a remarking policy, not a trim).
    p.record(&request(3, 13, 4, 4096, TRIM_DSCP, false), 3, IDLE);
    // The resend of the trimmed one, whole.
    p.record(&request(4, 11, 5, 4096, DATA_DSCP, true), 4, IDLE);
    assert_eq!(row(&p, 2).trimmed, 1);
    for e in [1, 3, 4, 5] {
        assert_eq!(row(&p, e).trimmed, 0, "entropy {e}");
    }
    assert_eq!(row(&p, 5).retransmissions, 1);
    assert_eq!(row(&p, 2).payload_bytes, 0);
    assert_eq!(
        p.taps()[&0],
        TapTrims {
            requests: 5,
            trimmed: 1,
            trimmed_nacks: 0
        }
    );
}

#[test]
fn a_request_overtaken_by_higher_psns_is_late_by_them_and_by_the_time_since_the_first() {
    let mut p = Paths::default();
    p.record(&request(1_000, 0, 7, 100, DATA_DSCP, false), 1_000, IDLE);
    p.record(&request(2_000, 2, 8, 100, DATA_DSCP, false), 2_000, IDLE);
    p.record(&request(3_000, 3, 8, 100, DATA_DSCP, false), 3_000, IDLE);
    // PSN 1 on entropy 9: PSN 2 overtook it 5 µs before, and PSN 3 too.
    p.record(&request(7_000, 1, 9, 100, DATA_DSCP, false), 7_000, IDLE);
    let late = row(&p, 9);
    assert_eq!(
        (late.late, late.late_max_psns, late.late_max_ns),
        (1, 2, 5_000)
    );
    assert_eq!(late.mean_late_ns(), 5_000.0);
    assert_eq!(row(&p, 8).late, 0);
    // A resend is counted as one, never as late.
    p.record(&request(8_000, 0, 8, 100, DATA_DSCP, true), 8_000, IDLE);
    assert_eq!((row(&p, 8).late, row(&p, 8).retransmissions), (0, 1));
}

#[test]
fn entropies_past_the_cap_are_summed_in_one_row() {
    let mut p = Paths::default();
    let n = ENTROPIES_KEPT as u32 + 5;
    for i in 0..n {
        p.record(
            &request(u64::from(i), i, i as u16, 64, DATA_DSCP, false),
            0,
            IDLE,
        );
    }
    let rows = p.rows();
    assert_eq!(rows.len(), ENTROPIES_KEPT + 1);
    let rest = rows.last().unwrap();
    assert_eq!((rest.entropy, rest.counts.packets), (None, 5));
    assert!(
        rows.iter()
            .all(|r| r.pdc_entropies == ENTROPIES_KEPT as u32)
    );
    let packets: u64 = rows.iter().map(|r| r.counts.packets).sum();
    assert_eq!(packets, u64::from(n));
}

#[test]
fn acks_and_trimmed_nacks_count_for_the_requests_direction() {
    let mut p = Paths::default();
    p.record(&request(0, 10, 1, 4096, DATA_DSCP, false), 0, IDLE);
    let mut ack = answer(1, PdsType::AckCc);
    {
        let u = ack.uet_mut();
        u.present |= present::ACK | present::CC;
        u.pds_flags = pf::FLAG_M;
        u.cack_psn = 10;
        u.cc_type = 0;
        // Service time 0, rcv_cwnd_pend 3 (restore_cwnd set), the rest 0.
        u.cc_state = 0x83 << 40;
    }
    p.record(&ack, 1, IDLE);
    let mut nack = answer(2, PdsType::Nack);
    {
        let u = nack.uet_mut();
        u.present |= present::NACK | present::PSN;
        u.nack_code = NackCode::Trimmed as u8;
    }
    p.record(&nack, 2, IDLE);
    // A NACK for another reason is not a trim signal.
    nack.uet_mut().nack_code = NackCode::NoPktBuffer as u8;
    p.record(&nack, 3, IDLE);
    // PSN 14 with PSN 10 acknowledged, after the trim signal: 4 in flight.
    p.record(&request(4, 14, 2, 4096, DATA_DSCP, false), 4, IDLE);
    let s = p.signals();
    assert_eq!(s.len(), 1);
    let s = &s[0];
    let a = &s.answers;
    assert_eq!(s.key, key());
    assert_eq!(
        (a.acks, a.acks_ecn, a.acks_nscc, a.acks_cwnd_pend),
        (1, 1, 1, 1)
    );
    assert_eq!((a.trimmed_nacks, s.first_trim_ns), (1, Some(2)));
    assert_eq!((s.inflight_before, s.inflight_after), (None, Some(4.0)));
    assert_eq!(p.taps()[&0].trimmed_nacks, 1);
}

#[test]
fn an_idle_direction_retires_into_its_rows() {
    let mut p = Paths::default();
    p.record(&request(10, 1, 1, 64, DATA_DSCP, false), 10, IDLE);
    p.record(&request(IDLE, 2, 1, 64, DATA_DSCP, false), IDLE, IDLE);
    // Swept once per `--flow-idle`: 20 ns idle is not idle.
    p.record(
        &request(IDLE + 20, 3, 1, 64, DATA_DSCP, false),
        IDLE + 20,
        IDLE,
    );
    assert_eq!(p.live(), 1);
    let mut other = request(3 * IDLE, 1, 1, 64, DATA_DSCP, false);
    other.uet_mut().spdcid = 0x101;
    p.record(&other, 3 * IDLE, IDLE);
    assert_eq!(p.live(), 1, "0x100 retired, 0x101 live");
    let rows = p.rows();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].key, Some(key()));
    assert_eq!(rows[0].counts.packets, 3);
    assert_eq!(p.signals().len(), 2);
}

#[test]
fn trimmed_requests_before_any_whole_one_are_judged_again_when_it_comes() {
    let mut p = Paths::default();
    // The PDC's first two requests at this tap were both trimmed upstream.
    p.record(&request(0, 10, 1, 0, TRIM_DSCP, false), 0, IDLE);
    p.record(&request(1, 11, 2, 0, TRIM_DSCP, false), 1, IDLE);
    assert_eq!(p.taps()[&0].trimmed, 0, "nothing to tell them by yet");
    p.record(&request(2, 12, 3, 4096, DATA_DSCP, false), 2, IDLE);
    assert_eq!((row(&p, 1).trimmed, row(&p, 2).trimmed), (1, 1));
    assert_eq!(row(&p, 3).trimmed, 0);
    assert_eq!(p.taps()[&0].trimmed, 2);
    assert_eq!(p.signals()[0].first_trim_ns, Some(0));
    // Judged once: a later larger request changes nothing more.
    p.record(&request(3, 13, 4, 8192, DATA_DSCP, false), 3, IDLE);
    assert_eq!(p.taps()[&0].trimmed, 2);
}
