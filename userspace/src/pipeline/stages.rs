//! What each stage thread runs: the analyzer's loop (records in, verdicts,
//! events and rows out to the writer) and the writer's (rows into every
//! output, in the order they came), with the analyzer stage's end of the
//! writer thread ([`Writer`]) and the end of a run (the analysis told,
//! the outputs closed).
use std::sync::mpsc::{Receiver, Sender, SyncSender};
use std::thread::JoinHandle;

use rocescope_common::PacketRecord;

use super::messages::{Delta, Hop, TableBatch, ToAnalyzer, ToWriter};
use super::sinks::{Discard, Fanout, Flushing};
use super::{Outputs, Pairing};
use crate::analyze::{self, Analysis, Analyzer, Verdict};
use crate::output::{Output, RunFacts, Watch, Watched};
use crate::{Error, Result};

/// The analyzer stage's end of the writer thread: where its batches go,
/// and the thread, whose own error explains a closed channel better than
/// the channel can.
pub(super) struct Writer {
    pub(super) tx: SyncSender<ToWriter>,
    pub(super) handle: Option<JoinHandle<Result<Analysis>>>,
}

impl Writer {
    pub(super) fn send(&mut self, msg: ToWriter) -> Result<()> {
        match self.tx.send(msg) {
            Ok(()) => Ok(()),
            Err(_) => Err(self.failed()),
        }
    }

    fn failed(&mut self) -> Error {
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(Err(e))) => e,
            _ => Error::Internal("the table writer thread stopped".into()),
        }
    }

    /// The sink the end of the run writes through, starting with `batch`.
    pub(super) fn flushing(&self, batch: TableBatch) -> Flushing<'_> {
        Flushing {
            batch,
            wtx: &self.tx,
            failed: false,
        }
    }

    /// The end of a run: the last batch (`None`: the writer stopped while
    /// the run ended), the analysis told, the outputs closed; the writer's
    /// result.
    pub(super) fn close(
        mut self,
        last: Option<TableBatch>,
        analysis: Analysis,
        facts: Box<RunFacts>,
    ) -> Result<Analysis> {
        let Some(last) = last else {
            return Err(self.failed());
        };
        self.send(ToWriter::Batch(last))?;
        self.send(ToWriter::Close(Box::new(told(analysis)), facts))?;
        let Writer { tx, handle } = self;
        drop(tx);
        match handle {
            Some(h) => join(h),
            None => Err(Error::Internal("the table writer thread is gone".into())),
        }
    }

    /// Abandoned (see [`RecordPipeline::abandon`]): the writer drops its
    /// outputs, which removes their partial files, before we return.
    pub(super) fn abandon(self) {
        let Writer { tx, handle } = self;
        drop(tx);
        if let Some(h) = handle {
            let _ = h.join();
        }
    }
}

pub(super) fn join(handle: JoinHandle<Result<Analysis>>) -> Result<Analysis> {
    handle
        .join()
        .unwrap_or_else(|_| Err(Error::Internal("a pipeline thread panicked".into())))
}

/// The analyzer thread: records in, verdicts (and events, timeline rows)
/// out to the writer thread; returns the analysis once the writer is done.
pub(super) fn analyze_loop(
    mut analyzer: Analyzer,
    rx: Receiver<ToAnalyzer>,
    writer: Option<Writer>,
    spare: Sender<Vec<PacketRecord>>,
    pairings: Option<Sender<Pairing>>,
    mut watch: Option<Box<dyn Watch>>,
) -> Result<Analysis> {
    let Some(mut writer) = writer else {
        // No tables: analyse and hand the buffers straight back.
        while let Ok(msg) = rx.recv() {
            match msg {
                ToAnalyzer::Iface(i, name, capture, local) => {
                    analyzer.set_iface_name(i, &name);
                    analyzer.set_iface_capture(i, capture, local);
                }
                ToAnalyzer::Drops(i, ifdrop, osdrop) => analyzer.set_tap_drops(i, ifdrop, osdrop),
                ToAnalyzer::Cm(rec, msg) => analyzer.cm(&rec, msg),
                ToAnalyzer::Records(mut recs, deltas, hops) => {
                    let mut sink = Watched(&mut Discard, watch.as_deref_mut());
                    analyze_batch(&mut analyzer, &recs, &deltas, hops, &mut sink, |_| {});
                    if let Some(w) = watch.as_deref_mut() {
                        w.analysed(&mut analyzer, recs.len());
                    }
                    send_pairings(&mut analyzer, pairings.as_ref());
                    recs.clear();
                    let _ = spare.send(recs);
                }
                ToAnalyzer::Reopen => {
                    if let Some(w) = watch.as_deref_mut() {
                        w.reopen();
                    }
                }
                ToAnalyzer::Finish(_) => {
                    stopped(watch.as_deref_mut(), &mut analyzer);
                    return Ok(finished(analyzer, &mut Discard));
                }
            }
        }
        return Err(Error::Internal(
            "the record source stopped without finishing".into(),
        ));
    };
    while let Ok(msg) = rx.recv() {
        match msg {
            ToAnalyzer::Iface(i, name, capture, local) => {
                analyzer.set_iface_name(i, &name);
                analyzer.set_iface_capture(i, capture, local);
                writer.send(ToWriter::Iface(i, name))?;
            }
            ToAnalyzer::Drops(i, ifdrop, osdrop) => analyzer.set_tap_drops(i, ifdrop, osdrop),
            ToAnalyzer::Cm(rec, msg) => analyzer.cm(&rec, msg),
            ToAnalyzer::Records(records, deltas, hops) => {
                let mut sink = TableBatch::default();
                let mut verdicts = Vec::with_capacity(records.len());
                let mut watched = Watched(&mut sink, watch.as_deref_mut());
                analyze_batch(&mut analyzer, &records, &deltas, hops, &mut watched, |v| {
                    verdicts.push(v)
                });
                if let Some(w) = watch.as_deref_mut() {
                    w.analysed(&mut analyzer, records.len());
                    sink.findings = w.take_findings();
                }
                send_pairings(&mut analyzer, pairings.as_ref());
                if records.is_empty() && sink.is_empty() {
                    // Nothing for the writer (an idle flush, or deltas that
                    // closed no bin): its buffer goes back without waking it.
                    let _ = spare.send(records);
                    continue;
                }
                sink.verdicts = verdicts;
                sink.records = records;
                writer.send(ToWriter::Batch(sink))?;
            }
            ToAnalyzer::Reopen => {
                if let Some(w) = watch.as_deref_mut() {
                    w.reopen();
                }
                writer.send(ToWriter::Reopen)?;
            }
            ToAnalyzer::Finish(facts) => {
                let mut sink = writer.flushing(TableBatch {
                    findings: stopped(watch.as_deref_mut(), &mut analyzer),
                    ..TableBatch::default()
                });
                let analysis = analyzer.finish(&mut sink);
                let last = sink.last();
                return writer.close(last, analysis, facts);
            }
        }
    }
    writer.abandon();
    Err(Error::Internal(
        "the record source stopped without finishing".into(),
    ))
}

/// `records` through the analyzer, each delta and telemetry hop before
/// the record it was pushed before; `verdict` gets each record's verdict
/// in order.
fn analyze_batch(
    analyzer: &mut Analyzer,
    records: &[PacketRecord],
    deltas: &[Delta],
    mut hops: Vec<Hop>,
    sink: &mut impl analyze::Sink,
    mut verdict: impl FnMut(Verdict),
) {
    // By index, not a peekable iterator: its peek moved a whole delta
    // (~100 bytes), or a whole hop row, on every record, none or not (the
    // hops' `next_if` was 4 % of the live analyzer thread; benchmarks.md).
    let (mut next, mut next_hop) = (0, 0);
    // Each record's flow key hashed once, two records ahead, for its
    // prefetch steps and its lookup (by position, in a ring of three); each
    // record loaded four ahead, before the hash's first read of it.
    let hash = |i: usize| records.get(i).and_then(|r| analyzer.key_hash(r));
    let mut hashes = [hash(0), hash(1), None];
    for (i, rec) in records.iter().enumerate() {
        while let Some((at, iface, d)) = deltas.get(next)
            && *at <= i
        {
            analyzer.apply_delta(*iface, d, sink);
            next += 1;
        }
        while let Some((at, row)) = hops.get_mut(next_hop)
            && *at <= i
        {
            analyzer.telemetry(row, sink);
            next_hop += 1;
        }
        if let Some(r) = records.get(i + 4) {
            Analyzer::prefetch_record(r);
        }
        let after_next = records.get(i + 2).and_then(|r| analyzer.key_hash(r));
        hashes[(i + 2) % 3] = after_next;
        analyzer.prefetch(hashes[(i + 1) % 3], after_next);
        verdict(analyzer.push_hashed(rec, hashes[i % 3], sink));
    }
    for (_, iface, d) in deltas.get(next..).unwrap_or_default() {
        analyzer.apply_delta(*iface, d, sink);
    }
    for (_, row) in hops.get_mut(next_hop..).unwrap_or_default() {
        analyzer.telemetry(row, sink);
    }
}

/// Inline: tells the watch `records` more were analysed and hands the
/// findings it made to the outputs.
pub(super) fn watched_inline(
    watch: Option<&mut (dyn Watch + 'static)>,
    analyzer: &mut Analyzer,
    records: usize,
    outputs: &mut [Box<dyn Output>],
) -> Result<()> {
    let Some(w) = watch else { return Ok(()) };
    w.analysed(analyzer, records);
    let rows = w.take_findings();
    if !rows.is_empty() {
        for o in outputs.iter_mut() {
            o.findings(&rows)?;
        }
    }
    Ok(())
}

/// The run stops: the watch's last look, and the findings rows it made.
pub(super) fn stopped(
    watch: Option<&mut (dyn Watch + 'static)>,
    analysis: &mut dyn crate::output::Analysing,
) -> Vec<crate::output::FindingRow> {
    let Some(w) = watch else { return Vec::new() };
    w.stopped(analysis);
    w.take_findings()
}

/// Hands the pairings the analyzer made to whoever watches them.
pub(super) fn send_pairings(analyzer: &mut Analyzer, to: Option<&Sender<Pairing>>) {
    if let Some(tx) = to {
        for p in analyzer.take_pairings() {
            let _ = tx.send(p);
        }
    }
}

/// The writer thread: rows into every output, in the order they came.
pub(super) fn write_loop(
    mut outputs: Outputs,
    rx: Receiver<ToWriter>,
    spare: Sender<Vec<PacketRecord>>,
) -> Result<Analysis> {
    use analyze::Sink;
    while let Ok(msg) = rx.recv() {
        match msg {
            ToWriter::Iface(i, name) => {
                for o in &mut outputs {
                    o.name_iface(i, &name);
                }
            }
            ToWriter::Batch(mut b) => {
                let mut all = Fanout(&mut outputs);
                for e in &b.events {
                    all.event(e);
                }
                for row in &b.timeline {
                    all.timeline(row);
                }
                for row in &b.flows {
                    all.flow(row);
                }
                for row in &b.telemetry {
                    all.telemetry(row);
                }
                for o in &mut outputs {
                    o.packets(&b.records, &b.verdicts)?;
                    if !b.findings.is_empty() {
                        o.findings(&b.findings)?;
                    }
                }
                b.records.clear();
                let _ = spare.send(b.records);
            }
            ToWriter::Reopen => {
                for o in &mut outputs {
                    o.reopen()?;
                }
            }
            ToWriter::Close(analysis, facts) => {
                close_all(outputs, &analysis, &facts)?;
                return Ok(*analysis);
            }
        }
    }
    Err(Error::Internal(
        "the analyzer stopped without finishing".into(),
    ))
}

/// Closes every output, even after one fails; returns the first error.
pub(super) fn close_all(outputs: Outputs, analysis: &Analysis, facts: &RunFacts) -> Result<()> {
    let mut first_error = None;
    for o in outputs {
        if let Err(e) = o.close(analysis, facts) {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// The analysis at the end of input, told: findings worded and Wireshark
/// filters filled in (`render::tell`), as every output writes it.
pub(super) fn finished(analyzer: Analyzer, sink: &mut impl analyze::Sink) -> Analysis {
    told(analyzer.finish(sink))
}

/// `analysis` told as every output writes it (`render::tell`).
pub(super) fn told(mut analysis: Analysis) -> Analysis {
    crate::render::tell(&mut analysis);
    analysis
}
