//! Any bytes as one frame: the decoder, and the RDMA CM view of its
//! payload (REQ/REP MADs on QP1), must never panic.
//!
//! First byte: its low 7 bits mod 8 pick the link type (Ethernet, Linux
//! SLL, SLL2, raw IP, raw IPv4, raw IPv6, BSD null, BSD loopback); its top bit says the frame was cut by a snaplen (the wire
//! length is then claimed 100 bytes longer than the bytes given). The rest
//! is the frame.
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
    let mut record = rocescope::PacketRecord::default();
    let walk = rocescope::decode::decode_walk(&mut record, lt, frame, frame_len);
    // A frame that gave no record always says why.
    assert!(record.kind() != rocescope::Kind::Other || walk.stop.is_some());
    let cm = rocescope::transport::roce::cm::message(&record, walk.payload);
    std::hint::black_box((record, cm));
});
