//! One analyzer against N on every sample capture: the merged tables and
//! findings equal the unsharded ones (flow ids aside: a sharded run numbers
//! its flows per analyzer, so rows are compared by flow key).
use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::analyze::{Severity, VecSink};
use crate::shard::tests::sample_records;

/// A flow's key in a row: what names it whatever its id.
type Key = (u16, [u8; 16], [u8; 16], u32, u64);

fn key(r: &FlowRow) -> Key {
    (r.iface, r.src_ip, r.dst_ip, r.dest_qp, r.first_ts_ns)
}

/// A finding as compared: severity, the flows named (by key), impact.
type Instance = (Severity, BTreeSet<Key>, String);

/// What a run gives, with flow ids replaced by flow keys.
#[derive(Debug, PartialEq)]
struct Outcome {
    /// Every row, streamed and held at the end, flow id cleared, by key.
    flows: BTreeMap<Key, Vec<String>>,
    /// Events as (time, kind, flow key), in order.
    events: Vec<(u64, &'static str, Option<Key>)>,
    /// Timeline rows' (flow key, bin start, packets).
    timeline: BTreeSet<(Key, u64, u64)>,
    pfc: Vec<PfcInterval>,
    frames: FrameCounts,
    /// Per finding id, each instance: its severity, the flows it names
    /// (by key) and its impact; sorted.
    findings: BTreeMap<&'static str, Vec<Instance>>,
}

fn run(records: &[PacketRecord], n: usize) -> Outcome {
    let mut shards = Shards::new(&analyze::Config::default(), n);
    let mut sink = VecSink::default();
    for r in records {
        shards.push(r, &mut sink);
    }
    let merged = shards.finish(&mut sink);
    let rows: Vec<&FlowRow> = sink.flows.iter().chain(&merged.flows).collect();
    let by_id: BTreeMap<u32, Key> = rows.iter().map(|r| (r.flow_id, key(r))).collect();
    let mut flows: BTreeMap<Key, Vec<String>> = BTreeMap::new();
    for r in &rows {
        let mut r = (*r).clone();
        r.flow_id = 0;
        flows.entry(key(&r)).or_default().push(format!("{r:?}"));
    }
    let events = sink
        .events
        .iter()
        .map(|e| (e.ts_ns, e.kind.as_str(), e.flow_id.map(|id| by_id[&id])))
        .collect();
    let timeline = sink
        .timeline
        .iter()
        .map(|t| (by_id[&t.flow_id], t.bin_start_ns, t.packets))
        .collect();
    let mut findings: BTreeMap<&'static str, Vec<Instance>> = BTreeMap::new();
    for d in &merged.diagnoses {
        findings.entry(d.evidence.id()).or_default().push((
            d.severity,
            d.flows.iter().map(|id| by_id[id]).collect(),
            format!("{:.12}", d.impact),
        ));
    }
    findings.values_mut().for_each(|v| v.sort());
    Outcome {
        flows,
        events,
        timeline,
        pfc: merged.pfc,
        frames: merged.frames,
        findings,
    }
}

/// Flow ids are disjoint across analyzers and one analyzer numbers as
/// the unsharded analyzer does.
#[test]
fn analyzers_number_their_flows_apart() {
    let (_, records) = sample_records()
        .into_iter()
        .max_by_key(|(_, r)| r.len())
        .unwrap();
    for n in [1, 3] {
        let mut shards = Shards::new(&analyze::Config::default(), n);
        let mut sink = VecSink::default();
        for r in &records {
            shards.push(r, &mut sink);
        }
        let merged = shards.finish(&mut sink);
        let ids: Vec<u32> = sink
            .flows
            .iter()
            .chain(&merged.flows)
            .map(|r| r.flow_id)
            .collect();
        let unique: BTreeSet<u32> = ids.iter().copied().collect();
        assert_eq!(unique.len(), ids.len(), "{n} analyzers: a flow id twice");
        if n == 1 {
            assert_eq!(unique, (0..ids.len() as u32).collect());
        }
        for s in &merged.shards {
            assert!(s.flows.iter().all(|r| merged.flows.contains(r)));
        }
    }
}

/// `o`'s findings, the impact of [`APART`]'s cleared.
fn judged(o: &Outcome) -> BTreeMap<&'static str, Vec<Instance>> {
    let mut f = o.findings.clone();
    for id in APART {
        for i in f.get_mut(id).into_iter().flatten() {
            i.2.clear();
        }
    }
    f
}

#[test]
fn two_and_three_analyzers_give_what_one_gives_on_every_sample() {
    let mut compared = 0;
    for (path, records) in sample_records() {
        let one = run(&records, 1);
        for n in [2, 3] {
            let many = run(&records, n);
            assert_eq!(
                many.flows,
                one.flows,
                "{}: {n} analyzers' flows",
                path.display()
            );
            assert_eq!(
                many.timeline,
                one.timeline,
                "{}: {n}: timeline",
                path.display()
            );
            let sorted = |v: &[(u64, &'static str, Option<Key>)]| {
                let mut v = v.to_vec();
                v.sort();
                v
            };
            assert_eq!(
                sorted(&many.events),
                sorted(&one.events),
                "{}: {n}: events",
                path.display()
            );
            assert_eq!(many.pfc, one.pfc, "{}: {n}: pfc", path.display());
            assert_eq!(many.frames, one.frames, "{}: {n}: frames", path.display());
            // Every finding once, as one analyzer judges it: the N
            // analyzers' state judged together; the impact of those read
            // from each analyzer's own estimate aside ([`APART`]).
            assert_eq!(
                judged(&many),
                judged(&one),
                "{}: {n}: findings",
                path.display()
            );
            compared += 1;
        }
    }
    assert!(compared >= 30, "{compared}");
}
