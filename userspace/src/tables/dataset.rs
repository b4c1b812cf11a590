//! A Parquet dataset partitioned by host and hour (docs/tables.md,
//! "Dataset layout"), for queries over many taps and many runs:
//!
//! ```text
//! DIR/host=NAME/hour=YYYY-MM-DDTHH/packets-<start>.parquet
//!                                  flows-<start>.parquet
//!                                  events-<start>.parquet
//!                                  pfc-<start>.parquet
//!                                  timeline-<start>.parquet
//!                                  _summary-<run>.json
//! ```
//!
//! * **Schemas** are the `--out` tables' (same columns, same types), plus one
//!   string column `run` at the end: the run's start (below), so `flow_id`s
//!   of different runs of a host stay apart (join on `host, run, flow_id`).
//!   `host` and `hour` come from the directory names (hive partitioning).
//! * **Hours** are UTC. A row goes to the hour of its own time: `ts_ns` for
//!   packets and events, `bin_start_ns` for timeline rows, `start_ns` for
//!   pause intervals and `first_ts_ns` for flows (a flow or pause spanning
//!   an hour boundary is one row, in the hour it began; its totals cover
//!   the whole run).
//! * **Files**: `<start>` is the capture time of the file's first row as
//!   `YYYYMMDDTHHMMSS.nnnnnnnnnZ` (UTC, nanoseconds; no `:` so Hadoop paths
//!   take it). A file is closed and a new one started at an hour boundary,
//!   once its rows span `rotate_ns` of capture time, or once it holds about
//!   `rotate_bytes`: a long live run never holds one ever-growing file. Each
//!   file is written as `.NAME.partial` and renamed when complete; engines
//!   skip dot- and underscore-files, so they never see half a file, nor the
//!   `_summary-<run>.json` files (the run's `summary.json`, in the hour the
//!   run began).
//! * **Runs**: `run` is the `<start>` of the run's first record. Names depend
//!   only on the data, so analysing the same capture again with the same
//!   options replaces its files instead of adding duplicates.
//! * A table with no rows in a run still gets one (empty) file in the run's
//!   first hour, so a glob over it always finds a schema.
//! * Tables share partition directories: read one table with a glob such as
//!   `DIR/*/*/flows-*.parquet` (DuckDB `read_parquet(..., hive_partitioning
//!   = true)`, polars `scan_parquet(..., hive_partitioning=True)`, Spark
//!   `pathGlobFilter`).
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use rocescope_common::PacketRecord;

use super::analysis::{EventColumns, FlowColumns, Named, PfcColumns, TimelineColumns};
use super::packets::{PacketColumns, PacketRow};
use super::{Columns, ParquetTable, RunFacts, summary_json, write_json};
use crate::analyze::{self, Analysis, Verdict, fmt_utc};
use crate::{Error, Result};

pub const HOUR_NS: u64 = 3_600_000_000_000;
/// Hours a table keeps open at once (rows near a boundary arrive late).
const MAX_OPEN_HOURS: usize = 2;

/// Where and how a dataset is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatasetOptions {
    pub dir: PathBuf,
    /// The `host=` partition: the tap host's name.
    pub host: String,
    /// Start a new file once a file's rows span this much capture time
    /// (0: only at hour boundaries).
    pub rotate_ns: u64,
    /// Start a new file once a file holds about this many bytes (0: no limit).
    pub rotate_bytes: u64,
}

impl DatasetOptions {
    /// Defaults: a file per table per hour, at most ~512 MB each.
    pub fn new(dir: &Path, host: &str) -> Result<Self> {
        check_host(host)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            host: host.to_string(),
            rotate_ns: 0,
            rotate_bytes: 512 << 20,
        })
    }
}

/// A host name is a partition value: letters, digits, `.`, `-` and `_`,
/// not starting with `.` or `_` (engines would skip such a directory).
pub fn check_host(host: &str) -> Result<()> {
    let ok = !host.is_empty()
        && host.len() <= 128
        && !host.starts_with(['.', '_'])
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    if ok {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "--host {host:?}: use letters, digits, '.', '-' and '_' (not first), e.g. tap-leaf1"
        )))
    }
}

/// This machine's name, as the default `--host`.
pub fn local_host_name() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .unwrap_or_default();
    let name: String = raw
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = name.trim_start_matches(['.', '_']).to_string();
    if name.is_empty() {
        "localhost".into()
    } else {
        name
    }
}

/// The `hour=` partition value of a time: `YYYY-MM-DDTHH` (UTC).
pub fn hour_partition(ns: u64) -> String {
    fmt_utc(ns)[..13].to_string()
}

/// A time as it appears in file names: `YYYYMMDDTHHMMSS.nnnnnnnnnZ` (UTC).
pub fn file_stamp(ns: u64) -> String {
    let iso = fmt_utc(ns);
    let compact: String = iso[..19]
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    format!("{compact}.{:09}Z", ns % 1_000_000_000)
}

/// What every table's writer needs to know.
struct Ctx {
    dir: PathBuf,
    host: String,
    rotate_ns: u64,
    rotate_bytes: u64,
    /// The run's start (`file_stamp` of its first row), once there is one.
    run: Option<(u64, String)>,
}

impl Ctx {
    fn partition(&self, hour: u64) -> PathBuf {
        self.dir
            .join(format!("host={}", self.host))
            .join(format!("hour={}", hour_partition(hour * HOUR_NS)))
    }

    fn run_id(&mut self, ts_ns: u64) -> &str {
        &self.run.get_or_insert_with(|| (ts_ns, file_stamp(ts_ns))).1
    }
}

struct Segment<C: Columns> {
    hour: u64,
    start_ns: u64,
    file: ParquetTable<C>,
}

/// One table's open files, at most one per hour.
struct Partitioned<C: Columns> {
    table: &'static str,
    open: Vec<Segment<C>>,
    /// File names used by this run (a second file of an hour starting at the
    /// same nanosecond gets `-2`).
    names: HashSet<PathBuf>,
    files: Vec<PathBuf>,
    rows: u64,
}

impl<C: Columns> Partitioned<C> {
    fn new(table: &'static str) -> Self {
        Self {
            table,
            open: Vec::new(),
            names: HashSet::new(),
            files: Vec::new(),
            rows: 0,
        }
    }

    fn push(&mut self, ctx: &mut Ctx, ts_ns: u64, row: &C::Row<'_>) -> Result<()> {
        let hour = ts_ns / HOUR_NS;
        if let Some(i) = self.open.iter().position(|s| s.hour == hour) {
            let s = &self.open[i];
            let full = (ctx.rotate_ns > 0 && ts_ns.saturating_sub(s.start_ns) >= ctx.rotate_ns)
                || (ctx.rotate_bytes > 0 && s.file.approx_bytes() >= ctx.rotate_bytes);
            if !full {
                self.rows += 1;
                return self.open[i].file.push(row);
            }
            let s = self.open.remove(i);
            self.files.push(s.file.close()?);
        }
        if self.open.len() >= MAX_OPEN_HOURS {
            // The hour opened first is the one least likely to see more rows.
            let s = self.open.remove(0);
            self.files.push(s.file.close()?);
        }
        let mut file = self.create(ctx, hour, ts_ns)?;
        file.push(row)?;
        self.rows += 1;
        self.open.push(Segment {
            hour,
            start_ns: ts_ns,
            file,
        });
        Ok(())
    }

    fn create(&mut self, ctx: &mut Ctx, hour: u64, start_ns: u64) -> Result<ParquetTable<C>> {
        let run = ctx.run_id(start_ns).to_string();
        let dir = ctx.partition(hour);
        std::fs::create_dir_all(&dir).map_err(|e| Error::Write {
            path: dir.clone(),
            detail: format!("cannot create the partition directory: {e}"),
        })?;
        let stamp = file_stamp(start_ns);
        let mut name = format!("{}-{stamp}.parquet", self.table);
        let mut n = 2;
        while !self.names.insert(dir.join(&name)) {
            name = format!("{}-{stamp}-{n}.parquet", self.table);
            n += 1;
        }
        Ok(ParquetTable::create(&dir, &name)?.with_constant("run", &run))
    }

    /// Completes every open file; a table that had no row at all gets an
    /// empty one in the run's first hour.
    fn close(mut self, ctx: &mut Ctx) -> Result<Vec<PathBuf>> {
        if let (true, Some(start)) = (
            self.files.is_empty() && self.open.is_empty(),
            ctx.run.as_ref().map(|r| r.0),
        ) {
            let file = self.create(ctx, start / HOUR_NS, start)?;
            self.files.push(file.close()?);
        }
        for s in self.open {
            self.files.push(s.file.close()?);
        }
        Ok(self.files)
    }
}

/// Writes one run's tables into a dataset. The offline `analyze --dataset`
/// and the live tap use it through [`crate::pipeline::Output`]; packets,
/// events and timeline rows stream into rotating files as they come,
/// flows and pause intervals are written when the run ends.
pub struct DatasetWriter {
    ctx: Ctx,
    ifaces: Vec<String>,
    packets: Partitioned<PacketColumns>,
    events: Partitioned<EventColumns>,
    timeline: Partitioned<TimelineColumns>,
    /// The first error of a sink call (the Sink trait cannot return one).
    failed: Option<Error>,
}

impl DatasetWriter {
    pub fn create(opts: &DatasetOptions) -> Result<Self> {
        check_host(&opts.host)?;
        std::fs::create_dir_all(&opts.dir).map_err(|e| Error::Write {
            path: opts.dir.clone(),
            detail: format!("cannot create the dataset directory: {e}"),
        })?;
        Ok(Self {
            ctx: Ctx {
                dir: opts.dir.clone(),
                host: opts.host.clone(),
                rotate_ns: opts.rotate_ns,
                rotate_bytes: opts.rotate_bytes,
                run: None,
            },
            ifaces: Vec::new(),
            packets: Partitioned::new("packets"),
            events: Partitioned::new("events"),
            timeline: Partitioned::new("timeline"),
            failed: None,
        })
    }

    /// Writes flows, pause intervals and the run's summary, completes every
    /// file and returns the files written (summary last).
    pub fn finish(mut self, analysis: &Analysis, facts: &RunFacts) -> Result<Vec<PathBuf>> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let ifaces = &self.ifaces;
        let ctx = &mut self.ctx;
        let mut flows = Partitioned::<FlowColumns>::new("flows");
        for row in &analysis.flows {
            flows.push(ctx, row.first_ts_ns, &Named { row, ifaces })?;
        }
        let mut pfc = Partitioned::<PfcColumns>::new("pfc");
        for row in &analysis.pfc {
            pfc.push(ctx, row.start_ns, &Named { row, ifaces })?;
        }
        let mut files = self.packets.close(ctx)?;
        files.extend(flows.close(ctx)?);
        files.extend(self.events.close(ctx)?);
        files.extend(pfc.close(ctx)?);
        files.extend(self.timeline.close(ctx)?);

        let Some((start, run)) = ctx.run.clone() else {
            // No record at all: nothing to partition by.
            return Ok(files);
        };
        let path = ctx
            .partition(start / HOUR_NS)
            .join(format!("_summary-{run}.json"));
        let mut summary = summary_json(analysis, facts, &path)?;
        if let Some(obj) = summary.as_object_mut() {
            let relative: Vec<String> = files
                .iter()
                .map(|f| f.strip_prefix(&ctx.dir).unwrap_or(f).display().to_string())
                .collect();
            obj.insert(
                "dataset".into(),
                serde_json::json!({ "host": ctx.host, "run": run, "files": relative }),
            );
        }
        write_json(&path, &summary)?;
        files.push(path);
        Ok(files)
    }

    fn keep_first_error(&mut self, r: Result<()>) {
        if let Err(e) = r {
            self.failed.get_or_insert(e);
        }
    }
}

impl analyze::Sink for DatasetWriter {
    fn event(&mut self, e: &analyze::Event) {
        let row = Named {
            row: e,
            ifaces: &self.ifaces,
        };
        let r = self.events.push(&mut self.ctx, e.ts_ns, &row);
        self.keep_first_error(r);
    }

    fn timeline(&mut self, row: &analyze::TimelineRow) {
        let r = self.timeline.push(&mut self.ctx, row.bin_start_ns, row);
        self.keep_first_error(r);
    }
}

impl crate::pipeline::Output for DatasetWriter {
    fn name_iface(&mut self, iface: u16, name: &str) {
        let i = usize::from(iface);
        if self.ifaces.len() <= i {
            self.ifaces.resize(i + 1, String::new());
        }
        self.ifaces[i] = name.to_string();
    }

    fn packet(&mut self, rec: &PacketRecord, verdict: Verdict) -> Result<()> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let row = PacketRow::new(rec, &self.ifaces, verdict);
        self.packets.push(&mut self.ctx, rec.ts_ns, &row)
    }

    fn close(self: Box<Self>, analysis: &Analysis, facts: &RunFacts) -> Result<()> {
        self.finish(analysis, facts).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::TimelineRow;
    use crate::pipeline::Output;

    #[test]
    fn names_and_partitions() {
        // 2026-01-01T00:00:00.000025292Z
        let ns = 1_767_225_600_000_025_292;
        assert_eq!(hour_partition(ns), "2026-01-01T00");
        assert_eq!(file_stamp(ns), "20260101T000000.000025292Z");
        assert_eq!(hour_partition(ns + 25 * HOUR_NS), "2026-01-02T01");
        assert!(check_host("tap-leaf1.dc_2").is_ok());
        for bad in ["", "a/b", "x=y", ".hidden", "_x", "a b"] {
            assert!(check_host(bad).is_err(), "{bad:?}");
        }
        assert!(check_host(&local_host_name()).is_ok());
    }

    fn row(flow_id: u32, bin_start_ns: u64) -> TimelineRow {
        TimelineRow {
            flow_id,
            bin_start_ns,
            bin_ns: 100_000,
            packets: 1,
            bytes: 1000,
            retrans_packets: 0,
            ce: 0,
            cnps: 0,
            gbps: 0.08,
            goodput_gbps: 0.08,
            paused_ns: 0,
        }
    }

    fn empty_analysis() -> Analysis {
        let mut a = crate::analyze::Analyzer::new(Default::default());
        let mut sink = crate::analyze::VecSink::default();
        a.set_iface_name(0, "tap");
        a.finish(&mut sink)
    }

    #[test]
    fn rotates_at_hours_by_time_and_keeps_every_row() {
        use crate::analyze::Sink;
        let dir = tempfile::tempdir().unwrap();
        let mut opts = DatasetOptions::new(dir.path(), "tap1").unwrap();
        opts.rotate_ns = 10 * 60 * 1_000_000_000; // 10 minutes
        let mut w = DatasetWriter::create(&opts).unwrap();
        w.name_iface(0, "tap");
        let t0 = 1_767_225_600_000_000_000 + 50 * 60 * 1_000_000_000; // 00:50
        let minute = 60 * 1_000_000_000;
        // 00:50 .. 01:29, one row a minute, with a late row for 00:59 at 01:01.
        for m in 0..40 {
            w.timeline(&row(m, t0 + u64::from(m) * minute));
            if m == 11 {
                w.timeline(&row(999, t0 + 9 * minute));
            }
        }
        let files = w.finish(&empty_analysis(), &RunFacts::default()).unwrap();
        let timeline: Vec<_> = files
            .iter()
            .filter(|f| {
                f.file_name()
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .starts_with("timeline-")
            })
            .collect();
        let rel = |p: &PathBuf| p.strip_prefix(dir.path()).unwrap().display().to_string();
        let names: Vec<String> = timeline.iter().map(|p| rel(p)).collect();
        // 00:50-00:59 in one file; 01:00-01:09, 01:10-01:19, 01:20-01:29.
        assert!(
            names.contains(
                &"host=tap1/hour=2026-01-01T00/timeline-20260101T005000.000000000Z.parquet"
                    .to_string()
            ),
            "{names:?}"
        );
        assert!(
            names.contains(
                &"host=tap1/hour=2026-01-01T01/timeline-20260101T010000.000000000Z.parquet"
                    .to_string()
            ),
            "{names:?}"
        );
        assert!(
            names.contains(
                &"host=tap1/hour=2026-01-01T01/timeline-20260101T012000.000000000Z.parquet"
                    .to_string()
            ),
            "{names:?}"
        );
        assert_eq!(names.len(), 4, "{names:?}");
        // Every row is somewhere, and nothing half-written is left behind.
        let rows: usize = timeline
            .iter()
            .map(|p| {
                let f = std::fs::File::open(p).unwrap();
                parquet::file::reader::SerializedFileReader::new(f)
                    .map(|r| {
                        use parquet::file::reader::FileReader;
                        r.metadata().file_metadata().num_rows() as usize
                    })
                    .unwrap()
            })
            .sum();
        assert_eq!(rows, 41);
        let partial = walk(dir.path())
            .into_iter()
            .filter(|p| p.to_string_lossy().contains(".partial"))
            .count();
        assert_eq!(partial, 0);
        // Tables without rows still have a file; the summary names the run.
        for table in ["packets", "flows", "events", "pfc"] {
            assert!(
                files
                    .iter()
                    .any(|f| rel(f).starts_with(&format!("host=tap1/hour=2026-01-01T00/{table}-"))),
                "{table}"
            );
        }
        let summary = files.last().unwrap();
        assert_eq!(
            rel(summary),
            "host=tap1/hour=2026-01-01T00/_summary-20260101T005000.000000000Z.json"
        );
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
        out
    }
}
