//! `rocescope diff BEFORE AFTER`: the before/after table of a fix, from two
//! captures or two `analyze --out` directories (docs/wireshark.md).
//!
//! Every number is one `analyze`/`report --json` gives for that side alone
//! (summary.json's `totals` and `pfc`, flows.parquet's `goodput_gbps`), so
//! the table can be checked against either run.
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::html::esc;
use crate::offline::{self, Options};
use crate::{Error, Result};

/// One run, as the diff reads it.
#[derive(Clone, Debug, Serialize)]
pub struct Side {
    /// The capture or directory it came from.
    pub source: String,
    pub duration_ns: u64,
    #[serde(skip)]
    summary: Value,
    /// Sum of the flows' `goodput_gbps`.
    #[serde(skip)]
    goodput_gbps: f64,
}

/// How a row's values read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Count,
    /// A fraction (0.02 = 2 %).
    Ratio,
    Nanoseconds,
    Gbps,
}

/// One line of the table.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub metric: String,
    /// Where the number is in summary.json (or flows.parquet), for scripts.
    pub key: String,
    pub unit: Unit,
    pub before: f64,
    pub after: f64,
    /// `to zero`, `from zero`, `same`, `0.5×`, …
    pub change: String,
}

/// A finding as the diff names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FindingBrief {
    pub id: String,
    pub severity: String,
    pub title: String,
}

/// A finding in both runs whose severity or title differs.
#[derive(Clone, Debug, Serialize)]
pub struct FindingChange {
    pub id: String,
    pub before: FindingBrief,
    pub after: FindingBrief,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct FindingsDiff {
    pub gone: Vec<FindingBrief>,
    pub new: Vec<FindingBrief>,
    pub changed: Vec<FindingChange>,
    pub unchanged: Vec<FindingBrief>,
}

/// The comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Diff {
    pub before: Side,
    pub after: Side,
    pub rows: Vec<Row>,
    pub findings: FindingsDiff,
}

impl Side {
    /// A directory is read as `analyze --out` wrote it (summary.json,
    /// flows.parquet); anything else is analysed as a capture.
    pub fn load(path: &Path, opts: &Options) -> Result<Side> {
        let (summary, goodput_gbps) = if path.is_dir() {
            (
                read_summary(path)?,
                read_goodput(&path.join("flows.parquet"))?,
            )
        } else {
            let outcome = offline::run(&[path.to_path_buf()], opts, None)?;
            if let Some(e) = outcome.stopped_by {
                return Err(Error::Usage(format!(
                    "{}: reading stopped early ({e}): a diff of part of a capture would mislead",
                    path.display()
                )));
            }
            let a = outcome.analysis;
            let value = serde_json::to_value(&a.summary)
                .map_err(|e| Error::Internal(format!("cannot read the summary back: {e}")))?;
            // The rows held, then the retired flows' (0 when none retired).
            let held: f64 = a.unwritten_flows().map(|f| f.goodput_gbps).sum();
            let retired: f64 = a.retired_sums.values().map(|s| s.goodput_gbps).sum();
            (value, held + retired)
        };
        Ok(Side {
            source: path.display().to_string(),
            duration_ns: summary["duration_ns"].as_u64().unwrap_or(0),
            summary,
            goodput_gbps,
        })
    }

    fn total(&self, key: &str) -> f64 {
        self.summary["totals"][key].as_f64().unwrap_or(0.0)
    }

    /// Paused time and storms by `(iface, priority)`.
    fn pauses(&self) -> BTreeMap<(String, u64), (f64, f64)> {
        let mut m = BTreeMap::new();
        for p in self.summary["pfc"].as_array().into_iter().flatten() {
            let key = (
                p["iface"].as_str().unwrap_or("?").to_string(),
                p["priority"].as_u64().unwrap_or(0),
            );
            let e = m.entry(key).or_insert((0.0, 0.0));
            e.0 += p["paused_ns"].as_f64().unwrap_or(0.0);
            e.1 += p["fraction"].as_f64().unwrap_or(0.0);
        }
        m
    }

    fn findings(&self) -> Vec<FindingBrief> {
        let text = |v: &Value| v.as_str().unwrap_or("").to_string();
        self.summary["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| FindingBrief {
                id: text(&f["id"]),
                severity: text(&f["severity"]),
                title: text(&f["title"]),
            })
            .collect()
    }
}

fn read_summary(dir: &Path) -> Result<Value> {
    let path = dir.join("summary.json");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        Error::Usage(format!(
            "{}: cannot read {} ({e}): give a capture or a directory written by `rocescope analyze --out`",
            dir.display(),
            path.display()
        ))
    })?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| Error::Usage(format!("{}: not a rocescope summary: {e}", path.display())))?;
    if !v["totals"].is_object() {
        return Err(Error::Usage(format!(
            "{}: no `totals`: not a summary written by `rocescope analyze`",
            path.display()
        )));
    }
    Ok(v)
}

/// Sum of flows.parquet's `goodput_gbps`.
fn read_goodput(path: &Path) -> Result<f64> {
    use arrow_array::{Array, Float64Array};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let bad = |detail: String| Error::Usage(format!("{}: {detail}", path.display()));
    let file = std::fs::File::open(path).map_err(|source| Error::Open {
        path: path.to_path_buf(),
        source,
    })?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.build())
        .map_err(|e| bad(format!("not a readable Parquet file: {e}")))?;
    let mut sum = 0.0;
    for batch in reader {
        let batch = batch.map_err(|e| bad(format!("cannot read: {e}")))?;
        let col = batch
            .column_by_name("goodput_gbps")
            .and_then(|c| c.as_any().downcast_ref::<Float64Array>())
            .ok_or_else(|| bad("no goodput_gbps column of doubles: not a flows table".into()))?;
        sum += col.iter().flatten().sum::<f64>();
    }
    Ok(sum)
}

impl Diff {
    /// Loads both sides and lines them up.
    pub fn of(before: &Path, after: &Path, opts: &Options) -> Result<Diff> {
        let (b, a) = (Side::load(before, opts)?, Side::load(after, opts)?);
        let mut rows = Vec::new();
        let mut row = |metric: String, key: &str, unit: Unit, before: f64, after: f64| {
            rows.push(Row {
                change: change(before, after, unit),
                metric,
                key: key.to_string(),
                unit,
                before,
                after,
            });
        };
        let totals: &[(&str, &str, Unit)] = &[
            ("RoCE packets", "packets", Unit::Count),
            ("Retransmission rate", "retrans_rate", Unit::Ratio),
            ("Retransmitted packets", "retrans_packets", Unit::Count),
            ("Timeout rewinds", "rewinds_timeout", Unit::Count),
            (
                "  of them ghosts (delayed, not lost)",
                "rewinds_timeout_ghost",
                Unit::Count,
            ),
            ("NAK rewinds", "rewinds_nak", Unit::Count),
            (
                "Spurious resends (already ACKed)",
                "spurious_retrans",
                Unit::Count,
            ),
            ("PFC storms", "pfc_storms", Unit::Count),
            ("CE-marked packets", "ce", Unit::Count),
            ("CNPs", "cnps", Unit::Count),
        ];
        for &(metric, key, unit) in totals {
            row(
                metric.into(),
                &format!("totals.{key}"),
                unit,
                b.total(key),
                a.total(key),
            );
        }
        let (pb, pa) = (b.pauses(), a.pauses());
        let mut keys: Vec<&(String, u64)> = pb.keys().chain(pa.keys()).collect();
        keys.sort();
        keys.dedup();
        let zero = (0.0, 0.0);
        for k in keys {
            let (x, y) = (pb.get(k).unwrap_or(&zero), pa.get(k).unwrap_or(&zero));
            row(
                format!("PFC pause time, {} priority {}", k.0, k.1),
                "pfc[].paused_ns",
                Unit::Nanoseconds,
                x.0,
                y.0,
            );
            row(
                format!("  share of the capture, {} priority {}", k.0, k.1),
                "pfc[].fraction",
                Unit::Ratio,
                x.1,
                y.1,
            );
        }
        row(
            "Goodput (sum of flows)".into(),
            "flows.goodput_gbps",
            Unit::Gbps,
            b.goodput_gbps,
            a.goodput_gbps,
        );
        let findings = findings_diff(&b.findings(), &a.findings());
        Ok(Diff {
            before: b,
            after: a,
            rows,
            findings,
        })
    }

    /// The table and the findings, as text.
    pub fn render_text(&self) -> String {
        let head = ["metric", "before", "after", "change"];
        let cells: Vec<[String; 4]> = self
            .rows
            .iter()
            .map(|r| {
                [
                    r.metric.clone(),
                    value_text(r.before, r.unit),
                    value_text(r.after, r.unit),
                    r.change.clone(),
                ]
            })
            .collect();
        let width = |i: usize| {
            cells
                .iter()
                .map(|c| c[i].chars().count())
                .chain([head[i].len()])
                .max()
                .unwrap_or(0)
        };
        let w = [width(0), width(1), width(2)];
        let mut s = String::new();
        let _ = writeln!(s, "before: {}", self.before.source);
        let _ = writeln!(s, "after:  {}", self.after.source);
        let _ = writeln!(s);
        let line = |s: &mut String, c: [&str; 4]| {
            let pad = |t: &str, n: usize| n.saturating_sub(t.chars().count());
            let _ = writeln!(
                s,
                "{}{}  {}{}  {}{}  {}",
                c[0],
                " ".repeat(pad(c[0], w[0])),
                " ".repeat(pad(c[1], w[1])),
                c[1],
                " ".repeat(pad(c[2], w[2])),
                c[2],
                c[3]
            );
        };
        line(&mut s, head);
        for c in &cells {
            line(&mut s, [&c[0], &c[1], &c[2], &c[3]]);
        }
        let f = &self.findings;
        let _ = writeln!(s);
        let list = |s: &mut String, label: &str, items: &[FindingBrief]| {
            for i in items {
                let _ = writeln!(s, "{label} [{}] {}: {}", i.severity, i.id, i.title);
            }
        };
        list(&mut s, "gone     ", &f.gone);
        list(&mut s, "new      ", &f.new);
        for c in &f.changed {
            let _ = writeln!(
                s,
                "changed   {}: [{}] {} → [{}] {}",
                c.id, c.before.severity, c.before.title, c.after.severity, c.after.title
            );
        }
        list(&mut s, "unchanged", &f.unchanged);
        if f.gone.is_empty() && f.new.is_empty() && f.changed.is_empty() && f.unchanged.is_empty() {
            let _ = writeln!(s, "no findings in either run");
        }
        s
    }

    /// A self-contained HTML page of the same.
    pub fn render_html(&self) -> String {
        let mut s = String::from(
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>rocescope diff</title>\n<style>\
             body{font-family:sans-serif;margin:2em;max-width:70em}\
             table{border-collapse:collapse}td,th{padding:.3em .8em;border-bottom:1px solid #ddd}\
             td.n{text-align:right;font-variant-numeric:tabular-nums}\
             .gone{color:#070}.new{color:#a00}</style></head><body>\n<h1>Before / after</h1>\n",
        );
        let _ = writeln!(
            s,
            "<p>Before: <code>{}</code><br>After: <code>{}</code></p>",
            esc(&self.before.source),
            esc(&self.after.source)
        );
        s.push_str("<table><tr><th>metric</th><th>before</th><th>after</th><th>change</th></tr>\n");
        for r in &self.rows {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
                esc(&r.metric),
                esc(&value_text(r.before, r.unit)),
                esc(&value_text(r.after, r.unit)),
                esc(&r.change)
            );
        }
        s.push_str("</table>\n<h2>Findings</h2>\n<ul>\n");
        let f = &self.findings;
        let item = |s: &mut String, class: &str, label: &str, i: &FindingBrief| {
            let _ = writeln!(
                s,
                "<li class=\"{class}\">{label} [{}] <b>{}</b>: {}</li>",
                esc(&i.severity),
                esc(&i.id),
                esc(&i.title)
            );
        };
        for i in &f.gone {
            item(&mut s, "gone", "gone", i);
        }
        for i in &f.new {
            item(&mut s, "new", "new", i);
        }
        for c in &f.changed {
            let _ = writeln!(
                s,
                "<li>changed <b>{}</b>: [{}] {} → [{}] {}</li>",
                esc(&c.id),
                esc(&c.before.severity),
                esc(&c.before.title),
                esc(&c.after.severity),
                esc(&c.after.title)
            );
        }
        for i in &f.unchanged {
            item(&mut s, "same", "unchanged", i);
        }
        s.push_str("</ul>\n</body></html>\n");
        s
    }
}

/// Writes [`Diff::render_html`] to `path`.
pub fn write_html(d: &Diff, path: &Path) -> Result<()> {
    crate::tables::write_text(path, &d.render_html())
}

fn findings_diff(before: &[FindingBrief], after: &[FindingBrief]) -> FindingsDiff {
    let mut d = FindingsDiff::default();
    for b in before {
        match after.iter().find(|a| a.id == b.id) {
            None => d.gone.push(b.clone()),
            Some(a) if a == b => d.unchanged.push(b.clone()),
            Some(a) => d.changed.push(FindingChange {
                id: b.id.clone(),
                before: b.clone(),
                after: a.clone(),
            }),
        }
    }
    d.new = after
        .iter()
        .filter(|a| !before.iter().any(|b| b.id == a.id))
        .cloned()
        .collect();
    d
}

/// How `after` compares with `before`.
fn change(before: f64, after: f64, unit: Unit) -> String {
    if before == after {
        "same".into()
    } else if after == 0.0 {
        "to zero".into()
    } else if before == 0.0 {
        "from zero".into()
    } else {
        let r = after / before;
        let dir = if unit == Unit::Gbps && r > 1.0 {
            " up"
        } else {
            ""
        };
        format!("{r:.3}×{dir}")
    }
}

fn value_text(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Count => format!("{v:.0}"),
        Unit::Ratio => format!("{:.4} %", 100.0 * v),
        Unit::Gbps => format!("{v:.1} Gb/s"),
        Unit::Nanoseconds => {
            if v == 0.0 {
                "0".into()
            } else if v < 1e6 {
                format!("{:.1} µs", v / 1e3)
            } else if v < 1e9 {
                format!("{:.2} ms", v / 1e6)
            } else {
                format!("{:.3} s", v / 1e9)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_read_as_an_engineer_says_them() {
        assert_eq!(change(3.0, 0.0, Unit::Count), "to zero");
        assert_eq!(change(0.0, 2.0, Unit::Count), "from zero");
        assert_eq!(change(2.0, 2.0, Unit::Count), "same");
        assert_eq!(change(100.0, 120.0, Unit::Gbps), "1.200× up");
        assert_eq!(change(4.0, 1.0, Unit::Count), "0.250×");
        assert_eq!(value_text(249_808_000.0, Unit::Nanoseconds), "249.81 ms");
        assert_eq!(value_text(0.02789, Unit::Ratio), "2.7890 %");
    }

    #[test]
    fn findings_are_gone_new_changed_or_unchanged() {
        let f = |id: &str, sev: &str, title: &str| FindingBrief {
            id: id.into(),
            severity: sev.into(),
            title: title.into(),
        };
        let d = findings_diff(
            &[
                f("a", "critical", "x"),
                f("b", "info", "y"),
                f("c", "info", "z"),
            ],
            &[
                f("b", "warning", "y"),
                f("c", "info", "z"),
                f("d", "info", "w"),
            ],
        );
        assert_eq!(d.gone, [f("a", "critical", "x")]);
        assert_eq!(d.new, [f("d", "info", "w")]);
        assert_eq!(d.changed.len(), 1);
        assert_eq!(d.changed[0].after.severity, "warning");
        assert_eq!(d.unchanged, [f("c", "info", "z")]);
    }
}
