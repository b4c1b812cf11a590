//! Which analyzer shard a record goes to when the analysis is split across
//! threads by flow key (docs/live.md, "Sharded analysis": the design, what
//! is merged and how; this is its routing rule).
//!
//! Every relation the analyzer draws between records of different flows
//! stays within one **unordered pair of addresses**: a request flow and the
//! response flow paired with it run between the same two hosts in opposite
//! directions, a CNP goes from the request flow's receiver back to its
//! sender, the cross-tap copies of a frame and a tap's mirror copies carry
//! the same addresses, and the host-pair aggregates (ECMP, DCQCN) are keyed
//! by the pair. So a record goes to the shard its address pair hashes to,
//! both directions alike. The QP numbers cannot be the key: the two
//! directions of a connection name unrelated QPs, and only the analysis
//! learns which belong together.
//!
//! PFC and PAUSE frames name no address: every shard attributes pauses to
//! its flows (stalls, `paused_ns`), so they go to **every** shard, and one
//! of them counts them (see the design).
//!
//! A summary-mode delta (`live --mode summary`: frames of one flow the
//! kernel counted) goes where its flow's records go: the shard of its flow
//! key's address pair ([`delta_shard`]); so do the pairings the analyzer
//! of that shard makes, which pair flows between the same two hosts.
//!
//! The hash is fixed (no per-process seed): the same record goes to the
//! same shard in every run, so a sharded run is repeatable.
use rocescope_common::PacketRecord;
use rocescope_common::summary::FlowDelta;

pub mod analyzers;
pub mod parallel;
pub mod running;
pub mod summary;
pub mod whole;
pub use analyzers::{Merged, Shards};
pub use parallel::Parallel;

/// The most analyzers a run may split its analysis across (`--analyzers`).
pub const MAX_ANALYZERS: usize = 64;

/// Where a record goes among `n` shards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shard {
    /// The shard of its address pair.
    One(usize),
    /// Every shard (PFC and PAUSE: link-level, no address).
    Every,
}

/// The shard of `rec` among `shards` (at least 1).
pub fn shard_of(rec: &PacketRecord, shards: usize) -> Shard {
    if rec.kind().link_level() {
        Shard::Every
    } else {
        Shard::One(pair_shard(&rec.src_ip, &rec.dst_ip, shards))
    }
}

/// The shard of summary-mode delta `d` among `shards`: its flow's
/// (the records of the flow and of the flow paired with it go there too).
pub fn delta_shard(d: &FlowDelta, shards: usize) -> usize {
    pair_shard(&d.key.src_ip, &d.key.dst_ip, shards)
}

/// The shard of the unordered address pair `a`, `b` among `shards`: a
/// flow's records and a summary-mode delta of the flow alike.
pub fn pair_shard(a: &[u8; 16], b: &[u8; 16], shards: usize) -> usize {
    let shards = shards.max(1) as u64;
    // Multiply-shift: the high bits of the 64x64 product spread evenly
    // over the shards without a division.
    ((u128::from(pair_hash(a, b)) * u128::from(shards)) >> 64) as usize
}

/// A fixed hash of the unordered pair (the same for `a, b` and `b, a`).
pub fn pair_hash(a: &[u8; 16], b: &[u8; 16]) -> u64 {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let mut h = 0x9E37_79B9_7F4A_7C15u64;
    for addr in [lo, hi] {
        let v = u128::from_le_bytes(*addr);
        h = mix(h ^ v as u64);
        h = mix(h ^ (v >> 64) as u64);
    }
    h
}

/// splitmix64's finalizer: every input bit moves every output bit.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::analyze::{self, Analyzer, VecSink};
    use crate::sources::CaptureReader;
    use rocescope_common::Kind;
    use std::collections::HashMap;

    fn v4(a: u8, b: u8, c: u8, d: u8) -> [u8; 16] {
        std::net::Ipv4Addr::new(a, b, c, d)
            .to_ipv6_mapped()
            .octets()
    }

    fn rec(kind: Kind, src: [u8; 16], dst: [u8; 16]) -> PacketRecord {
        PacketRecord {
            kind: kind as u8,
            src_ip: src,
            dst_ip: dst,
            ..PacketRecord::default()
        }
    }

    #[test]
    fn both_directions_and_their_cnps_share_a_shard_and_pfc_goes_to_every_shard() {
        let (a, b) = (v4(10, 0, 0, 1), v4(10, 0, 0, 2));
        for n in [1, 2, 3, 16] {
            let fwd = shard_of(&rec(Kind::Roce, a, b), n);
            assert_eq!(shard_of(&rec(Kind::Roce, b, a), n), fwd);
            assert_eq!(shard_of(&rec(Kind::Cnp, b, a), n), fwd);
            assert!(matches!(fwd, Shard::One(i) if i < n));
            assert_eq!(shard_of(&rec(Kind::Pfc, [0; 16], [0; 16]), n), Shard::Every);
            assert_eq!(
                shard_of(&rec(Kind::Pause, [0; 16], [0; 16]), n),
                Shard::Every
            );
        }
        assert_eq!(pair_shard(&a, &b, 1), 0);
    }

    /// A delta of either direction of a connection goes where the
    /// connection's records go, on every number of shards.
    #[test]
    fn a_delta_goes_to_the_shard_of_its_flows_records() {
        use rocescope_common::summary::FlowKey;
        let delta = |src, dst| FlowDelta {
            key: FlowKey {
                src_ip: src,
                dst_ip: dst,
                dest_qp: 0x100,
            },
            ..FlowDelta::default()
        };
        let mut shards = std::collections::BTreeSet::new();
        for host in 1..=32u8 {
            let (a, b) = (v4(10, 0, 0, host), v4(10, 0, 1, host));
            for n in [1, 2, 3, 16] {
                let Shard::One(k) = shard_of(&rec(Kind::Roce, a, b), n) else {
                    panic!("a RoCE record to every shard");
                };
                assert_eq!(delta_shard(&delta(a, b), n), k);
                assert_eq!(delta_shard(&delta(b, a), n), k);
                if n == 3 {
                    shards.insert(k);
                }
            }
        }
        assert_eq!(shards.len(), 3, "32 host pairs over 3 shards: {shards:?}");
    }

    #[test]
    fn many_host_pairs_spread_evenly() {
        // 4096 hosts, 65 536 pairs: within 5 % of an even share on 16 shards.
        let mut per = [0u32; 16];
        for i in 0..65_536u32 {
            let a = v4(10, 1, (i >> 8) as u8 & 0x0F, i as u8);
            let b = v4(10, 2, (i >> 12) as u8, (i >> 4) as u8);
            per[pair_shard(&a, &b, 16)] += 1;
        }
        let even = 65_536 / 16;
        for n in per {
            assert!(n.abs_diff(even) * 20 < even, "{per:?}");
        }
    }

    /// The rule's premise on every sample capture: each record the
    /// analyzer gives a flow (a CNP: the request flow it is attributed to)
    /// has that flow's address pair, so the shard of the record is the
    /// shard of its flow whatever the number of shards.
    #[test]
    fn every_sample_attributes_records_within_their_address_pair() {
        let mut samples = 0;
        for (path, records) in sample_records() {
            samples += 1;
            let mut analyzer = Analyzer::new(analyze::Config::default());
            let mut sink = VecSink::default();
            let mut attributed = Vec::new();
            // UET records get no flow yet (its analysis is to come): a
            // sample of UET alone attributes nothing.
            let mut roce = 0;
            for r in &records {
                roce += u32::from(matches!(r.kind(), Kind::Roce | Kind::Cnp));
                if let Some(flow) = analyzer.push(r, &mut sink).flow_id {
                    attributed.push((flow, r.src_ip, r.dst_ip));
                }
            }
            let analysis = analyzer.finish(&mut sink);
            let pairs: HashMap<u32, ([u8; 16], [u8; 16])> = sink
                .flows
                .iter()
                .chain(&analysis.flows)
                .map(|f| (f.flow_id, (f.src_ip, f.dst_ip)))
                .collect();
            assert!(roce == 0 || !attributed.is_empty(), "{}", path.display());
            let unordered = |a: [u8; 16], b: [u8; 16]| if a <= b { (a, b) } else { (b, a) };
            for (flow, src, dst) in attributed {
                let (fs, fd) = pairs[&flow];
                assert_eq!(
                    unordered(src, dst),
                    unordered(fs, fd),
                    "{}: a record of flow {flow} between other hosts",
                    path.display()
                );
            }
        }
        let dir = samples_dir();
        assert!(samples >= 15, "{samples} samples in {}", dir.display());
    }

    pub(crate) fn samples_dir() -> std::path::PathBuf {
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../pcaps")).to_path_buf()
    }

    /// Every bundled sample capture's records (kind other than `Other`),
    /// numbered, timed and on their interfaces as `analyze` feeds them.
    pub(crate) fn sample_records() -> Vec<(std::path::PathBuf, Vec<PacketRecord>)> {
        let mut out = Vec::new();
        let mut paths: Vec<_> = std::fs::read_dir(samples_dir())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "pcapng"))
            .collect();
        paths.sort();
        for path in paths {
            let mut reader = CaptureReader::open(&path).unwrap();
            let mut records = Vec::new();
            let mut r = PacketRecord::default();
            while let Some(f) = reader.next_frame().unwrap() {
                crate::decode::decode_into(&mut r, f.linktype, f.data, f.orig_len);
                if r.kind() == Kind::Other {
                    continue;
                }
                r.frame = f.number;
                r.ts_ns = f.ts_ns;
                r.iface = f.iface as u16;
                records.push(r);
            }
            out.push((path, records));
        }
        out
    }
}
