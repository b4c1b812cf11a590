//! UET packets built by an implementation nobody here wrote: xdp2's
//! packet generators (`src/tools/packets/uet/make_uet_pds.py` and
//! `make_uet_ses.py`, BSD-2, run unmodified; provenance in
//! tests/data/README.md) wrote `tests/data/xdp2-uet_pds.pcap` and
//! `xdp2-uet_ses.pcap`. Each frame decodes through the shared walk and the
//! header views field by field to the values the generator scripts pass
//! (read from their source, not from our layouts); where xdp2 and
//! Wireshark master differ (docs/inputs.md, "UET headers, and where the
//! sources differ"), the test says what the decoder makes of xdp2's bytes.
use rocescope::decode;
use rocescope::wire::uet::{self, CcState, Found, NextHeader, PdsType};
use rocescope::wire::{Layer, Stop};
use rocescope::{Kind, PacketRecord, proto};

/// Ethernet, IPv4 (no options) and UDP before the PDS header.
const UDP_PAYLOAD_AT: usize = 14 + 20 + 8;

/// The frames of a classic pcap (scapy writes little-endian, Ethernet).
fn frames(name: &str) -> Vec<Vec<u8>> {
    let bytes = std::fs::read(rocescope::testdata::shared_capture(name)).unwrap();
    assert_eq!(
        bytes[..4],
        [0xd4, 0xc3, 0xb2, 0xa1],
        "{name}: LE classic pcap"
    );
    assert_eq!(u32::from_le_bytes(bytes[20..24].try_into().unwrap()), 1);
    let mut out = Vec::new();
    let mut at = 24;
    while at + 16 <= bytes.len() {
        let incl = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        out.push(bytes[at + 16..at + 16 + incl].to_vec());
        at += 16 + incl;
    }
    assert_eq!(at, bytes.len(), "{name}: whole records");
    out
}

fn record(frame: &[u8]) -> (PacketRecord, Option<Stop>) {
    let mut rec = PacketRecord::default();
    let eth = proto::linktype::ETHERNET;
    let w = decode::decode_walk(&mut rec, eth, frame, frame.len() as u32);
    (rec, w.stop)
}

/// The frame's UET headers as views, after checking the walk took it whole.
fn found(frame: &[u8], entropy: u16) -> Found<'_> {
    let (rec, stop) = record(frame);
    assert_eq!((rec.kind(), stop), (Kind::Uet, None));
    assert_eq!(rec.udp_sport, entropy);
    assert_eq!(rec.uet().entropy, entropy, "the UDP source port");
    uet::over_udp(&frame[UDP_PAYLOAD_AT..]).expect("whole UET headers")
}

// The values the generator scripts pass (make_uet_pds.py, make_uet_ses.py).
const PSN: u32 = 0x9876_5432;
const CLEAR_PSN_OFFSET: i16 = 0x1234;
const SPDCID: u16 = 0x3456;
const REQ_DPDCID: u16 = 0x9abc;
const ACK_DPDCID: u16 = 0x789a;
const PSN_OFFSET: u16 = 0x876;
const CCC_ID: u8 = 0x77;
const CREDIT_TARGET: u32 = 0x88_7766;
const CACK_PSN: u32 = 0x2468_ace0;
const PKT_ID: u32 = 0x9988_7766;
/// Request flags RETX (retrans = 1, ackreq = 0), SYN.
const RETX: u8 = 0x10;
const SYN: u8 = 0x04;
/// ACK/NACK flags: ecn_marked (M), retrans, NACK type RUDI (NT), the
/// ACK's 2-bit request (1: clear).
const M: u8 = 0x20;
const NT: u8 = 0x08;
const REQ_CLEAR: u8 = 1 << 1;
/// SES request flags: delivery_complete, relative_addressing,
/// end_of_msg, start_of_msg (version 0, initiator_error 0, hd 0).
const DC_REL_EOM: u8 = 0x20 | 0x08 | 0x02;
const SOM: u8 = 0x01;
/// The atomic extension header's datatype the SES script writes.
const FLOAT_COMPLEX: u8 = 0x0c;

/// The standard SES request with SOM both scripts write (a READ unless
/// `opcode` says otherwise).
fn check_standard_som(ses: &uet::Ses<'_>, opcode: u8) {
    assert_eq!(ses.kind(), NextHeader::RequestStandard);
    assert_eq!(ses.opcode_raw(), opcode);
    assert_eq!(ses.flags_byte(), DC_REL_EOM | SOM);
    assert!(ses.som() && ses.eom() && ses.dc() && ses.rel() && !ses.ie() && !ses.hd());
    check_common(ses, 0x77);
    assert_eq!(ses.buffer_offset(), Some(0xfedc_ba98_7654_3210));
    assert_eq!(ses.initiator(), Some(0xfedc_ba98));
    assert_eq!(ses.memory_key(), Some(0x1122_3344_5566_7788));
    assert_eq!(ses.header_data(), Some(0xaabb_dddd_eeff_0011));
    assert_eq!(ses.request_length(), Some(0x9988_7766));
    assert_eq!((ses.payload_length(), ses.message_offset()), (None, None));
}

/// Message id (standard requests only: see [`small_or_medium`]), index
/// generation, job id, PIDonFEP, resource index.
fn check_common(ses: &uet::Ses<'_>, generation: u8) {
    if ses.kind() == NextHeader::RequestStandard {
        assert_eq!(ses.message_id(), Some(0x1234));
    }
    assert_eq!(ses.index_generation(), Some(generation));
    assert_eq!(ses.job_id(), Some(0xab_cdef));
    assert_eq!(ses.pid_on_fep(), Some(0x678));
    assert_eq!(ses.resource_index(), Some(0x9ab));
}

/// The SES response the PDS script puts after ACKs, NACKs and RUDI
/// responses (`MakeHdrResponse`: list 3, RESPONSE, AT_PERM).
fn check_response(ses: &uet::Ses<'_>, opcode: u8) {
    assert_eq!(ses.kind(), NextHeader::Response);
    assert_eq!(ses.opcode_raw(), opcode);
    assert_eq!(ses.response_opcode().map(|o| o as u8), Some(opcode));
    assert_eq!(ses.return_code(), Some(0x09), "AT_PERM");
    assert_eq!(ses.message_id(), Some(0x1234));
    assert_eq!(ses.index_generation(), Some(0x99));
    assert_eq!(ses.job_id(), Some(0x65_4321));
    assert_eq!(ses.modified_length(), Some(0x09ab_cdef));
}

fn check_request(f: &Found<'_>, t: PdsType, syn: bool) {
    let p = f.pds.unwrap();
    assert_eq!(p.pds_type(), t);
    assert_eq!(p.next_header_raw(), NextHeader::RequestStandard as u8);
    assert_eq!(p.flags(), RETX | if syn { SYN } else { 0 });
    assert!(p.retx() && !p.ar() && p.syn() == syn);
    assert_eq!(p.clear_psn_offset(), Some(CLEAR_PSN_OFFSET));
    assert_eq!(p.psn(), Some(PSN));
    assert_eq!(p.spdcid(), Some(SPDCID));
    if syn {
        assert_eq!(p.dpdcid(), None, "a SYN has no DPDCID yet");
        assert_eq!(
            (p.use_rsv_pdc(), p.psn_offset()),
            (Some(true), Some(PSN_OFFSET))
        );
    } else {
        assert_eq!(p.dpdcid(), Some(REQ_DPDCID));
    }
    let cc = matches!(t, PdsType::RudCcRequest | PdsType::RodCcRequest);
    assert_eq!(p.ccc_id(), cc.then_some(CCC_ID));
    assert_eq!(p.credit_target(), cc.then_some(CREDIT_TARGET));
    check_standard_som(&f.ses.unwrap(), 0x02);
    assert_eq!(f.payload_len, 0);
}

fn check_ack(p: &uet::Pds<'_>, t: PdsType, ack_psn_offset: u16) {
    assert_eq!(p.pds_type(), t);
    assert_eq!(p.next_header_raw(), NextHeader::Response as u8);
    assert_eq!(p.flags(), M | RETX | REQ_CLEAR);
    assert!(p.m() && p.retx() && !p.p());
    assert_eq!(p.req(), 1, "clear");
    assert_eq!(p.cack_psn(), Some(CACK_PSN));
    assert_eq!(p.ack_psn_offset(), Some(ack_psn_offset as i16));
    assert_eq!(
        p.ack_psn(),
        Some(CACK_PSN.wrapping_add_signed(i32::from(ack_psn_offset as i16)))
    );
    assert_eq!((p.spdcid(), p.dpdcid()), (Some(SPDCID), Some(ACK_DPDCID)));
}

/// make_uet_pds.py: every PDS type xdp2 writes, in its order.
#[test]
fn xdp2s_pds_samples_decode_field_by_field() {
    let fs = frames("xdp2-uet_pds.pcap");
    assert_eq!(fs.len(), 19);
    let entropy = 35433;
    // RUD, ROD; plain, SYN, CC, SYN and CC.
    let requests = [
        (PdsType::RudRequest, false),
        (PdsType::RudRequest, true),
        (PdsType::RudCcRequest, false),
        (PdsType::RudCcRequest, true),
        (PdsType::RodRequest, false),
        (PdsType::RodRequest, true),
        (PdsType::RodCcRequest, false),
        (PdsType::RodCcRequest, true),
    ];
    for (i, (t, syn)) in requests.into_iter().enumerate() {
        check_request(&found(&fs[i], entropy), t, syn);
        // The record's neutral PSN is the PDS PSN.
        let (rec, _) = record(&fs[i]);
        assert_eq!(
            (rec.uet().psn, rec.uet().spdcid),
            (PSN, SPDCID),
            "frame {i}"
        );
    }

    // ACK.
    let f = found(&fs[8], entropy);
    check_ack(&f.pds.unwrap(), PdsType::Ack, 0x8642);
    check_response(&f.ses.unwrap(), 0x01);

    // ACK_CC with NSCC state.
    let f = found(&fs[9], entropy);
    let p = f.pds.unwrap();
    check_ack(&p, PdsType::AckCc, 0x2121);
    assert_eq!((p.cc_type(), p.mpr()), (Some(0), Some(0x87)));
    assert_eq!(p.sack_psn_offset(), Some(0x6789));
    assert_eq!(p.sack_bitmap(), Some(0x1234_5678_9abc_def0));
    assert_eq!(
        p.cc_state(),
        Some(CcState::Nscc {
            service_time: 0x99aa,
            restore_cwnd: true,
            rcv_cwnd_pend: 0x7f,
            rcvd_bytes: 0x88_7766,
            ooo_count: 0x8765,
        })
    );
    check_response(&f.ses.unwrap(), 0x01);
    let (rec, _) = record(&fs[9]);
    assert_eq!(rec.uet().sack_base, CACK_PSN.wrapping_add(0x6789));
    assert_eq!(rec.uet().sack_bitmap, 0x1234_5678_9abc_def0);

    // ACK_CC with credit state.
    let f = found(&fs[10], entropy);
    let p = f.pds.unwrap();
    check_ack(&p, PdsType::AckCc, 0x9876);
    assert_eq!((p.cc_type(), p.mpr()), (Some(1), Some(0x87)));
    assert_eq!(p.sack_psn_offset(), Some(0x9988));
    assert_eq!(
        p.cc_state(),
        Some(CcState::Credit {
            credit: 0x12_3456,
            ooo_count: 0x8765,
        })
    );

    // ACK_CCX: xdp2 writes 8 bytes of CCX state (32 in all), Wireshark
    // master and the decoder read 16 (40): the 12-byte SES response after
    // it then does not fit the UDP length. The PDS fields before the
    // state are read all the same.
    let (rec, stop) = record(&fs[11]);
    assert_eq!(
        (rec.kind(), stop),
        (Kind::Uet, Some(Stop::Invalid(Layer::Ses)))
    );
    let u = rec.uet();
    assert_eq!(u.pds_type, PdsType::AckCcx as u8);
    assert_eq!(
        (u.cack_psn, u.spdcid, u.dpdcid),
        (CACK_PSN, SPDCID, ACK_DPDCID)
    );
    assert_eq!(
        (u.sack_base, u.sack_bitmap),
        (CACK_PSN.wrapping_add(0x9988), 0x1234_5678_9abc_def0)
    );
    // The CCX type in the CC-type nibble, the state's first 8 bytes.
    let pds = uet::Pds::new_checked(&fs[11][UDP_PAYLOAD_AT..]).unwrap();
    assert_eq!(pds.cc_type(), Some(0xe));
    assert_eq!(
        pds.ccx_state().unwrap()[..8],
        0x1122_3344_5566_7788u64.to_be_bytes()
    );

    // NACK: RUDI type (NT), PDC_MODE_MISMATCH.
    let f = found(&fs[12], entropy);
    let p = f.pds.unwrap();
    assert_eq!(p.pds_type(), PdsType::Nack);
    assert_eq!(p.flags(), M | RETX | NT);
    assert!(p.m() && p.retx() && p.nt());
    assert_eq!(
        (p.nack_code_raw(), p.nack_vendor_code()),
        (Some(0x16), Some(0x87))
    );
    assert_eq!(p.psn(), Some(0x9988_7766), "the NACK PSN (or packet id)");
    assert_eq!((p.spdcid(), p.dpdcid()), (Some(SPDCID), Some(ACK_DPDCID)));
    assert_eq!(
        p.nack_max_recv_psn_plus_1(),
        Some(0x5678_9abc),
        "the payload"
    );
    check_response(&f.ses.unwrap(), 0x01);

    // NACK_CCX: xdp2's CCX part is 8 bytes (24 in all), Wireshark's 16
    // (32): the SES after it does not fit, as for ACK_CCX.
    let (rec, stop) = record(&fs[13]);
    assert_eq!(
        (rec.kind(), stop),
        (Kind::Uet, Some(Stop::Invalid(Layer::Ses)))
    );
    assert_eq!(rec.uet().pds_type, PdsType::NackCcx as u8);
    assert_eq!(rec.uet().nack_code, 0x15, "INVALID_SYN");
    assert_eq!(rec.uet().pds_flags, RETX, "not ECN-marked, RUD/ROD type");
    let pds = uet::Pds::new_checked(&fs[13][UDP_PAYLOAD_AT..]).unwrap();
    // nccx_type 3, state1 0xf, state2 (0xedcba9876543210) in its 56 bits.
    let ccx = [0x3f, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10];
    assert_eq!(pds.ccx_state().unwrap()[..8], ccx);

    // CONTROL, CREDIT_REQ: the control type in the next-header bits, no
    // SES. xdp2's script writes 12 bytes (no payload word; its pds.h and
    // Wireshark have one: 16), so the decoder's payload is the first word
    // of the response the script appended, the rest counted as payload.
    let f = found(&fs[14], entropy);
    let p = f.pds.unwrap();
    assert_eq!(p.pds_type(), PdsType::Control);
    assert_eq!(p.control_type().map(|c| c as u8), Some(8));
    assert_eq!(p.flags(), 0x20 | RETX, "is-ROD bit, RETX");
    assert_eq!(p.probe_opaque(), Some(0x9876));
    assert_eq!(p.psn(), Some(0xcdef_0123));
    assert_eq!((p.spdcid(), p.dpdcid()), (Some(0xcdef), Some(0xfedc)));
    assert_eq!(
        p.control_payload(),
        Some(0xc109_1234),
        "the response's first word"
    );
    assert_eq!((f.ses, f.payload_len), (None, 8));

    // CONTROL with SYN, NEGOTIATION.
    let f = found(&fs[15], entropy);
    let p = f.pds.unwrap();
    assert_eq!(p.control_type().map(|c| c as u8), Some(9));
    assert_eq!(p.flags(), RETX | SYN);
    assert_eq!(p.probe_opaque(), Some(0x1234));
    // xdp2 puts a SYN's use-reserved-PDC bit and PSN offset in the DPDCID's
    // place, as in a request; Wireshark master reads a CONTROL's DPDCID
    // whatever SYN says, and so does the decoder: the raw word.
    assert_eq!((p.use_rsv_pdc(), p.psn_offset()), (None, None));
    assert_eq!(p.dpdcid(), Some(0x8000 | PSN_OFFSET));

    // UUD request: the prefix only, then the standard request.
    let f = found(&fs[16], entropy);
    let p = f.pds.unwrap();
    assert_eq!(
        (p.pds_type(), p.header_len(), p.flags()),
        (PdsType::UudRequest, 4, 0)
    );
    check_standard_som(&f.ses.unwrap(), 0x02);

    // RUDI request and response: the packet id.
    for (i, t) in [(17, PdsType::RudiRequest), (18, PdsType::RudiResponse)] {
        let f = found(&fs[i], entropy);
        let p = f.pds.unwrap();
        assert_eq!((p.pds_type(), p.flags()), (t, M));
        assert_eq!(p.rudi_pkt_id(), Some(PKT_ID));
        let (rec, _) = record(&fs[i]);
        assert_eq!(rec.uet().pkt_id, PKT_ID);
    }
    check_standard_som(&found(&fs[17], entropy).ses.unwrap(), 0x02);
    check_response(&found(&fs[18], entropy).ses.unwrap(), 0x01);
}

/// make_uet_ses.py: every SES header xdp2 writes, in its order.
#[test]
fn xdp2s_ses_samples_decode_field_by_field() {
    let fs = frames("xdp2-uet_ses.pcap");
    assert_eq!(fs.len(), 17);
    let entropy = 8675;
    let ses = |i: usize| found(&fs[i], entropy);

    // Standard request with SOM, READ.
    let f = ses(0);
    check_request(&f, PdsType::RudRequest, false);

    // Standard request without SOM, WRITE: payload length and message
    // offset where header data is with SOM.
    let s = ses(1).ses.unwrap();
    assert_eq!((s.opcode_raw(), s.flags_byte()), (0x01, DC_REL_EOM));
    check_common(&s, 0x77);
    assert_eq!(s.header_data(), None);
    assert_eq!(
        (s.payload_length(), s.message_offset()),
        (Some(0x345), Some(0x7766_5544))
    );
    assert_eq!(s.request_length(), Some(0x9988_7766));

    // Deferrable send (no SOM): the restart tokens in the buffer offset's
    // place, match bits in the memory key's.
    let s = ses(2).ses.unwrap();
    assert_eq!(s.opcode_raw(), 0x08);
    check_common(&s, 0x77);
    assert_eq!(s.buffer_offset(), Some(0x8765_4321_1234_5678));
    assert_eq!(s.initiator(), Some(0xfedc_ba98));
    assert_eq!(s.memory_key(), Some(0x1122_3344_5566_7788));
    assert_eq!(s.request_length(), Some(0x9988_7766));

    // Ready to restart: the restart tokens in the memory key's place.
    let s = ses(3).ses.unwrap();
    assert_eq!(s.opcode_raw(), 0x0c);
    assert_eq!(s.buffer_offset(), Some(0x8899_aabb_ccdd_eeff));
    assert_eq!(s.memory_key(), Some(0x8765_4321_1234_5678));
    assert_eq!(s.request_length(), Some(0x9988_7766));

    // Atomics: the 4-byte atomic operation or 36-byte compare-and-swap
    // extension header after the SES header is payload to the decoder.
    for (i, ext, atomic_code) in [(4, 4, 0x0a), (5, 36, 0x11)] {
        let f = ses(i);
        let s = f.ses.unwrap();
        assert_eq!((s.opcode_raw(), s.payload_length()), (0x03, Some(0x345)));
        assert_eq!(f.payload_len, ext);
        // BXOR or CSWAP_GE, FLOAT_COMPLEX.
        assert_eq!(s.payload()[..2], [atomic_code, FLOAT_COMPLEX], "frame {i}");
    }

    // Medium requests (WRITE, atomic, atomic CAS): xdp2 writes the
    // common header's message id in bytes 2-3, where Wireshark master reads
    // the request length (14 bits): the decoder reads 0x1234 as the
    // request length and no message id. From byte 4 on both agree; xdp2's
    // header data lies where the standard request's buffer offset does.
    for (i, opcode, ext) in [(6, 0x01, 0), (7, 0x03, 4), (8, 0x03, 36), (16, 0x00, 0)] {
        let f = ses(i);
        assert_eq!(
            f.pds.unwrap().next_header_raw(),
            NextHeader::RequestMedium as u8
        );
        let s = f.ses.unwrap();
        assert_eq!(
            (s.kind(), s.opcode_raw()),
            (NextHeader::RequestMedium, opcode),
            "frame {i}"
        );
        assert_eq!(s.flags_byte(), DC_REL_EOM | SOM);
        check_common(&s, 0x77);
        assert_eq!((s.message_id(), s.request_length()), (None, Some(0x1234)));
        assert_eq!(s.buffer_offset(), Some(0x9876_5432_9876_5432));
        assert_eq!(s.initiator(), Some(0x8765_4321));
        assert_eq!(s.memory_key(), Some(0xccbb_ddee_ff00_9988));
        assert_eq!(f.payload_len, ext, "frame {i}");
    }

    // Small requests (READ, atomic, atomic CAS): the same bytes 2-3; the
    // buffer offset.
    for (i, opcode, ext) in [(9, 0x02, 0), (10, 0x03, 4), (11, 0x03, 36)] {
        let f = ses(i);
        let s = f.ses.unwrap();
        assert_eq!(
            (s.kind(), s.opcode_raw()),
            (NextHeader::RequestSmall, opcode),
            "frame {i}"
        );
        check_common(&s, 0x77);
        assert_eq!((s.message_id(), s.request_length()), (None, Some(0x1234)));
        assert_eq!(s.buffer_offset(), Some(0x9876_5432_9876_5432));
        assert_eq!((s.initiator(), s.memory_key()), (None, None));
        assert_eq!(f.payload_len, ext, "frame {i}");
    }

    // A response (no data) after a RUDI response; its opcode
    // RESPONSE_WITH_DATA as the script sets it.
    let f = ses(12);
    assert_eq!(f.pds.unwrap().rudi_pkt_id(), Some(PKT_ID));
    check_response(&f.ses.unwrap(), 0x02);

    // Response with data.
    let s = ses(13).ses.unwrap();
    assert_eq!(s.kind(), NextHeader::ResponseData);
    assert_eq!((s.opcode_raw(), s.return_code()), (0x02, Some(0x09)));
    assert_eq!(s.message_id(), Some(0x1234));
    assert_eq!(s.job_id(), Some(0x65_4321));
    assert_eq!(s.read_req_message_id(), Some(0x1234));
    assert_eq!(
        s.payload_length(),
        Some(0x321),
        "12 bits (xdp2) or 14 (Wireshark)"
    );
    assert_eq!(s.modified_length(), Some(0x8765_4321));
    assert_eq!(s.message_offset(), Some(0x09ab_cdef));

    // Response with small data: xdp2 writes 12 bytes (job id, original
    // request PSN after the payload length), Wireshark master reads 4:
    // the decoder's 4, the 8 after them payload.
    let f = ses(14);
    let s = f.ses.unwrap();
    assert_eq!(
        (s.kind(), s.header_len()),
        (NextHeader::ResponseDataSmall, 4)
    );
    assert_eq!((s.opcode_raw(), s.return_code()), (0x02, Some(0x09)));
    assert_eq!(s.payload_length(), Some(0x3456));
    assert_eq!(f.payload_len, 8);
    assert_eq!(s.payload()[1..4], [0x03, 0x68, 0x70], "job id 223344");
    assert_eq!(
        s.payload()[4..8],
        0x1234u32.to_be_bytes(),
        "original request PSN"
    );

    // Standard request with SOM, RENDEZVOUS_TSEND.
    check_standard_som(&ses(15).ses.unwrap(), 0x0a);
}
