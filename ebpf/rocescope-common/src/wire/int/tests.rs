//! INT-MD views checked against the INT Dataplane Specification v2.1's
//! own example (§A "Example with INT-MD in-between UDP header and UDP
//! payload": three switches, node id and queue occupancy per hop, Hop ML
//! 2, the packet as the sink receives it after two hops) and against the
//! metadata layout the spec's instruction bitmap section gives.
use super::*;

/// The spec's example, from the shim on: Type 1, NPT 1, Length 7, the
/// original port XYZ (here 4791); Ver 2, Hop ML 2, Remaining Hop Count 6,
/// instruction bitmap 1001 0000 0000 0000; then hop 2's node id and queue
/// word, hop 1's (values chosen here).
const SPEC_EXAMPLE: [u8; 32] = [
    0x14, 7, 0x12, 0xB7, // shim
    0x20, 0x00, 0x02, 6, // Ver 2, D E M 0, Hop ML 2, RHC 6
    0x90, 0x00, 0x00, 0x00, // bitmap, domain specific id
    0x00, 0x00, 0x00, 0x00, // DS instruction, DS flags
    0, 0, 0, 2, // node id of hop2
    3, 0, 1, 0, // queue 3, occupancy 256 (hop2)
    0, 0, 0, 1, // node id of hop1
    0, 0, 0, 0xFF, // queue 0, occupancy 255 (hop1)
];

#[test]
fn the_specs_int_md_over_udp_example_decodes_field_by_field() {
    let shim = Shim::new_checked(&SPEC_EXAMPLE[..]).expect("a shim");
    assert_eq!(shim.int_type(), TYPE_MD);
    assert_eq!(shim.npt(), NPT_UDP_PAYLOAD);
    assert_eq!(shim.length(), 7);
    // Length counts the metadata header and stack, not the shim.
    assert_eq!(shim.int_len(), 28);
    assert_eq!(shim.original_port(), 4791);
    let md = MdHeader::new_checked(&SPEC_EXAMPLE[SHIM_LEN..]).expect("a metadata header");
    assert_eq!(md.version(), VERSION);
    assert!(!md.discard() && !md.max_hop_count_exceeded() && !md.mtu_exceeded());
    assert_eq!((md.hop_ml(), md.hop_len()), (2, 8));
    assert_eq!(md.remaining_hop_count(), 6);
    assert_eq!(md.instruction_bitmap(), 0x9000);
    assert_eq!(md.domain_specific_id(), 0);
    assert_eq!(md.hop_count(), 2);
    // Newest first: hop 2, then hop 1.
    let h2 = md.hop(0).expect("hop 2");
    assert_eq!(h2.node_id(), Some(2));
    assert_eq!((h2.queue_id(), h2.queue_occupancy()), (Some(3), Some(256)));
    assert_eq!(h2.hop_latency(), None);
    assert_eq!(h2.ingress_port(), None);
    let h1 = md.hop(1).expect("hop 1");
    assert_eq!(h1.node_id(), Some(1));
    assert_eq!((h1.queue_id(), h1.queue_occupancy()), (Some(0), Some(255)));
    assert!(md.hop(2).is_none());
}

/// Every baseline bit set: each value where the bit order puts it, 8
/// bytes for bits 4–6, bit 15 last; all ones reads as not available.
#[test]
fn every_baseline_metadata_word_lies_in_bit_order() {
    let bitmap = 0xFF81;
    assert_eq!(metadata_len(bitmap), 13 * 4);
    assert_eq!(metadata_len(0x0E00), 24);
    let mut hop = [0u8; 52];
    let words: [(usize, &[u8]); 10] = [
        (0, &[0, 0, 0x10, 0x01]),                          // node id 0x1001
        (4, &[0, 5, 0, 7]),                                // ingress 5, egress 7
        (8, &[0, 0, 0x03, 0xE8]),                          // hop latency 1000
        (12, &[2, 0, 0x10, 0]),                            // queue 2, occupancy 4096
        (16, &[0, 0, 0, 1, 0, 0, 0, 2]),                   // ingress ts
        (24, &[0, 0, 0, 1, 0, 0, 0, 9]),                   // egress ts
        (32, &[0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0x01, 0x02]), // L2 in n/a, out 258
        (40, &[0, 0, 0, 50]),                              // tx utilisation
        (44, &[1, 0, 0, 64]),                              // buffer 1, 64
        (48, &[0xAB, 0xCD, 0, 0]),                         // checksum complement
    ];
    for (at, w) in words {
        hop[at..at + w.len()].copy_from_slice(w);
    }
    let m = Metadata::new_checked(&hop[..], bitmap).expect("whole");
    assert_eq!(m.node_id(), Some(0x1001));
    assert_eq!((m.ingress_port(), m.egress_port()), (Some(5), Some(7)));
    assert_eq!(m.hop_latency(), Some(1000));
    assert_eq!((m.queue_id(), m.queue_occupancy()), (Some(2), Some(4096)));
    assert_eq!(m.ingress_timestamp(), Some((1 << 32) | 2));
    assert_eq!(m.egress_timestamp(), Some((1 << 32) | 9));
    assert_eq!((m.l2_ingress_port(), m.l2_egress_port()), (None, Some(258)));
    assert_eq!(m.egress_tx_utilization(), Some(50));
    assert_eq!((m.buffer_id(), m.buffer_occupancy()), (Some(1), Some(64)));
    assert_eq!(m.last_word(), Some(0xABCD_0000));
    // One byte short: refused, never read past.
    assert_eq!(
        Metadata::new_checked(&hop[..51], bitmap),
        Err(Error::Truncated)
    );
}

#[test]
fn short_or_contradictory_int_headers_are_errors() {
    assert_eq!(Shim::new_checked(&SPEC_EXAMPLE[..3]), Err(Error::Truncated));
    assert_eq!(
        MdHeader::new_checked(&SPEC_EXAMPLE[SHIM_LEN..SHIM_LEN + 11]),
        Err(Error::Invalid).or(Err(Error::Truncated))
    );
    // Hop ML 1 cannot hold node id and queue (two words).
    let mut bad = SPEC_EXAMPLE;
    bad[6] = 1;
    assert_eq!(MdHeader::new_checked(&bad[SHIM_LEN..]), Err(Error::Invalid));
    // A stack cut inside a hop: the whole hops only.
    let md = MdHeader::new_checked(&SPEC_EXAMPLE[SHIM_LEN..SHIM_LEN + 12 + 12]).expect("header");
    assert_eq!(md.hop_count(), 1);
    assert!(md.hop(1).is_none());
    // Hop ML 0 has no hops at all (no division by zero).
    let mut zero = SPEC_EXAMPLE;
    zero[6] = 0;
    zero[8] = 0;
    let md = MdHeader::new_checked(&zero[SHIM_LEN..]).expect("header");
    assert_eq!(md.hop_count(), 0);
}
