//! One table of the dataset written into its partitions: its open files,
//! at most one per hour (and at most [`MAX_OPEN_HOURS`] hours), rotated by
//! capture time or size, named after the run and their first row.
use std::collections::HashSet;
use std::path::PathBuf;

use super::{Ctx, HOUR_NS, part_name};
use crate::Result;
use crate::tables::analysis::TableWriter;
use crate::tables::{Columns, Encoding, ParquetTable};

/// Hours a table keeps open at once (rows near a boundary arrive late).
const MAX_OPEN_HOURS: usize = 2;

struct Segment<C: Columns> {
    hour: u64,
    start_ns: u64,
    file: ParquetTable<C>,
}

/// One table's open files, at most one per hour.
pub(super) struct Partitioned<C: Columns> {
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
pub(super) struct Partitions<'c> {
    pub(super) ctx: &'c mut Ctx,
    pub(super) files: &'c mut Vec<PathBuf>,
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
    pub(super) fn new(table: &'static str) -> Self {
        Self {
            table,
            open: Vec::new(),
            names: HashSet::new(),
            files: Vec::new(),
            rows: 0,
        }
    }

    pub(super) fn push(&mut self, ctx: &mut Ctx, ts_ns: u64, row: &C::Row<'_>) -> Result<()> {
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
    pub(super) fn reopen(&mut self) -> Result<()> {
        for s in std::mem::take(&mut self.open) {
            self.files.push(s.file.close()?);
        }
        Ok(())
    }

    /// Completes every open file; a table that had no row at all gets an
    /// empty one in the run's first hour.
    pub(super) fn close(mut self, ctx: &mut Ctx) -> Result<Vec<PathBuf>> {
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
