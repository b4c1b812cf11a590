//! UET through the shared walk (docs/inputs.md, "UET headers"): every PDS
//! type and SES header decoded field by field from byte vectors laid out
//! as the UE Specification 1.0.1 gives them (`common::uet`), over UDP 4793
//! and in the native IP mode; cut and invalid headers counted by layer;
//! `--udp-port uet=PORT`; and `analyze` end to end: UET records counted
//! as UET, in `packets.parquet` with `transport` `uet` and their `uet_`
//! columns, never a RoCE flow.
use std::collections::BTreeSet;

use rocescope::decode::{self, DecodeTally, Undecoded};
use rocescope::transport::uet::UetView;
use rocescope::wire::{self, Foreign, Layer, Recognition, Stop, TransportId, Visit};
use rocescope::{Kind, PacketRecord, RoceView, flags, proto};

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
        assert_eq!(w.stop, Some(Stop::Cut(Layer::Entropy)), "cut to {len}");
    }
}

#[test]
fn a_configured_uet_port_moves_the_walk() {
    use rocescope::transport::{parse_udp_port, recognition};
    let reg = recognition(&[parse_udp_port("uet=49150").unwrap()], &[]).unwrap();
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
        recognition(&both, &[])
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
        use rocescope::transport::uet::uet_present as bit;
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
        let mut rec = PacketRecord::default();
        *rec.uet_mut() = v.want;
        for c in &rocescope::transport::uet::PACKET_COLUMNS {
            use rocescope::transport::packet_columns::Value;
            let want = (u32::from(p) & c.present != 0).then(|| match c.value {
                Value::U8(f) => i128::from(f(&rec)),
                Value::U16(f) => i128::from(f(&rec)),
                Value::U32(f) => i128::from(f(&rec)),
                Value::U64(f) => i128::from(f(&rec) as i64),
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

/// `--ip-proto uet=253` (docs/inputs.md, "Transports and their ports"): a
/// capture of UET in the native IP mode (IPv4 and IPv6, protocol 253, the
/// entropy header first) decodes with it — every frame a UET row whose
/// `uet_entropy` is the entropy header's and `udp_sport` null — and
/// without it is IP of another protocol, decoded not at all; the option
/// joins the run's identity; conflicting numbers are usage errors.
#[test]
fn ip_proto_decodes_a_native_capture() {
    let dir = tempfile::tempdir().unwrap();
    let vs = vectors();
    let entropy = |i: usize| 0x1000 + i as u16;
    let frames: Vec<Vec<u8>> = vs
        .iter()
        .enumerate()
        .map(|(i, v)| native_frame(i % 2 == 1, entropy(i), &v.bytes))
        .collect();
    let cap = dir.path().join("native.pcap");
    common::corpus::write_pcap(&cap, &frames);
    let run = |out: &str, extra: &[&str]| {
        let out = dir.path().join(out);
        let mut args = vec![
            "analyze",
            cap.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        (common::rocescope(&args), out)
    };
    let (r, with) = run("with", &["--ip-proto", "uet=253"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(with.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["frames"]["uet"], vs.len());
    assert_eq!(summary["input"]["decode"]["not_decoded"], 0);
    let packets = Table::read(&with.join("packets.parquet"));
    assert_eq!(packets.rows(), vs.len());
    let got_entropy = packets.ints("uet_entropy");
    let sport = packets.ints("udp_sport");
    let transport = packets.strings("transport");
    let psn = packets.ints("psn");
    for (i, v) in vs.iter().enumerate() {
        let name = v.name;
        assert_eq!(transport[i].as_deref(), Some("uet"), "{name}");
        assert_eq!(
            got_entropy[i],
            Some(i128::from(entropy(i))),
            "{name}: the entropy header's"
        );
        assert_eq!(sport[i], None, "{name}: no UDP");
        let has_psn = v.want.present & rocescope::transport::uet::uet_present::PSN != 0;
        assert_eq!(psn[i], has_psn.then_some(i128::from(v.want.psn)), "{name}");
    }

    // Without the option: another IP protocol, nothing decoded, and the
    // decode note says so.
    let (r, without) = run("without", &[]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        !r.status.success() && err.contains("IP but neither UDP nor GRE"),
        "{err}"
    );
    assert!(
        !without.join("packets.parquet").exists()
            || Table::read(&without.join("packets.parquet")).rows() == 0
    );

    // The option is in the run's identity: on a capture holding frames
    // on 253 and on 254 (IPv4, byte 23 the protocol), `uet=254` is
    // another run (another summary file) than `uet=253`.
    let data = dir.path().join("ds");
    let both = dir.path().join("both.pcap");
    let mut on_254 = frames[0].clone();
    on_254[14 + 9] = 254;
    common::corpus::write_pcap(&both, &[frames.clone(), vec![on_254]].concat());
    let summaries = |protocol: &str| {
        let args = [
            "analyze",
            both.to_str().unwrap(),
            "--dataset",
            data.to_str().unwrap(),
        ];
        let mut args = args.to_vec();
        args.extend(["--host", "h", "--ip-proto", protocol]);
        common::rocescope(&args);
        walkdir(&data.join("summaries"))
    };
    let one = summaries("uet=253");
    assert_eq!(one.len(), 1, "{one:?}");
    assert_eq!(summaries("uet=253"), one, "the same options: the same run");
    assert_eq!(summaries("uet=254").len(), 2);

    for (bad, says) in [
        ("uet=17", "UDP's"),
        ("roce=253", "no transport with a native IP mode"),
        (
            "uet=131",
            "IP protocol 131 is given to both uet (--ip-proto) and IFA",
        ),
    ] {
        let (r, _) = run(&format!("bad{says:.3}"), &["--ip-proto", bad]);
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(!r.status.success(), "{bad}");
        assert!(err.contains(says), "{bad}: {err}");
    }
    // IFA moved off 131 (or off), 131 is UET's to take: accepted, it
    // decodes nothing of this capture (on 253) and says where it looked.
    let (r, _) = run("ifa-off", &["--ip-proto", "uet=131", "--ifa-proto", "none"]);
    let err = String::from_utf8_lossy(&r.stderr);
    let n = vs.len();
    assert!(
        err.contains(&format!("{n} IP but neither UDP nor GRE nor 131 (uet)")),
        "{err}"
    );
}

/// The files under `dir`, by name.
fn walkdir(dir: &std::path::Path) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                found.insert(p.file_name().unwrap().to_string_lossy().into_owned());
            }
        }
    }
    found
}

/// Frame `f` (Ethernet, IPv4) the other way: its addresses swapped.
fn swapped(f: &[u8]) -> Vec<u8> {
    let mut f = f.to_vec();
    let (a, b) = (f[26..30].to_vec(), f[30..34].to_vec());
    f[26..30].copy_from_slice(&b);
    f[30..34].copy_from_slice(&a);
    f
}

/// The frames of capture `path`, bytes as written.
fn frames_in(path: &std::path::Path) -> Vec<Vec<u8>> {
    let mut reader = rocescope::sources::CaptureReader::open(path).unwrap();
    let mut got = Vec::new();
    while let Some(f) = reader.next_frame().unwrap() {
        got.push(f.data.to_vec());
    }
    got
}

/// `extract --uet-pdc SRC,DST,SPDCID` (docs/wireshark.md, "UET"): the
/// frames from SRC to DST of that PDC id and those back to it, from a
/// capture of every test packet both ways (UDP, then the native mode with
/// `--ip-proto`); the display filter is the PDC's and Decode As follows
/// the run's recognition.
#[test]
fn extract_takes_a_uet_pdcs_frames_both_ways() {
    use rocescope::transport::uet::uet_present as bit;
    let dir = tempfile::tempdir().unwrap();
    let spdcid = 0x0102;
    for native in [false, true] {
        let mut frames = Vec::new();
        for v in vectors() {
            let f = if native {
                native_frame(false, 7, &v.bytes)
            } else {
                udp_frame(4793, &v.bytes)
            };
            frames.push(swapped(&f));
            frames.push(f);
        }
        // What the PDC holds: 10.0.0.1 -> 10.0.0.2 from 0x0102, and back
        // to it (the record's view, as the decoder read it).
        let reg = if native {
            self::native()
        } else {
            Recognition::DEFAULT
        };
        let a = std::net::Ipv4Addr::new(10, 0, 0, 1)
            .to_ipv6_mapped()
            .octets();
        let want: Vec<&Vec<u8>> = frames
            .iter()
            .filter(|f| {
                let (rec, _) = decoded(&reg, f);
                let u = rec.uet();
                let forward = rec.src_ip == a && u.present & bit::PDC != 0 && u.spdcid == spdcid;
                let back = rec.dst_ip == a && u.present & bit::DPDCID != 0 && u.dpdcid == spdcid;
                forward || back
            })
            .collect();
        assert!(want.len() >= 4, "{}", want.len());
        let from = |ip: [u8; 4]| want.iter().any(|f| f[26..30] == ip);
        assert!(from([10, 0, 0, 1]) && from([10, 0, 0, 2]), "both ways");
        let cap = dir.path().join(format!("both-{native}.pcap"));
        common::corpus::write_pcap(&cap, &frames);
        let out = dir.path().join(format!("pdc-{native}.pcapng"));
        let mut args = vec![
            "extract",
            cap.to_str().unwrap(),
            "--uet-pdc",
            "10.0.0.1,10.0.0.2,0x0102",
            "--out",
            out.to_str().unwrap(),
        ];
        if native {
            args.extend(["--ip-proto", "uet=253"]);
        }
        let r = common::rocescope_ok(&args);
        let text = String::from_utf8_lossy(&r.stdout);
        assert!(
            text.contains(&format!(
                "{} frames of UET PDC 258 from 10.0.0.1 to 10.0.0.2",
                want.len()
            )),
            "{text}"
        );
        assert!(text.contains(
            "(ip.src==10.0.0.1 && ip.dst==10.0.0.2 && uet.pds.spdcid==258) || \
             (ip.src==10.0.0.2 && ip.dst==10.0.0.1 && uet.pds.dpdcid==258)"
        ));
        let decode_as = if native {
            "-d udp.port==4793,uet -d ip.proto==253,uet.entropy"
        } else {
            "-d udp.port==4793,uet"
        };
        assert!(text.contains(&format!("decode as: {decode_as}")), "{text}");
        // The frames written are those, in order, bytes unchanged.
        let got = frames_in(&out);
        assert_eq!(got.iter().collect::<Vec<_>>(), want, "native {native}");
        // That PDC direction's row of flows.parquet (one tap): `extract
        // --flow` writes the same frames, with the same Decode As.
        let tables = dir.path().join(format!("tables-{native}"));
        let options: &[&str] = if native {
            &["--ip-proto", "uet=253"]
        } else {
            &[]
        };
        common::analyze_into(&cap, &tables, options);
        let t = Table::read(&tables.join("flows.parquet"));
        let (ids, src, spdcid) = (t.ints("flow_id"), t.strings("src_ip"), t.ints("uet_spdcid"));
        let row = (0..t.rows())
            .find(|&i| src[i].as_deref() == Some("10.0.0.1") && spdcid[i] == Some(0x0102))
            .expect("the PDC direction's row");
        // Its Decode As is what its frames came as (docs/tables.md).
        let row_decode_as = if native {
            "ip.proto==253,uet.entropy"
        } else {
            "udp.port==4793,uet"
        };
        assert_eq!(t.strings("decode_as")[row].as_deref(), Some(row_decode_as));
        let id = ids[row].unwrap().to_string();
        let by_row = dir.path().join(format!("flow-{native}.pcapng"));
        let mut args = vec!["extract", cap.to_str().unwrap(), "--flow", &id];
        args.extend(["--out", by_row.to_str().unwrap()]);
        args.extend(options);
        let r = common::rocescope_ok(&args);
        let text = String::from_utf8_lossy(&r.stdout);
        assert!(text.contains(&format!("decode as: {decode_as}")), "{text}");
        assert_eq!(frames_in(&by_row), got, "native {native}: {text}");
    }
    // No frame of that PDC: a usage error that says where PDCs are listed.
    let cap = dir.path().join("both-false.pcap");
    let out = dir.path().join("none.pcapng");
    let r = common::rocescope(&[
        "extract",
        cap.to_str().unwrap(),
        "--uet-pdc",
        "10.0.0.1,10.0.0.2,999",
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(!r.status.success() && err.contains("uet_spdcid"), "{err}");
    let r = common::rocescope(&[
        "extract",
        cap.to_str().unwrap(),
        "--uet-pdc",
        "10.0.0.1,x,1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&r.stderr).contains("not an IPv4 or IPv6 address"));
}

/// `report --html`: with UET frames in the run the capture line counts
/// them and the flow table has a `transport` column; a RoCE-only page has
/// neither (it stays as it was).
#[test]
fn the_html_page_shows_the_transport_once_uet_is_there() {
    let dir = tempfile::tempdir().unwrap();
    let (vs, uet) = vector_frames();
    let roce = common::corpus::conversation();
    let mixed = dir.path().join("mixed.pcap");
    let alone = dir.path().join("roce.pcap");
    common::corpus::write_pcap(&mixed, &[roce.clone(), uet].concat());
    common::corpus::write_pcap(&alone, &roce);
    let page = |cap: &std::path::Path| {
        let html = dir.path().join("page.html");
        common::rocescope_ok(&[
            "report",
            cap.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ]);
        std::fs::read_to_string(&html).unwrap()
    };
    let h = page(&mixed);
    assert!(
        h.contains(&format!(", {} UET,", vs.len())),
        "the capture line"
    );
    assert!(h.contains("<th>id</th><th>transport</th><th>interface</th>"));
    assert!(
        h.contains("</td><td>roce</td><td>"),
        "each flow's transport"
    );
    // Its UET lines (the totals, ECN) and the RoCE flows said as such.
    assert!(h.contains("<p class=facts>UET: ") && h.contains("<p class=facts>UET ECN: "));
    assert!(h.contains(" RoCE flows · "));
    let h = page(&alone);
    assert!(!h.contains("<th>transport</th>") && !h.contains(" UET"));
    assert!(!h.contains("RoCE flow"));
}

/// `extract --finding uet-receiver-resources` (docs/wireshark.md, "UET")
/// on the test packets both ways, whose NACK_CCX says NO_PKT_BUFFER: the
/// finding names the PDC rows of the directions that sent such NACKs and
/// carries their filter, and `extract` writes their PDCs' frames — those
/// whose bytes carry the PDC id, read here from the PDS header at the
/// offsets the spec gives (the sending end's id at byte 8, the receiving
/// end's at byte 10; none in TSS, RUDI and UUD headers, no `dpdcid` in a
/// SYN request), not by the decoder.
#[test]
fn extract_of_a_receiver_resources_finding_takes_its_pdcs_frames() {
    let dir = tempfile::tempdir().unwrap();
    let (_, uet) = vector_frames();
    let frames: Vec<Vec<u8>> = uet.iter().flat_map(|f| [swapped(f), f.clone()]).collect();
    let cap = dir.path().join("both.pcap");
    common::corpus::write_pcap(&cap, &frames);
    let out = dir.path().join("out");
    common::analyze_into(&cap, &out, &[]);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let f = summary["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "uet-receiver-resources")
        .unwrap_or_else(|| panic!("{summary}"));
    let named: Vec<i128> = f["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| i128::from(v.as_u64().unwrap()))
        .collect();
    assert!(!named.is_empty(), "{f}");
    let t = Table::read(&out.join("flows.parquet"));
    let (id, src, spdcid) = (t.ints("flow_id"), t.strings("src_ip"), t.ints("uet_spdcid"));
    let dst = t.strings("dst_ip");
    let v4 = |s: &Option<String>| {
        let ip: std::net::Ipv4Addr = s.as_deref().unwrap().parse().unwrap();
        ip.octets().to_vec()
    };
    // (source, destination, PDC id) of each direction named.
    let pdcs: Vec<(Vec<u8>, Vec<u8>, u16)> = (0..t.rows())
        .filter(|&i| named.contains(&id[i].unwrap()))
        .map(|i| (v4(&src[i]), v4(&dst[i]), spdcid[i].unwrap() as u16))
        .collect();
    assert_eq!(pdcs.len(), named.len());
    let be16 = |f: &[u8], at: usize| u16::from_be_bytes([f[PDS_AT + at], f[PDS_AT + at + 1]]);
    let want: Vec<&Vec<u8>> = frames
        .iter()
        .filter(|f| {
            let prefix = be16(f, 0);
            let pds_type = prefix >> 11;
            // TSS, RUDI request and response, UUD: no PDC ids.
            if matches!(pds_type, 1 | 4 | 5 | 6) {
                return false;
            }
            let request = matches!(pds_type, 2 | 3 | 13 | 14);
            let syn = request && prefix & 0x04 != 0;
            let (s, d) = (&f[26..30], &f[30..34]);
            pdcs.iter().any(|(a, b, pdc)| {
                (s == a && d == b && be16(f, 8) == *pdc)
                    || (!syn && s == b && d == a && be16(f, 10) == *pdc)
            })
        })
        .collect();
    assert!(!want.is_empty());
    let file = dir.path().join("resources.pcapng");
    let r = common::rocescope_ok(&[
        "extract",
        cap.to_str().unwrap(),
        "--finding",
        "uet-receiver-resources",
        "--out",
        file.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&r.stdout);
    let filter = f["display_filter"].as_str().unwrap();
    assert!(filter.contains("uet.pds.spdcid=="), "{filter}");
    assert!(
        text.contains(&format!(
            "display filter (for the original captures): {filter}\n"
        )),
        "{text}"
    );
    assert!(
        text.contains("decode as: -d udp.port==4793,uet\n"),
        "{text}"
    );
    let got = frames_in(&file);
    assert_eq!(got.iter().collect::<Vec<_>>(), want, "{text}");
}
