//! The frame walk against etherparse (tests/common/oracle.rs) over a fixed
//! corpus: every Ethernet frame of the real captures (tests/data/) and the
//! bundled samples (pcaps/, the first 40 frames of each), the synth-built
//! decoder corpus, each whole, cut at every length and with every byte of
//! its first 96 flipped three ways. The `etherparse` fuzz target runs the
//! same comparison on any bytes.
use crate::common;
use crate::common::oracle;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use oracle::{Stopped, compare};
use rocescope::proto::linktype;
use rocescope::sources::CaptureReader;
use rocescope::wire::{Foreign, Layer, Stop};

fn ethernet_frames(path: &Path, limit: usize) -> Vec<Vec<u8>> {
    let mut r = CaptureReader::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        if f.linktype == linktype::ETHERNET && out.len() < limit {
            out.push(f.data.to_vec());
        }
    }
    out
}

fn captures(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        .collect();
    v.sort();
    v
}

#[test]
fn the_walk_and_etherparse_agree_on_l2_to_l4() {
    let mut seeds: Vec<Vec<u8>> = Vec::new();
    for cap in captures(&rocescope::testdata::captures_dir()) {
        seeds.extend(ethernet_frames(&cap, usize::MAX));
    }
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pcaps");
    for cap in captures(&samples) {
        seeds.extend(ethernet_frames(&cap, 40));
    }
    seeds.extend(common::corpus::decoder_frames().into_iter().map(|(_, f)| f));
    assert!(seeds.len() > 1000, "{} seed frames", seeds.len());

    let mut by_extent: BTreeMap<Stopped, u64> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut check = |frame: &[u8]| match compare(frame) {
        Ok(s) => *by_extent.entry(s).or_default() += 1,
        Err(e) if failures.len() < 10 => failures.push(e),
        Err(_) => failures.push(String::new()),
    };
    for seed in &seeds {
        for len in 0..=seed.len() {
            check(&seed[..len]);
        }
        let mut m = seed.clone();
        for at in 0..seed.len().min(96) {
            for flip in [0x01, 0x80, 0xFF] {
                m[at] ^= flip;
                check(&m);
                m[at] ^= flip;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} frames where the walk and etherparse disagree; the first:\n{}",
        failures.len(),
        failures
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Most inputs are compared through UDP; every by-design exception occurs.
    let total: u64 = by_extent.values().sum();
    assert!(by_extent[&Stopped::Never] * 2 > total, "{by_extent:?}");
    for s in [
        Stopped::VlanCap,
        Stopped::Fragment,
        Stopped::LaxLength,
        Stopped::Ipv6Extension,
    ] {
        assert!(
            by_extent.get(&s).copied().unwrap_or(0) > 0,
            "{s:?} never seen: {by_extent:?}"
        );
    }
    eprintln!("walk vs etherparse: {total} frames agree ({by_extent:?})");
}

/// `frame`, where the walk stops with `stop` and etherparse reads on:
/// the comparison ends as the by-design difference `extent`.
fn by_design(frame: &[u8], stop: Stop, extent: Stopped) {
    assert_eq!(oracle::ours(frame).1, Some(stop), "{frame:02x?}");
    assert_eq!(compare(frame), Ok(extent), "{frame:02x?}");
}

/// The `etherparse` fuzz target's findings: an IPv6 payload length of 0,
/// which etherparse reads as a jumbogram's (the rest of the frame) and the
/// walk as an empty payload, with a hop-by-hop header or a UDP header after
/// the fixed header. The walk stops there (`invalid.ipv6_ext`, `cut.udp`);
/// the comparison ends before, as a by-design difference.
#[test]
fn an_ipv6_payload_length_of_0_is_a_by_design_difference() {
    let mut frame = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x86, 0xdd];
    frame.extend_from_slice(&[0x60, 0, 0, 0, 0, 0, 0, 64]); // payload length 0, HBH
    frame.extend_from_slice(&[0xfd; 32]);
    frame.extend_from_slice(&[0x11, 0, 1, 4, 0, 0, 0, 0]); // hop-by-hop, then UDP
    by_design(&frame, Stop::Invalid(Layer::Ipv6Ext), Stopped::LaxLength);
    // UDP right after the fixed header.
    frame[14 + 6] = 0x11;
    frame.truncate(14 + 40);
    frame.extend_from_slice(&[0xc0, 0x00, 0x12, 0xb7, 0, 32, 0, 0]);
    assert!(
        oracle::theirs(&frame).0.udp.is_some(),
        "etherparse reads UDP"
    );
    by_design(&frame, Stop::Cut(Layer::Udp), Stopped::LaxLength);
}

/// The `etherparse` fuzz target's findings: EtherType IPv4 before version
/// nibble 6, EtherType IPv6 before a 32-byte IPv4 header (too short for
/// IPv6). The walk stops at the header, etherparse reads the other version.
#[test]
fn an_ip_version_the_ethertype_does_not_name_is_a_by_design_difference() {
    let frame = [
        0x00, 0x00, 0x02, 0xa3, 0xce, 0x2e, 0x4a, 0x79, 0x00, 0x04, 0x01, 0x00, 0x08, 0x00, 0x65,
        0x68, 0x00, 0x30, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x25, 0x54, 0x0a, 0x00, 0x01, 0x01,
        0x0a, 0x00, 0x00, 0x01, 0xc0, 0x00, 0x12, 0xb7, 0x09, 0xe4, 0xff, 0xff, 0x54, 0x0a, 0x00,
        0x01, 0x01, 0x0a, 0x00, 0x00, 0x1f, 0x00, 0x00, 0x00, 0x46, 0x88, 0x8d, 0xa8,
    ];
    by_design(&frame, Stop::Invalid(Layer::Ipv4), Stopped::IpVersion);
    let frame = [
        0x2a, 0x33, 0x00, 0x00, 0x00, 0x16, 0x18, 0x3d, 0x5e, 0xbf, 0x43, 0xb1, 0x86, 0xdd, 0x48,
        0x00, 0x08, 0x00, 0x00, 0x24, 0x2c, 0x2c, 0x2c, 0x2c, 0x2c, 0x00, 0x00, 0x01, 0xc0, 0x00,
        0x12, 0xb7, 0x01, 0xc0, 0x00, 0x32, 0xb6, 0x00, 0x01, 0x00, 0x9a, 0x20, 0x7c, 0x46, 0x88,
        0x8d, 0xa8,
    ];
    by_design(&frame, Stop::Cut(Layer::Ipv6), Stopped::IpVersion);
}

/// The `etherparse` fuzz target's finding: an IPv6 fragment header with a
/// non-zero offset followed by another extension header. The walk ends at
/// the non-first fragment, etherparse reads the next header too.
#[test]
fn a_later_ipv6_fragment_ends_the_walk_by_design() {
    let mut frame = vec![
        0x33, 0x33, 0, 0, 0, 0x16, 0x18, 0x3d, 0x5e, 0xbf, 0x43, 0xb1, 0x86, 0xdd,
    ];
    frame.extend_from_slice(&[0x60, 0, 0x08, 0, 0, 0x24, 44, 0x2c]); // payload 36, fragment
    frame.extend_from_slice(&[0x2c; 32]);
    frame.extend_from_slice(&[44, 0x2c, 0x2c, 0x2c, 0x2c, 0x2c, 0, 0]); // offset 0x585: later
    frame.extend_from_slice(&[0x3b, 0, 0, 0, 0, 0, 0, 0]); // another fragment header
    frame.extend_from_slice(&[
        0xc0, 0, 0x12, 0xb7, 0, 20, 0, 0, 0x88, 0x8d, 0xa8, 0, 0, 0, 0, 0,
    ]);
    assert_eq!(oracle::theirs(&frame).0.ipv6_exts, [(54, 70)]);
    by_design(
        &frame,
        Stop::Foreign(Foreign::IpFragment),
        Stopped::Fragment,
    );
}

/// The `etherparse` fuzz target's finding: MACsec (EtherType 0x88e5) with a
/// VLAN tag inside. The walk stops at the EtherType; the comparison ends
/// at the link layer and does not hold etherparse's inner tag against it.
#[test]
fn vlan_tags_inside_macsec_are_not_compared() {
    let frame = [
        0x20, 0x18, 0x40, 0xff, 0xff, 0xff, 0xff, 0x33, 0x81, 0x02, 0x00, 0x01, 0x88, 0xe5, 0x33,
        0x88, 0xa8, 0xff, 0xff, 0xff, 0x33, 0x81, 0x02, 0x00, 0x01, 0x88, 0xe5, 0x33, 0x88, 0xa8,
        0xff, 0xff, 0xff, 0x62, 0xff,
    ];
    by_design(
        &frame,
        Stop::Foreign(Foreign::EtherType),
        Stopped::LinkExtension,
    );
}

/// The `etherparse` fuzz target's finding: IPv4 protocol 51, an
/// authentication header, then UDP. The walk stops at the protocol,
/// etherparse steps over the header and reads UDP.
#[test]
fn an_ipv4_authentication_header_is_a_by_design_difference() {
    let mut frame = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x08, 0x00];
    frame.extend_from_slice(&[
        0x45, 0, 0, 48, 0, 0, 0x40, 0, 64, 51, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ]);
    frame.extend_from_slice(&[17, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1]); // AH, 12 bytes, next UDP
    frame.extend_from_slice(&[0xc0, 0, 0x12, 0xb7, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert!(
        oracle::theirs(&frame).0.udp.is_some(),
        "etherparse reads UDP"
    );
    by_design(
        &frame,
        Stop::Foreign(Foreign::IpProtocol),
        Stopped::Ipv4Extension,
    );
}
