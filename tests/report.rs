//! The terminal report and the command line's options, end to end
//! (docs/report.md): every bundled sample and every real capture reads
//! cleanly at 80 and 200 columns; `analyze` and `report` count frames
//! alike; `report --json` carries the flows and each finding's `params`;
//! durations take units and bad values are refused at parse time, naming
//! what was given and why; the progress bar shows on a terminal only.
use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

/// Every bundled sample and every real capture of `tests/data`.
fn every_capture() -> Vec<PathBuf> {
    let mut all = Vec::new();
    for (dir, ext) in [("pcaps", "pcapng"), ("tests/data", "pcap")] {
        let mut found: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
            .expect("the captures' directory")
            .map(|e| e.expect("a directory entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .collect();
        found.sort();
        all.extend(found);
    }
    assert!(all.len() >= 19, "{all:?}");
    all
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("UTF-8 output")
}

fn report_json(cap: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["report", cap.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    serde_json::from_slice(&rocescope_ok(&args).stdout).expect("report --json prints JSON")
}

/// Words made of lowercase letters and `_` that are names from the code
/// (enum values, column names), not words; the few external names a
/// recommendation quotes (an API, NIC counters) are allowed.
fn internal_names(text: &str, allowed: &[String]) -> Vec<String> {
    const EXTERNAL: &[&str] = &[
        "ibv_modify_qp",
        // A QP attribute, a tool and its field, named in recommendations.
        "retry_cnt",
        "ibv_devinfo",
        "active_mtu",
        "rx_crc_errors_phy",
        "rx_symbol_err_phy",
        "rx_corrected_bits_phy",
        // The tools that set a NIC's RoCE traffic class and trust mode.
        "cma_roce_tos",
        "mlnx_qos",
        // The DCQCN reaction point's sysfs switch and counters (mlx5).
        "roce_rp",
        "np_cnp_sent",
        "rp_cnp_handled",
        // The field of `report --json` a long Wireshark filter is left to.
        "display_filter",
    ];
    let mut text = text.to_string();
    for name in allowed {
        text = text.replace(name.as_str(), " ");
    }
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
        .map(|w| w.trim_matches('.'))
        // Dotted paths are Wireshark's display-filter fields
        // (`frame.interface_id`), not names from rocescope's code.
        .filter(|w| !w.contains('.'))
        .filter(|w| w.contains('_') && w.chars().any(|c| c.is_ascii_lowercase()))
        // NIC counters as `ethtool -S` names them.
        .filter(|w| !EXTERNAL.contains(w) && !w.starts_with("rx_") && !w.starts_with("tx_"))
        .map(str::to_string)
        .collect()
}

/// "1 flows", "(1 CNPs", …: a count of one with a plural noun.
fn wrong_plurals(text: &str) -> Vec<String> {
    const NOUNS: &[&str] = &[
        "flows", "CNPs", "frames", "PSNs", "rewinds", "NAKs", "stalls", "storms", "packets",
        "findings", "copies", "gaps", "marks", "timeouts", "pairs",
    ];
    let words: Vec<&str> = text.split_whitespace().collect();
    words
        .windows(2)
        .filter(|w| {
            let n = w[0].trim_start_matches(['(', '[']);
            let noun = w[1].trim_end_matches([',', ';', '.', ')', ':']);
            n == "1" && NOUNS.contains(&noun)
        })
        .map(|w| w.join(" "))
        .collect()
}

#[test]
fn every_capture_reads_cleanly_at_80_and_200_columns() {
    for cap in every_capture() {
        let json = report_json(&cap, &[]);
        // Interface names come from the captures (file stems, pcapng
        // names): they are the user's, whatever their spelling.
        let ifaces: Vec<String> = json["ifaces"]
            .as_object()
            .expect("ifaces")
            .values()
            .map(|v| v.as_str().expect("a name").to_string())
            .collect();
        for width in [80usize, 200] {
            let text = stdout(&rocescope_ok(&[
                "report",
                cap.to_str().unwrap(),
                "--width",
                &width.to_string(),
            ]));
            let name = format!("{} at {width} columns", cap.display());
            for line in text.lines() {
                let cols = line.chars().count();
                // Only a single unbreakable token may run past the width.
                assert!(
                    cols <= width || !line.trim().contains(' '),
                    "{name}: a line of {cols} columns:\n{line}\n\n{text}"
                );
            }
            let leaked = internal_names(&text, &ifaces);
            assert!(leaked.is_empty(), "{name}: {leaked:?}\n{text}");
            let plurals = wrong_plurals(&text);
            assert!(plurals.is_empty(), "{name}: {plurals:?}\n{text}");
            // A finding's headline line comes first, worst first.
            let findings = json["findings"].as_array().expect("findings");
            let head: Vec<&str> = text.lines().take_while(|l| !l.is_empty()).collect();
            match findings.first() {
                None => assert!(head[0].starts_with("No findings"), "{name}\n{text}"),
                Some(first) => assert!(
                    head[0].starts_with(&first["severity"].as_str().unwrap().to_uppercase()),
                    "{name}\n{text}"
                ),
            }
            // The first few of each id; the rest are counted in one line.
            let mut per_id: std::collections::HashMap<&str, usize> = Default::default();
            let shown = findings.iter().filter(|f| {
                let n = per_id.entry(f["id"].as_str().unwrap()).or_default();
                *n += 1;
                *n <= 5
            });
            for (f, rank) in shown.zip(0..) {
                let title = f["title"].as_str().unwrap();
                let words: Vec<&str> = title.split_whitespace().collect();
                let block = head.join(" ");
                assert!(
                    block
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ")
                        .contains(&words.join(" ")),
                    "{name}: finding {rank}'s title {title:?} is not in the headline:\n{text}"
                );
            }
        }
    }
}

/// The pauses of `pfc-storm` last about 125 ms: printed in ms, not as
/// hundreds of thousands of µs; internal names become words.
#[test]
fn long_pauses_print_in_milliseconds() {
    let cap = root().join("pcaps/pfc-storm.pcapng");
    let text = stdout(&rocescope_ok(&[
        "report",
        cap.to_str().unwrap(),
        "--link-speed",
        "400G",
        "--width",
        "200",
    ]));
    assert!(text.contains("124.96 ms"), "{text}");
    assert!(
        !text.lines().any(|l| l.contains("µs")
            && l.split_whitespace()
                .any(|w| w.parse::<f64>().is_ok_and(|v| v >= 1000.0)
                    && l.contains(&format!("{w} µs")))),
        "a duration of 1000 µs or more:\n{text}"
    );
    for internal in [
        "capture_end",
        "ended by xon",
        "ended by expiry",
        "trigger timeout",
    ] {
        assert!(!text.contains(internal), "{internal}:\n{text}");
    }
}

/// `analyze` and `report` print the same frame counts: read, decoded (by
/// kind) and other. The oferby capture has 123 frames, 105 of them RoCE
/// (tshark: `udp.dstport == 4791`), the rest ARP and other traffic.
#[test]
fn analyze_and_report_count_frames_alike() {
    let dir = tempfile::tempdir().unwrap();
    let cap = shared_capture("oferby-proxy-roce.pcap");
    let counts = "123 frames read: 105 decoded (105 RoCE, 0 CNP, 0 PFC, 0 802.3x PAUSE, 0 malformed), 18 other";
    let analyze = stdout(&rocescope_ok(&[
        "analyze",
        cap.to_str().unwrap(),
        "--out",
        dir.path().to_str().unwrap(),
    ]));
    assert!(analyze.starts_with(counts), "{analyze}");
    assert!(analyze.contains("2 flows, 0 findings"), "{analyze}");
    let report = stdout(&rocescope_ok(&["report", cap.to_str().unwrap()]));
    assert!(report.lines().any(|l| l.trim() == counts), "{report}");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["input"]["frames_read"], 123);
    assert_eq!(summary["frames"]["total"], 105);
}

/// `report --json`: the flows' rows as `flows.parquet` holds them, and each
/// finding's numbers in `params`; for the ghost-drop sample the local ACK
/// timeout exponent the text recommends (T ≥ 5: 4.096 µs × 2^5 = 131 µs
/// clears the longest covering pause, 100.2 µs).
#[test]
fn report_json_has_flows_and_recommendation_params() {
    let dir = tempfile::tempdir().unwrap();
    let cap = root().join("pcaps/ghost-drop.pcapng");
    let json = report_json(&cap, &["--link-speed", "400G"]);
    rocescope_ok(&[
        "analyze",
        cap.to_str().unwrap(),
        "--link-speed",
        "400G",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let table = Table::read(&dir.path().join("flows.parquet"));
    let flows = json["flows"].as_array().expect("flows");
    assert_eq!(flows.len(), table.rows());
    let ids = table.ints("flow_id");
    let src = table.strings("src_ip");
    let iface = table.strings("iface");
    let retrans = table.ints("retrans_packets");
    for (i, row) in flows.iter().enumerate() {
        assert_eq!(Some(row["flow_id"].as_i64().unwrap() as i128), ids[i]);
        assert_eq!(row["src_ip"].as_str(), src[i].as_deref());
        assert_eq!(row["iface"].as_str(), iface[i].as_deref());
        assert_eq!(
            Some(row["retrans_packets"].as_i64().unwrap() as i128),
            retrans[i]
        );
    }
    let finding = |id: &str| {
        json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == id)
            .unwrap_or_else(|| panic!("{id}"))
            .clone()
    };
    let ghost = finding("ghost-retransmissions");
    let p = &ghost["params"];
    assert_eq!(p["recommended_timeout_exponent"], 5, "{p}");
    assert_eq!(p["recommended_timeout_ns"], 4096 << 5, "{p}");
    assert_eq!(p["spurious_retrans"], 59, "{p}");
    let covering = p["longest_covering_pause_ns"].as_u64().unwrap();
    assert!((100_000..100_500).contains(&covering), "{p}");
    assert!(
        ghost["recommendation"]
            .as_str()
            .unwrap()
            .contains("T ≥ 5 (131.1 µs)")
    );
    let pressure = finding("pfc-pressure");
    let fraction = pressure["params"]["max_paused_fraction"].as_f64().unwrap();
    assert!((0.20..0.201).contains(&fraction), "{pressure}");
}

fn refused(args: &[&str]) -> String {
    let out = rocescope(args);
    assert!(!out.status.success(), "{args:?} was accepted");
    assert_eq!(out.status.code(), Some(2), "{args:?}: a usage error");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every duration takes units; `--storm-ms` still takes a bare number of
/// milliseconds (and units too).
#[test]
fn durations_take_units_and_storm_ms_stays_an_alias() {
    let cap = root().join("pcaps/healthy.pcapng");
    let cap = cap.to_str().unwrap();
    let storm = |extra: &[&str]| report_json(Path::new(cap), extra)["storm_ns"].clone();
    assert_eq!(storm(&[]), 200_000_000);
    assert_eq!(storm(&["--storm", "50ms"]), 50_000_000);
    assert_eq!(storm(&["--storm-ms", "50"]), 50_000_000);
    assert_eq!(storm(&["--storm-ms", "50ms"]), 50_000_000);
    assert_eq!(storm(&["--storm-ms", "1.5s"]), 1_500_000_000);
    let both = refused(&["report", cap, "--storm", "1s", "--storm-ms", "200"]);
    assert!(both.contains("--storm"), "{both}");
    let json = report_json(Path::new(cap), &["--bin", "1ms", "--dup-window", "0"]);
    assert_eq!(json["bin_ns"], 1_000_000);
}

/// Bad values are refused when the arguments are parsed, before any file
/// is read, with the option, the value given and why.
#[test]
fn bad_option_values_name_the_value_and_the_reason() {
    let cap = root().join("pcaps/healthy.pcapng");
    let cap = cap.to_str().unwrap();
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["report", cap, "--bin", "0us"],
            &["'0us'", "--bin", "more than 0", "ms"],
        ),
        (
            &["report", cap, "--bin", "100"],
            &["'100'", "no unit", "100us"],
        ),
        (
            &["report", cap, "--storm", "5 parsecs"],
            &["'5 parsecs'", "unknown unit", "µs"],
        ),
        (
            &["report", cap, "--storm-ms", "soon"],
            &["'soon'", "--storm-ms"],
        ),
        (
            &["report", cap, "--dup-window=-1us"],
            &["'-1us'", "negative"],
        ),
        (
            &["report", cap, "--link-speed", "100X"],
            &["'100X'", "unknown unit"],
        ),
        (
            &["report", cap, "--link-speed", "=400G"],
            &["'=400G'", "name the tap"],
        ),
        (
            &["report", cap, "--link-speed", "0G"],
            &["'0G'", "1M to 10T"],
        ),
        (
            &["report", cap, "--dscp-map", "64=1"],
            &["'64=1'", "DSCP 0-63"],
        ),
        (&["report", cap, "--width", "5"], &["'5'", "--width"]),
        (
            &["analyze", cap, "--dataset", "/tmp/x", "--rotate", "0s"],
            &["'0s'", "more than 0"],
        ),
        (
            &[
                "analyze",
                cap,
                "--dataset",
                "/tmp/x",
                "--rotate-size",
                "lots",
            ],
            &["'lots'", "180KB"],
        ),
        (
            &[
                "synth",
                "ghost-drop",
                "--out",
                "/tmp/x.pcapng",
                "--min-rto",
                "40",
            ],
            &["'40'", "no unit"],
        ),
        (
            &[
                "synth",
                "ghost-drop",
                "--out",
                "/tmp/x.pcapng",
                "--ecn-pmax",
                "2",
            ],
            &["'2'", "0 to 1"],
        ),
        (
            &[
                "synth",
                "ghost-drop",
                "--out",
                "/tmp/x.pcapng",
                "--ecn-min",
                "big",
            ],
            &["'big'", "KB"],
        ),
        (
            &[
                "synth",
                "ghost-drop",
                "--out",
                "/tmp/x.pcapng",
                "--packets",
                "0",
            ],
            &["'0'", "at least 1"],
        ),
        (
            &[
                "synth",
                "ghost-drop",
                "--out",
                "/tmp/x.pcapng",
                "--erspan",
                "iv",
            ],
            &["'iv'", "ii"],
        ),
        (
            &["synth", "ghost-dorp", "--out", "/tmp/x.pcapng"],
            &["'ghost-dorp'", "ghost-drop"],
        ),
    ];
    for (args, wanted) in cases {
        let err = refused(args);
        for w in *wanted {
            assert!(err.contains(w), "{args:?}: {w:?} missing from:\n{err}");
        }
    }
    #[cfg(feature = "live")]
    for (args, wanted) in [
        (
            &[
                "live",
                "--iface",
                "lo",
                "--out",
                "/tmp/x",
                "--duration",
                "0s",
            ][..],
            &["'0s'", "more than 0"][..],
        ),
        (
            &[
                "live",
                "--iface",
                "lo",
                "--out",
                "/tmp/x",
                "--flush-interval",
                "10",
            ],
            &["'10'", "no unit"],
        ),
        (
            &[
                "live",
                "--iface",
                "lo",
                "--out",
                "/tmp/x",
                "--ring-size",
                "huge",
            ],
            &["'huge'", "KB"],
        ),
        (
            &["live", "--iface", "lo", "--out", "/tmp/x", "--count", "0"],
            &["'0'", "at least 1"],
        ),
        (
            &["replay", cap, "--iface", "lo", "--pps", "0"],
            &["'0'", "at least 1"],
        ),
    ] {
        let err = refused(args);
        for w in wanted {
            assert!(err.contains(w), "{args:?}: {w:?} missing from:\n{err}");
        }
    }
}

/// On a terminal (a pseudo-terminal from `script`), reading a file shows
/// a bar with the percentage, the rate and the ETA; on a pipe, nothing.
#[test]
fn progress_bar_on_a_terminal_only() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("big.pcapng");
    // Large enough to take more than the bar's first refresh (200 ms).
    rocescope_ok(&[
        "synth",
        "incast",
        "--out",
        cap.to_str().unwrap(),
        "--packets",
        "150000",
        "--snaplen",
        "128",
    ]);
    let piped = rocescope_ok(&["report", cap.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&piped.stderr);
    assert!(!err.contains("ETA") && !err.contains('%'), "{err}");

    let command = format!(
        "{} report {} >/dev/null",
        env!("CARGO_BIN_EXE_rocescope"),
        cap.display()
    );
    let tty = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .expect("script (util-linux) runs");
    assert!(tty.status.success(), "{tty:?}");
    let shown = String::from_utf8_lossy(&tty.stdout);
    assert!(shown.contains("ETA"), "{shown}");
    assert!(shown.contains('%'), "{shown}");
    assert!(shown.contains("/s"), "a rate: {shown}");
    assert!(shown.contains("frames"), "{shown}");
}
