use super::*;

/// The RoCE presets: the UET ones have their own truth and tests
/// (`uet::tests`).
fn roce_scenarios() -> impl Iterator<Item = &'static str> {
    SCENARIOS
        .iter()
        .copied()
        .filter(|s| !uet::SCENARIOS.contains(s))
}

fn summary(name: &str) {
    let t0 = std::time::Instant::now();
    let (run, truth) = run_scenario(name, 1, None).unwrap();
    eprintln!(
        "== {name}: {} frames, {:?}, {:?}",
        run.frames.len(),
        t0.elapsed(),
        run.fabric
    );
    for q in &truth.qps {
        eprintln!("  qp {:?}->{:?}: {:?}", q.src_ip, q.dst_ip, q.stats);
    }
    for f in &truth.flows {
        eprintln!(
            "  {} flow{} data={} rt={} rw={}/{}/{} sp={} gaps={} ce={} cnps={} acks={} naks={} | model rt={} rwn={} rwt={} sp={}",
            f.iface,
            f.flow,
            f.data_packets,
            f.retrans_packets,
            f.rewinds_nak,
            f.rewinds_rnr,
            f.rewinds_timeout,
            f.spurious_retrans,
            f.gaps,
            f.ce,
            f.cnps,
            f.acks,
            f.naks,
            f.model_retrans,
            f.model_rewinds_nak,
            f.model_rewinds_timeout,
            f.model_spurious
        );
    }
    for p in &truth.pfc {
        eprintln!(
            "  pfc {} {} p{} frames={} xon={} paused={} frac={:.4} max={} storms={}",
            p.iface,
            p.src_mac,
            p.priority,
            p.frames,
            p.xon_frames,
            p.paused_ns,
            p.fraction,
            p.max_pause_ns,
            p.storms
        );
    }
}

#[test]
fn print_all() {
    for s in roce_scenarios() {
        summary(s);
    }
}

use crate::proto::ib;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

fn run_named(name: &str, seed: u64) -> (Run, Truth) {
    run_scenario(name, seed, None).unwrap()
}

fn sum<F: Fn(&FlowTruth) -> u64>(t: &Truth, tap: Option<usize>, f: F) -> u64 {
    t.flows
        .iter()
        .filter(|x| tap.is_none_or(|tp| x.tap == tp))
        .map(f)
        .sum()
}

#[test]
fn every_preset_builds_and_runs_in_order() {
    for name in roce_scenarios() {
        let (run, truth) = run_named(name, 3);
        assert!(!run.frames.is_empty(), "{name}: no frames");
        assert_eq!(run.frames.len(), run.meta.len());
        assert!(
            run.frames.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns),
            "{name}: not time-ordered"
        );
        assert!(run.frames.iter().all(|f| f.tap < run.taps.len()));
        assert_eq!(
            truth.taps.iter().map(|t| t.frames).sum::<u64>(),
            run.frames.len() as u64
        );
        serde_json::to_string(&truth).unwrap();
    }
    assert!(Config::preset("no-such").is_none());
    assert!(
        run_scenario("no-such", 1, None)
            .unwrap_err()
            .contains("ghost-drop")
    );
}

#[test]
fn same_seed_same_frames() {
    for name in ["ghost-drop", "lossy-link", "mirror-impaired", "corruption"] {
        let a = run_named(name, 42).0;
        let b = run_named(name, 42).0;
        assert_eq!(a.frames, b.frames, "{name}");
        assert_eq!(a.meta, b.meta, "{name}");
        assert_eq!(a.tap_drops, b.tap_drops, "{name}");
    }
    let a = run_named("lossy-link", 1).0;
    let b = run_named("lossy-link", 2).0;
    assert_ne!(a.frames, b.frames);
}

#[test]
fn healthy_is_clean() {
    let (run, t) = run_named("healthy", 1);
    assert_eq!(run.fabric.pfc_frames_sent, 0);
    assert!(t.pfc.is_empty());
    assert_eq!(
        sum(&t, None, |f| f.retrans_packets + f.gaps + f.ce + f.cnps),
        0
    );
    assert!(
        t.qps
            .iter()
            .all(|q| q.stats.done_ns.is_some() && q.stats.delivered_packets == 64 * 16)
    );
}

#[test]
fn ghost_drop_signature() {
    let (run, t) = run_named("ghost-drop", 1);
    // Nothing is lost anywhere...
    assert_eq!(
        run.fabric.switch_drops + run.fabric.link_drops + run.fabric.corrupted,
        0
    );
    assert_eq!(sum(&t, None, |f| f.gaps + f.naks + f.rewinds_nak), 0);
    // ...yet the victim s2 -> r1 (tap 0, at its sender) rewinds on timeouts
    // and resends packets that had been acknowledged.
    let victim = t.flow(0, 2).unwrap();
    assert!(victim.rewinds_timeout > 0, "{victim:?}");
    assert!(victim.spurious_retrans > 0, "{victim:?}");
    assert!(victim.retrans_packets > 0);
    // The victim's receiver never pauses; the pause reached s2 through the fabric.
    // Calibrated to look like the seed's "before" (3.8 % retransmissions,
    // 14.2 % of the time paused): a few per cent, a fifth of the time.
    let rate = victim.retrans_packets as f64 / victim.data_packets as f64;
    assert!((0.01..0.10).contains(&rate), "retransmission rate {rate}");
    let paused = t.pause_fraction(0);
    assert!((0.05..0.40).contains(&paused), "pause fraction {paused}");
    // The responder saw duplicates: the resends were of delivered packets.
    assert!(t.qps[2].stats.duplicate_packets > 0);
}

#[test]
fn ghost_drop_fixed_signature() {
    let (_, bad) = run_named("ghost-drop", 1);
    let (run, t) = run_named("ghost-drop-fixed", 1);
    assert_eq!(run.fabric.switch_drops, 0);
    assert_eq!(
        sum(&t, None, |f| f.retrans_packets
            + f.rewinds
            + f.spurious_retrans),
        0
    );
    assert!(t.qps.iter().all(|q| q.stats.timeouts == 0));
    // ECN does the work now: CE marks and CNPs.
    assert!(sum(&t, None, |f| f.ce) > 0 && sum(&t, None, |f| f.cnps) > 0);
    // The pause no longer spreads to the victim's sender.
    assert!(t.pause_fraction(0) < bad.pause_fraction(0) / 10.0);
    // And the victim gets more through.
    assert!(t.qps[2].stats.delivered_packets > bad.qps[2].stats.delivered_packets);
}

#[test]
fn lossy_link_signature() {
    let (run, t) = run_named("lossy-link", 1);
    assert!(run.fabric.link_drops + run.fabric.corrupted > 0);
    assert_eq!(run.fabric.switch_drops, 0);
    // At the senders: NAK-triggered rewinds, never a gap (the loss is downstream).
    let sender_taps = [0, 1];
    let naks: u64 = sender_taps
        .iter()
        .map(|&tp| sum(&t, Some(tp), |f| f.rewinds_nak))
        .sum();
    assert!(naks > 0);
    assert_eq!(
        sender_taps
            .iter()
            .map(|&tp| sum(&t, Some(tp), |f| f.gaps))
            .sum::<u64>(),
        0
    );
    // At the receivers' leaf, packets lost on spine0 -> leaf1 show as gaps.
    let gaps: u64 = [2, 3].iter().map(|&tp| sum(&t, Some(tp), |f| f.gaps)).sum();
    assert_eq!(gaps > 0, run.fabric.link_drops > 0);
    // Every write completes despite the losses.
    assert!(t.qps.iter().all(|q| q.stats.done_ns.is_some()));
    // Flow 0 starts below 2^24: its PSNs wrap.
    let psns: Vec<u32> = run
        .frames
        .iter()
        .filter(|f| f.tap == 0)
        .filter_map(|f| f.frame.as_roce())
        .filter(|r| ib::is_request(r.opcode))
        .map(|r| r.psn)
        .collect();
    assert!(psns.iter().any(|&p| p >= 0xFF_FF00) && psns.iter().any(|&p| p < 0x100));
}

#[test]
fn incast_marks_and_notifies_every_sender() {
    let (_, t) = run_named("incast", 1);
    for flow in 0..8 {
        let f = t.flow(0, flow).unwrap();
        assert!(f.ce > 0 && f.cnps > 0, "{f:?}");
        assert_eq!(f.retrans_packets, 0);
    }
    assert!(t.qps.iter().all(|q| q.stats.min_rate_gbps < 50.0));
}

#[test]
fn pfc_storm_signature() {
    let (run, t) = run_named("pfc-storm", 1);
    assert!(
        run.frames.len() < 20_000,
        "capture stays small: {}",
        run.frames.len()
    );
    let storm = t.pfc.iter().find(|p| p.tap == 0).unwrap();
    assert!(
        storm.max_pause_ns > 200_000_000 && storm.storms >= 1,
        "{storm:?}"
    );
    // It spread to the victim's sender.
    let victim = t.pfc.iter().find(|p| p.tap == 1).unwrap();
    assert!(victim.max_pause_ns > 200_000_000, "{victim:?}");
}

#[test]
fn ecn_broken_has_ce_but_no_cnp() {
    let (run, t) = run_named("ecn-broken", 1);
    assert!(sum(&t, Some(1), |f| f.ce) > 0);
    assert_eq!(sum(&t, None, |f| f.cnps), 0);
    assert!(
        !run.frames
            .iter()
            .any(|f| matches!(f.frame, FrameSpec::Cnp(_)))
    );
}

#[test]
fn ecmp_collision_leaves_one_uplink_idle() {
    let (_, t) = run_named("ecmp-collision", 1);
    assert_eq!(t.taps[1].frames, 0, "spine1 uplink carries nothing");
    assert!(t.flow(0, 0).unwrap().data_packets > 0 && t.flow(0, 1).unwrap().data_packets > 0);
}

#[test]
fn frame_limit_and_overrides() {
    let (run, _) = run_scenario("ghost-drop", 1, Some(500)).unwrap();
    assert_eq!(run.frames.len(), 500);
    assert!(run.fabric.truncated);

    let mut c = Config::preset("ghost-drop").unwrap();
    c.set("nic.min_rto_ns", "1050000").unwrap();
    c.set("switch.ecn_pmax", "0.1").unwrap();
    c.set("flows.0.messages", "3").unwrap();
    c.set("taps.0.dir", "tx").unwrap();
    assert_eq!(c.nic.min_rto_ns, 1_050_000);
    assert_eq!(c.switch.ecn_pmax, 0.1);
    assert_eq!(c.flows[0].messages, Some(3));
    assert_eq!(c.taps[0].dir, Dir::Tx);
    assert!(c.set("nic.no_such", "1").is_err());
    assert!(c.set("nic.min_rto_ns", "\"soon\"").is_err());
    c.set("taps.0.node", "nowhere").unwrap();
    assert!(simulate(&c).unwrap_err().contains("nowhere"));
    let mut c = Config::preset("mirror-impaired").unwrap();
    c.set("taps.1.drop", "1.5").unwrap();
    assert!(simulate(&c).unwrap_err().contains("taps.1.drop"));
    let mut c = Config::preset("mirror-impaired").unwrap();
    c.set("impairments.0.reorder", "-0.1").unwrap();
    assert!(simulate(&c).unwrap_err().contains("impairments.0.reorder"));
}

/// Count the truth again, straight from the FrameSpecs (no model
/// annotations but which records are the mirror's second copies, which
/// `mirror_duplicates_in_the_capture_are_the_truths` finds by their bytes).
#[test]
fn truth_matches_the_frames() {
    for name in roce_scenarios() {
        let (run, t) = run_named(name, 5);
        #[derive(Default, Debug, PartialEq)]
        struct C {
            data: u64,
            ce: u64,
            retrans: u64,
            gaps: u64,
            acks: u64,
            cnps: u64,
        }
        type Key = (usize, Ipv4Addr, Ipv4Addr, u32);
        let mut seen: BTreeMap<Key, (C, Option<u32>)> = BTreeMap::new();
        let mut pfc = vec![0u64; run.taps.len()];
        for (f, m) in run.frames.iter().zip(&run.meta) {
            if m.copy {
                assert!(!matches!(f.frame, FrameSpec::Pfc(_)));
                continue;
            }
            match &f.frame {
                FrameSpec::Roce(r) if ib::is_request(r.opcode) => {
                    let (c, next) = seen
                        .entry((f.tap, r.src_ip, r.dst_ip, r.dest_qp))
                        .or_default();
                    c.data += 1;
                    c.ce += (r.ecn == 3) as u64;
                    if let Some(n) = *next {
                        let d = truth::psn_diff(r.psn, n);
                        if d < 0 {
                            c.retrans += 1;
                        } else if d > 0 {
                            c.gaps += 1;
                        }
                        if d >= 0 {
                            *next = Some((r.psn + 1) & ib::PSN_MASK);
                        }
                    } else {
                        *next = Some((r.psn + 1) & ib::PSN_MASK);
                    }
                }
                FrameSpec::Roce(r) => {
                    // Response: count on the request flow it answers.
                    let q = t.qps.iter().find(|q| q.requester_qpn == r.dest_qp).unwrap();
                    let key = (f.tap, r.dst_ip, r.src_ip, q.responder_qpn);
                    if r.aeth.is_some_and(|a| ib::aeth::is_ack(a.syndrome)) {
                        seen.entry(key).or_default().0.acks += 1;
                    }
                }
                FrameSpec::Cnp(c) => {
                    let q = t.qps.iter().find(|q| q.requester_qpn == c.dest_qp).unwrap();
                    seen.entry((f.tap, c.dst_ip, c.src_ip, q.responder_qpn))
                        .or_default()
                        .0
                        .cnps += 1;
                }
                FrameSpec::Pfc(_) => pfc[f.tap] += 1,
                FrameSpec::Transport(_) => unreachable!("RoCE scenarios only"),
            }
        }
        assert_eq!(seen.len(), t.flows.len(), "{name}");
        for ft in &t.flows {
            let (c, _) = &seen[&(ft.tap, ft.src_ip.unwrap(), ft.dst_ip.unwrap(), ft.dest_qp)];
            let want = C {
                data: ft.data_packets,
                ce: ft.ce,
                retrans: ft.retrans_packets,
                gaps: ft.gaps,
                acks: ft.acks,
                cnps: ft.cnps,
            };
            assert_eq!(c, &want, "{name} {}", ft.iface);
            // The model's annotations agree with the tap's view where they must.
            assert!(
                ft.model_retrans >= ft.retrans_packets || ft.gaps > 0,
                "{name} {ft:?}"
            );
        }
        for (tap, n) in pfc.iter().enumerate() {
            assert_eq!(t.taps[tap].pfc, *n, "{name}");
            let frames: u64 = t
                .pfc
                .iter()
                .filter(|p| p.tap == tap)
                .map(|p| p.frames)
                .sum();
            assert_eq!(frames, *n, "{name}");
        }
    }
}

/// `name` with `seed`, cut to `duration_ns` of simulated time.
fn run_short(name: &str, seed: u64, duration_ns: u64) -> (Run, Truth) {
    let mut cfg = Config::preset(name).unwrap();
    cfg.seed = seed;
    cfg.duration_ns = duration_ns;
    let run = simulate(&cfg).unwrap();
    let truth = Truth::of(&run);
    (run, truth)
}

#[test]
fn signatures_hold_across_seeds() {
    // Two of the r0 stalls (at 100 us and 600 us) are enough for the ghost drops.
    for seed in 1..6 {
        let (run, t) = run_short("ghost-drop", seed, 1_000_000);
        let v = t.flow(0, 2).unwrap();
        assert!(
            run.fabric.switch_drops == 0 && v.rewinds_timeout > 0 && v.spurious_retrans > 0,
            "seed {seed}"
        );
        let (run, t) = run_named("lossy-link", seed);
        let naks: u64 = [0, 1]
            .iter()
            .map(|&tp| sum(&t, Some(tp), |f| f.rewinds_nak))
            .sum();
        eprintln!(
            "seed {seed}: lossy drops={} naks={naks}",
            run.fabric.link_drops
        );
        let (_, t) = run_short("ghost-drop-fixed", seed, 1_000_000);
        assert_eq!(sum(&t, None, |f| f.retrans_packets), 0, "seed {seed}");
    }
}

/// The bridge's bytes, decoded and analysed by the real pipeline, agree with
/// the truth (the contract docs/analysis.md sets).
#[test]
fn analyzer_agrees_with_truth() {
    use crate::analyze::{Analyzer, Config as AConfig, VecSink};
    use crate::proto::linktype;
    let mut mismatches = vec![];
    for name in roce_scenarios() {
        // The ghost-drop fabric runs at 400G: 1 ms (two r0 stalls) keeps it quick.
        let (run, t) = if name.starts_with("ghost-drop") {
            run_short(name, 2, 1_000_000)
        } else {
            run_named(name, 2)
        };
        for tap in 0..run.taps.len() {
            let mut an = Analyzer::new(AConfig {
                link_speed_bps: (run.taps[tap].link_gbps * 1e9) as u64,
                ..AConfig::default()
            });
            let mut sink = VecSink::default();
            let mut buf = vec![];
            for f in run.frames.iter().filter(|f| f.tap == tap) {
                buf.clear();
                bridge::append_frame(&f.frame, &mut buf);
                let mut rec = crate::decode::decode(linktype::ETHERNET, &buf, buf.len() as u32);
                rec.ts_ns = f.ts_ns;
                rec.iface = 0;
                an.push(&rec, &mut sink);
            }
            let a = an.finish(&mut sink);
            for ft in t
                .flows
                .iter()
                .filter(|f| f.tap == tap && f.data_packets > 0)
            {
                let mut src = [0u8; 16];
                src[10] = 0xFF;
                src[11] = 0xFF;
                src[12..].copy_from_slice(&ft.src_ip.unwrap().octets());
                let row = a
                    .flows
                    .iter()
                    .find(|r| r.dest_qp == ft.dest_qp && r.src_ip[12..] == src[12..]);
                let Some(row) = row else {
                    mismatches.push(format!("{name} {}: flow {} missing", ft.iface, ft.flow));
                    continue;
                };
                // A resend whose original the tap never saw is the tap's
                // first copy of it: no retransmission here, but a missing
                // PSN resolved as lost before the tap (or NAKed).
                let got = (
                    row.data_packets,
                    row.retrans_packets + row.gap_lost_before_tap + row.gap_nak_lost,
                    row.rewinds_nak,
                    row.rewinds_timeout,
                    row.spurious_retrans,
                    row.gaps,
                    row.ce,
                    row.cnps,
                );
                // Rewinds as the model's requesters made them, not the
                // definition applied to the tap's frames.
                let want = (
                    ft.data_packets,
                    ft.model_retrans,
                    ft.model_rewinds_nak,
                    ft.model_rewinds_timeout,
                    ft.spurious_retrans,
                    ft.gaps,
                    ft.ce,
                    ft.cnps,
                );
                if got != want {
                    mismatches.push(format!(
                        "{name} {} flow {}: analyzer {got:?} truth {want:?}",
                        ft.iface, ft.flow
                    ));
                }
            }
            let paused: u64 = t
                .pfc
                .iter()
                .filter(|p| p.tap == tap)
                .map(|p| p.paused_ns)
                .sum();
            let apaused: u64 = a.pfc.iter().map(|p| p.end_ns - p.start_ns).sum();
            if paused.abs_diff(apaused) > paused / 100 + 1000 {
                mismatches.push(format!(
                    "{name} {}: paused analyzer {apaused} truth {paused}",
                    run.taps[tap].name
                ));
            }
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn writes_a_pcap_per_tap() {
    use crate::synth::capture_writer::PcapWriter;
    let (run, t) = run_scenario("lossy-link", 1, Some(400)).unwrap();
    let mut w = PcapWriter::new(Vec::new(), crate::proto::linktype::ETHERNET, 65535).unwrap();
    let n = bridge::write_tap(&run, 0, 0, bridge::EPOCH_NS, &mut w).unwrap();
    assert_eq!(n as u64, t.taps[0].frames);
    let bytes = w.finish().unwrap();
    assert!(bytes.len() > 24 + n * 16);
}

// ---- capture impairments, reordering, corruption, sniffer ------------------

/// One record of a written capture, its timestamp in model time.
struct Rec {
    iface: u32,
    ts_ns: u64,
    orig_len: u32,
    data: Vec<u8>,
}

impl Rec {
    fn decoded(&self) -> crate::PacketRecord {
        crate::decode::decode(crate::proto::linktype::ETHERNET, &self.data, self.orig_len)
    }
}

/// Writes `run` with `opts` to a pcapng and reads every record back.
fn written(run: &Run, opts: &bridge::CaptureOptions) -> Vec<Rec> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.pcapng");
    bridge::write_capture(run, &path, opts).unwrap();
    let mut r = crate::sources::CaptureReader::open(&path).unwrap();
    let mut out = vec![];
    while let Some(f) = r.next_frame().unwrap() {
        out.push(Rec {
            iface: f.iface,
            ts_ns: f.ts_ns - bridge::EPOCH_NS,
            orig_len: f.orig_len,
            data: f.data.to_vec(),
        });
    }
    out
}

/// The bytes of an untagged IPv4 frame with its TTL and header checksum
/// zeroed: what an L3-egress copy has in common with the frame it copies.
fn without_ttl(data: &[u8]) -> Vec<u8> {
    let mut k = data.to_vec();
    k[14 + 8] = 0;
    k[14 + 10] = 0;
    k[14 + 11] = 0;
    k
}

/// Splits the records of `iface` into the mirror's first records and the
/// number of second copies, found by bytes alone: an exact copy follows its
/// frame with the same timestamp and bytes; an egress copy comes `gap` ns
/// later with the same bytes but a TTL one less (and its own checksum).
fn dedup(recs: &[Rec], iface: u32, gap: u64) -> (Vec<&Rec>, Vec<&Rec>) {
    let mut firsts: Vec<&Rec> = vec![];
    let mut copies = vec![];
    let mut seen: std::collections::HashMap<Vec<u8>, (u64, u8)> = Default::default();
    for r in recs.iter().filter(|r| r.iface == iface) {
        let copy = if gap == 0 {
            firsts
                .last()
                .is_some_and(|p| p.ts_ns == r.ts_ns && p.data == r.data)
        } else {
            let key = without_ttl(&r.data);
            let hit = seen
                .get(&key)
                .is_some_and(|&(ts, ttl)| ts + gap == r.ts_ns && ttl == r.data[22] + 1);
            seen.insert(key, (r.ts_ns, r.data[22]));
            hit
        };
        if copy {
            copies.push(r);
        } else {
            firsts.push(r);
        }
    }
    (firsts, copies)
}

/// A mirror is passive: with its impairments the fabric does exactly what it
/// does without them, and the capture is the unimpaired one minus the
/// frames the truth says were dropped, plus the copies.
#[test]
fn mirror_impairments_never_change_the_fabric() {
    let cfg = Config::preset("mirror-impaired").unwrap();
    let mut clean = cfg.clone();
    for t in &mut clean.taps {
        t.drop = 0.0;
        t.duplicate = 0.0;
    }
    let (a, b) = (simulate(&cfg).unwrap(), simulate(&clean).unwrap());
    assert!(!a.tap_drops.is_empty() && a.meta.iter().any(|m| m.copy));
    assert!(b.tap_drops.is_empty() && !b.meta.iter().any(|m| m.copy));
    for (x, y) in a.qps.iter().zip(&b.qps) {
        assert_eq!(x.stats, y.stats);
    }
    assert_eq!(a.fabric.end_ns, b.fabric.end_ns);
    let mut drops = a.tap_drops.iter().peekable();
    let mut kept = a
        .frames
        .iter()
        .zip(&a.meta)
        .filter(|(_, m)| !m.copy)
        .peekable();
    for (f, m) in b.frames.iter().zip(&b.meta) {
        if kept.peek() == Some(&(f, m)) {
            kept.next();
        } else {
            let d = drops
                .next()
                .expect("a frame missing is one the truth dropped");
            assert_eq!((d.ts_ns, d.tap, d.meta), (f.ts_ns, f.tap, *m));
        }
    }
    assert!(kept.next().is_none() && drops.next().is_none());
    let t = Truth::of(&a);
    assert_eq!(
        t.taps.iter().map(|t| t.tap_dropped).sum::<u64>(),
        a.tap_drops.len() as u64
    );
}

/// The copies in the written capture, found by their bytes, are exactly the
/// truth's `tap_duplicates`: exact copies at the receiver-side tap, L3-egress
/// copies (TTL one less, IPv4 checksum valid, ICRC unchanged and valid)
/// 400 ns later at the sender-side one.
#[test]
fn mirror_duplicates_in_the_capture_are_the_truths() {
    let (run, t) = run_named("mirror-impaired", 1);
    let recs = written(&run, &bridge::CaptureOptions::default());
    let (_, exact) = dedup(&recs, 0, 0);
    let (_, egress) = dedup(&recs, 1, 400);
    let (exact, egress) = (exact.as_slice(), egress.as_slice());
    for (tap, copies) in [exact, egress].into_iter().enumerate() {
        assert_eq!(copies.len() as u64, t.taps[tap].tap_duplicates, "tap {tap}");
        let flows = t.flows.iter().filter(|f| f.tap == tap);
        let all: u64 = flows.clone().map(|f| f.tap_duplicates).sum();
        assert_eq!(all, copies.len() as u64, "no PFC here to copy");
        let requests = copies
            .iter()
            .filter(|r| ib::is_request(r.decoded().roce().opcode))
            .count() as u64;
        let want: u64 = flows.map(|f| f.tap_duplicate_requests).sum();
        assert_eq!(requests, want, "tap {tap}");
        assert!(requests > 0 && requests < copies.len() as u64);
    }
    let (exact, egress) = (exact.len() as u64, egress.len() as u64);
    assert!(exact > 50 && egress > 1000, "{exact} {egress}");
    // Every frame at the egress tap, copy or not, has a valid IPv4 header
    // checksum and ICRC; the copies have TTL 63.
    let mut ttl63 = 0;
    for r in recs.iter().filter(|r| r.iface == 1) {
        assert!(checksum_ok(&r.data[14..34]));
        assert_eq!(r.decoded().icrc_ok(), Some(true));
        ttl63 += (r.data[22] == 63) as u64;
    }
    assert_eq!(ttl63, egress);
}

fn checksum_ok(header: &[u8]) -> bool {
    let mut sum: u32 = header
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    sum == 0xFFFF
}

/// Request PSN sequence of every flow at one tap, from the capture's
/// records: (dest QP, PSN, timestamp).
fn requests(recs: &[&Rec]) -> BTreeMap<u32, Vec<(u32, u64)>> {
    let mut out: BTreeMap<u32, Vec<(u32, u64)>> = BTreeMap::new();
    for r in recs {
        let d = r.decoded();
        if d.kind() == crate::Kind::Roce && ib::is_request(d.roce().opcode) {
            out.entry(d.roce().dest_qp)
                .or_default()
                .push((d.roce().psn, r.ts_ns));
        }
    }
    out
}

/// Mirror drops and network reordering, counted again from the capture: no
/// request is ever resent in this scenario, so every PSN below the highest
/// so far is late, and every PSN never recorded is one the mirror dropped
/// while the responder acknowledged it.
#[test]
fn late_and_missing_in_the_capture_are_the_truths() {
    let (run, t) = run_named("mirror-impaired", 1);
    for c in &t.connections {
        assert_eq!(
            (c.packets_resent, c.timeouts, c.naks_sent, c.link_drops),
            (0, 0, 0, 0),
            "{c:?}"
        );
        assert!(c.reordered > 0 && c.ooo_received > 0, "{c:?}");
        assert_eq!(c.delivered_packets, 64 * 16);
    }
    assert_eq!(run.fabric.pfc_frames_sent, 0);
    let recs = written(&run, &bridge::CaptureOptions::default());
    let mut late_total = 0;
    for (tap, gap) in [(0usize, 0u64), (1, 400)] {
        let (firsts, _) = dedup(&recs, tap as u32, gap);
        for (qp, seq) in requests(&firsts) {
            let ft = t
                .flows
                .iter()
                .find(|f| f.tap == tap && f.dest_qp == qp)
                .unwrap();
            let (mut top, mut late, mut max_ns, mut max_psns) = (seq[0].0, 0, 0, 0);
            let mut recorded = std::collections::BTreeSet::new();
            for (k, &(psn, ts)) in seq.iter().enumerate() {
                recorded.insert(psn);
                if psn < top {
                    late += 1;
                    max_psns = max_psns.max(top - psn);
                    let overtook = seq[..k].iter().find(|x| x.0 > psn).unwrap();
                    max_ns = max_ns.max(ts - overtook.1);
                }
                top = top.max(psn);
            }
            let never = (seq[0].0..top).filter(|p| !recorded.contains(p)).count() as u64;
            assert_eq!(
                (ft.late, ft.max_late_ns, ft.max_late_psns as u32),
                (late, max_ns, max_psns),
                "tap {tap} qp {qp:#x}"
            );
            assert_eq!(ft.missing_late, late);
            assert_eq!(ft.missing, late + never);
            assert_eq!(ft.missing_tap_dropped_acked, never);
            assert_eq!(
                ft.missing_lost_upstream + ft.missing_tap_dropped_resent + ft.missing_unresolved,
                0
            );
            assert_eq!(ft.missing_nak, 0);
            late_total += late;
        }
    }
    // The reordering is between the sender-side tap and the receiver-side one.
    assert!(late_total > 0 && t.taps[1].late == 0 && t.taps[0].late == late_total);
    assert!(t.taps.iter().all(|x| x.tap_dropped > 0));
}

/// The same reordering with a responder that NAKs every PSN past the
/// expected one: sequence-error NAKs and Go-Back-N resends, nothing lost.
#[test]
fn reordering_without_ooo_tolerance_draws_naks() {
    let mut cfg = Config::preset("mirror-impaired").unwrap();
    cfg.set("nic.ooo_tolerant", "false").unwrap();
    let run = simulate(&cfg).unwrap();
    let t = Truth::of(&run);
    let c = &t.connections[0];
    assert!(
        c.reordered > 0 && c.naks_sent > 0 && c.rewinds_nak > 0,
        "{c:?}"
    );
    assert!(c.packets_resent > 0 && c.duplicates_received > 0, "{c:?}");
    assert_eq!((c.ooo_received, c.link_drops, c.switch_drops), (0, 0, 0));
    assert_eq!(c.delivered_packets, 64 * 16);
    let f = t.flow(0, 0).unwrap();
    assert!(f.missing_late > 0 && f.missing_nak > 0, "{f:?}");
    assert!(f.missing_nak <= f.missing);
    // Nothing is lost: every NAKed PSN was only late.
    assert_eq!(f.missing_nak_late, f.missing_nak);
}

/// Bit errors on spine0 -> leaf1: at the tap past the link, the frames the
/// truth calls bad fail the decoder's ICRC check and the rest pass; the tap
/// before the link sees none; the receivers discard every bad frame and NAK.
#[test]
fn corrupted_frames_fail_the_icrc_in_the_capture() {
    let (run, t) = run_named("corruption", 1);
    let recs = written(&run, &bridge::CaptureOptions::default());
    for tap in 0..2u32 {
        let (mut bad, mut good) = (0, 0);
        for r in recs.iter().filter(|r| r.iface == tap) {
            match r.decoded().icrc_ok() {
                Some(false) => bad += 1,
                Some(true) => good += 1,
                None => panic!("nothing is cut"),
            }
        }
        assert_eq!(bad, t.taps[tap as usize].icrc_bad, "tap {tap}");
        assert!(good > 1000);
        let flows: u64 = t
            .flows
            .iter()
            .filter(|f| f.tap == tap as usize)
            .map(|f| f.icrc_bad)
            .sum();
        assert_eq!(flows, bad);
    }
    assert_eq!(t.taps[1].icrc_bad, 0, "upstream of the bad link");
    // r0's flow: every bit error it took passed the tap at r0.
    let c0 = &t.connections[0];
    assert_eq!(t.taps[0].icrc_bad, c0.corrupted);
    for c in &t.connections {
        assert!(c.corrupted > 10, "{c:?}");
        assert_eq!(c.corrupt_discarded, c.corrupted);
        assert!(c.naks_sent > 0 && c.rewinds_nak > 0 && c.packets_resent > 0);
        assert_eq!(c.delivered_packets, 2000);
    }
}

/// A sniffer capture: every RoCE frame from UDP port 4791 with the
/// NIC's clock as its source MAC, long frames cut at 128 bytes with the record's
/// original length saying 128 (only the IP total length shows the cut),
/// and no whole RoCE frame with a valid ICRC.
#[test]
fn sniffer_captures_rewrite_and_cut() {
    let (run, _) = run_scenario("healthy", 1, Some(2000)).unwrap();
    let opts = bridge::CaptureOptions {
        sniffer: Some(128),
        ..Default::default()
    };
    let t = Truth::of_capture(&run, &opts);
    assert!(t.capture.sniffer && t.capture.sniffer_cut == 128);
    let recs = written(&run, &opts);
    let (mut cut, mut bad) = (vec![0u64; 2], vec![0u64; 2]);
    for r in &recs {
        let d = r.decoded();
        assert!(matches!(d.kind(), crate::Kind::Roce | crate::Kind::Cnp));
        assert_eq!(d.udp_sport, 4791);
        // The MAC is the NIC's clock; the capture's time is the model's to
        // the microsecond.
        let nic = crate::sources::mac_value(&d.src_mac) - bridge::sniffer_boot_ns(r.iface as usize);
        assert!(r.ts_ns.is_multiple_of(1000) && (r.ts_ns..r.ts_ns + 1000).contains(&nic));
        assert_eq!(r.orig_len as usize, r.data.len());
        assert!(r.data.len() <= 128);
        let ip_total = u16::from_be_bytes([r.data[16], r.data[17]]) as usize;
        if 14 + ip_total > r.data.len() {
            cut[r.iface as usize] += 1;
        } else {
            bad[r.iface as usize] += 1;
            // Recomputed over the rewritten header, the ICRC does not match.
            let crc = crate::transport::roce::icrc::compute(&r.data[14..14 + ip_total]).unwrap();
            assert_ne!(crc.to_le_bytes(), r.data[14 + ip_total - 4..14 + ip_total]);
            assert_eq!(d.icrc_ok(), Some(false));
        }
    }
    for tap in 0..2 {
        assert_eq!(cut[tap], t.taps[tap].cut, "tap {tap}");
        assert_eq!(bad[tap], t.taps[tap].icrc_bad, "tap {tap}");
        assert!(cut[tap] > 500 && bad[tap] > 50);
    }
    // Not cut: every RoCE frame is whole and fails its ICRC.
    let opts = bridge::CaptureOptions {
        sniffer: Some(0),
        ..Default::default()
    };
    let t = Truth::of_capture(&run, &opts);
    let recs = written(&run, &opts);
    assert!(recs.iter().all(|r| r.decoded().icrc_ok() == Some(false)));
    assert_eq!(
        t.taps.iter().map(|t| t.icrc_bad).sum::<u64>(),
        recs.len() as u64
    );
    assert_eq!(t.taps.iter().map(|t| t.cut).sum::<u64>(), 0);
    let err = bridge::write_capture(
        &run,
        &tempfile::tempdir().unwrap().path().join("x.pcapng"),
        &bridge::CaptureOptions {
            sniffer: Some(0),
            erspan: Some(crate::synth::ErspanVersion::III),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("sniffer"), "{err}");
}

/// Packets lost on spine0 -> leaf1 are missing at the receivers' leaf and
/// first recorded there in a resend: per flow, exactly the first
/// transmissions the sender-side tap recorded and the receiver-side one
/// never did.
#[test]
fn lost_upstream_are_the_first_transmissions_that_never_got_there() {
    let (run, t) = run_named("lossy-link", 1);
    let firsts = |tap: usize, flow: usize| -> std::collections::BTreeSet<u64> {
        run.frames
            .iter()
            .zip(&run.meta)
            .filter(|(f, m)| f.tap == tap && m.flow == Some(flow) && !m.retrans)
            .filter_map(|(_, m)| m.index)
            .collect()
    };
    let mut lost_total = 0;
    for (flow, sender_tap, receiver_tap) in [(0, 0, 2), (1, 1, 3)] {
        let sent = firsts(sender_tap, flow);
        let got = firsts(receiver_tap, flow);
        let top = *got.last().unwrap();
        let lost = sent.difference(&got).filter(|&&i| i < top).count() as u64;
        let f = t.flow(receiver_tap, flow).unwrap();
        assert_eq!(f.missing, lost, "{f:?}");
        assert_eq!(f.missing_lost_upstream + f.missing_unresolved, lost);
        assert_eq!(f.missing_late + f.tap_dropped, 0);
        assert!(f.missing_nak > 0 && f.missing_nak <= f.missing, "{f:?}");
        assert_eq!(
            f.missing_nak_lost_upstream + f.missing_nak_unresolved,
            f.missing_nak
        );
        // Upstream of the loss nothing is missing.
        assert_eq!(t.flow(sender_tap, flow).unwrap().missing, 0);
        lost_total += lost;
    }
    assert!(lost_total > 0);
    assert!(lost_total <= run.fabric.link_drops);
}

/// The connections section says what the model's QPs counted.
#[test]
fn connections_are_the_models_counters() {
    let (_, t) = run_named("ghost-drop", 1);
    for (c, q) in t.connections.iter().zip(&t.qps) {
        let s = &q.stats;
        assert_eq!(
            (
                c.packets_sent,
                c.packets_resent,
                c.timeouts,
                c.rewinds_timeout
            ),
            (
                s.sent_packets,
                s.retrans_packets,
                s.timeouts,
                s.rewinds_timeout
            )
        );
        assert_eq!(c.first_transmissions + c.packets_resent, c.packets_sent);
        assert!(c.spurious_resends >= c.spurious_resends_acked);
        assert_eq!(c.duplicates_received, s.duplicate_packets);
    }
    let victim = &t.connections[2];
    assert!(victim.timeouts > 0 && victim.rewinds_timeout > 0 && victim.spurious_resends > 0);
    // The victim's resends were of packets already delivered: the responder
    // got each of them twice.
    assert!(victim.duplicates_received >= victim.spurious_resends);
}

/// A rewind the tap recorded any resent packet of is seen there: without
/// mirror drops, every rewind whose first packet the tap recorded; with
/// them, the same rewinds as the run without (the fabric does the same),
/// although the mirror lost some of their first packets.
#[test]
fn rewinds_seen_survive_mirror_drops() {
    for name in roce_scenarios() {
        let (_, t) = run_short(name, 1, 1_000_000);
        for f in &t.flows {
            if f.tap_dropped == 0 {
                assert_eq!(
                    (f.model_rewinds_seen_nak, f.model_rewinds_seen_timeout),
                    (f.model_rewinds_nak, f.model_rewinds_timeout),
                    "{name} {}",
                    f.iface
                );
            }
        }
    }
    let mut cfg = Config::preset("ghost-drop").unwrap();
    cfg.duration_ns = 1_000_000;
    let clean = Truth::of(&simulate(&cfg).unwrap());
    cfg.set("taps.0.drop", "0.3").unwrap();
    let lossy = Truth::of(&simulate(&cfg).unwrap());
    let (c, l) = (clean.flow(0, 2).unwrap(), lossy.flow(0, 2).unwrap());
    assert!(c.model_rewinds_timeout > 0);
    assert_eq!(l.model_rewinds_seen_timeout, c.model_rewinds_timeout);
    assert!(
        l.model_rewinds_timeout < l.model_rewinds_seen_timeout,
        "{l:?}"
    );
    assert!(l.tap_dropped > 0 && l.missing_tap_dropped_acked > 0);
}

/// A tap that records only the requests cannot show an ACK: what its mirror
/// dropped stays unresolved, although the responder acknowledged all of it.
#[test]
fn capture_loss_needs_the_ack_in_the_capture() {
    let mut cfg = Config::preset("mirror-impaired").unwrap();
    cfg.set("taps.1.dir", "rx").unwrap();
    let run = simulate(&cfg).unwrap();
    let t = Truth::of(&run);
    let f = t.flow(1, 1).unwrap();
    assert_eq!(f.acks, 0);
    assert!(f.missing > 0 && f.tap_dropped > 0, "{f:?}");
    assert_eq!(
        (f.missing_unresolved, f.missing_tap_dropped_acked),
        (f.missing, 0)
    );
    assert_eq!(t.connections[1].delivered_packets, 64 * 16);
}

/// The pause trees follow the model's causes hop by hop: in pfc-storm the
/// receiver r0 stops draining, its NIC pauses leaf1, leaf1's port toward
/// the spine pauses the spine (its bytes wait at leaf1's port toward r0,
/// which r0 paused), the spine pauses leaf0, and leaf0 pauses both senders.
/// Every step's bytes wait at the egress port toward its cause's device.
#[test]
fn pause_trees_follow_the_pauses_that_held_each_queue() {
    let mut cfg = Config::preset("pfc-storm").unwrap();
    cfg.duration_ns = 300_000;
    let run = simulate(&cfg).unwrap();
    let trees = Truth::of(&run).pfc_trees;
    let storm = trees
        .trees
        .iter()
        .find(|t| t.nodes.len() > 1)
        .expect("the storm spreads");
    let chain: Vec<(&str, &str, Option<usize>)> = storm
        .nodes
        .iter()
        .map(|n| (n.port.as_str(), n.kind, n.cause))
        .collect();
    assert_eq!(
        chain,
        [
            ("r0-leaf1", "host", None),
            ("leaf1-spine0", "switch", Some(0)),
            ("spine0-leaf0", "switch", Some(1)),
            ("leaf0-s1", "switch", Some(2)),
            ("leaf0-s0", "switch", Some(2)),
        ]
    );
    for t in &trees.trees {
        for n in &t.nodes {
            match n.cause {
                None => assert!(n.delay_ns.is_none(), "{n:?}"),
                Some(c) => {
                    let cause = &t.nodes[c];
                    let toward = format!("{}-{}", n.device, cause.device);
                    assert_eq!(n.held_at.as_deref(), Some(toward.as_str()), "{n:?}");
                    assert!(n.onset_ns > cause.onset_ns && n.delay_ns.is_some(), "{n:?}");
                }
            }
            for s in &n.seen {
                let lag = s.first_xoff_ns - n.onset_ns;
                assert!(lag <= trees.onset_lag_max_ns, "{n:?}");
            }
        }
    }
    // r0's pause never ends: one episode, paused from its onset to the end.
    let r0 = &storm.nodes[0];
    assert_eq!((r0.episodes, r0.held_at.as_deref()), (1, None));
    assert_eq!(r0.paused_ns, run.fabric.end_ns - r0.onset_ns);
}

/// Counts past a byte and past the ephemeral range's span (in a debug
/// build, where an overflow panics): 250 senders and receivers, 1000
/// connections, 300 pinned to uplinks. Every source port stays within
/// 0xC000..=0xFFFF, and r6 (node 256) no longer shares s0's MAC.
#[test]
fn many_connections_keep_ports_and_macs_apart() {
    let mut c = Config::preset("healthy").unwrap();
    c.senders = 250;
    c.receivers = 250;
    c.spines = 2;
    c.duration_ns = 50_000;
    c.flows = (0..1000)
        .map(|i| FlowCfg::new(i % 250, (i + 6) % 250, 1024, Some(1)))
        .collect();
    c.taps = vec![
        TapPoint::new("leaf0", "s0", Dir::Both),
        TapPoint::new("leaf1", "r6", Dir::Both),
    ];
    let uplinks: Vec<usize> = (0..300).map(|i| i % 2).collect();
    c.pin_flows(&uplinks);
    for (i, f) in c.flows.iter().enumerate().take(300) {
        let sport = f.udp_sport.unwrap();
        let pick = switch::ecmp_pick(
            hosts::sender_ip(f.src),
            hosts::receiver_ip(f.dst),
            sport,
            hosts::responder_qpn(i),
            2,
        );
        assert!(
            sport >= 0xC000 && pick == uplinks[i],
            "flow {i}: {sport:#x}"
        );
    }
    let run = simulate(&c).unwrap();
    assert_eq!(run.qps.len(), 1000);
    assert!(run.qps.iter().all(|q| q.udp_sport >= 0xC000));
    // Past the pinned ones: 0xC000 + i × 0x1F3, wrapped within the range.
    assert_eq!(
        run.qps[999].udp_sport,
        0xC000 + (999 * 0x1F3 % 0x4000) as u16
    );
    // Each host's own frames at its tap carry its port's MAC.
    let own = [hosts::sender_ip(0), hosts::receiver_ip(6)];
    let mut macs = BTreeMap::new();
    for f in &run.frames {
        if let Some(r) = f.frame.as_roce().filter(|r| r.src_ip == own[f.tap]) {
            macs.entry(r.src_ip)
                .or_insert_with(std::collections::BTreeSet::new)
                .insert(r.src_mac);
        }
    }
    let (s0, r6) = (&macs[&hosts::sender_ip(0)], &macs[&hosts::receiver_ip(6)]);
    assert_eq!((s0.len(), r6.len()), (1, 1), "{macs:?}");
    assert_ne!(s0, r6);
    c.spines = hosts::MAX_SPINES + 1;
    assert!(simulate(&c).unwrap_err().contains("at most 64 spines"));
}
