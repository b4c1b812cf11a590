//! The NIC's clock in an RDMA sniffer capture's source MACs (`--time
//! sniffer`, docs/inputs.md "Hardware time"). The project holds no real
//! sniffer capture (tests/data/README.md), so synth writes one as the real
//! ones were seen: the NIC's nanosecond clock in every RoCE frame's source
//! MAC, the capture host's microseconds as the timestamp. The expected
//! values come from tshark (eth.src, frame.time_epoch) and from the same
//! run written without the sniffer (the model's nanosecond times as the
//! timestamps), not from our decoder.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{Table, analyze_into, rocescope_ok, tshark};

fn synth(dir: &Path, name: &str, scenario: &[&str]) -> PathBuf {
    let cap = dir.join(format!("{name}.pcapng"));
    let mut args = vec!["synth"];
    args.extend_from_slice(scenario);
    args.extend_from_slice(&["--out", cap.to_str().unwrap()]);
    rocescope_ok(&args);
    cap
}

/// `analyze CAP OPTIONS` into `out`: summary.json.
fn analyze(cap: &Path, out: &Path, options: &[&str]) -> Value {
    analyze_into(cap, out, options);
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

/// packets.parquet: frame number → ts_ns.
fn frame_times(out: &Path) -> BTreeMap<u64, u64> {
    let t = Table::read(&out.join("packets.parquet"));
    t.ints("frame")
        .iter()
        .zip(t.ints("ts_ns"))
        .map(|(f, ts)| (f.unwrap() as u64, ts.unwrap() as u64))
        .collect()
}

fn epoch_ns(s: &str) -> u64 {
    let (sec, frac) = s.split_once('.').unwrap();
    let frac = format!("{frac:0<9}");
    sec.parse::<u64>().unwrap() * 1_000_000_000 + frac[..9].parse::<u64>().unwrap()
}

/// What tshark reads of each frame: number, interface, capture time, the
/// source MAC as a number, and whether it is RoCE (has a BTH opcode).
struct Seen {
    iface: u64,
    capture: u64,
    mac: u64,
    roce: bool,
}

fn seen(cap: &Path) -> BTreeMap<u64, Seen> {
    tshark::fields(
        cap,
        &[],
        &[
            "frame.number",
            "frame.interface_id",
            "frame.time_epoch",
            "eth.src",
            "infiniband.bth.opcode",
        ],
    )
    .iter()
    .map(|r| {
        let mac = u64::from_str_radix(&r["eth.src"].replace(':', ""), 16).unwrap();
        (
            tshark::num(&r["frame.number"]),
            Seen {
                iface: tshark::num(&r["frame.interface_id"]),
                capture: epoch_ns(&r["frame.time_epoch"]),
                mac,
                roce: r.contains_key("infiniband.bth.opcode"),
            },
        )
    })
    .collect()
}

fn file_time(summary: &Value) -> &Value {
    &summary["input"]["time"]["files"][0]
}

#[test]
fn sniffer_macs_time_the_frames_to_the_nanosecond() {
    if !tshark::available() {
        eprintln!("skipped: tshark not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scenario = ["pfc-storm", "--duration", "2ms"];
    let sniffed = synth(
        dir.path(),
        "sniffed",
        &[&scenario[..], &["--sniffer=128"]].concat(),
    );
    let plain = synth(dir.path(), "plain", &scenario);
    let wire = seen(&sniffed);
    let model = seen(&plain);
    assert_eq!(wire.len(), model.len());
    let roce = wire.values().filter(|s| s.roce).count();
    let other = wire.len() - roce;
    assert!(
        roce > 100 && other > 10,
        "{roce} RoCE, {other} other frames"
    );

    // By default the file's MACs are taken as the clock; the PFC frames
    // (their MAC is the port's) keep the capture time, counted.
    let summary = analyze(&sniffed, &dir.path().join("auto"), &[]);
    assert_eq!(summary["input"]["time"]["choice"], "auto");
    assert_eq!(file_time(&summary)["clock"], "sniffer");
    assert_eq!(file_time(&summary)["capture_time_records"], other as u64);
    let times = frame_times(&dir.path().join("auto"));
    assert_eq!(times.len(), wire.len());
    // Per interface (a NIC each): a frame's time is its MAC plus one
    // offset, and the model's time less one constant under 1 µs (the
    // capture's microseconds anchor the NIC clock).
    let mut offsets: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    let mut finer = 0;
    for (frame, s) in &wire {
        let ts = times[frame];
        if !s.roce {
            assert_eq!(ts, s.capture, "frame {frame}");
            continue;
        }
        let m = model[frame].capture;
        let (off, lag) = *offsets.entry(s.iface).or_insert((ts - s.mac, m - ts));
        assert_eq!(ts - s.mac, off, "frame {frame}");
        assert_eq!(m - ts, lag, "frame {frame}");
        assert!(lag < 1000 && ts <= s.capture && s.capture - ts < 1000);
        finer += u64::from(ts != s.capture);
    }
    assert_eq!(offsets.len(), 2);
    assert!(finer > 0, "the NIC clock is finer than the capture's");

    // `--time capture`: the capture's microseconds.
    let summary = analyze(
        &sniffed,
        &dir.path().join("capture"),
        &["--time", "capture"],
    );
    assert_eq!(file_time(&summary)["clock"], "capture");
    for (frame, ts) in frame_times(&dir.path().join("capture")) {
        assert_eq!(ts, wire[&frame].capture);
    }
}

/// Rewind idle times on the NIC's clock are the model's to the
/// nanosecond; on the capture's, microseconds.
#[test]
fn rewind_idle_times_use_the_nics_clock() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = ["lossy-link", "--duration", "1ms"];
    let sniffed = synth(
        dir.path(),
        "sniffed",
        &[&scenario[..], &["--sniffer=128"]].concat(),
    );
    let plain = synth(dir.path(), "plain", &scenario);
    let idle = |cap: &Path, name: &str, options: &[&str]| {
        let out = dir.path().join(name);
        analyze(cap, &out, options);
        let t = Table::read(&out.join("events.parquet"));
        t.strings("kind")
            .into_iter()
            .zip(t.floats("idle_us"))
            .filter(|(k, _)| k.as_deref() == Some("rewind"))
            .map(|(_, i)| i.unwrap())
            .collect::<Vec<f64>>()
    };
    let model = idle(&plain, "plain", &[]);
    let nic = idle(&sniffed, "nic", &[]);
    let capture = idle(&sniffed, "capture", &["--time", "capture"]);
    assert!(model.len() > 5, "{} rewinds", model.len());
    assert_eq!(nic, model);
    assert_eq!(capture.len(), model.len());
    assert!(capture.iter().all(|i| i.fract() == 0.0), "{capture:?}");
    assert_ne!(capture, model);
}

#[test]
fn macs_that_are_no_clock_keep_the_capture_time_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let plain = synth(dir.path(), "plain", &["healthy", "--packets", "300"]);
    // By default nothing is said: the outputs are what they were.
    let summary = analyze(&plain, &dir.path().join("auto"), &[]);
    assert!(summary["input"].get("time").is_none());
    // Asked for: the capture clock, and why.
    let summary = analyze(&plain, &dir.path().join("asked"), &["--time", "sniffer"]);
    assert_eq!(summary["input"]["time"]["choice"], "sniffer");
    assert_eq!(file_time(&summary)["clock"], "capture");
    let reason = file_time(&summary)["reason"].as_str().unwrap();
    assert!(reason.contains("repeats"), "{reason}");
    // A sniffer capture asked for the capture clock is surveyed not at all.
    let sniffed = synth(
        dir.path(),
        "sniffed",
        &["healthy", "--packets", "300", "--sniffer"],
    );
    let summary = analyze(&sniffed, &dir.path().join("cap"), &["--time", "capture"]);
    assert_eq!(file_time(&summary)["clock"], "capture");
    assert!(file_time(&summary).get("reason").is_none());
}

/// The real captures (tests/data: host and mirror captures, none a
/// sniffer's) are refused as clocks, and rightly: tshark shows a direction
/// whose source MAC repeats in each that has two RoCE frames of one
/// direction.
#[test]
fn real_captures_hold_no_mac_clock() {
    if !tshark::available() {
        eprintln!("skipped: tshark not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(rocescope::testdata::captures_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
        .collect();
    files.sort();
    assert!(files.len() >= 10);
    for (i, cap) in files.iter().enumerate() {
        let rows = tshark::fields(cap, &["-Y", "infiniband"], &["ip.src", "ip.dst", "eth.src"]);
        let mut last: BTreeMap<(String, String), String> = BTreeMap::new();
        let repeats = rows.iter().any(|r| {
            let key = (r["ip.src"].clone(), r["ip.dst"].clone());
            last.insert(key, r["eth.src"].clone()).as_ref() == Some(&r["eth.src"])
        });
        let summary = analyze(cap, &dir.path().join(i.to_string()), &["--time", "sniffer"]);
        let f = file_time(&summary);
        assert_eq!(f["clock"], "capture", "{}", cap.display());
        let reason = f["reason"].as_str().unwrap();
        if repeats {
            assert!(reason.contains("repeats"), "{}: {reason}", cap.display());
        } else {
            assert!(
                reason.contains("no two RoCE frames"),
                "{}: {reason}",
                cap.display()
            );
        }
    }
}
