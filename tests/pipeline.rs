//! The pipelined layout (reader, analyzer, writer and encoder on threads of
//! their own, and with several taps the cross-tap matcher too) writes the
//! same tables as everything on one thread.
use crate::common;

use common::{Table, rocescope_ok};

const TABLES: [&str; 6] = ["packets", "flows", "events", "pfc", "timeline", "hops"];

#[test]
fn threaded_tables_equal_single_threaded_ones() {
    let dir = tempfile::tempdir().unwrap();
    let cap = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    // Big enough for many record batches and several Parquet batches;
    // two files so interface naming crosses batches too.
    let (a, b) = (cap("a.pcapng"), cap("b.pcap"));
    rocescope_ok(&[
        "synth",
        "ghost-drop",
        "--out",
        &a,
        "--packets",
        "120000",
        "--snaplen",
        "128",
        "--duration",
        "10s",
        "--ecn-min",
        "40KB",
        "--ecn-max",
        "300KB",
        "--ecn-pmax",
        "0.2",
    ]);
    rocescope_ok(&["synth", "lossy-link", "--out", &b, "--tap", "0"]);
    let (one, many) = (cap("one"), cap("many"));
    rocescope_ok(&["analyze", &a, &b, "--out", &one, "--threads", "1"]);
    rocescope_ok(&["analyze", &a, &b, "--out", &many]);
    for t in TABLES {
        let file = format!("{t}.parquet");
        let x = Table::read(&dir.path().join("one").join(&file));
        let y = Table::read(&dir.path().join("many").join(&file));
        assert!(x.rows() > 0 || t == "pfc", "{t}: no rows");
        assert_eq!(x.rows(), y.rows(), "{t}: row counts");
        assert_eq!(x.batches, y.batches, "{t}: contents");
    }
    let summary = |d: &str| -> serde_json::Value {
        serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(d).join("summary.json")).unwrap(),
        )
        .unwrap()
    };
    assert_eq!(summary("one"), summary("many"));
}
