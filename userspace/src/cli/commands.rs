//! `analyze`, `report`, `extract` and `diff`: captures in, tables, a report,
//! a pcapng or a comparison out.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::offline::{self, Options};
use crate::{Error, Result, render};

use super::args::{AnalysisArgs, DatasetArgs, Input};
use super::print::{
    add_to_summary_file, exit_code, load_counters, out, outln, print_json_or_text, print_warnings,
    terminal_width,
};

#[derive(Args)]
pub(crate) struct DiffArgs {
    /// The run before the fix: a capture, or a directory written by `analyze --out`.
    #[arg(value_name = "BEFORE")]
    pub(crate) before: PathBuf,
    /// The run after it.
    #[arg(value_name = "AFTER")]
    pub(crate) after: PathBuf,
    /// Print the comparison as JSON instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Also write it as a self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,
    /// Captures only: frames matching this tcpdump-syntax filter.
    #[arg(long, value_name = "EXPR")]
    pub(crate) filter: Option<String>,
    #[command(flatten)]
    pub(crate) analysis: AnalysisArgs,
}

/// `analyze`: every table to `--out` and/or the dataset.
pub(crate) fn analyze(
    input: Input,
    out: Option<PathBuf>,
    dataset: DatasetArgs,
    shards: super::args::ShardArgs,
) -> Result<ExitCode> {
    let mut opts = input.options()?;
    opts.analyzers = shards.analyzers(&[(
        input.threads == 1,
        "--threads 1",
        "--threads 1 runs everything on one thread; leave out one of them",
    )])?;
    if let Some(out) = &out {
        std::fs::create_dir_all(out).map_err(|e| Error::WriteIo {
            path: out.clone(),
            detail: format!("cannot create the output directory: {e}"),
            source: e,
        })?;
    }
    let identity = crate::tables::dataset::capture_identity(&input.captures, &opts.identity());
    let extra = dataset.writer(identity)?.into_iter().collect();
    let counters = load_counters(&input.counters)?;
    let mut outcome = offline::run_with(&input.captures, &opts, out.as_deref(), extra)?;
    if let Some(loaded) = &counters {
        let r = crate::counters::words::reconcile_files(&mut outcome.analysis, loaded);
        if let Some(out) = &out {
            add_to_summary_file(
                &out.join("summary.json"),
                &r,
                &outcome.analysis.summary.findings,
            )?;
        }
    }
    let to = [out.as_deref(), dataset.dataset.as_deref()]
        .into_iter()
        .flatten()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" and ");
    print_warnings(&outcome);
    outln!(
        "{}; {}, {} → {}",
        render::frames_line(outcome.frames_read, &outcome.analysis.summary.frames),
        render::fmt_count(outcome.analysis.summary.totals.flows, "flow"),
        render::fmt_count(outcome.analysis.summary.findings.len() as u64, "finding"),
        to
    )?;
    for f in &outcome.analysis.summary.findings {
        outln!("  [{}] {}", f.severity, f.title)?;
    }
    Ok(exit_code(&outcome))
}

/// `report`: the diagnosis as text, JSON and/or HTML.
pub(crate) fn report(
    input: Input,
    json: bool,
    width: Option<u16>,
    html: Option<PathBuf>,
) -> Result<ExitCode> {
    let mut opts = input.options()?;
    // The process exits after the report: the flows' state is not freed
    // one by one at the end (`Config::leave_at_exit`).
    opts.analyzer.leave_at_exit = true;
    let counters = load_counters(&input.counters)?;
    let extra: Vec<Box<dyn crate::output::Output>> = match &html {
        Some(path) => vec![Box::new(
            crate::html::HtmlReport::new(path, &opts.analyzer).with_counters(
                counters
                    .as_ref()
                    .map(|c| c.series.clone())
                    .unwrap_or_default(),
            ),
        )],
        None => Vec::new(),
    };
    let mut outcome = offline::run_with(&input.captures, &opts, None, extra)?;
    let recon = counters
        .as_ref()
        .map(|c| crate::counters::words::reconcile_files(&mut outcome.analysis, c));
    if let Some(path) = &html {
        eprintln!("rocescope: HTML report → {}", path.display());
    }
    print_warnings(&outcome);
    if json {
        let mut summary = render::render_json(&outcome.analysis);
        if let Some(r) = &recon {
            r.add_to_json(&mut summary);
        }
        let text = serde_json::to_string_pretty(&summary)
            .map_err(|e| Error::Internal(format!("cannot print the summary: {e}")))?;
        outln!("{text}")?;
    } else {
        let width = width.map(usize::from).or_else(terminal_width);
        out!(
            "{}",
            render::render_text(&outcome.analysis, outcome.frames_read, width)
        )?;
        if let Some(r) = &recon {
            out!("{}", crate::counters::words::reconciliation_text(r))?;
        }
    }
    Ok(exit_code(&outcome))
}

/// `extract`: one finding's or flow's frames to a pcapng.
pub(crate) fn extract(
    input: Input,
    select: crate::wireshark::ExtractWhat,
    out: PathBuf,
) -> Result<ExitCode> {
    use crate::wireshark;
    let what = select.selection();
    let mut opts = input.options()?;
    opts.source_yields = false;
    let x = wireshark::extract(&input.captures, &opts, &what, &out)?;
    let count = |n: usize, one: &str, many: &str| match n {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    };
    let of = what.words(&count(x.flows.len(), "flow", "flows"));
    outln!(
        "{}: {} of {of} from {} ({})",
        out.display(),
        count(x.frames as usize, "frame", "frames"),
        count(x.interfaces.len(), "interface", "interfaces"),
        x.interfaces.join(", ")
    )?;
    outln!(
        "  display filter (for the original captures): {}",
        x.display_filter
    )?;
    outln!(
        "  decode as: {}",
        x.decode_as
            .iter()
            .map(|d| format!("-d {d}"))
            .collect::<Vec<_>>()
            .join(" ")
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `diff`: two runs side by side.
pub(crate) fn diff(args: &DiffArgs) -> Result<ExitCode> {
    let opts = Options {
        analyzer: args.analysis.config(),
        filter: args.filter.clone(),
        progress: true,
        threads: crate::pipeline::Threads::default(),
        source_yields: false,
        taps: Vec::new(),
        recognition: Default::default(),
        time: Default::default(),
        analyzers: 1,
    };
    let d = crate::diff::Diff::of(&args.before, &args.after, &opts)?;
    if let Some(path) = &args.html {
        crate::diff::write_html(&d, path)?;
        eprintln!("rocescope: HTML diff → {}", path.display());
    }
    print_json_or_text(args.json, &d, "diff", || d.render_text())?;
    Ok(ExitCode::SUCCESS)
}
