//! [`Shards`] on threads: an analyzer thread per shard, fed batches over
//! bounded channels, their results put back in record order.
//!
//! ```text
//! caller: push_batch ─► Arc<batch> to every analyzer thread (sync_channel(DEPTH))
//!   analyzer k: the batch's records of shard k (PFC/PAUSE: all), then the
//!               batch's last time ─► its verdicts by index, events, rows
//!   caller: verdicts merged by index, rows and events analyzer by analyzer
//! ```
//!
//! Each thread reads the whole batch (shared, not copied) and takes the
//! records [`shard_of`] gives it; the others move its clock twice, at the
//! batch's first and last records ([`Analyzer::pass_time`]): within a batch (4096
//! records) a shard's retirement may run up to a batch late, which changes
//! no row (retirement is by idle time, seconds). The results of a batch
//! are merged once every thread has answered it, so the merged stream does
//! not depend on thread timing; memory is bounded by `DEPTH` batches per
//! thread.
//!
//! Beside the records (`live --analyzers`, `analyze --analyzers`: the
//! pipeline's sharded stage): switch telemetry hops among a batch's records
//! go to the analyzer of the address pair they name (analyzer 0 when they
//! name none), each before the record it came before
//! ([`Parallel::push_batch_with`]); what is told to every analyzer
//! (interface names, a capture's drop counts) or to one (a CM message, to
//! its address pair's) goes in order between batches ([`Parallel::each`],
//! [`Parallel::one`]).
//!
//! The live tap's summary mode (`live --mode summary`): the frames the
//! kernel counted come as deltas among a batch's records
//! ([`Parallel::push_batch_all`]). The analyzer of the delta's flow
//! ([`delta_shard`]: its address pair's) applies it before the record at
//! its index, as one analyzer does; the others move their clocks to its
//! last frame ([`Analyzer::pass_delta_time`]), as a record they do not
//! take moves them. The pairings each analyzer makes (of two flows of its
//! address pairs) come back with its answer to the batch and are kept, in
//! analyzer order, for [`Parallel::take_pairings`] once every analyzer
//! has answered: the kernel learns them after the same batch as from one
//! analyzer.
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use rocescope_common::PacketRecord;
use rocescope_common::summary::FlowDelta;

use super::analyzers::{Merged, PauseCopies, conclude};
use super::{Shard, delta_shard, pair_shard, shard_of};
use crate::analyze::{self, Analyzer, Ending, FlowKey, Sink, VecSink, Verdict};
use crate::telemetry::TelemetryRow;
use crate::{Error, Result};

/// Batches in flight per analyzer thread.
const DEPTH: usize = 4;

/// A telemetry hop to join before the record at this index of its batch.
pub type Hop = (usize, TelemetryRow);

/// A summary-mode delta (its interface and itself) to apply before the
/// record at this index of its batch.
pub type Delta = (usize, u16, FlowDelta);

/// Two flows an analyzer paired: (request flow, response flow).
pub type Pairing = (FlowKey, FlowKey);

/// Something to do to an analyzer between two batches.
pub type Apply = Box<dyn FnOnce(&mut Analyzer) + Send>;

enum Job {
    Batch(Arc<Vec<PacketRecord>>, Arc<Vec<Hop>>, Arc<Vec<Delta>>),
    Apply(Apply),
    /// The analyzer moved to the caller, and back when it is done.
    Lend(SyncSender<Analyzer>, Receiver<Analyzer>),
    Finish,
}

/// What an analyzer thread returns for a batch: (index in the batch,
/// verdict) of its records, what its sink received and the pairings it
/// made ([`Analyzer::log_pairings`]).
struct Done {
    verdicts: Vec<(u32, Verdict)>,
    sink: VecSink,
    pairings: Vec<Pairing>,
}

/// `n` analyzer threads.
pub struct Parallel {
    jobs: Vec<SyncSender<Job>>,
    done: Vec<Receiver<Done>>,
    threads: Vec<JoinHandle<Result<Ending>>>,
    /// The analyzers' pairings not taken yet ([`Parallel::take_pairings`]).
    pairings: Vec<Pairing>,
}

impl Parallel {
    pub fn new(config: &analyze::Config, n: usize) -> Result<Self> {
        Self::with(config, n, |_| {})
    }

    /// [`Parallel::new`], each analyzer set up by `setup` before its
    /// thread starts (the pipeline's row annotator).
    pub fn with(config: &analyze::Config, n: usize, setup: impl Fn(&mut Analyzer)) -> Result<Self> {
        let n = n.max(1);
        let (mut jobs, mut done, mut threads) = (Vec::new(), Vec::new(), Vec::new());
        for k in 0..n {
            let (job_tx, job_rx) = sync_channel::<Job>(DEPTH);
            let (done_tx, done_rx) = sync_channel::<Done>(DEPTH);
            let mut analyzer = Analyzer::new(config.clone());
            analyzer.number_flows(k as u32, n as u32);
            setup(&mut analyzer);
            let handle = std::thread::Builder::new()
                .name(format!("rocescope-shard{k}"))
                .spawn(move || shard_loop(analyzer, k, n, job_rx, done_tx))
                .map_err(|e| Error::Internal(format!("cannot start an analyzer thread: {e}")))?;
            jobs.push(job_tx);
            done.push(done_rx);
            threads.push(handle);
        }
        Ok(Parallel {
            jobs,
            done,
            threads,
            pairings: Vec::new(),
        })
    }

    /// The number of analyzers.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Runs `apply` on every analyzer, after the batches sent before.
    pub fn each(&mut self, apply: impl Fn(&mut Analyzer) + Clone + Send + 'static) -> Result<()> {
        for tx in &self.jobs {
            let f = apply.clone();
            tx.send(Job::Apply(Box::new(move |a: &mut Analyzer| f(a))))
                .map_err(|_| stopped())?;
        }
        Ok(())
    }

    /// `ask` of every analyzer, in analyzer order, after the batches sent
    /// before (a watch's look at the running analysis, `shard::running`).
    pub fn gather<T: Send + 'static>(
        &mut self,
        ask: impl Fn(&Analyzer) -> T + Clone + Send + 'static,
    ) -> Result<Vec<T>> {
        let (tx, rx) = std::sync::mpsc::channel();
        for (k, jobs) in self.jobs.iter().enumerate() {
            let (ask, tx) = (ask.clone(), tx.clone());
            let apply = move |a: &mut Analyzer| {
                let _ = tx.send((k, ask(a)));
            };
            jobs.send(Job::Apply(Box::new(apply)))
                .map_err(|_| stopped())?;
        }
        drop(tx);
        let mut answers: Vec<Option<T>> = (0..self.jobs.len()).map(|_| None).collect();
        for (k, answer) in rx {
            answers[k] = Some(answer);
        }
        answers.into_iter().map(|a| a.ok_or_else(stopped)).collect()
    }

    /// `read` of every analyzer at once, in analyzer order, after the
    /// batches sent before: each thread hands its analyzer over (a move,
    /// not a copy) and waits for it back (a watch's look at the findings
    /// judged over the N together, `shard::running`).
    pub fn lend<T>(&mut self, read: impl FnOnce(&[Analyzer]) -> T) -> Result<T> {
        let (mut lent, mut backs) = (Vec::new(), Vec::new());
        for jobs in &self.jobs {
            let (to, from) = sync_channel(1);
            let (back, back_rx) = sync_channel(1);
            jobs.send(Job::Lend(to, back_rx)).map_err(|_| stopped())?;
            lent.push(from);
            backs.push(back);
        }
        // A thread that stopped fails the look; those that lent theirs
        // find their return channels dropped and stop too.
        let all = lent
            .iter()
            .map(|r| r.recv().map_err(|_| stopped()))
            .collect::<Result<Vec<Analyzer>>>()?;
        let out = read(&all);
        for (a, back) in all.into_iter().zip(backs) {
            back.send(a).map_err(|_| stopped())?;
        }
        Ok(out)
    }

    /// From now on every analyzer remembers the pairings it makes, for
    /// [`Parallel::take_pairings`] (the live tap's summary mode tells the
    /// kernel).
    pub fn log_pairings(&mut self) -> Result<()> {
        self.each(Analyzer::log_pairings)
    }

    /// The pairings the analyzers made in the batches answered since the
    /// last call, analyzer by analyzer per batch.
    pub fn take_pairings(&mut self) -> Vec<Pairing> {
        std::mem::take(&mut self.pairings)
    }

    /// Runs `apply` on the analyzer of the address pair `a`, `b`, after
    /// the batches sent before.
    pub fn one(&mut self, a: &[u8; 16], b: &[u8; 16], apply: Apply) -> Result<()> {
        let k = pair_shard(a, b, self.jobs.len());
        self.jobs[k].send(Job::Apply(apply)).map_err(|_| stopped())
    }

    /// Analyses `batch` (records in time order) on every thread; the
    /// verdicts in record order, and every event and row to `sink`.
    pub fn push_batch(
        &mut self,
        batch: Arc<Vec<PacketRecord>>,
        sink: &mut impl Sink,
    ) -> Result<Vec<Verdict>> {
        self.push_batch_with(batch, Arc::new(Vec::new()), sink)
    }

    /// [`Parallel::push_batch`] with the telemetry hops among the batch's
    /// records: each joined by the analyzer of the address pair it names
    /// (analyzer 0's when it names none), before the record at its index.
    /// Every thread is done with `batch` when this returns: the caller's
    /// `Arc` is the only one left.
    pub fn push_batch_with(
        &mut self,
        batch: Arc<Vec<PacketRecord>>,
        hops: Arc<Vec<Hop>>,
        sink: &mut impl Sink,
    ) -> Result<Vec<Verdict>> {
        self.push_batch_all(batch, hops, Arc::new(Vec::new()), sink)
    }

    /// [`Parallel::push_batch_with`] with the summary-mode deltas among
    /// the batch's records: each applied by the analyzer of its flow
    /// ([`delta_shard`]) before the record at its index, its time passed
    /// to the others (module docs).
    pub fn push_batch_all(
        &mut self,
        batch: Arc<Vec<PacketRecord>>,
        hops: Arc<Vec<Hop>>,
        deltas: Arc<Vec<Delta>>,
        sink: &mut impl Sink,
    ) -> Result<Vec<Verdict>> {
        let len = batch.len();
        for tx in &self.jobs {
            tx.send(Job::Batch(batch.clone(), hops.clone(), deltas.clone()))
                .map_err(|_| stopped())?;
        }
        let mut verdicts = vec![Verdict::default(); len];
        for rx in &self.done {
            let d = rx.recv().map_err(|_| stopped())?;
            for (i, v) in d.verdicts {
                verdicts[i as usize] = v;
            }
            replay(&d.sink, sink);
            self.pairings.extend(d.pairings);
        }
        Ok(verdicts)
    }

    /// Ends every analyzer (each in its thread, [`Analyzer::end`]), judges
    /// the findings once over the N together and merges ([`conclude`]);
    /// their end-of-run rows and events go to `sink` (pause events from
    /// analyzer 0 only).
    pub fn finish(self, sink: &mut impl Sink) -> Result<Merged> {
        for tx in &self.jobs {
            let _ = tx.send(Job::Finish);
        }
        let mut ends = Vec::new();
        for (k, (rx, handle)) in self.done.into_iter().zip(self.threads).enumerate() {
            if let Ok(d) = rx.recv() {
                if k == 0 {
                    replay(&d.sink, sink);
                } else {
                    replay(&d.sink, &mut PauseCopies(sink));
                }
            }
            ends.push(
                handle
                    .join()
                    .map_err(|_| Error::Internal("an analyzer thread panicked".into()))??,
            );
        }
        Ok(conclude(ends, sink))
    }
}

fn stopped() -> Error {
    Error::Internal("an analyzer thread stopped".into())
}

/// The analyzer of hop `row` among `n`: its address pair's.
fn hop_shard(row: &TelemetryRow, n: usize) -> usize {
    match (&row.src_ip, &row.dst_ip) {
        (Some(a), Some(b)) => pair_shard(a, b, n),
        _ => 0,
    }
}

/// Hands what `from` collected to `to`, in order.
fn replay(from: &VecSink, to: &mut impl Sink) {
    for e in &from.events {
        to.event(e);
    }
    for t in &from.telemetry {
        to.telemetry(t);
    }
    for t in &from.timeline {
        to.timeline(t);
    }
    for f in &from.flows {
        to.flow(f);
    }
}

fn shard_loop(
    mut analyzer: Analyzer,
    k: usize,
    n: usize,
    jobs: Receiver<Job>,
    done: SyncSender<Done>,
) -> Result<Ending> {
    let mut sink = VecSink::default();
    while let Ok(job) = jobs.recv() {
        match job {
            Job::Apply(f) => f(&mut analyzer),
            Job::Lend(to, back) => {
                analyzer = match to.send(analyzer) {
                    Err(unsent) => unsent.0,
                    // The look that borrowed it failed (another thread
                    // had stopped): the run is ending on that error.
                    Ok(()) => back.recv().map_err(|_| {
                        Error::Internal(format!(
                            "analyzer {k} of {n} was lent to a look that failed before returning it"
                        ))
                    })?,
                };
            }
            Job::Batch(batch, hops, deltas) => {
                let mut verdicts = Vec::new();
                // The run starts at the batch's first record in every
                // shard (the span pause fractions are taken over).
                if let Some(first) = batch.first() {
                    analyzer.pass_time(first, &mut sink);
                }
                let mut hops = hops.iter().filter(|(_, h)| hop_shard(h, n) == k).peekable();
                let mut next_delta = 0;
                for (i, rec) in batch.iter().enumerate() {
                    next_delta =
                        deltas_before(&mut analyzer, k, n, &deltas, next_delta, i, &mut sink);
                    while let Some((_, h)) = hops.next_if(|(at, _)| *at <= i) {
                        analyzer.telemetry(&mut h.clone(), &mut sink);
                    }
                    // A PFC/PAUSE frame's verdict is analyzer 0's.
                    let (mine, speaks) = match shard_of(rec, n) {
                        Shard::One(s) => (s == k, true),
                        Shard::Every => (true, k == 0),
                    };
                    if !mine {
                        continue;
                    }
                    let v = if k == 0 {
                        analyzer.push(rec, &mut sink)
                    } else {
                        analyzer.push(rec, &mut PauseCopies(&mut sink))
                    };
                    if speaks {
                        verdicts.push((i as u32, v));
                    }
                }
                deltas_before(
                    &mut analyzer,
                    k,
                    n,
                    &deltas,
                    next_delta,
                    usize::MAX,
                    &mut sink,
                );
                for (_, h) in hops {
                    analyzer.telemetry(&mut h.clone(), &mut sink);
                }
                if let Some(last) = batch.last() {
                    analyzer.pass_time(last, &mut sink);
                }
                // Done with the batch before answering: the caller gets
                // its records back whole.
                drop((batch, deltas));
                let out = Done {
                    verdicts,
                    sink: std::mem::take(&mut sink),
                    pairings: analyzer.take_pairings(),
                };
                if done.send(out).is_err() {
                    break;
                }
            }
            Job::Finish => break,
        }
    }
    let analysis = if k == 0 {
        analyzer.end(&mut sink)
    } else {
        analyzer.end(&mut PauseCopies(&mut sink))
    };
    let _ = done.send(Done {
        verdicts: Vec::new(),
        sink,
        pairings: Vec::new(),
    });
    Ok(analysis)
}

/// Analyzer `k` of `n` through `deltas` from index `next` on, up to those
/// before the record at index `at` (`usize::MAX`: all): its flows' applied,
/// the others' times passed. Returns the index of the first delta left.
fn deltas_before(
    analyzer: &mut Analyzer,
    k: usize,
    n: usize,
    deltas: &[Delta],
    mut next: usize,
    at: usize,
    sink: &mut VecSink,
) -> usize {
    while let Some((before, iface, d)) = deltas.get(next)
        && *before <= at
    {
        if delta_shard(d, n) != k {
            analyzer.pass_delta_time(d);
        } else if k == 0 {
            analyzer.apply_delta(*iface, d, sink);
        } else {
            analyzer.apply_delta(*iface, d, &mut PauseCopies(sink));
        }
        next += 1;
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::Shards;
    use crate::shard::tests::sample_records;

    /// The threads give what the inline shards give (which equal one
    /// analyzer: `analyzers::tests`), record by record and at the end.
    #[test]
    fn threads_give_what_inline_shards_give_on_every_sample() {
        let config = analyze::Config::default();
        for (path, records) in sample_records() {
            let mut inline = Shards::new(&config, 2);
            let mut inline_sink = VecSink::default();
            let want: Vec<Verdict> = records
                .iter()
                .map(|r| inline.push(r, &mut inline_sink))
                .collect();
            let inline = inline.finish(&mut inline_sink);

            let mut threads = Parallel::new(&config, 2).unwrap();
            let mut sink = VecSink::default();
            let mut got = Vec::new();
            // Small batches: the clocks move between them.
            for chunk in records.chunks(64) {
                got.extend(
                    threads
                        .push_batch(Arc::new(chunk.to_vec()), &mut sink)
                        .unwrap(),
                );
            }
            let merged = threads.finish(&mut sink).unwrap();
            let name = path.display();
            assert_eq!(got, want, "{name}: verdicts");
            assert_eq!(merged.flows, inline.flows, "{name}: flows");
            assert_eq!(merged.pfc, inline.pfc, "{name}: pfc");
            assert_eq!(merged.frames, inline.frames, "{name}: frames");
            assert_eq!(merged.diagnoses, inline.diagnoses, "{name}: findings");
            let mut a = sink.flows.clone();
            let mut b = inline_sink.flows.clone();
            a.sort_by_key(|r| r.flow_id);
            b.sort_by_key(|r| r.flow_id);
            assert_eq!(a, b, "{name}: streamed rows");
            let key = |e: &analyze::Event| (e.ts_ns, e.flow_id, e.kind.as_str());
            let mut a: Vec<_> = sink.events.iter().map(key).collect();
            let mut b: Vec<_> = inline_sink.events.iter().map(key).collect();
            a.sort();
            b.sort();
            assert_eq!(a, b, "{name}: events");
        }
    }
}

#[cfg(test)]
mod summary_tests;
