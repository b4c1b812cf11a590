//! The analysis parameters ([`Config`]): what `analyze`, `report` and `live`
//! pass the analyzer, and the identity string a dataset records them by.

use super::{EcmpGroup, dups, hops, topology};

/// Analysis parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Link speed the PFC quanta are timed at (default 100 Gb/s).
    pub link_speed_bps: u64,
    /// A continuous pause longer than this is a storm (default 200 ms).
    pub storm_ns: u64,
    /// Timeline bin width (default 100 µs).
    pub bin_ns: u64,
    /// DSCP → priority for untagged traffic (default: DSCP >> 3).
    pub dscp_to_priority: Option<[u8; 64]>,
    /// Link speed of particular taps, by interface name (`--link-speed
    /// TAP=400G`); others use `link_speed_bps`.
    pub tap_link_speed_bps: Vec<(String, u64)>,
    /// A BTH frame recorded again at the same tap within this time is a
    /// mirror copy (see [`dups`]); 0 turns the detection off.
    pub dup_window_ns: u64,
    /// Interfaces that are parallel paths (`--ecmp-group`, a topology
    /// file's groups): their balance is judged (see `ecmp`).
    pub ecmp_groups: Vec<EcmpGroup>,
    /// `--topology`: names of devices, taps' places, ECMP groups.
    pub topology: Option<topology::Topology>,
    /// Cross-tap matching window (see [`hops`]).
    pub match_window_ns: u64,
    /// `--clock-offset TAP=±DURATION`: a tap's clock minus the others'.
    pub clock_offsets: Vec<(String, i64)>,
    /// `--flow-idle`: a flow with no frame for this long is retired
    /// (docs/analysis.md, "Retirement").
    pub flow_idle_ns: u64,
    /// `--flow-active`: a flow active this long writes an interim row.
    pub flow_active_ns: u64,
    /// More flows live at the end than this: their rows go to the sink as
    /// they are made, as retired flows' do, and [`Analysis::flows`] holds
    /// only the findings' evidence and named flows (docs/analysis.md,
    /// "Retirement").
    pub rows_held: usize,
    /// Where the run recognises transports (`--udp-port`, `--ip-proto`;
    /// the reading options' own, in the run's identity there): what a UET
    /// row's Decode As names (docs/tables.md, `decode_as`).
    pub recognition: rocescope_common::wire::Recognition,
    /// The source can only ever have one tap (`live`): cross-tap matching
    /// keeps no window of frames (`hops::Matcher::one_tap`). What is
    /// written is the same either way; a source of several taps that sets
    /// it finds no hops.
    pub one_tap: bool,
    /// Cross-tap matching may run on a thread of its own once a second tap
    /// shows (`hops::Feed`; the pipelined run with one analyzer sets it).
    /// What is written is the same either way.
    pub match_thread: bool,
    /// The process exits once the run's results are out (`report`): the
    /// state of the flows retired at the end that nothing reads again is
    /// left for the exit to reclaim, not freed one flow at a time. What is
    /// written is the same either way.
    pub leave_at_exit: bool,
}

/// `--flow-idle`'s default: 60 s of capture time (NetFlow's inactive timeout
/// of many exporters, and IPFIX's RFC 7011 idle timeout usage).
pub const DEFAULT_FLOW_IDLE_NS: u64 = 60_000_000_000;
/// `--flow-active`'s default: an hour, the dataset's file per hour.
pub const DEFAULT_FLOW_ACTIVE_NS: u64 = 3_600_000_000_000;
/// [`Config::rows_held`]'s default: ~40 MB of rows (592 bytes each) and
/// their filters.
pub const DEFAULT_ROWS_HELD: usize = 65_536;

impl Config {
    /// The options that change what a run writes, as stable text, one
    /// `key=value` line each in a fixed order: what the dataset's run id
    /// hashes (docs/tables.md, "Dataset layout"). Explicit rather than the
    /// Debug output, so that a renamed field or a new option with its
    /// default leaves the ids of earlier runs as they were.
    pub fn identity(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        // Writing to a String cannot fail.
        let _ = writeln!(s, "link_speed={}", self.link_speed_bps);
        for (tap, bps) in &self.tap_link_speed_bps {
            let _ = writeln!(s, "link_speed.{tap}={bps}");
        }
        let _ = writeln!(s, "storm={}", self.storm_ns);
        let _ = writeln!(s, "bin={}", self.bin_ns);
        if let Some(map) = &self.dscp_to_priority {
            let map: Vec<String> = map.iter().map(u8::to_string).collect();
            let _ = writeln!(s, "dscp_map={}", map.join(","));
        }
        let _ = writeln!(s, "dup_window={}", self.dup_window_ns);
        for g in &self.ecmp_groups {
            let _ = writeln!(s, "ecmp_group={}", g.members.join(","));
        }
        if let Some(t) = &self.topology {
            for (tap, place) in &t.taps {
                let _ = writeln!(s, "topology.tap.{tap}={}", place.label());
            }
            for (mac, name) in &t.macs {
                let _ = writeln!(s, "topology.mac.{}={name}", crate::addr::Mac(*mac));
            }
        }
        let _ = writeln!(s, "match_window={}", self.match_window_ns);
        for (tap, ns) in &self.clock_offsets {
            let _ = writeln!(s, "clock_offset.{tap}={ns}");
        }
        // Written when not the default: earlier runs keep their ids.
        if self.flow_idle_ns != DEFAULT_FLOW_IDLE_NS {
            let _ = writeln!(s, "flow_idle={}", self.flow_idle_ns);
        }
        if self.flow_active_ns != DEFAULT_FLOW_ACTIVE_NS {
            let _ = writeln!(s, "flow_active={}", self.flow_active_ns);
        }
        s
    }

    /// The options keyed by tap (`--link-speed TAP=`, `--clock-offset
    /// TAP=`) that name no interface of the run (`taps`: every interface's
    /// name, as in the tables' `iface` column): one line each, saying which
    /// taps there are. A typo would otherwise change nothing, silently.
    pub fn unknown_taps(&self, taps: &[String]) -> Option<String> {
        let known = |name: &str| taps.iter().any(|t| t == name);
        let options = self
            .tap_link_speed_bps
            .iter()
            .map(|(n, _)| ("--link-speed", n))
            .chain(
                self.clock_offsets
                    .iter()
                    .map(|(n, _)| ("--clock-offset", n)),
            );
        let lines: Vec<String> = options
            .filter(|(_, name)| !known(name))
            .map(|(option, name)| {
                format!(
                    "{option} {name}=…: the captures have no tap {name:?} (their taps: {}); name one as in the tables' iface column",
                    taps.join(", ")
                )
            })
            .collect();
        (!lines.is_empty()).then(|| lines.join("\n"))
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            link_speed_bps: 100_000_000_000,
            storm_ns: 200_000_000,
            bin_ns: 100_000,
            dscp_to_priority: None,
            tap_link_speed_bps: Vec::new(),
            dup_window_ns: dups::DEFAULT_WINDOW_NS,
            ecmp_groups: Vec::new(),
            topology: None,
            match_window_ns: hops::DEFAULT_WINDOW_NS,
            clock_offsets: Vec::new(),
            flow_idle_ns: DEFAULT_FLOW_IDLE_NS,
            flow_active_ns: DEFAULT_FLOW_ACTIVE_NS,
            rows_held: DEFAULT_ROWS_HELD,
            recognition: rocescope_common::wire::Recognition::DEFAULT,
            one_tap: false,
            match_thread: false,
            leave_at_exit: false,
        }
    }
}
