//! Outputs are never half-written: every file goes to `.NAME.partial` and
//! is renamed when complete.
//!
//! * A run killed (SIGKILL) at any moment leaves, under the real names,
//!   only complete, readable tables; `summary.json` (written last) only
//!   when every table is there. The next run into the same directory
//!   removes the killed run's partial files and earlier outputs at start.
//! * A full disk (a small tmpfs in a private mount namespace) gives one
//!   clear error naming the file; the tables completed before it stay
//!   intact, no partial file is left behind; `synth` leaves neither a
//!   capture nor a partial one.
use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use common::Table;

const BIN: &str = env!("CARGO_BIN_EXE_rocescope");
const TABLES: [&str; 9] = [
    "packets",
    "flows",
    "events",
    "pfc",
    "timeline",
    "hops",
    "nics",
    "telemetry",
    "uet_paths",
];

/// A synth capture big enough to take a few seconds to analyse; built once.
fn big_capture() -> &'static Path {
    static CAP: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, path) = CAP.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.pcapng");
        common::rocescope_ok(&[
            "synth",
            "ghost-drop",
            "--out",
            path.to_str().unwrap(),
            "--packets",
            "100000",
            "--snaplen",
            "128",
            "--duration",
            "10s",
        ]);
        (dir, path)
    });
    path
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// What a killed run may leave: complete tables under their names, maybe
/// partial files (dot names, never taken for tables), and summary.json
/// only if every table is complete.
fn check_killed_output(dir: &Path) -> usize {
    let files = names(dir);
    let mut complete = 0;
    for f in &files {
        if let Some(stem) = f.strip_suffix(".parquet") {
            assert!(TABLES.contains(&stem), "unexpected {f}");
            // Readable to the end, footer and all.
            Table::read(&dir.join(f));
            complete += 1;
        } else if f == "summary.json" {
            let text = std::fs::read_to_string(dir.join(f)).unwrap();
            serde_json::from_str::<serde_json::Value>(&text).expect("complete JSON");
            for t in TABLES {
                assert!(
                    files.contains(&format!("{t}.parquet")),
                    "summary without {t}"
                );
            }
        } else {
            assert!(
                f.starts_with('.') && f.ends_with(".partial"),
                "unexpected file {f}"
            );
        }
    }
    complete
}

#[test]
fn a_killed_run_leaves_complete_files_or_none() {
    let cap = big_capture();
    let tmp = tempfile::tempdir().unwrap();
    let run = |out: &Path| {
        Command::new(BIN)
            .args([
                "analyze",
                cap.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    // How long a whole run takes here.
    let full = tmp.path().join("full");
    let start = Instant::now();
    assert!(run(&full).wait().unwrap().success());
    let whole = start.elapsed();
    assert_eq!(check_killed_output(&full), TABLES.len());

    let mut partial_seen = false;
    for (i, fraction) in [0.05, 0.3, 0.6, 0.9, 0.97, 1.1].iter().enumerate() {
        let out = tmp.path().join(format!("k{i}"));
        let mut child = run(&out);
        std::thread::sleep(whole.mul_f64(*fraction));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        check_killed_output(&out);
        partial_seen |= names(&out).iter().any(|n| n.ends_with(".partial"));

        // The next run into the same directory starts clean and completes.
        assert!(run(&out).wait().unwrap().success());
        let after = names(&out);
        assert!(after.iter().all(|n| !n.ends_with(".partial")), "{after:?}");
        assert_eq!(check_killed_output(&out), TABLES.len());
        assert_eq!(
            Table::read(&out.join("packets.parquet")).rows(),
            Table::read(&full.join("packets.parquet")).rows()
        );
    }
    eprintln!("a whole run took {whole:?}; partial files seen after a kill: {partial_seen}");
}

#[test]
fn stale_outputs_are_removed_at_start() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    for f in [
        ".packets.parquet.partial",
        ".summary.json.partial",
        "pfc.parquet",
    ] {
        std::fs::write(out.join(f), b"left by a killed run").unwrap();
    }
    std::fs::write(out.join("notes.txt"), b"the user's").unwrap();
    let cap = common::shared_capture("connectx4lx-cnp.pcap");
    common::rocescope_ok(&[
        "analyze",
        cap.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        names(&out),
        [
            "events.parquet",
            "flows.parquet",
            "hops.parquet",
            "nics.parquet",
            "notes.txt",
            "packets.parquet",
            "pfc.parquet",
            "summary.json",
            "telemetry.parquet",
            "timeline.parquet",
            "uet_paths.parquet"
        ]
    );
    Table::read(&out.join("pfc.parquet"));
}

fn root() -> bool {
    // SAFETY: no arguments, no failure.
    unsafe { libc::geteuid() == 0 }
}

/// Runs `script` with `sh` in a private mount namespace where `$FULL` is a
/// tmpfs of `size`; returns (status ok, stdout, stderr).
fn in_small_tmpfs(size: &str, script: &str, env: &[(&str, &Path)]) -> (bool, String, String) {
    let mnt = tempfile::tempdir().unwrap();
    let mut cmd = Command::new("unshare");
    cmd.args(["-m", "--propagation", "private", "sh", "-c"])
        .arg(format!(
            "set -u; mount -t tmpfs -o size={size} rocescope-test \"$FULL\" || exit 99; {script}"
        ))
        .env("FULL", mnt.path())
        .env("BIN", BIN);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("unshare runs");
    assert_ne!(out.status.code(), Some(99), "cannot mount a tmpfs");
    // The mount died with its namespace: nothing to unmount.
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn disk_full_is_a_clear_error_and_leaves_complete_files_only() {
    if !root() || Command::new("unshare").arg("--version").output().is_err() {
        eprintln!("SKIPPED: needs root and unshare (a tmpfs in a private mount namespace)");
        return;
    }
    let cap = big_capture();
    let keep = tempfile::tempdir().unwrap();
    // analyze into a 512 KB tmpfs: packets.parquet (~1 MB) cannot fit, the
    // other tables (~15 KB each) do. The directory is copied out before the
    // namespace (and its tmpfs) ends.
    let (ok, _, stderr) = in_small_tmpfs(
        "512k",
        r#"mkdir "$FULL/out"; "$BIN" analyze "$CAP" --out "$FULL/out"; rc=$?; cp -a "$FULL/out" "$KEEP/out"; exit $rc"#,
        &[("CAP", cap), ("KEEP", keep.path())],
    );
    assert!(!ok, "analyze into a full disk succeeded: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(
        lines[0].starts_with("rocescope: error: ")
            && lines[0].contains("/out/")
            && lines[0].contains("cannot write")
            && lines[0].contains("No space left on device")
            && lines[0].contains("free space"),
        "{stderr}"
    );
    let out = keep.path().join("out");
    let left = names(&out);
    assert!(!left.iter().any(|n| n.ends_with(".partial")), "{left:?}");
    assert!(!left.contains(&"summary.json".to_string()), "{left:?}");
    assert!(!left.contains(&"packets.parquet".to_string()), "{left:?}");
    // flows and pfc are completed first (they are small): intact.
    for t in ["flows", "pfc"] {
        assert!(left.contains(&format!("{t}.parquet")), "{t}: {left:?}");
    }
    check_killed_output(&out);
    assert_eq!(Table::read(&out.join("flows.parquet")).rows(), 14);

    // synth into the same small disk: an error, no capture, no partial.
    let (ok, _, stderr) = in_small_tmpfs(
        "1m",
        r#""$BIN" synth ghost-drop --out "$FULL/x.pcapng" --packets 20000; rc=$?; ls -A "$FULL"; exit $rc"#,
        &[],
    );
    assert!(!ok, "synth into a full disk succeeded");
    assert!(
        stderr.contains("x.pcapng") && stderr.contains("No space left on device"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

#[test]
fn synth_leaves_no_partial_file() {
    let tmp = tempfile::tempdir().unwrap();
    let cap = tmp.path().join("h.pcapng");
    common::rocescope_ok(&["synth", "healthy", "--out", cap.to_str().unwrap()]);
    assert_eq!(names(tmp.path()), ["h.pcapng", "h.truth.json"]);
}
