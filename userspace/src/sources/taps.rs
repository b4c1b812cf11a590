//! Which files are one tap, and the run-wide names of their interfaces
//! (docs/inputs.md, "Taps across files").
//!
//! * `--tap NAME=FILE,FILE…` makes those files one tap, whatever they hold.
//! * Otherwise a file continues an earlier file's tap when both declare the
//!   same interfaces (link types and `if_name`s, in order) and the earlier
//!   file ended before this one's first frame: a rotation set (`tcpdump
//!   -C/-G`, a dumpcap ring buffer, `editcap -c` splits). The merge reaches
//!   a file's first frame knowing whether the files before it have ended,
//!   so this is decided exactly, without reading any file twice. Of several
//!   such taps the one whose file ended last is continued.
//! * Any other file is a tap of its own.
//!
//! A tap is named after its first file: the file's stem, without the
//! `_NNNNN_YYYYMMDDHHMMSS` that editcap and dumpcap append to the files of
//! a set when another input shares that stem. Its interfaces are named as
//! one file's: an unnamed interface after the tap (`#N` for interface
//! N > 0), an interface with `if_name` by it, prefixed `TAP/` when the
//! inputs are of several taps' names (a `--tap` of one interface is called
//! NAME).
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::input::{STDIN_NAME, capture_stem};
use super::merge::FirstLook;
use crate::error::{Error, Result};

/// `--tap NAME=FILE,FILE…`: these files are one tap called NAME.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TapSpec {
    pub name: String,
    pub files: Vec<PathBuf>,
}

impl std::str::FromStr for TapSpec {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        let (name, files) = text.split_once('=').ok_or_else(|| {
            format!("{text:?}: write NAME=FILE,FILE… (e.g. spine1=a.pcap,b.pcap)")
        })?;
        let name = name.trim();
        if name.is_empty() || name.contains('/') || name.contains('#') {
            return Err(format!(
                "{text:?}: the tap's name is empty or holds / or # (used in interface names)"
            ));
        }
        let files: Vec<PathBuf> = files
            .split(',')
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .map(PathBuf::from)
            .collect();
        if files.is_empty() {
            return Err(format!("{text:?}: name at least one file after {name}="));
        }
        Ok(TapSpec {
            name: name.to_string(),
            files,
        })
    }
}

/// How a tap's files were grouped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Grouping {
    /// One file.
    File,
    /// Files that follow one another in time with the same interfaces.
    Rotation,
    /// `--tap`.
    Option,
}

/// One tap of the run, as `summary.json` reports it (`input.taps`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TapFacts {
    pub name: String,
    pub files: Vec<String>,
    pub grouped_by: Grouping,
    /// Files of this tap whose first frame came before the previous file
    /// of the tap had ended (only `--tap` groups: a rotation set is never
    /// continued by a file that overlaps it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overlapping: Vec<String>,
    /// The rotation set this tap's file is named as part of, which it
    /// overlaps in time (so it was read as a tap of its own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overlaps_set: Option<String>,
}

struct Tap {
    name: String,
    files: Vec<usize>,
    grouped_by: Grouping,
    layout: Vec<(u32, Option<String>)>,
    /// Files of the tap still being read.
    open: usize,
    /// The last timestamp of the tap's files that ended.
    ended_at: u64,
    overlapping: Vec<usize>,
    overlaps_set: Option<String>,
    /// Run-wide interface index of each of the tap's interfaces.
    ifaces: Vec<Option<u16>>,
}

/// The taps of a run and the run-wide names of their interfaces.
pub struct Taps {
    paths: Vec<PathBuf>,
    labels: Vec<String>,
    /// `--tap` group of each file.
    forced: Vec<Option<usize>>,
    specs: Vec<TapSpec>,
    /// Each file's tap, once open.
    tap_of: Vec<Option<usize>>,
    taps: Vec<Tap>,
    /// Taps by `--tap` group.
    forced_taps: HashMap<usize, usize>,
    /// Inputs of several names: `if_name`s are prefixed `TAP/`.
    prefix_names: bool,
    names: Vec<String>,
    warnings: Vec<String>,
}

impl Taps {
    /// The taps of `paths` (a run's inputs, in order, with their first
    /// looks); `specs` are the `--tap` options, each file of which must be
    /// among the inputs.
    pub fn new(paths: &[PathBuf], specs: &[TapSpec]) -> Result<Taps> {
        // `-` in a --tap is standard input, as among the captures.
        let canon = |p: &Path| match p.as_os_str() == "-" {
            true => PathBuf::from(STDIN_NAME),
            false => std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf()),
        };
        let keys: Vec<PathBuf> = paths.iter().map(|p| canon(p)).collect();
        let mut forced = vec![None; paths.len()];
        for (g, spec) in specs.iter().enumerate() {
            if specs[..g].iter().any(|s| s.name == spec.name) {
                return Err(Error::Usage(format!(
                    "--tap {}: the name is given twice; list all of its files in one --tap",
                    spec.name
                )));
            }
            for file in &spec.files {
                let key = canon(file);
                let Some(i) = keys.iter().position(|k| *k == key) else {
                    return Err(Error::Usage(format!(
                        "--tap {}={}: {} is not among the inputs; give it as a capture too",
                        spec.name,
                        join(&spec.files),
                        file.display()
                    )));
                };
                if let Some(other) = forced[i] {
                    let other: &TapSpec = &specs[other];
                    return Err(Error::Usage(format!(
                        "--tap {}: {} is already in --tap {}; a file belongs to one tap",
                        spec.name,
                        file.display(),
                        other.name
                    )));
                }
                forced[i] = Some(g);
            }
        }
        let stems: Vec<String> = paths.iter().map(|p| capture_stem(p)).collect();
        let series: Vec<Option<&str>> = stems.iter().map(|s| series_stem(s)).collect();
        let labels: Vec<String> = (0..paths.len())
            .map(|i| match series[i] {
                Some(s) if series.iter().filter(|o| **o == Some(s)).count() > 1 => s.to_string(),
                _ => stems[i].clone(),
            })
            .collect();
        let mut distinct: Vec<&str> = (0..paths.len())
            .map(|i| match forced[i] {
                Some(g) => specs[g].name.as_str(),
                None => labels[i].as_str(),
            })
            .collect();
        distinct.sort_unstable();
        distinct.dedup();
        let prefix_names = distinct.len() > 1;
        Ok(Taps {
            paths: paths.to_vec(),
            labels,
            forced,
            specs: specs.to_vec(),
            tap_of: vec![None; paths.len()],
            taps: Vec::new(),
            forced_taps: HashMap::new(),
            prefix_names,
            names: Vec::new(),
            warnings: Vec::new(),
        })
    }

    /// File `file` starts (the merge reached its first frame): its tap.
    pub fn open(&mut self, file: usize, look: &FirstLook) {
        let first_ts = look.first_ts.unwrap_or(0);
        let tap = if let Some(g) = self.forced[file] {
            match self.forced_taps.get(&g) {
                Some(&t) => {
                    if self.taps[t].open > 0 {
                        self.taps[t].overlapping.push(file);
                        let before = self.taps[t].files.last().map(|&f| &self.paths[f]);
                        self.warnings.push(format!(
                            "--tap {}: {} starts before {} ends: their frames are merged by time as one tap's",
                            self.specs[g].name,
                            self.paths[file].display(),
                            before.map_or_else(String::new, |p| p.display().to_string())
                        ));
                    }
                    t
                }
                None => {
                    let t = self.new_tap(self.specs[g].name.clone(), Grouping::Option, look);
                    self.forced_taps.insert(g, t);
                    t
                }
            }
        } else {
            // Continue the auto tap with these interfaces whose file ended last.
            let free = self
                .taps
                .iter()
                .enumerate()
                .filter(|(_, t)| t.grouped_by != Grouping::Option && t.layout == look.layout)
                .filter(|(_, t)| t.open == 0 && t.ended_at <= first_ts)
                .max_by_key(|(_, t)| t.ended_at)
                .map(|(i, _)| i);
            match free {
                Some(t) => {
                    self.taps[t].grouped_by = Grouping::Rotation;
                    t
                }
                None => {
                    let label = self.labels[file].clone();
                    // Named as a set but overlapping one of it: say so.
                    let overlapped = self.taps.iter().find(|t| {
                        t.grouped_by != Grouping::Option && t.open > 0 && t.name == label
                    });
                    let overlapped = overlapped
                        .filter(|_| label != capture_stem(&self.paths[file]))
                        .map(|t| t.files.last().map(|&f| self.paths[f].display().to_string()));
                    if let Some(last) = &overlapped {
                        self.warnings.push(format!(
                            "{}: looks like a file of the rotation set {label} but starts before {} ends: read as a tap of its own",
                            self.paths[file].display(),
                            last.as_deref().unwrap_or_default()
                        ));
                    }
                    let t = self.new_tap(label.clone(), Grouping::File, look);
                    self.taps[t].overlaps_set = overlapped.map(|_| label);
                    t
                }
            }
        };
        self.taps[tap].files.push(file);
        self.taps[tap].open += 1;
        self.tap_of[file] = Some(tap);
    }

    fn new_tap(&mut self, name: String, grouped_by: Grouping, look: &FirstLook) -> usize {
        self.taps.push(Tap {
            name,
            files: Vec::new(),
            grouped_by,
            layout: look.layout.clone(),
            open: 0,
            ended_at: 0,
            overlapping: Vec::new(),
            overlaps_set: None,
            ifaces: Vec::new(),
        });
        self.taps.len() - 1
    }

    /// File `file` was read to its end, its last frame at `last_ts`.
    pub fn ended(&mut self, file: usize, last_ts: u64) {
        if let Some(t) = self.tap_of[file] {
            let tap = &mut self.taps[t];
            tap.open = tap.open.saturating_sub(1);
            tap.ended_at = tap.ended_at.max(last_ts);
        }
    }

    /// The tap of file `file` (its index: the analyzer's capture id).
    pub fn tap_of(&self, file: usize) -> Option<usize> {
        self.tap_of.get(file).copied().flatten()
    }

    /// The run-wide index of `file`'s interface `iface`, and whether it is
    /// new; `None` past u16. Inlined where a frame asks (every frame asks):
    /// an interface already named is two lookups.
    #[inline]
    pub fn index(&mut self, file: usize, iface: u32, if_name: Option<&str>) -> Option<(u16, bool)> {
        let t = self.tap_of(file)?;
        if let Some(&Some(i)) = self.taps[t].ifaces.get(iface as usize) {
            return Some((i, false));
        }
        self.name_new(t, iface, if_name)
    }

    /// Names interface `iface` of tap `t`, not named before.
    fn name_new(&mut self, t: usize, iface: u32, if_name: Option<&str>) -> Option<(u16, bool)> {
        let slot = iface as usize;
        let i = u16::try_from(self.names.len()).ok()?;
        let tap = &self.taps[t];
        let forced = tap.grouped_by == Grouping::Option;
        let base = match if_name {
            // A --tap of one interface is called what the option says.
            _ if forced && tap.layout.len() <= 1 && iface == 0 => tap.name.clone(),
            Some(n) if forced || self.prefix_names => format!("{}/{n}", tap.name),
            Some(n) => n.to_string(),
            None if iface == 0 => tap.name.clone(),
            None => format!("{}#{iface}", tap.name),
        };
        let mut name = base.clone();
        let mut n = 2;
        while self.names.contains(&name) {
            name = format!("{base}#{n}");
            n += 1;
        }
        self.names.push(name);
        let ifaces = &mut self.taps[t].ifaces;
        if ifaces.len() <= slot {
            ifaces.resize(slot + 1, None);
        }
        ifaces[slot] = Some(i);
        Some((i, true))
    }

    /// The run-wide index of `file`'s interface `iface`, if it had frames.
    pub fn get(&self, file: usize, iface: u32) -> Option<u16> {
        let t = self.tap_of(file)?;
        *self.taps[t].ifaces.get(iface as usize)?
    }

    pub fn name(&self, index: u16) -> &str {
        self.names
            .get(usize::from(index))
            .map(String::as_str)
            .unwrap_or("?")
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Warnings about files of a set that overlap.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// The taps, for `summary.json`.
    pub fn facts(&self) -> Vec<TapFacts> {
        let name = |f: &usize| self.paths[*f].display().to_string();
        self.taps
            .iter()
            .map(|t| TapFacts {
                name: t.name.clone(),
                files: t.files.iter().map(name).collect(),
                grouped_by: t.grouped_by,
                overlapping: t.overlapping.iter().map(name).collect(),
                overlaps_set: t.overlaps_set.clone(),
            })
            .collect()
    }

    /// How files were grouped, for stderr: None for one file.
    pub fn note(&self) -> Option<String> {
        if self.paths.len() < 2 {
            return None;
        }
        let taps: Vec<String> = self
            .taps
            .iter()
            .map(|t| {
                let files: Vec<String> = t
                    .files
                    .iter()
                    .map(|&f| self.paths[f].display().to_string())
                    .collect();
                let how = match t.grouped_by {
                    Grouping::File => "",
                    Grouping::Rotation => " (one after another: a rotation set)",
                    Grouping::Option => " (--tap)",
                };
                format!("{} = {}{how}", t.name, files.join(" + "))
            })
            .collect();
        Some(format!(
            "{} read as {}, merged by time: {}",
            crate::render::fmt_count(self.paths.len() as u64, "file"),
            crate::render::fmt_count(self.taps.len() as u64, "tap"),
            taps.join("; ")
        ))
    }

    /// The interfaces' names, by run-wide index.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The index of input `path` (as the run named it).
    pub fn file_index(&self, path: &Path) -> Option<usize> {
        self.paths.iter().position(|p| p == path)
    }
}

fn join(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// `x_00003_20261201102000` (editcap -c, dumpcap ring buffers) → `x`.
fn series_stem(stem: &str) -> Option<&str> {
    let (rest, time) = stem.rsplit_once('_')?;
    let (base, number) = rest.rsplit_once('_')?;
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    (digits(time, 14) && digits(number, 5) && !base.is_empty()).then_some(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn look(ts: u64, names: &[Option<&str>]) -> FirstLook {
        FirstLook {
            first_ts: Some(ts),
            layout: names.iter().map(|n| (1, n.map(str::to_string))).collect(),
        }
    }

    #[test]
    fn series_stems_and_tap_specs() {
        assert_eq!(series_stem("x_00003_20261201102000"), Some("x"));
        assert_eq!(series_stem("a_b_00000_20261201102000"), Some("a_b"));
        assert_eq!(series_stem("x_0003_20261201102000"), None);
        assert_eq!(series_stem("node1"), None);
        let spec: TapSpec = "spine=a.pcap, b.pcap".parse().unwrap();
        assert_eq!(spec.name, "spine");
        assert_eq!(
            spec.files,
            [PathBuf::from("a.pcap"), PathBuf::from("b.pcap")]
        );
        assert!(
            "spine"
                .parse::<TapSpec>()
                .unwrap_err()
                .contains("NAME=FILE")
        );
        assert!("a/b=x".parse::<TapSpec>().unwrap_err().contains("/ or #"));
        assert!(
            "a=".parse::<TapSpec>()
                .unwrap_err()
                .contains("at least one file")
        );
    }

    /// Two rotation sets interleaved in name order, a file overlapping its
    /// set, and named interfaces of other taps prefixed.
    #[test]
    fn files_are_grouped_as_they_follow_one_another() {
        let paths: Vec<PathBuf> = [
            "x_00000_20261201102000.pcap",
            "x_00001_20261201102001.pcap",
            "y.pcap",
            "x_00002_20261201102002.pcap",
            "h1.pcapng",
            "h2.pcapng",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        let looks = [
            look(0, &[None]),
            look(10, &[None]),
            look(5, &[None]),
            look(15, &[None]),
            look(0, &[Some("eth0")]),
            look(0, &[Some("eth0")]),
        ];
        let mut taps = Taps::new(&paths, &[]).unwrap();
        // The merge's order: x0 [0,9], h1, h2, y [5,30], x1 [10,14], x2 [15,..].
        taps.open(0, &looks[0]);
        taps.open(4, &looks[4]);
        taps.open(5, &looks[5]);
        taps.open(2, &looks[2]);
        taps.ended(0, 9);
        taps.open(1, &looks[1]);
        taps.ended(1, 14);
        taps.open(3, &looks[3]);
        assert_eq!(taps.tap_of(0), taps.tap_of(1));
        assert_eq!(taps.tap_of(1), taps.tap_of(3));
        assert_ne!(taps.tap_of(2), taps.tap_of(0));
        assert_ne!(taps.tap_of(4), taps.tap_of(5));
        assert_eq!(taps.index(3, 0, None), Some((0, true)));
        assert_eq!(taps.index(0, 0, None), Some((0, false)));
        assert_eq!(taps.index(2, 0, None), Some((1, true)));
        assert_eq!(taps.index(4, 0, Some("eth0")), Some((2, true)));
        assert_eq!(taps.index(5, 0, Some("eth0")), Some((3, true)));
        let facts = taps.facts();
        assert_eq!(facts[0].name, "x");
        assert_eq!(facts[0].grouped_by, Grouping::Rotation);
        assert_eq!(facts[0].files.len(), 3);
        assert!(taps.take_warnings().is_empty());
        assert_eq!(taps.names(), ["x", "y", "h1/eth0", "h2/eth0"]);
    }

    #[test]
    fn tap_options_name_inputs() {
        let paths = [PathBuf::from("a.pcap"), PathBuf::from("b.pcap")];
        let looks = [look(0, &[None]), look(0, &[None])];
        let spec: TapSpec = "t=a.pcap,c.pcap".parse().unwrap();
        let err = Taps::new(&paths, &[spec]).err().unwrap().to_string();
        assert!(
            err.contains("--tap t=a.pcap,c.pcap: c.pcap is not among the inputs"),
            "{err}"
        );
        let spec: TapSpec = "t=a.pcap,b.pcap".parse().unwrap();
        let mut taps = Taps::new(&paths, &[spec]).unwrap();
        taps.open(0, &looks[0]);
        taps.open(1, &looks[1]);
        assert_eq!(taps.tap_of(0), taps.tap_of(1));
        let warnings = taps.take_warnings();
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("b.pcap starts before a.pcap ends"),
            "{warnings:?}"
        );
        assert_eq!(taps.facts()[0].overlapping, ["b.pcap"]);
    }
}
