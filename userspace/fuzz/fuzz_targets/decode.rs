//! Any bytes as one frame: the decoder, and the RDMA CM view of its
//! payload (REQ/REP MADs on QP1), must never panic.
//!
//! First byte: its value mod 3 picks the link type (Ethernet, Linux SLL,
//! Linux SLL2); its top bit says the frame was cut by a snaplen (the wire
//! length is then claimed 100 bytes longer than the bytes given). The rest
//! is the frame.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocescope::proto::linktype;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, frame)) = data.split_first() else {
        return;
    };
    let lt = [
        linktype::ETHERNET,
        linktype::LINUX_SLL,
        linktype::LINUX_SLL2,
    ][usize::from(selector & 0x7f) % 3];
    let cut = if selector & 0x80 != 0 { 100 } else { 0 };
    let frame_len = u32::try_from(frame.len())
        .unwrap_or(u32::MAX)
        .saturating_add(cut);
    let (record, payload) = rocescope::decode::decode_with_payload(lt, frame, frame_len);
    let cm = rocescope::decode::cm::message(&record, payload);
    std::hint::black_box((record, cm));
});
