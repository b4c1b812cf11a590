//! `analyze --analyzers 2` against `--analyzers 1` on every bundled sample
//! (docs/live.md, "Sharded analysis"): the same flows rows, events,
//! timeline rows, packets verdicts in record order, `pfc` rows, frame
//! counts, `summary.json` totals and per-tap sections, `nics.parquet`, and
//! the findings, each once (id, severity, the flows named, impact; the
//! impact of `shard::analyzers::APART` aside, read from each analyzer's
//! own estimate of the taps' clock offsets). Flow ids differ (each analyzer
//! numbers its own), so a flow is named by its rows' content.
use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use arrow_array::Array;
use arrow_schema::DataType;
use common::{Table, rocescope, rocescope_ok};
use rocescope::shard::analyzers::APART;

/// Every cell of a table as text, row by row, by column name.
pub(crate) fn cells(t: &Table) -> Vec<BTreeMap<String, String>> {
    let mut rows = vec![BTreeMap::new(); t.rows()];
    let Some(first) = t.batches.first() else {
        return rows;
    };
    for field in first.schema().fields() {
        let name = field.name();
        let values: Vec<String> = match field.data_type() {
            DataType::Utf8 => t.strings(name).iter().map(|x| format!("{x:?}")).collect(),
            DataType::Float64 => t.floats(name).iter().map(|x| format!("{x:?}")).collect(),
            DataType::Boolean => t.bools(name).iter().map(|x| format!("{x:?}")).collect(),
            DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::UInt64 => t.ints(name).iter().map(|x| format!("{x:?}")).collect(),
            _ => t
                .batches
                .iter()
                .flat_map(|b| {
                    let a = b.column_by_name(name).unwrap();
                    (0..a.len()).map(move |i| format!("{:?}", a.slice(i, 1)))
                })
                .collect(),
        };
        for (row, v) in rows.iter_mut().zip(values) {
            row.insert(name.clone(), v);
        }
    }
    rows
}

/// A run's tables with flow ids replaced by what names the flow whatever
/// its id: its rows in `flows.parquet`, every column but the id.
#[derive(Debug)]
pub(crate) struct Named {
    /// flows rows, without their ids, sorted.
    pub(crate) flows: Vec<String>,
    pub(crate) names: BTreeMap<String, String>,
}

impl Named {
    pub(crate) fn of(dir: &Path) -> Named {
        let rows = cells(&Table::read(&dir.join("flows.parquet")));
        let mut by_id: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut flows = Vec::new();
        for mut r in rows {
            let id = r.remove("flow_id").unwrap();
            let text = format!("{r:?}");
            by_id.entry(id).or_default().push(text.clone());
            flows.push(text);
        }
        flows.sort();
        let names = by_id
            .into_iter()
            .map(|(id, mut rows)| {
                rows.sort();
                (id, rows.join("|"))
            })
            .collect();
        Named { flows, names }
    }

    /// `rows` with every `*flow_id` column replaced by the flow's name.
    pub(crate) fn rename(&self, rows: Vec<BTreeMap<String, String>>) -> Vec<String> {
        rows.into_iter()
            .map(|mut r| {
                for (col, v) in r.iter_mut() {
                    if col.ends_with("flow_id") && v != "None" {
                        *v =
                            self.names.get(v.as_str()).cloned().unwrap_or_else(|| {
                                panic!("{col} {v}: no such flow in flows.parquet")
                            });
                    } else if v.contains("flow ") {
                        *v = self.rename_text(v);
                    }
                }
                format!("{r:?}")
            })
            .collect()
    }

    /// `text` with each "flow N" (an event's detail) naming the flow.
    fn rename_text(&self, text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(at) = rest.find("flow ") {
            let (before, after) = rest.split_at(at + "flow ".len());
            out.push_str(before);
            let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let id = &after[..digits];
            match self.names.get(&format!("Some({id})")) {
                Some(name) if digits > 0 => out.push_str(&format!("<{name}>")),
                _ => out.push_str(id),
            }
            rest = &after[digits..];
        }
        out.push_str(rest);
        out
    }

    /// A table's rows, renamed, in file order.
    pub(crate) fn table(&self, dir: &Path, name: &str) -> Vec<String> {
        self.rename(cells(&Table::read(&dir.join(format!("{name}.parquet")))))
    }

    /// The findings in `summary.json`, each instance as (id, severity, the
    /// flows it names, impact), sorted; the impact of `apart`'s left out.
    pub(crate) fn findings(
        &self,
        summary: &serde_json::Value,
        apart: &[&str],
    ) -> Vec<(String, String, BTreeSet<String>, String)> {
        let mut out = Vec::new();
        for f in summary["findings"].as_array().unwrap() {
            let id = f["id"].as_str().unwrap();
            let flows = f["flows"].as_array().unwrap().iter().map(|flow| {
                let id = Some(flow.as_i64().unwrap() as i128);
                self.names[&format!("{id:?}")].clone()
            });
            let impact = match apart.contains(&id) {
                true => String::new(),
                false => f["impact"].to_string(),
            };
            let severity = f["severity"].to_string();
            out.push((id.to_string(), severity, flows.collect(), impact));
        }
        out.sort();
        out
    }
}

pub(crate) fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

fn samples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pcaps");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcapng"))
        .collect();
    paths.sort();
    paths
}

/// The sections of `summary.json` a sharded run merges to one analyzer's
/// values (docs/live.md, the merge table).
pub(crate) const MERGED_SUMMARY: [&str; 7] = [
    "frames",
    "totals",
    "taps",
    "pfc",
    "duration_ns",
    "ce_to_cnp",
    "capture_facts",
];

#[test]
fn two_and_three_analyzers_write_what_one_writes_on_every_sample() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut compared, mut split) = (0, 0);
    for cap in samples() {
        let name = cap.file_stem().unwrap().to_string_lossy().into_owned();
        let run = |n: &str| -> PathBuf {
            let out = tmp.path().join(format!("{name}-{n}"));
            let (c, o) = (cap.to_str().unwrap(), out.to_str().unwrap());
            rocescope_ok(&["analyze", c, "--out", o, "--analyzers", n]);
            out
        };
        let one = run("1");
        let a = Named::of(&one);
        let sa = summary(&one);
        for n in ["2", "3"] {
            let many = run(n);
            let b = Named::of(&many);
            assert_eq!(b.flows, a.flows, "{name}: {n}: flows rows");
            assert_eq!(
                b.table(&many, "packets"),
                a.table(&one, "packets"),
                "{name}: {n}: packets, in record order"
            );
            for t in ["events", "timeline", "pfc", "nics"] {
                let (mut x, mut y) = (b.table(&many, t), a.table(&one, t));
                x.sort();
                y.sort();
                assert_eq!(x, y, "{name}: {n}: {t}");
            }
            let sb = summary(&many);
            for key in MERGED_SUMMARY {
                assert_eq!(sb[key], sa[key], "{name}: {n}: summary.json {key}");
            }
            // Judged once over the analyzers together: every finding
            // once, as one analyzer gives it.
            assert_eq!(
                b.findings(&sb, &APART),
                a.findings(&sa, &APART),
                "{name}: {n}: findings"
            );
            if n == "2" {
                // Analyzer k of 2 numbers its flows k, k + 2, …: both took
                // flows.
                let ids = Table::read(&many.join("flows.parquet")).ints("flow_id");
                let parities: BTreeSet<i128> = ids.iter().flatten().map(|id| id % 2).collect();
                split += usize::from(parities.len() == 2);
            }
            std::fs::remove_dir_all(&many).unwrap();
        }
        compared += 1;
    }
    assert!(compared >= 15, "{compared} samples");
    // Few samples have many address pairs: enough of them split.
    assert!(
        split >= 3,
        "flows on both analyzers in {split} samples only"
    );
}

#[test]
fn analyzers_out_of_range_or_with_one_thread_are_clear_errors() {
    let cap = samples().remove(0);
    let tmp = tempfile::tempdir().unwrap();
    let (c, o) = (cap.to_str().unwrap(), tmp.path().to_str().unwrap());
    for n in ["0", "65", "two"] {
        let r = rocescope(&["analyze", c, "--out", o, "--analyzers", n]);
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(!r.status.success(), "--analyzers {n} accepted");
        assert!(err.contains("--analyzers"), "{n}: {err}");
    }
    let r = rocescope(&[
        "analyze",
        c,
        "--out",
        o,
        "--analyzers",
        "2",
        "--threads",
        "1",
    ]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(!r.status.success());
    assert!(
        err.contains("--analyzers 2") && err.contains("--threads 1"),
        "{err}"
    );
}
