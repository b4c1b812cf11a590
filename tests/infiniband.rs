//! Native InfiniBand captures: LINKTYPE_INFINIBAND (247) and ERF records of
//! type InfiniBand in LINKTYPE_ERF (197), what `ibdump` writes. The packets
//! are built by `rocescope::synth::ib_frame` (the ground truth); tshark,
//! which dissects both link types, must read the same LRH, GRH, BTH and
//! extension header fields and the same carried ICRC and VCRC as the
//! decoder. Then the ERF capture, with a bad record among its packets, goes
//! through `rocescope analyze`: exact rows, the bad record reported with its
//! file offset and counted (docs/inputs.md, "Link types"; docs/tables.md).
//!
//! Wireshark 4.0 reads LINKTYPE_ERF but not LINKTYPE_INFINIBAND from a pcap
//! file: tshark reads the ERF capture, whose records hold the very bytes of
//! the 247 capture, and the decoder's records of both are held equal.
//!
//! The tshark comparisons are skipped (with a message) when tshark is not
//! installed; the end-to-end checks are not.
use crate::common;

use std::net::Ipv6Addr;
use std::path::Path;
use std::process::Command;

use common::tshark::{self, num};
use common::*;
use rocescope::proto::linktype;
use rocescope::synth::ib_frame::{GrhFields, IbFrame, LrhFields, erf_record};
use rocescope::synth::{Bth, CaptureWrite, ExtHeaders, IcrcMode, PcapWriter, WireFrame};
use rocescope::{PacketRecord, flags};

const T0: u64 = 1_760_000_000_000_000_000;
const GID_A: &str = "fe80::2c9:300:1:a";
const GID_B: &str = "fe80::2c9:300:1:b";

fn gid(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// Packet `i`: values spread over the fields.
fn packet(i: u32, opcode: u8, global: bool) -> IbFrame {
    IbFrame {
        lrh: LrhFields {
            vl: (i % 8) as u8,
            lver: 0,
            sl: (i % 16) as u8,
            dlid: 0x10 + i as u16,
            slid: 0x20,
        },
        grh: global.then_some(GrhFields {
            tclass: 0x20 + i as u8,
            flow_label: 0x1_2340 + i,
            hop_limit: 0x40,
            sgid: gid(GID_A),
            dgid: gid(GID_B),
        }),
        bth: Bth {
            opcode,
            se: i.is_multiple_of(3),
            migreq: false,
            pad_count: None,
            tver: 0,
            pkey: 0xFFFF,
            fecn: i % 4 == 1,
            becn: i % 5 == 2,
            dest_qp: 0x400 + (i % 3),
            ack_req: i % 2 == 1,
            psn: 0x1000 + i,
        },
        ext: ExtHeaders {
            deth_qkey: 0x8001_0000 | i,
            deth_src_qp: 0x77,
            reth_va: 0x7F00_0000_0000_0000 | u64::from(i),
            reth_rkey: 0x1000 + i,
            reth_len: 256 * i,
            aeth_syndrome: 0x1F,
            aeth_msn: 0x100 + i,
            imm: 0xC0DE_0000 | i,
            ..ExtHeaders::default()
        },
        payload_len: [0, 3, 64, 256][i as usize % 4],
        payload_seed: i as u8,
        ..IbFrame::default()
    }
}

/// What the captures hold, in order: (packet, bytes kept when cut).
fn packets() -> Vec<(IbFrame, Option<usize>)> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut next = || {
        i += 1;
        i
    };
    // RC sends, writes, ACKs, UD and DC, with and without a GRH.
    for opcode in [0x04, 0x06, 0x0A, 0x0B, 0x11, 0x64, 0x65, 0x4A, 0x44] {
        out.push((packet(next(), opcode, false), None));
        out.push((packet(next(), opcode, true), None));
    }
    // A bad ICRC, a bad VCRC, a packet cut inside its payload.
    let mut f = packet(next(), 0x0A, false);
    f.icrc = IcrcMode::Corrupt;
    out.push((f, None));
    let mut f = packet(next(), 0x0A, true);
    f.vcrc = IcrcMode::Corrupt;
    out.push((f, None));
    let mut f = packet(next(), 0x0A, false);
    f.payload_len = 256;
    out.push((f, Some(8 + 12 + 16 + 10)));
    out
}

fn bytes(f: &IbFrame) -> Vec<u8> {
    let mut b = Vec::new();
    f.write(&mut b);
    b
}

/// The record a correct decoder gives (from what was built).
fn expected(f: &IbFrame, cut: Option<usize>) -> PacketRecord {
    let mut r = PacketRecord {
        kind: rocescope::Kind::Roce as u8,
        flags: flags::IB_LRH | flags::HAS_BTH,
        ..PacketRecord::default().with_roce(rocescope::RoceView {
            opcode: f.bth.opcode,
            pad_count: f.effective_pad_count(),
            pkey: f.bth.pkey,
            dest_qp: f.bth.dest_qp,
            psn: f.bth.psn,
            ..rocescope::RoceView::default()
        })
    };
    match f.grh {
        Some(g) => {
            r.flags |= flags::HAS_GRH;
            r.src_ip = g.sgid.octets();
            r.dst_ip = g.dgid.octets();
        }
        None => {
            r.src_ip = rocescope::proto::lrh::lid_addr(f.lrh.slid);
            r.dst_ip = rocescope::proto::lrh::lid_addr(f.lrh.dlid);
        }
    }
    for (on, flag) in [
        (f.bth.se, flags::SE),
        (f.bth.fecn, flags::FECN),
        (f.bth.becn, flags::BECN),
        (f.bth.ack_req, flags::ACK_REQ),
    ] {
        if on {
            r.flags |= flag;
        }
    }
    r.payload_len = f.payload_len as u32;
    r.flags |= flags::HAS_PAYLOAD_LEN;
    let mask = f.ext_mask();
    let e = &f.ext;
    let has = |bit| mask & bit != 0;
    use rocescope::proto::ib::ext;
    let whole = cut.is_none();
    if has(ext::DETH) {
        r.flags |= flags::HAS_DETH;
        (r.roce_mut().deth_qkey, r.roce_mut().deth_src_qp) = (e.deth_qkey, e.deth_src_qp);
    }
    if has(ext::RETH) {
        r.flags |= flags::HAS_RETH;
        (
            r.roce_mut().reth_va,
            r.roce_mut().reth_rkey,
            r.roce_mut().reth_len,
        ) = (e.reth_va, e.reth_rkey, e.reth_len);
    }
    if has(ext::AETH) {
        r.flags |= flags::HAS_AETH;
        (r.roce_mut().aeth_syndrome, r.roce_mut().aeth_msn) = (e.aeth_syndrome, e.aeth_msn);
    }
    if has(ext::IMMDT) {
        r.flags |= flags::HAS_IMMDT;
        r.roce_mut().imm = e.imm;
    }
    let b = bytes(f);
    if whole {
        let end = f.packet_len();
        r.roce_mut().icrc = u32::from_le_bytes(b[end - 4..end].try_into().unwrap());
        r.flags |= flags::ICRC_CHECKED | flags::VCRC_CHECKED;
        if f.icrc == IcrcMode::Valid {
            r.flags |= flags::ICRC_OK;
        }
        if f.vcrc == IcrcMode::Valid {
            r.flags |= flags::VCRC_OK;
        }
    } else {
        r.flags |= flags::CUT;
    }
    r.frame_len = b.len() as u32;
    r.cap_len = cut.unwrap_or(b.len()) as u32;
    r
}

/// Writes the packets as a LINKTYPE_INFINIBAND capture, or as ERF records
/// with a bad one (`rlen` 8, shorter than its header) after the third.
fn write(path: &Path, erf: bool) {
    let lt = if erf {
        linktype::ERF
    } else {
        linktype::INFINIBAND
    };
    let mut w = PcapWriter::create(path, lt, 0).unwrap();
    for (n, (f, cut)) in packets().iter().enumerate() {
        let b = bytes(f);
        let ts = T0 + n as u64 * 1_000;
        let kept = &b[..cut.unwrap_or(b.len())];
        if erf {
            let mut rec = Vec::new();
            erf_record(ts, kept, &mut rec);
            // The ERF header says the wire length; the pcap one the record's.
            rec[14..16].copy_from_slice(&(b.len() as u16).to_be_bytes());
            w.write_frame(0, ts, &rec).unwrap();
            if n == 2 {
                // To a QP of no flow: tshark, which reads the record
                // regardless of its rlen, matches it with no flow's filter.
                let mut other = *f;
                other.bth.dest_qp = 0x999;
                let mut bad = Vec::new();
                erf_record(ts, &bytes(&other), &mut bad);
                bad[10..12].copy_from_slice(&8u16.to_be_bytes());
                w.write_frame(0, ts, &bad).unwrap();
            }
        } else {
            w.write_frame_orig(0, ts, kept, b.len() as u32).unwrap();
        }
    }
    w.finish().unwrap();
}

/// The decoder's records of the packets, as one link type holds them.
fn decode_all(erf: bool) -> Vec<PacketRecord> {
    let lt = if erf {
        linktype::ERF
    } else {
        linktype::INFINIBAND
    };
    packets()
        .iter()
        .map(|(f, cut)| {
            let b = bytes(f);
            let kept = &b[..cut.unwrap_or(b.len())];
            let data = if erf {
                let mut rec = Vec::new();
                erf_record(0, kept, &mut rec);
                rec[14..16].copy_from_slice(&(b.len() as u16).to_be_bytes());
                rec
            } else {
                kept.to_vec()
            };
            rocescope::decode::decode(lt, &data, b.len() as u32)
        })
        .collect()
}

#[test]
fn the_decoder_reads_what_was_built_on_both_link_types() {
    for erf in [false, true] {
        let want: Vec<_> = packets().iter().map(|(f, c)| expected(f, *c)).collect();
        let got = decode_all(erf);
        for (n, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "packet {n} (erf {erf})");
        }
    }
}

const FIELDS: &[&str] = &[
    "infiniband.lrh.vl",
    "infiniband.lrh.sl",
    "infiniband.lrh.lnh",
    "infiniband.lrh.dlid",
    "infiniband.lrh.slid",
    "infiniband.lrh.pktlen",
    "infiniband.grh.sgid",
    "infiniband.grh.dgid",
    "infiniband.bth.opcode",
    "infiniband.bth.se",
    "infiniband.bth.padcnt",
    "infiniband.bth.p_key",
    "infiniband.bth.destqp",
    "infiniband.bth.a",
    "infiniband.bth.psn",
    "infiniband.deth.q_key",
    "infiniband.deth.srcqp",
    "infiniband.reth.va",
    "infiniband.reth.dmalen",
    "infiniband.aeth.syndrome",
    "infiniband.aeth.msn",
    "infiniband.invariant.crc",
    "infiniband.variant.crc",
];

/// tshark's fields of `path`, `None` without tshark.
fn tshark(path: &Path) -> Option<Vec<tshark::Row>> {
    // RPC-over-RDMA's heuristic claims some payloads and throws before
    // Wireshark shows the CRCs.
    tshark::available().then(|| {
        tshark::fields(
            path,
            &["--disable-protocol", "rpcordma", "-E", "occurrence=f"],
            FIELDS,
        )
    })
}

#[test]
fn tshark_reads_the_same_fields_from_the_erf_capture() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ib.erf.pcap");
    write(&path, true);
    let recs = decode_all(true);
    assert_eq!(
        recs,
        decode_all(false),
        "the same packets on both link types"
    );
    let Some(rows) = tshark(&path) else {
        eprintln!("SKIPPED: tshark is not installed; InfiniBand parity NOT checked");
        return;
    };
    let built = packets();
    // The ERF capture's bad record is a row of its own for tshark.
    let rows: Vec<_> = rows
        .into_iter()
        .enumerate()
        .filter(|&(n, _)| n != 3)
        .map(|(_, r)| r)
        .collect();
    assert_eq!(rows.len(), built.len());
    let mut compared = 0;
    let mut crcs = 0;
    for (n, ((f, cut), (row, rec))) in built.iter().zip(rows.iter().zip(&recs)).enumerate() {
        let mut eq = |field: &str, ours: u64| {
            let theirs = row.get(field).map(|v| num(v));
            assert_eq!(theirs, Some(ours), "packet {n} {field}");
            compared += 1;
        };
        eq("infiniband.lrh.vl", f.lrh.vl.into());
        eq("infiniband.lrh.sl", f.lrh.sl.into());
        eq("infiniband.lrh.lnh", if f.grh.is_some() { 3 } else { 2 });
        eq("infiniband.lrh.dlid", f.lrh.dlid.into());
        eq("infiniband.lrh.slid", f.lrh.slid.into());
        eq("infiniband.lrh.pktlen", (f.packet_len() / 4) as u64);
        eq("infiniband.bth.opcode", rec.roce().opcode.into());
        eq("infiniband.bth.se", rec.has(flags::SE).into());
        eq("infiniband.bth.padcnt", rec.roce().pad_count.into());
        eq("infiniband.bth.p_key", rec.roce().pkey.into());
        eq("infiniband.bth.destqp", rec.roce().dest_qp.into());
        eq("infiniband.bth.a", rec.has(flags::ACK_REQ).into());
        eq("infiniband.bth.psn", rec.roce().psn.into());
        if rec.has(flags::HAS_DETH) {
            eq("infiniband.deth.q_key", rec.roce().deth_qkey.into());
            eq("infiniband.deth.srcqp", rec.roce().deth_src_qp.into());
        }
        if rec.has(flags::HAS_RETH) {
            eq("infiniband.reth.va", rec.roce().reth_va);
            eq("infiniband.reth.dmalen", rec.roce().reth_len.into());
        }
        if rec.has(flags::HAS_AETH) {
            eq("infiniband.aeth.syndrome", rec.roce().aeth_syndrome.into());
            eq("infiniband.aeth.msn", rec.roce().aeth_msn.into());
        }
        // Wireshark shows both CRCs read big-endian (they are carried
        // least significant byte first), not for ACKs nor MADs.
        if cut.is_none() && row.contains_key("infiniband.invariant.crc") {
            let b = bytes(f);
            let v = u16::from_le_bytes([b[b.len() - 2], b[b.len() - 1]]);
            eq(
                "infiniband.invariant.crc",
                rec.roce().icrc.swap_bytes().into(),
            );
            eq("infiniband.variant.crc", v.swap_bytes().into());
            crcs += 1;
        }
        if let Some(g) = f.grh {
            let sgid: Ipv6Addr = row["infiniband.grh.sgid"].parse().unwrap();
            let dgid: Ipv6Addr = row["infiniband.grh.dgid"].parse().unwrap();
            assert_eq!((sgid, dgid), (g.sgid, g.dgid), "packet {n}");
            assert_eq!((rec.src_ip, rec.dst_ip), (sgid.octets(), dgid.octets()));
        }
    }
    assert!(compared > 300, "only {compared} comparisons");
    assert_eq!(crcs, 17, "packets whose CRCs tshark shows");
}

#[test]
fn an_erf_capture_analyses_end_to_end_and_its_bad_record_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let cap_erf = dir.path().join("ibdump.pcap");
    write(&cap_erf, true);
    let out = dir.path().join("out");
    let run = rocescope_ok(&[
        "analyze",
        cap_erf.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    // The bad record: fourth packet record, after the 24-byte file header
    // and three records of 16 + 16 + packet bytes.
    let offset: usize = 24
        + packets()[..3]
            .iter()
            .map(|(f, _)| 16 + 16 + f.wire_len())
            .sum::<usize>();
    assert!(
        stderr.contains(
            "frame 4 (interface 0) is a bad ERF record: its rlen is shorter than its ERF headers"
        ) && stderr.contains(&offset.to_string()),
        "{stderr}"
    );
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["frames"]["roce"], 21, "{}", s["frames"]);
    assert_eq!(
        s["input"]["decode"]["not_decoded_by_reason"]["invalid.erf"],
        1
    );

    let p = Table::read(&out.join("packets.parquet"));
    assert_eq!(p.rows(), 21);
    assert_eq!(p.strings("link"), vec![Some("ib".to_string()); 21]);
    let src = p.strings("src_ip");
    assert_eq!(src[0].as_deref(), Some("lid:32"));
    assert_eq!(src[1].as_deref(), Some(GID_A));
    assert_eq!(p.strings("dst_ip")[0].as_deref(), Some("lid:17"));
    let bad = |col: &str| -> Vec<usize> {
        p.bools(col)
            .iter()
            .enumerate()
            .filter(|(_, v)| **v == Some(false))
            .map(|(i, _)| i)
            .collect()
    };
    assert_eq!(bad("icrc_ok"), [18]);
    assert_eq!(bad("vcrc_ok"), [19]);
    assert_eq!(p.bools("vcrc_ok")[20], None, "the cut packet");
    // No IP header on InfiniBand: no DSCP, ECN, UDP port or MACs.
    for col in ["dscp", "ecn", "udp_sport"] {
        assert!(p.ints(col).iter().all(Option::is_none), "{col}");
    }
    assert!(p.strings("src_mac").iter().all(Option::is_none));

    let fl = Table::read(&out.join("flows.parquet"));
    assert_eq!(fl.strings("link"), vec![Some("ib".to_string()); fl.rows()]);
    // Built: FECN on packets 1, 5, 9, 13, 17, 21 (i % 4 == 1), BECN on 2, 7,
    // 12, 17 (i % 5 == 2); i is 1-based, the 21st packet is the cut one.
    let total = |c: &str| fl.ints(c).iter().map(|v| v.unwrap()).sum::<i128>();
    assert_eq!(total("becn"), 4);
    assert_eq!(total("packets"), 21);
    // FECN counts where CE does, on requests and UD sends: 1 (SEND), 5
    // (WRITE Only), 13 (UD SEND), 17 (DC SEND), 21 (WRITE Only, cut); 9 is
    // an ACK.
    assert_eq!(total("ce"), 5);
    assert_eq!(total("icrc_errors"), 2);
    // The same packets as a LINKTYPE_INFINIBAND capture: the same rows.
    let cap = dir.path().join("ib.pcap");
    write(&cap, false);
    let out247 = dir.path().join("out247");
    let run = rocescope_ok(&[
        "analyze",
        cap.to_str().unwrap(),
        "--out",
        out247.to_str().unwrap(),
    ]);
    assert!(!String::from_utf8_lossy(&run.stderr).contains("warning"));
    let p247 = Table::read(&out247.join("packets.parquet"));
    for col in ["src_ip", "dst_ip", "link"] {
        assert_eq!(p247.strings(col), p.strings(col), "{col}");
    }
    for col in ["psn", "dest_qp", "frame_len", "cap_len", "payload_len"] {
        assert_eq!(p247.ints(col), p.ints(col), "{col}");
    }
    // Each flow's Wireshark filter shows exactly its frames (tshark reads
    // the ERF capture).
    if tshark(&cap_erf).is_some() {
        let filters = fl.strings("display_filter");
        for (i, packets) in fl.ints("packets").iter().enumerate() {
            let filter = filters[i].clone().unwrap();
            let out = Command::new("tshark")
                .arg("-r")
                .arg(&cap_erf)
                .args(["-Y", &filter, "-T", "fields", "-e", "frame.number"])
                .output()
                .unwrap();
            assert!(out.status.success(), "{filter}");
            let shown = String::from_utf8_lossy(&out.stdout).lines().count() as i128;
            assert_eq!(Some(shown), *packets, "{filter}");
        }
    }
    let services: std::collections::BTreeSet<_> =
        fl.strings("service").into_iter().flatten().collect();
    assert_eq!(services.into_iter().collect::<Vec<_>>(), ["RC", "RD", "UD"]);
}

/// A real ConnectX `ibdump` frame with a GRH (LNH = 3) and built frames
/// without one (LNH = 2) in an ERF capture: every ICRC and VCRC verifies,
/// nothing is called corruption (docs/inputs.md, "Link types").
#[test]
fn a_real_ibdump_frame_with_a_grh_passes_its_icrc_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("ibdump.pcap");
    let mut w = PcapWriter::create(&cap, linktype::ERF, 0).unwrap();
    let real = rocescope::testdata::ibdump_grh_frame();
    for n in 0..4u64 {
        let mut rec = Vec::new();
        if n % 2 == 0 {
            erf_record(T0 + n * 1_000_000, &real, &mut rec);
        } else {
            erf_record(
                T0 + n * 1_000_000,
                &bytes(&packet(n as u32, 0x04, false)),
                &mut rec,
            );
        }
        w.write_frame(0, T0 + n * 1_000_000, &rec).unwrap();
    }
    w.finish().unwrap();
    let out = dir.path().join("out");
    rocescope_ok(&[
        "analyze",
        cap.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let p = Table::read(&out.join("packets.parquet"));
    assert_eq!(p.bools("icrc_ok"), vec![Some(true); 4]);
    assert_eq!(p.bools("vcrc_ok"), vec![Some(true); 4]);
    assert_eq!(
        p.ints("dest_qp"),
        [Some(0xFF_FFFF), Some(0x401), Some(0xFF_FFFF), Some(0x400)]
    );
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        (&s["taps"][0]["icrc_checked"], &s["taps"][0]["icrc_failed"]),
        (&serde_json::json!(4), &serde_json::json!(0))
    );
    let findings = s["findings"].as_array().unwrap();
    assert!(
        findings.iter().all(|f| f["id"] != "corrupted-frames"),
        "{findings:?}"
    );
}
