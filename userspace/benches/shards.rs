//! Sharded analysis (`rocescope::shard`): the analyzer over the records of
//! one capture, alone (the baseline) against [`Parallel`] with 1 and with 2
//! analyzer threads, interleaved rounds in this run, medians of wall time
//! and of the process's CPU time (all threads; the records are decoded
//! before and held in memory, as the live tap hands them over).
//!
//! `cargo bench -p rocescope --bench shards`. Environment:
//! `ROCESCOPE_BENCH_CAPTURE` (default: the 500k-frame capture of
//! `stages`), `ROCESCOPE_BENCH_ROUNDS` (default 5).
mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{env_usize, make_capture, read_decode};
use rocescope::analyze::{self, Analyzer, Sink};
use rocescope::shard::{Parallel, Shard, shard_of};
use rocescope_common::PacketRecord;

/// CPU time of this process (all threads) so far.
fn cpu() -> Duration {
    // SAFETY: a zeroed rusage is valid; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid rusage pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Drops what the analysis streams (rows, events): the analysis alone.
struct Null;

impl Sink for Null {
    fn event(&mut self, e: &analyze::Event) {
        black_box(e);
    }
    fn timeline(&mut self, row: &analyze::TimelineRow) {
        black_box(row);
    }
    fn flow(&mut self, row: &analyze::FlowRow) {
        black_box(row);
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Setup {
    Alone,
    Threads(usize),
}

impl Setup {
    fn name(self) -> String {
        match self {
            Setup::Alone => "one analyzer, no threads (baseline)".into(),
            Setup::Threads(n) => format!("{n} analyzer thread(s)"),
        }
    }
}

/// Wall and CPU time of one run of `setup` over `recs`.
fn run(setup: Setup, recs: &[PacketRecord]) -> (Duration, Duration) {
    let (t0, c0) = (Instant::now(), cpu());
    match setup {
        Setup::Alone => {
            let mut a = Analyzer::new(analyze::Config::default());
            for r in recs {
                black_box(a.push(r, &mut Null));
            }
            black_box(a.finish(&mut Null));
        }
        Setup::Threads(n) => {
            let mut p = Parallel::new(&analyze::Config::default(), n).expect("threads");
            for chunk in recs.chunks(rocescope::pipeline::BATCH) {
                black_box(
                    p.push_batch(Arc::new(chunk.to_vec()), &mut Null)
                        .expect("batch"),
                );
            }
            black_box(p.finish(&mut Null).expect("finish"));
        }
    }
    (t0.elapsed(), cpu() - c0)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let path = std::env::var_os("ROCESCOPE_BENCH_CAPTURE")
        .map(Into::into)
        .unwrap_or_else(|| make_capture(tmp.path(), 500_000));
    let rounds = env_usize("ROCESCOPE_BENCH_ROUNDS", 5).max(1);
    let recs = read_decode(&path);
    let mut per_shard = [0u64; 2];
    for r in &recs {
        match shard_of(r, 2) {
            Shard::One(k) => per_shard[k] += 1,
            Shard::Every => per_shard.iter_mut().for_each(|n| *n += 1),
        }
    }
    println!(
        "sharded analysis over {} ({} records; with 2 shards {} and {} records each, PFC/PAUSE to both), {rounds} interleaved rounds:",
        path.display(),
        recs.len(),
        per_shard[0],
        per_shard[1]
    );
    let setups = [Setup::Alone, Setup::Threads(1), Setup::Threads(2)];
    let mut walls: Vec<Vec<Duration>> = setups.iter().map(|_| Vec::new()).collect();
    let mut cpus: Vec<Vec<Duration>> = setups.iter().map(|_| Vec::new()).collect();
    for _ in 0..rounds {
        for (i, s) in setups.iter().enumerate() {
            let (w, c) = run(*s, &recs);
            walls[i].push(w);
            cpus[i].push(c);
        }
    }
    let base_wall = median(walls[0].clone()).as_secs_f64();
    let base_cpu = median(cpus[0].clone()).as_secs_f64();
    for (i, s) in setups.iter().enumerate() {
        let w = median(walls[i].clone()).as_secs_f64();
        let c = median(cpus[i].clone()).as_secs_f64();
        let n = recs.len().max(1) as f64;
        println!(
            "  {}: wall {:.0} ns/record = {:.2}x baseline, CPU {:.0} ns/record = {:.2}x baseline",
            s.name(),
            w * 1e9 / n,
            w / base_wall,
            c * 1e9 / n,
            c / base_cpu
        );
    }
}
