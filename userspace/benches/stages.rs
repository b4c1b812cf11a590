//! Per-stage throughput on one capture, each stage timed alone (best of N
//! rounds, all in this run), then the whole `analyze` / `report` job, one
//! thread and pipelined:
//!
//! | stage | what is timed |
//! |---|---|
//! | read | the capture reader alone (the baseline) |
//! | read + decode | reader and decoder, each record dropped once decoded |
//! | read + decode, records kept | the same, records collected in memory (the input of the stages below) |
//! | analyze | the analyzer over those records (events and timeline dropped) |
//! | write | every table from the analyzer's output: Arrow builders, Parquet encoding, files; and every table but `packets.parquet` |
//! | merge | the live tap's time-order merge of the rings (`live::reorder`) over the records in memory, dealt to 2 and to 16 rings in batches of 4096 as the drain threads hand them |
//! | report / analyze | `offline::run` without / with tables, `--threads 1` and pipelined |
//!
//! `cargo bench -p rocescope --bench stages` (harness-less: it prints
//! figures; a regression shows as a ratio that moved).
//! Environment: `ROCESCOPE_BENCH_CAPTURE` (default: a 500k-frame mirror
//! capture made with `rocescope synth`: 128 connections = 256 QPs, snaplen
//! 128, ACKs, CE, CNPs, PFC), `ROCESCOPE_BENCH_ROUNDS` (default 3).
mod common;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{
    analyse, analyse_only, decode_each, env_usize, make_capture, read_decode, write_tables,
    write_tables_with,
};
use rocescope::offline::{self, Options};
use rocescope::pipeline::Threads;
use rocescope::sources::CaptureReader;
use rocescope::tables::Columns;
use rocescope::tables::packets::PacketColumns;

/// CPU time of this process (all threads) so far.
fn cpu() -> Duration {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid rusage pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn best<T>(rounds: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..rounds {
        let t0 = Instant::now();
        let v = f();
        best = best.min(t0.elapsed());
        out = Some(v);
    }
    (best, out.expect("at least one round"))
}

fn read_only(path: &Path) -> u64 {
    let mut r = CaptureReader::open(path).expect("open");
    let mut n = 0u64;
    while let Some(f) = r.next_frame().expect("read") {
        black_box(f.data);
        n += 1;
    }
    n
}

/// The live tap's merge (`live::reorder`) over `recs`: dealt to `rings`
/// rings a batch of 4096 at a time, as the drain threads hand them over,
/// each batch followed by what may leave; returns the items released.
#[cfg(feature = "live")]
fn merge(recs: &[rocescope::PacketRecord], rings: usize) -> u64 {
    use rocescope::live::RingItem;
    use rocescope::live::reorder::Reorder;
    let mut r = Reorder::new(rings);
    let mut out = 0u64;
    // Every ring's records in time order: ring i takes chunks i, i + rings, ...
    let chunk = 4096;
    for (n, batch) in recs.chunks(chunk).enumerate() {
        let ring = n % rings;
        r.push_batch(
            ring,
            batch.iter().map(|rec| RingItem::Record(*rec)).collect(),
        );
        // The batch's last record's time: every ring was drained then.
        let now = batch.last().map_or(0, |l| l.ts_ns);
        for q in 0..rings {
            if q != ring {
                r.mark_empty(
                    q,
                    now.saturating_add(rocescope::live::reorder::EMPTY_MARGIN_NS),
                );
            }
        }
        let _ = r.release(Some(now), |item| {
            black_box(item);
            out += 1;
            Ok::<bool, ()>(true)
        });
    }
    let _ = r.release(None, |item| {
        black_box(item);
        out += 1;
        Ok::<bool, ()>(true)
    });
    out
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rounds = env_usize("ROCESCOPE_BENCH_ROUNDS", 3).max(1);
    let tmp = tempfile::tempdir().expect("tempdir");
    let capture = match std::env::var_os("ROCESCOPE_BENCH_CAPTURE") {
        Some(p) => PathBuf::from(p),
        None => make_capture(tmp.path(), 500_000),
    };
    let paths = [capture.clone()];
    let frames = read_only(&capture);
    let mb = std::fs::metadata(&capture).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
    println!(
        "capture: {} ({frames} frames, {mb:.0} MB, page cache warm)",
        capture.display()
    );

    let (t_read, _) = best(rounds, || read_only(&capture));
    // Decoding alone: collecting 500k records of 200 bytes costs a 100 MB
    // Vec grown by doubling, fresh pages the kernel must clear, which on
    // this machine took as long as decoding itself.
    let (t_decode, _) = best(rounds, || {
        let mut n = 0u64;
        decode_each(&capture, |rec| {
            black_box(rec);
            n += 1;
        });
        n
    });
    let (t_decode_kept, recs) = best(rounds, || read_decode(&capture));
    let (t_analyze, _) = best(rounds, || analyse_only(&recs));
    let analysed = analyse(&recs);
    let verdicts = &analysed.verdicts;
    let out = tmp.path().join("out");
    std::fs::create_dir_all(&out).expect("mkdir");
    let write = |thread: bool| write_tables(&out, &recs, &analysed, thread);
    // As the pipeline builds them: a batch of records at a time, straight
    // from the batch.
    let (ifaces, files) = (["if0".to_string()], ["bench.pcapng".to_string()]);
    let (t_arrays, _) = best(rounds, || {
        let mut cols = PacketColumns::default();
        let rows = PacketColumns::BATCH_ROWS;
        recs.chunks(rows)
            .zip(verdicts.chunks(rows))
            .map(|(r, v)| black_box(cols.arrays_of(r, v, &ifaces, &files)).len())
            .sum::<usize>()
    });
    let (t_write, _) = best(rounds, || write(false));
    let (t_write_thread, _) = best(rounds, || write(true));
    let (t_write_no_packets, _) = best(rounds, || {
        write_tables_with(&out, &recs, &analysed, false, false)
    });
    #[cfg(feature = "live")]
    let merges = [2, 16].map(|rings| (rings, best(rounds, || merge(&recs, rings)).0));
    let job = |threads: Threads, tables: bool| {
        let opts = Options {
            threads,
            ..Options::default()
        };
        offline::run(&paths, &opts, tables.then_some(out.as_path())).expect("run")
    };
    let c0 = cpu();
    let (t_report_1, _) = best(rounds, || job(Threads::Inline, false));
    let (t_report_p, _) = best(rounds, || job(Threads::Pipelined, false));
    let (t_analyze_1, _) = best(rounds, || job(Threads::Inline, true));
    let c1 = cpu();
    let (t_analyze_p, _) = best(rounds, || job(Threads::Pipelined, true));
    let cpu_pipelined = (cpu() - c1) / rounds as u32;
    let _ = c0;

    println!(
        "{:<44} {:>9} {:>13} {:>10}",
        "stage (best of rounds)", "time", "frames/s", "vs read"
    );
    let line = |name: &str, t: Duration| {
        println!(
            "{name:<44} {:>7.3} s {:>11.2} M {:>9.2}x",
            t.as_secs_f64(),
            frames as f64 / t.as_secs_f64() / 1e6,
            t.as_secs_f64() / t_read.as_secs_f64()
        );
    };
    line("read (capture reader only)", t_read);
    line("read + decode", t_decode);
    line("read + decode, records kept in memory", t_decode_kept);
    line("analyze (records in memory)", t_analyze);
    line("packets batches -> Arrow arrays (no Parquet)", t_arrays);
    line("write all tables (one thread)", t_write);
    line("write all tables (packets encoder thread)", t_write_thread);
    line("write every table but packets", t_write_no_packets);
    #[cfg(feature = "live")]
    for (rings, t) in merges {
        line(&format!("live merge by time, {rings} rings"), t);
    }
    line("report --threads 1", t_report_1);
    line("report (pipelined)", t_report_p);
    line("analyze --threads 1", t_analyze_1);
    line("analyze (pipelined)", t_analyze_p);
    println!(
        "analyze (pipelined): {:.3} s CPU per run over {:.3} s wall = {:.2} cores busy",
        cpu_pipelined.as_secs_f64(),
        t_analyze_p.as_secs_f64(),
        cpu_pipelined.as_secs_f64() / t_analyze_p.as_secs_f64()
    );
    println!(
        "pipelined vs one thread: analyze {:.2}x, report {:.2}x",
        t_analyze_1.as_secs_f64() / t_analyze_p.as_secs_f64(),
        t_report_1.as_secs_f64() / t_report_p.as_secs_f64()
    );
}
