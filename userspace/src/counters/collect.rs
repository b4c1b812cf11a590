//! `rocescope counters collect`: samples a host's counters every interval
//! and writes them as `counters.parquet`.
//!
//! Sources, each optional (a host without an RDMA NIC still has netdev
//! counters): `ethtool -S IF` (the binary; `ETHTOOL_GSTATS` needs no
//! root), `SYSFS/class/net/IF/statistics/*` and
//! `SYSFS/class/infiniband/DEV/ports/N/{counters,hw_counters}/*` (plain
//! files, no root). A source that fails is warned about once and sampled
//! again at the next interval.
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::model::{Endpoint, Snapshot};
use super::parse::{self, Block};
use super::table::{CounterColumns, CounterRow};
use crate::tables::{Encoding, ParquetTable, dataset};
use crate::{Error, Result};

/// What to sample and where to write it.
#[derive(Clone, Debug)]
pub struct Options {
    pub host: String,
    pub iface: String,
    /// RDMA device and port (`mlx5_0`, 1).
    pub rdma: Option<(String, u32)>,
    pub interval: Duration,
    /// Stop after this many snapshots (else at SIGINT/SIGTERM).
    pub count: Option<u64>,
    pub out: Output,
    /// Where sysfs is mounted (`/sys`; a fake tree in tests).
    pub sysfs: PathBuf,
    /// The `ethtool` program (run as `PROG -S IF`); `None` skips it.
    pub ethtool: Option<String>,
}

/// Where the rows go.
#[derive(Clone, Debug)]
pub enum Output {
    /// One file; an existing one is appended to (its rows copied first,
    /// its last values start the deltas).
    File(PathBuf),
    /// `DIR/counters/host=H/date=YYYY-MM-DD/hour=H/part-<run>-<start>.parquet`,
    /// a new file at each UTC hour and once a file spans `rotate_ns` (0:
    /// hourly only), as `--dataset` lays out the capture tables
    /// (docs/tables.md, "Dataset layout"; the `host` column is the
    /// directory's).
    Dataset { dir: PathBuf, rotate_ns: u64 },
}

/// What a collection did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub snapshots: u64,
    pub rows: u64,
    /// Rows copied from the file that was there before (appending).
    pub kept_rows: u64,
    pub warnings: Vec<String>,
    /// `count` or `signal`.
    pub stopped_by: &'static str,
    /// The files written.
    pub files: Vec<PathBuf>,
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Samples until `count` snapshots or a signal, then completes the file.
/// An existing `out` is appended to: its rows are copied first, and its
/// last values start the deltas.
pub fn run(opts: &Options) -> Result<Outcome> {
    let mut out = Outcome::default();
    let mut writer = Writer::new(&opts.out, &opts.host);
    if let Output::File(path) = &opts.out
        && path.exists()
    {
        for snap in super::table::read(path)? {
            writer.write(&snap)?;
        }
        out.kept_rows = writer.rows;
    } else if let Output::Dataset { .. } = &opts.out {
        crate::tables::dataset::check_host(&opts.host)?;
    }

    // Ctrl-C and SIGTERM end the sampling, not the process: the file is
    // completed either way (with --count too).
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let mut warned: Vec<String> = Vec::new();
    let start = Instant::now();
    let mut n = 0u64;
    out.stopped_by = "signal";
    loop {
        let ts_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let (snaps, problems) = sample(opts, ts_ns);
        for p in problems {
            // One warning per source and problem, not one per interval.
            if !warned.contains(&p) {
                eprintln!("rocescope: warning: {p}");
                warned.push(p);
            }
        }
        for s in &snaps {
            writer.write(s)?;
        }
        n += 1;
        if opts.count.is_some_and(|c| n >= c) {
            out.stopped_by = "count";
            break;
        }
        // Sample on a fixed grid, not after each sample's own delay.
        let next = opts.interval.saturating_mul(n as u32);
        while start.elapsed() < next {
            if STOP.load(Ordering::SeqCst) {
                break;
            }
            std::thread::sleep((next - start.elapsed()).min(Duration::from_millis(100)));
        }
        if STOP.load(Ordering::SeqCst) {
            break;
        }
    }
    out.snapshots = n;
    out.rows = writer.rows - out.kept_rows;
    out.warnings = warned;
    out.files = writer.close()?;
    Ok(out)
}

/// Writes snapshots to `path` as counters.parquet (deltas from one to the
/// next of each endpoint), replacing what was there.
pub fn write_file(path: &Path, snapshots: &[Snapshot]) -> Result<()> {
    let mut w = Writer::new(&Output::File(path.to_path_buf()), "");
    for s in snapshots {
        w.write(s)?;
    }
    w.close().map(|_| ())
}

/// The file being written, and the deltas of each endpoint's counters
/// since its previous snapshot (across files).
struct Writer {
    out: Output,
    host: String,
    last: HashMap<(Endpoint, String), (u64, u64)>,
    /// The open file, the time of its first row and its hour.
    table: Option<(ParquetTable<CounterColumns>, u64, String)>,
    /// The dataset run id, from the first file's time on.
    run: Option<String>,
    files: Vec<PathBuf>,
    rows: u64,
}

impl Writer {
    fn new(out: &Output, host: &str) -> Self {
        Writer {
            out: out.clone(),
            host: host.to_string(),
            last: HashMap::new(),
            table: None,
            run: None,
            files: Vec::new(),
            rows: 0,
        }
    }

    /// The file a snapshot at `ts_ns` goes to: opened (or rotated) as needed.
    fn table(&mut self, ts_ns: u64) -> Result<&mut ParquetTable<CounterColumns>> {
        let hour = dataset::hour_partition(ts_ns);
        let rotate = match (&self.out, &self.table) {
            (_, None) => true,
            (Output::File(_), Some(_)) => false,
            (Output::Dataset { rotate_ns, .. }, Some((_, start, h))) => {
                *h != hour || (*rotate_ns > 0 && ts_ns.saturating_sub(*start) >= *rotate_ns)
            }
        };
        if rotate {
            if let Some((t, _, _)) = self.table.take() {
                self.files.push(t.close()?);
            }
            let t = match &self.out {
                Output::File(path) => {
                    let dir = match path.parent() {
                        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                        _ => PathBuf::from("."),
                    };
                    let name = path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .ok_or_else(|| {
                            Error::Usage(format!("--out {}: name a file", path.display()))
                        })?;
                    ParquetTable::<CounterColumns>::create(&dir, &name)?
                }
                Output::Dataset { dir, .. } => {
                    // The run: this host's collection started at the first file's time.
                    let host = &self.host;
                    let run = self
                        .run
                        .get_or_insert_with(|| dataset::run_id("counters collect", host, ts_ns))
                        .clone();
                    let relative = dataset::partition("counters", host, ts_ns);
                    let (path, partial) =
                        dataset::prepare(dir, &relative, &dataset::part_name(&run, ts_ns))?;
                    ParquetTable::create_at(path, partial, Encoding::default())
                        .without("host")
                        .with_constant("run", &run)
                }
            };
            self.table = Some((t, ts_ns, hour));
        }
        match &mut self.table {
            Some((t, _, _)) => Ok(t),
            None => Err(Error::Internal("no counters file open".into())),
        }
    }

    fn close(mut self) -> Result<Vec<PathBuf>> {
        // A file even without rows: a reader always finds the schema.
        if self.table.is_none() && self.files.is_empty() {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            self.table(now)?;
        }
        if let Some((t, _, _)) = self.table.take() {
            self.files.push(t.close()?);
        }
        Ok(self.files)
    }

    fn write(&mut self, s: &Snapshot) -> Result<()> {
        if s.values.is_empty() {
            return Ok(());
        }
        let mut rows = Vec::with_capacity(s.values.len());
        for (name, &(value, source)) in &s.values {
            let key = (s.endpoint.clone(), name.clone());
            let (delta, rate) = match self.last.get(&key) {
                Some(&(t0, v0)) if s.ts_ns > t0 => {
                    let d = value.checked_sub(v0);
                    let secs = (s.ts_ns - t0) as f64 / 1e9;
                    (d, d.map(|d| d as f64 / secs))
                }
                _ => (None, None),
            };
            self.last.insert(key, (s.ts_ns, value));
            rows.push(CounterRow {
                ts_ns: s.ts_ns,
                endpoint: &s.endpoint,
                counter: name,
                value,
                delta,
                rate,
                source,
            });
        }
        let table = self.table(s.ts_ns)?;
        for row in &rows {
            table.push(row)?;
        }
        self.rows += rows.len() as u64;
        Ok(())
    }
}

/// One snapshot of every source, and what went wrong reading them.
pub fn sample(opts: &Options, ts_ns: u64) -> (Vec<Snapshot>, Vec<String>) {
    let endpoint = Endpoint {
        host: Some(opts.host.clone()),
        iface: Some(opts.iface.clone()),
        device: opts.rdma.as_ref().map(|(d, _)| d.clone()),
        port: opts.rdma.as_ref().map(|&(_, p)| p),
    };
    let mut block = Block::new(ts_ns, endpoint);
    let mut problems = Vec::new();
    if let Some(prog) = &opts.ethtool {
        match ethtool(prog, &opts.iface) {
            Ok(text) => {
                for (i, line) in text.lines().enumerate() {
                    if let Err(e) = block.line(line) {
                        problems.push(format!("`{prog} -S {}` line {}: {e}", opts.iface, i + 1));
                    }
                }
            }
            Err(e) => problems.push(e),
        }
    }
    let net = opts
        .sysfs
        .join("class/net")
        .join(&opts.iface)
        .join("statistics");
    for p in parse::read_netdev_stats(&net, &mut block) {
        problems.push(p.to_string());
    }
    if let Some((dev, port)) = &opts.rdma {
        let dir = ib_port_dir(&opts.sysfs, dev, *port);
        for p in parse::read_ib_port(&dir, &mut block) {
            problems.push(p.to_string());
        }
    }
    (block.finish(), problems)
}

pub fn ib_port_dir(sysfs: &Path, dev: &str, port: u32) -> PathBuf {
    sysfs
        .join("class/infiniband")
        .join(dev)
        .join("ports")
        .join(port.to_string())
}

/// Most bytes of `ethtool -S` output read (a few thousand counters).
const MAX_ETHTOOL_BYTES: usize = 4 << 20;

fn ethtool(prog: &str, iface: &str) -> std::result::Result<String, String> {
    let out = Command::new(prog)
        .arg("-S")
        .arg(iface)
        .output()
        .map_err(|e| {
            format!("cannot run `{prog} -S {iface}`: {e}; install ethtool (apt-get install ethtool) or pass --no-ethtool")
        })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "`{prog} -S {iface}` failed ({}): {}",
            out.status,
            err.trim()
        ));
    }
    let n = out.stdout.len().min(MAX_ETHTOOL_BYTES);
    Ok(String::from_utf8_lossy(&out.stdout[..n]).into_owned())
}
