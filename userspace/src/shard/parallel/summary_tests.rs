//! The summary mode over N analyzer threads against one analyzer: the
//! same records and deltas, in the same order, give the same flows,
//! events, timeline, frame counts, totals and run span, and the same
//! pairings go back to the kernel (flow ids aside: compared by flow key).
use std::collections::{BTreeMap, BTreeSet};

use rocescope_common::proto::ib::op;
use rocescope_common::summary::{FlowKey as KernelKey, delta_flags};
use rocescope_common::{Kind, flags};

use super::*;
use crate::analyze::tests::roce;
use crate::analyze::{Analysis, FlowRow};
use crate::shard::whole::{self, LinkLevelRecords};

const US: u64 = 1000;
/// Responder QP (requests go to it) and requester QP (responses to it).
const QB: u32 = 0x100;
const QA: u32 = 0x200;
/// Host pairs: enough that every analyzer of 2 and of 3 owns some.
const PAIRS: u8 = 12;

fn v4(a: u8, b: u8, c: u8, d: u8) -> [u8; 16] {
    std::net::Ipv4Addr::new(a, b, c, d)
        .to_ipv6_mapped()
        .octets()
}

/// Host pair `p`: (requester, responder).
fn hosts(p: u8) -> ([u8; 16], [u8; 16]) {
    (v4(10, 0, p, 1), v4(10, 1, p, 2))
}

/// An RDMA WRITE Only of 1024 bytes on pair `p`.
fn req(p: u8, ts: u64, psn: u32) -> PacketRecord {
    let (a, b) = hosts(p);
    let mut r = roce(ts, a, b, QB, op::WRITE_ONLY, psn);
    r.flags |= flags::HAS_RETH;
    r.roce_mut().reth_len = 1024;
    r.payload_len = 1024;
    r.frame_len = 1100;
    r
}

/// A plain ACK of `psn` on pair `p`.
fn ack(p: u8, ts: u64, psn: u32) -> PacketRecord {
    let (a, b) = hosts(p);
    let mut r = roce(ts, b, a, QA, op::ACKNOWLEDGE, psn);
    r.flags |= flags::HAS_AETH;
    r.roce_mut().aeth_syndrome = 0x1F;
    r
}

fn cnp(p: u8, ts: u64) -> PacketRecord {
    let (a, b) = hosts(p);
    let mut r = roce(ts, b, a, QA, rocescope_common::proto::ib::OPCODE_CNP, 0);
    r.kind = Kind::Cnp as u8;
    r.flags |= flags::BECN;
    r.dscp = 48;
    r
}

/// In-order requests `from..to` of pair `p` the kernel counted, the last
/// at `last`, one every 10 µs, the fifth CE-marked when `ce`.
fn requests(p: u8, from: u32, to: u32, last: u64, ce: bool) -> FlowDelta {
    let (a, b) = hosts(p);
    let n = to - from;
    let first = last - u64::from(n - 1) * 10 * US;
    FlowDelta {
        last_ts_ns: last,
        first_ts_ns: first,
        first_ce_ts_ns: if ce { first + 40 * US } else { 0 },
        max_idle_ns: 10 * US,
        packets: u64::from(n),
        bytes: u64::from(n) * 1100,
        payload_bytes: u64::from(n) * 1024,
        data_packets: n,
        ce: u32::from(ce),
        key: KernelKey {
            src_ip: a,
            dst_ip: b,
            dest_qp: QB,
        },
        next_psn: to,
        flags: delta_flags::PARTNER | delta_flags::PARTNER_ACKED,
        partner_acked_psn: from + 4,
        ..FlowDelta::default()
    }
}

/// A plain ACK of `psn` on pair `p` the kernel counted at `ts`.
fn acks(p: u8, ts: u64, psn: u32) -> FlowDelta {
    let (a, b) = hosts(p);
    FlowDelta {
        last_ts_ns: ts,
        first_ts_ns: ts,
        max_idle_ns: 50 * US,
        packets: 1,
        bytes: 70,
        acks: 1,
        responses: 1,
        key: KernelKey {
            src_ip: b,
            dst_ip: a,
            dest_qp: QA,
        },
        acked_psn: psn,
        flags: delta_flags::ACKED,
        ..FlowDelta::default()
    }
}

/// What the tap hands the pipeline, in its order.
#[derive(Clone)]
enum Item {
    Record(PacketRecord),
    Delta(FlowDelta),
}

/// Every pair: a request and its ACK (which pairs the flows), requests
/// 1..=9 and an ACK of 5 counted in the kernel, a CNP, a Go-Back-N resend
/// of 3 and 4 (a rewind: spurious, both were acknowledged) and the next
/// request; the pairs interleaved in time. Then `late`'s requests 11..=20,
/// counted and sent up at the end of the run, 5 ms later than any record.
fn traffic(late: u8) -> Vec<Item> {
    let mut timed: Vec<(u64, Item)> = Vec::new();
    for p in 0..PAIRS {
        let o = u64::from(p) * 100;
        let rec = |r: PacketRecord| (r.ts_ns, Item::Record(r));
        timed.push(rec(req(p, o, 0)));
        timed.push(rec(ack(p, o + US, 0)));
        timed.push((o + 95 * US, Item::Delta(acks(p, o + 95 * US, 5))));
        timed.push((
            o + 95 * US,
            Item::Delta(requests(p, 1, 10, o + 90 * US, true)),
        ));
        timed.push(rec(cnp(p, o + 100 * US)));
        for (i, psn) in [3, 4, 10].into_iter().enumerate() {
            timed.push(rec(req(p, o + (300 + 10 * i as u64) * US, psn)));
        }
    }
    // Stable: each pair's items keep their order.
    timed.sort_by_key(|(t, _)| *t);
    let mut items: Vec<Item> = timed.into_iter().map(|(_, i)| i).collect();
    items.push(Item::Delta(requests(late, 11, 21, 5_000 * US, false)));
    items
}

/// One analyzer, as the pipeline's own stage runs it: the analysis, what
/// its sink got, the pairings it made.
fn one(items: &[Item]) -> (Analysis, VecSink, BTreeSet<Pairing>) {
    let mut a = Analyzer::new(analyze::Config::default());
    a.log_pairings();
    let mut sink = VecSink::default();
    let mut pairings = BTreeSet::new();
    for item in items {
        match item {
            Item::Record(r) => {
                a.push(r, &mut sink);
            }
            Item::Delta(d) => a.apply_delta(0, d, &mut sink),
        }
        pairings.extend(a.take_pairings());
    }
    (a.finish(&mut sink), sink, pairings)
}

/// `n` analyzer threads fed batches of `per_batch` records with the
/// deltas among them, as the sharded pipeline stage feeds them.
fn many(items: &[Item], n: usize, per_batch: usize) -> (Analysis, VecSink, BTreeSet<Pairing>) {
    let mut threads = Parallel::new(&analyze::Config::default(), n).unwrap();
    threads.log_pairings().unwrap();
    let mut sink = VecSink::default();
    let mut pairings = BTreeSet::new();
    let (mut batch, mut deltas) = (Vec::new(), Vec::new());
    let mut flush = |batch: &mut Vec<PacketRecord>, deltas: &mut Vec<Delta>| {
        let (b, d) = (std::mem::take(batch), std::mem::take(deltas));
        threads
            .push_batch_all(Arc::new(b), Arc::new(Vec::new()), Arc::new(d), &mut sink)
            .unwrap();
        pairings.extend(threads.take_pairings());
    };
    for item in items {
        match item {
            Item::Record(r) => batch.push(*r),
            Item::Delta(d) => deltas.push((batch.len(), 0, *d)),
        }
        if batch.len() == per_batch {
            flush(&mut batch, &mut deltas);
        }
    }
    flush(&mut batch, &mut deltas);
    let merged = threads.finish(&mut sink).unwrap();
    (
        whole::analysis(merged, &LinkLevelRecords::new()),
        sink,
        pairings,
    )
}

/// A flow's key in a row: what names it whatever its id.
type Key = ([u8; 16], [u8; 16], u32);

/// What the runs are compared on, flow ids replaced by flow keys.
#[derive(Debug, PartialEq)]
struct Outcome {
    flows: BTreeMap<Key, Vec<String>>,
    events: Vec<(u64, &'static str, Option<Key>, Option<u32>)>,
    timeline: BTreeSet<(Key, u64, u64, u64, u64)>,
    totals: String,
    frames: String,
    span: (Option<u64>, Option<u64>, u64),
    ce_to_cnp: String,
}

fn outcome(a: &Analysis, sink: &VecSink) -> Outcome {
    let rows: Vec<&FlowRow> = sink.flows.iter().chain(&a.flows).collect();
    let by_id: BTreeMap<u32, Key> = rows
        .iter()
        .map(|r| (r.flow_id, (r.src_ip, r.dst_ip, r.dest_qp)))
        .collect();
    let mut flows: BTreeMap<Key, Vec<String>> = BTreeMap::new();
    for r in rows {
        let mut r = r.clone();
        r.flow_id = 0;
        flows
            .entry((r.src_ip, r.dst_ip, r.dest_qp))
            .or_default()
            .push(format!("{r:?}"));
    }
    let mut events: Vec<_> = sink
        .events
        .iter()
        .map(|e| {
            (
                e.ts_ns,
                e.kind.as_str(),
                e.flow_id.map(|i| by_id[&i]),
                e.psn,
            )
        })
        .collect();
    events.sort();
    let timeline = sink
        .timeline
        .iter()
        .map(|t| (by_id[&t.flow_id], t.bin_start_ns, t.packets, t.bytes, t.ce))
        .collect();
    let s = &a.summary;
    Outcome {
        flows,
        events,
        timeline,
        totals: format!("{:?}", s.totals),
        frames: format!("{:?}", s.frames),
        span: (s.first_ts_ns, s.last_ts_ns, s.duration_ns),
        ce_to_cnp: format!("{:?}", s.ce_to_cnp),
    }
}

#[test]
fn analyzer_threads_apply_deltas_as_one_analyzer_does() {
    // The late delta's pair belongs to neither analyzer 0 of 2 nor of 3:
    // only the time passed to them moves their clocks to the run's end.
    let late = (0..PAIRS)
        .find(|&p| {
            let d = requests(p, 11, 21, 5_000 * US, false);
            delta_shard(&d, 2) != 0 && delta_shard(&d, 3) != 0
        })
        .expect("a pair on neither analyzer 0");
    let items = traffic(late);
    let (a, sink, pairings) = one(&items);
    let want = outcome(&a, &sink);
    assert_eq!(pairings.len(), usize::from(PAIRS), "{pairings:?}");
    assert_eq!(want.flows.len(), 2 * usize::from(PAIRS));
    assert_eq!(
        a.summary.last_ts_ns,
        Some(5_000 * US),
        "the late delta ends the run"
    );
    let rewinds = want.events.iter().filter(|e| e.1 == "rewind").count();
    assert_eq!(rewinds, usize::from(PAIRS), "{:?}", want.events);
    for n in [2, 3] {
        for per_batch in [1, 5, 4096] {
            let (b, sink, got_pairings) = many(&items, n, per_batch);
            let got = outcome(&b, &sink);
            let what = format!("{n} analyzers, batches of {per_batch}");
            assert_eq!(got.flows, want.flows, "{what}: flows");
            assert_eq!(got.events, want.events, "{what}: events");
            assert_eq!(got.timeline, want.timeline, "{what}: timeline");
            assert_eq!(got.totals, want.totals, "{what}: totals");
            assert_eq!(got.frames, want.frames, "{what}: frames");
            assert_eq!(got.span, want.span, "{what}: the run's span");
            assert_eq!(got.ce_to_cnp, want.ce_to_cnp, "{what}: CE → CNP");
            assert_eq!(got_pairings, pairings, "{what}: pairings");
            // Every analyzer holds flows (analyzer k numbers k, k + n, …).
            let owners: BTreeSet<u32> = sink
                .flows
                .iter()
                .chain(&b.flows)
                .map(|r| r.flow_id % n as u32)
                .collect();
            assert_eq!(owners.len(), n, "{what}: flows on {owners:?}");
        }
    }
}

/// A delta sent up for a flow the analyzers took no record of is ignored
/// by its analyzer, as by one analyzer, and nothing else is told of it.
#[test]
fn a_delta_of_an_unknown_flow_changes_no_flow() {
    let items = [
        Item::Record(req(0, 0, 0)),
        Item::Delta(requests(1, 1, 10, 90 * US, false)),
        Item::Record(req(0, 100 * US, 1)),
    ];
    let (a, sink, _) = one(&items);
    let (b, sink2, _) = many(&items, 2, 4096);
    let (want, got) = (outcome(&a, &sink), outcome(&b, &sink2));
    assert_eq!(got.flows, want.flows);
    assert_eq!(got.frames, want.frames);
    assert_eq!(want.flows.len(), 1);
}
