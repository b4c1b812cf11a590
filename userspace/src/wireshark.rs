//! `extract`: the frames a flow's or a finding's display filter shows
//! ([`crate::analyze::wireshark`]), copied to a pcapng of their own
//! (docs/wireshark.md).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use rocescope_common::{Kind, PacketRecord, flags, proto::ib};

use crate::analyze::wireshark::Handoff;
use crate::analyze::{Analysis, FlowKey, FlowRow};
use crate::decode;
use crate::offline::{self, Options};
use crate::sources::{CaptureReader, Filter};
use crate::synth::capture_writer::{CaptureWrite, PcapngWriter};
use crate::{Error, Result};

/// What `extract` takes out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// A `flow_id` as in flows.parquet.
    Flow(u32),
    /// A finding's `id` as in summary.json.
    Finding(String),
}

/// What `extract` wrote.
#[derive(Debug)]
pub struct Extracted {
    pub frames: u64,
    pub flows: Vec<u32>,
    /// The interfaces written, by name.
    pub interfaces: Vec<String>,
    pub display_filter: String,
    pub decode_as: Vec<String>,
}

/// The frames a selection's filter shows, as the analysis keys them.
#[derive(Debug, Default)]
struct Wanted {
    /// RoCE frames (CNPs excepted) of these flows.
    flows: HashSet<FlowKey>,
    /// CNPs of these keys, or all of them.
    cnps: HashSet<FlowKey>,
    all_cnps: bool,
    /// 802.3x PAUSE frames.
    pauses: bool,
    /// `(src_ip, dst_ip, dest_qp)` of `flows` and `cnps`: looked up for
    /// every record, before its interface is known.
    triples: HashSet<([u8; 16], [u8; 16], u32)>,
}

impl Wanted {
    fn with_triples(mut self) -> Self {
        self.triples = self
            .flows
            .iter()
            .chain(&self.cnps)
            .map(|k| (k.1, k.2, k.3))
            .collect();
        self
    }

    /// Whether `rec` can be wanted, before its interface is known.
    fn maybe(&self, rec: &PacketRecord) -> bool {
        let triple = (rec.src_ip, rec.dst_ip, rec.dest_qp & ib::QPN_MASK);
        match rec.kind() {
            Kind::Roce if rec.has(flags::HAS_BTH) => self.triples.contains(&triple),
            Kind::Cnp if rec.has(flags::HAS_BTH) => self.all_cnps || self.triples.contains(&triple),
            Kind::Pause => self.pauses,
            _ => false,
        }
    }

    fn matches(&self, rec: &PacketRecord, iface: u16) -> bool {
        let key = (iface, rec.src_ip, rec.dst_ip, rec.dest_qp & ib::QPN_MASK);
        match rec.kind() {
            Kind::Roce => self.flows.contains(&key),
            Kind::Cnp => self.all_cnps || self.cnps.contains(&key),
            Kind::Pause => self.pauses,
            _ => false,
        }
    }
}

/// Analyses `paths` as `analyze` would, then copies the frames the
/// selection's display filter shows (original bytes, timestamps and
/// interfaces) to `out` (pcapng).
pub fn extract(
    paths: &[PathBuf],
    opts: &Options,
    what: &Selection,
    out: &Path,
) -> Result<Extracted> {
    let outcome = offline::run(paths, opts, None)?;
    let (flows, wanted, handoff) = select(&outcome.analysis, what)?;
    let wanted = wanted.with_triples();
    let mut writer = PcapngWriter::create(out)?;
    let write_err = |e: std::io::Error| Error::WriteIo {
        path: out.to_path_buf(),
        detail: e.to_string(),
        source: e,
    };
    let mut filter = opts.filter.as_deref().map(Filter::new).transpose()?;
    // Run-wide interface indices, as the analysis handed them out.
    let taps = &outcome.taps;
    // (file, interface in the file) → interface in `out`.
    let mut written: BTreeMap<(usize, u32), u32> = BTreeMap::new();
    let mut interfaces = Vec::new();
    let mut frames = 0u64;
    let mut rec = PacketRecord::default();
    for (file, path) in paths.iter().enumerate() {
        let Some(slot) = taps.file_index(path) else {
            continue;
        };
        let mut reader = CaptureReader::open(path)?;
        // The selected frame's bytes: the frame borrows the reader, whose
        // interface list is read after it.
        let mut data = Vec::new();
        while let Some(frame) = reader.next_frame()? {
            if let Some(f) = filter.as_mut()
                && !f.matches(&frame)?
            {
                continue;
            }
            decode::decode_into(&mut rec, frame.linktype, frame.data, frame.orig_len);
            if rec.kind() == Kind::Other {
                continue;
            }
            let (file_iface, ts_ns, orig_len) = (frame.iface, frame.ts_ns, frame.orig_len);
            let maybe = wanted.maybe(&rec);
            if maybe {
                data.clear();
                data.extend_from_slice(frame.data);
            }
            let Some(info) = reader.interfaces().get(file_iface as usize) else {
                continue;
            };
            let Some(iface) = taps.get(slot, file_iface) else {
                continue;
            };
            if !maybe || !wanted.matches(&rec, iface) {
                continue;
            }
            let id = match written.get(&(file, file_iface)) {
                Some(&id) => id,
                None => {
                    let name = taps.name(iface).to_string();
                    let linktype = u16::try_from(info.linktype).map_err(|_| {
                        Error::Usage(format!(
                            "{}: interface {file_iface} has link type {}, which pcapng cannot hold",
                            path.display(),
                            info.linktype
                        ))
                    })?;
                    let units = reader
                        .ts_units(file_iface as usize)
                        .unwrap_or(1_000_000_000);
                    let id = writer
                        .add_interface_with_units(&name, linktype, info.snaplen, units)
                        .map_err(write_err)?;
                    written.insert((file, file_iface), id);
                    interfaces.push(name);
                    id
                }
            };
            writer
                .write_frame_orig(id, ts_ns, &data, orig_len)
                .map_err(write_err)?;
            frames += 1;
        }
    }
    writer.finish().map_err(write_err)?;
    Ok(Extracted {
        frames,
        flows,
        interfaces,
        display_filter: handoff.display_filter,
        decode_as: handoff.decode_as,
    })
}

/// The flows of `what`, the frames its filter shows and the filter; an
/// unknown id is an error listing the ones there are.
fn select(analysis: &Analysis, what: &Selection) -> Result<(Vec<u32>, Wanted, Handoff)> {
    let key = |r: &FlowRow| (r.iface, r.src_ip, r.dst_ip, r.dest_qp);
    match what {
        Selection::Flow(id) => {
            let Some(row) = analysis.flows.get(*id as usize) else {
                return Err(Error::Usage(match analysis.flows.len() {
                    0 => format!("--flow {id}: these captures have no flows"),
                    n => format!(
                        "--flow {id}: no such flow; these captures have {n} flows, 0 to {} (flow_id in flows.parquet)",
                        n - 1
                    ),
                }));
            };
            let wanted = Wanted {
                flows: HashSet::from([key(row)]),
                ..Wanted::default()
            };
            let handoff = Handoff {
                display_filter: row.display_filter.clone(),
                decode_as: vec![row.decode_as.clone()],
                flows_left_out: 0,
            };
            Ok((vec![*id], wanted, handoff))
        }
        Selection::Finding(name) => {
            let findings = &analysis.summary.findings;
            let Some(f) = findings.iter().find(|f| f.id == name) else {
                let ids: Vec<&str> = findings.iter().map(|f| f.id).collect();
                return Err(Error::Usage(if ids.is_empty() {
                    format!("--finding {name:?}: nothing was diagnosed in these captures")
                } else {
                    format!(
                        "--finding {name:?}: not diagnosed here; the findings are {}",
                        ids.join(", ")
                    )
                }));
            };
            let h = f.wireshark.clone().unwrap_or_default();
            if h.display_filter.is_empty() {
                return Err(Error::Usage(format!(
                    "--finding {name}: it names no flows and no frames of its own (see its detail in `rocescope report`)"
                )));
            }
            let rows: Vec<&FlowRow> = f
                .flows
                .iter()
                .filter_map(|&id| analysis.flows.get(id as usize))
                .collect();
            // As in `finding_handoff`.
            let mut wanted = Wanted {
                flows: rows.iter().map(|r| key(r)).collect(),
                ..Wanted::default()
            };
            match f.id {
                "cnp-without-ce" if rows.is_empty() => wanted.all_cnps = true,
                "cnp-without-ce" => {
                    wanted.cnps = rows
                        .iter()
                        .filter_map(|r| r.paired_qp.map(|qp| (r.iface, r.dst_ip, r.src_ip, qp)))
                        .collect();
                }
                "link-pause" => wanted.pauses = true,
                _ => {}
            }
            Ok((f.flows.clone(), wanted, h))
        }
    }
}
