//! NIC and switch counters beside the capture: read them ([`parse`]),
//! sample them on a host ([`collect`]), diagnose from them alone
//! ([`diagnose`]) and reconcile them with a capture of the same minutes
//! ([`reconcile`]). docs/counters.md is the reference: formats, the
//! meaning of every counter used, each finding's definition and the
//! reconciliation's tolerances.
pub mod collect;
pub mod diagnose;
mod evidence;
pub mod model;
pub mod parse;
pub mod reconcile;
pub mod table;
pub mod words;

use std::path::{Path, PathBuf};

use crate::render::fmt_utc;
use crate::{Error, Result};
pub use model::{Endpoint, Series, Snapshot, Source};

/// Most bytes of one text counter file: a year of per-minute snapshots of
/// a few hundred counters is well below this; more is not a counter file.
const MAX_TEXT_BYTES: u64 = 1 << 30;

/// Snapshots from every file, as series, and what was skipped on the way.
#[derive(Clone, Debug, Default)]
pub struct Loaded {
    pub series: Vec<Series>,
    /// `file:line: what` for each skipped line; reading went on.
    pub warnings: Vec<String>,
}

/// Reads counter files: snapshot-series text (`# ts=` headers followed by
/// `ethtool -S` / `rdma statistic show` output) or a `counters.parquet`
/// from `rocescope counters collect`. A file that cannot be opened, or
/// that holds no snapshot at all, is an error; bad lines are warnings.
pub fn load(paths: &[PathBuf]) -> Result<Loaded> {
    let mut snapshots = Vec::new();
    let mut warnings = Vec::new();
    for path in paths {
        let (before, warned) = (snapshots.len(), warnings.len());
        if table::is_parquet(path)? {
            snapshots.extend(table::read(path)?);
        } else {
            let text = read_text(path)?;
            let parsed = parse::parse_series(path, &text);
            warnings.extend(parsed.problems.iter().map(|p| p.to_string()));
            snapshots.extend(parsed.snapshots);
        }
        if snapshots.len() == before {
            let first = warnings
                .get(warned)
                .map(|w| format!(" (first problem: {w})"))
                .unwrap_or_default();
            return Err(Error::Usage(format!(
                "{}: no counter snapshot in it{first}: a counter file is `# ts=<RFC 3339 time> host=… iface=… device=… port=…` lines, each followed by `ethtool -S` and/or `rdma statistic show` output, or a counters.parquet from `rocescope counters collect`",
                path.display()
            )));
        }
    }
    let series = model::into_series(snapshots);
    for s in &series {
        if s.snapshots.len() < 2 {
            warnings.push(format!(
                "{}: only one snapshot (at {}): deltas need two",
                s.endpoint,
                fmt_utc(s.snapshots.first().map_or(0, |x| x.ts_ns))
            ));
        }
        for (name, n) in s.resets() {
            warnings.push(format!(
                "{}: {name} went down {n} times (counter reset): those intervals are left out of its deltas",
                s.endpoint
            ));
        }
    }
    Ok(Loaded { series, warnings })
}

fn read_text(path: &Path) -> Result<String> {
    use std::io::Read;
    let open = |e| Error::Open {
        path: path.to_path_buf(),
        source: e,
    };
    let file = std::fs::File::open(path).map_err(open)?;
    let mut bytes = Vec::new();
    file.take(MAX_TEXT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::Read {
            path: path.to_path_buf(),
            offset: bytes.len() as u64,
            source: e,
        })?;
    if bytes.len() as u64 > MAX_TEXT_BYTES {
        return Err(Error::Usage(format!(
            "{}: larger than {} MiB: split the series into several files",
            path.display(),
            MAX_TEXT_BYTES >> 20
        )));
    }
    // Tools print ASCII; a stray byte must not cost the file.
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
