//! PFC pauses, storms, stalls and the ghost drop they cause.

use super::*;

/// Priority 3 paused for 335.5 µs from 10 µs; the sender's 250 µs timer
/// fires during it and it goes back 6 PSNs, 4 of them already
/// acknowledged (PSN 1008, the next new one, not sent yet).
pub(super) fn paused_resend() -> Vec<PacketRecord> {
    let mut recs = Vec::new();
    for i in 0..8u32 {
        recs.push(tagged(req(i as u64 * US, 1000 + i), 3));
    }
    recs.push(tagged(ack(8 * US, 1001), 3));
    recs.push(tagged(ack(9 * US, 1003), 3));
    recs.push(pfc3(10 * US, 65535)); // until 10 + 335.539 µs
    for i in 0..6u32 {
        recs.push(tagged(req(257 * US + i as u64 * US, 1002 + i), 3));
    }
    recs
}

#[test]
fn ghost_drop_under_pfc_pause_is_diagnosed() {
    // The acceptance scenario: `paused_resend`.
    let mut recs = paused_resend();
    recs.push(tagged(req(400 * US, 1008), 3));
    let r = run(&recs);
    let f = r.flow(A, QB);
    assert_eq!((f.retrans_packets, f.spurious_retrans), (6, 2));
    assert_eq!(
        (f.rewinds, f.rewinds_timeout, f.max_rewind_depth),
        (1, 1, 6)
    );
    assert_eq!(f.pcp, Some(3));
    let e = &r.events("rewind")[0];
    assert_eq!(e.idle_us, Some(250.0));
    assert!(
        matches!(
            e.detail,
            EventDetail::Rewind(RewindDetail {
                paused: Some(PausedIdle {
                    priority: 3,
                    paused_ns: 247_000,
                    ..
                }),
                ..
            })
        ),
        "{:?}",
        e.detail
    );
    assert_eq!(r.a.pfc.len(), 1);
    assert_eq!(
        r.a.pfc[0],
        PfcInterval {
            iface: 0,
            src_mac: MAC,
            priority: 3,
            start_ns: 10 * US,
            end_ns: 10 * US + 335_539,
            frames: 1,
            ended_by: PauseEnd::Expiry,
        }
    );
    let g = r.finding("ghost-retransmissions").expect("ghost");
    assert_eq!(g.severity, Severity::Critical);
    for want in [
        "flow 0 (10.0.0.1 → 10.0.0.2 QP 256, if0)",
        "rewound 6 PSNs back to PSN 1002 after 250.0 µs idle, on a timeout (no NAK preceded it)",
        "2 of the 6 rewound PSNs had already been acknowledged",
        "priority 3 was paused for 247.0 µs of that idle time",
        "covered by the pause of 335.5 µs on if0 priority 3 by 02:00:00:00:00:0b (from t+10.0 µs, 1 frame, ran out without a refresh)",
        "1 of them while the flow's priority was paused",
    ] {
        assert!(g.detail.contains(want), "missing {want:?} in {}", g.detail);
    }
    assert!(
        g.recommendation.contains("T ≥ 7 (524.3 µs)"),
        "{}",
        g.recommendation
    );
    let v = r.finding("pfc-victims").expect("victims");
    // The ACK flow fell silent as the pause began and stayed so to the end.
    assert_eq!(v.flows, vec![0, 1]);
    assert!(r.finding("pfc-pressure").is_some());
    let text = render_text(&r.a, r.a.summary.frames.total, None);
    assert!(text.contains("ghost-retransmissions"), "{text}");
    assert!(text.contains("rewound 6 PSNs back to PSN 1002"), "{text}");
    assert!(text.contains("Top flows by retransmissions"), "{text}");
}

#[test]
fn pfc_refresh_xon_expiry_and_capture_end() {
    let q = |p: u8, n: u16| {
        let mut quanta = [0; 8];
        quanta[p as usize] = n;
        quanta
    };
    let recs = [
        // Priority 3: paused at 0 for 5120 ns, refreshed at 3000, XON at 6000.
        pfc(0, 1 << 3, q(3, 1000)),
        pfc(3000, 1 << 3, q(3, 1000)),
        pfc(6000, 1 << 3, q(3, 0)),
        // An XON with nothing paused.
        pfc(7000, 1 << 3, q(3, 0)),
        // 512 ns at 10 µs, expires at 10512; the next frame starts a new one.
        pfc(10_000, 1 << 3, q(3, 100)),
        // A refresh arriving exactly at expiry keeps the pause.
        pfc(20_000, 1 << 3, q(3, 100)),
        pfc(20_512, 1 << 3, q(3, 100)),
        // Priority 4 bit clear: its quanta are ignored. Priority 6 paused until past the end.
        {
            let mut quanta = q(6, 65535);
            quanta[4] = 500;
            pfc(30_000, 1 << 6, quanta)
        },
        // 802.3x PAUSE: not PFC.
        PacketRecord {
            ts_ns: 35_000,
            kind: Kind::Pause as u8,
            flags: flags::HAS_PAUSE,
            ..PacketRecord::default().with_link_control(crate::LinkControlView {
                pause_quanta: 65535,
                ..crate::LinkControlView::default()
            })
        },
        req(40_000, 1),
    ];
    let r = run(&recs);
    let p = &r.a.pfc;
    let rows: Vec<_> = p
        .iter()
        .map(|i| (i.priority, i.start_ns, i.end_ns, i.frames, i.ended_by))
        .collect();
    assert_eq!(
        rows,
        [
            (3, 0, 6000, 2, PauseEnd::Xon),
            (3, 10_000, 10_512, 1, PauseEnd::Expiry),
            (3, 20_000, 21_024, 2, PauseEnd::Expiry),
            (6, 30_000, 40_000, 1, PauseEnd::CaptureEnd),
        ]
    );
    assert_eq!(r.events("pfc_pause").len(), 4);
    assert_eq!(r.events("pfc_storm").len(), 0);
    let s = &r.a.summary;
    assert_eq!((s.frames.pfc, s.frames.pause, s.frames.total), (8, 1, 10));
    assert_eq!(s.duration_ns, 40_000);
    assert_eq!(s.pfc.len(), 2);
    let p3 = &s.pfc[0];
    assert_eq!(
        (p3.iface, p3.priority, p3.frames, p3.xon_frames),
        (0, 3, 7, 2)
    );
    assert_eq!(p3.paused_ns, 6000 + 512 + 1024);
    assert_eq!(p3.fraction, 7536.0 / 40_000.0);
    assert_eq!(p3.storms, 0);
    let p6 = &s.pfc[1];
    assert_eq!(
        (p6.priority, p6.frames, p6.xon_frames, p6.paused_ns),
        (6, 1, 0, 10_000)
    );
    assert_eq!(s.totals.pfc_intervals, 4);
    assert!(r.finding("link-pause").is_some());
    let pr = r.finding("pfc-pressure").expect("pressure");
    assert_eq!(pr.severity, Severity::Critical); // 25 % on priority 6
}

#[test]
fn pauses_from_two_senders_are_unioned_per_priority() {
    let mut other = pfc3(1000, 1000); // 1000..6120
    other.src_mac = [0x02, 0, 0, 0, 0, 0x0c];
    let r = run(&[pfc3(0, 1000), other, req(10_000, 1)]);
    assert_eq!(r.a.pfc.len(), 2);
    assert_eq!(r.a.summary.pfc[0].paused_ns, 6120);
    assert_eq!(r.a.summary.pfc[0].frames, 2);
}

#[test]
fn pfc_storm_is_a_long_continuous_pause() {
    let config = Config {
        storm_ns: 1_000_000,
        ..Config::default()
    };
    let mut recs = Vec::new();
    // Refreshed every 200 µs for 2 ms, then XON.
    for i in 0..10 {
        recs.push(pfc3(i * 200 * US, 65535));
    }
    recs.push(pfc3(2000 * US, 0));
    // A short one later: not a storm.
    recs.push(pfc3(3000 * US, 1000));
    recs.push(tagged(req(4000 * US, 1), 3));
    let r = run_with(config, &recs);
    assert_eq!(r.a.pfc.len(), 2);
    assert_eq!(
        (
            r.a.pfc[0].start_ns,
            r.a.pfc[0].end_ns,
            r.a.pfc[0].frames,
            r.a.pfc[0].ended_by
        ),
        (0, 2000 * US, 10, PauseEnd::Xon)
    );
    let s = r.events("pfc_storm");
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].ts_ns, 1_000_000);
    assert_eq!(r.a.summary.pfc[0].storms, 1);
    assert_eq!(r.a.summary.totals.pfc_storms, 1);
    let f = r.finding("pfc-storm").expect("storm");
    assert_eq!(f.severity, Severity::Critical);
    assert_eq!(f.flows, vec![0]);
    assert_eq!(r.a.summary.findings[0].severity, Severity::Critical);
}

#[test]
fn a_long_idle_mostly_paused_is_a_stall() {
    // Untagged, DSCP 26 → priority 3 by default. Idle 0 → 40 µs, paused
    // 10 → 35 µs (XON): 25 of 40 µs.
    let r = run(&[
        req(0, 1),
        pfc3(10 * US, 65535),
        pfc3(35 * US, 0),
        req(40 * US, 2),
    ]);
    let v = r.finding("pfc-victims").expect("victims");
    assert_eq!(v.flows, vec![0]);
    assert!(
        v.detail.contains("1 stall, 25.0 µs paused while stalled"),
        "{}",
        v.detail
    );
    assert_eq!(r.flow(A, QB).rewinds, 0);
}

/// What a monitor reads while records come ([`Analyzer::running`], the
/// live tap's metrics): after the last record it is what the end of the
/// run writes, a pause still running counted up to that record, where the
/// end of the run closes it.
#[test]
fn running_state_at_the_last_record_is_what_the_run_writes() {
    let mut recs = paused_resend();
    let mut ce = tagged(req(400 * US, 1008), 3);
    ce.ecn = 3;
    recs.push(ce);
    // Another sender pauses priority 3 at 500 µs: still paused at the end.
    let other_mac = [0x02, 0, 0, 0, 0, 0x0c];
    let mut other = pfc3(500 * US, 65535);
    other.src_mac = other_mac;
    recs.push(other);
    recs.push(tagged(ack(600 * US, 1008), 3));

    let mut an = Analyzer::new(Config::default());
    let mut sink = VecSink::default();
    let mut seen = Running::default();
    let sender = |mac, paused_ns, open_ns| SenderPauses {
        iface: 0,
        src_mac: mac,
        priority: 3,
        paused_ns,
        frames: 1,
        open_ns,
    };
    for (i, r) in recs.iter().enumerate() {
        an.push(r, &mut sink);
        an.running(&mut seen);
        match i {
            // The pause frame: paused from now on, for nothing yet.
            10 => assert_eq!(seen.senders, [sender(MAC, 0, 0)]),
            // The resend at 257 µs: 247 µs of the pause so far, running.
            11 => assert_eq!(seen.senders, [sender(MAC, 247 * US, 247 * US)]),
            _ => {}
        }
    }
    // The first pause ran out at 345.539 µs; the second runs (100 µs so
    // far, to the last record at 600 µs).
    assert_eq!(
        seen.senders,
        [
            sender(MAC, 335_539, 0),
            sender(other_mac, 100 * US, 100 * US)
        ]
    );
    assert_eq!(seen.flows, 2);
    let a = an.finish(&mut sink);
    let t = &a.summary.totals;
    assert_eq!(
        seen.totals,
        RunningTotals {
            retrans_packets: t.retrans_packets,
            spurious_retrans: t.spurious_retrans,
            ce: t.ce,
        }
    );
    assert_eq!((t.retrans_packets, t.spurious_retrans, t.ce), (6, 2, 1));
    assert_eq!(seen.frames, a.summary.frames);
    let ends: Vec<(u64, &str)> = a
        .pfc
        .iter()
        .map(|p| (p.end_ns - p.start_ns, p.ended_by.as_str()))
        .collect();
    assert_eq!(ends, [(335_539, "expiry"), (100 * US, "capture_end")]);
    let p = &a.summary.pfc[0];
    assert_eq!(
        seen.priorities,
        [PriorityPauses {
            iface: 0,
            priority: 3,
            frames: p.frames,
            xon_frames: p.xon_frames,
            storms: p.storms,
        }]
    );
    assert_eq!((p.frames, p.xon_frames, p.storms), (2, 0, 0));
}
