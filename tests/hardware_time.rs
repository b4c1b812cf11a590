//! ERSPAN III hardware time (`--time`, docs/inputs.md "Hardware time"):
//! frame times come from the switch's timestamps, in their granularity.
//! Ground truth is the model's: synth writes each frame's model time as
//! its capture timestamp and stamps the ERSPAN III header from the same
//! time; tshark reads both back, so the expected values come from neither
//! our decoder nor our analyzer.
use std::path::Path;

use serde_json::Value;

use crate::common::{Table, analyze_into, rocescope_ok, tshark};

/// `synth healthy` mirrored in ERSPAN III with `stamp` options, into `dir`.
fn synth(dir: &Path, name: &str, stamp: &[&str]) -> std::path::PathBuf {
    let cap = dir.join(format!("{name}.pcapng"));
    let mut args = vec![
        "synth",
        "healthy",
        "--packets",
        "300",
        "--out",
        cap.to_str().unwrap(),
    ];
    args.extend_from_slice(stamp);
    rocescope_ok(&args);
    cap
}

/// `analyze CAP OPTIONS`: packets.parquet's (frame, ts_ns) and summary.json.
fn analyze(cap: &Path, out: &Path, options: &[&str]) -> (Vec<(u64, u64)>, Value) {
    analyze_into(cap, out, options);
    let t = Table::read(&out.join("packets.parquet"));
    let frames = t.ints("frame");
    let ts = t.ints("ts_ns");
    let rows = frames
        .iter()
        .zip(&ts)
        .map(|(f, t)| (f.unwrap() as u64, t.unwrap() as u64))
        .collect();
    let summary =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    (rows, summary)
}

/// Per frame number: the model's time (the capture timestamp), and the
/// ERSPAN III timestamp and granularity as Wireshark reads them.
fn model_times(cap: &Path) -> Vec<(u64, u64, u64, u64)> {
    tshark::fields(
        cap,
        &["-Y", "erspan"],
        &[
            "frame.number",
            "frame.time_epoch",
            "erspan.timestamp",
            "erspan.gra",
        ],
    )
    .iter()
    .map(|r| {
        let (s, ns) = r["frame.time_epoch"].split_once('.').unwrap();
        let ns = format!("{ns:0<9}");
        let t = s.parse::<u64>().unwrap() * 1_000_000_000 + ns[..9].parse::<u64>().unwrap();
        (
            tshark::num(&r["frame.number"]),
            t,
            tshark::num(&r["erspan.timestamp"]),
            tshark::num(&r["erspan.gra"]),
        )
    })
    .collect()
}

fn clocks(summary: &Value) -> Vec<&str> {
    summary["input"]["time"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["clock"].as_str().unwrap())
        .collect()
}

#[test]
fn erspan_iii_timestamps_time_the_frames_in_their_granularity() {
    if !tshark::available() {
        eprintln!("skipped: tshark not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // (synth options, units in ns, Wireshark's Gra value, upper bits in the capture)
    let cases: [(&str, &[&str], u64, u64); 3] = [
        ("us100", &["--erspan-granularity", "100us"], 100_000, 0),
        (
            "ns100",
            &["--erspan-granularity", "100ns", "--erspan-upper"],
            100,
            1,
        ),
        (
            "ieee1588",
            &["--erspan-granularity", "ieee1588", "--erspan-upper"],
            1,
            2,
        ),
    ];
    for (name, options, unit, gra) in cases {
        let mut stamp = vec!["--erspan", "iii"];
        stamp.extend_from_slice(options);
        let cap = synth(dir.path(), name, &stamp);
        let model = model_times(&cap);
        assert!(model.len() > 100, "{name}: {} frames", model.len());
        let (rows, summary) = analyze(&cap, &dir.path().join(name), &[]);
        assert!(!rows.is_empty());
        assert_eq!(clocks(&summary), ["erspan"], "{name}");
        assert_eq!(summary["input"]["time"]["choice"], "auto");
        assert_eq!(
            summary["input"]["time"]["files"][0]["capture_time_records"],
            0
        );
        let mut coarser = 0;
        for (frame, ts) in rows {
            let &(_, t, wire, wire_gra) = model.iter().find(|m| m.0 == frame).unwrap();
            assert_eq!(wire_gra, gra, "{name}: frame {frame}");
            // Wireshark's 32-bit word is the model's time in the units (the
            // nanoseconds of the second for IEEE 1588).
            let want_word = if unit == 1 {
                t % 1_000_000_000
            } else {
                (t / unit) & 0xFFFF_FFFF
            };
            assert_eq!(wire, want_word, "{name}: frame {frame}");
            assert_eq!(ts, t / unit * unit, "{name}: frame {frame}");
            coarser += u64::from(ts != t);
        }
        if unit > 1 {
            assert!(
                coarser > 0,
                "{name}: some frame time differs from the capture's"
            );
        }
    }

    // `--time capture` keeps the capture clock on the same capture.
    let cap = dir.path().join("us100.pcapng");
    let model = model_times(&cap);
    let (rows, summary) = analyze(&cap, &dir.path().join("capture"), &["--time", "capture"]);
    assert_eq!(clocks(&summary), ["capture"]);
    for (frame, ts) in rows {
        assert_eq!(ts, model.iter().find(|m| m.0 == frame).unwrap().1);
    }
}

#[test]
fn captures_without_erspan_iii_keep_their_time_and_summary() {
    let dir = tempfile::tempdir().unwrap();
    for (name, options) in [("plain", &[][..]), ("ii", &["--erspan", "ii"][..])] {
        let cap = synth(dir.path(), name, options);
        let (_, summary) = analyze(&cap, &dir.path().join(name), &[]);
        assert!(summary["input"].get("time").is_none(), "{name}");
        // Asked for: the file says its frames kept the capture clock.
        let (_, summary) = analyze(&cap, &dir.path().join("asked"), &["--time", "erspan"]);
        assert_eq!(clocks(&summary), ["erspan"], "{name}");
        let records = summary["input"]["records"].as_u64().unwrap();
        assert_eq!(
            summary["input"]["time"]["files"][0]["capture_time_records"],
            records
        );
    }
}

/// The live tap times records by the same rule: an ERSPAN III capture
/// with the upper bits, replayed into the tap, gives the frame times the
/// offline run gives (the model's, in 100 ns ticks), whatever the time of
/// the replay. (The veth's 1500-byte MTU lets only the smaller frames
/// through: every one that arrives is checked.)
#[cfg(feature = "live")]
#[test]
fn live_times_records_by_erspan_iii_too() {
    use crate::live::{Veth, quiet, usable};
    use std::time::Duration;
    if !usable() || !tshark::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("one.pcap");
    rocescope_ok(&[
        "synth",
        "healthy",
        "--packets",
        "300",
        "--tap",
        "0",
        "--out",
        cap.to_str().unwrap(),
        "--erspan",
        "iii",
        "--erspan-granularity",
        "100ns",
        "--erspan-upper",
    ]);
    let (offline, _) = analyze(&cap, &dir.path().join("offline"), &[]);
    let model = model_times(&cap);
    let mut want: Vec<u64> = offline.iter().map(|r| r.1).collect();
    for (frame, ts) in &offline {
        let t = model.iter().find(|m| m.0 == *frame).unwrap().1;
        assert_eq!(*ts, t / 100 * 100);
    }

    let veth = Veth::new();
    quiet(&veth);
    let out = dir.path().join("live");
    // The replay is now, the model's times are not: by default a switch
    // clock a second off the capture's is not taken; asked for, it is.
    let running = veth.live(&out, &["--time", "erspan"]);
    std::thread::sleep(Duration::from_millis(300));
    let sent = veth
        .rocescope(&["replay", cap.to_str().unwrap(), "--iface", &veth.a])
        .output()
        .unwrap();
    assert!(
        sent.status.success(),
        "{}",
        String::from_utf8_lossy(&sent.stderr)
    );
    std::thread::sleep(Duration::from_millis(1500));
    running.signal(libc::SIGINT);
    let (ok, o, e) = running.wait(Duration::from_secs(30));
    assert!(ok, "live failed: {o}\n{e}");
    let t = Table::read(&out.join("packets.parquet"));
    let got: Vec<u64> = t.ints("ts_ns").iter().map(|v| v.unwrap() as u64).collect();
    assert!(got.len() > 10, "{} records live", got.len());
    for ts in got {
        let at = want.iter().position(|w| *w == ts);
        assert!(at.is_some(), "live time {ts} is no offline frame's");
        want.swap_remove(at.unwrap());
    }
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(clocks(&summary), ["erspan"]);
}
