//! What the subcommands print besides their results: warnings and notes,
//! the exit status, JSON or text, the terminal's width; and the counters a
//! run compares with.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::offline::{self};
use crate::{Error, Result, analyze};

/// `--counters`: read before the captures, so a bad file fails at once.
pub(crate) fn load_counters(files: &[PathBuf]) -> Result<Option<crate::counters::Loaded>> {
    if files.is_empty() {
        return Ok(None);
    }
    let loaded = crate::counters::load(files)?;
    for w in &loaded.warnings {
        eprintln!("rocescope: warning: {w}");
    }
    Ok(Some(loaded))
}

/// summary.json gets every finding (the capture's and the
/// reconciliation's, in severity order) and the comparison table.
pub(crate) fn add_to_summary_file(
    path: &std::path::Path,
    r: &crate::counters::reconcile::Reconciliation,
    findings: &[analyze::Finding],
) -> Result<()> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::WriteIo {
        path: path.to_path_buf(),
        detail: format!("cannot read back to add the counters: {e}"),
        source: e,
    })?;
    let mut summary: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::Write {
        path: path.to_path_buf(),
        detail: format!("cannot read back to add the counters: {e}"),
    })?;
    if let Some(obj) = summary.as_object_mut() {
        obj.insert(
            "findings".into(),
            serde_json::to_value(findings).unwrap_or_default(),
        );
    }
    r.add_to_json(&mut summary);
    crate::tables::write_json(path, &summary)
}

/// Writes to standard output. A reader that went away (`report --json |
/// head`) ends the printing, not the run: what is left is dropped, the
/// files are already written and the exit status stays the run's, as a
/// `grep` that loses its reader does not become an error. Any other
/// failure to write is one.
pub(crate) fn write_stdout(args: std::fmt::Arguments) -> Result<()> {
    use std::io::Write;
    match std::io::stdout().lock().write_fmt(args) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::WriteIo {
            path: PathBuf::from("standard output"),
            detail: e.to_string(),
            source: e,
        }),
        _ => Ok(()),
    }
}

/// `print!` through [`write_stdout`].
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::print::write_stdout(format_args!($($arg)*)) };
}

/// `println!` through [`write_stdout`].
macro_rules! outln {
    ($($arg:tt)*) => { $crate::cli::print::write_stdout(format_args!("{}\n", format_args!($($arg)*))) };
}
pub(crate) use {out, outln};

/// Prints `value` as JSON with `json`, else `text()`.
pub(crate) fn print_json_or_text(
    json: bool,
    value: &impl serde::Serialize,
    what: &str,
    text: impl FnOnce() -> String,
) -> Result<()> {
    if json {
        let text = serde_json::to_string_pretty(value)
            .map_err(|e| Error::Internal(format!("cannot print the {what}: {e}")))?;
        outln!("{text}")?;
    } else {
        out!("{}", text())?;
    }
    Ok(())
}

/// The terminal's width when stdout is one; `None` (no wrapping) for a
/// pipe or a file, where the reader's tools do their own.
pub(crate) fn terminal_width() -> Option<usize> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    console::Term::stdout()
        .size_checked()
        .map(|(_, cols)| usize::from(cols))
}

pub(crate) fn print_warnings(outcome: &offline::Outcome) {
    for w in &outcome.warnings {
        eprintln!("rocescope: warning: {w}");
    }
    for n in &outcome.notes {
        eprintln!("rocescope: note: {n}");
    }
}

/// A run stopped by a read error, or one of which nothing could be
/// decoded, still wrote what it had, but fails.
pub(crate) fn exit_code(outcome: &offline::Outcome) -> ExitCode {
    match outcome.failure() {
        Some(e) => {
            eprintln!("rocescope: error: {e}");
            ExitCode::FAILURE
        }
        None => ExitCode::SUCCESS,
    }
}
