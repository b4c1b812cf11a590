//! Several captures merged by time and grouped into taps (docs/inputs.md,
//! "Several inputs" and "Taps across files"): a rotation set written by
//! `editcap -c` analyses exactly as the capture it was split from, in
//! pcap and pcapng, with splits inside a PFC pause and inside a rewind;
//! captures that overlap in time stay taps of their own; `--tap` groups
//! files and names what is not among the inputs.
use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Table, editcap_split as split, rocescope, rocescope_ok, run_tool as run};
use serde_json::Value;

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../pcaps/{name}.pcapng"))
}

fn analyze(inputs: &[&Path], out: &Path) -> String {
    let mut args = vec!["analyze".to_string()];
    args.extend(inputs.iter().map(|p| p.display().to_string()));
    args.extend(["--out".to_string(), out.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    String::from_utf8_lossy(&rocescope_ok(&args).stderr).into_owned()
}

fn summary(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// Every table of `a` and `b` is the same, row by row, but for
/// packets.parquet's `file` and per-file `frame`.
fn same_tables(a: &Path, b: &Path) {
    for table in [
        "packets.parquet",
        "flows.parquet",
        "events.parquet",
        "pfc.parquet",
        "timeline.parquet",
        "nics.parquet",
    ] {
        let (ta, tb) = (Table::read(&a.join(table)), Table::read(&b.join(table)));
        let names = ta.column_names();
        assert_eq!(names, tb.column_names(), "{table}");
        assert_eq!(ta.rows(), tb.rows(), "{table}");
        for name in names
            .iter()
            .filter(|n| !matches!(n.as_str(), "file" | "frame"))
        {
            let col = |t: &Table| {
                t.batches
                    .iter()
                    .map(|b| format!("{:?}", b.column_by_name(name).unwrap()))
                    .collect::<Vec<_>>()
                    .concat()
            };
            assert_eq!(col(&ta), col(&tb), "{table}: column {name}");
        }
    }
}

/// The whole capture's pauses and rewinds as frame ranges: (first, last)
/// frame of every pause (PFC frames from its start to its end, one tap)
/// and of every run of retransmitted frames.
/// First and last frame of a stretch of frames.
type Frames = (i128, i128);

fn pauses_and_rewinds(whole: &Path) -> (Vec<Frames>, Vec<Frames>) {
    let p = Table::read(&whole.join("packets.parquet"));
    let (frames, ts, retrans) = (p.ints("frame"), p.ints("ts_ns"), p.bools("retrans"));
    let pfc = Table::read(&whole.join("pfc.parquet"));
    let pauses = pfc
        .ints("start_ns")
        .iter()
        .zip(pfc.ints("end_ns"))
        .map(|(s, e)| {
            let inside: Vec<i128> = frames
                .iter()
                .zip(&ts)
                .filter(|(_, t)| *t >= s && **t <= e)
                .map(|(f, _)| f.unwrap())
                .collect();
            (inside[0], *inside.last().unwrap())
        })
        .collect();
    let mut rewinds: Vec<Frames> = Vec::new();
    for (f, r) in frames.iter().zip(&retrans) {
        let f = f.unwrap();
        if *r != Some(true) {
            continue;
        }
        match rewinds.last_mut() {
            Some(last) if f - last.1 < 20 => last.1 = f,
            _ => rewinds.push((f, f)),
        }
    }
    (pauses, rewinds)
}

/// ghost-drop split every 672 frames cuts the first rewind (frames 670 to
/// 725 are resends) and the second pause (2679 to 2690); pfc-storm split
/// every 1000 frames cuts its storm three times. Both formats; the parts
/// given in reverse order (the merge puts them in time order).
#[test]
fn a_rotation_set_analyses_as_the_capture_it_was_split_from() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("ghost-drop", "pcap", 672, true),
        ("ghost-drop", "pcapng", 672, true),
        ("pfc-storm", "pcapng", 1000, false),
    ];
    for (name, format, n, cuts_a_rewind) in cases {
        let case = dir.path().join(format!("{name}-{format}"));
        std::fs::create_dir_all(&case).unwrap();
        // The unsplit capture in the format of its parts (named as the
        // parts' set is: the tap's name, and so every `iface` value).
        let whole = case.join(format!("{name}.{format}"));
        run(
            "editcap",
            &[
                "-F",
                format,
                sample(name).to_str().unwrap(),
                whole.to_str().unwrap(),
            ],
        );
        let parts = split(&whole, n, format, &case.join("parts"));
        let frames = Table::read(&{
            let out = case.join("whole");
            analyze(&[&whole], &out);
            out.join("packets.parquet")
        })
        .rows();
        assert_eq!(
            parts.len(),
            frames.div_ceil(n),
            "{name} {format}: {parts:?}"
        );
        let (pauses, rewinds) = pauses_and_rewinds(&case.join("whole"));
        let cut = |ranges: &[Frames]| {
            (1..parts.len()).any(|k| {
                let last = (k * n) as i128;
                ranges.iter().any(|&(a, b)| a <= last && last < b)
            })
        };
        assert!(cut(&pauses), "{name}: no split inside a pause {pauses:?}");
        assert_eq!(cut(&rewinds), cuts_a_rewind, "{name}: {rewinds:?}");

        let reversed: Vec<&Path> = parts.iter().rev().map(PathBuf::as_path).collect();
        let stderr = analyze(&reversed, &case.join("split"));
        same_tables(&case.join("whole"), &case.join("split"));

        // Each row keeps its file and its frame number in that file.
        let p = Table::read(&case.join("split/packets.parquet"));
        let whole_frames = Table::read(&case.join("whole/packets.parquet")).ints("frame");
        let names: Vec<String> = parts.iter().map(|p| p.display().to_string()).collect();
        for ((file, frame), whole_frame) in p
            .strings("file")
            .iter()
            .zip(p.ints("frame"))
            .zip(whole_frames)
        {
            let k = names
                .iter()
                .position(|n| Some(n) == file.as_ref())
                .unwrap_or_else(|| panic!("{file:?} is no part"));
            assert_eq!((k * n) as i128 + frame.unwrap(), whole_frame.unwrap());
        }
        // summary.json: the same but for the inputs, which say how the
        // files were grouped.
        let (mut a, mut b) = (summary(&case.join("whole")), summary(&case.join("split")));
        let taps = b["input"]["taps"].clone();
        assert_eq!(
            taps,
            serde_json::json!([{ "name": name, "files": names, "grouped_by": "rotation" }])
        );
        for s in [&mut a, &mut b] {
            let input = s["input"].as_object_mut().unwrap();
            input.remove("captures");
            input.remove("taps");
        }
        assert_eq!(a, b);
        assert!(
            stderr.contains(&format!(
                "{} files read as 1 tap, merged by time: {name} = {} (one after another: a rotation set)",
                parts.len(),
                names.join(" + ")
            )),
            "{stderr}"
        );

        // The report, word for word.
        let report = |inputs: &[&Path]| {
            let mut args = vec!["report"];
            args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
            String::from_utf8_lossy(&rocescope_ok(&args).stdout).into_owned()
        };
        assert_eq!(report(&[&whole]), report(&reversed), "{name} {format}");

        // The first part on standard input, the second zstd-compressed,
        // grouped with --tap under the unsplit pcap's name: the same tables.
        if format == "pcap" {
            let zst = case.join("second.pcap.zst");
            run(
                "zstd",
                &[
                    "-q",
                    "-f",
                    parts[1].to_str().unwrap(),
                    "-o",
                    zst.to_str().unwrap(),
                ],
            );
            let mut rest: Vec<String> = vec![zst.display().to_string()];
            rest.extend(parts[2..].iter().map(|p| p.display().to_string()));
            let out = case.join("piped");
            let mut args = vec!["analyze".to_string(), "-".to_string()];
            args.extend(rest.iter().cloned());
            args.extend([
                "--tap".to_string(),
                format!("{name}=-,{}", rest.join(",")),
                "--out".to_string(),
                out.display().to_string(),
            ]);
            let r = Command::new(env!("CARGO_BIN_EXE_rocescope"))
                .args(&args)
                .stdin(std::fs::File::open(&parts[0]).unwrap())
                .output()
                .unwrap();
            assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
            same_tables(&case.join("whole"), &out);
            let files = Table::read(&out.join("packets.parquet")).strings("file");
            assert_eq!(files[0].as_deref(), Some("<stdin>"));
            assert_eq!(
                files.last().unwrap().as_deref(),
                Some(rest.last().unwrap().as_str())
            );
            assert!(files.iter().any(|f| f.as_deref() == Some(rest[0].as_str())));
        }
    }
}

/// Two captures of the same time are two taps, even with the same
/// interface names; frames of both are merged by time.
#[test]
fn captures_that_overlap_are_taps_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.pcapng");
    let b = dir.path().join("b.pcapng");
    std::fs::copy(sample("ghost-drop"), &a).unwrap();
    std::fs::copy(sample("ghost-drop-fixed"), &b).unwrap();
    let out = dir.path().join("out");
    let stderr = analyze(&[&a, &b], &out);
    assert!(
        stderr.contains(&format!(
            "rocescope: note: 2 files read as 2 taps, merged by time: a = {}; b = {}\n",
            a.display(),
            b.display()
        )),
        "{stderr}"
    );
    let s = summary(&out);
    let taps: Vec<(String, String)> = s["input"]["taps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            assert_eq!(t["files"].as_array().unwrap().len(), 1);
            (
                t["name"].as_str().unwrap().into(),
                t["grouped_by"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        taps,
        [("a".into(), "file".into()), ("b".into(), "file".into())]
    );
    let p = Table::read(&out.join("packets.parquet"));
    let ts = p.ints("ts_ns");
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "rows in time order");
    let mut ifaces: Vec<String> = p.strings("iface").into_iter().flatten().collect();
    ifaces.dedup();
    // Interleaved: the two taps take turns.
    assert!(ifaces.len() > 2, "{:?}", &ifaces[..ifaces.len().min(4)]);
    let mut names = ifaces.clone();
    names.sort();
    names.dedup();
    assert_eq!(names, ["a/leaf0-s2-both", "b/leaf0-s2-both"]);
}

/// `--tap` makes files one tap whatever their times (and warns of the
/// overlap); a file it names must be among the inputs.
#[test]
fn tap_option_groups_files_and_checks_them() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.pcapng");
    let b = dir.path().join("b.pcapng");
    std::fs::copy(sample("ghost-drop"), &a).unwrap();
    std::fs::copy(sample("ghost-drop-fixed"), &b).unwrap();
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let r = rocescope(&[
        "report",
        a,
        "--tap",
        &format!("t={a},{}/c.pcap", dir.path().display()),
    ]);
    assert!(!r.status.success());
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains(&format!(
            "--tap t={a},{0}/c.pcap: {0}/c.pcap is not among the inputs",
            dir.path().display()
        )),
        "{err}"
    );
    let r = rocescope(&["report", a, "--tap", "t"]);
    assert!(!r.status.success());
    assert!(
        String::from_utf8_lossy(&r.stderr)
            .contains("invalid value 't' for '--tap <NAME=FILE,FILE…>'"),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );

    let out = dir.path().join("out");
    let r = rocescope_ok(&[
        "analyze",
        a,
        b,
        "--tap",
        &format!("t={a},{b}"),
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains(&format!("--tap t: {b} starts before {a} ends")),
        "{err}"
    );
    let s = summary(&out);
    assert_eq!(s["input"]["taps"][0]["name"], "t");
    assert_eq!(s["input"]["taps"][0]["grouped_by"], "option");
    assert_eq!(s["input"]["taps"].as_array().unwrap().len(), 1);
    let mut names: Vec<String> = Table::read(&out.join("packets.parquet"))
        .strings("iface")
        .into_iter()
        .flatten()
        .collect();
    names.sort();
    names.dedup();
    assert_eq!(names, ["t"]);
}

/// A file named as part of a rotation set that overlaps the set's file
/// before it is a tap of its own, with a warning, and summary.json says
/// which set it overlaps.
#[test]
fn a_file_of_a_set_that_overlaps_it_is_a_tap_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let parts = split(&sample("ghost-drop"), 2000, "pcapng", &dir.path().join("x"));
    assert_eq!(parts.len(), 3);
    // ghost-drop-fixed starts at the same instant as ghost-drop's first part.
    let odd = dir.path().join("x/ghost-drop_00003_20260101000000.pcapng");
    std::fs::copy(sample("ghost-drop-fixed"), &odd).unwrap();
    let out = dir.path().join("out");
    let stderr = analyze(&[&dir.path().join("x")], &out);
    assert!(
        stderr.contains(&format!(
            "{}: looks like a file of the rotation set ghost-drop but starts before {} ends: read as a tap of its own",
            odd.display(),
            parts[0].display()
        )),
        "{stderr}"
    );
    let s = summary(&out);
    let taps = s["input"]["taps"].as_array().unwrap();
    assert_eq!(taps.len(), 2, "{taps:?}");
    assert_eq!(taps[0]["files"].as_array().unwrap().len(), 3);
    assert_eq!(taps[0]["grouped_by"], "rotation");
    assert_eq!(
        taps[1]["files"],
        serde_json::json!([odd.display().to_string()])
    );
    assert_eq!(taps[1]["overlaps_set"], "ghost-drop");
    assert!(s["input"]["warnings"].as_array().unwrap().iter().any(|w| {
        w.as_str()
            .unwrap()
            .contains("looks like a file of the rotation set")
    }));
}
