//! Any bytes as a native InfiniBand packet or an ERF record: the ERF view,
//! the LRH walk and both IB CRCs must never panic nor read out of bounds.
//!
//! First byte: bit 0 picks the link type (0: LINKTYPE_INFINIBAND, the
//! bytes from the LRH; 1: LINKTYPE_ERF, the bytes an ERF record with its
//! header and extension headers); bit 7 says the frame was cut by a snaplen
//! (the wire length is then claimed 100 bytes longer). The rest is the frame.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocescope::decode::erf;
use rocescope::transport::roce::lrh;
use rocescope::proto::linktype;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, frame)) = data.split_first() else {
        return;
    };
    let lt = if selector & 1 == 0 {
        linktype::INFINIBAND
    } else {
        linktype::ERF
    };
    let cut = if selector & 0x80 != 0 { 100 } else { 0 };
    let frame_len = u32::try_from(frame.len())
        .unwrap_or(u32::MAX)
        .saturating_add(cut);
    let mut record = rocescope::PacketRecord::default();
    let walk = rocescope::decode::decode_walk(&mut record, lt, frame, frame_len);
    assert!(record.kind() != rocescope::Kind::Other || walk.stop.is_some());
    // The views and CRCs on their own, whatever the bytes.
    let packet = match erf::record(frame) {
        Ok((e, payload)) if lt == linktype::ERF => {
            std::hint::black_box((e.timestamp(), e.record_type(), e.lctr(), e.wlen()));
            payload
        }
        _ => frame,
    };
    std::hint::black_box((lrh::icrc(packet), lrh::vcrc(packet)));
    if let Ok(l) = lrh::Lrh::new_checked(packet) {
        std::hint::black_box((l.vl(), l.sl(), l.lnh(), l.dlid(), l.slid(), l.packet_len()));
    }
});
