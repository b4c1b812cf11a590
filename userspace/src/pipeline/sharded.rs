//! The analyzer stage split across N analyzers (`--analyzers N`, N > 1;
//! docs/live.md, "Sharded analysis"): the pipeline's analyzer thread
//! becomes a dispatcher feeding [`Parallel`]'s analyzer threads, and the
//! writer gets their merged stream.
//!
//! ```text
//! source ─► batch ─► dispatcher ─┬► analyzer 0 ─┐  verdicts in record order,
//!                                ├► analyzer 1 ─┼► events/rows analyzer by analyzer ─► writer
//!                                └► …          ─┘
//! ```
//!
//! * **Per batch**: each analyzer takes its address pairs' records (PFC and
//!   PAUSE: every analyzer) and the telemetry hops of its pairs; the
//!   writer gets the batch's records with their verdicts in record order,
//!   then the events, timeline rows, retired flows' rows and hops of
//!   analyzer 0, then of analyzer 1, … So each table holds the rows one
//!   analyzer writes, in another order: by batch, and within a batch by
//!   analyzer (`packets` keeps record order).
//! * **Summary mode** (`live --mode summary`): a batch's deltas go with
//!   it, each applied by the analyzer of its flow's address pair (the
//!   others move their clocks to it); the pairings the analyzers made in
//!   the batch go to whoever watches them (the tap, for the kernel) once
//!   every analyzer has answered, as one analyzer's go after the batch.
//! * **Between batches**: interface names and a capture's drop counts go
//!   to every analyzer, a CM message to its address pair's.
//! * **At the end**: every analyzer ends; its end-of-run rows and events go
//!   to the writer (pause events analyzer 0's), and the outputs close with
//!   one [`Analysis`] merged by [`shard::whole`], its findings worded.
//!
//! One analyzer (`--analyzers 1`, the default) never comes here: the
//! pipeline's own analyzer stage runs as before.
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender};

use rocescope_common::PacketRecord;

use super::{Discard, Pairing, Pipelined, TableBatch, ToAnalyzer, ToWriter, Writer, stopped, told};
use crate::analyze::{self, Analysis};
use crate::output::{Watch, Watched};
use crate::shard::{self, Parallel, whole::LinkLevelRecords};
use crate::{Error, Result};

/// The pipelined stages with `n` analyzers made from `config`, `watch`
/// shown their merged analysis (`shard::running`), the pairings they make
/// sent to `pairings` (the summary mode); not for `threads` inline.
pub(super) fn start(
    config: &analyze::Config,
    n: usize,
    outputs: super::Outputs,
    threads: super::Threads,
    watch: Option<Box<dyn Watch>>,
    pairings: Option<Sender<Pairing>>,
) -> Result<Pipelined> {
    if threads == super::Threads::Inline {
        return Err(Error::Usage(format!(
            "--analyzers {n} runs the analysis on {n} threads of its own; --threads 1 runs everything on one thread: leave out one of them"
        )));
    }
    let mut parallel = Parallel::with(config, n, |a| {
        a.set_row_annotator(crate::render::wireshark::annotate_row);
    })?;
    if pairings.is_some() {
        parallel.log_pairings()?;
    }
    let watched = watch.is_some();
    Pipelined::start_with(outputs, watched, move |rx, writer, spare| {
        analyze_loop(parallel, rx, writer, spare, watch, pairings)
    })
}

/// The dispatcher: messages in, the analyzers' merged results out to the
/// writer; returns the merged analysis once the writer is done.
fn analyze_loop(
    mut parallel: Parallel,
    rx: Receiver<ToAnalyzer>,
    mut writer: Option<Writer>,
    spare: Sender<Vec<PacketRecord>>,
    mut watch: Option<Box<dyn Watch>>,
    pairings: Option<Sender<Pairing>>,
) -> Result<Analysis> {
    let mut link_level = LinkLevelRecords::new();
    while let Ok(msg) = rx.recv() {
        match msg {
            ToAnalyzer::Iface(i, name, capture, local) => {
                let named = name.clone();
                parallel.each(move |a| {
                    a.set_iface_name(i, &named);
                    a.set_iface_capture(i, capture, local);
                })?;
                if let Some(w) = &mut writer {
                    w.send(ToWriter::Iface(i, name))?;
                }
            }
            ToAnalyzer::Drops(i, ifdrop, osdrop) => {
                parallel.each(move |a| a.set_tap_drops(i, ifdrop, osdrop))?;
            }
            ToAnalyzer::Cm(rec, msg) => {
                let (src, dst) = (rec.src_ip, rec.dst_ip);
                parallel.one(
                    &src,
                    &dst,
                    Box::new(move |a: &mut analyze::Analyzer| a.cm(&rec, msg)),
                )?;
            }
            ToAnalyzer::Records(records, deltas, hops) => {
                for r in &records {
                    if r.kind().link_level() {
                        *link_level.entry(r.iface).or_default() += 1;
                    }
                }
                let batch = Arc::new(records);
                let mut sink = TableBatch::default();
                let mut watched = Watched(&mut sink, watch.as_deref_mut());
                let verdicts = parallel.push_batch_all(
                    batch.clone(),
                    Arc::new(hops),
                    Arc::new(deltas),
                    &mut watched,
                )?;
                if let Some(tx) = &pairings {
                    for p in parallel.take_pairings() {
                        let _ = tx.send(p);
                    }
                }
                if let Some(w) = watch.as_deref_mut() {
                    w.analysed(&mut parallel, batch.len());
                    sink.findings = w.take_findings();
                }
                // Every analyzer thread is done with it: ours is the last.
                let mut records = Arc::try_unwrap(batch).unwrap_or_else(|b| (*b).clone());
                match &mut writer {
                    Some(w) => {
                        sink.verdicts = verdicts;
                        sink.records = records;
                        w.send(ToWriter::Batch(sink))?;
                    }
                    None => {
                        records.clear();
                        let _ = spare.send(records);
                    }
                }
            }
            ToAnalyzer::Reopen => {
                if let Some(w) = watch.as_deref_mut() {
                    w.reopen();
                }
                if let Some(w) = &mut writer {
                    w.send(ToWriter::Reopen)?;
                }
            }
            ToAnalyzer::Finish(facts) => {
                let findings = stopped(watch.as_deref_mut(), &mut parallel);
                let Some(writer) = writer else {
                    let merged = parallel.finish(&mut Discard)?;
                    return Ok(told(shard::whole::analysis(merged, &link_level)));
                };
                let mut sink = writer.flushing(TableBatch {
                    findings,
                    ..TableBatch::default()
                });
                let merged = parallel.finish(&mut sink)?;
                let last = sink.last();
                return writer.close(last, shard::whole::analysis(merged, &link_level), facts);
            }
        }
    }
    if let Some(w) = writer {
        w.abandon();
    }
    Err(Error::Internal(
        "the record source stopped without finishing".into(),
    ))
}
