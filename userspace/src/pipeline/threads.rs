//! The stage threads: how the stages are laid out on threads ([`Threads`]),
//! starting the analyzer and writer threads, handing
//! the analyzer the source's batches over a bounded channel, and the
//! source's lowered priority ([`SOURCE_NICE`]).
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;

use rocescope_common::PacketRecord;

use super::messages::{Delta, Hop, ToAnalyzer, ToWriter};
use super::stages::{Writer, analyze_loop, write_loop};
use super::{BATCH, Outputs, Pairing};
use crate::analyze::{Analysis, Analyzer};
use crate::output::Watch;
use crate::{Error, Result};

/// How the stages are laid out on threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Threads {
    /// Source, analyzer and writer on threads of their own (the default).
    #[default]
    Pipelined,
    /// Everything on the calling thread (the reference the pipelined
    /// layout is tested against; also `--threads 1`).
    Inline,
}

impl Threads {
    /// `--threads N`: 1 is inline, anything else pipelined.
    pub fn from_count(n: usize) -> Self {
        if n == 1 {
            Threads::Inline
        } else {
            Threads::Pipelined
        }
    }
}

/// Batches in flight per channel.
const DEPTH: usize = 4;

pub(super) struct Pipelined {
    pub(super) batch: Vec<PacketRecord>,
    /// Deltas among the batch's records.
    pub(super) deltas: Vec<Delta>,
    /// Telemetry hops among the batch's records.
    pub(super) hops: Vec<Hop>,
    pub(super) tx: SyncSender<ToAnalyzer>,
    /// Emptied record buffers coming back.
    pub(super) spare: Receiver<Vec<PacketRecord>>,
    pub(super) analyzer: JoinHandle<Result<Analysis>>,
    /// The last record of the batch sent last.
    pub(super) sent_last: Option<PacketRecord>,
    /// A [`Watch`] is told after every flush, an empty one too (what a
    /// throttled watch held back goes out once the source is idle).
    pub(super) watched: bool,
}

impl Pipelined {
    pub(super) fn start(
        analyzer: Analyzer,
        outputs: Outputs,
        pairings: Option<Sender<Pairing>>,
        watch: Option<Box<dyn Watch>>,
    ) -> Result<Self> {
        let watched = watch.is_some();
        Self::start_with(outputs, watched, move |rx, writer, spare_tx| {
            analyze_loop(analyzer, rx, writer, spare_tx, pairings, watch)
        })
    }

    /// The writer thread (with outputs) and the analyzer stage, `stage`,
    /// on a thread of its own.
    pub(super) fn start_with(
        outputs: Outputs,
        watched: bool,
        stage: impl FnOnce(
            Receiver<ToAnalyzer>,
            Option<Writer>,
            Sender<Vec<PacketRecord>>,
        ) -> Result<Analysis>
        + Send
        + 'static,
    ) -> Result<Self> {
        let (tx, rx) = sync_channel::<ToAnalyzer>(DEPTH);
        let (spare_tx, spare) = channel();
        let spawn_error = |what: &str, e: std::io::Error| {
            Error::Internal(format!("cannot start the {what} thread: {e}"))
        };
        let writer = if outputs.is_empty() {
            None
        } else {
            let (wtx, wrx) = sync_channel::<ToWriter>(DEPTH);
            let spare_tx = spare_tx.clone();
            let handle = std::thread::Builder::new()
                .name("rocescope-write".into())
                .spawn(move || write_loop(outputs, wrx, spare_tx))
                .map_err(|e| spawn_error("table writer", e))?;
            Some(Writer {
                tx: wtx,
                handle: Some(handle),
            })
        };
        let analyzer = std::thread::Builder::new()
            .name("rocescope-analyze".into())
            .spawn(move || stage(rx, writer, spare_tx))
            .map_err(|e| spawn_error("analyzer", e))?;
        Ok(Self {
            batch: Vec::with_capacity(BATCH),
            deltas: Vec::new(),
            hops: Vec::new(),
            tx,
            spare,
            analyzer,
            sent_last: None,
            watched,
        })
    }

    /// Sends the current batch (if any); `Err` when the analyzer is gone.
    pub(super) fn flush(&mut self) -> std::result::Result<(), ()> {
        if self.batch.is_empty() && self.deltas.is_empty() && self.hops.is_empty() && !self.watched
        {
            return Ok(());
        }
        let next = self
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH));
        if let Some(last) = self.batch.last() {
            self.sent_last = Some(*last);
        }
        let full = std::mem::replace(&mut self.batch, next);
        let deltas = std::mem::take(&mut self.deltas);
        let hops = std::mem::take(&mut self.hops);
        self.tx
            .send(ToAnalyzer::Records(full, deltas, hops))
            .map_err(|_| ())
    }
}

/// Nice levels a yielding source runs below the stages
/// ([`RecordPipeline::source_yields`]). Measured on the bench capture
/// (`analyze`, medians of 24–30 interleaved runs, CPU unchanged): +5 on the
/// reader 0.956x wall (set from the environment in a test build), 0.965x
/// and 0.982x (this code, two comparisons); +5 on reader and analyzer
/// 0.970x; +2 0.963x and +10 0.961x on both. On a machine shared with
/// other work the reader also yields to other processes: it has slack.
pub const SOURCE_NICE: i32 = 5;

/// Adds `by` to the calling thread's nice value (Linux keeps one per
/// thread), capped at 19; best effort.
pub(super) fn lower_current_thread_priority(by: i32) {
    // SAFETY: getpriority/setpriority on the calling thread's own id; errno
    // is cleared first because -1 is also a valid nice value.
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        *libc::__errno_location() = 0;
        let now = libc::getpriority(libc::PRIO_PROCESS, tid);
        if now == -1 && *libc::__errno_location() != 0 {
            return;
        }
        let _ = libc::setpriority(libc::PRIO_PROCESS, tid, (now + by).min(19));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze;
    use crate::output::RunFacts;
    use crate::pipeline::{RecordPipeline, Threads};

    fn nice() -> i32 {
        // SAFETY: reads the calling thread's own nice value.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
    }

    /// A yielding source runs [`SOURCE_NICE`] levels lower once the stages
    /// started, and the stages keep the priority it had before.
    #[test]
    fn a_yielding_source_runs_below_its_stages() {
        // A thread of its own: the lowered priority stays with it.
        std::thread::spawn(|| {
            let before = nice();
            let mut p =
                RecordPipeline::with_threads(analyze::Config::default(), None, Threads::Pipelined)
                    .unwrap();
            p.source_yields();
            assert_eq!(nice(), before, "nothing changes before the stages start");
            p.push(&PacketRecord::default()).unwrap();
            assert_eq!(nice(), (before + SOURCE_NICE).min(19));
            // Ours among the analyzer threads of this process (other tests
            // run pipelines too) kept the priority the test thread had. A
            // new thread names itself once it runs: wait for ours to.
            let analyzer_nices = || -> Vec<i32> {
                let mut nices = Vec::new();
                for task in std::fs::read_dir("/proc/self/task").unwrap() {
                    let dir = task.unwrap().path();
                    let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
                    if comm.trim_end() != "rocescope-analy" {
                        continue;
                    }
                    let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
                    // After the parenthesised name: state (field 3) ... nice (19).
                    let after = &stat[stat.rfind(')').unwrap() + 2..];
                    nices.push(after.split(' ').nth(16).unwrap().parse().unwrap());
                }
                nices
            };
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            let mut nices = analyzer_nices();
            while !nices.contains(&before) && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(5));
                nices = analyzer_nices();
            }
            assert!(
                nices.contains(&before),
                "analyzer threads at {nices:?}, none at {before}"
            );
            p.finish(RunFacts::default()).unwrap();
        })
        .join()
        .unwrap();
    }
}
