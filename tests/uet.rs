//! UET through the shared walk (docs/inputs.md, "UET headers"): every PDS
//! type and SES header decoded field by field from byte vectors laid out
//! as the UE Specification 1.0.1 gives them (`common::uet`), over UDP 4793
//! and in the native IP mode; cut and invalid headers counted by layer;
//! `--udp-port uet=PORT`; and `analyze` end to end: UET records counted
//! as UET, in `packets.parquet` with `transport` `uet` and their `uet_`
//! columns, never a RoCE flow.
use std::collections::BTreeSet;

use rocescope::decode::{self, DecodeTally, Undecoded};
use rocescope::wire::{self, Foreign, Layer, Recognition, Stop, TransportId, Visit};
use rocescope::{Kind, PacketRecord, RoceView, UetView, flags, proto};

use crate::common::uet::{ENTROPY, NATIVE_PROTOCOL, Vector, native_frame, udp_frame, vectors};
use crate::common::{self, Table};

const ETH: u32 = proto::linktype::ETHERNET;
/// Ethernet, IPv4 and UDP before the PDS header in [`udp_frame`].
const PDS_AT: usize = 14 + 20 + 8;

fn decoded(reg: &Recognition, frame: &[u8]) -> (PacketRecord, Option<Stop>) {
    let mut rec = PacketRecord::default();
    let w = decode::decode_walk_with(&mut rec, reg, ETH, frame, frame.len() as u32);
    (rec, w.stop)
}

fn native() -> Recognition {
    let mut reg = Recognition::DEFAULT;
    reg.ip_protocols[TransportId::Uet.index()] = u16::from(NATIVE_PROTOCOL);
    reg
}

/// The headers the walk reports, in order.
#[derive(Default)]
struct Layers(Vec<(Layer, usize, usize)>);

impl Visit for Layers {
    fn header(&mut self, layer: Layer, at: usize, end: usize) {
        self.0.push((layer, at, end));
    }
}

#[test]
fn every_pds_type_and_ses_header_decodes_field_by_field_over_udp() {
    let mut types = BTreeSet::new();
    let mut ses = BTreeSet::new();
    for v in vectors() {
        let frame = udp_frame(4793, &v.bytes);
        let (rec, stop) = decoded(&Recognition::DEFAULT, &frame);
        let name = v.name;
        assert_eq!((rec.kind(), stop), (Kind::Uet, None), "{name}");
        assert_eq!(rec.transport(), Some(TransportId::Uet), "{name}");
        assert_eq!(*rec.uet(), v.want, "{name}: the UET view, field by field");
        assert_eq!(rec.payload_len, v.payload_len, "{name}");
        assert!(rec.has(flags::HAS_PAYLOAD_LEN | flags::HAS_UDP | flags::HAS_IPV4));
        assert_eq!(rec.udp_sport, ENTROPY, "{name}");
        assert_eq!((rec.dscp, rec.ecn), (26, 2), "{name}");
        // Never RoCE's: no BTH, no ICRC, no RoCE version, RoCE's view empty.
        assert!(
            !rec.has(flags::HAS_BTH | flags::ICRC_CHECKED | flags::CUT),
            "{name}"
        );
        assert_eq!((rec.roce_version(), rec.icrc_ok()), (None, None), "{name}");
        assert_eq!(*rec.roce(), RoceView::default(), "{name}");

        // The walk's layers: UDP, then the PDS (or TSS) and SES headers
        // where the vector puts them.
        let mut layers = Layers::default();
        let mut r = PacketRecord::default();
        wire::walk(&frame[..], ETH, &mut r, &mut layers);
        let uet: Vec<_> = layers
            .0
            .iter()
            .skip_while(|l| l.0 != Layer::Udp)
            .skip(1)
            .collect();
        let first = if v.want.pds_type == 1 {
            Layer::Tss
        } else {
            Layer::Pds
        };
        let mut want = vec![(first, PDS_AT, PDS_AT + v.pds_len)];
        if v.ses_len > 0 {
            let at = PDS_AT + v.pds_len;
            want.push((Layer::Ses, at, at + v.ses_len));
        }
        assert_eq!(uet.into_iter().copied().collect::<Vec<_>>(), want, "{name}");

        // The slice API reads the same headers.
        let found = wire::uet::over_udp(&v.bytes).unwrap();
        match found.pds {
            Some(p) => assert_eq!(p.pds_type() as u8, v.want.pds_type, "{name}"),
            None => assert!(found.tss.is_some(), "{name}"),
        }
        types.insert(v.want.pds_type);
        if let Some(s) = found.ses {
            assert_eq!(s.header_len(), v.ses_len, "{name}");
            ses.insert(s.kind() as u8);
        }
    }
    assert_eq!(types, (1..=14).collect(), "every PDS type, TSS included");
    assert_eq!(ses, (1..=6).collect(), "every SES header");
}

#[test]
fn native_ip_mode_reads_the_entropy_header_over_ipv4_and_ipv6() {
    for v in vectors() {
        for ipv6 in [false, true] {
            let frame = native_frame(ipv6, 0xBEEF, &v.bytes);
            let (rec, stop) = decoded(&native(), &frame);
            let name = format!("{} (native, ipv6 {ipv6})", v.name);
            assert_eq!((rec.kind(), stop), (Kind::Uet, None), "{name}");
            let want = UetView {
                entropy: 0xBEEF,
                ..v.want
            };
            assert_eq!(*rec.uet(), want, "{name}");
            assert_eq!(rec.payload_len, v.payload_len, "{name}");
            assert!(!rec.has(flags::HAS_UDP), "{name}: no UDP header");
            assert_eq!(rec.roce_version(), None, "{name}");

            // Without the protocol configured it is some other IP protocol.
            let (rec, stop) = decoded(&Recognition::DEFAULT, &frame);
            assert_eq!(rec.kind(), Kind::Other, "{name}");
            assert_eq!(stop, Some(Stop::Foreign(Foreign::IpProtocol)), "{name}");
        }
    }
}

/// A vector's frame cut by the capture inside each header stops at that
/// header's layer (a UET record all the same, as a RoCE frame with a cut
/// BTH is RoCE's); a UDP length too short for a header makes it invalid;
/// the decode tally counts both by layer.
#[test]
fn cut_and_invalid_headers_are_counted_by_layer() {
    let mut tally = DecodeTally::default();
    let mut by_layer = std::collections::BTreeMap::<&str, u64>::new();
    for v in vectors() {
        let frame = udp_frame(4793, &v.bytes);
        let first = if v.want.pds_type == 1 {
            Layer::Tss
        } else {
            Layer::Pds
        };
        let headers_end = PDS_AT + v.pds_len + v.ses_len;
        for len in PDS_AT..headers_end {
            // Until the prefix is whole a TSS header is not known as one.
            let want = if len < PDS_AT + 2 {
                Layer::Pds
            } else if len < PDS_AT + v.pds_len {
                first
            } else {
                Layer::Ses
            };
            let mut rec = PacketRecord::default();
            let w = decode::decode_walk(&mut rec, ETH, &frame[..len], frame.len() as u32);
            let name = format!("{} cut to {len}", v.name);
            assert_eq!(w.stop, Some(Stop::Cut(want)), "{name}");
            assert_eq!(rec.kind(), Kind::Uet, "{name}");
            assert!(
                rec.has(flags::CUT) && !rec.has(flags::HAS_PAYLOAD_LEN),
                "{name}"
            );
            assert_eq!(rec.uet().entropy, ENTROPY, "{name}");
            tally.frame(&rec, w.stop, ETH);
            *by_layer.entry(want.as_str()).or_default() += 1;

            // The same bytes with the UDP length saying that is all there
            // is: the header cannot be believed.
            let mut short = frame[..len].to_vec();
            let udp_len = (len - PDS_AT + 8) as u16;
            short[14 + 2..14 + 4].copy_from_slice(&(20 + udp_len).to_be_bytes());
            short[14 + 20 + 4..14 + 20 + 6].copy_from_slice(&udp_len.to_be_bytes());
            let (rec, stop) = decoded(&Recognition::DEFAULT, &short);
            assert_eq!(stop, Some(Stop::Invalid(want)), "{name}, by its UDP length");
            assert_eq!(rec.kind(), Kind::Uet, "{name}");
        }
    }
    let facts = tally.facts();
    assert_eq!(facts.not_decoded, 0, "cut UET frames are records");
    assert_eq!(
        facts.parse_failures_by_layer,
        by_layer.iter().map(|(k, n)| (k.to_string(), *n)).collect()
    );
    assert!(by_layer["pds"] > 0 && by_layer["ses"] > 0 && by_layer["tss"] > 0);

    // Types 0 and 15 and next header 7 are none the specification defines.
    let mut rud = vectors().remove(0).bytes;
    for (byte0, byte1) in [(0x00, 0x00), (15 << 3, 0x00), (2 << 3 | 3, 0x80)] {
        rud[0] = byte0;
        rud[1] = byte1;
        let (rec, stop) = decoded(&Recognition::DEFAULT, &udp_frame(4793, &rud));
        assert_eq!(
            stop,
            Some(Stop::Invalid(Layer::Pds)),
            "{byte0:#x} {byte1:#x}"
        );
        assert_eq!(rec.kind(), Kind::Uet);
    }
    // The native mode's entropy header, cut.
    let frame = native_frame(false, 1, &vectors()[0].bytes);
    for len in 34..38 {
        let mut rec = PacketRecord::default();
        let w =
            decode::decode_walk_with(&mut rec, &native(), ETH, &frame[..len], frame.len() as u32);
        assert_eq!(w.stop, Some(Stop::Cut(Layer::UetEntropy)), "cut to {len}");
    }
}

#[test]
fn a_configured_uet_port_moves_the_walk() {
    use rocescope::transport::{parse_udp_port, recognition};
    let reg = recognition(&[parse_udp_port("uet=49150").unwrap()]).unwrap();
    let v = &vectors()[5];
    let (rec, stop) = decoded(&reg, &udp_frame(49150, &v.bytes));
    assert_eq!((rec.kind(), stop), (Kind::Uet, None));
    assert_eq!(*rec.uet(), v.want);
    let (rec, stop) = decoded(&reg, &udp_frame(4793, &v.bytes));
    assert_eq!(rec.kind(), Kind::Other);
    assert_eq!(stop, Some(Stop::Foreign(Foreign::UdpPort)));
    let mut t = DecodeTally::recognising(reg);
    t.not_decoded(Undecoded::Stop(Stop::Foreign(Foreign::UdpPort)));
    assert_eq!(
        t.note(1).as_deref(),
        Some("1 of 1 frames read were not decoded: 1 UDP to another port than 4791 or 49150")
    );
    // Two transports on one port are refused.
    let both = [parse_udp_port("uet=4791").unwrap()];
    assert!(
        recognition(&both)
            .unwrap_err()
            .contains("both roce and uet")
    );
}

fn vector_frames() -> (Vec<Vector>, Vec<Vec<u8>>) {
    let vs = vectors();
    let frames = vs.iter().map(|v| udp_frame(4793, &v.bytes)).collect();
    (vs, frames)
}

/// `analyze` over RoCE and UET frames: the UET ones are counted as UET
/// (never other, never RoCE), have rows with `transport` `uet`, their
/// `psn` the PDS PSN and their `uet_` columns; they make no flow, and the
/// RoCE ones come out as they do alone.
#[test]
fn analyze_counts_uet_frames_and_writes_their_columns() {
    let dir = tempfile::tempdir().unwrap();
    let (vs, uet) = vector_frames();
    let roce = common::corpus::conversation();
    let mut all = roce.clone();
    all.extend(uet.iter().cloned());
    let mixed = dir.path().join("mixed.pcap");
    let alone = dir.path().join("roce.pcap");
    common::corpus::write_pcap(&mixed, &all);
    common::corpus::write_pcap(&alone, &roce);
    let out = dir.path().join("mixed");
    let base = dir.path().join("roce");
    let report = common::rocescope_ok(&[
        "analyze",
        mixed.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    common::rocescope_ok(&[
        "analyze",
        alone.to_str().unwrap(),
        "--out",
        base.to_str().unwrap(),
    ]);
    let summary = |d: &std::path::Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(d.join("summary.json")).unwrap()).unwrap()
    };
    let (s, b) = (summary(&out), summary(&base));
    assert_eq!(s["frames"]["uet"], vs.len());
    assert!(b["frames"].get("uet").is_none(), "absent without UET");
    for k in ["roce", "cnp", "pfc", "pause", "malformed"] {
        assert_eq!(s["frames"][k], b["frames"][k], "{k}");
    }
    assert_eq!(s["input"]["decode"]["not_decoded"], 0);
    assert_eq!(s["totals"], b["totals"], "UET frames make no RoCE flow");
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains(&format!("{} UET", vs.len())), "{text}");

    let packets = Table::read(&out.join("packets.parquet"));
    let transport = packets.strings("transport");
    let kinds = packets.strings("kind");
    let n = roce.len();
    assert_eq!(packets.rows(), n + vs.len());
    for (i, k) in kinds.iter().enumerate().take(n) {
        let want = match k.as_deref() {
            Some("pfc" | "pause") => None,
            _ => Some("roce".to_string()),
        };
        assert_eq!(transport[i], want, "row {i} ({k:?})");
    }
    let psn = packets.ints("psn");
    let roce_version = packets.ints("roce_version");
    let link = packets.strings("link");
    let flow_id = packets.ints("flow_id");
    let column = |name: &str| packets.ints(name);
    for (j, v) in vs.iter().enumerate() {
        let i = n + j;
        let name = v.name;
        assert_eq!(kinds[i].as_deref(), Some("uet"), "{name}");
        assert_eq!(transport[i].as_deref(), Some("uet"), "{name}");
        let p = v.want.present;
        use rocescope::uet_present as bit;
        let has = |b: u16| p & b != 0;
        assert_eq!(
            psn[i],
            has(bit::PSN).then_some(i128::from(v.want.psn)),
            "{name} psn"
        );
        assert_eq!(
            (roce_version[i], &link[i], flow_id[i]),
            (None, &None, None),
            "{name}"
        );
        for c in &rocescope::transport::uet::PACKET_COLUMNS {
            let want = (p & c.present != 0).then(|| match c.value {
                rocescope::transport::uet::Value::U8(f) => i128::from(f(&v.want)),
                rocescope::transport::uet::Value::U16(f) => i128::from(f(&v.want)),
                rocescope::transport::uet::Value::U32(f) => i128::from(f(&v.want)),
                rocescope::transport::uet::Value::U64(f) => i128::from(f(&v.want) as i64),
            });
            assert_eq!(column(c.name)[i], want, "{name}: {}", c.name);
        }
    }
    // UET's columns are null on every RoCE row.
    for c in &rocescope::transport::uet::PACKET_COLUMNS {
        assert!(
            column(c.name)[..n].iter().all(Option::is_none),
            "{}",
            c.name
        );
    }
    // The RoCE flows' rows are as without UET; the UET frames with a PDC
    // id make PDC rows of their own (docs/analysis.md, "UET: PDCs").
    let flows = Table::read(&out.join("flows.parquet"));
    let base_flows = Table::read(&base.join("flows.parquet"));
    let transports = flows.strings("transport");
    let roce_rows = transports
        .iter()
        .filter(|t| t.as_deref() == Some("roce"))
        .count();
    assert_eq!(roce_rows, base_flows.rows());
    let spdcid = flows.ints("uet_spdcid");
    let dest_qp = flows.ints("dest_qp");
    for (i, t) in transports.iter().enumerate() {
        let uet = t.as_deref() == Some("uet");
        assert!(uet || t.as_deref() == Some("roce"), "{t:?}");
        assert_eq!(spdcid[i].is_some(), uet, "row {i}");
        assert_eq!(dest_qp[i].is_none(), uet, "row {i}");
    }
}
