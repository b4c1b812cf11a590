//! Wireshark hand-off and before/after diff (docs/wireshark.md), checked
//! against tshark on the real captures in tests/data/ and the bundled
//! samples in pcaps/:
//!
//! * every flow's `display_filter` (flows.parquet) selects exactly the
//!   flow's frames in tshark — `packets + mirror_copies` of them — and every
//!   finding's (summary.json) the frames of its flows (plus, for
//!   `cnp-without-ce`, the CNPs);
//! * `extract` writes a pcapng tshark reads, with exactly those frames:
//!   the same timestamps, QPs and PSNs as tshark shows in the original with
//!   the filter, on interfaces named as in the tables;
//! * `diff` of ghost-drop and ghost-drop-fixed gives the numbers `report
//!   --json` gives for each sample alone, from captures and from `analyze
//!   --out` directories alike.
use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::Value;

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../pcaps")
        .join(name)
}

/// tshark is part of the test set-up (scripts/setup.sh --test): these
/// tests are about what it shows, so without it they fail.
fn tshark(args: &[&str]) -> String {
    let out = Command::new("tshark")
        .args(args)
        .output()
        .expect("tshark runs (scripts/setup.sh --test installs it)");
    assert!(
        out.status.success(),
        "tshark {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// tshark's `fields` of the frames of `capture` matching `filter` (all
/// frames when empty), one line per frame.
fn tshark_fields(
    capture: &Path,
    decode_as: &[String],
    filter: &str,
    fields: &[&str],
) -> Vec<String> {
    let mut args: Vec<String> = vec!["-r".into(), capture.display().to_string()];
    for d in decode_as {
        args.extend(["-d".into(), d.clone()]);
    }
    if !filter.is_empty() {
        args.extend(["-Y".into(), filter.into()]);
    }
    args.extend(["-T".into(), "fields".into()]);
    for f in fields {
        args.extend(["-e".into(), (*f).into()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    tshark(&args).lines().map(str::to_string).collect()
}

fn count(capture: &Path, decode_as: &[String], filter: &str) -> usize {
    counts(capture, decode_as, &[filter.to_string()])[0]
}

/// `analyze CAPTURE --out DIR EXTRA…`: the directory and its flows table.
fn analyzed(capture: &Path, extra: &[&str]) -> (tempfile::TempDir, Table) {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "analyze",
        capture.to_str().unwrap(),
        "--out",
        dir.path().to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    rocescope_ok(&args);
    let flows = Table::read(&dir.path().join("flows.parquet"));
    (dir, flows)
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// Every capture the filters are checked on: real ones (single interface,
/// one with source port 69, which tshark takes for TFTP without Decode
/// As) and the samples (up to four interfaces).
fn captures() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = Vec::new();
    for dir in [rocescope::testdata::captures_dir(), sample("")] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
            .collect();
        files.sort();
        v.extend(files);
    }
    assert!(v.len() >= 19, "{v:?}");
    v
}

/// Frames matching each of `filters` in `capture`, counted by tshark in
/// one pass (`-z io,stat`, one column per filter; the filters hold no
/// commas, which would split them).
fn counts(capture: &Path, decode_as: &[String], filters: &[String]) -> Vec<usize> {
    assert!(filters.iter().all(|f| !f.contains(',')), "{filters:?}");
    let stat = format!("io,stat,0,{}", filters.join(","));
    let mut args = vec!["-q", "-r", capture.to_str().unwrap(), "-z", &stat];
    for d in decode_as {
        args.extend(["-d", d]);
    }
    let out = tshark(&args);
    // The one interval's line: `|  0.0 <> 21.3 | frames | bytes | …`.
    let Some(line) = out.lines().find(|l| l.contains("<>")) else {
        // A capture of one instant has no interval to print: one pass per
        // filter then.
        return filters
            .iter()
            .map(|f| tshark_fields(capture, decode_as, f, &["frame.number"]).len())
            .collect();
    };
    let cells: Vec<usize> = line
        .split('|')
        .skip(2)
        .filter_map(|c| c.trim().parse().ok())
        .collect();
    let frames: Vec<usize> = cells.iter().step_by(2).copied().collect();
    assert_eq!(frames.len(), filters.len(), "{out}");
    frames
}

#[test]
fn display_filters_show_exactly_each_flows_and_findings_frames() {
    let (mut flows_checked, mut findings_checked) = (0, 0);
    for cap in captures() {
        let (dir, flows) = analyzed(&cap, &[]);
        let packets = flows.ints("packets");
        let copies = flows.ints("mirror_copies");
        let cnps = flows.ints("cnps");
        // (what, filter, frames expected)
        let mut cases: Vec<(String, String, i128)> = Vec::new();
        // A UET PDC's row and findings get UET's filters (`uet.*`,
        // Wireshark 4.7+), which this tshark cannot run: RoCE's are checked.
        let transport = flows.strings("transport");
        let roce = |i: usize| transport[i].as_deref() == Some("roce");
        let mut decode_as: Vec<String> = flows
            .strings("decode_as")
            .into_iter()
            .enumerate()
            .filter(|&(i, _)| roce(i))
            .filter_map(|(_, d)| d)
            .collect();
        decode_as.sort();
        decode_as.dedup();
        // A filter names its interface exactly when tshark sees RoCE or
        // InfiniBand on more than one interface of the file (a collector
        // interface carrying only telemetry reports does not count).
        let interfaces = tshark_fields(&cap, &decode_as, "infiniband", &["frame.interface_id"]);
        let multi = interfaces.iter().any(|i| *i != interfaces[0]);
        for (i, filter) in flows.strings("display_filter").into_iter().enumerate() {
            if !roce(i) {
                continue;
            }
            let filter = filter.unwrap();
            assert_eq!(filter.contains("frame.interface_id"), multi, "{filter}");
            cases.push((
                format!("flow {i}"),
                filter,
                packets[i].unwrap() + copies[i].unwrap(),
            ));
        }
        flows_checked += cases.len();
        let summary: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("summary.json")).unwrap(),
        )
        .unwrap();
        for f in summary["findings"].as_array().unwrap() {
            let id = f["id"].as_str().unwrap();
            if id.starts_with("uet-") {
                continue;
            }
            assert_eq!(f["flows_left_out"], 0, "{id}");
            let ids: Vec<usize> = f["flows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap() as usize)
                .collect();
            let mut expected: i128 = ids
                .iter()
                .map(|&i| packets[i].unwrap() + copies[i].unwrap())
                .sum();
            if id == "cnp-without-ce" {
                expected += if ids.is_empty() {
                    summary["frames"]["cnp"].as_u64().unwrap() as i128
                } else {
                    ids.iter().map(|&i| cnps[i].unwrap()).sum()
                };
            }
            let filter = f["display_filter"].as_str().unwrap().to_string();
            assert!(!filter.is_empty(), "{}: {id} has no filter", cap.display());
            decode_as.extend(strings(&f["decode_as"]));
            cases.push((id.to_string(), filter, expected));
            findings_checked += 1;
        }
        if cases.is_empty() {
            continue;
        }
        decode_as.sort();
        decode_as.dedup();
        let filters: Vec<String> = cases.iter().map(|c| c.1.clone()).collect();
        let got = counts(&cap, &decode_as, &filters);
        for ((what, filter, expected), n) in cases.iter().zip(got) {
            assert_eq!(n as i128, *expected, "{}: {what}: {filter}", cap.display());
        }
    }
    // Every sample and real capture: 60+ flows, a finding of every sample.
    assert!(
        flows_checked >= 60 && findings_checked >= 15,
        "{flows_checked} {findings_checked}"
    );
}

/// Without Decode As for source port 69, tshark shows the frames of the
/// flow from port 69 as TFTP and the filter misses them: the hint matters.
#[test]
fn decode_as_names_a_low_source_port() {
    let cap = shared_capture("oferby-proxy-roce.pcap");
    let (_dir, flows) = analyzed(&cap, &[]);
    let sport = flows.ints("udp_sport");
    let i = sport
        .iter()
        .position(|p| *p == Some(69))
        .expect("a flow from port 69");
    let d = flows.strings("decode_as")[i].clone().unwrap();
    assert_eq!(d, "udp.port==69,infiniband");
    let filter = flows.strings("display_filter")[i].clone().unwrap();
    assert_eq!(count(&cap, &[], &filter), 0);
    assert_eq!(count(&cap, &[d], &filter), 37);
}

/// The frames tshark shows of `capture` with `filter`: time, QP, PSN,
/// opcode, length.
const FRAME_FIELDS: &[&str] = &[
    "frame.time_epoch",
    "infiniband.bth.destqp",
    "infiniband.bth.psn",
    "infiniband.bth.opcode",
    "frame.len",
    "frame.cap_len",
];

/// Extracts `selector` from `capture` and checks the pcapng against the
/// original seen through `filter` in tshark; returns the frame count.
fn check_extract(capture: &Path, selector: &[&str], iface_names: &[&str]) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.pcapng");
    let mut args = vec!["extract", capture.to_str().unwrap()];
    args.extend_from_slice(selector);
    args.extend(["--out", out.to_str().unwrap()]);
    let printed = String::from_utf8(rocescope_ok(&args).stdout).unwrap();
    let filter = printed
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("display filter (for the original captures): ")
        })
        .unwrap_or_else(|| panic!("{printed}"))
        .to_string();
    let decode_as: Vec<String> = printed
        .lines()
        .find_map(|l| l.trim().strip_prefix("decode as: "))
        .unwrap()
        .split_whitespace()
        .filter(|w| *w != "-d")
        .map(str::to_string)
        .collect();
    let original = tshark_fields(capture, &decode_as, &filter, FRAME_FIELDS);
    let extracted = tshark_fields(&out, &decode_as, "", FRAME_FIELDS);
    assert!(!extracted.is_empty(), "{printed}");
    assert_eq!(extracted, original, "{selector:?}: {printed}");
    let frames = match extracted.len() {
        1 => "1 frame of".to_string(),
        n => format!("{n} frames of"),
    };
    assert!(
        printed.starts_with(&format!("{}: {frames}", out.display())),
        "{printed}"
    );
    // The timestamps' resolution too (µs in a classic pcap, ns in the samples).
    let precision = |p: &Path| {
        let out = Command::new("capinfos")
            .arg(p)
            .output()
            .expect("capinfos runs (with tshark)");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find(|l| l.starts_with("File timestamp precision"))
            .map(str::to_string)
    };
    assert_eq!(precision(&out), precision(capture));
    assert!(precision(&out).is_some());
    let names = tshark_fields(&out, &[], "", &["frame.interface_name"]);
    let mut names: Vec<&str> = names.iter().map(String::as_str).collect();
    names.sort();
    names.dedup();
    assert_eq!(names, iface_names, "{printed}");
    extracted.len()
}

#[test]
fn extract_writes_the_frames_wireshark_shows_with_the_filter() {
    // A flow of a real capture (classic pcap: named after its file).
    let cap = shared_capture("softroce-rdma_read_bw.pcap");
    let (_dir, flows) = analyzed(&cap, &[]);
    let packets = flows.ints("packets");
    for (flow, packets) in packets.iter().enumerate() {
        let n = check_extract(
            &cap,
            &["--flow", &flow.to_string()],
            &["softroce-rdma_read_bw"],
        );
        assert_eq!(n as i128, packets.unwrap());
    }
    // The flow from source port 69: its Decode As comes along.
    let cap = shared_capture("oferby-proxy-roce.pcap");
    let total: usize = (0..2)
        .map(|f| check_extract(&cap, &["--flow", &f.to_string()], &["oferby-proxy-roce"]))
        .sum();
    assert_eq!(total, 105);

    // A finding of a sample: its flows on its interface.
    let n = check_extract(
        &sample("ghost-drop.pcapng"),
        &["--finding", "pfc-victims"],
        &["leaf0-s2-both"],
    );
    assert_eq!(n, 4030);
    // A finding over several interfaces of a multi-tap sample.
    let summary: Value = serde_json::from_slice(
        &rocescope_ok(&[
            "report",
            sample("lossy-link.pcapng").to_str().unwrap(),
            "--json",
        ])
        .stdout,
    )
    .unwrap();
    let names: std::collections::BTreeMap<String, String> =
        serde_json::from_value(summary["ifaces"].clone()).unwrap();
    let mut names: Vec<&str> = names.values().map(String::as_str).collect();
    names.sort();
    let n = check_extract(
        &sample("lossy-link.pcapng"),
        &["--finding", "real-loss"],
        &names,
    );
    assert_eq!(n, 3874);
}

/// `extract CAPTURES… SELECTOR`: tshark's FRAME_FIELDS and interface name
/// of each frame written, and the interfaces written (capinfos).
fn extract_frames(captures: &[PathBuf], selector: &[&str]) -> (Vec<String>, Vec<String>, usize) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.pcapng");
    let mut args = vec!["extract"];
    args.extend(captures.iter().map(|c| c.to_str().unwrap()));
    args.extend_from_slice(selector);
    args.extend(["--out", out.to_str().unwrap()]);
    rocescope_ok(&args);
    let decode = ["udp.port==4791,infiniband".to_string()];
    let info = Command::new("capinfos")
        .arg("-I")
        .arg(&out)
        .output()
        .unwrap();
    let interfaces = String::from_utf8_lossy(&info.stdout)
        .lines()
        .filter(|l| l.starts_with("Interface #"))
        .count();
    (
        tshark_fields(&out, &decode, "", FRAME_FIELDS),
        tshark_fields(&out, &[], "", &["frame.interface_name"]),
        interfaces,
    )
}

#[test]
fn extract_reads_several_captures_merged_by_time_as_analyze_does() {
    // A rotation set (editcap -c), named last file first: one tap, the
    // frames of the unsplit capture, in its order, on its interface.
    let cap = sample("ghost-drop.pcapng");
    let dir = tempfile::tempdir().unwrap();
    let parts = dir.path().join("parts");
    let mut set = editcap_split(&cap, 700, "pcapng", &parts);
    assert!(set.len() >= 5, "{set:?}");
    set.reverse();
    let selector = ["--finding", "pfc-victims"];
    let whole = extract_frames(std::slice::from_ref(&cap), &selector);
    assert_eq!((whole.0.len(), whole.2), (4030, 1));
    assert_eq!(extract_frames(&set, &selector), whole);
    // Their directory: the same.
    assert_eq!(
        extract_frames(std::slice::from_ref(&parts), &selector),
        whole
    );

    // Four taps, each a capture of its own (tshark, by interface), named
    // last first: the frames in time order across them, as mergecap
    // merges the same files (frames of one instant at several taps in an
    // order of their own: docs/inputs.md).
    let cap = sample("lossy-link.pcapng");
    let taps = dir.path().join("taps");
    std::fs::create_dir(&taps).unwrap();
    for i in 0..4 {
        let f = taps.join(format!("tap{i}.pcapng"));
        run_tool(
            "tshark",
            &[
                "-r",
                cap.to_str().unwrap(),
                "-Y",
                &format!("frame.interface_id == {i}"),
                "-w",
                f.to_str().unwrap(),
            ],
        );
    }
    let mut files = files_in(&taps);
    let merged = dir.path().join("merged.pcapng");
    let mut args = vec!["-w", merged.to_str().unwrap()];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    run_tool("mergecap", &args);
    files.reverse();
    let selector = ["--finding", "real-loss"];
    let (frames, names, interfaces) = extract_frames(&files, &selector);
    let (want, want_names, _) = extract_frames(&[merged], &selector);
    assert_eq!((frames.len(), interfaces), (3874, 4));
    let time = |f: &String| f.split('\t').next().unwrap().to_string();
    assert_eq!(
        frames.iter().map(time).collect::<Vec<_>>(),
        want.iter().map(time).collect::<Vec<_>>()
    );
    // The same frames, each on its tap (named as a run of several captures
    // names them: tapN/leaf…).
    let on_tap =
        |(f, n): (&String, &String)| (f.clone(), n.split('/').next_back().unwrap().to_string());
    let sorted = |mut v: Vec<(String, String)>| {
        v.sort();
        v
    };
    assert_eq!(
        sorted(frames.iter().zip(&names).map(on_tap).collect()),
        sorted(want.iter().zip(&want_names).map(on_tap).collect())
    );
    assert!(names.iter().all(|n| n.starts_with("tap")), "{names:?}");
}

#[test]
fn extract_names_what_exists_when_asked_for_what_does_not() {
    let cap = sample("ghost-drop.pcapng");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.pcapng");
    let run = |sel: &[&str]| {
        let mut args = vec!["extract", cap.to_str().unwrap()];
        args.extend_from_slice(sel);
        args.extend(["--out", out.to_str().unwrap()]);
        let o = rocescope(&args);
        assert!(!o.status.success());
        String::from_utf8(o.stderr).unwrap()
    };
    let e = run(&["--flow", "7"]);
    assert!(
        e.contains("--flow 7: no such flow; these captures have 2 flows, 0 to 1"),
        "{e}"
    );
    let e = run(&["--finding", "real-loss"]);
    assert!(
        e.contains("--finding \"real-loss\": not diagnosed here; the findings are ghost-retransmissions, pfc-pressure, link-speed, pfc-victims"),
        "{e}"
    );
    let e = run(&[]);
    assert!(e.contains("--finding"), "{e}");
    assert!(!out.exists());
}

fn report_json(capture: &Path) -> Value {
    serde_json::from_slice(
        &rocescope_ok(&[
            "report",
            capture.to_str().unwrap(),
            "--json",
            "--link-speed",
            "400G",
        ])
        .stdout,
    )
    .unwrap()
}

/// The what-if table of docs/synth.md from the two samples: each number is
/// what `report --json` says of that sample alone.
#[test]
fn diff_of_ghost_drop_and_its_fix_is_the_what_if_table() {
    let (b, a) = (
        sample("ghost-drop.pcapng"),
        sample("ghost-drop-fixed.pcapng"),
    );
    let (bs, as_) = (report_json(&b), report_json(&a));
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("diff.html");
    let args = |extra: &[&str]| {
        let mut v = vec![
            "diff",
            b.to_str().unwrap(),
            a.to_str().unwrap(),
            "--link-speed",
            "400G",
        ];
        v.extend_from_slice(extra);
        v.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let json_args = args(&["--json", "--html", html.to_str().unwrap()]);
    let json_args: Vec<&str> = json_args.iter().map(String::as_str).collect();
    let d: Value = serde_json::from_slice(&rocescope_ok(&json_args).stdout).unwrap();
    let row = |key: &str, metric_starts: &str| -> (f64, f64, String) {
        let r = d["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["key"] == key && r["metric"].as_str().unwrap().starts_with(metric_starts))
            .unwrap_or_else(|| panic!("no row {key}: {d}"));
        (
            r["before"].as_f64().unwrap(),
            r["after"].as_f64().unwrap(),
            r["change"].as_str().unwrap().to_string(),
        )
    };
    for key in [
        "retrans_rate",
        "rewinds_timeout",
        "rewinds_timeout_ghost",
        "spurious_retrans",
        "ce",
        "cnps",
    ] {
        let (x, y, _) = row(&format!("totals.{key}"), "");
        assert_eq!(x, bs["totals"][key].as_f64().unwrap(), "{key}");
        assert_eq!(y, as_["totals"][key].as_f64().unwrap(), "{key}");
    }
    // Before: ghost drops, a fifth of the time paused; after: none of it.
    for key in [
        "retrans_rate",
        "rewinds_timeout",
        "rewinds_timeout_ghost",
        "spurious_retrans",
    ] {
        let (x, y, change) = row(&format!("totals.{key}"), "");
        assert!(
            x > 0.0 && y == 0.0 && change == "to zero",
            "{key}: {x} {y} {change}"
        );
    }
    let pause = &bs["pfc"][0];
    assert_eq!(as_["pfc"].as_array().unwrap().len(), 0);
    let (x, y, change) = row("pfc[].fraction", "  share");
    assert_eq!(
        (x, y, change.as_str()),
        (pause["fraction"].as_f64().unwrap(), 0.0, "to zero")
    );
    assert!((0.19..0.21).contains(&x), "{x}");
    let (x, _, _) = row(
        "pfc[].paused_ns",
        "PFC pause time, leaf0-s2-both priority 3",
    );
    assert_eq!(x, pause["paused_ns"].as_f64().unwrap());
    // Goodput: the flows' sum, up after the fix.
    let goodput = |s: &Path| {
        analyzed(s, &["--link-speed", "400G"])
            .1
            .floats("goodput_gbps")
            .into_iter()
            .map(Option::unwrap)
            .sum::<f64>()
    };
    let (x, y, change) = row("flows.goodput_gbps", "");
    // Summed in another order: equal to rounding.
    let close = |p: f64, q: f64| (p - q).abs() <= 1e-9 * q.abs();
    assert!(close(x, goodput(&b)) && close(y, goodput(&a)), "{x} {y}");
    assert!(y > x * 1.2 && change.ends_with("× up"), "{x} {y} {change}");
    // Findings: ghost retransmissions and the pauses are gone.
    let gone: Vec<&str> = d["findings"]["gone"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        gone,
        ["ghost-retransmissions", "pfc-pressure", "pfc-victims"]
    );
    assert_eq!(d["findings"]["new"].as_array().unwrap().len(), 0);

    // The text table and the HTML page say the same.
    let text_args = args(&[]);
    let text_args: Vec<&str> = text_args.iter().map(String::as_str).collect();
    let text = String::from_utf8(rocescope_ok(&text_args).stdout).unwrap();
    let line = |start: &str| {
        text.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no {start:?} in\n{text}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        line("Timeout rewinds"),
        "Timeout rewinds 2 0 to zero",
        "{text}"
    );
    assert!(
        line("Retransmission rate").ends_with("0.0000 % to zero"),
        "{text}"
    );
    assert!(
        text.contains("gone      [critical] ghost-retransmissions:"),
        "{text}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<td>Spurious resends (already ACKed)</td>"),
        "{page}"
    );
    assert!(
        page.contains("gone [critical] <b>ghost-retransmissions</b>"),
        "{page}"
    );

    // From `analyze --out` directories: the same rows.
    let (db, _) = analyzed(&b, &["--link-speed", "400G"]);
    let (da, _) = analyzed(&a, &["--link-speed", "400G"]);
    let from_dirs: Value = serde_json::from_slice(
        &rocescope_ok(&[
            "diff",
            db.path().to_str().unwrap(),
            da.path().to_str().unwrap(),
            "--json",
        ])
        .stdout,
    )
    .unwrap();
    assert_eq!(from_dirs["rows"], d["rows"]);
    assert_eq!(from_dirs["findings"], d["findings"]);
}

#[test]
fn diff_says_what_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let o = rocescope(&[
        "diff",
        dir.path().to_str().unwrap(),
        sample("healthy.pcapng").to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let e = String::from_utf8(o.stderr).unwrap();
    assert!(
        e.contains("summary.json") && e.contains("analyze --out"),
        "{e}"
    );
}

/// Flows of one IP pair share a clause (their QPs OR-ed): on a real
/// capture whose six flows are two hosts' QPs, a finding naming them all
/// shows every frame of them in tshark.
#[test]
fn a_finding_over_many_qps_of_one_host_pair_shows_them_all() {
    use rocescope::analyze::Finding;
    use rocescope::analyze::IfaceOrigin;
    use rocescope::render::wireshark::finding_handoff;
    let cap = shared_capture("softroce-rdma_cm.pcap");
    let out = rocescope::offline::run(
        std::slice::from_ref(&cap),
        &rocescope::offline::Options::default(),
        None,
    )
    .unwrap();
    let flows = &out.analysis.flows;
    let all = Finding {
        id: "all",
        severity: rocescope::analyze::Severity::Info,
        impact: 0.0,
        title: String::new(),
        detail: String::new(),
        recommendation: String::new(),
        flows: flows.iter().map(|f| f.flow_id).collect(),
        wireshark: None,
        params: Default::default(),
    };
    let h = finding_handoff(&all, flows, |_| IfaceOrigin::default());
    assert!(
        h.display_filter.contains(" || infiniband.bth.destqp=="),
        "{}",
        h.display_filter
    );
    let expected: u64 = flows.iter().map(|f| f.packets + f.mirror_copies).sum();
    assert_eq!(
        count(&cap, &h.decode_as, &h.display_filter) as u64,
        expected
    );
    assert_eq!(expected, out.analysis.summary.frames.roce);
}

/// A finding about CNPs takes its CNPs along; one naming no flow takes
/// every CNP (a real capture of a single unattributed CNP).
#[test]
fn extract_of_a_cnp_finding_takes_the_cnps() {
    let n = check_extract(
        &shared_capture("connectx4lx-cnp.pcap"),
        &["--finding", "cnp-without-ce"],
        &["Fake IF, text2pcap"],
    );
    assert_eq!(n, 1);
    let cap = sample("lossy-link.pcapng");
    let summary: Value =
        serde_json::from_slice(&rocescope_ok(&["report", cap.to_str().unwrap(), "--json"]).stdout)
            .unwrap();
    let f = summary["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "cnp-without-ce")
        .unwrap();
    let names: Vec<String> = serde_json::from_value::<std::collections::BTreeMap<String, String>>(
        summary["ifaces"].clone(),
    )
    .unwrap()
    .into_values()
    .collect();
    // The interfaces of its flows only.
    let (_dir, flow_ifaces) = analyzed(&cap, &[]);
    let flow_ifaces = flow_ifaces.strings("iface");
    let mut ifaces: Vec<&str> = f["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            flow_ifaces[i.as_u64().unwrap() as usize]
                .as_deref()
                .unwrap()
        })
        .collect();
    ifaces.sort();
    ifaces.dedup();
    assert!(ifaces.iter().all(|i| names.iter().any(|n| n == i)));
    let n = check_extract(&cap, &["--finding", "cnp-without-ce"], &ifaces);
    assert_eq!(n, 1747);
}
