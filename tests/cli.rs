//! End to end: the `rocescope` binary on real hardware captures and on bad input.
use crate::common;

use std::collections::HashSet;

use common::*;

#[test]
fn oferby_capture_every_roce_frame_with_valid_icrc() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let cap = shared_capture("oferby-proxy-roce.pcap");
    rocescope_ok(&["analyze", cap.to_str().unwrap(), "--out", out]);

    let p = Table::read(&dir.path().join("packets.parquet"));
    let names = p.column_names();
    for col in PACKETS_COLUMNS {
        assert!(
            names.iter().any(|n| n == col),
            "packets.parquet lacks {col}"
        );
    }
    // 123 frames, 105 of them RoCEv2: exactly those are rows.
    assert_eq!(p.rows(), 105);
    assert!(
        p.strings("kind")
            .iter()
            .all(|k| k.as_deref() == Some("roce"))
    );
    assert!(p.bools("icrc_ok").iter().all(|v| *v == Some(true)));
    let frames: HashSet<_> = p.ints("frame").into_iter().map(Option::unwrap).collect();
    assert_eq!(frames.len(), 105);
    assert!(frames.iter().all(|f| (1..=123).contains(f)));

    // The responder sends from UDP source port 69 (Wireshark calls it TFTP):
    // 37 frames, 36 of them RC Acknowledge, all decoded as RoCE.
    let sport = p.ints("udp_sport");
    let opcode = p.ints("opcode");
    let from_69: Vec<_> = (0..p.rows()).filter(|&i| sport[i] == Some(69)).collect();
    assert_eq!(from_69.len(), 37);
    assert_eq!(
        from_69.iter().filter(|&&i| opcode[i] == Some(0x11)).count(),
        36
    );
    let acks = opcode.iter().filter(|o| **o == Some(0x11)).count();
    assert_eq!(acks, 37);
    // ACKs carry an AETH, SEND Last with Immediate carries ImmDt.
    let syndrome = p.ints("aeth_syndrome");
    let imm = p.ints("imm");
    for i in 0..p.rows() {
        assert_eq!(syndrome[i].is_some(), opcode[i] == Some(0x11), "row {i}");
        assert_eq!(
            imm[i].is_some(),
            matches!(opcode[i], Some(0x03 | 0x05)),
            "row {i}"
        );
    }
    let ips: HashSet<_> = p
        .strings("src_ip")
        .into_iter()
        .map(Option::unwrap)
        .collect();
    assert_eq!(
        ips,
        HashSet::from(["192.168.70.4".to_string(), "192.168.70.6".to_string()])
    );
    // No VLAN, no PFC on this capture: those columns are null, not zero.
    assert!(p.ints("vlan").iter().all(Option::is_none));
    assert!(p.ints("pfc_quanta_3").iter().all(Option::is_none));
    assert!(
        p.strings("iface")
            .iter()
            .all(|i| i.as_deref() == Some("oferby-proxy-roce"))
    );
}

#[test]
fn connectx4_cnp() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let cap = shared_capture("connectx4lx-cnp.pcap");
    rocescope_ok(&["analyze", cap.to_str().unwrap(), "--out", out]);

    let p = Table::read(&dir.path().join("packets.parquet"));
    assert_eq!(p.rows(), 1);
    assert_eq!(p.strings("kind")[0].as_deref(), Some("cnp"));
    assert_eq!(p.ints("frame")[0], Some(1));
    assert_eq!(p.strings("iface")[0].as_deref(), Some("Fake IF, text2pcap"));
    assert_eq!(p.ints("opcode")[0], Some(0x81));
    assert_eq!(p.ints("dest_qp")[0], Some(0x118));
    assert_eq!(p.ints("pkey")[0], Some(0xFFFF));
    assert_eq!(p.bools("becn")[0], Some(true));
    assert_eq!(p.bools("fecn")[0], Some(false));
    assert_eq!(p.ints("udp_sport")[0], Some(0));
    assert_eq!(p.ints("dscp")[0], Some(48));
    assert_eq!(p.ints("ecn")[0], Some(2));
    assert_eq!(p.bools("icrc_ok")[0], Some(true));
    assert_eq!(p.ints("frame_len")[0], Some(74));
    assert_eq!(p.strings("src_ip")[0].as_deref(), Some("10.0.17.1"));
    assert_eq!(p.strings("dst_ip")[0].as_deref(), Some("10.0.18.1"));
    assert_eq!(
        p.strings("src_mac")[0].as_deref(),
        Some("7c:fe:90:64:3b:32")
    );
}

#[test]
fn filter_selects_before_decoding() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let cap = shared_capture("oferby-proxy-roce.pcap");
    rocescope_ok(&[
        "analyze",
        cap.to_str().unwrap(),
        "--out",
        out,
        "--filter",
        "udp src port 69",
    ]);
    assert_eq!(Table::read(&dir.path().join("packets.parquet")).rows(), 37);

    let bad = rocescope(&[
        "analyze",
        cap.to_str().unwrap(),
        "--out",
        out,
        "--filter",
        "udp frobnicate",
    ]);
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("filter"), "{err}");
}

/// `--udp-port roce=4792` (docs/inputs.md, "Transports and their ports"):
/// the oferby capture with its 105 RoCEv2 frames rewritten to UDP port 4792
/// decodes to the same packets (their ICRCs, which cover the port, now
/// fail), while the original, on 4791, decodes nothing and the error names
/// the port looked for. A bad value is a usage error naming the option.
#[test]
fn udp_port_moves_rocev2() {
    let dir = tempfile::tempdir().unwrap();
    let cap = shared_capture("oferby-proxy-roce.pcap");
    let bytes = std::fs::read(&cap).unwrap();
    // Classic little-endian pcap, Ethernet, no VLAN tags: every IPv4/UDP
    // frame to 4791 gets 4792.
    let mut moved_bytes = bytes.clone();
    let (mut at, mut rewritten) = (24, 0);
    while at + 16 <= bytes.len() {
        let incl = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        let f = &mut moved_bytes[at + 16..at + 16 + incl];
        if f[12..14] == [0x08, 0x00] && f[23] == 17 {
            let dport = 14 + usize::from(f[14] & 0x0F) * 4 + 2;
            if f[dport..dport + 2] == 4791u16.to_be_bytes() {
                f[dport..dport + 2].copy_from_slice(&4792u16.to_be_bytes());
                rewritten += 1;
            }
        }
        at += 16 + incl;
    }
    assert_eq!(rewritten, 105);
    let moved = dir.path().join("moved.pcap");
    std::fs::write(&moved, &moved_bytes).unwrap();

    let analyze = |capture: &std::path::Path, out: &str, port: Option<&str>| {
        let out = dir.path().join(out);
        let mut args = vec!["analyze", capture.to_str().unwrap(), "--out"];
        args.push(out.to_str().unwrap());
        if let Some(p) = port {
            args.extend(["--udp-port", p]);
        }
        rocescope_ok(&args);
        Table::read(&out.join("packets.parquet"))
    };
    let before = analyze(&cap, "before", None);
    let after = analyze(&moved, "after", Some("roce=4792"));
    assert_eq!((before.rows(), after.rows()), (105, 105));
    for column in ["frame", "psn", "dest_qp", "opcode"] {
        assert_eq!(before.ints(column), after.ints(column), "{column}");
    }
    // The ICRC covers the UDP ports (Annex A17 masks the UDP checksum, not
    // the ports): every frame whose ICRC passed before fails once moved.
    let (ok_before, ok_after) = (before.bools("icrc_ok"), after.bools("icrc_ok"));
    for (b, a) in ok_before.iter().zip(&ok_after) {
        if *b == Some(true) {
            assert_eq!(*a, Some(false));
        }
    }
    assert!(ok_before.contains(&Some(true)));

    let r = rocescope(&["report", cap.to_str().unwrap(), "--udp-port", "roce=4792"]);
    assert!(!r.status.success());
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("105 UDP to another port than 4792"), "{err}");

    for bad in ["roce", "roce=0", "iwarp=4793"] {
        let r = rocescope(&["report", cap.to_str().unwrap(), "--udp-port", bad]);
        assert!(!r.status.success(), "{bad}");
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(err.contains("--udp-port"), "{bad}: {err}");
    }
    // UET's port moves too (its walk is wired in); the RoCE capture reads
    // as before.
    let r = rocescope_ok(&[
        "report",
        moved.to_str().unwrap(),
        "--udp-port",
        "roce=4792",
        "--udp-port",
        "uet=49150",
    ]);
    assert!(String::from_utf8_lossy(&r.stdout).contains("105 decoded"));
}

#[test]
fn missing_and_foreign_files_give_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let missing = dir.path().join("nope.pcap");
    let r = rocescope(&[
        "analyze",
        missing.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!r.status.success());
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("nope.pcap"), "{err}");

    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "this is not a capture, just some words\n").unwrap();
    let r = rocescope(&[
        "analyze",
        text.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!r.status.success());
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("notes.txt") && err.contains("not a pcap"),
        "{err}"
    );

    let empty = dir.path().join("empty.pcap");
    std::fs::write(&empty, b"").unwrap();
    let r = rocescope(&["report", empty.to_str().unwrap()]);
    assert!(!r.status.success());
    assert!(String::from_utf8_lossy(&r.stderr).contains("empty.pcap"));
}

#[test]
fn capture_cut_mid_record_is_analysed_up_to_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(shared_capture("oferby-proxy-roce.pcap")).unwrap();
    let cut = dir.path().join("cut.pcap");
    let cut_at = bytes.len() - 30; // inside the last record
    std::fs::write(&cut, &bytes[..cut_at]).unwrap();
    let out = dir.path().join("out");
    let r = rocescope_ok(&[
        "analyze",
        cut.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("warning") && err.contains("cut.pcap") && err.contains("byte"),
        "{err}"
    );
    let rows = Table::read(&out.join("packets.parquet")).rows();
    assert!((100..105).contains(&rows), "{rows} rows");
}

/// `--link-speed TAP=` and `--clock-offset TAP=` naming no tap of the run
/// fail it, naming the option, the name and the run's taps, and write
/// nothing (docs/analysis.md, "PFC"); on one thread and on several. A name
/// that is a tap's applies (`taps[].link_speed_bps`).
#[test]
fn tap_options_naming_no_tap_fail_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let (a, b) = (
        shared_capture("softroce-nccl_node0.pcap"),
        shared_capture("softroce-nccl_node1.pcap"),
    );
    let run = |extra: &[&str]| {
        let mut args = vec![
            "analyze",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        rocescope(&args)
    };
    for threads in ["1", "0"] {
        let r = run(&[
            "--threads",
            threads,
            "--link-speed",
            "softroce-nccl_node0=400G",
            "--link-speed",
            "node1=400G",
            "--clock-offset",
            "node9=-1us",
        ]);
        assert!(!r.status.success());
        let err = String::from_utf8_lossy(&r.stderr);
        // In the order of their first frames.
        let taps = "(their taps: softroce-nccl_node1, softroce-nccl_node0); name one as in the tables' iface column";
        assert_eq!(
            err.trim(),
            format!(
                "rocescope: error: --link-speed node1=…: the captures have no tap \"node1\" {taps}\n--clock-offset node9=…: the captures have no tap \"node9\" {taps}"
            ),
            "threads {threads}"
        );
        let left: Vec<_> = std::fs::read_dir(&out)
            .map(|d| d.map(|e| e.unwrap().file_name()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "threads {threads}: {left:?}");
    }
    run_ok(&run(&["--link-speed", "softroce-nccl_node1=400G"]));
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let mut speeds: Vec<(&str, u64)> = s["taps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["iface"].as_str().unwrap(),
                t["link_speed_bps"].as_u64().unwrap(),
            )
        })
        .collect();
    speeds.sort();
    assert_eq!(
        speeds,
        [
            ("softroce-nccl_node0", 100_000_000_000),
            ("softroce-nccl_node1", 400_000_000_000)
        ]
    );
}

/// A dataset run's id is the same for the same capture and options (the
/// run replaces its files), another for another `--match-window` or
/// `--clock-offset`, and not another for `--threads`, which changes no
/// output: the run is named after its first record whichever table's row
/// the pipeline hands over first (docs/tables.md, "Runs").
#[test]
fn dataset_run_ids_follow_the_options_that_change_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("ds");
    let cap = shared_capture("softroce-nccl_node0.pcap");
    let runs = |extra: &[&str]| -> std::collections::BTreeSet<String> {
        let mut args = vec![
            "analyze",
            cap.to_str().unwrap(),
            "--dataset",
            data.to_str().unwrap(),
            "--host",
            "h",
        ];
        args.extend_from_slice(extra);
        rocescope_ok(&args);
        let mut found = std::collections::BTreeSet::new();
        let mut dirs = vec![data.join("summaries")];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    dirs.push(p);
                } else {
                    let name = p.file_name().unwrap().to_string_lossy().into_owned();
                    found.insert(name);
                }
            }
        }
        found
    };
    let first = runs(&[]);
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(runs(&[]), first, "the same inputs: the same run");
    assert_eq!(runs(&["--threads", "1"]), first);
    let window = runs(&["--match-window", "1ms"]);
    assert_eq!(window.len(), 2, "{window:?}");
    let offset = runs(&["--clock-offset", "softroce-nccl_node0=+1us"]);
    assert_eq!(offset.len(), 3, "{offset:?}");
    assert!(offset.is_superset(&window) && window.is_superset(&first));
}

fn run_ok(r: &std::process::Output) {
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
}

#[test]
fn report_prints_text_and_json() {
    let cap = shared_capture("oferby-proxy-roce.pcap");
    let text = rocescope_ok(&["report", cap.to_str().unwrap()]);
    assert!(!text.stdout.is_empty());
    let json = rocescope_ok(&["report", cap.to_str().unwrap(), "--json"]);
    let v: serde_json::Value =
        serde_json::from_slice(&json.stdout).expect("report --json prints JSON");
    assert!(v.get("findings").is_some_and(|f| f.is_array()), "{v}");
}

/// A reader that goes away before the output is printed (`report --json |
/// head`, a pager quit early) ends the printing, not the run: no panic, the
/// run's own exit status (cli/print.rs `write_stdout`). The pipe's read end
/// is closed before the binary has analysed anything, so every write it
/// makes meets a closed pipe.
#[test]
fn a_reader_that_closes_the_pipe_early_is_not_an_error() {
    use std::process::Stdio;
    let cap = shared_capture("oferby-proxy-roce.pcap");
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("tables");
    let runs: [&[&str]; 3] = [
        &["report", "--json"],
        &["report"],
        &["analyze", "--out", dir.to_str().unwrap()],
    ];
    for args in runs {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rocescope"))
            .args(args)
            .arg(&cap)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let done = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert!(
            done.status.success(),
            "{args:?}: {:?}\n{stderr}",
            done.status
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    assert!(
        dir.join("flows.parquet").exists(),
        "analyze wrote its tables"
    );
}

/// The binary re-executes itself with glibc's huge-page tunables where the
/// kernel offers transparent huge pages (`heap.rs`): seen in the running
/// process's environment while it waits on a FIFO for its capture.
#[test]
fn the_binary_runs_with_a_huge_page_heap_where_the_kernel_offers_one() {
    let thp =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    let Some(expected) = rocescope::heap::tunables_to_set(None, None, &thp) else {
        eprintln!("no transparent huge pages here ({thp:?}): nothing to check");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("capture.pcap");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["report", fifo.to_str().unwrap()])
        .env_remove("GLIBC_TUNABLES")
        .env_remove(rocescope::heap::OPT_OUT)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let environ = format!("/proc/{}/environ", child.id());
    // glibc splits the value it parsed at each `:` (in place), so the
    // first tunable is what follows the name.
    let first = expected.to_string_lossy();
    let first = first.split(':').next().unwrap();
    let wanted = format!("GLIBC_TUNABLES={first}");
    // The re-execution comes first thing; the capture is only read after it.
    let seen = within_20_s(|| {
        let env = std::fs::read(&environ).unwrap_or_default();
        env.split(|b| *b == 0).any(|v| v == wanted.as_bytes())
    });
    // Re-executed under its own name (`ps`, `top`), not `exe`.
    let comm = std::fs::read_to_string(format!("/proc/{}/comm", child.id())).unwrap_or_default();
    // Feed the capture either way, so the child ends.
    feed(&fifo);
    let status = child.wait().unwrap();
    assert!(seen, "{wanted} never appeared in {environ}");
    assert_eq!(comm.trim_end(), "rocescope");
    assert!(status.success());
}

/// A binary with file capabilities (how `live` runs without root) starts in
/// glibc's secure mode, which ignores and may erase `GLIBC_TUNABLES`: it
/// must not re-execute itself there (it would gain nothing, and before the
/// guard it did so again and again, the tunables string growing, for ~10 s).
/// Run as `nobody` with a capability and waiting on a FIFO for its capture,
/// its environment shows no re-execution.
#[test]
fn a_file_capability_binary_runs_without_re_executing() {
    use std::os::unix::fs::PermissionsExt;
    use std::process::{Command, Stdio};
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let tools = ["setcap", "setpriv", "mkfifo"].iter().all(|t| {
        Command::new("sh")
            .args(["-c", &format!("command -v {t}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if !root || !tools {
        eprintln!("needs root, setcap, setpriv and mkfifo: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.path().join("rocescope");
    std::fs::copy(env!("CARGO_BIN_EXE_rocescope"), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let set = Command::new("setcap")
        .args(["cap_net_raw+ep", bin.to_str().unwrap()])
        .status()
        .unwrap();
    if !set.success() {
        eprintln!("setcap failed here (no file capabilities on this filesystem?): skipped");
        return;
    }
    let fifo = dir.path().join("capture.pcap");
    assert!(
        Command::new("mkfifo")
            .args(["-m", "666"])
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let mut child = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .arg("report")
        .arg(&fifo)
        .env_remove("GLIBC_TUNABLES")
        .env_remove(rocescope::heap::OPT_OUT)
        .env_remove(rocescope::heap::REEXECUTED)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Blocked opening the FIFO: past any re-execution.
    let proc = format!("/proc/{}", child.id());
    let waiting = within_20_s(|| {
        std::fs::read_to_string(format!("{proc}/wchan")).is_ok_and(|w| w == "wait_for_partner")
    });
    let environ = std::fs::read(format!("{proc}/environ")).unwrap_or_default();
    feed(&fifo);
    let status = child.wait().unwrap();
    assert!(waiting, "never came to wait for its capture");
    let marker = rocescope::heap::REEXECUTED.as_bytes();
    assert!(
        !environ.split(|b| *b == 0).any(|v| v.starts_with(marker)),
        "it re-executed itself in secure mode"
    );
    assert!(status.success(), "{status}");
}

/// Whether `done` comes true within 20 s (asked every 10 ms).
fn within_20_s(mut done: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if done() {
            return true;
        }
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Writes a small real capture into the FIFO a waiting `rocescope` reads.
fn feed(fifo: &std::path::Path) {
    std::fs::write(
        fifo,
        std::fs::read(shared_capture("oferby-proxy-roce.pcap")).unwrap(),
    )
    .unwrap();
}
