//! Counter snapshots and the per-endpoint series they make.
//!
//! An **endpoint** is one place counters are read: a host's network
//! interface (`ethtool -S IF`) together with the RDMA device port on it
//! (`rdma statistic show link DEV/N`, `/sys/class/infiniband/DEV/ports/N`).
//! A **snapshot** is every counter of one endpoint at one instant; a
//! **series** is an endpoint's snapshots in time order, from which deltas
//! and rates follow.
use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

/// Where a counter value was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// `ethtool -S IF`.
    Ethtool,
    /// `rdma statistic show`.
    Rdma,
    /// A file under `/sys/class/infiniband/DEV/ports/N/{counters,hw_counters}`.
    Sysfs,
    /// A file under `/sys/class/net/IF/statistics` (the kernel's netdev
    /// counters: readable without root on any interface).
    Netdev,
    /// A `counters.parquet` written by `rocescope counters collect`.
    Parquet,
}

impl Source {
    /// The source a `counters.parquet` row names (`Parquet` for none or an
    /// unknown one).
    pub fn from_name(name: Option<&str>) -> Source {
        match name {
            Some("ethtool") => Source::Ethtool,
            Some("rdma") => Source::Rdma,
            Some("sysfs") => Source::Sysfs,
            Some("netdev") => Source::Netdev,
            _ => Source::Parquet,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Source::Ethtool => "ethtool",
            Source::Rdma => "rdma",
            Source::Sysfs => "sysfs",
            Source::Netdev => "netdev",
            Source::Parquet => "parquet",
        }
    }
}

/// One place counters are read. Fields a snapshot did not name are `None`.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Endpoint {
    pub host: Option<String>,
    /// The network interface (`ethtool -S` name space).
    pub iface: Option<String>,
    /// The RDMA device (`mlx5_0`).
    pub device: Option<String>,
    /// The RDMA device's port (1-based).
    pub port: Option<u32>,
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(h) = &self.host {
            parts.push(format!("host {h}"));
        }
        if let Some(i) = &self.iface {
            parts.push(format!("iface {i}"));
        }
        match (&self.device, self.port) {
            (Some(d), Some(p)) => parts.push(format!("device {d}/{p}")),
            (Some(d), None) => parts.push(format!("device {d}")),
            (None, Some(p)) => parts.push(format!("port {p}")),
            (None, None) => {}
        }
        if parts.is_empty() {
            f.write_str("(unnamed endpoint)")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

/// Every counter of one endpoint at one instant.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    pub ts_ns: u64,
    pub endpoint: Endpoint,
    /// Counter name → value and where it was read. A name read from two
    /// sources keeps the later one (the same counter, e.g. hw_counters in
    /// sysfs and in `rdma statistic`).
    pub values: BTreeMap<String, (u64, Source)>,
}

impl Snapshot {
    pub fn new(ts_ns: u64, endpoint: Endpoint) -> Self {
        Snapshot {
            ts_ns,
            endpoint,
            values: BTreeMap::new(),
        }
    }

    pub fn set(&mut self, name: &str, value: u64, source: Source) {
        self.values.insert(name.to_string(), (value, source));
    }
}

/// The priority a counter name carries: `rx_prio3_pause` → 3 (mlx5),
/// `rx_priority_3_xoff` → 3 (other drivers' spelling). Only a single digit
/// 0–7 not followed by another digit counts.
pub fn priority_of(name: &str) -> Option<u8> {
    let at = name.find("prio")?;
    let rest = &name[at + 4..];
    let rest = rest.strip_prefix("rity").unwrap_or(rest);
    let rest = rest.strip_prefix('_').unwrap_or(rest);
    let mut chars = rest.chars();
    let d = chars.next()?.to_digit(10)?;
    if d > 7 || chars.next().is_some_and(|c| c.is_ascii_digit()) {
        return None;
    }
    Some(d as u8)
}

/// The change of one counter between two consecutive snapshots.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    pub from_ns: u64,
    pub to_ns: u64,
    /// `None` when the value went down (the counter was reset: driver
    /// reload, port reset, or a wrap): that step says nothing.
    pub delta: Option<u64>,
}

impl Step {
    pub fn seconds(&self) -> f64 {
        (self.to_ns - self.from_ns) as f64 / 1e9
    }
    /// Per second; `None` for a reset or a zero-length step.
    pub fn rate(&self) -> Option<f64> {
        let s = self.seconds();
        self.delta.filter(|_| s > 0.0).map(|d| d as f64 / s)
    }
}

/// One endpoint's snapshots in time order (no two at the same instant).
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub endpoint: Endpoint,
    pub snapshots: Vec<Snapshot>,
}

impl Series {
    pub fn first_ns(&self) -> Option<u64> {
        self.snapshots.first().map(|s| s.ts_ns)
    }
    pub fn last_ns(&self) -> Option<u64> {
        self.snapshots.last().map(|s| s.ts_ns)
    }
    /// Seconds from the first snapshot to the last.
    pub fn span_s(&self) -> f64 {
        match (self.first_ns(), self.last_ns()) {
            (Some(a), Some(b)) => (b - a) as f64 / 1e9,
            _ => 0.0,
        }
    }

    /// Every counter name seen in any snapshot.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .snapshots
            .iter()
            .flat_map(|s| s.values.keys().map(String::as_str))
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// The steps of `name` between consecutive snapshots that both carry it.
    pub fn steps(&self, name: &str) -> Vec<Step> {
        self.steps_within(name, 0, u64::MAX)
    }

    /// [`Self::steps`] between the snapshots at or after `from_ns` and at or
    /// before `to_ns`.
    pub fn steps_within(&self, name: &str, from_ns: u64, to_ns: u64) -> Vec<Step> {
        let mut out = Vec::new();
        let mut prev: Option<(u64, u64)> = None;
        for s in &self.snapshots {
            if s.ts_ns < from_ns || s.ts_ns > to_ns {
                continue;
            }
            let Some(&(v, _)) = s.values.get(name) else {
                continue;
            };
            if let Some((t0, v0)) = prev {
                out.push(Step {
                    from_ns: t0,
                    to_ns: s.ts_ns,
                    delta: v.checked_sub(v0),
                });
            }
            prev = Some((s.ts_ns, v));
        }
        out
    }

    /// Sum of the valid deltas of `name` (0 when absent).
    pub fn delta(&self, name: &str) -> u64 {
        sum(&self.steps(name))
    }

    /// Whether any snapshot carries `name`.
    pub fn has(&self, name: &str) -> bool {
        self.snapshots.iter().any(|s| s.values.contains_key(name))
    }

    /// Steps where the value went down, per counter.
    pub fn resets(&self) -> Vec<(String, u64)> {
        self.names()
            .into_iter()
            .filter_map(|n| {
                let r = self.steps(n).iter().filter(|s| s.delta.is_none()).count() as u64;
                (r > 0).then(|| (n.to_string(), r))
            })
            .collect()
    }
}

/// Sum of the valid deltas.
pub fn sum(steps: &[Step]) -> u64 {
    steps
        .iter()
        .filter_map(|s| s.delta)
        .fold(0u64, u64::saturating_add)
}

/// Groups snapshots into one series per endpoint, sorted by time; snapshots
/// of one endpoint at the same instant (an `ethtool -S` file and an `rdma
/// statistic` file of the same minute) are merged.
pub fn into_series(mut snapshots: Vec<Snapshot>) -> Vec<Series> {
    snapshots.sort_by(|a, b| (&a.endpoint, a.ts_ns).cmp(&(&b.endpoint, b.ts_ns)));
    let mut out: Vec<Series> = Vec::new();
    for snap in snapshots {
        match out.last_mut() {
            Some(series) if series.endpoint == snap.endpoint => match series.snapshots.last_mut() {
                Some(last) if last.ts_ns == snap.ts_ns => last.values.extend(snap.values),
                _ => series.snapshots.push(snap),
            },
            _ => out.push(Series {
                endpoint: snap.endpoint.clone(),
                snapshots: vec![snap],
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_in_names() {
        assert_eq!(priority_of("rx_prio3_pause"), Some(3));
        assert_eq!(priority_of("tx_prio0_pause_duration"), Some(0));
        assert_eq!(priority_of("rx_priority_7_xoff.nic"), Some(7));
        assert_eq!(priority_of("rx_prio8_bytes"), None);
        assert_eq!(priority_of("rx_prio12_bytes"), None);
        assert_eq!(priority_of("rx_discards_phy"), None);
        assert_eq!(priority_of("rx_prio"), None);
    }

    #[test]
    fn steps_skip_resets_and_missing_values() {
        let ep = Endpoint::default();
        let mut snaps = Vec::new();
        for (t, v) in [
            (0u64, Some(10u64)),
            (1, Some(15)),
            (2, None),
            (3, Some(4)),
            (4, Some(9)),
        ] {
            let mut s = Snapshot::new(t * 1_000_000_000, ep.clone());
            if let Some(v) = v {
                s.set("c", v, Source::Ethtool);
            }
            snaps.push(s);
        }
        let series = into_series(snaps);
        assert_eq!(series.len(), 1);
        let steps = series[0].steps("c");
        let deltas: Vec<Option<u64>> = steps.iter().map(|s| s.delta).collect();
        // 10→15, 15→4 (a reset: no delta), 4→9.
        assert_eq!(deltas, vec![Some(5), None, Some(5)]);
        assert_eq!(series[0].delta("c"), 10);
        assert_eq!(steps[1].seconds(), 2.0);
        assert_eq!(series[0].resets(), vec![("c".to_string(), 1)]);
    }
}
