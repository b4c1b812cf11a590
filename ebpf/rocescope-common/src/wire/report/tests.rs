//! Telemetry Report views checked against the Telemetry Report Format
//! v2.0's own example (§4.1 "Example with Baseline Metadata and Truncated
//! IPv4": RepType 1, InType 4, Report Length 14, MD Length 2, F set,
//! RepMdBits 0101 0000 0000 0000, the interface ids and queue occupancy,
//! then the original IPv4 and TCP headers).
use super::*;

const fn spec_example() -> [u8; 68] {
    let mut b = [0u8; 68];
    // Group header: Ver 2, hw_id 5, sequence 0x12345; node id 0x0A0B0C0D.
    let word: u32 = (2 << 28) | (5 << 22) | 0x12345;
    let w = word.to_be_bytes();
    b[0] = w[0];
    b[1] = w[1];
    b[2] = w[2];
    b[3] = w[3];
    b[4] = 0x0A;
    b[5] = 0x0B;
    b[6] = 0x0C;
    b[7] = 0x0D;
    // Individual report header: RepType 1, InType 4, length 14, MD length 2, F.
    b[8] = 0x14;
    b[9] = 14;
    b[10] = 2;
    b[11] = 0x20;
    // RepMdBits 0x5000, domain specific id, DSMdBits, DSMdstatus all 0.
    b[12] = 0x50;
    // Ingress interface 3, egress 9.
    b[20] = 0;
    b[21] = 3;
    b[22] = 0;
    b[23] = 9;
    // Queue id 1, occupancy 0x000200.
    b[24] = 1;
    b[26] = 2;
    // The truncated IPv4 packet: IHL 5, protocol TCP.
    b[28] = 0x45;
    b[37] = 6;
    b
}

const SPEC_EXAMPLE: [u8; 68] = spec_example();

#[test]
fn the_specs_report_example_decodes_field_by_field() {
    let g = GroupHeader::new_checked(&SPEC_EXAMPLE[..]).expect("a group header");
    assert_eq!(g.version(), VERSION);
    assert_eq!(g.hw_id(), 5);
    assert_eq!(g.sequence_number(), 0x12345);
    assert_eq!(g.node_id(), 0x0A0B_0C0D);
    let mut reports = g.reports();
    let r = reports.next().expect("one report").expect("readable");
    assert!(reports.next().is_none());
    assert_eq!((r.rep_type(), r.in_type()), (rep_type::INT, in_type::IPV4));
    assert_eq!((r.report_length(), r.md_length()), (14, 2));
    assert_eq!(r.len(), 60);
    assert!(r.tracked_flow());
    assert!(!r.dropped() && !r.congested_queue() && !r.intermediate());
    assert_eq!(r.rep_md_bits(), 0x5000);
    assert_eq!(r.domain_specific_id(), Some(0));
    let m = r.metadata().expect("metadata");
    assert_eq!((m.ingress_port(), m.egress_port()), (Some(3), Some(9)));
    assert_eq!((m.queue_id(), m.queue_occupancy()), (Some(1), Some(0x200)));
    assert_eq!(m.node_id(), None);
    assert_eq!(r.drop_reason(), None);
    // Report Length − fixed main contents − MD Length: 10 words of packet.
    assert_eq!(r.inner().len(), 40);
    assert_eq!(r.inner()[0], 0x45);
}

/// Two reports coalesced, the second running to the end (length 0xFF),
/// a drop report with RepMdBits bit 15 (queue id, drop reason).
#[test]
fn coalesced_reports_and_a_drop_reason() {
    let mut b = [0u8; 8 + 16 + 20];
    b[0] = 0x20;
    // Report 1: Inner Only, InType None, 3 words after the header.
    b[8] = 0x00;
    b[9] = 3;
    // Report 2: INT, no inner, length 0xFF, MD length 1, D set.
    b[24] = 0x10;
    b[25] = LENGTH_TO_END;
    b[26] = 1;
    b[27] = 0x80;
    b[28] = 0x00; // RepMdBits: bit 15 only
    b[29] = 0x01;
    b[36] = 4; // queue 4
    b[37] = 0x2A; // drop reason 42
    let g = GroupHeader::new_checked(&b[..]).expect("a group header");
    let rs: [Result<Report<'_>, Error>; 2] = {
        let mut it = g.reports();
        [it.next().expect("first"), it.next().expect("second")]
    };
    let first = rs[0].expect("readable");
    assert_eq!((first.rep_type(), first.len()), (rep_type::INNER_ONLY, 16));
    assert_eq!(first.metadata(), None);
    let second = rs[1].expect("readable");
    assert_eq!(second.len(), 20);
    assert!(second.dropped());
    assert_eq!(second.drop_queue_id(), Some(4));
    assert_eq!(second.drop_reason(), Some(42));
    // To the end of the payload: 4 bytes after its metadata.
    assert_eq!(second.inner().len(), 4);
}

#[test]
fn short_or_contradictory_reports_are_errors() {
    assert_eq!(
        GroupHeader::new_checked(&SPEC_EXAMPLE[..7]),
        Err(Error::Truncated)
    );
    let mut v1 = SPEC_EXAMPLE;
    v1[0] = 0x10;
    assert_eq!(GroupHeader::new_checked(&v1[..]), Err(Error::Invalid));
    // Cut inside the report: its declared length is not there.
    let g = GroupHeader::new_checked(&SPEC_EXAMPLE[..40]).expect("header");
    assert_eq!(g.reports().next(), Some(Err(Error::Truncated)));
    // MD Length past the report's end.
    let mut long_md = SPEC_EXAMPLE;
    long_md[10] = 20;
    assert_eq!(Report::new_checked(&long_md[8..]), Err(Error::Invalid));
    // RepMdBits asking for more than MD Length holds.
    let mut bits = SPEC_EXAMPLE;
    bits[12] = 0x7F;
    assert_eq!(Report::new_checked(&bits[8..]), Err(Error::Invalid));
}
