//! The offline job: capture files → decode → analyze → tables.
//!
//! Several files are one stream in timestamp order ([`Merge`]); files are
//! grouped into taps, and their interfaces named, as [`Taps`] says (a
//! rotation set is one tap, as if unsplit). Sequence analysis is per
//! interface, so giving the captures of two taps in one run never makes a
//! frame seen at both look retransmitted.
//!
//! Nothing is dropped silently: every frame read either becomes a record
//! or is counted by the reason it did not ([`DecodeTally`]), in
//! `summary.json` (`input.decode`) and in one note on stderr; a run in
//! which no frame became a record fails ([`Outcome::failure`]).
use std::path::{Path, PathBuf};

use rocescope_common::wire::{Recognition, TransportId};
use rocescope_common::{Kind, PacketRecord};

use crate::analyze::{self, Analysis};
use crate::decode::{self, DecodeTally, Undecoded};
use crate::output::Output;
use crate::output::RunFacts;
use crate::pipeline::{RecordPipeline, Threads};
use crate::progress::FileProgress;
use crate::sources::{
    CaptureReader, Filter, FirstLook, Frame, FrameTimes, Inputs, Merge, TapSpec, Taps, TimeChoice,
    Visit, Warning, skipped,
};
use crate::telemetry::{TelemetryLog, TelemetryRow};
use crate::{Error, Result};

/// What `analyze` and `report` were asked to do.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub analyzer: analyze::Config,
    /// tcpdump-syntax filter applied before decoding.
    pub filter: Option<String>,
    /// Show progress on stderr (when it is a terminal).
    pub progress: bool,
    /// Reading, analysis and table writing on threads of their own, or all inline.
    pub threads: Threads,
    /// The calling thread, which reads the files, runs below the stage
    /// threads once they start ([`RecordPipeline::source_yields`]; for good:
    /// an unprivileged thread cannot raise its priority back). The command
    /// line sets it; a library caller whose thread goes on to other work
    /// may not want it.
    pub source_yields: bool,
    /// `--tap NAME=FILE,…`: files that are one tap.
    pub taps: Vec<TapSpec>,
    /// Where transports are recognised (`--udp-port`).
    pub recognition: Recognition,
    /// `--time`: which clock times the frames (the default adds nothing to
    /// the identity, so runs from before `--time` keep theirs).
    pub time: TimeChoice,
    /// `--analyzers`: analyzer threads sharing the analysis by address
    /// pair (0 and 1: one, the pipeline's own; docs/live.md, "Sharded
    /// analysis").
    pub analyzers: usize,
}

impl Options {
    /// [`analyze::Config::identity`] and the reading options that change
    /// the outputs: `--filter`, and `--tap` (which names the interfaces;
    /// by file name, as the captures count in the identity).
    pub fn identity(&self) -> String {
        let mut s = self.analyzer.identity();
        if let Some(f) = &self.filter {
            s.push_str(&format!("filter={f}\n"));
        }
        if self.time != TimeChoice::Auto {
            s.push_str(&format!("time={:?}\n", self.time));
        }
        s.push_str(&crate::transport::identity(&self.recognition));
        for t in &self.taps {
            let files: Vec<String> = t
                .files
                .iter()
                .map(|p| {
                    p.file_name().map_or_else(
                        || p.display().to_string(),
                        |n| n.to_string_lossy().into_owned(),
                    )
                })
                .collect();
            s.push_str(&format!("tap.{}={}\n", t.name, files.join(",")));
        }
        s
    }
}

/// What a run produced besides the tables.
pub struct Outcome {
    pub analysis: Analysis,
    pub ifaces: Vec<String>,
    /// The taps the files were grouped into, and their interfaces.
    pub taps: Taps,
    pub warnings: Vec<String>,
    /// Frames read from the files (filtered out or not).
    pub frames_read: u64,
    /// Frames that became records (RoCE, CNP, PFC, PAUSE, malformed).
    pub records: u64,
    /// A fatal error that stopped reading after some frames had been
    /// analysed: the tables hold everything before it.
    pub stopped_by: Option<String>,
    /// Frames read but not decoded, by reason.
    pub decode: DecodeTally,
    /// Things worth saying that are no fault: frames not decoded, files of
    /// a directory that are no captures.
    pub notes: Vec<String>,
}

impl Outcome {
    /// Why the run failed although the tables were written: a fatal error
    /// part-way, or no frame of the captures became a record.
    pub fn failure(&self) -> Option<String> {
        if let Some(e) = &self.stopped_by {
            return Some(format!("{e} (the tables hold every frame before it)"));
        }
        if self.records > 0 {
            return None;
        }
        Some(if self.frames_read == 0 {
            "the captures hold no frames: nothing to analyse".to_string()
        } else {
            let why = self
                .decode
                .note(self.frames_read)
                .unwrap_or_else(|| format!("{} frames read", self.frames_read));
            let transports: Vec<&str> = TransportId::ALL
                .iter()
                .map(|t| t.entry())
                .filter(|t| t.walked)
                .map(|t| t.label)
                .collect();
            format!(
                "no frame could be decoded as {}, CNP, PFC or PAUSE ({why}); check the capture point, the --filter, or docs/inputs.md for what rocescope reads",
                transports.join(", ")
            )
        })
    }
}

/// Reads every capture, analyses it and, with `out`, writes every table.
///
/// A file that is not a capture at all fails the run before anything is
/// written. A fault later in a file ends that file with a warning; what came
/// before is analysed and written. A record identical to the one before it
/// (same bytes, interface and timestamp: a mirror or capture artefact) is
/// analysed like any other, with one warning per file.
pub fn run(paths: &[PathBuf], opts: &Options, out: Option<&Path>) -> Result<Outcome> {
    run_with(paths, opts, out, Vec::new())
}

/// [`run`], sending the results to `outputs` too (a dataset, an HTML report).
pub fn run_with(
    paths: &[PathBuf],
    opts: &Options,
    out: Option<&Path>,
    outputs: Vec<Box<dyn Output>>,
) -> Result<Outcome> {
    // Probe everything first: a typo in the third file name should not
    // cost the time of reading the first two. Then every capture's first
    // frame, for the merge by time, before anything is written, so that a
    // lone bad file fails cleanly.
    let Inputs {
        captures,
        warnings,
        notes,
    } = Inputs::expand(paths)?;
    if captures.len() > usize::from(u16::MAX) + 1 {
        return Err(Error::Usage(format!(
            "{} captures: at most {} are read in one run; merge some first (mergecap -w)",
            captures.len(),
            usize::from(u16::MAX) + 1
        )));
    }
    let mut warnings = warnings;
    let mut merge = Merge::open(&captures, &mut warnings)?;
    let names: Vec<PathBuf> = merge.slots.iter().map(|s| s.name.clone()).collect();
    let taps = Taps::new(&names, &opts.taps)?;
    let filter = opts.filter.as_deref().map(Filter::new).transpose()?;
    let config = analyze::Config {
        recognition: opts.recognition,
        ..opts.analyzer.clone()
    };
    let mut pipeline =
        RecordPipeline::with_analyzers(config, out, opts.threads, true, opts.analyzers)?;
    if opts.source_yields {
        // A file can wait; the table side cannot.
        pipeline.source_yields();
    }
    for o in outputs {
        pipeline.add_output(o);
    }
    let file_names: Vec<String> = names.iter().map(|p| p.display().to_string()).collect();
    pipeline.name_captures(&file_names);
    let mut run = Run {
        pipeline,
        taps,
        warnings,
        frames_read: 0,
        decode: DecodeTally::recognising(opts.recognition),
        progress: FileProgress::new(opts.progress, &names),
        files: vec![FileState::default(); names.len()],
        filter,
        recognition: opts.recognition,
        rec: PacketRecord::default(),
        framed: vec![Vec::new(); names.len()],
        telemetry: TelemetryLog::default(),
        times: FrameTimes::surveyed(
            opts.time,
            &merge.slots.iter().map(|s| &s.input).collect::<Vec<_>>(),
            &opts.recognition,
        ),
    };
    let stopped_by = merge.walk(&mut run).err().map(|e| e.to_string());
    run.progress.done();
    let Run {
        pipeline,
        taps,
        mut warnings,
        frames_read,
        decode,
        telemetry,
        times,
        ..
    } = run;
    let telemetry = telemetry.finish();
    let mut taps = taps;
    warnings.extend(taps.take_warnings());
    // Every tap is known only now (a pcapng may declare one late).
    if let Some(unknown) = opts.analyzer.unknown_taps(taps.names()) {
        if stopped_by.is_none() {
            pipeline.abandon();
            return Err(Error::Usage(unknown));
        }
        warnings.push(format!("{unknown} (of the taps read before the error)"));
    }
    let records = pipeline.records();
    let mut notes = notes;
    notes.extend(taps.note());
    notes.extend(decode.note(frames_read));
    let analysis = pipeline.finish(RunFacts {
        time: times.facts(&file_names),
        captures: file_names,
        taps: taps.facts(),
        frames_read,
        records,
        warnings: warnings.clone(),
        stopped_by: stopped_by.clone(),
        decode: Some(decode.facts()),
        live: None,
        telemetry,
    })?;
    Ok(Outcome {
        analysis,
        ifaces: taps.names().to_vec(),
        taps,
        warnings,
        frames_read,
        records,
        stopped_by,
        decode,
        notes,
    })
}

/// The state of one offline run across its files.
struct Run {
    pipeline: RecordPipeline,
    taps: Taps,
    warnings: Vec<String>,
    frames_read: u64,
    decode: DecodeTally,
    progress: FileProgress,
    files: Vec<FileState>,
    filter: Option<Filter>,
    recognition: Recognition,
    /// Each frame is decoded into this one record.
    rec: PacketRecord,
    /// Per file: which of its interfaces had a frame (the reader checks a
    /// frame's interface against those declared, which bounds the length).
    framed: Vec<Vec<bool>>,
    /// The switches' telemetry read so far (`telemetry.parquet`).
    telemetry: TelemetryLog,
    times: FrameTimes,
}

/// What is remembered of each file while it is read.
#[derive(Clone, Copy, Default)]
struct FileState {
    warned_iface_limit: bool,
    /// The last record pushed, to spot a frame captured twice.
    last: Option<(u64, u16)>,
    duplicates: u64,
    last_ts: u64,
}

/// A frame decoded, before the reader is asked about it.
struct Decoded {
    number: u64,
    file_iface: u32,
    ts_ns: u64,
    cm: Option<crate::transport::roce::cm::CmMessage>,
    /// The hops of switch telemetry it carried (INT-MD, IFA) or was (a
    /// report).
    telemetry: Vec<TelemetryRow>,
    /// Whether it is a record (a report is not).
    record: bool,
}

/// The analysis's view of the merged stream: every frame counted and
/// decoded, every record given its run-wide interface and pushed.
impl Visit for Run {
    type Kept = Option<Decoded>;

    fn turn(&mut self, slot: usize, look: &FirstLook) {
        if self.taps.tap_of(slot).is_none() {
            self.taps.open(slot, look);
        }
    }

    fn frame(&mut self, slot: usize, frame: &Frame<'_>) -> Result<Option<Decoded>> {
        self.decode(slot, frame)
    }

    fn after(
        &mut self,
        slot: usize,
        kept: Option<Decoded>,
        offset: u64,
        reader: &CaptureReader,
    ) -> Result<()> {
        self.progress
            .tick(slot, reader.file_offset(), self.frames_read);
        match kept {
            Some(d) => self.record(slot, d, offset, reader),
            None => Ok(()),
        }
    }

    /// Its warnings, its drop counters, its tap.
    fn end(&mut self, slot: usize, mut reader: CaptureReader) {
        self.warnings
            .extend(reader.take_warnings().into_iter().map(|w| w.to_string()));
        self.idle_interfaces(slot, &reader);
        // The capture's own drop counters (what it read up to a stop included).
        for (i, ifc) in reader.interfaces().iter().enumerate() {
            let (Some(d), Ok(i)) = (ifc.drops, u32::try_from(i)) else {
                continue;
            };
            if let Some(iface) = self.taps.get(slot, i) {
                self.pipeline.tap_drops(iface, d.ifdrop, d.osdrop);
            }
        }
        let state = self.files[slot];
        if state.duplicates > 1 {
            self.warnings.push(format!(
                "{}: {} frames in all duplicate the frame before them",
                reader.path().display(),
                state.duplicates
            ));
        }
        self.taps.ended(slot, state.last_ts);
    }

    fn skipped(&mut self, _: usize, error: Error) -> Result<()> {
        self.warnings.push(skipped(&error));
        Ok(())
    }
}

impl Run {
    /// Interfaces file `slot` declared that had no record: named like any
    /// other, so the summary lists them (`taps[].records` 0); one that had
    /// no frame at all is also a warning: a tap that captured nothing.
    fn idle_interfaces(&mut self, slot: usize, reader: &CaptureReader) {
        let Some(capture) = self.taps.tap_of(slot) else {
            return;
        };
        for (i, ifc) in reader.interfaces().iter().enumerate() {
            let Ok(local) = u32::try_from(i) else {
                break;
            };
            if self.taps.get(slot, local).is_some() {
                continue;
            }
            let Some((iface, true)) = self.taps.index(slot, local, ifc.name.as_deref()) else {
                continue;
            };
            let name = self.taps.name(iface).to_string();
            self.pipeline.name_iface_of(
                iface,
                &name,
                u32::try_from(capture).unwrap_or(u32::MAX),
                local,
            );
            if !self.framed[slot].get(i).copied().unwrap_or(false) {
                self.warnings.push(format!(
                    "{}: interface {i} ({name}) recorded no frames: the tap captured nothing (listed in summary.json's taps with 0 records)",
                    reader.path().display()
                ));
            }
        }
    }

    /// The frame's part of the work that needs its bytes: the filter and
    /// the decoder. None when it is no record.
    fn decode(&mut self, slot: usize, frame: &Frame<'_>) -> Result<Option<Decoded>> {
        self.frames_read += 1;
        let framed = &mut self.framed[slot];
        let i = frame.iface as usize;
        if framed.len() <= i {
            framed.resize(i + 1, false);
        }
        framed[i] = true;
        let file = &mut self.files[slot];
        file.last_ts = file.last_ts.max(frame.ts_ns);
        let rec = &mut self.rec;
        if let Some(f) = self.filter.as_mut()
            && !f.matches(frame)?
        {
            self.decode.not_decoded(Undecoded::FilteredOut);
            return Ok(None);
        }
        let walk = decode::decode_walk_with(
            rec,
            &self.recognition,
            frame.linktype,
            frame.data,
            frame.orig_len,
        );
        self.decode.frame(rec, walk.stop, frame.linktype);
        let telemetry = match walk.telemetry {
            Some((found, bytes)) => self.telemetry.read(&found, bytes, rec, &self.recognition),
            None => Vec::new(),
        };
        let record = rec.kind() != Kind::Other;
        if !record && telemetry.is_empty() {
            return Ok(None);
        }
        // QP1 MADs: connection set-up names both QPs (pairs flows exactly).
        let cm = crate::transport::roce::cm::message(rec, walk.payload);
        Ok(Some(Decoded {
            number: frame.number,
            file_iface: frame.iface,
            ts_ns: frame.ts_ns,
            cm,
            telemetry,
            record,
        }))
    }

    /// The rest of a record's work: its interface, the duplicate check, the
    /// pipeline.
    fn record(
        &mut self,
        slot: usize,
        d: Decoded,
        offset: u64,
        reader: &CaptureReader,
    ) -> Result<()> {
        let Decoded {
            number,
            file_iface,
            ts_ns,
            cm,
            telemetry,
            record,
        } = d;
        let path = reader.path();
        let if_name = reader
            .interfaces()
            .get(file_iface as usize)
            .and_then(|i| i.name.as_deref());
        let Some((iface, new)) = self.taps.index(slot, file_iface, if_name) else {
            self.decode.not_decoded(Undecoded::InterfaceLimit);
            if !self.files[slot].warned_iface_limit {
                self.files[slot].warned_iface_limit = true;
                self.warnings.push(format!(
                    "{}: frame {number}: more than {} capture interfaces in this run; frames of further interfaces skipped",
                    path.display(),
                    u16::MAX
                ));
            }
            return Ok(());
        };
        if new {
            let capture = self
                .taps
                .tap_of(slot)
                .and_then(|t| u32::try_from(t).ok())
                .unwrap_or(u32::MAX);
            self.pipeline
                .name_iface_of(iface, self.taps.name(iface), capture, file_iface);
        }
        let capture = u16::try_from(slot).unwrap_or(u16::MAX);
        // Telemetry rows too take the frame's time in its file's clock.
        let ts_ns = self.times.time(slot, file_iface, &self.rec, ts_ns);
        let mut telemetry = telemetry;
        self.telemetry
            .stamp(&mut telemetry, ts_ns, iface, number, capture);
        if !record {
            return self.pipeline.telemetry(telemetry);
        }
        let rec = &mut self.rec;
        rec.ts_ns = ts_ns;
        rec.iface = iface;
        rec.frame = number;
        rec.capture = u16::try_from(slot).unwrap_or(u16::MAX);
        // Same bytes, same interface, same timestamp as the file's record
        // before: a mirror or capture artefact, not a resend (a resend takes
        // time). Warned once per file; the analyzer leaves RoCE copies out.
        let file = &mut self.files[slot];
        let again = file.last == Some((ts_ns, iface))
            && self
                .pipeline
                .last_pushed()
                .is_some_and(|last| same_capture(last, rec));
        file.last = Some((ts_ns, iface));
        if again {
            file.duplicates += 1;
            if file.duplicates == 1 {
                self.warnings.push(
                    Warning {
                        path: path.to_path_buf(),
                        offset,
                        frames_before: 0,
                        detail: format!(
                            "frame {number} duplicates the frame before it (same bytes, interface and timestamp): a mirror or capture artefact, not a resend (RoCE copies are left out of the analysis and counted as mirror copies; warned once per file)"
                        ),
                        stopped: false,
                        decompressed: reader.compression(),
                    }
                    .to_string(),
                );
            }
        }
        if let Some(msg) = cm {
            self.pipeline.cm(rec, msg)?;
        }
        self.pipeline.push(rec)?;
        // After the record that carried them: INT-MD and IFA hops join the
        // flow it made or went on. Most frames carry none: no call then.
        if telemetry.is_empty() {
            return Ok(());
        }
        self.pipeline.telemetry(telemetry)
    }
}

/// `a` and `b` hold the same frame captured at the same time on the same
/// interface (frame numbers aside).
fn same_capture(a: &PacketRecord, b: &PacketRecord) -> bool {
    // Timestamps differ almost always: the whole record only when not.
    a.ts_ns == b.ts_ns
        && a.iface == b.iface
        && PacketRecord {
            frame: a.frame,
            ..*b
        } == *a
}

#[cfg(test)]
mod tests;
