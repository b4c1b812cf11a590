//! Captures as users have them, end to end through the binary: compressed
//! (gzip, zstd, lz4), piped on standard input, directories of them, a stray
//! non-capture among them, and captures of the raw-IP and BSD loopback
//! link types. Each must give what the plain Ethernet file gives.
use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{Table, rocescope, rocescope_ok};
use rocescope::sources::CaptureReader;
use rocescope::synth::capture_writer::{CaptureWrite, PcapngWriter};
use rocescope::synth::frame::{IpAddrs, RoceFrame, WireFrame};

/// A bundled capture with findings and two named interfaces.
fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../pcaps/ghost-drop.pcapng")
}

/// `rocescope analyze INPUT --out OUT`.
fn analyze(input: &Path, out: &Path) -> Output {
    rocescope(&[
        "analyze",
        input.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
}

/// Requires success, showing stderr otherwise.
fn ok(o: Output) -> Output {
    assert!(o.status.success(), "{}", stderr(&o));
    o
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `rocescope ARGS` with `input` written to its standard input in small
/// pieces, a little at a time (as `tcpdump -w - |` delivers a capture).
fn rocescope_piped(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rocescope starts");
    let mut stdin = child.stdin.take().expect("a pipe");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        for (i, piece) in input.chunks(7919).enumerate() {
            if stdin.write_all(piece).is_err() {
                break;
            }
            if i % 16 == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    });
    let out = child.wait_with_output().expect("rocescope ends");
    writer.join().expect("the writer ends");
    out
}

/// Frames in a capture.
fn frames(path: &Path) -> u64 {
    let mut r = CaptureReader::open(path).unwrap();
    let mut n = 0u64;
    while r.next_frame().unwrap().is_some() {
        n += 1;
    }
    n
}

fn compress(codec: &str, plain: &[u8]) -> Vec<u8> {
    match codec {
        "gz" => {
            let mut g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            g.write_all(plain).unwrap();
            g.finish().unwrap()
        }
        "zst" => zstd::encode_all(plain, 3).unwrap(),
        "lz4" => {
            let mut l = lz4_flex::frame::FrameEncoder::new(Vec::new());
            l.write_all(plain).unwrap();
            l.finish().unwrap()
        }
        _ => unreachable!("{codec}"),
    }
}

/// `report --json` and the tables of `analyze`: what must agree.
fn outcome(args_before: &[&str], input: Option<&[u8]>, dir: &Path) -> (String, Vec<Vec<u8>>) {
    let run = |args: Vec<&str>| match input {
        Some(bytes) => rocescope_piped(&args, bytes),
        None => rocescope(&args),
    };
    let mut report = vec!["report", "--json"];
    report.extend_from_slice(args_before);
    let r = run(report);
    assert!(r.status.success(), "{args_before:?}: {}", stderr(&r));
    let out = dir.join("out");
    let mut analyze = vec!["analyze"];
    analyze.extend_from_slice(args_before);
    analyze.extend(["--out", out.to_str().unwrap()]);
    let a = run(analyze);
    assert!(a.status.success(), "{args_before:?}: {}", stderr(&a));
    // packets.parquet's `file` names the input: the rest must agree.
    let packets = Table::read(&out.join("packets.parquet"));
    let name = match input {
        Some(_) => "<stdin>".to_string(),
        None => args_before[0].to_string(),
    };
    assert!(
        packets
            .strings("file")
            .iter()
            .all(|f| f.as_deref() == Some(&name)),
        "{name}"
    );
    let mut tables = vec![format!("{:?}", columns_but(&packets, &["file"])).into_bytes()];
    tables.extend(
        ["flows", "events", "pfc", "timeline"]
            .iter()
            .map(|t| std::fs::read(out.join(format!("{t}.parquet"))).unwrap()),
    );
    (stdout(&r), tables)
}

#[test]
fn compressed_and_piped_captures_agree_with_the_plain_file() {
    let dir = tempfile::tempdir().unwrap();
    let plain_path = sample();
    let plain = std::fs::read(&plain_path).unwrap();
    let want = outcome(&[plain_path.to_str().unwrap()], None, dir.path());
    assert!(want.0.contains("\"findings\""), "{}", want.0);

    // Standard input, streamed.
    assert_eq!(outcome(&["-"], Some(&plain), dir.path()), want, "stdin");

    for codec in ["gz", "zst", "lz4"] {
        let c = compress(codec, &plain);
        let file = dir.path().join(format!("ghost-drop.pcapng.{codec}"));
        std::fs::write(&file, &c).unwrap();
        assert_eq!(
            outcome(&[file.to_str().unwrap()], None, dir.path()),
            want,
            "{codec} file"
        );
        assert_eq!(
            outcome(&["-"], Some(&c), dir.path()),
            want,
            "{codec} on stdin"
        );
    }
}

/// The command-line tools, as users run them: `zstd -dc x.zst | rocescope
/// report -` and `rocescope report x.zst` print what the plain file gives.
#[test]
fn the_compression_tools_output_reads_as_the_plain_file() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample();
    let want = rocescope_ok(&["report", plain.to_str().unwrap()]);
    let bin = env!("CARGO_BIN_EXE_rocescope");
    for (tool, compress, decompress) in [
        ("zstd", "zstd -q -c", "zstd -dc"),
        ("gzip", "gzip -c", "gzip -dc"),
        ("lz4", "lz4 -q -c", "lz4 -dc"),
    ] {
        let has = Command::new(tool).arg("--version").output();
        assert!(
            has.is_ok_and(|o| o.status.success()),
            "the {tool} command is missing: scripts/setup.sh --test installs it"
        );
        let file = dir.path().join(format!("x.pcapng.{tool}"));
        let sh = |script: String| {
            Command::new("sh")
                .args(["-c", &script])
                .output()
                .expect("sh runs")
        };
        let made = sh(format!(
            "{compress} '{}' > '{}'",
            plain.display(),
            file.display()
        ));
        assert!(made.status.success(), "{tool}: {}", stderr(&made));
        let piped = sh(format!(
            "{decompress} '{}' | '{bin}' report -",
            file.display()
        ));
        assert!(piped.status.success(), "{tool}: {}", stderr(&piped));
        assert_eq!(stdout(&piped), stdout(&want), "{decompress} | report -");
        let direct = rocescope_ok(&["report", file.to_str().unwrap()]);
        assert_eq!(stdout(&direct), stdout(&want), "report x.{tool}");
    }
}

#[test]
fn a_cut_compressed_capture_is_analysed_up_to_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let plain = std::fs::read(sample()).unwrap();
    let gz = compress("gz", &plain);
    let file = dir.path().join("cut.pcapng.gz");
    std::fs::write(&file, &gz[..gz.len() / 2]).unwrap();
    let out = dir.path().join("out");
    let r = ok(analyze(&file, &out));
    let err = stderr(&r);
    assert!(
        err.contains("cut.pcapng.gz: at byte ")
            && err.contains("of the gzip-decompressed data: the capture ends inside a block")
            && err.contains("the gzip-compressed data ends mid-stream after"),
        "{err}"
    );
    let rows = Table::read(&out.join("packets.parquet")).rows();
    let all = frames(&sample());
    assert!(rows > 100 && (rows as u64) < all, "{rows} of {all} rows");

    // Damaged compressed data (here the gzip trailer's CRC, checked once
    // all is decompressed): an error naming the file and the codec, the
    // tables holding what came before.
    let mut damaged = gz.clone();
    let crc = damaged.len() - 8;
    damaged[crc] ^= 0xA5;
    let file = dir.path().join("damaged.pcapng.gz");
    std::fs::write(&file, &damaged).unwrap();
    let r = analyze(&file, &out);
    assert!(!r.status.success());
    let err = stderr(&r);
    assert!(
        err.contains("damaged.pcapng.gz: read error at byte ")
            && err.contains("the gzip data is damaged at about compressed byte"),
        "{err}"
    );
}

/// A directory: its captures recursively, in name order, by magic (any
/// name, compressed or not); the rest skipped with one note.
#[test]
fn a_directory_means_its_captures() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("caps");
    std::fs::create_dir_all(root.join("b")).unwrap();
    std::fs::create_dir_all(root.join("notes")).unwrap();
    let ghost = std::fs::read(sample()).unwrap();
    let healthy =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../pcaps/healthy.pcapng"))
            .unwrap();
    std::fs::write(root.join("a.pcapng.zst"), compress("zst", &ghost)).unwrap();
    std::fs::write(root.join("b/tap2.bin"), &healthy).unwrap();
    std::fs::write(root.join("README.md"), "# captures of Tuesday\n").unwrap();
    std::fs::write(root.join("notes/x.txt"), "nothing here").unwrap();
    std::fs::write(root.join("zero.pcap"), b"").unwrap();
    let out = dir.path().join("out");
    let r = ok(analyze(&root, &out));
    let err = stderr(&r);
    let notes: Vec<&str> = err.lines().filter(|l| l.contains("not captures")).collect();
    assert_eq!(
        notes,
        [format!(
            "rocescope: note: {}: skipped 3 files that are not captures: README.md, notes/x.txt, zero.pcap",
            root.display()
        )],
        "{err}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let captures: Vec<String> = summary["input"]["captures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    let name = |rel: &str| root.join(rel).display().to_string();
    assert_eq!(captures, [name("a.pcapng.zst"), name("b/tap2.bin")]);
    let want = frames(&sample()) + frames(&root.join("b/tap2.bin"));
    assert_eq!(summary["input"]["frames_read"], want);
    // Interfaces named after their file (the stem without extensions) and
    // pcapng interface, as for files given one by one.
    let ifaces = Table::read(&out.join("packets.parquet")).strings("iface");
    let mut names: Vec<String> = ifaces.into_iter().flatten().collect();
    names.sort();
    names.dedup();
    assert_eq!(
        names,
        [
            "a/leaf0-s2-both",
            "tap2/leaf0-s0-both",
            "tap2/leaf1-r0-both"
        ]
    );

    // A directory without captures, alone: an error saying so.
    let r = rocescope(&["report", root.join("notes").to_str().unwrap()]);
    assert!(!r.status.success());
    assert!(
        stderr(&r).contains("holds no capture file"),
        "{}",
        stderr(&r)
    );
}

/// Among several inputs a file that is no capture is a warning and the
/// run goes on; alone, it is the error it always was.
#[test]
fn a_non_capture_among_captures_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let readme = dir.path().join("README");
    std::fs::write(&readme, "see the wiki\n").unwrap();
    let cap = sample();
    let want = rocescope_ok(&["report", cap.to_str().unwrap()]);
    let r = rocescope_ok(&["report", cap.to_str().unwrap(), readme.to_str().unwrap()]);
    assert_eq!(stdout(&r), stdout(&want));
    let warnings: Vec<String> = stderr(&r)
        .lines()
        .filter(|l| l.starts_with("rocescope: warning: "))
        .map(String::from)
        .collect();
    assert_eq!(warnings.len(), 1, "{}", stderr(&r));
    assert!(
        warnings[0].contains(&format!(
            "{}: not a pcap or pcapng capture",
            readme.display()
        )) && warnings[0].contains("skipped it"),
        "{warnings:?}"
    );
    let r = rocescope(&["report", readme.to_str().unwrap()]);
    assert!(!r.status.success());
    let r = rocescope(&["report", "-", "-"]);
    assert!(!r.status.success());
    assert!(stderr(&r).contains("given twice"), "{}", stderr(&r));
}

// ---- raw IP and BSD loopback ----

const RAW: u16 = 101;
/// DLT_RAW's values as some tools write them (most systems, OpenBSD).
const RAW_DLT: u16 = 12;
const RAW_OPENBSD: u16 = 14;
const IPV4: u16 = 228;
const IPV6: u16 = 229;
const NULL: u16 = 0;
const LOOP: u16 = 108;

/// `cap` rewritten with every interface's link type replaced by
/// `linktype`: the Ethernet header stripped and `prefix(frame)` put before
/// the IP packet. Interface names are kept.
fn rewrite(cap: &Path, to: &Path, linktype: u16, prefix: fn(&[u8]) -> Vec<u8>) -> usize {
    let mut r = CaptureReader::open(cap).unwrap();
    let mut w = PcapngWriter::create(to).unwrap();
    let mut ids = Vec::new();
    let mut n = 0;
    while let Some(f) = r.next_frame().unwrap() {
        let (iface, ts_ns, orig_len, frame) =
            (f.iface as usize, f.ts_ns, f.orig_len, f.data.to_vec());
        while ids.len() <= iface {
            let name = r.interfaces()[ids.len()].name.clone().unwrap();
            ids.push(w.add_interface(&name, linktype, 0).unwrap());
        }
        assert_eq!(&frame[12..14], &[0x08, 0x00], "an untagged IPv4 frame");
        let mut data = prefix(&frame[14..]);
        data.extend_from_slice(&frame[14..]);
        let orig_len = orig_len - 14 + data.len() as u32 - (frame.len() as u32 - 14);
        w.write_frame_orig(ids[iface], ts_ns, &data, orig_len)
            .unwrap();
        n += 1;
    }
    w.finish().unwrap();
    n
}

/// The columns that must not change with the link layer: everything but
/// the MACs and the lengths.
fn link_independent(t: &Table) -> Vec<(String, Vec<arrow_array::ArrayRef>)> {
    columns_but(t, &["src_mac", "dst_mac", "frame_len", "cap_len", "file"])
}

/// Every column of `t` but those `left_out`.
fn columns_but(t: &Table, left_out: &[&str]) -> Vec<(String, Vec<arrow_array::ArrayRef>)> {
    t.column_names()
        .into_iter()
        .filter(|c| !left_out.contains(&c.as_str()))
        .map(|c| {
            let data = t
                .batches
                .iter()
                .map(|b| b.column_by_name(&c).unwrap().clone())
                .collect();
            (c, data)
        })
        .collect()
}

fn analyze_to(cap: &Path, out: &Path) -> Table {
    ok(analyze(cap, out));
    Table::read(&out.join("packets.parquet"))
}

#[test]
fn raw_ip_and_loopback_captures_give_the_ethernet_rows() {
    let dir = tempfile::tempdir().unwrap();
    // Every frame of it is IPv4 over untagged Ethernet.
    let eth = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pcaps/healthy.pcapng");
    let want = analyze_to(&eth, &dir.path().join("eth"));
    let rows = want.rows();
    assert!(rows > 1000, "{rows}");
    let want_cols = link_independent(&want);
    assert!(want.strings("src_mac").iter().all(Option::is_some));
    let frame_len = want.ints("frame_len");
    type Prefix = fn(&[u8]) -> Vec<u8>;
    let cases: [(&str, u16, Prefix, i128); 7] = [
        ("raw", RAW, |_| Vec::new(), 14),
        ("raw-12", RAW_DLT, |_| Vec::new(), 14),
        ("raw-14", RAW_OPENBSD, |_| Vec::new(), 14),
        ("ipv4", IPV4, |_| Vec::new(), 14),
        ("null-le", NULL, |_| 2u32.to_le_bytes().to_vec(), 10),
        ("null-be", NULL, |_| 2u32.to_be_bytes().to_vec(), 10),
        ("loop", LOOP, |_| 2u32.to_be_bytes().to_vec(), 10),
    ];
    for (name, linktype, prefix, shorter) in cases {
        let cap = dir.path().join(format!("{name}.pcapng"));
        assert_eq!(rewrite(&eth, &cap, linktype, prefix), rows);
        let got = analyze_to(&cap, &dir.path().join(name));
        assert_eq!(got.rows(), rows, "{name}");
        assert_eq!(link_independent(&got), want_cols, "{name}");
        // No Ethernet header: no MACs (null, not 00:00:00:00:00:00).
        assert!(got.strings("src_mac").iter().all(Option::is_none), "{name}");
        assert!(got.strings("dst_mac").iter().all(Option::is_none), "{name}");
        let lens: Vec<_> = frame_len.iter().map(|l| l.map(|l| l - shorter)).collect();
        assert_eq!(got.ints("frame_len"), lens, "{name}");
        // tshark reads these link types too: the same addresses and PSNs.
        assert_eq!(
            tshark_fields(&cap, &["ip.src", "ip.dst", "infiniband.bth.psn"]),
            columns(&got, &["src_ip", "dst_ip", "psn"]),
            "{name}"
        );
    }
}

/// IPv6 RoCE under link type 229 and raw IP (101), and tshark's reading
/// of the raw-IP file field by field.
#[test]
fn raw_ipv6_and_tshark_parity() {
    let dir = tempfile::tempdir().unwrap();
    let mut frames = Vec::new();
    for psn in 0..6u32 {
        let mut f = RoceFrame::default();
        f.ip.addrs = IpAddrs::V6 {
            src: "fd00::11".parse().unwrap(),
            dst: "fd00::22".parse().unwrap(),
        };
        f.bth.opcode = 0x0A;
        f.bth.dest_qp = 0x1234;
        f.bth.psn = 100 + psn;
        f.ext.reth_len = 256;
        f.payload_len = 256;
        let mut v = Vec::new();
        f.write(&mut v);
        frames.push(v);
    }
    let write = |name: &str, linktype: u16, strip: usize| {
        let path = dir.path().join(name);
        let mut w = PcapngWriter::create(&path).unwrap();
        let id = w.add_interface("tap0", linktype, 0).unwrap();
        for (i, f) in frames.iter().enumerate() {
            w.write_frame(id, 1_700_000_000_000_000_000 + i as u64 * 1000, &f[strip..])
                .unwrap();
        }
        w.finish().unwrap();
        path
    };
    let eth = analyze_to(&write("eth.pcapng", 1, 0), &dir.path().join("eth"));
    let want = link_independent(&eth);
    for (name, lt) in [("v6.pcapng", IPV6), ("raw.pcapng", RAW)] {
        let cap = write(name, lt, 14);
        let got = analyze_to(&cap, &dir.path().join(format!("{name}.out")));
        assert_eq!(link_independent(&got), want, "{name}");
        assert_eq!(got.bools("icrc_ok"), vec![Some(true); 6], "{name}");
    }
    // tshark decodes raw IP too: the same addresses, QP and PSNs.
    let raw = dir.path().join("raw.pcapng");
    let got = analyze_to(&raw, &dir.path().join("raw-again"));
    assert_eq!(
        tshark_fields(
            &raw,
            &[
                "ipv6.src",
                "ipv6.dst",
                "infiniband.bth.destqp",
                "infiniband.bth.psn"
            ]
        ),
        columns(&got, &["src_ip", "dst_ip", "dest_qp", "psn"])
    );
}

/// tshark's `-T fields` lines for `fields`, RoCE decoded on UDP 4791.
fn tshark_fields(cap: &Path, fields: &[&str]) -> Vec<String> {
    let mut cmd = Command::new("tshark");
    cmd.args([
        "-r",
        cap.to_str().unwrap(),
        "-d",
        "udp.port==4791,infiniband",
    ])
    .args(["-T", "fields", "-E", "separator=,"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let t = cmd
        .output()
        .expect("tshark runs (scripts/setup.sh --test installs it)");
    assert!(t.status.success(), "{}", stderr(&t));
    stdout(&t).lines().map(String::from).collect()
}

/// Our columns as tshark prints them: QPNs in 6 hex digits.
fn columns(t: &Table, names: &[&str]) -> Vec<String> {
    let cols: Vec<Vec<String>> = names
        .iter()
        .map(|&n| match n {
            "src_ip" | "dst_ip" => t.strings(n).into_iter().map(|v| v.unwrap()).collect(),
            "dest_qp" => t
                .ints(n)
                .into_iter()
                .map(|v| format!("0x{:06x}", v.unwrap()))
                .collect(),
            _ => t
                .ints(n)
                .into_iter()
                .map(|v| v.unwrap().to_string())
                .collect(),
        })
        .collect();
    (0..t.rows())
        .map(|i| {
            cols.iter()
                .map(|c| c[i].as_str())
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect()
}
