//! Timeline bins and the summary-mode deltas spread over them.

use super::*;

#[test]
fn timeline_bins_with_pause_time() {
    // Priority 3 paused 120..170 µs.
    let recs = [
        tagged(req(10 * US, 1), 3),
        tagged(req(50 * US, 2), 3),
        pfc3(120 * US, 65535),
        tagged(req(150 * US, 3), 3),
        pfc3(170 * US, 0),
        tagged(req(350 * US, 1), 3), // a retransmission (rewind)
    ];
    let r = run(&recs);
    let tl = &r.sink.timeline;
    assert_eq!(tl.len(), 3);
    let rows: Vec<_> = tl
        .iter()
        .map(|t| {
            (
                t.flow_id,
                t.bin_start_ns,
                t.bin_ns,
                t.packets,
                t.bytes,
                t.retrans_packets,
                t.paused_ns,
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (0, 0, 100_000, 2, 2200, 0, 0),
            (0, 100_000, 100_000, 1, 1100, 0, 50_000),
            (0, 300_000, 100_000, 1, 1100, 1, 0),
        ]
    );
    assert_eq!(tl[0].gbps, 2200.0 * 8.0 / 100_000.0);
    assert_eq!(tl[0].goodput_gbps, 2048.0 * 8.0 / 100_000.0);
    assert_eq!(tl[2].goodput_gbps, 0.0);
    // The idle 150 → 350 µs held 20 µs of pause: less than half, and the
    // rewind's idle overlaps it, so it is a stall.
    assert_eq!(
        r.a.summary
            .findings
            .iter()
            .filter(|f| f.id == "pfc-victims")
            .count(),
        1
    );
}

#[test]
fn timeline_counts_ce_and_cnps() {
    let mut a = req(0, 1);
    a.ecn = 3;
    let r = run(&[a, ack(US, 1), cnp(20 * US, B, A, QA), req(250 * US, 2)]);
    let tl: Vec<_> = r
        .sink
        .timeline
        .iter()
        .filter(|t| t.flow_id == 0)
        .map(|t| (t.bin_start_ns, t.packets, t.ce, t.cnps))
        .collect();
    assert_eq!(tl, [(0, 1, 1, 1), (200_000, 1, 0, 0)]);
}

/// Summary mode: the frames the kernel counted, as one delta, leave the
/// analyzer where the frames themselves would have, so the rewind after
/// them is judged the same (depth, spurious, idle) and every count adds up.
#[test]
fn a_delta_stands_for_its_frames() {
    use rocescope_common::summary::{FlowDelta, FlowKey, delta_flags};
    let head = [req(0, 0), ack(US, 0)];
    // Counted in the kernel: in-order requests 1..=9 (5 CE-marked) and a
    // plain ACK of 5.
    let mut counted: Vec<PacketRecord> = (1..=9).map(|p| req(p as u64 * 10 * US, p)).collect();
    counted[4].ecn = 3;
    let ack5 = ack(95 * US, 5);
    let tail = [req(300 * US, 3), req(310 * US, 4), req(320 * US, 10)];

    let mut all = Analyzer::new(Config::default());
    let mut sink = VecSink::default();
    for r in head.iter().chain(&counted).chain([&ack5]).chain(&tail) {
        all.push(r, &mut sink);
    }

    let mut summarized = Analyzer::new(Config::default());
    summarized.log_pairings();
    let mut sink2 = VecSink::default();
    for r in &head {
        summarized.push(r, &mut sink2);
    }
    assert_eq!(
        summarized.take_pairings().len(),
        1,
        "paired by the first ACK"
    );
    let key = |src, dst, qp| FlowKey {
        src_ip: src,
        dst_ip: dst,
        dest_qp: qp,
    };
    let requests = FlowDelta {
        last_ts_ns: 90 * US,
        first_ts_ns: 10 * US,
        first_ce_ts_ns: 50 * US,
        max_idle_ns: 10 * US,
        packets: 9,
        bytes: 9 * 1100,
        payload_bytes: 9 * 1024,
        data_packets: 9,
        ce: 1,
        key: key(A, B, QB),
        next_psn: 10,
        mtu: 0,
        flags: delta_flags::PARTNER | delta_flags::PARTNER_ACKED,
        partner_acked_psn: 5,
        ..FlowDelta::default()
    };
    let acks = FlowDelta {
        last_ts_ns: 95 * US,
        first_ts_ns: 95 * US,
        max_idle_ns: 94 * US,
        packets: 1,
        bytes: 70,
        acks: 1,
        responses: 1,
        key: key(B, A, QA),
        acked_psn: 5,
        flags: delta_flags::ACKED,
        ..FlowDelta::default()
    };
    summarized.apply_delta(0, &acks, &mut sink2);
    summarized.apply_delta(0, &requests, &mut sink2);
    for r in &tail {
        summarized.push(r, &mut sink2);
    }

    let (a, b) = (all.finish(&mut sink), summarized.finish(&mut sink2));
    assert_eq!(b.flows, a.flows);
    assert_eq!(b.summary.totals, a.summary.totals);
    assert_eq!(b.summary.frames, a.summary.frames);
    let f = &a.flows[0];
    assert_eq!(
        (f.rewinds, f.spurious_retrans, f.retrans_packets),
        (1, 2, 2)
    );
    let rewinds = |s: &VecSink| -> Vec<Event> {
        s.events
            .iter()
            .filter(|e| e.kind == EventKind::Rewind)
            .cloned()
            .collect()
    };
    assert_eq!(rewinds(&sink2), rewinds(&sink));
    // The timeline: the same sums per flow (here the counted frames span
    // one 100 µs bin, so the same rows too).
    assert_eq!(sink2.timeline, sink.timeline);
}

/// A delta spanning many bins is spread over them, shares adding up exactly.
#[test]
fn a_delta_spreads_over_the_bins_it_spans() {
    use rocescope_common::summary::{FlowDelta, FlowKey};
    let mut a = Analyzer::new(Config::default());
    let mut sink = VecSink::default();
    a.push(&req(0, 0), &mut sink);
    let d = FlowDelta {
        first_ts_ns: 10 * US,
        last_ts_ns: 1009 * US,
        packets: 1000,
        bytes: 1_100_000,
        payload_bytes: 1_024_000,
        data_packets: 1000,
        ce: 7,
        first_ce_ts_ns: 20 * US,
        key: FlowKey {
            src_ip: A,
            dst_ip: B,
            dest_qp: QB,
        },
        next_psn: 1001,
        ..FlowDelta::default()
    };
    a.apply_delta(0, &d, &mut sink);
    a.finish(&mut sink);
    let rows = &sink.timeline;
    assert_eq!(rows.len(), 11, "bins 0, 100, …, 1000 µs: {rows:?}");
    let sum = |get: fn(&TimelineRow) -> u64| rows.iter().map(get).sum::<u64>();
    assert_eq!(sum(|r| r.packets), 1001);
    assert_eq!(sum(|r| r.bytes), 1_100_000 + 1100);
    assert_eq!(sum(|r| r.ce), 7);
    // 10 µs..=1009 µs at one frame per µs: 90 in the first bin (plus the
    // record), 100 in each full one, 10 in the last.
    let packets: Vec<u64> = rows.iter().map(|r| r.packets).collect();
    assert_eq!(
        packets,
        [91, 100, 100, 100, 100, 100, 100, 100, 100, 100, 10]
    );
}

/// A delta whose frames all came before the flow's open bin (a CNP the
/// flow's receiver sent later opened it, and the delta reached the
/// analyzer after the CNP): its frames go into that open bin, none lost.
#[test]
fn a_delta_older_than_its_flows_open_bin_goes_into_it() {
    use rocescope_common::summary::{FlowDelta, FlowKey};
    let mut a = Analyzer::new(Config::default());
    let mut sink = VecSink::default();
    a.push(&req(0, 0), &mut sink);
    a.push(&ack(US, 0), &mut sink);
    a.push(&cnp(250 * US, B, A, QA), &mut sink);
    let d = FlowDelta {
        first_ts_ns: 10 * US,
        last_ts_ns: 150 * US,
        packets: 15,
        bytes: 15 * 1100,
        payload_bytes: 15 * 1024,
        data_packets: 15,
        key: FlowKey {
            src_ip: A,
            dst_ip: B,
            dest_qp: QB,
        },
        next_psn: 16,
        ..FlowDelta::default()
    };
    a.apply_delta(0, &d, &mut sink);
    let analysis = a.finish(&mut sink);
    let rows: Vec<_> = sink
        .timeline
        .iter()
        .filter(|t| t.flow_id == 0)
        .map(|t| (t.bin_start_ns, t.packets, t.cnps))
        .collect();
    assert_eq!(rows, [(0, 1, 0), (200_000, 15, 1)]);
    assert_eq!(analysis.flows[0].packets, 16);
}
