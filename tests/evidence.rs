//! The evidence the findings compute (`Diagnosis::evidence`), read in
//! process on the synth samples in `pcaps/`: numbers, flows and times, not
//! the words (those are checked byte for byte by scripts/compare-outputs.sh
//! and the report tests). Where a sample's truth file (`*.truth.json`, the
//! model's own event log) counts the same thing, the value is checked
//! against it; the rest are this build's exact values (docs/report.md says
//! what each finding's `params` hold).
use std::path::{Path, PathBuf};

use rocescope::analyze::findings::{
    CaptureLoss, CnpOverload, CongestionTree, Corrupted, Diagnosis, EcmpImbalance, Evidence,
    HopConn, HopLoss, HopQueueing, MemberUse, MirrorCopies, NodeAt, Reordering, Vanished,
};
use rocescope::analyze::{Analysis, EcmpGroup, Severity};
use rocescope::offline::{self, Options};

fn sample_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../pcaps")
        .join(format!("{name}.pcapng"))
}

fn analyse(name: &str, opts: &Options) -> Analysis {
    offline::run(&[sample_path(name)], opts, None)
        .unwrap()
        .analysis
}

fn sample(name: &str) -> Analysis {
    analyse(name, &Options::default())
}

/// The truth file's value at `path` (keys and array indices).
fn truth(name: &str, path: &[&str]) -> serde_json::Value {
    let file = sample_path(name).with_extension("truth.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    for k in path {
        v = match k.parse::<usize>() {
            Ok(i) => v[i].take(),
            Err(_) => v[*k].take(),
        };
    }
    v
}

/// The diagnoses with the finding id `id`, in rank order.
fn found<'a>(a: &'a Analysis, id: &str) -> Vec<&'a Diagnosis> {
    a.diagnoses
        .iter()
        .filter(|d| d.evidence.id() == id)
        .collect()
}

fn tap(a: &Analysis, name: &str) -> u16 {
    a.summary
        .taps
        .iter()
        .find(|t| t.iface_name == name)
        .unwrap_or_else(|| panic!("no tap {name}"))
        .iface
}

fn v4(a: u8, b: u8, c: u8, d: u8) -> [u8; 16] {
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d]
}

#[test]
fn mirror_impaired_capture_loss_copies_and_reordering() {
    let a = sample("mirror-impaired");
    let (leaf1, leaf0) = (tap(&a, "leaf1-r0-both"), tap(&a, "leaf0-s1-both"));

    let [loss] = found(&a, "capture-loss")[..] else {
        panic!("one capture-loss")
    };
    let Evidence::CaptureLoss(e) = &loss.evidence else {
        panic!()
    };
    // The model dropped 4 and 5 frames at the taps; 3 and 4 of them were
    // acknowledged (the rest are not told apart from loss: a lower bound).
    assert_eq!(truth("mirror-impaired", &["taps", "0", "tap_dropped"]), 4);
    assert_eq!(truth("mirror-impaired", &["taps", "1", "tap_dropped"]), 5);
    assert_eq!(
        *e,
        CaptureLoss {
            frames_missed: 7,
            flows: 2,
            by_tap: vec![(leaf0, 3), (leaf1, 4)],
            counted: vec![],
            counted_drops: 0,
        }
    );
    assert_eq!(loss.flows, vec![0, 1]);
    assert_eq!(loss.severity, Severity::Warning);

    let [copies] = found(&a, "mirror-duplicates")[..] else {
        panic!("one mirror-duplicates")
    };
    let Evidence::MirrorCopies(e) = &copies.evidence else {
        panic!()
    };
    let MirrorCopies {
        copies: n,
        by_tap,
        max_gap_ns,
        transport_copies,
    } = e;
    assert!(transport_copies.is_empty(), "a RoCE capture");
    // The truth's duplicates per tap: 31 at leaf1-r0, 276 at leaf0-s1.
    assert_eq!(
        truth("mirror-impaired", &["taps", "0", "tap_duplicates"]),
        31
    );
    assert_eq!(
        truth("mirror-impaired", &["taps", "1", "tap_duplicates"]),
        276
    );
    assert_eq!(*n, 307);
    let per_tap: Vec<(u16, u64, u64, u64, u64, u64)> = by_tap
        .iter()
        .map(|(t, d)| {
            (
                *t,
                d.copies,
                d.typical_gap_ns,
                d.min_gap_ns,
                d.max_gap_ns,
                d.same_timestamp,
            )
        })
        .collect();
    assert_eq!(
        per_tap,
        vec![(leaf0, 276, 256, 400, 400, 0), (leaf1, 31, 0, 0, 0, 31)]
    );
    assert_eq!(*max_gap_ns, Some(400));
    assert_eq!(copies.flows, vec![0, 1, 2, 3]);

    let [late] = found(&a, "reordering")[..] else {
        panic!("one reordering")
    };
    // The truth: 2 late PSNs at leaf1-r0.
    assert_eq!(truth("mirror-impaired", &["taps", "0", "late"]), 2);
    assert_eq!(
        late.evidence,
        Evidence::Reordering(Reordering {
            late_psns: 2,
            flows: 1,
            max_late_ns: 1988,
            max_late_psns: 71,
        })
    );
    assert_eq!(late.flows, vec![1]);
}

#[test]
fn corruption_counts_the_taps_bad_icrcs() {
    let a = sample("corruption");
    let [d] = found(&a, "corrupted-frames")[..] else {
        panic!("one corrupted-frames")
    };
    // The truth: 14 frames with a bad ICRC reached the tap.
    assert_eq!(truth("corruption", &["taps", "0", "icrc_bad"]), 14);
    assert_eq!(truth("corruption", &["taps", "0", "roce"]), 900);
    assert_eq!(
        d.evidence,
        Evidence::Corrupted(Corrupted {
            iface: tap(&a, "leaf1-r0-both"),
            icrc_failed: 14,
            icrc_checked: 900,
            failed_fraction: 14.0 / 900.0,
            flows: 1,
            followed: 1,
        })
    );
    assert_eq!(d.flows, vec![0]);
    assert!(found(&a, "sniffer-capture").is_empty());
}

#[test]
fn ecn_overmark_holds_three_flows_down() {
    let a = sample("ecn-overmark");
    let [d] = found(&a, "cnp-overload")[..] else {
        panic!("one cnp-overload")
    };
    let Evidence::CnpOverload(e) = &d.evidence else {
        panic!()
    };
    let CnpOverload {
        destinations,
        cnps,
        shortest_interval_ns,
        lowest_link_use,
    } = e;
    // The truth's CNPs at the tap: 54 in all; the held-down flows got 42.
    assert_eq!(truth("ecn-overmark", &["taps", "0", "cnp"]), 54);
    assert_eq!(*cnps, 42);
    assert_eq!(*shortest_interval_ns, 99_621);
    assert!((lowest_link_use - 0.655396299798775).abs() < 1e-12);
    let [dst] = &destinations[..] else {
        panic!("one destination")
    };
    assert_eq!(dst.dst_ip, v4(10, 0, 1, 1));
    assert_eq!(dst.connections, 4);
    assert_eq!(dst.link_gbps, 100.0);
    assert_eq!(dst.into_gbps, *lowest_link_use * 100.0);
    let held: Vec<(u32, u64, u64)> = dst
        .flows
        .iter()
        .map(|h| (h.flow.id, h.cnps, h.interval_ns))
        .collect();
    assert_eq!(
        held,
        vec![(0, 15, 99_621), (2, 13, 115_063), (3, 14, 106_796)]
    );
    for h in &dst.flows {
        assert_eq!(h.share_gbps, 25.0);
        assert_eq!(h.interval_ns, h.life_ns / h.cnps);
        assert!(h.goodput_gbps < 0.75 * h.share_gbps);
    }
    assert_eq!(d.flows, vec![0, 2, 3]);
}

#[test]
fn lossy_link_hop_loss_and_queueing() {
    let a = sample("lossy-link");
    let name = "lossy-link";
    let (s0, s1) = (tap(&a, "leaf0-s0-both"), tap(&a, "leaf0-s1-both"));
    let (r0, r1) = (tap(&a, "leaf1-r0-both"), tap(&a, "leaf1-r1-both"));
    let losses: Vec<&HopLoss> = found(&a, "hop-loss")
        .iter()
        .map(|d| match &d.evidence {
            Evidence::HopLoss(e) => e,
            _ => panic!(),
        })
        .collect();
    // The truth: flow 0's requests lost 1 frame between leaf0-s0 and
    // leaf1-r0 (784 seen upstream).
    assert_eq!(truth(name, &["hops", "0", "frames_up"]), 784);
    assert_eq!(truth(name, &["hops", "0", "dropped_between"]), 1);
    let conn = |s: [u8; 16], d: [u8; 16], qp| HopConn {
        src_ip: s,
        dst_ip: d,
        dest_qp: qp,
    };
    let flow0 = Vanished {
        frames_up: 784,
        missing: 1,
        resent: 1,
        capture_lost: 0,
    };
    let flow1 = Vanished {
        frames_up: 957,
        missing: 5,
        resent: 3,
        capture_lost: 0,
    };
    assert_eq!(
        losses,
        vec![
            &HopLoss {
                up_iface: s1,
                down_iface: r1,
                total: flow1,
                share: 5.0 / 957.0,
                hops: vec![(conn(v4(10, 0, 0, 2), v4(10, 0, 1, 2), 513), flow1)],
            },
            &HopLoss {
                up_iface: s0,
                down_iface: r0,
                total: flow0,
                share: 1.0 / 784.0,
                hops: vec![(conn(v4(10, 0, 0, 1), v4(10, 0, 1, 1), 512), flow0)],
            },
        ]
    );
    assert!(losses.iter().all(|l| l.lost_between()));

    let [q] = found(&a, "hop-queueing")[..] else {
        panic!("one hop-queueing")
    };
    let Evidence::HopQueueing(e) = &q.evidence else {
        panic!()
    };
    let HopQueueing {
        worst,
        p50_ns,
        p99_ns,
        ratio,
        max_ns,
        matched,
        pauses,
        paused_ns,
        others,
        others_left_out,
    } = e;
    // The truth's one-way delays of flow 0's requests over that hop
    // (p50 2008 ns, p99 55345 ns, max 55353 ns, 783 matched): the
    // analysis' percentiles come from its own histogram.
    assert_eq!(truth(name, &["hops", "0", "matched"]), 783);
    assert_eq!((worst.up_iface, worst.down_iface), (s0, r0));
    assert_eq!(worst.conn, conn(v4(10, 0, 0, 1), v4(10, 0, 1, 1), 512));
    assert_eq!((*p50_ns, *p99_ns, *ratio), (2008, 55_344, 27));
    assert_eq!(*max_ns, Some(55_353));
    assert_eq!(*matched, 783);
    assert_eq!((*pauses, *paused_ns), (0, 0));
    let hops: Vec<(u16, u16, u32)> = others
        .iter()
        .map(|h| (h.up_iface, h.down_iface, h.conn.dest_qp))
        .collect();
    assert_eq!(hops, vec![(s1, r1, 513), (r0, s0, 256), (r1, s1, 257)]);
    assert_eq!(*others_left_out, 0);
    assert_eq!(q.flows, vec![0, 1]);
}

#[test]
fn ecmp_collision_names_the_busy_member_and_its_elephants() {
    let mut opts = Options::default();
    opts.analyzer.ecmp_groups = vec![
        "leaf0-spine0-tx,leaf0-spine1-tx"
            .parse::<EcmpGroup>()
            .unwrap(),
    ];
    let a = analyse("ecmp-collision", &opts);
    let [d] = found(&a, "ecmp-imbalance")[..] else {
        panic!("one ecmp-imbalance")
    };
    let Evidence::Ecmp(e) = &d.evidence else {
        panic!()
    };
    let EcmpImbalance {
        members,
        bytes,
        shares,
        member_use,
        busiest,
        idlest,
        loaded_bins,
        imbalanced_bins,
        bin_ns,
        fair_share,
        first_imbalanced_ns,
        last_imbalanced_ns,
        collided,
        collided_from_ns,
        collided_to_ns,
        entropy,
        shared_ports,
    } = e;
    assert_eq!(members, &["leaf0-spine0-tx", "leaf0-spine1-tx"]);
    // The truth: both elephants' requests went via spine0.
    assert_eq!(bytes, &[8_175_216, 0]);
    assert_eq!(shares, &[1.0, 0.0]);
    assert_eq!((*busiest, *idlest), (0, 1));
    assert!(matches!(member_use[0], MemberUse::Carried { flows: 2, .. }));
    assert_eq!(member_use[1], MemberUse::Idle);
    assert_eq!((*loaded_bins, *imbalanced_bins, *bin_ns), (8, 8, 100_000));
    assert_eq!(*fair_share, 0.5);
    let first = a.summary.first_ts_ns.unwrap();
    // Bins start before the capture: the first one begins before its first frame.
    assert!(*first_imbalanced_ns <= first);
    assert_eq!(last_imbalanced_ns - first, 768_924);
    let elephants: Vec<(u32, Option<u16>, u64)> = collided
        .iter()
        .map(|el| (el.flow.id, el.udp_sport, el.bytes))
        .collect();
    assert_eq!(
        elephants,
        vec![(1, Some(49152), 3_780_204), (2, Some(49250), 4_395_012)]
    );
    assert_eq!(
        (collided_from_ns - first, collided_to_ns - first),
        (336, 768_490)
    );
    let pairs: Vec<([u8; 16], [u8; 16], u64, u64)> = entropy
        .iter()
        .map(|p| (p.src_ip, p.dst_ip, p.source_ports, p.qps))
        .collect();
    assert_eq!(
        pairs,
        vec![
            (v4(10, 0, 0, 1), v4(10, 0, 1, 1), 1, 1),
            (v4(10, 0, 0, 2), v4(10, 0, 1, 2), 1, 1)
        ]
    );
    assert_eq!(*shared_ports, 0);
    assert_eq!(d.flows, vec![1, 2]);
}

#[test]
fn pfc_storm_tree_spreads_from_the_receiver() {
    let a = sample("pfc-storm");
    let [d] = found(&a, "pfc-congestion-tree")[..] else {
        panic!("one pfc-congestion-tree")
    };
    let Evidence::CongestionTree(e) = &d.evidence else {
        panic!()
    };
    let CongestionTree {
        priority,
        trees,
        widest_tree,
        root_paused_ns,
        spread,
        victims,
        telemetry,
    } = e;
    // No switch telemetry in the sample: nothing cited.
    assert_eq!(*telemetry, None);
    assert_eq!(*priority, 3);
    assert_eq!((trees.as_slice(), *widest_tree), (&[1][..], 1));
    let root = &a.summary.pfc_trees[1].nodes[0];
    // The truth: the receiver r0 (02:00:00:02:00:01) is the root.
    assert_eq!(
        truth(
            "pfc-storm",
            &["pfc_trees", "trees", "2", "nodes", "0", "mac"]
        ),
        root.src_mac.as_str()
    );
    assert_eq!(*root_paused_ns, 249_860_549);
    assert_eq!(*root_paused_ns, root.paused_ns);
    let [step] = &spread[..] else {
        panic!("one port reached")
    };
    assert_eq!(step.port, NodeAt { tree: 1, node: 1 });
    assert_eq!(step.parent, Some(NodeAt { tree: 1, node: 0 }));
    assert_eq!(
        (step.min_delay_ns, step.max_delay_ns, step.episodes),
        (52_508, 52_508, 1)
    );
    let listed: Vec<(NodeAt, Vec<u32>, usize)> = victims
        .iter()
        .map(|v| (v.at, v.listed.clone(), v.more))
        .collect();
    assert_eq!(
        listed,
        vec![
            (NodeAt { tree: 1, node: 0 }, vec![1, 2], 0),
            (NodeAt { tree: 1, node: 1 }, vec![0, 3], 0)
        ]
    );
    assert_eq!(d.flows, vec![0, 1, 2, 3]);
}
