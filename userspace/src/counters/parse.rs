//! Readers for what engineers already collect: `ethtool -S IF` text,
//! `rdma statistic show` text, sysfs counter files, and the timestamped
//! snapshot series that a cron job appending both every minute makes:
//!
//! ```text
//! # ts=2026-12-01T07:00:00+00:00 host=node1 iface=eth2 device=mlx5_0 port=1
//! NIC statistics:
//!      rx_prio3_pause: 1024
//!      ...
//! link mlx5_0/1 rx_write_requests 0 ... local_ack_timeout_err 12 ...
//! ```
//!
//! Nothing here panics on bad input: a line that is none of these is a
//! [`Problem`] naming its file and line, the line is skipped and reading
//! goes on. Counter names are kept exactly as the tool printed them, known
//! or not.
use std::fmt;
use std::path::{Path, PathBuf};

use super::model::{Endpoint, Snapshot, Source};

mod sysfs;
pub use sysfs::{read_ib_port, read_netdev_stats};

/// A line (or file) that could not be read as counters; reading went on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub path: PathBuf,
    /// 1-based; 0 for a whole file (a sysfs file that could not be read).
    pub line: usize,
    pub detail: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.path.display(), self.detail)
        } else {
            write!(f, "{}:{}: {}", self.path.display(), self.line, self.detail)
        }
    }
}

/// Snapshots read from one file, and the lines that were skipped.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    pub snapshots: Vec<Snapshot>,
    pub problems: Vec<Problem>,
}

/// Counter values have at most this many characters (u64 has 20 digits):
/// a longer "number" is a mangled line, not a counter.
const MAX_VALUE_CHARS: usize = 24;

/// A counter value as tools print it: decimal, or `0x…` hex (some sysfs
/// files). Negative and fractional values are not counters.
pub fn parse_value(text: &str) -> Option<u64> {
    let t = text.trim();
    if t.is_empty() || t.len() > MAX_VALUE_CHARS {
        return None;
    }
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    }
}

/// A counter name: printable, no spaces, not empty (ethtool names may hold
/// `.`, `-`, `[`, `]`, e.g. `tx_priority_0_xon.nic`, `rx_queue_0_packets`).
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_graphic() && c != ':' && c != '=')
}

/// The counters of one snapshot being read: the header's endpoint, and any
/// other RDMA link an `rdma statistic show` without arguments printed.
#[derive(Debug)]
pub struct Block {
    ts_ns: u64,
    main: Snapshot,
    /// Whether the header named the RDMA device (else the first `link`
    /// line names it).
    header_device: bool,
    others: Vec<Snapshot>,
    /// The previous content line was an `rdma` line: a line of bare
    /// `name value` pairs continues it.
    in_rdma: Option<usize>,
}

impl Block {
    pub fn new(ts_ns: u64, endpoint: Endpoint) -> Self {
        Block {
            ts_ns,
            header_device: endpoint.device.is_some(),
            main: Snapshot::new(ts_ns, endpoint),
            others: Vec::new(),
            in_rdma: None,
        }
    }

    /// Reads one line of `ethtool -S` or `rdma statistic show` output.
    /// `Err` says why the line is not counters.
    pub fn line(&mut self, line: &str) -> Result<(), String> {
        let t = line.trim();
        if t.is_empty() || t == "NIC statistics:" {
            return Ok(());
        }
        if let Some(rest) = t.strip_prefix("link ") {
            return self.rdma_link(rest);
        }
        if let Some((name, value)) = t.rsplit_once(':') {
            let name = name.trim();
            if let Some(v) = parse_value(value) {
                if !valid_name(name) {
                    return Err(format!("{name:?} is not a counter name"));
                }
                self.in_rdma = None;
                self.main.set(name, v, Source::Ethtool);
                return Ok(());
            }
            // `Optional-set: cc_rx_ce_pkts 0` continues an rdma line.
            if self.in_rdma.is_none() {
                return Err(format!(
                    "{:?} is not a number: expected `name: value` as `ethtool -S` prints it",
                    value.trim()
                ));
            }
        }
        match self.in_rdma {
            Some(target) => self.rdma_pairs(target, t),
            None => Err(
                "neither `ethtool -S` (`name: value`) nor `rdma statistic show` (`link DEV/PORT name value …`) output"
                    .into(),
            ),
        }
    }

    /// `mlx5_0/1 name value name value …`.
    fn rdma_link(&mut self, rest: &str) -> Result<(), String> {
        let (link, pairs) = rest
            .trim()
            .split_once(char::is_whitespace)
            .unwrap_or((rest, ""));
        let (dev, port) = link
            .split_once('/')
            .ok_or_else(|| format!("`link {link}`: expected DEV/PORT, e.g. mlx5_0/1"))?;
        let port: u32 = port
            .parse()
            .map_err(|_| format!("`link {link}`: the port {port:?} is not a number"))?;
        if dev.is_empty() || !valid_name(dev) {
            return Err(format!("`link {link}`: {dev:?} is not a device name"));
        }
        let ep = &mut self.main.endpoint;
        let target = if !self.header_device && ep.device.is_none() {
            // The header named no device: the first link is the iface's.
            ep.device = Some(dev.to_string());
            ep.port = Some(port);
            0
        } else if ep.device.as_deref() == Some(dev) && ep.port.is_none_or(|p| p == port) {
            ep.port = Some(port);
            0
        } else {
            let found = self.others.iter().position(|s| {
                s.endpoint.device.as_deref() == Some(dev) && s.endpoint.port == Some(port)
            });
            match found {
                Some(i) => i + 1,
                None => {
                    let endpoint = Endpoint {
                        host: self.main.endpoint.host.clone(),
                        iface: None,
                        device: Some(dev.to_string()),
                        port: Some(port),
                    };
                    self.others.push(Snapshot::new(self.ts_ns, endpoint));
                    self.others.len()
                }
            }
        };
        self.in_rdma = Some(target);
        self.rdma_pairs(target, pairs)
    }

    fn rdma_pairs(&mut self, target: usize, text: &str) -> Result<(), String> {
        // Labels such as `Optional-set:` or `Dynamic-set:` group counters.
        let mut tokens = text.split_whitespace().filter(|t| !t.ends_with(':'));
        let snap = match target {
            0 => &mut self.main,
            i => match self.others.get_mut(i - 1) {
                Some(s) => s,
                None => return Err("internal: no such rdma link".into()),
            },
        };
        while let Some(name) = tokens.next() {
            let Some(value) = tokens.next() else {
                return Err(format!("`{name}` has no value after it"));
            };
            let v = parse_value(value)
                .ok_or_else(|| format!("`{name} {value}`: {value:?} is not a number"))?;
            if !valid_name(name) {
                return Err(format!("{name:?} is not a counter name"));
            }
            snap.set(name, v, Source::Rdma);
        }
        Ok(())
    }

    /// The snapshots read: the header's endpoint first (when it got any
    /// counter), then other RDMA links.
    pub fn finish(self) -> Vec<Snapshot> {
        let mut out = Vec::with_capacity(1 + self.others.len());
        if !self.main.values.is_empty() {
            out.push(self.main);
        }
        out.extend(self.others.into_iter().filter(|s| !s.values.is_empty()));
        out
    }

    /// Adds a value read elsewhere (sysfs) to the header's endpoint.
    pub fn set(&mut self, name: &str, value: u64, source: Source) {
        self.main.set(name, value, source);
    }
}

/// An RFC 3339 time (`2026-12-01T07:00:00+00:00`, `…Z`, fractions) as
/// nanoseconds since the Unix epoch.
pub fn parse_time(text: &str) -> Option<u64> {
    let t = chrono::DateTime::parse_from_rfc3339(text.trim()).ok()?;
    u64::try_from(t.timestamp_nanos_opt()?).ok()
}

/// `ts=… host=… iface=… device=… port=…` (after `#`).
fn parse_header(text: &str) -> Result<(u64, Endpoint), String> {
    let mut ts = None;
    let mut ep = Endpoint::default();
    for item in text.split_whitespace() {
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| format!("header item {item:?}: write key=value"))?;
        if v.is_empty() {
            return Err(format!("header item {item:?} has no value"));
        }
        match k {
            "ts" => {
                ts = Some(parse_time(v).ok_or_else(|| {
                    format!(
                        "ts={v:?} is not an RFC 3339 time: write e.g. ts=$(date -Is) (2026-12-01T07:00:00+00:00)"
                    )
                })?)
            }
            "host" => ep.host = Some(v.to_string()),
            "iface" => ep.iface = Some(v.to_string()),
            "device" => ep.device = Some(v.to_string()),
            "port" => {
                ep.port = Some(
                    v.parse()
                        .map_err(|_| format!("port={v:?} is not a port number"))?,
                )
            }
            _ => {
                return Err(format!(
                    "unknown header key {k:?}: the keys are ts, host, iface, device, port"
                ));
            }
        }
    }
    let ts = ts.ok_or("the header has no ts=: write `# ts=$(date -Is) …`")?;
    Ok((ts, ep))
}

/// Reads a snapshot series: blocks each starting with a `# ts=…` header.
/// Other lines starting with `#` or `$` are comments.
pub fn parse_series(path: &Path, text: &str) -> Parsed {
    let mut out = Parsed::default();
    let mut block: Option<Block> = None;
    // A header that failed: its block's lines are skipped, not each reported.
    let mut skipping = false;
    let mut orphan_reported = false;
    let problem = |line: usize, detail: String| Problem {
        path: path.to_path_buf(),
        line,
        detail,
    };
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let t = line.trim();
        if let Some(comment) = t.strip_prefix('#') {
            let c = comment.trim_start();
            if c.starts_with("ts=") {
                if let Some(b) = block.take() {
                    out.snapshots.extend(b.finish());
                }
                match parse_header(c) {
                    Ok((ts, ep)) => {
                        block = Some(Block::new(ts, ep));
                        skipping = false;
                    }
                    Err(e) => {
                        out.problems
                            .push(problem(n, format!("{e}; this snapshot is skipped")));
                        skipping = true;
                    }
                }
            }
            continue;
        }
        if t.starts_with('$') || t.is_empty() || skipping {
            continue;
        }
        match block.as_mut() {
            Some(b) => {
                if let Err(e) = b.line(line) {
                    out.problems.push(problem(n, e));
                }
            }
            None if !orphan_reported => {
                orphan_reported = true;
                out.problems.push(problem(
                    n,
                    "counters before any `# ts=` header are skipped: start each snapshot with `# ts=<RFC 3339 time> [host=H] [iface=IF] [device=DEV] [port=N]`".into(),
                ));
            }
            None => {}
        }
    }
    if let Some(b) = block {
        out.snapshots.extend(b.finish());
    }
    out
}

/// Snapshots as series text, the way the cron line of docs/counters.md
/// writes them: a `# ts=` header, `ethtool -S` lines, then one `rdma
/// statistic show` line for the counters of the RDMA device.
pub fn render_series(snapshots: &[Snapshot]) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    for s in snapshots {
        let ts = i64::try_from(s.ts_ns)
            .map(chrono::DateTime::from_timestamp_nanos)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true))
            .unwrap_or_default();
        let ep = &s.endpoint;
        let _ = write!(o, "# ts={ts}");
        for (k, v) in [
            ("host", &ep.host),
            ("iface", &ep.iface),
            ("device", &ep.device),
        ] {
            if let Some(v) = v {
                let _ = write!(o, " {k}={v}");
            }
        }
        if let Some(p) = ep.port {
            let _ = write!(o, " port={p}");
        }
        o.push('\n');
        let (rdma, eth): (Vec<_>, Vec<_>) = s
            .values
            .iter()
            .partition(|(_, (_, src))| matches!(src, Source::Rdma | Source::Sysfs));
        if !eth.is_empty() {
            o.push_str("NIC statistics:\n");
            for (name, (v, _)) in eth {
                let _ = writeln!(o, "     {name}: {v}");
            }
        }
        if !rdma.is_empty() {
            let _ = write!(
                o,
                "link {}/{}",
                ep.device.as_deref().unwrap_or("rdma0"),
                ep.port.unwrap_or(1)
            );
            for (name, (v, _)) in rdma {
                let _ = write!(o, " {name} {v}");
            }
            o.push('\n');
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Parsed {
        parse_series(Path::new("t.txt"), text)
    }

    #[test]
    fn rendered_series_parse_back() {
        let ep = Endpoint {
            host: Some("h".into()),
            iface: Some("eth2".into()),
            device: Some("mlx5_0".into()),
            port: Some(1),
        };
        let mut s = Snapshot::new(1_500_000_001, ep);
        s.set("rx_prio3_pause", 7, Source::Ethtool);
        s.set("np_cnp_sent", 9, Source::Rdma);
        let text = render_series(std::slice::from_ref(&s));
        assert!(text.starts_with(
            "# ts=1970-01-01T00:00:01.500000001Z host=h iface=eth2 device=mlx5_0 port=1\n"
        ));
        let p = parse(&text);
        assert_eq!(p.problems, vec![]);
        assert_eq!(p.snapshots, vec![s]);
    }

    #[test]
    fn values() {
        assert_eq!(parse_value(" 42\n"), Some(42));
        assert_eq!(parse_value("0x10"), Some(16));
        assert_eq!(parse_value("-1"), None);
        assert_eq!(parse_value("1.5"), None);
        assert_eq!(parse_value("99999999999999999999999999"), None);
        assert_eq!(parse_value(""), None);
    }

    #[test]
    fn times() {
        assert_eq!(parse_time("1970-01-01T00:00:01+00:00"), Some(1_000_000_000));
        assert_eq!(
            parse_time("1970-01-01T01:00:01.5+01:00"),
            Some(1_500_000_000)
        );
        assert_eq!(parse_time("yesterday"), None);
        // Before the epoch: not representable as ts_ns.
        assert_eq!(parse_time("1969-12-31T23:59:59Z"), None);
    }

    #[test]
    fn ethtool_and_rdma_in_one_snapshot() {
        let p = parse(
            "# ts=1970-01-01T00:00:10Z host=h1 iface=eth2 device=mlx5_0 port=1\n\
             $ ethtool -S eth2\n\
             NIC statistics:\n     rx_prio3_pause: 7\n     tx_priority_0_xon.nic: 1\n\
             link mlx5_0/1 out_of_sequence 3 local_ack_timeout_err 2\n    Optional-set: cc_rx_ce_pkts 5\n",
        );
        assert_eq!(p.problems, vec![]);
        assert_eq!(p.snapshots.len(), 1);
        let s = &p.snapshots[0];
        assert_eq!(s.ts_ns, 10_000_000_000);
        assert_eq!(s.endpoint.device.as_deref(), Some("mlx5_0"));
        assert_eq!(s.values["rx_prio3_pause"], (7, Source::Ethtool));
        assert_eq!(s.values["tx_priority_0_xon.nic"], (1, Source::Ethtool));
        assert_eq!(s.values["local_ack_timeout_err"], (2, Source::Rdma));
        assert_eq!(s.values["cc_rx_ce_pkts"], (5, Source::Rdma));
    }

    #[test]
    fn other_links_are_endpoints_of_their_own() {
        let p = parse(
            "# ts=1970-01-01T00:00:10Z host=h1\n\
             link mlx5_0/1 np_cnp_sent 3\nlink mlx5_1/1 np_cnp_sent 4\n",
        );
        assert_eq!(p.problems, vec![]);
        assert_eq!(p.snapshots.len(), 2);
        assert_eq!(p.snapshots[0].endpoint.device.as_deref(), Some("mlx5_0"));
        assert_eq!(p.snapshots[1].endpoint.device.as_deref(), Some("mlx5_1"));
        assert_eq!(p.snapshots[1].endpoint.host.as_deref(), Some("h1"));
    }

    #[test]
    fn bad_lines_are_reported_with_their_line() {
        let p = parse(
            "rx_packets: 1\n\
             # ts=1970-01-01T00:00:10Z\n\
             rx_packets: many\n\
             garbage here\n\
             link mlx5_0 x 1\n\
             link mlx5_0/1 a 1 b\n\
             rx_ok: 5\n\
             # ts=not-a-time host=h\n\
             rx_ok: 6\n\
             # ts=1970-01-01T00:00:20Z colour=blue\n",
        );
        let lines: Vec<usize> = p.problems.iter().map(|p| p.line).collect();
        assert_eq!(lines, vec![1, 3, 4, 5, 6, 8, 10]);
        assert!(
            p.problems[0]
                .to_string()
                .starts_with("t.txt:1: counters before")
        );
        assert!(p.problems[5].detail.contains("RFC 3339"));
        assert!(
            p.problems[6]
                .detail
                .contains("unknown header key \"colour\"")
        );
        // rx_ok of line 7 is kept; line 9 belongs to the skipped snapshot.
        assert_eq!(p.snapshots.len(), 1);
        assert_eq!(p.snapshots[0].values["rx_ok"].0, 5);
        assert_eq!(p.snapshots[0].values["a"].0, 1);
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let mut seed = 7u64;
        for _ in 0..200 {
            let mut s = String::from("# ts=1970-01-01T00:00:10Z\n");
            for _ in 0..64 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let c = b"link /:#$ 0123x_\n\t"[(seed >> 33) as usize % 18];
                s.push(c as char);
            }
            let _ = parse(&s);
        }
    }
}
