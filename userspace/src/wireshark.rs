//! `extract`: the frames a flow's, a finding's or a UET PDC's display
//! filter shows ([`crate::render::wireshark`]), copied to a pcapng of
//! their own (docs/wireshark.md).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use rocescope_common::wire::uet::uet_present;
use rocescope_common::{Kind, PacketRecord, flags, proto::ib};

use rocescope_common::wire::Recognition;

use crate::analyze::{Analysis, FlowKey, FlowRow, Handoff, IfaceOrigin};
use crate::decode;
use crate::offline::{self, Options};
use crate::sources::{CaptureReader, Filter, FirstLook, Frame, Inputs, Merge, Taps, Visit};
use crate::synth::capture_writer::{CaptureWrite, PcapngWriter, write_error};
use crate::transport::uet::PdcKey;
use crate::{Error, Result};

/// What `extract` takes out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// A `flow_id` as in flows.parquet.
    Flow(u32),
    /// A finding's `id` as in summary.json.
    Finding(String),
    /// A UET PDC, both ways, at every tap.
    UetPdc(UetPdc),
}

/// `extract`: one finding or one flow.
#[derive(clap::Args)]
#[group(required = true, multiple = false)]
pub(crate) struct ExtractWhat {
    /// A finding's id, as `report` and summary.json name it (e.g. ghost-retransmissions).
    #[arg(long, value_name = "ID")]
    pub(crate) finding: Option<String>,
    /// A flow_id, as in flows.parquet of the same captures.
    #[arg(long, value_name = "N")]
    pub(crate) flow: Option<u32>,
    /// A UET PDC, both ways, at every tap: SRC,DST,SPDCID (its frames from SRC to DST with that
    /// source PDC id, and those back to it), e.g. 10.0.0.1,10.0.0.2,13398.
    #[arg(long, value_name = "SRC,DST,SPDCID", value_parser = UetPdc::parse)]
    pub(crate) uet_pdc: Option<UetPdc>,
}

impl ExtractWhat {
    /// The one selection given (clap requires exactly one).
    pub(crate) fn selection(self) -> Selection {
        match (self.finding, self.uet_pdc, self.flow) {
            (Some(id), _, _) => Selection::Finding(id),
            (None, Some(pdc), _) => Selection::UetPdc(pdc),
            (None, None, n) => Selection::Flow(n.unwrap_or_default()),
        }
    }
}

impl Selection {
    /// What was taken out, as `extract` says it: `flow 3`, `finding ID
    /// (flows)`, `UET PDC 5 from 10.0.0.1 to 10.0.0.2`.
    pub fn words(&self, flows: &str) -> String {
        match self {
            Selection::Flow(n) => format!("flow {n}"),
            Selection::Finding(id) => format!("finding {id} ({flows})"),
            Selection::UetPdc(pdc) => format!(
                "UET PDC {} from {} to {}",
                pdc.spdcid,
                crate::addr::Ip(pdc.src_ip),
                crate::addr::Ip(pdc.dst_ip)
            ),
        }
    }
}

/// A UET PDC as `extract --uet-pdc` names it: the frames from `src_ip` to
/// `dst_ip` of PDC id `spdcid` (the sending end's), and those back to it
/// (docs/wireshark.md, "UET").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UetPdc {
    pub src_ip: [u8; 16],
    pub dst_ip: [u8; 16],
    pub spdcid: u16,
}

impl UetPdc {
    /// Parses `SRC,DST,SPDCID` (IPv4 or IPv6 addresses; the PDC id in
    /// decimal or 0x-hex, as packets.parquet's `uet_spdcid` or Wireshark's
    /// `uet.pds.spdcid` shows it).
    pub fn parse(s: &str) -> std::result::Result<UetPdc, String> {
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        let [src, dst, id] = parts[..] else {
            return Err(format!(
                "expected SRC,DST,SPDCID (e.g. 10.0.0.1,10.0.0.2,13398), got {s:?}"
            ));
        };
        let addr = |a: &str| -> std::result::Result<[u8; 16], String> {
            let ip: std::net::IpAddr = a
                .parse()
                .map_err(|_| format!("{a:?} is not an IPv4 or IPv6 address"))?;
            Ok(match ip {
                std::net::IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
                std::net::IpAddr::V6(v6) => v6.octets(),
            })
        };
        let spdcid = match id.strip_prefix("0x") {
            Some(hex) => u16::from_str_radix(hex, 16),
            None => id.parse::<u16>(),
        }
        .map_err(|_| format!("{id:?} is not a PDC id (0-65535)"))?;
        Ok(UetPdc {
            src_ip: addr(src)?,
            dst_ip: addr(dst)?,
            spdcid,
        })
    }

    /// Its key as the UET trackers name one direction (the tap left 0:
    /// the filter names none).
    fn key(&self) -> PdcKey {
        PdcKey {
            iface: 0,
            src_ip: self.src_ip,
            dst_ip: self.dst_ip,
            spdcid: self.spdcid,
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
    /// UET PDC directions: their frames forward, and those back to their
    /// PDC id (its `dpdcid`), at their tap — or at every tap
    /// (`uet_any_tap`, `--uet-pdc`).
    uet_keys: HashSet<PdcKey>,
    uet_any_tap: bool,
    /// `(src_ip, dst_ip, spdcid)` of `uet_keys`: looked up before a
    /// record's interface is known.
    uet_pdcs: HashSet<([u8; 16], [u8; 16], u16)>,
}

impl Wanted {
    fn with_triples(mut self) -> Self {
        self.triples = self
            .flows
            .iter()
            .chain(&self.cnps)
            .map(|k| (k.1, k.2, k.3))
            .collect();
        self.uet_pdcs = self
            .uet_keys
            .iter()
            .map(|k| (k.src_ip, k.dst_ip, k.spdcid))
            .collect();
        self
    }

    /// Whether `rec` can be wanted, before its interface is known.
    fn maybe(&self, rec: &PacketRecord) -> bool {
        let triple = (rec.src_ip, rec.dst_ip, rec.roce().dest_qp & ib::QPN_MASK);
        match rec.kind() {
            Kind::Roce if rec.has(flags::HAS_BTH) => self.triples.contains(&triple),
            Kind::Cnp if rec.has(flags::HAS_BTH) => self.all_cnps || self.triples.contains(&triple),
            Kind::Pause => self.pauses,
            Kind::Uet => self.uet_pdc(rec, None),
            _ => false,
        }
    }

    /// Whether UET record `rec` (at tap `iface`, when known) is of a
    /// wanted PDC direction, either way (as the filter of
    /// `render::wireshark::uet::pdc_filter` shows it).
    fn uet_pdc(&self, rec: &PacketRecord, iface: Option<u16>) -> bool {
        let u = rec.uet();
        let has = |bit: u16| u.present & bit != 0;
        let wanted = |src_ip, dst_ip, spdcid| match iface {
            Some(iface) if !self.uet_any_tap => self.uet_keys.contains(&PdcKey {
                iface,
                src_ip,
                dst_ip,
                spdcid,
            }),
            _ => self.uet_pdcs.contains(&(src_ip, dst_ip, spdcid)),
        };
        (has(uet_present::PDC) && wanted(rec.src_ip, rec.dst_ip, u.spdcid))
            || (has(uet_present::DPDCID) && wanted(rec.dst_ip, rec.src_ip, u.dpdcid))
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
            Kind::Uet => self.uet_pdc(rec, Some(iface)),
            _ => false,
        }
    }

    /// Wants `rows`: a QP's frames, or a UET PDC direction's
    /// ([`crate::render::wireshark::annotate_row`] gives each its filter).
    fn rows<'a>(rows: impl IntoIterator<Item = &'a FlowRow>) -> Wanted {
        let mut w = Wanted::default();
        for r in rows {
            match &r.uet {
                Some(u) => w.uet_keys.insert(PdcKey {
                    iface: r.iface,
                    src_ip: r.src_ip,
                    dst_ip: r.dst_ip,
                    spdcid: u.spdcid,
                }),
                None => w.flows.insert((r.iface, r.src_ip, r.dst_ip, r.dest_qp)),
            };
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
        Selection::Finding(_) | Selection::UetPdc(_) => Vec::new(),
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
    if let Selection::UetPdc(_) = what
        && frames == 0
    {
        return Err(Error::Usage(format!(
            "--uet-pdc: no UET frame of that PDC in these captures (their PDCs: packets.parquet's src_ip, dst_ip and uet_spdcid where transport is uet); {} is empty",
            out.display()
        )));
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
/// run recognised the transports (UET's Decode As).
fn select(
    analysis: &Analysis,
    what: &Selection,
    reg: &Recognition,
) -> Result<(Vec<u32>, Wanted, Handoff)> {
    match what {
        Selection::UetPdc(pdc) => {
            use crate::render::wireshark::uet;
            let wanted = Wanted {
                uet_keys: HashSet::from([pdc.key()]),
                uet_any_tap: true,
                ..Wanted::default()
            };
            let handoff = Handoff {
                display_filter: uet::pdc_filter(&pdc.key(), IfaceOrigin::default()),
                decode_as: uet::decode_as(reg),
                flows_left_out: 0,
            };
            Ok((Vec::new(), wanted, handoff))
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
                // A PDC's: where this run recognised UET.
                decode_as: match row.uet {
                    Some(_) => crate::render::wireshark::uet::decode_as(reg),
                    None => vec![row.decode_as.clone()],
                },
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
            // The UET findings name PDC directions alone: their Decode As
            // is where this run recognised UET.
            if !rows.is_empty() && rows.iter().all(|r| r.uet.is_some()) {
                h.decode_as = crate::render::wireshark::uet::decode_as(reg);
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
