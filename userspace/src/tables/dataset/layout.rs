//! The dataset's layout: its options, run ids, partitions and file names
//! (docs/tables.md, "Dataset layout"); the writer is the parent module.

use std::hash::Hasher as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use crate::render::fmt_utc;
use crate::{Error, Result};

pub const HOUR_NS: u64 = 3_600_000_000_000;
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
