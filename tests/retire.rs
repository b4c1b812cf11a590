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
