use super::*;
use crate::analyze::TimelineRow;
use crate::output::Output;

#[test]
fn names_and_partitions() {
    // 2026-01-01T00:00:00.000025292Z
    let ns = 1_767_225_600_000_025_292;
    assert_eq!(hour_partition(ns), "date=2026-01-01/hour=0");
    assert_eq!(file_stamp(ns), "20260101T000000.000025292Z");
    assert_eq!(hour_partition(ns + 25 * HOUR_NS), "date=2026-01-02/hour=1");
    assert_eq!(hour_partition(ns + 47 * HOUR_NS), "date=2026-01-02/hour=23");
    assert!(check_host("tap-leaf1.dc_2").is_ok());
    for bad in ["", "a/b", "x=y", ".hidden", "_x", "a b"] {
        assert!(check_host(bad).is_err(), "{bad:?}");
    }
    assert!(check_host(&local_host_name()).is_ok());
    // The start to the second, then a hash of identity, host and start.
    let id = run_id("a.pcap", "tap1", ns);
    assert!(id.starts_with("20260101T000000Z-"), "{id}");
    assert_eq!(id.len(), "20260101T000000Z-".len() + 12, "{id}");
    assert_eq!(id, run_id("a.pcap", "tap1", ns), "names depend on the data");
    for other in [
        run_id("b.pcap", "tap1", ns),
        run_id("a.pcap", "tap2", ns),
        run_id("a.pcap", "tap1", ns + 1),
    ] {
        assert_ne!(id, other);
    }
}

/// The run id hashes an explicit list of the options that change the
/// outputs (docs/tables.md, "Runs"): pinned here, so that the same
/// inputs keep their run id across versions; every one of them changes
/// it, `--match-window` and `--clock-offset` included.
#[test]
fn the_run_id_hashes_an_explicit_list_of_options() {
    use crate::analyze::Config;
    let base = Config::default();
    assert_eq!(
        base.identity(),
        "link_speed=100000000000\nstorm=200000000\nbin=100000\ndup_window=10000\nmatch_window=2000000\n"
    );
    let id = |c: &Config| run_id(&c.identity(), "tap1", 1_767_225_600_000_000_000);
    assert_eq!(id(&base), id(&Config::default()));
    let mut variants = Vec::new();
    let mut vary = |change: &dyn Fn(&mut Config)| {
        let mut c = Config::default();
        change(&mut c);
        variants.push(id(&c));
    };
    vary(&|c| c.match_window_ns = 1_000_000);
    vary(&|c| c.clock_offsets = vec![("node1".into(), 48_000)]);
    vary(&|c| c.clock_offsets = vec![("node1".into(), -48_000)]);
    vary(&|c| c.link_speed_bps = 400_000_000_000);
    vary(&|c| c.tap_link_speed_bps = vec![("eth2".into(), 400_000_000_000)]);
    vary(&|c| c.storm_ns = 100_000_000);
    vary(&|c| c.bin_ns = 1_000_000);
    vary(&|c| c.dscp_to_priority = Some([3; 64]));
    vary(&|c| c.dup_window_ns = 0);
    vary(&|c| {
        c.ecmp_groups = vec!["a,b".parse().unwrap()];
    });
    let distinct: std::collections::HashSet<&String> = variants.iter().collect();
    assert_eq!(distinct.len(), variants.len(), "{variants:?}");
    assert!(!distinct.contains(&id(&base)));
}

/// Two captures that differ only after their first bytes, or in name,
/// have different identities; a copy of one elsewhere has the same.
#[test]
fn capture_identity_follows_the_files_not_their_place() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let a = write("a.pcap", b"same start, then one");
    let b = write("b.pcap", b"same start, then two");
    std::fs::create_dir(dir.path().join("copy")).unwrap();
    let a2 = write("copy/a.pcap", b"same start, then one");
    let ids: Vec<String> = [&a, &b, &a2]
        .iter()
        .map(|p| capture_identity(&[(*p).clone()], "opts"))
        .collect();
    assert_ne!(ids[0], ids[1]);
    assert_eq!(ids[0], ids[2]);
    assert_ne!(
        ids[0],
        capture_identity(std::slice::from_ref(&a), "other opts")
    );
    // Unreadable: named by its path (the run then fails on reading it).
    let missing = dir.path().join("missing.pcap");
    assert!(capture_identity(&[missing], "").contains("missing.pcap"));
    // A pipe is named by its path, not opened (that would wait for a
    // writer) nor read (its first MiB would be lost to the analysis).
    use std::os::unix::ffi::OsStrExt;
    let fifo = dir.path().join("pipe.pcap");
    let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    assert!(capture_identity(&[fifo], "").ends_with("pipe.pcap\n"));
}

fn row(flow_id: u32, bin_start_ns: u64) -> TimelineRow {
    TimelineRow {
        flow_id,
        bin_start_ns,
        bin_ns: 100_000,
        packets: 1,
        bytes: 1000,
        retrans_packets: 0,
        ce: 0,
        cnps: 0,
        gbps: 0.08,
        goodput_gbps: 0.08,
        paused_ns: 0,
    }
}

fn empty_analysis() -> Analysis {
    let mut a = crate::analyze::Analyzer::new(Default::default());
    let mut sink = crate::analyze::VecSink::default();
    a.set_iface_name(0, "tap");
    let mut analysis = a.finish(&mut sink);
    crate::render::tell(&mut analysis);
    analysis
}

/// A run of `rows` timeline rows, `minute` apart from `t0`, into `dir`.
fn timeline_run(opts: &DatasetOptions, t0: u64, rows: u32) -> Vec<PathBuf> {
    use crate::analyze::Sink;
    let mut w = DatasetWriter::create(opts).unwrap();
    w.name_iface(0, "tap");
    for m in 0..rows {
        w.timeline(&row(m, t0 + u64::from(m) * MINUTE));
    }
    w.finish(&empty_analysis(), &RunFacts::default()).unwrap()
}

const MINUTE: u64 = 60 * 1_000_000_000;
const T0: u64 = 1_767_225_600_000_000_000; // 2026-01-01T00:00:00Z

fn rows_of(p: &Path) -> usize {
    use parquet::file::reader::FileReader;
    let f = std::fs::File::open(p).unwrap();
    parquet::file::reader::SerializedFileReader::new(f)
        .unwrap()
        .metadata()
        .file_metadata()
        .num_rows() as usize
}

fn table_rows(dir: &Path, table: &str) -> usize {
    walk(&dir.join(table))
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .map(|p| rows_of(p))
        .sum()
}

#[test]
fn rotates_at_hours_by_time_and_keeps_every_row() {
    use crate::analyze::Sink;
    let dir = tempfile::tempdir().unwrap();
    let mut opts = DatasetOptions::new(dir.path(), "tap1").unwrap();
    opts.rotate_ns = 10 * MINUTE;
    let mut w = DatasetWriter::create(&opts).unwrap();
    w.name_iface(0, "tap");
    let t0 = T0 + 50 * MINUTE; // 00:50
    // 00:50 .. 01:29, one row a minute, with a late row for 00:59 at 01:01.
    for m in 0..40 {
        w.timeline(&row(m, t0 + u64::from(m) * MINUTE));
        if m == 11 {
            w.timeline(&row(999, t0 + 9 * MINUTE));
        }
    }
    let files = w.finish(&empty_analysis(), &RunFacts::default()).unwrap();
    let run = run_id("", "tap1", t0);
    let rel = |p: &PathBuf| p.strip_prefix(dir.path()).unwrap().display().to_string();
    let names: Vec<String> = files
        .iter()
        .map(rel)
        .filter(|f| f.starts_with("timeline/"))
        .collect();
    // 00:50-00:59 in one file; 01:00-01:09, 01:10-01:19, 01:20-01:29.
    for (hour, start) in [("0", "005000"), ("1", "010000"), ("1", "012000")] {
        let want = format!(
            "timeline/host=tap1/date=2026-01-01/hour={hour}/part-{run}-20260101T{start}.000000000Z.parquet"
        );
        assert!(names.contains(&want), "{want} not in {names:?}");
    }
    assert_eq!(names.len(), 4, "{names:?}");
    // Every row is somewhere, and nothing half-written is left behind.
    assert_eq!(table_rows(dir.path(), "timeline"), 41);
    assert!(walk(&dir.path().join(PARTIAL_DIR)).is_empty());
    // Tables without rows still have a file; only Parquet in the table roots.
    for table in [
        "packets",
        "flows",
        "events",
        "pfc",
        "hops",
        "nics",
        "telemetry",
        "uet_paths",
    ] {
        let prefix = format!("{table}/host=tap1/date=2026-01-01/hour=0/part-{run}-");
        assert!(files.iter().any(|f| rel(f).starts_with(&prefix)), "{table}");
        for f in walk(&dir.path().join(table)) {
            assert_eq!(f.extension().unwrap(), "parquet", "{}", f.display());
        }
    }
    // The summary: its own root, one line of JSON naming the run.
    let summary = files.last().unwrap();
    assert_eq!(
        rel(summary),
        format!("summaries/host=tap1/date=2026-01-01/hour=0/summary-{run}.json")
    );
    let text = std::fs::read_to_string(summary).unwrap();
    assert_eq!(text.lines().count(), 1);
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["dataset"]["run"], run.as_str());
    assert_eq!(json["dataset"]["files"].as_array().unwrap().len(), 12);
}

/// Captures that start at the same instant on one host (the synthetic
/// samples do) keep their files apart; the same capture analysed again
/// replaces its files, however it rotated before.
#[test]
fn runs_with_one_start_add_up_and_a_rerun_replaces() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = DatasetOptions::new(dir.path(), "tap1").unwrap();
    a.identity = "ghost-drop.pcapng".into();
    let mut b = a.clone();
    b.identity = "incast.pcapng".into();
    timeline_run(&a, T0, 30);
    timeline_run(&b, T0, 20);
    assert_eq!(table_rows(dir.path(), "timeline"), 50);
    // Again, rotating every 5 minutes: 6 files instead of 1, rows once.
    a.rotate_ns = 5 * MINUTE;
    let files = timeline_run(&a, T0, 30);
    assert_eq!(
        files
            .iter()
            .filter(|f| f.starts_with(dir.path().join("timeline")))
            .count(),
        6
    );
    assert_eq!(table_rows(dir.path(), "timeline"), 50);
    assert_eq!(walk(&dir.path().join(SUMMARIES_DIR)).len(), 2);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
