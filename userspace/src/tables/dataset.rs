//! A Parquet dataset of many taps and runs (docs/tables.md, "Dataset
//! layout"): one root per table, partitioned by host, UTC date and hour.
//!
//! ```text
//! DIR/packets/host=NAME/date=YYYY-MM-DD/hour=H/part-<run>-<start>.parquet
//! DIR/flows/…, DIR/events/…, DIR/pfc/…, DIR/timeline/…   (the same)
//! DIR/summaries/host=NAME/date=YYYY-MM-DD/hour=H/summary-<run>.json
//! DIR/.partial/…                                         (files being written)
//! ```
//!
//! * **One root per table, only Parquet in it**, so an engine pointed at
//!   `DIR/flows` (Spark, pyarrow, pandas, polars) or at
//!   `DIR/flows/**/*.parquet` (DuckDB) reads that table alone, with `host`,
//!   `date` and `hour` from the directory names, and no option.
//! * **Partitions are typed by their look**: `date=2026-01-01` reads as a
//!   date and `hour=7` (0-23, no leading zero) as an integer in DuckDB,
//!   polars and Spark (an `hour=2026-01-01T07` could only ever be a string).
//! * **Schemas** are the `--out` tables' (same columns, same types), plus one
//!   string column `run` at the end.
//! * **Runs**: `run` is `<start>-<hash>`: the run's first record time to the
//!   second (`YYYYMMDDTHHMMSSZ`) and 12 hex digits of a hash of what
//!   identifies the run ([`DatasetOptions::identity`]: the captures, the
//!   options that change the tables) with the host and the exact start. Two
//!   captures that start at the same instant (synthetic samples do) or two
//!   runs starting within one timeline bin get different runs, hence
//!   different file names; the same capture analysed again with the same
//!   options gets the same names and replaces its earlier files (and those
//!   of its earlier files it did not write again are removed at the end).
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
//!   file is written into `DIR/.partial/` and renamed into its table when
//!   complete, so no reader ever sees half a file, whatever glob it uses.
//! * A table with no rows in a run still gets one (empty) file in the run's
//!   first hour, so a glob over it always finds a schema.
//! * **Summaries**: the run's `summary.json` plus `dataset` (host, run, the
//!   files written), on one line (JSON Lines, which Spark, DuckDB, polars
//!   and pyarrow read without options), under their own root.
use std::collections::HashSet;
use std::hash::Hasher as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use rocescope_common::PacketRecord;

use super::analysis::{
    EventColumns, FlowColumns, HopColumns, Named, NicColumns, PfcColumns, TableWriter,
    TimelineColumns, transport_tables,
};
use super::findings::FindingColumns;
use super::iface_name;
use super::packets::{PacketColumns, PacketRow};
use super::telemetry::{Joined, TelemetryColumns};
use super::{Columns, Encoding, ParquetTable, summary_json, write_text_at};
use crate::analyze::{self, Analysis, Verdict};
use crate::output::RunFacts;
use crate::render::fmt_utc;
use crate::{Error, Result};

pub const HOUR_NS: u64 = 3_600_000_000_000;
/// Hours a table keeps open at once (rows near a boundary arrive late).
const MAX_OPEN_HOURS: usize = 2;
/// Where files are written until complete, relative to the dataset.
pub const PARTIAL_DIR: &str = ".partial";
/// The root of the run summaries, relative to the dataset.
pub const SUMMARIES_DIR: &str = "summaries";
/// Bytes of each capture's beginning that go into its identity.
const IDENTITY_PREFIX: u64 = 1 << 20;

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
    /// What identifies the run besides its start: its input and the
    /// options that change the tables ([`capture_identity`], or the live
    /// tap's interface and options). Hashed into the run id.
    pub identity: String,
    /// The streamed tables left out (`live --tables`): a long run's
    /// `packets` holds a row per frame.
    pub leave_out: Vec<StreamedTable>,
    /// Writes the live tap's `findings` table (an empty one if nothing was
    /// found); a capture's analysis has none.
    pub findings: bool,
}

/// The tables a dataset streams as the run goes (`live --tables`); the
/// others (pfc, hops, nics, telemetry, the summary) are written at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StreamedTable {
    Packets,
    Events,
    Timeline,
    Flows,
    Findings,
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
            identity: String::new(),
            leave_out: Vec::new(),
            findings: false,
        })
    }
}

/// The identity of a run over capture files: each file's name, size and a
/// hash of its first MiB (the same capture copied elsewhere keeps it, two
/// captures that merely start at the same instant do not share it), then
/// `options` (the analysis options, as text). A file that cannot be read
/// counts by its path (reading it fails the run later, with the reason), and
/// so does anything but a regular file: the beginning of a pipe read here
/// would be missing from the analysis.
pub fn capture_identity(captures: &[PathBuf], options: &str) -> String {
    let mut identity = String::new();
    for path in captures {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        // Not even opened unless regular: opening a FIFO waits for a writer.
        let regular = std::fs::metadata(path).is_ok_and(|m| m.is_file());
        let head = regular.then(|| {
            std::fs::File::open(path).and_then(|f| {
                let len = f.metadata()?.len();
                let mut prefix = Vec::new();
                f.take(IDENTITY_PREFIX).read_to_end(&mut prefix)?;
                Ok((len, hash(&prefix)))
            })
        });
        match head {
            Some(Ok((len, h))) => identity.push_str(&format!("{name}\0{len}\0{h:016x}\n")),
            _ => identity.push_str(&format!("{}\n", path.display())),
        }
    }
    identity.push_str(options);
    identity
}

fn hash(bytes: &[u8]) -> u64 {
    let mut h = twox_hash::XxHash64::with_seed(0);
    h.write(bytes);
    h.finish()
}

/// A run's id: its start to the second and 12 hex digits of the hash of
/// its identity, host and exact start.
pub fn run_id(identity: &str, host: &str, start_ns: u64) -> String {
    let h = hash(format!("{identity}\0{host}\0{start_ns}").as_bytes());
    let stamp = file_stamp(start_ns);
    format!("{}Z-{:012x}", &stamp[..15], h >> 16)
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

/// The `date=…/hour=…` partition of a time: `date=YYYY-MM-DD/hour=H` (UTC,
/// the hour 0-23 without a leading zero: DuckDB reads `07` as a string,
/// `7` as an integer).
pub fn hour_partition(ns: u64) -> String {
    let iso = fmt_utc(ns);
    let hour = (ns / HOUR_NS) % 24;
    format!("date={}/hour={hour}", &iso[..10])
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
    identity: String,
    rotate_ns: u64,
    rotate_bytes: u64,
    /// The run's start and id, once there is a first row.
    run: Option<(u64, String)>,
    /// Partition directories this run wrote into.
    dirs: HashSet<PathBuf>,
}

/// The partition of a row of `table` at `ts_ns` from `host`, relative to
/// the dataset: `TABLE/host=…/date=…/hour=…`.
pub fn partition(table: &str, host: &str, ts_ns: u64) -> PathBuf {
    Path::new(table)
        .join(format!("host={host}"))
        .join(hour_partition(ts_ns))
}

/// Makes the directory of `relative` (a [`partition`]) in the dataset `dir`,
/// and `dir/.partial/`; returns the final and the partial path of
/// `relative/name` (the partial one flat:
/// `TABLE.host=….date=….hour=….NAME.partial`, outside every table's root).
pub fn prepare(dir: &Path, relative: &Path, name: &str) -> Result<(PathBuf, PathBuf)> {
    let final_dir = dir.join(relative);
    let partial_dir = dir.join(PARTIAL_DIR);
    for d in [&final_dir, &partial_dir] {
        std::fs::create_dir_all(d).map_err(|e| Error::WriteIo {
            path: d.clone(),
            detail: format!("cannot create the partition directory: {e}"),
            source: e,
        })?;
    }
    let flat: Vec<String> = relative
        .join(name)
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let partial = partial_dir.join(format!("{}.partial", flat.join(".")));
    Ok((final_dir.join(name), partial))
}

/// The name of a file of run `run` whose first row is at `start_ns`.
pub fn part_name(run: &str, start_ns: u64) -> String {
    format!("part-{run}-{}.parquet", file_stamp(start_ns))
}

impl Ctx {
    /// `ROOT/host=…/date=…/hour=…`, relative to the dataset.
    fn partition(&self, root: &str, hour: u64) -> PathBuf {
        partition(root, &self.host, hour * HOUR_NS)
    }

    fn run_id(&mut self, ts_ns: u64) -> &str {
        let (identity, host) = (&self.identity, &self.host);
        &self
            .run
            .get_or_insert_with(|| (ts_ns, run_id(identity, host, ts_ns)))
            .1
    }

    /// [`prepare`], remembering the directory (for [`remove_replaced`]).
    fn prepare(&mut self, relative: &Path, name: &str) -> Result<(PathBuf, PathBuf)> {
        self.dirs.insert(self.dir.join(relative));
        prepare(&self.dir, relative, name)
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

/// A transport's table as the dataset's partitions: the files it wrote go
/// to `files`.
struct Partitions<'c> {
    ctx: &'c mut Ctx,
    files: &'c mut Vec<PathBuf>,
}

impl TableWriter for Partitions<'_> {
    fn table<'a, C: Columns>(
        &mut self,
        name: &'static str,
        rows: impl Iterator<Item = (u64, C::Row<'a>)>,
    ) -> Result<()> {
        let mut table = Partitioned::<C>::new(name);
        for (ts_ns, row) in rows {
            table.push(self.ctx, ts_ns, &row)?;
        }
        self.files.extend(table.close(self.ctx)?);
        Ok(())
    }
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
        let relative = ctx.partition(self.table, hour);
        let first = part_name(&run, start_ns);
        let mut name = first.clone();
        let mut n = 2;
        while !self.names.insert(relative.join(&name)) {
            name = first.replace(".parquet", &format!("-{n}.parquet"));
            n += 1;
        }
        let (path, partial) = ctx.prepare(&relative, &name)?;
        Ok(ParquetTable::create_at(path, partial, Encoding::default()).with_constant("run", &run))
    }

    /// Completes the open files; the next row starts a new one.
    fn reopen(&mut self) -> Result<()> {
        for s in std::mem::take(&mut self.open) {
            self.files.push(s.file.close()?);
        }
        Ok(())
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
/// and the live tap use it through [`crate::output::Output`]; packets,
/// events and timeline rows stream into rotating files as they come,
/// flows and pause intervals are written when the run ends.
pub struct DatasetWriter {
    ctx: Ctx,
    ifaces: Vec<String>,
    /// The run's capture files, by [`PacketRecord::capture`].
    files: Vec<String>,
    packets: Partitioned<PacketColumns>,
    events: Partitioned<EventColumns>,
    timeline: Partitioned<TimelineColumns>,
    /// Flows' rows: those that retired as they did, the rest at the end.
    flows: Partitioned<FlowColumns>,
    /// Switch telemetry hops, as they were joined to their flows.
    telemetry: Partitioned<TelemetryColumns>,
    /// The live tap's findings, when it writes them.
    findings: Option<Partitioned<FindingColumns>>,
    leave_out: Vec<StreamedTable>,
    /// The first error of a sink call (the Sink trait cannot return one).
    failed: Option<Error>,
    /// Event and timeline rows that came before the run's first packet
    /// row. The run is named after its first record (docs/tables.md,
    /// "Runs"), whichever table's row comes first: with threads the
    /// pipeline hands over a batch's timeline rows (bins start before their
    /// first packet) before its packets. At most [`EARLY_MAX`]; then the
    /// earliest of them names the run (the live tap's summary mode sends
    /// rows without packets).
    early: Vec<Early>,
}

/// Rows held until the run is named ([`DatasetWriter::early`]).
const EARLY_MAX: usize = 4096;

enum Early {
    Event(analyze::Event),
    Timeline(analyze::TimelineRow),
    Flow(Box<analyze::FlowRow>),
    Telemetry(Box<crate::telemetry::TelemetryRow>),
}

impl Early {
    fn ts_ns(&self) -> u64 {
        match self {
            Early::Event(e) => e.ts_ns,
            Early::Timeline(t) => t.bin_start_ns,
            Early::Flow(f) => f.first_ts_ns,
            Early::Telemetry(t) => t.ts_ns,
        }
    }
}

impl DatasetWriter {
    pub fn create(opts: &DatasetOptions) -> Result<Self> {
        check_host(&opts.host)?;
        std::fs::create_dir_all(&opts.dir).map_err(|e| Error::WriteIo {
            path: opts.dir.clone(),
            detail: format!("cannot create the dataset directory: {e}"),
            source: e,
        })?;
        Ok(Self {
            ctx: Ctx {
                dir: opts.dir.clone(),
                host: opts.host.clone(),
                identity: opts.identity.clone(),
                rotate_ns: opts.rotate_ns,
                rotate_bytes: opts.rotate_bytes,
                run: None,
                dirs: HashSet::new(),
            },
            ifaces: Vec::new(),
            files: Vec::new(),
            packets: Partitioned::new("packets"),
            events: Partitioned::new("events"),
            timeline: Partitioned::new("timeline"),
            flows: Partitioned::new("flows"),
            telemetry: Partitioned::new("telemetry"),
            findings: (opts.findings && !opts.leave_out.contains(&StreamedTable::Findings))
                .then(|| Partitioned::new("findings")),
            leave_out: opts.leave_out.clone(),
            failed: None,
            early: Vec::new(),
        })
    }

    /// Names the run after `first_record` (else the earliest row held) and
    /// writes the rows held until then.
    fn start_run(&mut self, first_record: Option<u64>) {
        let earliest = self.early.iter().map(Early::ts_ns).min();
        let Some(start) = first_record.or(earliest) else {
            return;
        };
        self.ctx.run_id(start);
        for row in std::mem::take(&mut self.early) {
            let r = match &row {
                Early::Event(e) => self.push_event(e),
                Early::Timeline(t) => self.timeline.push(&mut self.ctx, t.bin_start_ns, t),
                Early::Flow(f) => self.push_flow(f),
                Early::Telemetry(t) => self.push_telemetry(t),
            };
            self.keep_first_error(r);
        }
    }

    fn push_event(&mut self, e: &analyze::Event) -> Result<()> {
        if self.leave_out.contains(&StreamedTable::Events) {
            return Ok(());
        }
        let row = Named {
            row: e,
            ifaces: &self.ifaces,
        };
        self.events.push(&mut self.ctx, e.ts_ns, &row)
    }

    fn push_telemetry(&mut self, row: &crate::telemetry::TelemetryRow) -> Result<()> {
        let joined = Joined {
            row,
            iface: iface_name(&self.ifaces, row.iface),
            file: self.files.get(usize::from(row.capture)).map(String::as_str),
        };
        self.telemetry.push(&mut self.ctx, row.ts_ns, &joined)
    }

    fn push_flow(&mut self, row: &analyze::FlowRow) -> Result<()> {
        if self.leave_out.contains(&StreamedTable::Flows) {
            return Ok(());
        }
        let named = Named {
            row,
            ifaces: &self.ifaces,
        };
        self.flows.push(&mut self.ctx, row.first_ts_ns, &named)
    }

    /// Holds `row` while the run has no name yet; false once it has.
    fn held(&mut self, row: impl FnOnce() -> Early) -> bool {
        if self.ctx.run.is_some() {
            return false;
        }
        self.early.push(row());
        if self.early.len() >= EARLY_MAX {
            self.start_run(None);
        }
        true
    }

    /// Writes flows, pause intervals and the run's summary, completes every
    /// file and returns the files written (summary last).
    pub fn finish(mut self, analysis: &Analysis, facts: &RunFacts) -> Result<Vec<PathBuf>> {
        if self.ctx.run.is_none() {
            self.start_run(None);
        }
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let ifaces = &self.ifaces;
        let ctx = &mut self.ctx;
        let mut flows = self.flows;
        if !self.leave_out.contains(&StreamedTable::Flows) {
            for row in analysis.unwritten_flows() {
                flows.push(ctx, row.first_ts_ns, &Named { row, ifaces })?;
            }
        }
        let mut pfc = Partitioned::<PfcColumns>::new("pfc");
        for row in &analysis.pfc {
            pfc.push(ctx, row.start_ns, &Named { row, ifaces })?;
        }
        let mut hops = Partitioned::<HopColumns>::new("hops");
        for row in &analysis.hops {
            hops.push(ctx, row.first_ts_ns, &Named { row, ifaces })?;
        }
        // A NIC's row has no time of its own: the run's start partitions it.
        let mut nics = Partitioned::<NicColumns>::new("nics");
        let run_start = ctx.run.as_ref().map_or(0, |r| r.0);
        for row in &analysis.nics {
            nics.push(ctx, run_start, row)?;
        }
        // A table left out gets no file, not even an empty one.
        let left_out = |t| self.leave_out.contains(&t);
        let mut files = Vec::new();
        if !left_out(StreamedTable::Packets) {
            files.extend(self.packets.close(ctx)?);
        }
        if !left_out(StreamedTable::Flows) {
            files.extend(flows.close(ctx)?);
        }
        files.extend(self.telemetry.close(ctx)?);
        files.extend(hops.close(ctx)?);
        files.extend(nics.close(ctx)?);
        let mut tables = Partitions {
            ctx: &mut *ctx,
            files: &mut files,
        };
        transport_tables(&mut tables, analysis, ifaces)?;
        if !left_out(StreamedTable::Events) {
            files.extend(self.events.close(ctx)?);
        }
        files.extend(pfc.close(ctx)?);
        if !left_out(StreamedTable::Timeline) {
            files.extend(self.timeline.close(ctx)?);
        }
        if let Some(findings) = self.findings {
            files.extend(findings.close(ctx)?);
        }

        let Some((start, run)) = ctx.run.clone() else {
            // No record at all: nothing to partition by.
            return Ok(files);
        };
        remove_replaced(ctx, &run, &files)?;
        let relative = ctx.partition(SUMMARIES_DIR, start / HOUR_NS);
        let (path, partial) = ctx.prepare(&relative, &format!("summary-{run}.json"))?;
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
        // One line: JSON Lines, which engines read without a multi-line option.
        let mut line = serde_json::to_string(&summary).map_err(|e| Error::Write {
            path: path.clone(),
            detail: e.to_string(),
        })?;
        line.push('\n');
        write_text_at(&path, &partial, &line)?;
        files.push(path);
        Ok(files)
    }

    fn keep_first_error(&mut self, r: Result<()>) {
        if let Err(e) = r {
            self.failed.get_or_insert(e);
        }
    }
}

/// Removes the files an earlier run with the same id (the same capture and
/// options, analysed again) wrote into this run's partitions and this run
/// did not write again (it rotated differently): the run's rows are then
/// in the dataset once.
fn remove_replaced(ctx: &Ctx, run: &str, written: &[PathBuf]) -> Result<()> {
    let prefix = format!("part-{run}-");
    let written: HashSet<&PathBuf> = written.iter().collect();
    for dir in &ctx.dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let ours = entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".parquet"));
            if ours && !written.contains(&path) {
                std::fs::remove_file(&path).map_err(|e| Error::WriteIo {
                    path: path.clone(),
                    detail: format!("cannot remove an earlier copy of this run's table: {e}"),
                    source: e,
                })?;
            }
        }
    }
    Ok(())
}

impl analyze::Sink for DatasetWriter {
    fn event(&mut self, e: &analyze::Event) {
        if self.held(|| Early::Event(e.clone())) {
            return;
        }
        let r = self.push_event(e);
        self.keep_first_error(r);
    }

    fn timeline(&mut self, row: &analyze::TimelineRow) {
        if self.leave_out.contains(&StreamedTable::Timeline) {
            return;
        }
        if self.held(|| Early::Timeline(row.clone())) {
            return;
        }
        let r = self.timeline.push(&mut self.ctx, row.bin_start_ns, row);
        self.keep_first_error(r);
    }

    /// Through the same hourly files as the rows written at the end: a
    /// retired flow's row goes to the hour it began in.
    fn flow(&mut self, row: &analyze::FlowRow) {
        if self.held(|| Early::Flow(Box::new(row.clone()))) {
            return;
        }
        let r = self.push_flow(row);
        self.keep_first_error(r);
    }

    /// Into the hour of the frame that carried it, as it was joined.
    fn telemetry(&mut self, row: &crate::telemetry::TelemetryRow) {
        if self.held(|| Early::Telemetry(Box::new(row.clone()))) {
            return;
        }
        let r = self.push_telemetry(row);
        self.keep_first_error(r);
    }
}

impl crate::output::Output for DatasetWriter {
    fn name_iface(&mut self, iface: u16, name: &str) {
        let i = usize::from(iface);
        if self.ifaces.len() <= i {
            self.ifaces.resize(i + 1, String::new());
        }
        self.ifaces[i] = name.to_string();
    }

    fn name_captures(&mut self, files: &[String]) {
        self.files = files.to_vec();
    }

    fn packet(&mut self, rec: &PacketRecord, verdict: Verdict) -> Result<()> {
        if self.ctx.run.is_none() {
            self.start_run(Some(rec.ts_ns));
        }
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if self.leave_out.contains(&StreamedTable::Packets) {
            return Ok(());
        }
        let row = PacketRow::new(rec, &self.ifaces, &self.files, verdict);
        self.packets.push(&mut self.ctx, rec.ts_ns, &row)
    }

    /// The streamed tables' open files are completed (renamed into their
    /// tables); flows, pause intervals and the summary come at the end.
    fn reopen(&mut self) -> Result<()> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        self.packets.reopen()?;
        self.events.reopen()?;
        self.flows.reopen()?;
        self.telemetry.reopen()?;
        if let Some(f) = &mut self.findings {
            f.reopen()?;
        }
        self.timeline.reopen()
    }

    fn findings(&mut self, rows: &[crate::output::FindingRow]) -> Result<()> {
        let Some(first) = rows.first() else {
            return Ok(());
        };
        if self.findings.is_none() {
            return Ok(());
        }
        if self.ctx.run.is_none() {
            self.start_run(Some(first.ts_ns));
        }
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if let Some(table) = &mut self.findings {
            for r in rows {
                table.push(&mut self.ctx, r.ts_ns, r)?;
            }
        }
        Ok(())
    }

    fn close(self: Box<Self>, analysis: &Analysis, facts: &RunFacts) -> Result<()> {
        self.finish(analysis, facts).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::TimelineRow;
    use crate::output::Output;

    #[test]
    fn names_and_partitions() {
        // 2026-01-01T00:00:00.000025292Z
        let ns = 1_767_225_600_000_025_292;
        assert_eq!(hour_partition(ns), "date=2026-01-01/hour=0");
        assert_eq!(file_stamp(ns), "20260101T000000.000025292Z");
        assert_eq!(hour_partition(ns + 25 * HOUR_NS), "date=2026-01-02/hour=1");
        assert_eq!(hour_partition(ns + 47 * HOUR_NS), "date=2026-01-02/hour=23");
        assert!(check_host("tap-leaf1.dc_2").is_ok());
        for bad in ["", "a/b", "x=y", ".hidden", "_x", "a b"] {
            assert!(check_host(bad).is_err(), "{bad:?}");
        }
        assert!(check_host(&local_host_name()).is_ok());
        // The start to the second, then a hash of identity, host and start.
        let id = run_id("a.pcap", "tap1", ns);
        assert!(id.starts_with("20260101T000000Z-"), "{id}");
        assert_eq!(id.len(), "20260101T000000Z-".len() + 12, "{id}");
        assert_eq!(id, run_id("a.pcap", "tap1", ns), "names depend on the data");
        for other in [
            run_id("b.pcap", "tap1", ns),
            run_id("a.pcap", "tap2", ns),
            run_id("a.pcap", "tap1", ns + 1),
        ] {
            assert_ne!(id, other);
        }
    }

    /// The run id hashes an explicit list of the options that change the
    /// outputs (docs/tables.md, "Runs"): pinned here, so that the same
    /// inputs keep their run id across versions; every one of them changes
    /// it, `--match-window` and `--clock-offset` included.
    #[test]
    fn the_run_id_hashes_an_explicit_list_of_options() {
        use crate::analyze::Config;
        let base = Config::default();
        assert_eq!(
            base.identity(),
            "link_speed=100000000000\nstorm=200000000\nbin=100000\ndup_window=10000\nmatch_window=2000000\n"
        );
        let id = |c: &Config| run_id(&c.identity(), "tap1", 1_767_225_600_000_000_000);
        assert_eq!(id(&base), id(&Config::default()));
        let mut variants = Vec::new();
        let mut vary = |change: &dyn Fn(&mut Config)| {
            let mut c = Config::default();
            change(&mut c);
            variants.push(id(&c));
        };
        vary(&|c| c.match_window_ns = 1_000_000);
        vary(&|c| c.clock_offsets = vec![("node1".into(), 48_000)]);
        vary(&|c| c.clock_offsets = vec![("node1".into(), -48_000)]);
        vary(&|c| c.link_speed_bps = 400_000_000_000);
        vary(&|c| c.tap_link_speed_bps = vec![("eth2".into(), 400_000_000_000)]);
        vary(&|c| c.storm_ns = 100_000_000);
        vary(&|c| c.bin_ns = 1_000_000);
        vary(&|c| c.dscp_to_priority = Some([3; 64]));
        vary(&|c| c.dup_window_ns = 0);
        vary(&|c| {
            c.ecmp_groups = vec!["a,b".parse().unwrap()];
        });
        let distinct: std::collections::HashSet<&String> = variants.iter().collect();
        assert_eq!(distinct.len(), variants.len(), "{variants:?}");
        assert!(!distinct.contains(&id(&base)));
    }

    /// Two captures that differ only after their first bytes, or in name,
    /// have different identities; a copy of one elsewhere has the same.
    #[test]
    fn capture_identity_follows_the_files_not_their_place() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, bytes: &[u8]| {
            let p = dir.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            p
        };
        let a = write("a.pcap", b"same start, then one");
        let b = write("b.pcap", b"same start, then two");
        std::fs::create_dir(dir.path().join("copy")).unwrap();
        let a2 = write("copy/a.pcap", b"same start, then one");
        let ids: Vec<String> = [&a, &b, &a2]
            .iter()
            .map(|p| capture_identity(&[(*p).clone()], "opts"))
            .collect();
        assert_ne!(ids[0], ids[1]);
        assert_eq!(ids[0], ids[2]);
        assert_ne!(
            ids[0],
            capture_identity(std::slice::from_ref(&a), "other opts")
        );
        // Unreadable: named by its path (the run then fails on reading it).
        let missing = dir.path().join("missing.pcap");
        assert!(capture_identity(&[missing], "").contains("missing.pcap"));
        // A pipe is named by its path, not opened (that would wait for a
        // writer) nor read (its first MiB would be lost to the analysis).
        use std::os::unix::ffi::OsStrExt;
        let fifo = dir.path().join("pipe.pcap");
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(capture_identity(&[fifo], "").ends_with("pipe.pcap\n"));
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
        let mut analysis = a.finish(&mut sink);
        crate::render::tell(&mut analysis);
        analysis
    }

    /// A run of `rows` timeline rows, `minute` apart from `t0`, into `dir`.
    fn timeline_run(opts: &DatasetOptions, t0: u64, rows: u32) -> Vec<PathBuf> {
        use crate::analyze::Sink;
        let mut w = DatasetWriter::create(opts).unwrap();
        w.name_iface(0, "tap");
        for m in 0..rows {
            w.timeline(&row(m, t0 + u64::from(m) * MINUTE));
        }
        w.finish(&empty_analysis(), &RunFacts::default()).unwrap()
    }

    const MINUTE: u64 = 60 * 1_000_000_000;
    const T0: u64 = 1_767_225_600_000_000_000; // 2026-01-01T00:00:00Z

    fn rows_of(p: &Path) -> usize {
        use parquet::file::reader::FileReader;
        let f = std::fs::File::open(p).unwrap();
        parquet::file::reader::SerializedFileReader::new(f)
            .unwrap()
            .metadata()
            .file_metadata()
            .num_rows() as usize
    }

    fn table_rows(dir: &Path, table: &str) -> usize {
        walk(&dir.join(table))
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
            .map(|p| rows_of(p))
            .sum()
    }

    #[test]
    fn rotates_at_hours_by_time_and_keeps_every_row() {
        use crate::analyze::Sink;
        let dir = tempfile::tempdir().unwrap();
        let mut opts = DatasetOptions::new(dir.path(), "tap1").unwrap();
        opts.rotate_ns = 10 * MINUTE;
        let mut w = DatasetWriter::create(&opts).unwrap();
        w.name_iface(0, "tap");
        let t0 = T0 + 50 * MINUTE; // 00:50
        // 00:50 .. 01:29, one row a minute, with a late row for 00:59 at 01:01.
        for m in 0..40 {
            w.timeline(&row(m, t0 + u64::from(m) * MINUTE));
            if m == 11 {
                w.timeline(&row(999, t0 + 9 * MINUTE));
            }
        }
        let files = w.finish(&empty_analysis(), &RunFacts::default()).unwrap();
        let run = run_id("", "tap1", t0);
        let rel = |p: &PathBuf| p.strip_prefix(dir.path()).unwrap().display().to_string();
        let names: Vec<String> = files
            .iter()
            .map(rel)
            .filter(|f| f.starts_with("timeline/"))
            .collect();
        // 00:50-00:59 in one file; 01:00-01:09, 01:10-01:19, 01:20-01:29.
        for (hour, start) in [("0", "005000"), ("1", "010000"), ("1", "012000")] {
            let want = format!(
                "timeline/host=tap1/date=2026-01-01/hour={hour}/part-{run}-20260101T{start}.000000000Z.parquet"
            );
            assert!(names.contains(&want), "{want} not in {names:?}");
        }
        assert_eq!(names.len(), 4, "{names:?}");
        // Every row is somewhere, and nothing half-written is left behind.
        assert_eq!(table_rows(dir.path(), "timeline"), 41);
        assert!(walk(&dir.path().join(PARTIAL_DIR)).is_empty());
        // Tables without rows still have a file; only Parquet in the table roots.
        for table in [
            "packets",
            "flows",
            "events",
            "pfc",
            "hops",
            "nics",
            "telemetry",
            "uet_paths",
        ] {
            let prefix = format!("{table}/host=tap1/date=2026-01-01/hour=0/part-{run}-");
            assert!(files.iter().any(|f| rel(f).starts_with(&prefix)), "{table}");
            for f in walk(&dir.path().join(table)) {
                assert_eq!(f.extension().unwrap(), "parquet", "{}", f.display());
            }
        }
        // The summary: its own root, one line of JSON naming the run.
        let summary = files.last().unwrap();
        assert_eq!(
            rel(summary),
            format!("summaries/host=tap1/date=2026-01-01/hour=0/summary-{run}.json")
        );
        let text = std::fs::read_to_string(summary).unwrap();
        assert_eq!(text.lines().count(), 1);
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(json["dataset"]["run"], run.as_str());
        assert_eq!(json["dataset"]["files"].as_array().unwrap().len(), 12);
    }

    /// Captures that start at the same instant on one host (the synthetic
    /// samples do) keep their files apart; the same capture analysed again
    /// replaces its files, however it rotated before.
    #[test]
    fn runs_with_one_start_add_up_and_a_rerun_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = DatasetOptions::new(dir.path(), "tap1").unwrap();
        a.identity = "ghost-drop.pcapng".into();
        let mut b = a.clone();
        b.identity = "incast.pcapng".into();
        timeline_run(&a, T0, 30);
        timeline_run(&b, T0, 20);
        assert_eq!(table_rows(dir.path(), "timeline"), 50);
        // Again, rotating every 5 minutes: 6 files instead of 1, rows once.
        a.rotate_ns = 5 * MINUTE;
        let files = timeline_run(&a, T0, 30);
        assert_eq!(
            files
                .iter()
                .filter(|f| f.starts_with(dir.path().join("timeline")))
                .count(),
            6
        );
        assert_eq!(table_rows(dir.path(), "timeline"), 50);
        assert_eq!(walk(&dir.path().join(SUMMARIES_DIR)).len(), 2);
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let Ok(entries) = std::fs::read_dir(dir) else {
            return out;
        };
        for e in entries {
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
