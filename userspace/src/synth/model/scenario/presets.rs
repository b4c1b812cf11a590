//! The named presets: each a [`Config`] with what sets it apart from the
//! default.

use super::{Config, Dir, FlowCfg, Impairment, RateChange, Slowdown, TapPoint};

/// RoCE's scenarios ([`Config::preset`]); `model::SCENARIOS` lists every
/// transport's.
pub const SCENARIOS: &[&str] = &[
    "healthy",
    "ghost-drop",
    "ghost-drop-fixed",
    "lossy-link",
    "lossy-spine",
    "incast",
    "pfc-storm",
    "ecn-broken",
    "ecmp-collision",
    "mirror-impaired",
    "corruption",
    "nic-timeout",
    "mtu-blackhole",
    "mtu-mismatch",
    "qos-mismatch",
    "ecn-overmark",
    "dcqcn-off",
];

impl Config {
    /// A named preset, or `None` for an unknown name (see [`SCENARIOS`]).
    pub fn preset(name: &str) -> Option<Config> {
        let mut c = Config {
            name: name.into(),
            ..Config::default()
        };
        match name {
            "healthy" => {
                // Each flow has its own spine: no shared queue anywhere.
                c.spines = 2;
                c.pin_flows(&[0, 1]);
            }
            "ghost-drop" | "ghost-drop-fixed" => {
                // A 400G fabric. Two writers into r0, whose host stalls for
                // 120 us of every 500 us (draining at 10 Gb/s), and a victim
                // s2 -> r1 sharing the leaf0 -> spine0 -> leaf1 path. The
                // writers' offered load (120 + 120 Gb/s) fits r0's link and
                // the victim's (150 Gb/s) fits the shared path: only the
                // stalls build queues, and PFC spreads them to the victim.
                c.senders = 3;
                c.receivers = 2;
                c.duration_ns = 3_000_000;
                c.link_gbps = 400.0;
                c.flows = vec![
                    FlowCfg {
                        gbps: Some(120.0),
                        ..FlowCfg::new(0, 0, 262_144, None)
                    },
                    FlowCfg {
                        gbps: Some(120.0),
                        ..FlowCfg::new(1, 0, 262_144, None)
                    },
                    FlowCfg {
                        gbps: Some(150.0),
                        ..FlowCfg::new(2, 1, 262_144, None)
                    },
                ];
                c.slowdowns = vec![Slowdown {
                    host: 0,
                    start_ns: 100_000,
                    period_ns: 500_000,
                    slow_ns: 120_000,
                    gbps: 10.0,
                }];
                c.taps = vec![
                    TapPoint::new("leaf0", "s2", Dir::Both),
                    TapPoint::new("leaf0", "s0", Dir::Both),
                    TapPoint::new("leaf1", "r0", Dir::Both),
                    TapPoint::new("spine0", "leaf1", Dir::Both),
                ];
                if name == "ghost-drop" {
                    // Before the fix: a short minimum RTO, ECN above PFC XOFF
                    // (so PFC fires first and ECN never gets a say).
                    c.nic.min_rto_ns = 40_000;
                    c.switch.ecn_min = 1600 * 1024;
                    c.switch.ecn_max = 3200 * 1024;
                    c.switch.ecn_pmax = 0.05;
                    c.switch.pfc_xoff = 200 * 1024;
                    c.switch.pfc_xon = 120 * 1024;
                }
                // ghost-drop-fixed keeps the defaults: min RTO 1.05 ms,
                // ECN 180 KB / 800 KB / 10 %, PFC 2800 KB / 2200 KB.
            }
            "lossy-link" => {
                c.duration_ns = 2_000_000;
                c.flows = vec![
                    // Starts just below 2^24: the PSNs wrap mid-run.
                    FlowCfg {
                        start_psn: 0xFF_FF00,
                        ..FlowCfg::new(0, 0, 65536, Some(48))
                    },
                    FlowCfg::new(1, 1, 65536, Some(48)),
                ];
                c.impairments = vec![Impairment {
                    node: "spine0".into(),
                    toward: "leaf1".into(),
                    loss: 0.002,
                    corrupt: 0.001,
                    ..Impairment::default()
                }];
                c.taps = vec![
                    TapPoint::new("leaf0", "s0", Dir::Both),
                    TapPoint::new("leaf0", "s1", Dir::Both),
                    TapPoint::new("leaf1", "r0", Dir::Both),
                    TapPoint::new("leaf1", "r1", Dir::Both),
                ];
            }
            "lossy-spine" => {
                // One spine whose link down to leaf1 loses 0.5 % of frames,
                // mirrored on both ends of that link and at s0's port: the
                // hop spine0 → leaf1 is where the frames vanish
                // (see docs/synth.md). Two flows share it at 40 Gb/s each.
                c.spines = 1;
                c.duration_ns = 2_000_000;
                c.flows = vec![
                    FlowCfg {
                        gbps: Some(40.0),
                        ..FlowCfg::new(0, 0, 65536, Some(32))
                    },
                    FlowCfg {
                        gbps: Some(40.0),
                        ..FlowCfg::new(1, 1, 65536, Some(32))
                    },
                ];
                c.impairments = vec![Impairment {
                    node: "spine0".into(),
                    toward: "leaf1".into(),
                    loss: 0.005,
                    ..Impairment::default()
                }];
                c.taps = vec![
                    TapPoint::new("leaf0", "s0", Dir::Both),
                    TapPoint::new("spine0", "leaf1", Dir::Both),
                    TapPoint::new("leaf1", "spine0", Dir::Both),
                ];
            }
            "incast" => {
                c.senders = 8;
                c.receivers = 1;
                c.duration_ns = 2_000_000;
                c.flows = (0..8)
                    .map(|s| FlowCfg {
                        start_ns: s as u64 * 1000,
                        ..FlowCfg::new(s, 0, 131_072, None)
                    })
                    .collect();
                c.switch.pfc_xoff = 64 * 1024;
                c.switch.pfc_xon = 40 * 1024;
                c.taps = vec![
                    TapPoint::new("leaf1", "r0", Dir::Both),
                    TapPoint::new("leaf0", "s0", Dir::Both),
                ];
            }
            "pfc-storm" => {
                // r0 stops draining for good; s1 -> r1 is the victim.
                c.duration_ns = 250_000_000;
                c.rx_gbps = vec![0.0, 0.0];
                c.rate_changes = vec![RateChange {
                    host: 0,
                    at_ns: 30_000,
                    gbps: 0.0,
                }];
                c.flows = vec![
                    FlowCfg::new(0, 0, 65536, None),
                    FlowCfg::new(1, 1, 65536, None),
                ];
                c.switch.pfc_xoff = 200 * 1024;
                c.switch.pfc_xon = 120 * 1024;
                c.taps = vec![
                    TapPoint::new("leaf1", "r0", Dir::Both),
                    TapPoint::new("leaf0", "s1", Dir::Both),
                ];
            }
            "ecn-broken" => {
                c.senders = 2;
                c.receivers = 1;
                c.flows = vec![
                    FlowCfg::new(0, 0, 131_072, Some(64)),
                    FlowCfg::new(1, 0, 131_072, Some(64)),
                ];
                c.nic.cnp_enabled = false;
                c.taps = vec![
                    TapPoint::new("leaf0", "s0", Dir::Both),
                    TapPoint::new("leaf1", "r0", Dir::Both),
                ];
            }
            "ecmp-collision" => {
                // Two elephants whose UDP source ports hash onto spine0; spine1 idles.
                c.senders = 2;
                c.receivers = 2;
                c.spines = 2;
                c.flows = vec![
                    FlowCfg::new(0, 0, 1 << 20, None),
                    FlowCfg::new(1, 1, 1 << 20, None),
                ];
                c.taps = vec![
                    TapPoint::new("leaf0", "spine0", Dir::Tx),
                    TapPoint::new("leaf0", "spine1", Dir::Tx),
                    TapPoint::new("leaf0", "s0", Dir::Both),
                ];
                c.pin_flows(&[0, 0]);
            }
            "mirror-impaired" => {
                // A clean network seen through poor mirrors: each flow has its
                // own spine (no shared queue, no PFC), both uplinks send one
                // frame in 100 on a path 2 us longer, and the responders
                // place out-of-order packets without a NAK. The receiver-side
                // mirror drops 1 % and records a tenth of the frames twice,
                // exactly; the sender-side one drops 1 % and records every
                // frame again 400 ns later (a cut-through switch's latency)
                // as the switch routed it out.
                c.spines = 2;
                c.pin_flows(&[0, 1]);
                c.nic.ooo_tolerant = true;
                c.impairments = ["spine0", "spine1"]
                    .iter()
                    .map(|spine| Impairment {
                        node: "leaf0".into(),
                        toward: (*spine).into(),
                        reorder: 0.01,
                        reorder_delay_ns: 2_000,
                        ..Impairment::default()
                    })
                    .collect();
                c.taps = vec![
                    TapPoint {
                        drop: 0.01,
                        duplicate: 0.1,
                        ..TapPoint::new("leaf1", "r0", Dir::Both)
                    },
                    TapPoint {
                        drop: 0.01,
                        duplicate: 1.0,
                        dup_gap_ns: 400,
                        dup_egress: true,
                        ..TapPoint::new("leaf0", "s1", Dir::Both)
                    },
                ];
            }
            "corruption" => {
                // Bit errors on spine0 -> leaf1: one frame in 50 arrives
                // with a bad ICRC. Two flows of 256-byte writes share the
                // link at 40 Gb/s each (no congestion); the receiving NICs
                // discard the bad frames and NAK the next one, the senders
                // resend. The tap at r0 sees the bad frames, the one at s0
                // only the NAKs and the resends. A resend hit again draws no
                // second NAK (one per sequence error): the timeout recovers
                // it, and the run lasts long enough for a few of those.
                c.spines = 1;
                c.duration_ns = 4_000_000;
                c.flows = vec![
                    FlowCfg {
                        gbps: Some(40.0),
                        ..FlowCfg::new(0, 0, 256, Some(2000))
                    },
                    FlowCfg {
                        gbps: Some(40.0),
                        ..FlowCfg::new(1, 1, 256, Some(2000))
                    },
                ];
                c.impairments = vec![Impairment {
                    node: "spine0".into(),
                    toward: "leaf1".into(),
                    corrupt: 0.02,
                    ..Impairment::default()
                }];
                c.taps = vec![
                    TapPoint::new("leaf1", "r0", Dir::Both),
                    TapPoint::new("leaf0", "s0", Dir::Both),
                ];
            }
            "nic-timeout" => {
                // A request-response workload: one 4 KB write outstanding
                // per connection, over a link that loses one frame in 20. A
                // lost write has no successor to reveal the hole, so every
                // loss is recovered by the requester's timer (65.536 µs: IB
                // local ACK timeout T = 4) with no pause to hold the resend
                // up: the taps at the senders see the NIC's timeout itself.
                c.duration_ns = 2_000_000;
                c.nic.min_rto_ns = 65_536;
                c.nic.max_outstanding = 1;
                c.flows = vec![
                    FlowCfg::new(0, 0, 4096, None),
                    FlowCfg::new(1, 1, 4096, None),
                ];
                c.impairments = vec![Impairment {
                    node: "spine0".into(),
                    toward: "leaf1".into(),
                    loss: 0.05,
                    ..Impairment::default()
                }];
                c.taps = vec![
                    TapPoint::new("leaf0", "s0", Dir::Both),
                    TapPoint::new("leaf0", "s1", Dir::Both),
                ];
            }
            "mtu-blackhole" => {
                // spine0 -> leaf1 carries frames of at most 1522 bytes (a
                // 1500-byte MTU hop) while the NICs use RoCE MTU 4096: s0's
                // 64 KB writes (4 KB frames) vanish there every time, s1's
                // 1 KB writes pass. s0's requester times out and resends
                // the same first packet again and again.
                c.duration_ns = 6_000_000;
                c.nic.max_outstanding = 16;
                c.flows = vec![
                    FlowCfg::new(0, 0, 65536, None),
                    FlowCfg {
                        gbps: Some(0.5),
                        ..FlowCfg::new(1, 1, 1024, None)
                    },
                ];
                c.impairments = vec![Impairment {
                    node: "spine0".into(),
                    toward: "leaf1".into(),
                    max_frame: 1522,
                    ..Impairment::default()
                }];
                // The spine's port toward leaf1 sees both connections: s0's
                // requests with nothing coming back, s1's and its ACKs.
                c.taps = vec![
                    TapPoint::new("leaf0", "s0", Dir::Both),
                    TapPoint::new("leaf0", "s1", Dir::Both),
                    TapPoint::new("spine0", "leaf1", Dir::Both),
                ];
            }
            "mtu-mismatch" => {
                // Three writers of 64 KB messages; the second QP from s0 to
                // r0 was set up with RoCE MTU 1024 while the fabric and the
                // other QPs use 4096 (a NIC or an application that asked for
                // less): it needs four packets where the others need one.
                c.senders = 2;
                c.receivers = 2;
                c.flows = vec![
                    FlowCfg {
                        gbps: Some(20.0),
                        ..FlowCfg::new(0, 0, 65536, None)
                    },
                    FlowCfg {
                        gbps: Some(20.0),
                        ..FlowCfg::new(1, 1, 65536, None)
                    },
                    FlowCfg {
                        gbps: Some(20.0),
                        mtu: Some(1024),
                        ..FlowCfg::new(0, 0, 65536, None)
                    },
                ];
                c.taps = vec![
                    TapPoint::new("leaf0", "s0", Dir::Both),
                    TapPoint::new("leaf0", "s1", Dir::Both),
                ];
            }
            "qos-mismatch" => {
                // PFC runs on priority 3 (DSCP 26), where two writers into
                // r0 congest leaf1's port toward r0 and pause the fabric;
                // s2's NIC was left at TOS 0: its writes to r1 go on DSCP 0,
                // priority 0, which nothing ever pauses (PFC is on for
                // priority 3 alone). spine0 remarks DSCP 26 to 10 toward leaf1,
                // leaf0 the CNPs' DSCP 48 to 0 toward s0. Tagged frames (VLAN 100) carry the
                // priority in their PCP.
                c.senders = 3;
                c.receivers = 2;
                c.spines = 2;
                c.duration_ns = 1_000_000;
                c.vlan = Some(100);
                c.flows = vec![
                    FlowCfg::new(0, 0, 131_072, None),
                    FlowCfg::new(1, 0, 131_072, None),
                    FlowCfg {
                        prio: Some(0),
                        dscp: Some(0),
                        gbps: Some(20.0),
                        ..FlowCfg::new(2, 1, 65536, None)
                    },
                ];
                c.switch.pfc_xoff = 64 * 1024;
                c.switch.pfc_xon = 40 * 1024;
                // ECN marks before PFC fires: CNPs come back.
                c.switch.ecn_min = 16 * 1024;
                c.switch.ecn_max = 48 * 1024;
                c.pfc_priorities = Some(vec![3]);
                c.impairments = vec![
                    Impairment {
                        node: "spine0".into(),
                        toward: "leaf1".into(),
                        remark_dscp: vec![[26, 10]],
                        ..Impairment::default()
                    },
                    // leaf0 rewrites the CNPs' DSCP 48 to 0 toward s0.
                    Impairment {
                        node: "leaf0".into(),
                        toward: "s0".into(),
                        remark_dscp: vec![[48, 0]],
                        ..Impairment::default()
                    },
                ];
                c.taps = vec![
                    TapPoint::new("leaf0", "s0", Dir::Both),
                    TapPoint::new("leaf0", "s2", Dir::Both),
                    TapPoint::new("leaf1", "r0", Dir::Both),
                ];
                // The writers share spine0, s2's flow has spine1.
                c.pin_flows(&[0, 0, 1]);
            }
            "ecn-overmark" => {
                // Four writers into r0 at 20, 21, 23 and 24 Gb/s: 88 % of
                // r0's link, no congestion. Their packets drift past each
                // other at leaf1's port toward r0 and now and then queue a
                // packet or two behind each other. The switches' ECN profile
                // marks from 2 KB of queue (everything from 8 KB): less than
                // one packet. r0 returns CNPs for these meetings and DCQCN
                // holds the writers well below what they offer and the link
                // carries; no queue comes near PFC. 1.5 ms, seen at r0's
                // port (where all four pass).
                c.duration_ns = 1_500_000;
                c.senders = 4;
                c.receivers = 1;
                c.flows = [20.0, 21.0, 23.0, 24.0]
                    .iter()
                    .enumerate()
                    .map(|(s, &gbps)| FlowCfg {
                        gbps: Some(gbps),
                        ..FlowCfg::new(s, 0, 65536, None)
                    })
                    .collect();
                c.switch.ecn_min = 2 * 1024;
                c.switch.ecn_max = 8 * 1024;
                c.switch.ecn_pmax = 1.0;
                c.taps = vec![TapPoint::new("leaf1", "r0", Dir::Both)];
            }
            "dcqcn-off" => {
                // Two writers into r0: s0 at line rate with DCQCN, s1 at
                // 60 Gb/s from a NIC with congestion control off
                // (flows.1.dcqcn=false) for 40 messages (about 0.35 ms).
                // The queue at leaf1's port toward r0 marks both; s0 halves
                // its rate at each CNP, s1 keeps sending at 60 Gb/s whatever
                // comes back; once s1 is done s0 climbs back to line rate,
                // by 20 Gb/s per DCQCN period (an additive increase that
                // fits the climb into a 1 ms run).
                c.duration_ns = 1_000_000;
                c.nic.dcqcn.rai_gbps = 20.0;
                c.senders = 2;
                c.receivers = 1;
                c.flows = vec![
                    FlowCfg::new(0, 0, 65536, None),
                    FlowCfg {
                        gbps: Some(60.0),
                        dcqcn: Some(false),
                        ..FlowCfg::new(1, 0, 65536, Some(40))
                    },
                ];
                c.taps = vec![
                    TapPoint::new("leaf0", "s0", Dir::Both),
                    TapPoint::new("leaf0", "s1", Dir::Both),
                ];
            }
            _ => return None,
        }
        Some(c)
    }
}
