//! One Parquet file being written ([`ParquetTable`]): batches from a
//! table's [`Columns`], encoded inline or on a thread of its own, written
//! under a partial name and renamed when complete (the parent module says why).
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::ArrowWriterOptions;
use parquet::basic::{Compression, Encoding as PageEncoding};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

use super::{Columns, partial_name};
use crate::{Error, Result};

/// Where a table's Parquet file is encoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Encoding {
    /// Encode (and write) on a thread of its own, fed batches through a
    /// bounded channel: the caller only fills the Arrow builders.
    pub thread: bool,
}

/// How a table's columns are encoded: which get dictionary pages, min/max
/// statistics and delta encoding, and whether pages are compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnEncoding {
    /// `None`: every column (arrow-rs's default); else only these.
    pub dictionary: Option<&'static [&'static str]>,
    /// `None`: every column, per page (arrow-rs's default); else only
    /// these, per row group.
    pub statistics: Option<&'static [&'static str]>,
    /// Integer columns that grow by small steps (frame numbers,
    /// timestamps): `DELTA_BINARY_PACKED`, a few bits a row.
    pub delta: &'static [&'static str],
    /// Snappy on every page (else none).
    pub snappy: bool,
    /// The Arrow schema in the file's metadata (arrow-rs's default). Off
    /// for a table whose string columns are handed over as dictionary
    /// arrays only to save building strings: readers then take the types
    /// from the Parquet schema and see plain strings.
    pub arrow_schema: bool,
}

impl ColumnEncoding {
    pub const DEFAULT: Self = Self {
        dictionary: None,
        statistics: None,
        delta: &[],
        snappy: true,
        arrow_schema: true,
    };
}

/// Batches in flight to an encoder thread.
const ENCODER_DEPTH: usize = 2;

/// Where finished record batches go.
enum Encoder {
    /// Not started: the file is created with the first batch.
    None,
    Inline(Box<ArrowWriter<File>>),
    Thread {
        tx: SyncSender<RecordBatch>,
        handle: JoinHandle<std::result::Result<(), String>>,
    },
}

/// One Parquet file being written, streamed in batches. Dropped before
/// [`Self::close`] completed (an error, a panic), it removes its partial file.
pub struct ParquetTable<C: Columns> {
    path: PathBuf,
    partial: PathBuf,
    columns: C,
    encoding: Encoding,
    encoder: Encoder,
    rows: u64,
    /// Columns appended after `C`'s with one value in every row (a dataset's `run`).
    constants: Vec<(&'static str, String)>,
    /// Columns of `C` left out of the file (a dataset's `host`, which the
    /// partition directory names: engines refuse a file column of its name).
    omitted: Vec<&'static str>,
}

impl<C: Columns> ParquetTable<C> {
    /// Starts `dir/name` (written as `dir/.name.partial` until [`Self::close`]).
    pub fn create(dir: &Path, name: &str) -> Result<Self> {
        Self::create_with(dir, name, Encoding::default())
    }

    pub fn create_with(dir: &Path, name: &str, encoding: Encoding) -> Result<Self> {
        Ok(Self::create_at(
            dir.join(name),
            dir.join(partial_name(name)),
            encoding,
        ))
    }

    /// Starts `path`, written as `partial` until [`Self::close`] renames it
    /// (both on one file system; `partial`'s directory must exist).
    pub fn create_at(path: PathBuf, partial: PathBuf, encoding: Encoding) -> Self {
        Self {
            path,
            partial,
            columns: C::default(),
            encoding,
            encoder: Encoder::None,
            rows: 0,
            constants: Vec::new(),
            omitted: Vec::new(),
        }
    }

    /// Appends a string column holding `value` in every row, after `C`'s columns.
    pub fn with_constant(mut self, name: &'static str, value: &str) -> Self {
        self.constants.push((name, value.to_string()));
        self
    }

    /// Leaves `C`'s column `name` out of the file.
    pub fn without(mut self, name: &'static str) -> Self {
        self.omitted.push(name);
        self
    }

    /// The file's size so far: written row groups, the one being encoded,
    /// and (roughly) the rows still in builders. For rotation by size.
    pub fn approx_bytes(&self) -> u64 {
        // Builders hold rows uncompressed; count them at a modest 16 B/row.
        let buffered = self.columns.len() as u64 * 16;
        match &self.encoder {
            Encoder::Inline(w) => (w.bytes_written() + w.in_progress_size()) as u64 + buffered,
            // Batches handed to an encoder thread: estimated the same way.
            Encoder::Thread { .. } | Encoder::None => self.rows * 16,
        }
    }

    #[inline]
    pub fn push(&mut self, row: &C::Row<'_>) -> Result<()> {
        self.columns.append(row);
        self.rows += 1;
        if self.columns.len() >= C::BATCH_ROWS {
            self.flush_batch()?;
        }
        Ok(())
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    fn props(&self) -> WriterProperties {
        let encoding = C::ENCODING;
        let compression = if encoding.snappy {
            Compression::SNAPPY
        } else {
            Compression::UNCOMPRESSED
        };
        let mut props = WriterProperties::builder()
            .set_compression(compression)
            .set_max_row_group_row_count(Some(C::ROW_GROUP_ROWS));
        if let Some(columns) = encoding.dictionary {
            props = props.set_dictionary_enabled(false);
            for c in columns {
                props = props.set_column_dictionary_enabled(ColumnPath::from(*c), true);
            }
        }
        for c in encoding.delta {
            props = props
                .set_column_dictionary_enabled(ColumnPath::from(*c), false)
                .set_column_encoding(ColumnPath::from(*c), PageEncoding::DELTA_BINARY_PACKED);
        }
        if let Some(columns) = encoding.statistics {
            props = props.set_statistics_enabled(EnabledStatistics::None);
            for c in columns {
                props = props
                    .set_column_statistics_enabled(ColumnPath::from(*c), EnabledStatistics::Chunk);
            }
        }
        props.build()
    }

    /// Writes rows `build` makes into arrays from the columns' state (after
    /// the rows buffered so far): a table that can build a whole batch at
    /// once skips the row-by-row buffer.
    pub fn push_arrays(
        &mut self,
        build: impl FnOnce(&mut C) -> Vec<(&'static str, ArrayRef)>,
    ) -> Result<()> {
        if !self.columns.is_empty() {
            self.flush_batch()?;
        }
        let arrays = build(&mut self.columns);
        self.rows += arrays.first().map_or(0, |(_, a)| a.len() as u64);
        self.write_arrays(arrays)
    }

    fn flush_batch(&mut self) -> Result<()> {
        let arrays = self.columns.finish();
        self.write_arrays(arrays)
    }

    fn write_arrays(&mut self, mut arrays: Vec<(&'static str, ArrayRef)>) -> Result<()> {
        let rows = arrays.first().map_or(0, |(_, a)| a.len());
        arrays.retain(|(name, _)| !self.omitted.contains(name));
        for (name, value) in &self.constants {
            let column: ArrayRef = Arc::new(StringArray::from(vec![value.as_str(); rows]));
            arrays.push((*name, column));
        }
        let schema = Arc::new(Schema::new(
            arrays
                .iter()
                .map(|(name, a)| Field::new(*name, a.data_type().clone(), true))
                .collect::<Vec<_>>(),
        ));
        let batch =
            RecordBatch::try_new(schema.clone(), arrays.into_iter().map(|(_, a)| a).collect())
                .map_err(|e| self.write_error(e))?;
        if matches!(self.encoder, Encoder::None) {
            let file = File::create(&self.partial).map_err(|e| self.write_error(e))?;
            let options = ArrowWriterOptions::new()
                .with_properties(self.props())
                .with_skip_arrow_metadata(!C::ENCODING.arrow_schema);
            let writer = ArrowWriter::try_new_with_options(file, schema, options)
                .map_err(|e| self.write_error(e))?;
            self.encoder = if self.encoding.thread {
                let (tx, rx) = sync_channel::<RecordBatch>(ENCODER_DEPTH);
                let handle = std::thread::Builder::new()
                    .name("rocescope-encode".into())
                    .spawn(move || encode_loop(writer, rx))
                    .map_err(|e| self.write_error(e))?;
                Encoder::Thread { tx, handle }
            } else {
                Encoder::Inline(Box::new(writer))
            };
        }
        match &mut self.encoder {
            Encoder::Inline(writer) => writer.write(&batch).map_err(|e| self.write_error(e)),
            Encoder::Thread { tx, .. } => {
                if tx.send(batch).is_ok() {
                    return Ok(());
                }
                // The encoder stopped: its error says why.
                let detail = match std::mem::replace(&mut self.encoder, Encoder::None) {
                    Encoder::Thread { handle, .. } => join_encoder(handle).err(),
                    _ => None,
                };
                Err(self.write_error(detail.unwrap_or_else(|| "the encoder stopped".into())))
            }
            Encoder::None => Ok(()),
        }
    }

    /// Writes what is buffered, completes the file and gives it its name.
    pub fn close(mut self) -> Result<PathBuf> {
        // An empty table still gets a file with its schema.
        if !self.columns.is_empty() || matches!(self.encoder, Encoder::None) {
            self.flush_batch()?;
        }
        match std::mem::replace(&mut self.encoder, Encoder::None) {
            Encoder::Inline(writer) => {
                writer.close().map_err(|e| self.write_error(e))?;
            }
            Encoder::Thread { tx, handle } => {
                drop(tx);
                join_encoder(handle).map_err(|e| self.write_error(e))?;
            }
            Encoder::None => {}
        }
        std::fs::rename(&self.partial, &self.path).map_err(|e| self.write_error(e))?;
        Ok(self.path.clone())
    }

    fn write_error(&self, e: impl std::fmt::Display) -> Error {
        Error::Write {
            path: self.path.clone(),
            detail: format!("{e}; check the output directory's free space and permissions"),
        }
    }
}

/// An encoder thread: batches in until the channel closes, then the file's footer.
fn encode_loop(
    mut writer: ArrowWriter<File>,
    rx: Receiver<RecordBatch>,
) -> std::result::Result<(), String> {
    while let Ok(batch) = rx.recv() {
        writer.write(&batch).map_err(|e| e.to_string())?;
    }
    writer.close().map(|_| ()).map_err(|e| e.to_string())
}

fn join_encoder(
    handle: JoinHandle<std::result::Result<(), String>>,
) -> std::result::Result<(), String> {
    handle
        .join()
        .unwrap_or_else(|_| Err("internal error: the encoder thread panicked".into()))
}

impl<C: Columns> Drop for ParquetTable<C> {
    fn drop(&mut self) {
        // After a successful close the partial is gone already (renamed).
        if let Encoder::Thread { tx, handle } = std::mem::replace(&mut self.encoder, Encoder::None)
        {
            drop(tx);
            let _ = join_encoder(handle);
        }
        let _ = std::fs::remove_file(&self.partial);
    }
}
