//! `extract`: the frames a flow's, a finding's or another transport's flow's
//! display filter shows ([`crate::render::wireshark`], which also holds the
//! options and each transport's part of the selection), copied to a pcapng
//! of their own (docs/wireshark.md).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use rocescope_common::{Kind, PacketRecord, flags, proto::ib};

use rocescope_common::wire::Recognition;

use crate::analyze::{Analysis, FlowKey, FlowRow, Handoff};
use crate::decode;
use crate::offline::{self, Options};
use crate::render::wireshark::{TransportWanted, transport_decode_as};
use crate::sources::{CaptureReader, Filter, FirstLook, Frame, Inputs, Merge, Taps, Visit};
use crate::synth::capture_writer::{CaptureWrite, PcapngWriter, write_error};
use crate::{Error, Result};

pub(crate) use crate::render::wireshark::ExtractWhat;
pub use crate::render::wireshark::{Selection, TransportPick};

impl Selection {
    /// What was taken out, as `extract` says it: `flow 3`, `finding ID
    /// (flows)`, or the transport's words ([`TransportPick::words`]).
    pub fn words(&self, flows: &str) -> String {
        match self {
            Selection::Flow(n) => format!("flow {n}"),
            Selection::Finding(id) => format!("finding {id} ({flows})"),
            Selection::Transport(t) => t.words(),
        }
    }
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
    /// The transports' beside RoCE, each by its own key.
    transports: TransportWanted,
}

impl Wanted {
    fn with_triples(mut self) -> Self {
        self.triples = self
            .flows
            .iter()
            .chain(&self.cnps)
            .map(|k| (k.1, k.2, k.3))
            .collect();
        self.transports.ready();
        self
    }

    /// Whether `rec` can be wanted, before its interface is known.
    fn maybe(&self, rec: &PacketRecord) -> bool {
        let triple = (rec.src_ip, rec.dst_ip, rec.roce().dest_qp & ib::QPN_MASK);
        match rec.kind() {
            Kind::Roce if rec.has(flags::HAS_BTH) => self.triples.contains(&triple),
            Kind::Cnp if rec.has(flags::HAS_BTH) => self.all_cnps || self.triples.contains(&triple),
            Kind::Pause => self.pauses,
            _ => self.transports.wants(rec, None),
        }
    }

    fn matches(&self, rec: &PacketRecord, iface: u16) -> bool {
        let key = (
            iface,
            rec.src_ip,
            rec.dst_ip,
            rec.roce().dest_qp & ib::QPN_MASK,
        );
        match rec.kind() {
            Kind::Roce => self.flows.contains(&key),
            Kind::Cnp => self.all_cnps || self.cnps.contains(&key),
            Kind::Pause => self.pauses,
            _ => self.transports.wants(rec, Some(iface)),
        }
    }

    /// Wants `rows`: a QP's frames, or another transport's flow's
    /// ([`crate::render::wireshark::annotate_row`] gives each its filter).
    fn rows<'a>(rows: impl IntoIterator<Item = &'a FlowRow>) -> Wanted {
        let mut w = Wanted::default();
        for r in rows {
            if !w.transports.row(r) {
                w.flows.insert((r.iface, r.src_ip, r.dst_ip, r.dest_qp));
            }
        }
        w
    }
}

/// Analyses `paths` as `analyze` would, then copies the frames the
/// selection's display filter shows (original bytes, timestamps and
/// interfaces) to `out` (pcapng), reading the captures as the analysis did:
/// merged by time ([`Merge::walk`]), so the frames of several files come
/// in timestamp order.
pub fn extract(
    paths: &[PathBuf],
    opts: &Options,
    what: &Selection,
    out: &Path,
) -> Result<Extracted> {
    // A flow that retired before the end is held no more: its row is
    // picked as it retires.
    let picked = std::sync::Arc::new(std::sync::Mutex::new(None));
    let outputs: Vec<Box<dyn crate::output::Output>> = match what {
        Selection::Flow(id) => vec![Box::new(PickFlow {
            id: *id,
            row: picked.clone(),
        })],
        Selection::Finding(_) | Selection::Transport(_) => Vec::new(),
    };
    let mut outcome = offline::run_with(paths, opts, None, outputs)?;
    let picked = picked.lock().ok().and_then(|mut p| p.take());
    if let Some(row) = picked {
        let a = &mut outcome.analysis;
        if let Err(i) = a.flows.binary_search_by_key(&row.flow_id, |r| r.flow_id) {
            a.flows.insert(i, row);
        }
    }
    let (flows, wanted, handoff) = select(&outcome.analysis, what, &opts.recognition)?;
    let Inputs { captures, .. } = Inputs::expand(paths)?;
    // Files that cannot be opened were warned about by the analysis.
    let mut merge = Merge::open(&captures, &mut Vec::new())?;
    let mut copy = Copy {
        out,
        writer: PcapngWriter::create(out)?,
        // The analysis's file index of each input, for its run-wide interfaces.
        files: merge
            .slots
            .iter()
            .map(|s| outcome.taps.file_index(&s.name))
            .collect(),
        taps: &outcome.taps,
        filter: opts.filter.as_deref().map(Filter::new).transpose()?,
        recognition: opts.recognition,
        wanted: wanted.with_triples(),
        rec: PacketRecord::default(),
        data: Vec::new(),
        written: BTreeMap::new(),
        interfaces: Vec::new(),
        frames: 0,
    };
    merge.walk(&mut copy)?;
    let Copy {
        writer,
        interfaces,
        frames,
        ..
    } = copy;
    writer.finish().map_err(|e| write_error(out, e))?;
    if let Selection::Transport(t) = what
        && frames == 0
    {
        return Err(Error::Usage(t.none_found(out)));
    }
    Ok(Extracted {
        frames,
        flows,
        interfaces,
        display_filter: handoff.display_filter,
        decode_as: handoff.decode_as,
    })
}

/// `extract`'s walk over the captures: the wanted frames to `out`.
struct Copy<'a> {
    out: &'a Path,
    writer: PcapngWriter<std::fs::File>,
    files: Vec<Option<usize>>,
    /// Run-wide interface indices, as the analysis handed them out.
    taps: &'a Taps,
    filter: Option<Filter>,
    /// Where the run recognises the transports.
    recognition: Recognition,
    wanted: Wanted,
    rec: PacketRecord,
    /// The bytes of the frame [`Visit::frame`] kept.
    data: Vec<u8>,
    /// Run-wide interface → interface in `out` (a rotation set's files
    /// share theirs).
    written: BTreeMap<u16, u32>,
    interfaces: Vec<String>,
    frames: u64,
}

/// A frame that may be wanted: its interface in the file, time and length
/// (its bytes in [`Copy::data`]).
struct Maybe {
    file_iface: u32,
    ts_ns: u64,
    orig_len: u32,
}

impl Visit for Copy<'_> {
    type Kept = Option<Maybe>;

    fn turn(&mut self, _: usize, _: &FirstLook) {}

    fn frame(&mut self, _: usize, frame: &Frame<'_>) -> Result<Option<Maybe>> {
        if let Some(f) = self.filter.as_mut()
            && !f.matches(frame)?
        {
            return Ok(None);
        }
        // As the analysis decoded it: `--udp-port`, `--ip-proto`.
        decode::decode_walk_with(
            &mut self.rec,
            &self.recognition,
            frame.linktype,
            frame.data,
            frame.orig_len,
        );
        if self.rec.kind() == Kind::Other || !self.wanted.maybe(&self.rec) {
            return Ok(None);
        }
        self.data.clear();
        self.data.extend_from_slice(frame.data);
        Ok(Some(Maybe {
            file_iface: frame.iface,
            ts_ns: frame.ts_ns,
            orig_len: frame.orig_len,
        }))
    }

    fn after(
        &mut self,
        slot: usize,
        kept: Option<Maybe>,
        _: u64,
        reader: &CaptureReader,
    ) -> Result<()> {
        let Some(Maybe {
            file_iface,
            ts_ns,
            orig_len,
        }) = kept
        else {
            return Ok(());
        };
        let Some(file) = self.files.get(slot).copied().flatten() else {
            return Ok(());
        };
        let Some(info) = reader.interfaces().get(file_iface as usize) else {
            return Ok(());
        };
        let Some(iface) = self.taps.get(file, file_iface) else {
            return Ok(());
        };
        if !self.wanted.matches(&self.rec, iface) {
            return Ok(());
        }
        let id = match self.written.get(&iface) {
            Some(&id) => id,
            None => {
                let name = self.taps.name(iface).to_string();
                let linktype = u16::try_from(info.linktype).map_err(|_| {
                    Error::Usage(format!(
                        "{}: interface {file_iface} has link type {}, which pcapng cannot hold",
                        reader.path().display(),
                        info.linktype
                    ))
                })?;
                let units = reader
                    .ts_units(file_iface as usize)
                    .unwrap_or(1_000_000_000);
                let id = self
                    .writer
                    .add_interface_with_units(&name, linktype, info.snaplen, units)
                    .map_err(|e| write_error(self.out, e))?;
                self.written.insert(iface, id);
                self.interfaces.push(name);
                id
            }
        };
        self.writer
            .write_frame_orig(id, ts_ns, &self.data, orig_len)
            .map_err(|e| write_error(self.out, e))?;
        self.frames += 1;
        Ok(())
    }

    fn end(&mut self, _: usize, _: CaptureReader) {}

    fn skipped(&mut self, _: usize, error: Error) -> Result<()> {
        // Readable for the analysis, not now: the frames would be short.
        Err(error)
    }
}

/// Keeps the row of flow `id` if it retires (docs/analysis.md,
/// "Retirement").
struct PickFlow {
    id: u32,
    row: std::sync::Arc<std::sync::Mutex<Option<FlowRow>>>,
}

impl crate::analyze::Sink for PickFlow {
    fn event(&mut self, _: &crate::analyze::Event) {}
    fn timeline(&mut self, _: &crate::analyze::TimelineRow) {}
    fn flow(&mut self, row: &FlowRow) {
        if row.flow_id == self.id
            && let Ok(mut r) = self.row.lock()
        {
            *r = Some(row.clone());
        }
    }
}

impl crate::output::Output for PickFlow {
    fn name_iface(&mut self, _: u16, _: &str) {}
    fn packet(&mut self, _: &PacketRecord, _: crate::analyze::Verdict) -> Result<()> {
        Ok(())
    }
    fn packets(&mut self, _: &[PacketRecord], _: &[crate::analyze::Verdict]) -> Result<()> {
        Ok(())
    }
    fn close(self: Box<Self>, _: &Analysis, _: &crate::output::RunFacts) -> Result<()> {
        Ok(())
    }
}

/// The flows of `what`, the frames its filter shows and the filter; an
/// unknown id is an error listing the ones there are. `reg`: where the
/// run recognised the transports (another transport's Decode As).
fn select(
    analysis: &Analysis,
    what: &Selection,
    reg: &Recognition,
) -> Result<(Vec<u32>, Wanted, Handoff)> {
    match what {
        Selection::Transport(t) => {
            let wanted = Wanted {
                transports: t.wanted(),
                ..Wanted::default()
            };
            Ok((Vec::new(), wanted, t.handoff(reg)))
        }
        Selection::Flow(id) => {
            let Some(row) = analysis.flow(*id) else {
                return Err(Error::Usage(match analysis.summary.totals.flows as usize {
                    0 => format!("--flow {id}: these captures have no flows"),
                    n => format!(
                        "--flow {id}: no such flow; these captures have {n} flows, 0 to {} (flow_id in flows.parquet)",
                        n - 1
                    ),
                }));
            };
            let wanted = Wanted::rows([row]);
            let handoff = Handoff {
                display_filter: row.display_filter.clone(),
                // Another transport's flow's: where this run recognised it.
                decode_as: transport_decode_as(row, reg)
                    .unwrap_or_else(|| vec![row.decode_as.clone()]),
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
            let mut h = f.wireshark.clone().unwrap_or_default();
            if h.display_filter.is_empty() {
                return Err(Error::Usage(format!(
                    "--finding {name}: it names no flows and no frames of its own (see its detail in `rocescope report`)"
                )));
            }
            let rows: Vec<&FlowRow> = f.flows.iter().filter_map(|&id| analysis.flow(id)).collect();
            // As in `finding_handoff`.
            let mut wanted = Wanted::rows(rows.iter().copied());
            // Another transport's findings name its flows alone: their
            // Decode As is where this run recognised it.
            if rows.iter().all(|r| r.transport.transport().is_some())
                && let Some(d) = rows.first().and_then(|r| transport_decode_as(r, reg))
            {
                h.decode_as = d;
            }
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
