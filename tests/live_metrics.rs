//! `live --metrics` against the real thing: Debian's `prometheus` server
//! (installed by `scripts/setup.sh --test`; a missing one fails the test)
//! scrapes a `live` run on a veth pair every second while three sample
//! taps with known PFC, CE, CNP and retransmission content are replayed
//! through it; the values PromQL returns must equal what the tables of
//! that same run hold (docs/live.md, "Metrics", says which column each
//! metric equals). The alerting rules are loaded into that server too, and
//! checked and unit-tested with `promtool`.
//!
//! The tap, the exporter and the Prometheus server all run in the veth
//! pair's network namespace, on its loopback: nothing listens outside it.
use crate::common::Table;
use crate::live::{Veth, quiet, usable};

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Where `live` serves its metrics and Prometheus its API, inside the
/// namespace (a namespace of the test's own: the ports are free).
const METRICS: &str = "127.0.0.1:9464";
const PROMETHEUS: &str = "127.0.0.1:9090";

/// The sample taps replayed: (capture, tap). Their flows have disjoint
/// addresses, so one run holds each tap's flows as its own capture does.
const TAPS: [(&str, &str); 3] = [
    // PFC from one sender (6 pausing frames, 2 XON), two timeout rewinds,
    // 59 spurious retransmissions.
    ("ghost-drop.pcapng", "leaf0-s2-both"),
    // 15 CE marks, 3 CNPs, NAK rewinds, 3 PSNs lost before the responder.
    ("lossy-link.pcapng", "leaf1-r1-both"),
    // 1490 pausing PFC frames of another sender, 1 CE mark, 1 CNP.
    ("pfc-storm.pcapng", "leaf1-r0-both"),
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn prometheus_installed(tool: &str) {
    let ok = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "`{tool}` not found: install Debian's prometheus package (scripts/setup.sh --test)"
    );
}

/// Percent-encodes a query parameter.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `GET path` from `addr` inside network namespace `ns`: the status and
/// body, or `None` when nothing answers. On a thread of its own, which
/// enters the namespace (a network namespace is per thread).
pub(crate) fn get(ns: &str, addr: &str, path: &str) -> Option<(u16, String)> {
    let (ns, addr, path) = (ns.to_string(), addr.to_string(), path.to_string());
    std::thread::spawn(move || {
        enter(&ns);
        let mut s = std::net::TcpStream::connect(&addr).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
        let mut text = String::new();
        s.read_to_string(&mut text).ok()?;
        let (head, body) = text.split_once("\r\n\r\n")?;
        let status = head.split_whitespace().nth(1)?.parse().ok()?;
        Some((status, body.to_string()))
    })
    .join()
    .unwrap()
}

/// Enters network namespace `ns` (on the calling thread only).
fn enter(ns: &str) {
    let f = std::fs::File::open(format!("/run/netns/{ns}")).expect("the namespace exists");
    // SAFETY: a valid namespace fd, for this thread only.
    let r = unsafe { libc::setns(std::os::fd::AsRawFd::as_raw_fd(&f), libc::CLONE_NEWNET) };
    assert_eq!(r, 0, "setns: {}", std::io::Error::last_os_error());
}

/// Two scrapers of [`METRICS`] that never finish, held until dropped: one
/// stuck in the middle of its request, one that asks and never reads.
struct StuckScrapers {
    done: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl StuckScrapers {
    fn open(ns: &str) -> StuckScrapers {
        let ns = ns.to_string();
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let (ready, connected) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            enter(&ns);
            let mut half = std::net::TcpStream::connect(METRICS).unwrap();
            half.write_all(b"GET /metr").unwrap();
            let mut mute = std::net::TcpStream::connect(METRICS).unwrap();
            mute.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            ready.send(()).unwrap();
            let _ = wait.recv();
        });
        connected.recv().unwrap();
        StuckScrapers {
            done: Some(done),
            thread: Some(thread),
        }
    }
}

impl Drop for StuckScrapers {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The Prometheus server, killed on drop.
struct Prometheus {
    child: Child,
    ns: String,
    log: PathBuf,
}

impl Prometheus {
    /// Starts it in `veth`'s namespace scraping [`METRICS`] every second,
    /// with the shipped rules, its data in `dir`; waits until it is ready.
    fn start(veth: &Veth, dir: &Path) -> Prometheus {
        let rules = repo().join("contrib/prometheus/rocescope.rules.yml");
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\nscrape_configs:\n  - job_name: rocescope\n    static_configs:\n      - targets: ['{METRICS}']\n",
                rules.canonicalize().unwrap().display()
            ),
        )
        .unwrap();
        let log = dir.join("prometheus.log");
        let child = Command::new("ip")
            .args(["netns", "exec", &veth.ns, "prometheus"])
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={PROMETHEUS}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("prometheus starts");
        let p = Prometheus {
            child,
            ns: veth.ns.clone(),
            log,
        };
        p.wait_for("the server to be ready", |p| {
            get(&p.ns, PROMETHEUS, "/-/ready").is_some_and(|(s, _)| s == 200)
        });
        p
    }

    /// Polls `cond` for up to 60 s; fails with the server's log.
    fn wait_for(&self, what: &str, mut cond: impl FnMut(&Prometheus) -> bool) {
        let start = Instant::now();
        while !cond(self) {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "Prometheus: no {what} within 60 s; its log:\n{}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// An HTTP API call's `data`.
    fn api(&self, path: &str) -> Value {
        let (status, body) = get(&self.ns, PROMETHEUS, path).expect("Prometheus answers");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            (status, v["status"].as_str()),
            (200, Some("success")),
            "{path}: {body}"
        );
        v["data"].clone()
    }

    /// `/api/v1/query`: each series' labels (but `instance` and `job`, as
    /// `name{k="v",…}` sorted) and value.
    fn query(&self, promql: &str) -> BTreeMap<String, f64> {
        let data = self.api(&format!("/api/v1/query?query={}", encode(promql)));
        let mut out = BTreeMap::new();
        for s in data["result"].as_array().unwrap() {
            let labels = s["metric"].as_object().unwrap();
            let name = labels.get("__name__").and_then(Value::as_str).unwrap_or("");
            let rest: Vec<String> = labels
                .iter()
                .filter(|(k, _)| !["__name__", "instance", "job"].contains(&k.as_str()))
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap()))
                .collect();
            let value: f64 = s["value"][1].as_str().unwrap().parse().unwrap();
            out.insert(format!("{name}{{{}}}", rest.join(",")), value);
        }
        out
    }

    /// One number (the sum of what `promql` returns; `None`: no series).
    fn value(&self, promql: &str) -> Option<f64> {
        let r = self.query(promql);
        (!r.is_empty()).then(|| r.values().sum())
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every `rocescope_*` metric name in `text`.
fn metric_names(text: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("rocescope_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
            .unwrap_or(tail.len());
        names.insert(tail[..end].to_string());
        rest = &tail[end..];
    }
    names
}

fn sum(t: &Table, column: &str) -> f64 {
    t.ints(column).iter().map(|v| v.unwrap_or(0)).sum::<i128>() as f64
}

#[test]
fn prometheus_scraping_live_sees_what_the_tables_hold() {
    if !usable() {
        return;
    }
    prometheus_installed("prometheus");
    let tmp = tempfile::tempdir().unwrap();
    let veth = Veth::new();
    quiet(&veth);
    // The exporter and the server listen on the namespace's loopback.
    let lo = Command::new("ip")
        .args(["-n", &veth.ns, "link", "set", "lo", "up"])
        .status()
        .unwrap();
    assert!(lo.success());
    let out = tmp.path().join("live");
    let live = veth.live(&out, &["--metrics", METRICS]);
    let prom_dir = tmp.path().join("prometheus");
    std::fs::create_dir(&prom_dir).unwrap();
    let prom = Prometheus::start(&veth, &prom_dir);
    // A scrape before any traffic: the counters start at 0 in the database.
    prom.wait_for("scrape of the tap", |p| {
        p.value("rocescope_tap_records_total") == Some(0.0)
    });

    // Scrapers that hang all along hold up neither the tap nor the others.
    let stuck = StuckScrapers::open(&veth.ns);

    let mut sent = 0;
    for (capture, tap) in TAPS {
        let cap = repo().join("pcaps").join(capture);
        let r = veth
            .rocescope(&[
                "replay",
                cap.to_str().unwrap(),
                "--iface",
                &veth.a,
                "--tap",
                tap,
                "--pps",
                "20000",
            ])
            .output()
            .unwrap();
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        let text = String::from_utf8_lossy(&r.stdout);
        sent += text
            .split_whitespace()
            .next()
            .unwrap()
            .parse::<u64>()
            .unwrap();
    }
    assert_eq!(sent, 4038 + 1056 + 1602);
    // Everything recorded and analysed, as Prometheus sees it.
    let all = sent as f64;
    prom.wait_for("scrape of every record analysed", |p| {
        p.value("rocescope_tap_records_total") == Some(all)
            && p.value("sum(rocescope_frames_total)") == Some(all)
            && p.value("rocescope_tap_lag_records") == Some(0.0)
    });
    // The ghost-drop rule sees the spurious retransmissions (pending: it
    // fires after a minute of them); none of the others has a cause here.
    prom.wait_for("ghost-drop alert", |p| {
        p.api("/api/v1/alerts")["alerts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["labels"]["alertname"] == "RocescopeGhostDrops")
    });
    let alerts: Vec<String> = prom.api("/api/v1/alerts")["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["labels"]["alertname"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(alerts, ["RocescopeGhostDrops"]);
    let groups = prom.api("/api/v1/rules");
    let rules = groups["groups"][0]["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 4);
    for r in rules {
        assert_eq!(r["health"], "ok", "{r}");
    }
    // Every expression of the dashboard runs and finds series (rates need
    // a few samples of each, series that began with the replay included).
    prom.wait_for("three samples of every series", |p| {
        let q = encode(r#"{__name__=~"rocescope_.+"}[1m]"#);
        let data = p.api(&format!("/api/v1/query?query={q}"));
        data["result"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["values"].as_array().unwrap().len() >= 3)
    });
    let dashboard = std::fs::read_to_string(repo().join("contrib/grafana/rocescope.json")).unwrap();
    let dash: Value = serde_json::from_str(&dashboard).unwrap();
    let mut exprs = Vec::new();
    for p in dash["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().into_iter().flatten() {
            exprs.push(t["expr"].as_str().unwrap().to_string());
        }
    }
    assert!(exprs.len() >= 20, "{} expressions", exprs.len());
    for e in &exprs {
        let q = e
            .replace("$instance", ".*")
            .replace("$iface", ".*")
            .replace("$__rate_interval", "1m");
        assert!(
            !prom.query(&q).is_empty(),
            "no series for the dashboard's {q}"
        );
    }

    let m = prom.query(r#"{__name__=~"rocescope_.+"}"#);
    // The rules and the dashboard name only metrics the tap serves.
    let served: std::collections::BTreeSet<String> = m
        .keys()
        .map(|k| k.split('{').next().unwrap().to_string())
        .collect();
    let rules_text =
        std::fs::read_to_string(repo().join("contrib/prometheus/rocescope.rules.yml")).unwrap();
    for name in metric_names(&rules_text).union(&metric_names(&dashboard)) {
        assert!(
            served.contains(name),
            "{name} is not served; served: {served:?}"
        );
    }

    drop(stuck);
    live.signal(libc::SIGTERM);
    let (ok, _, err) = live.wait(Duration::from_secs(30));
    assert!(ok, "{err}");

    // The tables of the same run.
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let flows = Table::read(&out.join("flows.parquet"));
    let events = Table::read(&out.join("events.parquet"));
    let pfc = Table::read(&out.join("pfc.parquet"));
    let iface = veth.b.as_str();
    let mut want: BTreeMap<String, f64> = BTreeMap::new();
    let mut put = |name: &str, labels: &[(&str, &str)], v: f64| {
        let mut l: Vec<String> = [("iface", iface)]
            .iter()
            .chain(labels)
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        l.sort();
        want.insert(format!("{name}{{{}}}", l.join(",")), v);
    };
    let n = |v: &Value| v.as_u64().unwrap() as f64;
    let tap = &summary["input"]["live"];
    for (metric, key) in [
        ("frames", "frames"),
        ("records", "records"),
        ("ring_full_drops", "ring_full_drops"),
        ("parse_failures", "parse_failures"),
        ("late_records", "late_records"),
        ("summarized_frames", "summarized"),
        ("deltas", "deltas"),
    ] {
        put(&format!("rocescope_tap_{metric}_total"), &[], n(&tap[key]));
    }
    for (cpu, v) in tap["records_per_cpu"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        put(
            "rocescope_tap_cpu_records_total",
            &[("cpu", &cpu.to_string())],
            n(v),
        );
    }
    put("rocescope_tap_lag_records", &[], 0.0);
    let frames = &summary["frames"];
    for kind in ["roce", "cnp", "pfc", "pause", "malformed"] {
        put(
            "rocescope_frames_total",
            &[("kind", kind)],
            n(&frames[kind]),
        );
    }
    // `frames.uet` is left out of summary.json when no UET frame came.
    put(
        "rocescope_frames_total",
        &[("kind", "uet")],
        frames.get("uet").map_or(0.0, n),
    );
    put(
        "rocescope_mirror_copies_total",
        &[],
        n(&frames["mirror_copies"]),
    );
    put("rocescope_flows", &[], flows.rows() as f64);
    put("rocescope_ce_marks_total", &[], sum(&flows, "ce"));
    put(
        "rocescope_retransmitted_packets_total",
        &[],
        sum(&flows, "retrans_packets"),
    );
    put(
        "rocescope_spurious_retransmissions_total",
        &[],
        sum(&flows, "spurious_retrans"),
    );
    let kinds = events.strings("kind");
    let mut by_kind: BTreeMap<String, f64> = BTreeMap::new();
    for k in kinds.iter().flatten() {
        *by_kind.entry(k.clone()).or_default() += 1.0;
    }
    // Every kind has a series from the start, at 0 until its first event.
    for k in rocescope::live::metrics::EVENT_KINDS {
        let v = by_kind.get(k).copied().unwrap_or(0.0);
        put("rocescope_events_total", &[("kind", k)], v);
    }
    put("rocescope_cnps_total", &[], by_kind["cnp"]);
    for trigger in rocescope::live::metrics::TRIGGERS {
        let v = sum(&flows, &format!("rewinds_{trigger}"));
        put("rocescope_rewinds_total", &[("trigger", trigger)], v);
    }
    for class in [
        "late",
        "lost_before_tap",
        "nak_lost",
        "capture_lost",
        "unresolved",
    ] {
        let v = sum(&flows, &format!("gap_{class}"));
        put("rocescope_gap_psns_total", &[("class", class)], v);
    }
    for p in summary["pfc"].as_array().unwrap() {
        let prio = p["priority"].to_string();
        let l = [("priority", prio.as_str())];
        put("rocescope_pfc_frames_total", &l, n(&p["frames"]));
        put("rocescope_pfc_xon_frames_total", &l, n(&p["xon_frames"]));
        put("rocescope_pfc_storms_total", &l, n(&p["storms"]));
    }
    // pfc.parquet per sender and priority: paused ns and pausing frames.
    let mut senders: BTreeMap<(String, i128), (i128, i128)> = BTreeMap::new();
    let (macs, prios) = (pfc.strings("src_mac"), pfc.ints("priority"));
    let (durs, pframes) = (pfc.ints("duration_ns"), pfc.ints("frames"));
    for i in 0..pfc.rows() {
        let e = senders
            .entry((macs[i].clone().unwrap(), prios[i].unwrap()))
            .or_default();
        e.0 += durs[i].unwrap();
        e.1 += pframes[i].unwrap();
    }
    assert_eq!(senders.len(), 2, "two PFC senders: {senders:?}");
    for ((mac, prio), (ns, fr)) in &senders {
        let prio = prio.to_string();
        let l = [("src_mac", mac.as_str()), ("priority", prio.as_str())];
        put("rocescope_pfc_paused_seconds_total", &l, *ns as f64 / 1e9);
        put("rocescope_pfc_pause_frames_total", &l, *fr as f64);
    }

    // The gauges of what runs now have no column: that they are there.
    let mut got = m.clone();
    let running: Vec<String> = got
        .keys()
        .filter(|k| k.starts_with("rocescope_pfc_pause_running_seconds{"))
        .cloned()
        .collect();
    assert_eq!(running.len(), 2, "{running:?}");
    for k in running {
        got.remove(&k);
    }
    // Active findings appear from the first report interval (10 s) on,
    // which a slow run reaches before this scrape and a fast one does not:
    // the soak test checks them against the findings stream.
    got.retain(|k, _| !k.starts_with("rocescope_findings_active{"));
    // Seconds: exact to the nanosecond.
    for (k, v) in got.iter_mut() {
        if k.starts_with("rocescope_pfc_paused_seconds_total") {
            *v = (*v * 1e9).round();
        }
    }
    for (k, v) in want.iter_mut() {
        if k.starts_with("rocescope_pfc_paused_seconds_total") {
            *v = (*v * 1e9).round();
        }
    }
    assert_eq!(got, want);
    assert_eq!(
        want[&format!("rocescope_tap_ring_full_drops_total{{iface={iface}}}")],
        0.0
    );

    // What the samples are known to hold (counts that do not depend on
    // the replay's timing): the comparison above is not of zeros.
    let at = |name: &str, labels: &str| want[&format!("{name}{{iface={iface}{labels}}}")];
    assert_eq!(at("rocescope_ce_marks_total", ""), 16.0);
    assert_eq!(at("rocescope_cnps_total", ""), 4.0);
    assert_eq!(at("rocescope_pfc_frames_total", ",priority=3"), 1498.0);
    let sender = |mac: &str| {
        at(
            "rocescope_pfc_pause_frames_total",
            &format!(",priority=3,src_mac={mac}"),
        )
    };
    assert_eq!(sender("02:00:00:02:00:01"), 1490.0);
    assert_eq!(sender("02:5a:00:05:02:01"), 6.0);
    // 59 when every record came in order; records late from a starved
    // drain thread change what the sequence analysis sees, not the equality.
    assert!(at("rocescope_spurious_retransmissions_total", "") > 0.0);
    let some = |prefix: &str| want.iter().any(|(k, v)| k.starts_with(prefix) && *v > 0.0);
    assert!(some("rocescope_rewinds_total{"));
    assert!(some("rocescope_gap_psns_total{"));
}

#[test]
fn the_rules_pass_promtool_check_and_their_unit_tests() {
    prometheus_installed("promtool");
    let dir = repo().join("contrib/prometheus");
    for args in [
        ["check", "rules", "rocescope.rules.yml"],
        ["test", "rules", "rocescope.rules.test.yml"],
    ] {
        let out = Command::new("promtool")
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "promtool {args:?}:\n{text}");
        // Four rules, one per alert the test file fires.
        let want = if args[0] == "check" {
            "SUCCESS: 4 rules found"
        } else {
            "SUCCESS"
        };
        assert!(text.contains(want), "promtool {args:?}:\n{text}");
    }
}
