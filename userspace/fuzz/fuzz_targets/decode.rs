//! Any bytes as one frame: the decoder, and the RDMA CM view of its
//! payload (REQ/REP MADs on QP1), must never panic.
//!
//! First byte: its low 3 bits pick the link type (Ethernet, Linux
//! SLL, SLL2, raw IP, raw IPv4, raw IPv6, BSD null, BSD loopback); its top bit says the frame was cut by a snaplen (the wire
//! length is then claimed 100 bytes longer than the bytes given); bit 6
//! marks switch telemetry (INT by DSCP 46 and by UDP port 5000, reports to
//! 32766; IFA is on protocol 131 either way), whose hops are then read
//! into rows too; bit 3 recognises UET's native IP mode on protocol 253
//! (UET over UDP 4793 is recognised always). The rest is the frame.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocescope::proto::linktype;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, frame)) = data.split_first() else {
        return;
    };
    const LINKTYPES: [u32; 8] = [
        linktype::ETHERNET,
        linktype::LINUX_SLL,
        linktype::LINUX_SLL2,
        linktype::RAW,
        linktype::IPV4,
        linktype::IPV6,
        linktype::NULL,
        linktype::LOOP,
    ];
    let lt = LINKTYPES[usize::from(selector & 0x7f) % LINKTYPES.len()];
    let cut = if selector & 0x80 != 0 { 100 } else { 0 };
    let frame_len = u32::try_from(frame.len())
        .unwrap_or(u32::MAX)
        .saturating_add(cut);
    let mut reg = rocescope::wire::Recognition::DEFAULT;
    if selector & 0x40 != 0 {
        reg.telemetry.int_dscp = 46;
        reg.telemetry.int_port = 5000;
        reg.telemetry.report_port = 32766;
    }
    if selector & 0x08 != 0 {
        reg.ip_protocols[rocescope::wire::TransportId::Uet.index()] =
            u16::from(rocescope::wire::uet::REFERENCE_IP_PROTOCOL);
    }
    let mut record = rocescope::PacketRecord::default();
    let walk = rocescope::decode::decode_walk_with(&mut record, &reg, lt, frame, frame_len);
    if let Some((found, bytes)) = walk.telemetry {
        std::hint::black_box(rocescope::telemetry::rows(&found, bytes, &record, &reg));
    }
    // A frame that gave no record always says why.
    assert!(record.kind() != rocescope::Kind::Other || walk.stop.is_some());
    // A UET record is never RoCE's: its own view, no ICRC verdict.
    if record.kind() == rocescope::Kind::Uet {
        assert_eq!(record.transport(), Some(rocescope::wire::TransportId::Uet));
        assert_eq!(record.icrc_ok(), None);
    }
    let cm = rocescope::transport::roce::cm::message(&record, walk.payload);
    std::hint::black_box((record, cm));
});
