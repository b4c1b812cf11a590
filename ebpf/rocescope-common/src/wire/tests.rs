//! Host tests of the walk over byte slices, with frames written byte by
//! byte here (the userspace decoder's tests cover every layer's decisions).
use super::*;

/// Records every header the walk reports.
#[derive(Default)]
struct Spans {
    seen: [(Option<Layer>, usize, usize); 16],
    n: usize,
}

impl Visit for Spans {
    fn header(&mut self, layer: Layer, at: usize, end: usize) {
        if self.n < self.seen.len() {
            self.seen[self.n] = (Some(layer), at, end);
            self.n += 1;
        }
    }
}

impl Spans {
    fn list(&self) -> &[(Option<Layer>, usize, usize)] {
        &self.seen[..self.n]
    }
}

/// Ethernet + 802.1Q (VID 100, PCP 3) + IPv4 + UDP 4791 + BTH (RC RDMA
/// WRITE Only: a RETH) + 8 bytes of payload + ICRC (zero: not checked here).
const FRAME: [u8; 14 + 4 + 20 + 8 + 12 + 16 + 8 + 4] = {
    let mut f = [0u8; 86];
    let head: [u8; 18] = [
        2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x81, 0x00, 0x60, 100, 0x08, 0x00,
    ];
    let mut i = 0;
    while i < head.len() {
        f[i] = head[i];
        i += 1;
    }
    // IPv4: IHL 5, DSCP 26 / ECT(0), total 68, DF, TTL 64, UDP, 10.0.0.1 -> 10.0.0.2
    let ip: [u8; 20] = [
        0x45, 0x6A, 0, 68, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    i = 0;
    while i < 20 {
        f[18 + i] = ip[i];
        i += 1;
    }
    // UDP 0xC000 -> 4791, length 48.
    let udp: [u8; 8] = [0xC0, 0x00, 0x12, 0xB7, 0, 48, 0, 0];
    i = 0;
    while i < 8 {
        f[38 + i] = udp[i];
        i += 1;
    }
    // BTH: opcode 0x0A, SE, pad 0, P_Key 0xFFFF, FECN, QP 0x000102, AckReq, PSN 0x030405.
    let bth: [u8; 12] = [0x0A, 0x80, 0xFF, 0xFF, 0x80, 0, 1, 2, 0x80, 3, 4, 5];
    i = 0;
    while i < 12 {
        f[46 + i] = bth[i];
        i += 1;
    }
    // RETH: VA 0x1122334455667788, R_Key 0xAABBCCDD, DMA length 8.
    let reth: [u8; 16] = [
        0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0xAA, 0xBB, 0xCC, 0xDD, 0, 0, 0, 8,
    ];
    i = 0;
    while i < 16 {
        f[58 + i] = reth[i];
        i += 1;
    }
    f
};

#[test]
fn walks_every_header_of_a_tagged_rocev2_write() {
    let mut rec = PacketRecord::default();
    let mut spans = Spans::default();
    let w = walk(&FRAME[..], lt::ETHERNET, &mut rec, &mut spans);
    assert_eq!(w.stop, None);
    assert_eq!(
        spans.list(),
        &[
            (Some(Layer::Link), 0, 14),
            (Some(Layer::Vlan), 14, 18),
            (Some(Layer::Ipv4), 18, 38),
            (Some(Layer::Udp), 38, 46),
            (Some(Layer::Bth), 46, 58),
            (Some(Layer::ExtHeaders), 58, 74),
        ]
    );
    assert_eq!(w.payload, Span { at: 74, end: 82 });
    assert_eq!(w.icrc, Some(Span { at: 18, end: 86 }));
    assert!(!w.cut);
    assert_eq!(rec.kind(), Kind::Roce);
    assert_eq!((rec.vlan, rec.pcp, rec.outer_vlan), (100, 3, 0));
    assert_eq!(
        rec.src_ip,
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 0, 0, 1]
    );
    assert_eq!((rec.dscp, rec.ecn, rec.udp_sport), (26, 2, 0xC000));
    assert_eq!(
        (
            rec.roce().opcode,
            rec.roce().pkey,
            rec.roce().dest_qp,
            rec.roce().psn
        ),
        (0x0A, 0xFFFF, 0x102, 0x030405)
    );
    assert_eq!(
        (
            rec.roce().reth_va,
            rec.roce().reth_rkey,
            rec.roce().reth_len
        ),
        (0x1122_3344_5566_7788, 0xAABB_CCDD, 8)
    );
    assert_eq!(rec.payload_len, 8);
    let want = flags::HAS_VLAN
        | flags::HAS_IPV4
        | flags::HAS_UDP
        | flags::HAS_BTH
        | flags::HAS_RETH
        | flags::HAS_PAYLOAD_LEN
        | flags::SE
        | flags::FECN
        | flags::ACK_REQ;
    assert_eq!(rec.flags, want);
}

#[test]
fn every_cut_stops_at_the_layer_it_cuts() {
    let mut rec = PacketRecord::default();
    for len in 0..FRAME.len() {
        let w = walk(&FRAME[..len], lt::ETHERNET, &mut rec, &mut ());
        let want = match len {
            0..14 => Some(Stop::Cut(Layer::Link)),
            14..18 => Some(Stop::Cut(Layer::Vlan)),
            18..38 => Some(Stop::Cut(Layer::Ipv4)),
            38..46 => Some(Stop::Cut(Layer::Udp)),
            46..58 => Some(Stop::Cut(Layer::Bth)),
            58..74 => Some(Stop::Cut(Layer::ExtHeaders)),
            _ => None,
        };
        assert_eq!(w.stop, want, "cut to {len}");
        // Past the UDP header the datagram is known to be cut.
        assert_eq!(w.cut, len >= 46, "cut to {len}");
        assert_eq!(w.icrc, None, "cut to {len}");
    }
}

#[test]
fn raw_ip_and_loopback_start_at_the_ip_header() {
    let ip = &FRAME[18..];
    for (linktype, prefix) in [
        (lt::RAW, &[][..]),
        (lt::RAW_DLT, &[][..]),
        (lt::RAW_OPENBSD, &[][..]),
        (lt::IPV4, &[][..]),
        (lt::NULL, &[2, 0, 0, 0][..]),
        (lt::NULL, &[0, 0, 0, 2][..]),
        (lt::LOOP, &[0, 0, 0, 2][..]),
    ] {
        let mut frame = [0u8; 72];
        frame[..prefix.len()].copy_from_slice(prefix);
        frame[prefix.len()..prefix.len() + ip.len()].copy_from_slice(ip);
        let frame = &frame[..prefix.len() + ip.len()];
        let mut rec = PacketRecord::default();
        let w = walk(frame, linktype, &mut rec, &mut ());
        assert_eq!(w.stop, None, "link type {linktype}");
        assert_eq!(
            w.icrc,
            Some(Span {
                at: prefix.len(),
                end: frame.len()
            })
        );
        assert_eq!(
            (rec.kind(), rec.roce().psn, rec.dst_mac),
            (Kind::Roce, 0x030405, [0; 6])
        );
    }
    let mut rec = PacketRecord::default();
    let w = walk(&FRAME[18..], lt::IPV6, &mut rec, &mut ());
    assert_eq!(w.stop, Some(Stop::Invalid(Layer::Ipv6)));
    let w = walk(&FRAME[..], 9999, &mut rec, &mut ());
    assert_eq!(w.stop, Some(Stop::LinkType));
}

#[test]
fn slice_loads_stay_in_bounds() {
    let b = [1u8, 2, 3, 4];
    assert_eq!(b[..].load::<2>(2, 4), Some([3, 4]));
    assert_eq!(b[..].load::<2>(3, 4), None);
    assert_eq!(b[..].load::<2>(0, 5), None);
    assert_eq!(b[..].load::<1>(3, 2), None);
    assert_eq!(b[..].load::<0>(usize::MAX, usize::MAX), None);
}

/// Native InfiniBand, no GRH: LRH (VL 0, SL 0, LNH 0b10, DLID 0x0012,
/// PktLen 12 words, SLID 0x0034) + BTH of a DC CONNECT (0x55, SE clear: the
/// 8-byte DC header and a 16-byte DCCETH) + ICRC, then the 2-byte VCRC.
#[test]
fn infiniband_walks_lrh_dc_connect_and_finds_the_vcrc() {
    // LRH 8 + BTH 12 + DC 8 + DCCETH 16 + ICRC 4 = 48 bytes = 12 words.
    let mut p = [0u8; 48 + 2];
    p[..8].copy_from_slice(&[0x00, 0x02, 0x00, 0x12, 0x00, 12, 0x00, 0x34]);
    p[8..20].copy_from_slice(&[0x55, 0x00, 0xFF, 0xFF, 0, 0, 0x01, 0x23, 0, 0, 0, 9]);
    let mut rec = PacketRecord::default();
    let mut v = Spans::default();
    let w = walk_infiniband(&p[..], &mut rec, &mut v, 0, p.len());
    assert_eq!(w.stop, None);
    assert_eq!(rec.kind, Kind::Roce as u8);
    assert_eq!(
        (rec.roce().opcode, rec.roce().dest_qp, rec.roce().psn),
        (0x55, 0x123, 9)
    );
    assert_eq!(rec.dst_ip, proto::lrh::lid_addr(0x12));
    assert_eq!(rec.src_ip, proto::lrh::lid_addr(0x34));
    assert!(rec.has(flags::IB_LRH) && !rec.has(flags::HAS_GRH));
    // 48 - LRH 8 - BTH 12 - DC 8 - DCCETH 16 - ICRC 4.
    assert_eq!(rec.payload_len, 0);
    assert_eq!(w.icrc, Some(Span { at: 0, end: 48 }));
    assert_eq!(w.vcrc, Some(Span { at: 48, end: 50 }));
    assert_eq!(
        v.list(),
        &[
            (Some(Layer::Lrh), 0, 8),
            (Some(Layer::Bth), 8, 20),
            (Some(Layer::ExtHeaders), 20, 28),
            (Some(Layer::ExtHeaders), 28, 44),
        ]
    );
    // SE set: no DCCETH, 16 bytes of payload instead.
    p[9] = 0x80;
    let w = walk_infiniband(&p[..], &mut rec, &mut (), 0, p.len());
    assert_eq!((rec.payload_len, w.payload), (16, Span { at: 28, end: 44 }));
    // LNH 0b00 (raw): no IBA transport.
    p[1] = 0x00;
    let w = walk_infiniband(&p[..], &mut rec, &mut (), 0, p.len());
    assert_eq!(w.stop, Some(Stop::Foreign(Foreign::LinkNextHeader)));
    // PktLen 4 words: shorter than LRH + BTH + ICRC.
    p[1] = 0x02;
    p[5] = 4;
    let w = walk_infiniband(&p[..], &mut rec, &mut (), 0, p.len());
    assert_eq!(w.stop, Some(Stop::Invalid(Layer::Lrh)));
    assert_eq!(rec.kind, Kind::Malformed as u8);
}

/// Native InfiniBand with a GRH (LNH 0b11): the GIDs are the addresses, the
/// GRH's IPVer must be 6 and its next header a BTH. Its TClass is not read
/// as DSCP and ECN (docs/inputs.md): FECN is IB's congestion mark.
#[test]
fn infiniband_reads_the_grh_as_rocev1_does() {
    // LRH 8 + GRH 40 + BTH 12 (RC SEND Only) + ICRC 4 = 64 bytes = 16 words.
    let mut p = [0u8; 64];
    p[..8].copy_from_slice(&[0x00, 0x03, 0x00, 0x12, 0x00, 16, 0x00, 0x34]);
    // IPVer 6, TClass 0x6B (DSCP 26, ECN 3 were it IP's).
    p[8] = 0x66;
    p[9] = 0xB0;
    p[8 + 5] = 16; // PayLen: BTH + ICRC
    p[8 + 6] = ib::GRH_NXTHDR_BTH;
    p[8 + 8] = 0xFE; // SGID fe80::1
    p[8 + 9] = 0x80;
    p[8 + 23] = 1;
    p[8 + 24] = 0xFE; // DGID fe80::2
    p[8 + 25] = 0x80;
    p[8 + 39] = 2;
    p[48] = 0x04;
    let mut rec = PacketRecord::default();
    let w = walk_infiniband(&p[..], &mut rec, &mut (), 0, p.len());
    assert_eq!(w.stop, None);
    assert!(rec.has(flags::IB_LRH | flags::HAS_GRH));
    assert_eq!(
        (rec.src_ip[0], rec.src_ip[15], rec.dst_ip[15]),
        (0xFE, 1, 2)
    );
    assert_eq!((rec.roce().opcode, rec.payload_len), (0x04, 0));
    assert_eq!((rec.dscp, rec.ecn), (0, 0));
    assert!(!rec.has_traffic_class() && !rec.is_ce());
    assert_eq!((w.icrc, w.vcrc), (Some(Span { at: 0, end: 64 }), None));
    p[8 + 6] = 0x3B; // IPv6 no-next-header: no IBA transport
    let w = walk_infiniband(&p[..], &mut rec, &mut (), 0, p.len());
    assert_eq!(w.stop, Some(Stop::Foreign(Foreign::LinkNextHeader)));
    p[8] = 0x50;
    let w = walk_infiniband(&p[..], &mut rec, &mut (), 0, p.len());
    assert_eq!(w.stop, Some(Stop::Invalid(Layer::Grh)));
    let w = walk_infiniband(&p[..], &mut rec, &mut (), 0, 30);
    assert_eq!(w.stop, Some(Stop::Cut(Layer::Grh)));
}

/// The registry's RoCE line is the standards' numbers: UDP 4791 (IANA,
/// IBA Annex A17), EtherType 0x8915 (Annex A16), LINKTYPE_INFINIBAND (247,
/// tcpdump.org's link-type list); no native IP mode.
#[test]
fn the_registry_recognises_roce_by_its_three_encapsulations() {
    use registry::{TRANSPORTS, by_ethertype, by_linktype};
    let reg = Recognition::DEFAULT;
    assert_eq!(reg.by_udp_port(4791), Some(TransportId::Roce));
    assert_eq!(reg.by_udp_port(4793), Some(TransportId::Uet));
    assert_eq!(reg.by_udp_port(4792), None);
    assert_eq!(reg.by_udp_port(0), None);
    assert_eq!(by_ethertype(0x8915), Some(TransportId::Roce));
    assert_eq!(by_ethertype(0x0800), None);
    assert_eq!(by_linktype(247), Some(TransportId::Roce));
    assert_eq!(by_linktype(1), None);
    // No native IP mode until a protocol number is configured.
    assert_eq!((0..=255).find_map(|p| reg.by_ip_protocol(p)), None);
    assert_eq!(TransportId::from_name("RoCE"), Some(TransportId::Roce));
    assert_eq!(TRANSPORTS[TransportId::Roce.index()].name, "roce");
    // An IP protocol configured for a transport without a native IP mode
    // recognises nothing.
    let mut odd = reg;
    odd.ip_protocols[TransportId::Roce.index()] = 253;
    assert_eq!(odd.by_ip_protocol(253), None);
}

/// A moved port moves the walk: FRAME (to 4791) is foreign UDP once RoCE
/// is on 4792, and the same frame rewritten to 4792 walks as before.
#[test]
fn the_walk_follows_a_configured_udp_port() {
    let moved = Recognition::DEFAULT.with_udp_port(TransportId::Roce, 4792);
    let mut rec = PacketRecord::default();
    let w = walk_with(&FRAME[..], &moved, lt::ETHERNET, &mut rec, &mut ());
    assert_eq!(w.stop, Some(Stop::Foreign(Foreign::UdpPort)));
    assert_eq!(rec.kind(), Kind::Other);
    assert_eq!(rec.transport(), None);

    let mut want = PacketRecord::default();
    let want_walk = walk(&FRAME[..], lt::ETHERNET, &mut want, &mut ());
    let mut f = FRAME;
    f[38 + 2..38 + 4].copy_from_slice(&4792u16.to_be_bytes());
    let w = walk_with(&f[..], &moved, lt::ETHERNET, &mut rec, &mut ());
    assert_eq!((rec, w), (want, want_walk));
    assert_eq!(rec.transport(), Some(TransportId::Roce));
}
