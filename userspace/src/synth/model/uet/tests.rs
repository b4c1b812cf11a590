//! The UET model's frames decoded back through the decoder's own UET views
//! (`wire::uet::over_udp`) field by field, the truth's counts recounted
//! from those decoded bytes, and the model's invariants checked on its
//! event log.
use super::frame::{MPR, Pdu, UET_PORT, UetSpec};
use super::pdc::{Reason, initiator_pdcid};
use super::truth::{UetTruth, ack_covers, nack_name};
use super::{UetLog, simulate};
use crate::synth::model::bridge::{CaptureOptions, append_frame};
use crate::synth::model::fabric::Run;
use crate::synth::model::spec::FrameSpec;
use rocescope_common::wire::uet::{CcState, NextHeader, Opcode, PdsType, ResponseOpcode, over_udp};
use std::collections::{BTreeMap, BTreeSet};

fn run(name: &str) -> (Run, UetTruth) {
    let mut cfg = crate::synth::model::preset(name).unwrap();
    cfg.seed = 1;
    let run = simulate(&cfg).unwrap();
    let log = super::log_of(&run).unwrap();
    let truth = UetTruth::of_capture(&run, log, &CaptureOptions::default());
    (run, truth)
}

fn log(run: &Run) -> &UetLog {
    super::log_of(run).unwrap()
}

/// One decoded frame: the spec it must equal, checked field by field.
fn check_decodes(u: &UetSpec, bytes: &[u8], trim_dscp: u8) {
    assert_eq!(&bytes[12..14], &[0x08, 0x00], "IPv4");
    assert_eq!(bytes[14 + 9], 17, "UDP");
    let (dscp, ecn) = (bytes[15] >> 2, bytes[15] & 3);
    assert_eq!((dscp, ecn), (u.dscp, u.ecn));
    let udp = &bytes[34..42];
    assert_eq!(u16::from_be_bytes([udp[0], udp[1]]), u.entropy);
    assert_eq!(u16::from_be_bytes([udp[2], udp[3]]), UET_PORT);
    let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    let found = over_udp(&bytes[42..34 + udp_len]).unwrap();
    let p = found.pds.unwrap();
    assert_eq!(found.payload_len, u.payload_len as usize);
    match &u.pdu {
        Pdu::Request(r) => {
            assert_eq!(p.pds_type(), PdsType::RudRequest);
            assert_eq!(p.psn(), Some(r.psn));
            assert_eq!(
                (p.retx(), p.ar(), p.syn()),
                (r.retx, r.ar, r.dpdcid.is_none())
            );
            assert_eq!(p.clear_psn_offset(), Some(r.clear_psn_offset));
            assert_eq!(p.spdcid(), Some(r.spdcid));
            assert_eq!(p.dpdcid(), r.dpdcid);
            if r.dpdcid.is_none() {
                assert_eq!(p.psn_offset(), Some(r.psn_offset));
            }
            let s = found.ses.unwrap();
            assert_eq!(s.kind(), NextHeader::RequestStandard);
            assert_eq!(s.opcode(), Some(Opcode::Write));
            assert_eq!((s.som(), s.eom()), (r.som, r.eom));
            assert_eq!(s.message_id(), Some(r.message_id));
            assert_eq!(s.job_id(), Some(r.job_id));
            assert_eq!(s.memory_key(), Some(r.memory_key));
            assert_eq!(s.request_length(), Some(r.message_len));
            if !r.som {
                assert_eq!(s.payload_length(), Some(r.len as u16));
                assert_eq!(s.message_offset(), Some(r.message_offset));
            }
            if u.trimmed {
                assert_eq!((found.payload_len, dscp), (0, trim_dscp));
            } else {
                assert_eq!(found.payload_len, r.len as usize);
            }
        }
        Pdu::Ack(a) => {
            assert_eq!(p.pds_type(), PdsType::AckCc);
            assert_eq!(p.cack_psn(), Some(a.cack_psn));
            assert_eq!(p.ack_psn_offset(), Some(a.ack_psn_offset));
            assert_eq!((p.spdcid(), p.dpdcid()), (Some(a.spdcid), Some(a.dpdcid)));
            assert_eq!(p.m(), a.ecn_marked);
            assert_eq!((p.cc_type(), p.mpr()), (Some(0), Some(MPR)));
            assert_eq!(p.sack_psn_offset(), Some(a.sack_psn_offset));
            assert_eq!(p.sack_bitmap(), Some(a.sack_bitmap));
            assert_eq!(
                p.cc_state(),
                Some(CcState::Nscc {
                    service_time: a.service_time,
                    restore_cwnd: false,
                    rcv_cwnd_pend: 0,
                    rcvd_bytes: a.rcvd_bytes,
                    ooo_count: a.ooo_count,
                })
            );
            let s = found.ses.unwrap();
            assert_eq!(s.response_opcode(), Some(ResponseOpcode::DefaultResponse));
            assert_eq!(s.return_code(), Some(0));
            assert_eq!(s.message_id(), Some(a.message_id));
            assert_eq!(s.modified_length(), Some(a.modified_length));
        }
        Pdu::Nack(n) => {
            assert_eq!(p.pds_type(), PdsType::Nack);
            assert_eq!(p.nack_code_raw(), Some(n.code));
            assert_eq!(p.psn(), Some(n.psn));
            assert_eq!((p.spdcid(), p.dpdcid()), (Some(n.spdcid), Some(n.dpdcid)));
            assert_eq!(p.nack_max_recv_psn_plus_1(), Some(n.max_recv_psn_plus_1));
            assert!(found.ses.is_none());
        }
    }
}

/// What one tap's decoded records of one PDC count.
#[derive(Debug, Default, PartialEq)]
struct Counted {
    requests: u64,
    payload_bytes: u64,
    retransmissions: u64,
    trimmed: u64,
    acks: u64,
    nacks: BTreeMap<String, u64>,
    delivered: u64,
    sacked: u64,
    /// entropy -> (packets, payload bytes)
    entropies: BTreeMap<u16, (u64, u64)>,
}

#[test]
fn frames_decode_through_the_uet_views_and_recount_to_the_truth() {
    for name in super::SCENARIOS {
        let (run, truth) = run(name);
        let cfg = crate::synth::model::preset(name).unwrap();
        let trim_dscp = super::UetCfg::of(&cfg).unwrap().unwrap().trim_dscp;
        let starts: Vec<u32> = log(&run).pdcs.iter().map(|p| p.start_psn).collect();
        let mut counted: BTreeMap<(usize, usize), Counted> = BTreeMap::new();
        let mut covered: BTreeMap<(usize, usize), BTreeSet<i64>> = BTreeMap::new();
        let mut buf = Vec::new();
        for f in &run.frames {
            let Some(u) = super::frame::of(&f.frame) else {
                panic!("{name}: a UET run writes UET frames only");
            };
            buf.clear();
            append_frame(&f.frame, &mut buf);
            assert_eq!(buf.len() + 4, u.frame_len() as usize);
            check_decodes(u, &buf, trim_dscp);
            // Recount from the decoded bytes alone.
            let udp_len = usize::from(u16::from_be_bytes([buf[38], buf[39]]));
            let found = over_udp(&buf[42..34 + udp_len]).unwrap();
            let p = found.pds.unwrap();
            let initiator = match p.pds_type() {
                PdsType::RudRequest => p.spdcid().unwrap(),
                _ => p.dpdcid().unwrap(),
            };
            let pdc = usize::from(initiator - initiator_pdcid(0));
            let c = counted.entry((f.tap, pdc)).or_default();
            let cov = covered.entry((f.tap, pdc)).or_default();
            match p.pds_type() {
                PdsType::RudRequest => {
                    c.requests += 1;
                    c.payload_bytes += found.payload_len as u64;
                    c.retransmissions += u64::from(p.retx());
                    let short = found.payload_len == 0 && buf[15] >> 2 == trim_dscp;
                    c.trimmed += u64::from(short);
                    let e = c.entropies.entry(u16::from_be_bytes([buf[34], buf[35]]));
                    let e = e.or_default();
                    e.0 += 1;
                    e.1 += found.payload_len as u64;
                }
                PdsType::AckCc => {
                    c.acks += 1;
                    let covers = ack_covers(
                        starts[pdc],
                        0,
                        p.cack_psn().unwrap(),
                        p.sack_psn_offset().unwrap(),
                        p.sack_bitmap().unwrap(),
                    );
                    for (idx, by_sack) in covers {
                        if cov.insert(idx) {
                            c.delivered += 1;
                            c.sacked += u64::from(by_sack);
                        }
                    }
                }
                PdsType::Nack => {
                    *c.nacks
                        .entry(nack_name(p.nack_code_raw().unwrap()))
                        .or_default() += 1
                }
                other => panic!("{name}: {other:?}"),
            }
        }
        assert_eq!(counted.len(), truth.pdcs.len(), "{name}: PDCs per tap");
        for t in &truth.pdcs {
            let want = Counted {
                requests: t.requests,
                payload_bytes: t.payload_bytes,
                retransmissions: t.retransmissions,
                trimmed: t.trimmed,
                acks: t.acks,
                nacks: t.nacks_by_code.clone(),
                delivered: t.delivered,
                sacked: t.sacked,
                entropies: t
                    .entropies
                    .iter()
                    .map(|e| (e.entropy, (e.packets, e.payload_bytes)))
                    .collect(),
            };
            assert_eq!(
                counted[&(t.tap, t.pdc)],
                want,
                "{name} {} pdc {}",
                t.iface,
                t.pdc
            );
        }
    }
}

/// Every NACKed packet is sent again (or the target got another copy
/// first); a resend is spurious exactly when the target held the packet
/// before it left; a request record is trimmed exactly when a switch cut
/// that send before the record; every PDC completes.
#[test]
fn the_models_event_log_keeps_its_invariants() {
    for name in super::SCENARIOS {
        let (run, truth) = run(name);
        let log = log(&run);
        let delivered: BTreeMap<(usize, u64), u64> = log
            .delivers
            .iter()
            .map(|d| ((d.pdc, d.idx), d.ts_ns))
            .collect();
        assert_eq!(
            delivered.len(),
            log.delivers.len(),
            "{name}: delivered once"
        );
        for n in &log.nacks {
            let resent = log.sends.iter().any(|s| {
                (s.pdc, s.idx) == (n.pdc, n.idx) && s.ts_ns >= n.ts_ns && s.reason.is_some()
            });
            let got = delivered.contains_key(&(n.pdc, n.idx));
            assert!(resent || got, "{name}: NACK {n:?} never answered");
            assert!(resent, "{name}: NACKed {n:?} not resent");
        }
        for s in &log.sends {
            let before = delivered
                .get(&(s.pdc, s.idx))
                .is_some_and(|&t| t <= s.ts_ns);
            assert_eq!(s.spurious, s.reason.is_some() && before, "{name}: {s:?}");
        }
        let trimmed_at: BTreeMap<usize, usize> = log
            .trims
            .iter()
            .filter_map(|t| Some((t.send?, t.frames_before)))
            .collect();
        assert_eq!(
            trimmed_at.len(),
            log.trims.len(),
            "{name}: a send is trimmed once"
        );
        for (i, f) in run.frames.iter().enumerate() {
            let Some(u) = super::frame::of(&f.frame) else {
                continue;
            };
            let Some(send) = log.frame_sends[i] else {
                assert!(u.request().is_none());
                continue;
            };
            let cut = trimmed_at.get(&send).is_some_and(|&before| before <= i);
            assert_eq!(u.trimmed, cut, "{name}: record {i}");
            assert_eq!(log.sends[send].entropy, u.entropy);
            assert_eq!(u.request().unwrap().retx, log.sends[send].reason.is_some());
        }
        for c in &truth.connections {
            assert_eq!(c.delivered_packets, c.packets, "{name}: pdc {} done", c.pdc);
            assert_eq!(c.first_transmissions, c.packets);
            assert_eq!(c.resends, c.resends_nack + c.resends_timeout);
            assert!(c.done_ns.is_some());
        }
        let total = |f: fn(&super::pdc::PdcSummary) -> u64| -> u64 {
            truth.connections.iter().map(f).sum()
        };
        match *name {
            "uet-incast" => {
                assert!(truth.fabric.trimmed > 0);
                assert!(total(|c| c.resends_nack) > 0, "NACKed resends");
                assert!(total(|c| c.resends_timeout) > 0, "timer resends");
                assert!(total(|c| c.spurious_resends) > 0, "spurious resends");
                assert!(total(|c| c.cwnd_decreases) > 0, "NSCC reacts");
                assert!(log.nacks.iter().all(|n| nack_name(n.code) == "TRIMMED"));
            }
            "uet-spray" => {
                assert_eq!(truth.fabric.trimmed, 0);
                assert!(truth.fabric.link_drops > 0 && truth.fabric.delayed > 0);
                let timer = log
                    .sends
                    .iter()
                    .filter(|s| s.reason == Some(Reason::Timeout))
                    .count();
                assert!(timer > 0, "losses recovered by the timer");
                // Every PDC sprays over all its entropy values.
                for p in &truth.pdcs {
                    assert_eq!(p.entropies.len(), 8, "{} pdc {}", p.iface, p.pdc);
                }
            }
            _ => unreachable!(),
        }
    }
}

/// A tap's drops and copies (`taps.N.drop`, `duplicate`, `dup_gap_ns`)
/// change only what it records: the initiators send the same packets at
/// the same times; at each tap, every frame of the unimpaired run is
/// recorded once or dropped (`Run::tap_drops`), and each copy
/// (`FrameMeta::copy`) repeats the record before it (`dup_gap_ns` later);
/// the truth counts the drops and copies per tap and per PDC.
#[test]
fn mirror_drops_and_copies_change_only_the_records() {
    for name in super::SCENARIOS {
        let mut cfg = crate::synth::model::preset(name).unwrap();
        cfg.seed = 1;
        let clean = simulate(&cfg).unwrap();
        for (t, tap) in cfg.taps.iter_mut().enumerate() {
            tap.drop = 0.05;
            tap.duplicate = 0.1;
            tap.dup_gap_ns = 100 * t as u64;
        }
        let run = simulate(&cfg).unwrap();
        let sent = |r: &Run| -> Vec<(usize, u64, u64)> {
            let sends = log(r).sends.iter();
            sends.map(|s| (s.pdc, s.idx, s.ts_ns)).collect()
        };
        assert_eq!(sent(&run), sent(&clean), "{name}: the same sends");
        assert!(run.frames.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns));
        assert_eq!(log(&run).frame_sends.len(), run.frames.len());
        let truth = UetTruth::of_capture(&run, log(&run), &CaptureOptions::default());
        for (t, tt) in truth.taps.iter().enumerate() {
            let records = |r: &Run, copies: bool| -> Vec<(u64, FrameSpec)> {
                let at = r
                    .frames
                    .iter()
                    .zip(&r.meta)
                    .filter(|(f, m)| f.tap == t && m.copy == copies);
                at.map(|(f, _)| (f.ts_ns, f.frame.clone())).collect()
            };
            let mut kept = records(&run, false);
            let drops = run.tap_drops.iter().filter(|d| d.tap == t).count();
            let whole = records(&clean, false);
            assert_eq!(kept.len() + drops, whole.len(), "{name} tap {t}");
            // What it kept is the unimpaired run's records, in order.
            let mut rest = whole.iter();
            kept.retain(|k| rest.any(|w| w == k));
            assert_eq!(kept.len() + drops, whole.len(), "{name} tap {t}: in order");
            let copies = records(&run, true);
            for (ts, frame) in &copies {
                let original = run.frames.iter().filter(|f| f.tap == t);
                let gap = 100 * t as u64;
                assert!(
                    original
                        .into_iter()
                        .any(|f| f.ts_ns + gap == *ts && f.frame == *frame)
                );
            }
            assert!(drops > 0 && !copies.is_empty(), "{name} tap {t}");
            assert_eq!(
                (tt.tap_dropped, tt.tap_duplicates),
                (drops as u64, copies.len() as u64)
            );
            let at = truth.pdcs.iter().filter(|p| p.tap == t);
            let (dropped, copied) = at.fold((0, 0), |(d, c), p| {
                (d + p.tap_dropped, c + p.tap_duplicates)
            });
            assert_eq!(
                (dropped, copied),
                (drops as u64, copies.len() as u64),
                "{name} tap {t}: per PDC"
            );
        }
        let lost: u64 = truth.pdcs.iter().map(|p| p.capture_lost).sum();
        assert!(lost > 0, "{name}: PSNs the capture missed");
    }
}
