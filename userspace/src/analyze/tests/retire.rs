//! Flows retired as they go idle (docs/analysis.md, "Retirement").

use super::*;

const S: u64 = 1_000_000_000;

/// `--flow-idle 1s`.
fn idle_1s() -> Config {
    Config {
        flow_idle_ns: S,
        ..Config::default()
    }
}

/// A request flow to `qp` and its response flow.
fn exchange(ts: u64, qp: u32, psn: u32) -> [PacketRecord; 2] {
    let mut r = req(ts, psn);
    r.roce_mut().dest_qp = qp;
    let mut a = ack(ts + 10 * US, psn);
    a.roce_mut().dest_qp = qp + 0x1000;
    [r, a]
}

#[test]
fn a_resumed_qp_is_a_new_flow_with_no_gap_across_the_boundary() {
    let mut recs = vec![
        req(0, 100),
        ack(10 * US, 100),
        req(20 * US, 101),
        ack(30 * US, 101),
    ];
    // 5 s later the QP resumes three PSNs on: no gap, no rewind claimed.
    recs.extend([req(5 * S, 105), ack(5 * S + 10 * US, 105)]);
    // And a PSN back, later still: no rewind across the boundary either.
    recs.extend([req(10 * S, 103), ack(10 * S + 10 * US, 103)]);
    let r = run_with(idle_1s(), &recs);
    // The first two pairs of flows retired as the next frame came.
    let retired: Vec<(u32, u64, u64)> = r
        .sink
        .flows
        .iter()
        .map(|f| (f.flow_id, f.first_ts_ns, f.packets))
        .collect();
    assert_eq!(
        retired,
        vec![
            (0, 0, 2),
            (1, 10 * US, 2),
            (2, 5 * S, 1),
            (3, 5 * S + 10 * US, 1)
        ]
    );
    let live: Vec<(u32, u64)> =
        r.a.unwritten_flows()
            .map(|f| (f.flow_id, f.first_ts_ns))
            .collect();
    assert_eq!(live, vec![(4, 10 * S), (5, 10 * S + 10 * US)]);
    // Each flow of a QP is paired with the response flow of its own time.
    assert_eq!(r.sink.flows[0].paired_qp, Some(QA));
    assert_eq!(r.a.flow(4).and_then(|f| f.paired_qp), Some(QA));
    let t = &r.a.summary.totals;
    assert_eq!((t.flows, t.packets, t.gaps, t.rewinds), (6, 8, 0, 0));
    assert_eq!((t.request_flows, t.paired_flows), (3, 3));
    assert!(r.events("gap").is_empty() && r.events("rewind").is_empty());
    let ret = r.a.summary.retirement.as_ref().expect("retirement");
    assert_eq!((ret.retired_flows, ret.peak_live_flows), (4, 2));
}

#[test]
fn nothing_retires_within_the_idle_time() {
    let recs = [
        req(0, 100),
        ack(10 * US, 100),
        req(S, 101),
        ack(S + 10 * US, 101),
    ];
    let r = run_with(idle_1s(), &recs);
    assert!(r.sink.flows.is_empty());
    assert_eq!(r.a.flows.len(), 2);
    assert_eq!(r.a.summary.retirement, None);
}

#[test]
fn a_finding_is_raised_from_flows_that_retired() {
    let mut recs = nak_rewind();
    // Another QP, long after: the lossy pair retired before the end.
    recs.extend(exchange(5 * S, QB + 1, 0));
    let r = run_with(idle_1s(), &recs);
    assert_eq!(
        r.sink.flows.iter().map(|f| f.flow_id).collect::<Vec<_>>(),
        vec![0, 1]
    );
    r.assert_nak_loss();
    // The retired flows it cites are kept as evidence, with their rows,
    // which the sink had already.
    let held: Vec<u32> = r.a.flows.iter().map(|f| f.flow_id).collect();
    assert_eq!(held, vec![0, 1, 2, 3]);
    assert_eq!(r.a.written.iter().copied().collect::<Vec<_>>(), vec![0, 1]);
    assert_eq!(r.a.flow(0).map(|f| f.rewinds_nak), Some(1));
    assert_eq!(
        r.a.unwritten_flows().map(|f| f.flow_id).collect::<Vec<_>>(),
        vec![2, 3]
    );
    // Every row summed: the retired ones' sums and those not written.
    let packets: u64 = r.a.sums().values().map(|s| s.packets).sum();
    assert_eq!(packets, 11 + 2);
    let t = &r.a.summary.totals;
    assert_eq!(
        (t.flows, t.rewinds, t.retrans_packets, t.naks),
        (4, 1, 3, 1)
    );
}

#[test]
fn a_finding_over_many_retired_flows_keeps_the_worst_k() {
    let k = flows::kept::EVIDENCE_K as u32;
    let n = k + 8;
    let mut recs = Vec::new();
    // Flow i: i + 1 CE-marked requests, ACKed, no CNP; one QP after another,
    // each retiring before the next starts.
    for i in 0..n {
        let t0 = u64::from(i) * 2 * S;
        for p in 0..=i {
            let mut r = req(t0 + u64::from(p) * US, p);
            r.roce_mut().dest_qp = 0x1000 + i;
            r.ecn = 3;
            recs.push(r);
        }
        let mut a = ack(t0 + 100 * US, i);
        a.roce_mut().dest_qp = 0x8000 + i;
        recs.push(a);
    }
    let r = run_with(idle_1s(), &recs);
    // Every flow but the last pair retired; the last request flow is live.
    assert_eq!(r.sink.flows.len(), 2 * n as usize - 2);
    let f = r.finding("ce-without-cnp").expect("ce-without-cnp");
    // The K retired request flows with the most CE marks (request flow ids
    // are even) and the live one.
    let want: Vec<u32> = (n - k - 1..n).map(|i| 2 * i).collect();
    assert_eq!(f.flows, want);
    let ret = r.a.summary.retirement.as_ref().expect("retirement");
    assert_eq!(ret.peak_live_flows, 2);
    // The congestion family left out the 7 of the n - 1 retired request
    // flows with the fewest CE marks; traffic (bytes) kept K of the 2n - 2
    // retired flows.
    assert_eq!(ret.evidence_omitted.get("congestion"), Some(&7));
    assert_eq!(
        ret.evidence_omitted.get("traffic"),
        Some(&u64::from(2 * n - 2 - k))
    );
    // The totals count every flow.
    assert_eq!(r.a.summary.totals.ce, u64::from(n * (n + 1) / 2));
    assert_eq!(r.a.summary.totals.flows, u64::from(2 * n));
}

/// QPs starting 1 ms apart, each active 4.5 ms (flowgen's shape: two WRITEs
/// and an ACK), with `--flow-idle 5ms`: the flows live at once follow the
/// window of QPs started within the last idle + active time, not the run.
#[test]
fn live_flows_stay_what_the_window_implies() {
    const MS: u64 = 1_000_000;
    let n: u32 = 2000;
    let mut recs = Vec::new();
    for i in 0..n {
        let t0 = u64::from(i) * MS;
        let w = |ts: u64, psn: u32| {
            let mut r = req(ts, psn);
            r.roce_mut().dest_qp = 0x10_0000 + i;
            r
        };
        // PSNs of their own: a response pairs by the PSN it answers.
        let psn = i * 16;
        recs.push((t0, w(t0, psn)));
        recs.push((t0 + 2 * MS + MS / 4, w(t0 + 2 * MS + MS / 4, psn + 1)));
        let mut a = ack(t0 + 4 * MS + MS / 2, psn + 1);
        a.roce_mut().dest_qp = 0x20_0000 + i;
        recs.push((a.ts_ns, a));
    }
    recs.sort_by_key(|(t, _)| *t);
    let recs: Vec<PacketRecord> = recs.into_iter().map(|(_, r)| r).collect();
    let config = Config {
        flow_idle_ns: 5 * MS,
        ..Config::default()
    };
    let r = run_with(config, &recs);
    // Live after a QP's first WRITE at k ms: the request flows of QPs
    // k-7..=k (their last WRITE at i + 2.25 ms, retired once a frame comes
    // more than 5 ms later) and the response flows of QPs k-9..=k-5 (their
    // ACK at i + 4.5 ms): 8 + 5; 13 at the other frames too.
    let ret = r.a.summary.retirement.as_ref().expect("retirement");
    assert_eq!(ret.peak_live_flows, 13);
    // At the end (the last ACK, at n + 3.5 ms): 3 request and 6 response
    // flows live.
    assert_eq!(r.a.unwritten_flows().count(), 9);
    assert_eq!(ret.retired_flows, u64::from(2 * n) - 9);
    assert_eq!(r.sink.flows.len(), 2 * n as usize - 9);
    let t = &r.a.summary.totals;
    assert_eq!(
        (t.flows, t.paired_flows, t.packets),
        (u64::from(2 * n), u64::from(n), u64::from(3 * n))
    );
    assert_eq!((t.gaps, t.rewinds), (0, 0));
}

/// `--flow-active 10ms`: a flow sending for 25 ms writes two interim rows
/// and a last one; its rows' counters add up to the flow's.
#[test]
fn a_long_flow_writes_interim_rows_that_add_up() {
    const MS: u64 = 1_000_000;
    let recs: Vec<PacketRecord> = (0..25).map(|k| req(u64::from(k) * MS, k)).collect();
    let config = Config {
        flow_active_ns: 10 * MS,
        ..Config::default()
    };
    let r = run_with(config, &recs);
    let rows: Vec<(u32, bool, u64, u64, u64, u64)> = r
        .sink
        .flows
        .iter()
        .chain(&r.a.flows)
        .map(|f| {
            (
                f.flow_id,
                f.interim,
                f.first_ts_ns,
                f.last_ts_ns,
                f.packets,
                f.payload_bytes,
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            // The frame at 11 ms closes the interval that ended at 10 ms.
            (0, true, 0, 10 * MS, 11, 11 * 1024),
            (0, true, 10 * MS, 20 * MS, 10, 10 * 1024),
            (0, false, 20 * MS, 24 * MS, 4, 4 * 1024),
        ]
    );
    // Rates are the interval's: 10 frames of 1100 bytes over 10 ms.
    assert_eq!(r.sink.flows[1].gbps, 10.0 * 1100.0 * 8.0 / (10 * MS) as f64);
    let ret = r.a.summary.retirement.as_ref().expect("retirement");
    assert_eq!((ret.interim_rows, ret.retired_flows), (2, 0));
    assert_eq!(r.a.summary.totals.packets, 25);
    let packets: u64 = r.a.sums().values().map(|s| s.packets).sum();
    assert_eq!(packets, 25);
}

/// A frame far past a flow's interval (a clock jump, a corrupt timestamp)
/// closes that interval and sets the next boundary after it: the empty
/// intervals in between write no row and cost nothing (stepping through
/// 10^12 of them once hung the analyzer's fuzz target).
#[test]
fn a_frame_far_in_the_future_skips_the_empty_intervals() {
    const MS: u64 = 1_000_000;
    const FAR: u64 = 1_000_000_000_000_000_000;
    let recs = [req(0, 0), req(FAR, 1), req(FAR + 2 * MS, 2)];
    let config = Config {
        flow_active_ns: MS,
        flow_idle_ns: u64::MAX,
        ..Config::default()
    };
    let r = run_with(config, &recs);
    let rows: Vec<(bool, u64, u64, u64)> = r
        .sink
        .flows
        .iter()
        .chain(&r.a.flows)
        .map(|f| (f.interim, f.first_ts_ns, f.last_ts_ns, f.packets))
        .collect();
    assert_eq!(
        rows,
        vec![
            (true, 0, 0, 1),
            // From the last row's boundary (1 ms) to the boundary at FAR,
            // closed by the frame 2 ms after FAR: the intervals between
            // held no frame and wrote nothing.
            (true, MS, FAR, 1),
            (false, FAR, FAR + 2 * MS, 1),
        ]
    );
}

/// A CNP count no flow claims goes after `--flow-idle`: a flow that appears
/// later is not given CNPs that came long before it (they stay counted as
/// unattributed).
#[test]
fn an_unclaimed_cnp_count_is_swept_after_the_idle_time() {
    let mut r1 = req(5 * S, 1);
    r1.ecn = 3;
    let recs = [cnp(0, B, A, QA), r1, ack(5 * S + 10 * US, 1)];
    let swept = run_with(idle_1s(), &recs);
    let t = &swept.a.summary.totals;
    assert_eq!((t.cnps, t.cnps_unattributed), (0, 1));
    assert_eq!(swept.flow(A, QB).cnps, 0);
    // Within the idle time (the default 60 s) the flow claims it.
    let kept = run(&recs);
    let t = &kept.a.summary.totals;
    assert_eq!((t.cnps, t.cnps_unattributed), (1, 0));
    assert_eq!(kept.flow(A, QB).cnps, 1);
}

/// More flows live at the end than `rows_held`: each flow's row goes to the
/// sink as it is made (as a retired flow's does), and the run holds only the
/// rows of the flows the findings name and of the findings' evidence. Here
/// every flow is evidence (fewer than K), so the report reads the same as
/// with every row held.
#[test]
fn rows_beyond_rows_held_go_to_the_sink_at_the_end() {
    let mut recs = nak_rewind();
    for i in 0..3u32 {
        recs.extend(exchange(20 * US * u64::from(i + 1), QB + 1 + i, 0));
    }
    let held = run(&recs);
    let config = Config {
        rows_held: 2,
        ..Config::default()
    };
    let r = run_with(config, &recs);
    assert!(held.sink.flows.is_empty());
    // Every flow's row once, in order of its slot, the row the run holding
    // every row holds (whose filters `render::tell` filled; a sink's rows
    // get theirs from the tables' annotator, none here).
    let ids: Vec<u32> = r.sink.flows.iter().map(|f| f.flow_id).collect();
    assert_eq!(ids, (0..8).collect::<Vec<u32>>());
    let unfiltered: Vec<FlowRow> = held
        .a
        .flows
        .iter()
        .map(|f| FlowRow {
            display_filter: String::new(),
            decode_as: String::new(),
            ..f.clone()
        })
        .collect();
    assert_eq!(r.sink.flows, unfiltered);
    // All eight are evidence: held, and written already.
    assert_eq!(r.a.flows, held.a.flows);
    assert_eq!(r.a.written.len(), 8);
    assert_eq!(r.a.unwritten_flows().count(), 0);
    // What readers of every row add up is the same.
    assert_eq!(r.a.sums(), held.a.sums());
    assert_eq!(r.a.summary.totals, held.a.summary.totals);
    r.assert_nak_loss();
    assert_eq!(render_text(&r.a, 0, None), render_text(&held.a, 0, None));
    let ret = r.a.summary.retirement.as_ref().expect("retirement");
    assert_eq!((ret.rows_streamed_at_end, ret.retired_flows), (8, 0));
    assert_eq!(held.a.summary.retirement, None);
}

/// A sink that keeps no rows (`report`'s) is handed none of the flows that
/// retire at the end, whose rows are then never made whole: the analysis
/// is the one a sink keeping every row gets, sums, evidence and summary.
#[test]
fn rows_streamed_at_the_end_are_not_made_for_a_sink_that_keeps_none() {
    struct Keeps(VecSink);
    impl Sink for Keeps {
        fn event(&mut self, e: &crate::analyze::Event) {
            self.0.event(e);
        }
        fn timeline(&mut self, row: &crate::analyze::TimelineRow) {
            self.0.timeline(row);
        }
        fn flow(&mut self, row: &FlowRow) {
            self.0.flow(row);
        }
        fn keeps_flows(&self) -> bool {
            false
        }
    }
    let mut recs = nak_rewind();
    for i in 0..40u32 {
        recs.extend(exchange(20 * US * u64::from(i + 1), QB + 1 + i, 0));
    }
    let config = || Config {
        rows_held: 2,
        ..Config::default()
    };
    let all = run_with(config(), &recs);
    let mut an = Analyzer::new(config());
    let mut none = Keeps(VecSink::default());
    for r in &recs {
        an.push(r, &mut none);
    }
    let mut a = an.finish(&mut none);
    crate::render::tell(&mut a);
    // Only the rows of the flows the findings name (they are made for
    // the reports anyway).
    let named: std::collections::BTreeSet<u32> = a
        .diagnoses
        .iter()
        .flat_map(|d| d.flows.iter().copied())
        .collect();
    let handed: Vec<u32> = none.0.flows.iter().map(|f| f.flow_id).collect();
    assert!(handed.iter().all(|id| named.contains(id)), "{handed:?}");
    assert!(handed.len() < 10, "{handed:?}");
    assert_eq!(all.sink.flows.len(), 82);
    assert_eq!(a, all.a);
    assert!(a.retired_sums.values().map(|s| s.rows).sum::<u64>() > 40);
    // The flows' state left to the process's exit (`report`): the same
    // analysis.
    let mut an = Analyzer::new(Config {
        leave_at_exit: true,
        ..config()
    });
    let mut left = Keeps(VecSink::default());
    for r in &recs {
        an.push(r, &mut left);
    }
    let mut b = an.finish(&mut left);
    crate::render::tell(&mut b);
    assert_eq!(b, a);
    assert_eq!(left.0.flows, none.0.flows);
}
