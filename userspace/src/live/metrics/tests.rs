//! The tally and the exposition: exact lines of `/metrics` from known
//! events and PFC frames.

use super::*;
use crate::analyze::Analyzer;
use rocescope_common::{Kind, PacketRecord, flags};

fn event(
    kind: analyze::EventKind,
    trigger: Option<analyze::Trigger>,
    depth: u32,
) -> analyze::Event {
    analyze::Event {
        ts_ns: 1,
        iface: 0,
        flow_id: None,
        kind,
        psn: None,
        depth: Some(depth),
        trigger,
        idle_us: None,
        detail: detail(kind, trigger, depth),
    }
}

/// The detail an event of `kind` carries, with what the tally reads.
fn detail(
    kind: analyze::EventKind,
    trigger: Option<analyze::Trigger>,
    depth: u32,
) -> analyze::EventDetail {
    use analyze::{EventDetail, EventKind};
    match (kind, trigger) {
        (EventKind::Rewind, Some(trigger)) => EventDetail::Rewind(analyze::RewindDetail {
            next: depth,
            psn: 0,
            depth,
            trigger,
            nak_before_ns: (trigger != analyze::Trigger::Timeout).then_some(0),
            idle_ns: 0,
            acked: 0,
            lost_before_tap: false,
            paused: None,
        }),
        (EventKind::Resolved(GapClass::Late), _) => EventDetail::Late(analyze::LatePsn {
            psn: 0,
            late_ns: 0,
            psns_late: depth,
        }),
        (EventKind::Resolved(class), _) => EventDetail::Resolved(analyze::ResolvedPsns {
            class,
            psns: depth,
            first: 0,
            last: depth.saturating_sub(1),
            missing_ns: 0,
        }),
        (EventKind::Cnp, _) => EventDetail::Cnp(analyze::CnpDetail {
            src_ip: [0; 16],
            dst_ip: [0; 16],
            qp: 0,
            reaction_ns: None,
        }),
        other => panic!("no test event {other:?}"),
    }
}

/// Priority 3 paused for 1000 quanta (5.12 µs at 100 Gb/s) by `mac`.
fn pause(ts_ns: u64, mac: [u8; 6]) -> PacketRecord {
    let mut quanta = [0; 8];
    quanta[3] = 1000;
    PacketRecord {
        ts_ns,
        kind: Kind::Pfc as u8,
        flags: flags::HAS_PFC,
        src_mac: mac,
        frame_len: 64,
        cap_len: 64,
        ..PacketRecord::default().with_link_control(crate::LinkControlView {
            pfc_enable: 1 << 3,
            pfc_quanta: quanta,
            ..crate::LinkControlView::default()
        })
    }
}

fn line<'a>(text: &'a str, series: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
}

#[test]
fn events_and_senders_become_bounded_series() {
    let metrics = Metrics::new("tap0");
    let mut tally = metrics.tally();
    // A late PSN counts one, however far behind it came; the other
    // classes count their depth.
    tally.event(&event(
        analyze::EventKind::Resolved(GapClass::Late),
        None,
        40,
    ));
    tally.event(&event(
        analyze::EventKind::Resolved(GapClass::NakLost),
        None,
        3,
    ));
    tally.event(&event(
        analyze::EventKind::Rewind,
        Some(analyze::Trigger::Nak),
        2,
    ));
    tally.event(&event(
        analyze::EventKind::Rewind,
        Some(analyze::Trigger::Timeout),
        6,
    ));
    tally.event(&event(
        analyze::EventKind::Rewind,
        Some(analyze::Trigger::Nak),
        1,
    ));
    tally.event(&event(analyze::EventKind::Cnp, None, 0));
    // 300 senders, 10 µs apart, each pausing once: 5.12 µs each but
    // the last, which runs 0 ns at its own frame.
    let mut an = Analyzer::new(analyze::Config::default());
    let mut sink = analyze::VecSink::default();
    for i in 0..300u64 {
        let mac = [2, 0, 0, 0, (i >> 8) as u8, i as u8];
        an.push(&pause(1_000_000 + i * 10_000, mac), &mut sink);
    }
    tally.analysed(&mut an, 300);
    metrics.publish_tap(TapSnapshot {
        counters: Counters {
            frames: 310,
            records: 305,
            ..Counters::default()
        },
        late_records: 0,
        records_per_cpu: vec![300, 5],
    });
    let text = metrics.render();
    let at = |series: &str| line(&text, series).unwrap_or_else(|| panic!("no {series} in\n{text}"));
    // (metric, its label but iface, value)
    for (metric, label, value) in [
        // Known names are there before their first event.
        ("gap_psns_total", "class=\"unresolved\"", "0"),
        ("rewinds_total", "trigger=\"rnr\"", "0"),
        ("events_total", "kind=\"pfc_storm\"", "0"),
        // Counted: a late PSN is one, the others their depth.
        ("gap_psns_total", "class=\"late\"", "1"),
        ("gap_psns_total", "class=\"nak_lost\"", "3"),
        ("rewinds_total", "trigger=\"nak\"", "2"),
        ("rewinds_total", "trigger=\"timeout\"", "1"),
        ("events_total", "kind=\"rewind\"", "3"),
        ("cnps_total", "", "1"),
        ("frames_total", "kind=\"pfc\"", "300"),
        ("pfc_frames_total", "priority=\"3\"", "300"),
        ("tap_lag_records", "", "5"),
        ("tap_cpu_records_total", "cpu=\"1\"", "5"),
    ] {
        let sep = if label.is_empty() { "" } else { "," };
        let series = format!("rocescope_{metric}{{iface=\"tap0\"{sep}{label}}}");
        assert_eq!(at(&series), value, "{series}");
    }
    // The first 256 senders have series of their own; the other 44
    // share one, their sums summed.
    let senders = text
        .lines()
        .filter(|l| l.starts_with("rocescope_pfc_pause_frames_total{"))
        .count();
    assert_eq!(senders, MAX_PFC_SENDERS + 1);
    let one = r#"{iface="tap0",src_mac="02:00:00:00:00:00",priority="3"}"#;
    assert_eq!(at(&format!("rocescope_pfc_pause_frames_total{one}")), "1");
    // 1000 quanta of 512 bits at 100 Gb/s: 5120 ns, each sender's own
    // pause (the last record, at 3.99 ms, comes after every deadline
    // but the last sender's).
    let secs = |series: &str| at(series).parse::<f64>().unwrap();
    assert_eq!(
        secs(&format!("rocescope_pfc_paused_seconds_total{one}")),
        5120.0 / 1e9
    );
    let other = r#"{iface="tap0",src_mac="other",priority="3"}"#;
    assert_eq!(
        at(&format!("rocescope_pfc_pause_frames_total{other}")),
        "44"
    );
    // Senders 256..298 paused their full 5.12 µs; 299's pause started
    // at the last record: 43 × 5120 ns, running 0 ns.
    assert_eq!(
        secs(&format!("rocescope_pfc_paused_seconds_total{other}")),
        220_160.0 / 1e9
    );
    assert_eq!(
        secs(&format!("rocescope_pfc_pause_running_seconds{other}")),
        0.0
    );
    assert_eq!(
        secs(&format!("rocescope_pfc_pause_running_seconds{one}")),
        0.0
    );
    assert!(text.contains("# TYPE rocescope_pfc_paused_seconds_total counter\n"));
    assert!(text.contains("# TYPE rocescope_pfc_pause_running_seconds gauge\n"));
}

/// Within 100 ms of a snapshot, batches are counted but not published;
/// the empty flush of an idle source, later, publishes what was held back.
#[test]
fn a_busy_analyzer_publishes_at_most_every_100_ms_and_when_idle() {
    let metrics = Metrics::new("tap0");
    let mut tally = metrics.tally();
    let mut an = Analyzer::new(analyze::Config::default());
    let cnps = |m: &Arc<Metrics>| {
        line(&m.render(), r#"rocescope_cnps_total{iface="tap0"}"#).map(str::to_string)
    };
    tally.analysed(&mut an, 10);
    assert_eq!(cnps(&metrics).as_deref(), Some("0"));
    tally.event(&event(analyze::EventKind::Cnp, None, 0));
    tally.analysed(&mut an, 10);
    assert_eq!(
        cnps(&metrics).as_deref(),
        Some("0"),
        "published within 100 ms"
    );
    std::thread::sleep(PUBLISH_EVERY);
    tally.analysed(&mut an, 0);
    assert_eq!(cnps(&metrics).as_deref(), Some("1"));
}
