//! IFA views checked against the layout scapy's `contrib/ifa.py` (citing
//! draft-kumar-ippm-ifa-08) and gopacket's `layers/ifa.go` both read:
//! byte vectors written field by field as those give them, values chosen
//! here.
use super::*;

/// IFA header: Ver 2, GNS 0xF, next header UDP, I set, max length 0xFF.
const HEADER: [u8; 4] = [0x2F, 17, 0x04, 0xFF];

/// Metadata header (request vector 0xFF, L set, hop limit 7, current
/// length 16 words) and two hops.
const STACK: [u8; 4 + 64] = {
    let mut b = [0u8; 68];
    b[0] = 0xFF;
    b[1] = 0x80;
    b[2] = 7;
    b[3] = 16;
    // Hop 0: LNS 1, device 0xABCDE, TTL 63; speed 4 (100G), congestion 2,
    // queue 5, rx seconds 0x12345; egress 10, ingress 20; rx ns 999;
    // residence 1500 ns; vendor words 1, 2, 3.
    let hop: [u8; 32] = [
        0x1A, 0xBC, 0xDE, 63, //
        0x48, 0x51, 0x23, 0x45, //
        0, 10, 0, 20, //
        0, 0, 0x03, 0xE7, //
        0, 0, 0x05, 0xDC, //
        0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3,
    ];
    let mut i = 0;
    while i < 32 {
        b[4 + i] = hop[i];
        i += 1;
    }
    // Hop 1: device 1, everything else zero.
    b[4 + 32 + 2] = 1;
    b
};

#[test]
fn an_ifa_header_and_its_metadata_decode_field_by_field() {
    let h = Header::new_checked(&HEADER[..]).expect("a header");
    assert_eq!((h.version(), h.gns(), h.next_header()), (2, 0xF, 17));
    assert!(h.inband() && !h.turn_around() && !h.checksum());
    assert!(!h.tail_stamp() && !h.metadata_fragment() && !h.has_unread_headers());
    assert_eq!(h.max_length(), 0xFF);
    let md = MdHeader::new_checked(&STACK[..]).expect("metadata");
    assert_eq!(md.request_vector(), 0xFF);
    assert!(md.loss() && !md.color());
    assert_eq!((md.hop_limit(), md.current_length()), (7, 16));
    assert_eq!((md.total_len(), md.hop_count()), (68, 2));
    let hop = md.hop(0).expect("hop 0");
    assert_eq!((hop.lns(), hop.device_id(), hop.ip_ttl()), (1, 0xABCDE, 63));
    assert_eq!(hop.egress_port_speed(), 4);
    assert_eq!((hop.congestion(), hop.queue_id()), (2, 5));
    assert_eq!(hop.rx_timestamp_sec(), 0x12345);
    assert_eq!((hop.egress_port(), hop.ingress_port()), (10, 20));
    assert_eq!(hop.rx_timestamp_ns(), 999);
    assert_eq!(hop.residence_time_ns(), 1500);
    assert_eq!(hop.vendor_words(), [1, 2, 3]);
    assert_eq!(md.hop(1).expect("hop 1").device_id(), 1);
    assert!(md.hop(2).is_none());
}

#[test]
fn short_ifa_headers_are_errors() {
    assert_eq!(Header::new_checked(&HEADER[..3]), Err(Error::Truncated));
    // The stack its current length declares is not all there.
    assert_eq!(MdHeader::new_checked(&STACK[..67]), Err(Error::Truncated));
    let flags = [0x2F, 17, 0x09, 0xFF];
    let h = Header::new_checked(&flags[..]).expect("a header");
    assert!(h.tail_stamp() && h.checksum() && h.has_unread_headers());
}
