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
use std::path::{Path, PathBuf};

use rocescope_common::PacketRecord;

use super::analysis::{
    EventColumns, FlowColumns, HopColumns, Named, NicColumns, PfcColumns, TimelineColumns,
    transport_tables,
};
use super::findings::FindingColumns;
use super::iface_name;
use super::packets::{PacketColumns, PacketRow};
use super::telemetry::{Joined, TelemetryColumns};
use super::{summary_json, write_text_at};
use crate::analyze::{self, Analysis, Verdict};
use crate::output::RunFacts;
use crate::{Error, Result};

mod layout;
mod partitioned;
pub use layout::{
    DatasetOptions, HOUR_NS, PARTIAL_DIR, SUMMARIES_DIR, StreamedTable, capture_identity,
    check_host, file_stamp, hour_partition, local_host_name, part_name, partition, prepare, run_id,
};
use partitioned::{Partitioned, Partitions};

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
mod tests;
