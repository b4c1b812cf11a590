//! The soak test's short version: `scripts/soak.sh` for 75 s (docs/live.md,
//! "Soak") with the test build's `rocescope` and `flowgen`: QPs that keep
//! starting and retiring, RSS and open files flat after the warm-up,
//! frames = records + drops, the findings stream and `/metrics` agreeing
//! with the tables. The 30-minute run's figures are in docs/live.md.
use crate::live::usable;

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn a_short_soak_stays_flat_and_its_outputs_agree() {
    if !usable() {
        return;
    }
    let bin = Path::new(env!("CARGO_BIN_EXE_rocescope"));
    // `cargo test` builds the examples beside the binary.
    let flowgen = bin.parent().unwrap().join("examples/flowgen");
    assert!(
        flowgen.exists(),
        "{} is missing: cargo build -p rocescope --example flowgen",
        flowgen.display()
    );
    let out = Command::new(repo().join("scripts/soak.sh"))
        .args(["75", "200"])
        .env("ROCESCOPE", bin)
        .env("FLOWGEN", &flowgen)
        .env("SOAK_INTERVAL", "5")
        .env("SOAK_WARMUP", "40")
        // Files complete every 15 s: the writers' buffers reach their
        // steady size within the warm-up (at 10m, as in the 30-minute run,
        // their first row groups fill for longer than this run lasts).
        .env("SOAK_ROTATE", "15s")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    assert!(out.status.success(), "soak failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("soak: ok"), "{stdout}");
    // Findings started and ended on the way (the ghost-drop passes).
    let line = stdout
        .lines()
        .find(|l| l.contains("findings lines"))
        .unwrap();
    assert!(line.contains("'start'") && line.contains("'end'"), "{line}");
}
