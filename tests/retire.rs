//! Flows retired as they go idle and interim rows, end to end on a sample
//! capture (docs/analysis.md, "Retirement"; docs/tables.md, flows.parquet).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::{Table, rocescope_ok};

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../pcaps/{name}.pcapng"))
}

type Key = (Option<String>, Option<String>, Option<String>, Option<i128>);

/// Per flow key, its rows' counters summed (packets, bytes, retransmitted
/// packets, ACKs, NAKs) and its number of rows.
fn by_key(tables: &[Table]) -> BTreeMap<Key, [i128; 6]> {
    let mut out: BTreeMap<Key, [i128; 6]> = BTreeMap::new();
    for t in tables {
        let (iface, src, dst, qp) = (
            t.strings("iface"),
            t.strings("src_ip"),
            t.strings("dst_ip"),
            t.ints("dest_qp"),
        );
        let cols: Vec<Vec<Option<i128>>> = ["packets", "bytes", "retrans_packets", "acks", "naks"]
            .iter()
            .map(|c| t.ints(c))
            .collect();
        for i in 0..t.rows() {
            let key = (iface[i].clone(), src[i].clone(), dst[i].clone(), qp[i]);
            let e = out.entry(key).or_default();
            for (j, c) in cols.iter().enumerate() {
                e[j] += c[i].unwrap_or(0);
            }
            e[5] += 1;
        }
    }
    out
}

fn parquet_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            parquet_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "parquet") {
            out.push(p);
        }
    }
}

/// lossy-link (688 µs, 8 flows on two taps, no pause in a flow over 63 µs)
/// with `--flow-idle 100us --flow-active 200us`: the 4 flows whose last
/// packet comes more than 100 µs before the capture's end retire before it;
/// every flow is live past its first three 200 µs boundaries (its first
/// packet is within 10 µs of the capture's start, it lasts 567 µs or more
/// and retires no sooner than 100 µs after), so writes 3 interim rows. The
/// rows of each flow add up to the flow of a run without retirement, in
/// flows.parquet and in the dataset alike.
#[test]
fn retired_and_interim_rows_add_up_to_the_flows() {
    let tmp = tempfile::tempdir().unwrap();
    let cap = sample("lossy-link");
    let cap = cap.to_str().unwrap();
    let (base, run, ds) = (
        tmp.path().join("base"),
        tmp.path().join("run"),
        tmp.path().join("ds"),
    );
    rocescope_ok(&["analyze", cap, "--out", base.to_str().unwrap()]);
    rocescope_ok(&[
        "analyze",
        cap,
        "--flow-idle",
        "100us",
        "--flow-active",
        "200us",
        "--out",
        run.to_str().unwrap(),
        "--dataset",
        ds.to_str().unwrap(),
        "--host",
        "h",
    ]);
    let whole = by_key(&[Table::read(&base.join("flows.parquet"))]);
    assert_eq!(whole.len(), 8);
    assert!(whole.values().all(|c| c[5] == 1));
    let rows = Table::read(&run.join("flows.parquet"));
    assert_eq!(rows.rows(), 8 + 8 * 3);
    let interim = rows.bools("interim");
    assert_eq!(interim.iter().filter(|b| **b == Some(true)).count(), 24);
    let split = by_key(&[rows]);
    let strip = |m: &BTreeMap<Key, [i128; 6]>| -> BTreeMap<Key, [i128; 5]> {
        m.iter()
            .map(|(k, c)| (k.clone(), [c[0], c[1], c[2], c[3], c[4]]))
            .collect()
    };
    assert_eq!(strip(&split), strip(&whole));
    assert!(split.values().all(|c| c[5] == 4));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let r = &summary["retirement"];
    assert_eq!(
        (
            &r["retired_flows"],
            &r["interim_rows"],
            &r["peak_live_flows"]
        ),
        (
            &serde_json::json!(4),
            &serde_json::json!(24),
            &serde_json::json!(8)
        )
    );
    assert_eq!(summary["totals"]["flows"], serde_json::json!(8));
    // The dataset's hourly files have the same rows.
    let mut files = Vec::new();
    parquet_files(&ds.join("flows"), &mut files);
    let tables: Vec<Table> = files.iter().map(|f| Table::read(f)).collect();
    assert_eq!(tables.iter().map(Table::rows).sum::<usize>(), 32);
    assert_eq!(by_key(&tables), split);
}

/// UET PDC directions write interim rows by the QP flows' rule
/// (docs/analysis.md, "Retirement" and "UET: PDCs"): uet-incast (153 µs)
/// with `--flow-active 20us` splits each direction into rows whose counts,
/// neutral and `uet_` alike, add up to its row of a run without interim
/// rows, each direction's rows ending with one that is not interim; the
/// summary's `uet` totals do not change.
#[test]
fn uet_pdc_interim_rows_add_up_to_the_directions() {
    let tmp = tempfile::tempdir().unwrap();
    let cap = sample("uet-incast");
    let cap = cap.to_str().unwrap();
    let (base, run) = (tmp.path().join("base"), tmp.path().join("run"));
    rocescope_ok(&["analyze", cap, "--out", base.to_str().unwrap()]);
    let (run_s, base_s) = (run.to_str().unwrap(), base.to_str().unwrap());
    rocescope_ok(&["analyze", cap, "--flow-active", "20us", "--out", run_s]);
    const COUNTS: [&str; 13] = [
        "packets",
        "bytes",
        "data_packets",
        "retrans_packets",
        "spurious_retrans",
        "acks",
        "naks",
        "gap_late",
        "uet_nacks_trimmed",
        "uet_delivered",
        "uet_sacked",
        "uet_nacked",
        "uet_timeout_resends",
    ];
    type Direction = (Option<String>, Option<String>, Option<i128>);
    // Per direction: its counts summed, its rows and its interim rows.
    let per_direction = |t: &Table| {
        let mut out: BTreeMap<Direction, ([i128; 13], usize, usize)> = BTreeMap::new();
        let (iface, src, id) = (
            t.strings("iface"),
            t.strings("src_ip"),
            t.ints("uet_spdcid"),
        );
        let interim = t.bools("interim");
        let cols: Vec<_> = COUNTS.iter().map(|c| t.ints(c)).collect();
        for i in (0..t.rows()).filter(|&i| id[i].is_some()) {
            let e = out
                .entry((iface[i].clone(), src[i].clone(), id[i]))
                .or_default();
            for (j, c) in cols.iter().enumerate() {
                e.0[j] += c[i].unwrap();
            }
            e.1 += 1;
            e.2 += usize::from(interim[i] == Some(true));
        }
        out
    };
    let whole = per_direction(&Table::read(&base.join("flows.parquet")));
    let split = per_direction(&Table::read(&run.join("flows.parquet")));
    assert_eq!(whole.len(), 18);
    assert!(whole.values().all(|w| w.1 == 1 && w.2 == 0));
    let sums = |m: &BTreeMap<Direction, ([i128; 13], usize, usize)>| -> Vec<[i128; 13]> {
        m.values().map(|v| v.0).collect()
    };
    assert_eq!(sums(&split), sums(&whole), "{COUNTS:?}");
    // Every direction is live across several 20 µs boundaries.
    assert!(split.values().all(|s| s.2 >= 2 && s.1 == s.2 + 1));
    let interim: usize = split.values().map(|s| s.2).sum();
    let read = |dir: &str| -> serde_json::Value {
        let p = Path::new(dir).join("summary.json");
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let (s, b) = (read(run_s), read(base_s));
    assert_eq!(s["retirement"]["interim_rows"], serde_json::json!(interim));
    assert_eq!(s["uet"], b["uet"]);
    // None retires (`--flow-idle` 60 s): every PDC direction of the truth
    // (two per PDC and tap) is live at once by the end, and
    // `peak_live_flows` counts them as flows (docs/tables.md).
    let truth_path = Path::new(cap).with_extension("truth.json");
    let truth: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(truth_path).unwrap()).unwrap();
    let directions = 2 * truth["pdcs"].as_array().unwrap().len();
    assert_eq!(
        s["retirement"]["peak_live_flows"],
        serde_json::json!(directions)
    );
}
