//! The events' typed `detail` (docs/tables.md, events.parquet): the
//! values each event carries, and the line `crate::render` words from them.

use super::*;

/// The one CNP of a real ConnectX-4 Lx capture (tests/data/README.md):
/// from 10.0.17.1 to QP 0x000118 on 10.0.18.1, as tshark reads it too
/// (`ip.src`, `ip.dst`, `infiniband.bth.destqp`). No flow carried a CE
/// before it, so it has no reaction time.
#[test]
fn real_cnp_detail() {
    let path = crate::testdata::shared_capture("connectx4lx-cnp.pcap");
    let mut reader = crate::sources::CaptureReader::open(&path)
        .expect("the real captures in tests/data/ (or the folder ROCESCOPE_CAPTURES names)");
    let mut recs = Vec::new();
    while let Some(f) = reader.next_frame().expect("a readable capture") {
        let mut rec = crate::decode::decode(f.linktype, f.data, f.orig_len);
        rec.ts_ns = f.ts_ns;
        recs.push(rec);
    }
    let r = run(&recs);
    let cnps = r.events("cnp");
    assert_eq!(cnps.len(), 1);
    let e = cnps[0];
    assert_eq!((e.kind, e.flow_id, e.psn), (EventKind::Cnp, None, None));
    assert_eq!(
        e.detail,
        EventDetail::Cnp(CnpDetail {
            src_ip: v4(10, 0, 17, 1),
            dst_ip: v4(10, 0, 18, 1),
            qp: 0x118,
            reaction_ns: None,
        })
    );
    assert_eq!(
        e.detail.to_string(),
        "CNP from 10.0.17.1 to QP 280 on 10.0.18.1"
    );
}

/// `paused_resend` with a 100 µs storm threshold: the pause of 65 535
/// quanta (335.539 µs at 100 Gb/s) from 10 µs runs out at 345.539 µs, a
/// storm; the timeout rewind at 257 µs goes back from 1008 to 1002 after
/// 250 µs idle (PSN 1007 at 7 µs), 247 µs of it paused, with 1002 and
/// 1003 acknowledged (the ACK of 1003 at 9 µs).
#[test]
fn pause_storm_and_rewind_details() {
    let mut recs = super::pfc::paused_resend();
    recs.push(tagged(req(400 * US, 1008), 3));
    let config = Config {
        storm_ns: 100 * US,
        ..Config::default()
    };
    let r = run_with(config, &recs);

    let pause = r.events("pfc_pause");
    assert_eq!(pause.len(), 1);
    assert_eq!(pause[0].ts_ns, 10 * US);
    assert_eq!(
        pause[0].detail,
        EventDetail::PfcPause(PauseStart {
            priority: 3,
            src_mac: MAC,
            quanta: 65535,
            pause_ns: 335_539,
        })
    );
    assert_eq!(
        pause[0].detail.to_string(),
        "priority 3 paused by 02:00:00:00:00:0b (65535 quanta = 335.5 µs)"
    );

    let storm = r.events("pfc_storm");
    assert_eq!(storm.len(), 1);
    assert_eq!(storm[0].ts_ns, 10 * US + 100 * US);
    assert_eq!(
        storm[0].detail,
        EventDetail::PfcStorm(Storm {
            priority: 3,
            src_mac: MAC,
            start_ns: 10 * US,
            paused_ns: 335_539,
            threshold_ns: 100 * US,
            frames: 1,
            ended_by: PauseEnd::Expiry,
        })
    );
    assert_eq!(
        storm[0].detail.to_string(),
        "priority 3 paused by 02:00:00:00:00:0b continuously for 335.5 µs from 10000 \
         (storm threshold 100.0 µs, 1 frames, ran out without a refresh)"
    );

    let rewind = r.events("rewind");
    assert_eq!(rewind.len(), 1);
    assert_eq!(
        rewind[0].detail,
        EventDetail::Rewind(RewindDetail {
            next: 1008,
            psn: 1002,
            depth: 6,
            trigger: Trigger::Timeout,
            nak_before_ns: None,
            idle_ns: 250 * US,
            acked: 2,
            lost_before_tap: false,
            paused: Some(PausedIdle {
                priority: 3,
                paused_ns: 247 * US,
                src_mac: MAC,
                start_ns: 10 * US,
            }),
        })
    );
    assert_eq!(
        rewind[0].detail.to_string(),
        "go-back-N from next PSN 1008 back to 1002 (depth 6), no NAK for PSN 1002 seen; \
         idle 250.0 µs; 2 of the rewound PSNs already acknowledged; priority 3 paused \
         247.0 µs of the idle time (pause by 02:00:00:00:00:0b from 10000)"
    );
}
