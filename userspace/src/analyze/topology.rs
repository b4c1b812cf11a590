//! `--topology FILE`: what the fabric's devices are called (docs/topology.md).
//!
//! A small JSON file that names taps' places (device and port), MACs'
//! devices, and ECMP groups. Findings then say `r0` and `leaf0 Ethernet8`
//! beside the MACs and tap names; without the file everything is named
//! from MACs and tap names alone. Read whole at parse time (it is
//! hand-written and small: larger than [`MAX_BYTES`] is refused), every
//! key checked, unknown keys refused, so a typo is an error naming the
//! file and the key rather than a name silently missing.
use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::tree::PauseTree;

/// A topology file is a few hundred lines at most.
pub const MAX_BYTES: u64 = 1 << 20;

/// Where a tap is: a device and, optionally, its port.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TapPlace {
    pub device: String,
    #[serde(default)]
    pub port: Option<String>,
}

impl TapPlace {
    /// `leaf0 Ethernet8`, or `leaf0`.
    pub fn label(&self) -> String {
        match &self.port {
            Some(p) => format!("{} {p}", self.device),
            None => self.device.clone(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    taps: BTreeMap<String, TapPlace>,
    #[serde(default)]
    macs: BTreeMap<String, String>,
    #[serde(default)]
    ecmp_groups: Vec<Vec<String>>,
}

/// A parsed topology file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Topology {
    /// Tap (interface name as in the tables' `iface`) → its place.
    pub taps: BTreeMap<String, TapPlace>,
    /// MAC → the device that sends with it.
    pub macs: BTreeMap<[u8; 6], String>,
    /// Interfaces that are parallel paths, for ecmp-imbalance beside
    /// `--ecmp-group` (names as in the tables' `iface`).
    pub ecmp_groups: Vec<super::EcmpGroup>,
}

impl Topology {
    /// Reads and checks `path` (`--topology`'s value parser).
    pub fn load(path: &Path) -> Result<Topology, String> {
        let shown = path.display();
        let size = std::fs::metadata(path)
            .map_err(|e| format!("{shown}: {e}"))?
            .len();
        if size > MAX_BYTES {
            return Err(format!(
                "{shown}: {size} bytes; a topology file is at most {MAX_BYTES} (name taps, MACs and ECMP groups only)"
            ));
        }
        let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
        Self::parse(&text).map_err(|e| format!("{shown}: {e}"))
    }

    /// The file's text (JSON, see docs/topology.md).
    pub fn parse(text: &str) -> Result<Topology, String> {
        let file: File = serde_json::from_str(text).map_err(|e| {
            format!("{e}; write a JSON object with \"taps\", \"macs\" and \"ecmp_groups\" (docs/topology.md)")
        })?;
        let mut macs = BTreeMap::new();
        for (key, device) in file.macs {
            let mac = parse_mac(&key).ok_or_else(|| {
                format!(
                    "macs: {key:?} is no MAC address; write six hex bytes, e.g. 02:00:00:02:00:01"
                )
            })?;
            if device.trim().is_empty() {
                return Err(format!("macs: {key}: the device name is empty"));
            }
            if macs.insert(mac, device).is_some() {
                return Err(format!("macs: {key} is named twice"));
            }
        }
        for (tap, place) in &file.taps {
            if place.device.trim().is_empty() {
                return Err(format!("taps: {tap}: the device name is empty"));
            }
        }
        for (i, group) in file.ecmp_groups.iter().enumerate() {
            let mut names: Vec<&String> = group.iter().collect();
            names.sort();
            names.dedup();
            if names.len() != group.len() || group.len() < 2 || group.iter().any(|m| m.is_empty()) {
                return Err(format!(
                    "ecmp_groups[{i}]: a group is two or more distinct interface names, e.g. [\"leaf0-spine0\", \"leaf0-spine1\"]"
                ));
            }
        }
        Ok(Topology {
            taps: file.taps,
            macs,
            ecmp_groups: file
                .ecmp_groups
                .into_iter()
                .map(|members| super::EcmpGroup { members })
                .collect(),
        })
    }

    /// Names the trees' senders and taps.
    pub fn name_trees(&self, trees: &mut [PauseTree]) {
        for node in trees.iter_mut().flat_map(|t| t.nodes.iter_mut()) {
            if let Some(mac) = parse_mac(&node.src_mac) {
                node.device = self.macs.get(&mac).cloned();
            }
            node.place = self.taps.get(&node.iface_name).map(TapPlace::label);
        }
    }
}

/// `aa:bb:cc:dd:ee:ff` (or with `-`) → bytes.
fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = text.split([':', '-']);
    for b in &mut mac {
        let p = parts.next()?;
        if p.len() != 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_file_parses_and_mistakes_are_named() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../pcaps/pfc-storm.topology.json"
        ))
        .unwrap();
        let t = Topology::parse(&text).unwrap();
        assert_eq!(t.macs[&[2, 0, 0, 2, 0, 1]], "r0");
        assert_eq!(t.taps["leaf1-r0-both"].label(), "leaf1 Ethernet0");
        assert_eq!(t.ecmp_groups.len(), 1);

        let err = Topology::parse(r#"{"macs": {"02:00:00:02:00": "r0"}}"#).unwrap_err();
        assert!(
            err.contains("\"02:00:00:02:00\" is no MAC address"),
            "{err}"
        );
        let err = Topology::parse(r#"{"mac": {}}"#).unwrap_err();
        assert!(err.contains("unknown field `mac`"), "{err}");
        let err = Topology::parse(r#"{"ecmp_groups": [["a"]]}"#).unwrap_err();
        assert!(err.starts_with("ecmp_groups[0]"), "{err}");
        let err = Topology::parse(r#"{"taps": {"t": {"device": ""}}}"#).unwrap_err();
        assert!(err.contains("taps: t: the device name is empty"), "{err}");
    }
}
