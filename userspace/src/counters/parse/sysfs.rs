//! Counters read from sysfs, one value per file: an RDMA port's
//! `counters/` and `hw_counters/`, a netdev's `statistics/`.
use std::path::{Path, PathBuf};

use super::{Block, Problem, parse_value};
use crate::counters::model::Source;

/// Reads `DIR/{counters,hw_counters}/*` of one RDMA port
/// (`/sys/class/infiniband/DEV/ports/N`): one value per file. Files that
/// are missing, unreadable or not a number are problems (`line` 0).
pub fn read_ib_port(dir: &Path, block: &mut Block) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut any = false;
    for sub in ["counters", "hw_counters"] {
        let d = dir.join(sub);
        let Ok(files) = counter_files(&d) else {
            continue;
        };
        any = true;
        for (name, f) in files {
            // `lifespan` sets how long hw_counters values are cached, in ms.
            if name == "lifespan" || !f.is_file() {
                continue;
            }
            match read_small(&f).map(|t| parse_value(&t)) {
                Ok(Some(v)) => block.set(&name, v, Source::Sysfs),
                Ok(None) => problems.push(Problem {
                    path: f,
                    line: 1,
                    detail: "not a counter value (a number)".into(),
                }),
                Err(e) => problems.push(Problem {
                    path: f,
                    line: 0,
                    detail: format!("cannot read: {e}"),
                }),
            }
        }
    }
    if !any {
        problems.push(Problem {
            path: dir.to_path_buf(),
            line: 0,
            detail:
                "no counters/ or hw_counters/ directory: is this /sys/class/infiniband/DEV/ports/N?"
                    .into(),
        });
    }
    problems
}

/// Reads `DIR/*` of `/sys/class/net/IF/statistics`, named `netdev_<file>`
/// so they never collide with an `ethtool -S` name.
pub fn read_netdev_stats(dir: &Path, block: &mut Block) -> Vec<Problem> {
    let mut problems = Vec::new();
    let files = match counter_files(dir) {
        Ok(f) => f,
        Err(e) => {
            return vec![Problem {
                path: dir.to_path_buf(),
                line: 0,
                detail: format!("cannot read the interface's statistics: {e}"),
            }];
        }
    };
    for (name, f) in files {
        match read_small(&f).map(|t| parse_value(&t)) {
            Ok(Some(v)) => block.set(&format!("netdev_{name}"), v, Source::Netdev),
            // Some drivers refuse some files (EINVAL, EOPNOTSUPP): not an error of ours.
            Ok(None) | Err(_) => problems.push(Problem {
                path: f,
                line: 0,
                detail: "no value".into(),
            }),
        }
    }
    problems
}

/// The files of a sysfs counter directory, by name.
fn counter_files(dir: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let mut files: Vec<(String, PathBuf)> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    files.sort();
    Ok(files)
}

/// A sysfs counter file is one short line; never read more than a page.
fn read_small(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut buf = Vec::with_capacity(64);
    std::fs::File::open(path)?
        .take(4096)
        .read_to_end(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}
