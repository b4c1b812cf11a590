//! The offline job: capture files → decode → analyze → tables.
//!
//! Files are read one after another; each file's interfaces become capture
//! interfaces of their own, named as [`IfaceNames`] says. Sequence analysis
//! is per interface, so giving the captures of two taps in one run never
//! makes a frame seen at both look retransmitted.
//!
//! Nothing is dropped silently: every frame read either becomes a record
//! or is counted by the reason it did not ([`DecodeTally`]), in
//! `summary.json` (`input.decode`) and in one note on stderr; a run in
//! which no frame became a record fails ([`Outcome::failure`]).
use std::path::{Path, PathBuf};

use rocescope_common::{Kind, PacketRecord};

use crate::analyze::{self, Analysis};
use crate::decode::{self, DecodeTally, Undecoded};
use crate::output::Output;
use crate::output::RunFacts;
use crate::pipeline::{RecordPipeline, Threads};
use crate::progress::FileProgress;
use crate::sources::{CaptureReader, Filter, Input, Inputs, Warning, capture_stem, skipped};
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
}

/// What a run produced besides the tables.
pub struct Outcome {
    pub analysis: Analysis,
    pub ifaces: Vec<String>,
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
            format!(
                "no frame could be decoded as RoCE, CNP, PFC or PAUSE ({why}); check the capture point, the --filter, or docs/inputs.md for what rocescope reads"
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
    // cost the time of reading the first two. Each capture is opened when
    // its turn comes (one read buffer at a time), the first one before
    // anything is written, so that a lone bad file fails cleanly.
    let Inputs {
        captures,
        warnings,
        notes,
    } = Inputs::expand(paths)?;
    let names: Vec<PathBuf> = captures.iter().map(Input::name).collect();
    let several = captures.len() > 1;
    let mut warnings = warnings;
    let Some(first_input) = captures.first() else {
        return Err(Error::Usage("no capture to read".into()));
    };
    let mut first = match first_input.open() {
        Ok(r) => Some(r),
        Err(e) if several => {
            warnings.push(skipped(&e));
            None
        }
        Err(e) => return Err(e),
    };
    let mut filter = opts.filter.as_deref().map(Filter::new).transpose()?;
    let mut pipeline = RecordPipeline::with_threads(opts.analyzer.clone(), out, opts.threads)?;
    if opts.source_yields {
        // A file can wait; the table side cannot.
        pipeline.source_yields();
    }
    for o in outputs {
        pipeline.add_output(o);
    }
    let mut run = Run {
        pipeline,
        names: IfaceNames::new(&names),
        warnings,
        frames_read: 0,
        decode: DecodeTally::default(),
        progress: FileProgress::new(opts.progress, &names),
    };
    let mut stopped_by = None;
    for (file_index, (input, path)) in captures.iter().zip(&names).enumerate() {
        let opened = match first.take() {
            Some(r) => Ok(r),
            None if file_index == 0 => continue,
            None => input.open(),
        };
        let mut reader = match opened {
            Ok(r) => r,
            // Several inputs: one that cannot be read does not end the run.
            Err(e) => {
                run.warnings.push(skipped(&e));
                continue;
            }
        };
        let result = run.read_file(file_index, path, &mut reader, filter.as_mut());
        run.warnings
            .extend(reader.take_warnings().into_iter().map(|w| w.to_string()));
        // The capture's own drop counters, for the interfaces that had
        // frames (what it read up to a stop included).
        for (i, ifc) in reader.interfaces().iter().enumerate() {
            let (Some(d), Ok(i)) = (ifc.drops, u32::try_from(i)) else {
                continue;
            };
            if let Some(iface) = run.names.get(file_index, i) {
                run.pipeline.tap_drops(iface, d.ifdrop, d.osdrop);
            }
        }
        // Whatever stops the run mid-way, what was read so far is still analysed and written.
        if let Err(e) = result {
            stopped_by = Some(e.to_string());
            break;
        }
    }
    run.progress.done();
    let Run {
        pipeline,
        names: iface_names,
        warnings,
        frames_read,
        decode,
        ..
    } = run;

    let records = pipeline.records();
    let mut notes = notes;
    notes.extend(decode.note(frames_read));
    let analysis = pipeline.finish(RunFacts {
        captures: names.iter().map(|p| p.display().to_string()).collect(),
        frames_read,
        records,
        warnings: warnings.clone(),
        stopped_by: stopped_by.clone(),
        decode: Some(decode.facts()),
        live: None,
    })?;
    Ok(Outcome {
        analysis,
        ifaces: iface_names.into_names(),
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
    names: IfaceNames,
    warnings: Vec<String>,
    frames_read: u64,
    decode: DecodeTally,
    progress: FileProgress,
}

impl Run {
    /// Reads one file to its end (or to a fault the reader warned about).
    fn read_file(
        &mut self,
        file_index: usize,
        path: &Path,
        reader: &mut CaptureReader,
        mut filter: Option<&mut Filter>,
    ) -> Result<()> {
        let mut warned_iface_limit = false;
        // A record of this file was pushed: the pipeline's last one is the
        // previous record, to spot a frame captured twice.
        let mut pushed = false;
        let mut duplicates = 0u64;
        // Each frame is decoded into this one record.
        let mut rec = PacketRecord::default();
        while let Some(frame) = reader.next_frame()? {
            self.frames_read += 1;
            if let Some(f) = filter.as_deref_mut()
                && !f.matches(&frame)?
            {
                self.decode.not_decoded(Undecoded::FilteredOut);
                continue;
            }
            let walk = decode::decode_walk(&mut rec, frame.linktype, frame.data, frame.orig_len);
            self.decode.frame(&rec, walk.stop, frame.linktype);
            let payload = walk.payload;
            // QP1 MADs: connection set-up names both QPs (pairs flows exactly).
            let cm = decode::cm::message(&rec, payload);
            // The frame borrows the reader's buffer: keep what is needed, let it go.
            let (number, file_iface, ts_ns) = (frame.number, frame.iface, frame.ts_ns);
            self.progress
                .tick(file_index, reader.file_offset(), self.frames_read);
            if rec.kind() == Kind::Other {
                continue;
            }
            let if_name = reader
                .interfaces()
                .get(file_iface as usize)
                .and_then(|i| i.name.as_deref());
            let known = self.names.len();
            let Some(iface) = self.names.index(file_index, file_iface, if_name) else {
                self.decode.not_decoded(Undecoded::InterfaceLimit);
                if !warned_iface_limit {
                    warned_iface_limit = true;
                    self.warnings.push(format!(
                        "{}: frame {number}: more than {} capture interfaces in this run; frames of further interfaces skipped",
                        path.display(),
                        u16::MAX
                    ));
                }
                continue;
            };
            if self.names.len() > known {
                let capture = u32::try_from(file_index).unwrap_or(u32::MAX);
                self.pipeline
                    .name_iface_of(iface, self.names.name(iface), capture, file_iface);
            }
            rec.ts_ns = ts_ns;
            rec.iface = iface;
            // Same bytes, same interface, same timestamp as the record before:
            // a mirror or capture artefact, not a resend (a resend takes time).
            // Warned once; the analyzer leaves RoCE copies out.
            rec.frame = number;
            if pushed
                && self
                    .pipeline
                    .last_pushed()
                    .is_some_and(|last| same_capture(last, &rec))
            {
                duplicates += 1;
                if duplicates == 1 {
                    self.warnings.push(
                        Warning {
                            path: path.to_path_buf(),
                            offset: reader.frame_offset(),
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
            pushed = true;
            if let Some(msg) = cm {
                self.pipeline.cm(&rec, msg)?;
            }
            self.pipeline.push(&rec)?;
        }
        if duplicates > 1 {
            self.warnings.push(format!(
                "{}: {duplicates} frames in all duplicate the frame before them",
                path.display()
            ));
        }
        Ok(())
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

/// Names of capture interfaces, unique across all files of a run:
///
/// * a pcapng interface with `if_name` keeps it;
/// * one without (and a classic pcap) is named after its file's stem,
///   with `#N` for interface N > 0;
/// * with several files, names are prefixed `STEM/` so taps stay apart;
/// * a name already taken gets `#2`, `#3`, … appended.
pub struct IfaceNames {
    stems: Vec<String>,
    prefix: bool,
    /// By file, then by the file's interface index (below the reader's
    /// `MAX_INTERFACES`): a lookup per frame without hashing.
    index: Vec<Vec<Option<u16>>>,
    names: Vec<String>,
}

impl IfaceNames {
    pub fn new(paths: &[PathBuf]) -> Self {
        let stems = paths.iter().map(|p| capture_stem(p)).collect();
        Self {
            stems,
            prefix: paths.len() > 1,
            index: Vec::new(),
            names: Vec::new(),
        }
    }

    /// The run-wide index of `file`'s interface `iface`; `None` past u16.
    pub fn index(&mut self, file: usize, iface: u32, if_name: Option<&str>) -> Option<u16> {
        let slot = iface as usize;
        if let Some(&Some(i)) = self.index.get(file).and_then(|f| f.get(slot)) {
            return Some(i);
        }
        let i = u16::try_from(self.names.len()).ok()?;
        let stem = self
            .stems
            .get(file)
            .map(String::as_str)
            .unwrap_or("capture");
        let base = match (if_name, self.prefix) {
            (Some(n), false) => n.to_string(),
            (Some(n), true) => format!("{stem}/{n}"),
            (None, _) if iface == 0 => stem.to_string(),
            (None, _) => format!("{stem}#{iface}"),
        };
        let mut name = base.clone();
        let mut n = 2;
        while self.names.contains(&name) {
            name = format!("{base}#{n}");
            n += 1;
        }
        self.names.push(name);
        if self.index.len() <= file {
            self.index.resize_with(file + 1, Vec::new);
        }
        let ifaces = &mut self.index[file];
        if ifaces.len() <= slot {
            ifaces.resize(slot + 1, None);
        }
        ifaces[slot] = Some(i);
        Some(i)
    }

    /// The run-wide index of `file`'s interface `iface`, if it had frames.
    pub fn get(&self, file: usize, iface: u32) -> Option<u16> {
        *self.index.get(file)?.get(iface as usize)?
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

    pub fn into_names(self) -> Vec<String> {
        self.names
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::BATCH;
    use crate::synth::capture_writer::{CaptureWrite, PcapWriter};
    use crate::synth::frame::{RoceFrame, WireFrame};

    /// A frame written twice (same bytes, same timestamp) is warned about
    /// once per file, with the count at the end: next to its original in a
    /// batch and across the pipeline's batch boundary, pipelined or inline;
    /// the same timestamp with other bytes is no duplicate.
    #[test]
    fn frames_captured_twice_are_counted_in_both_layouts() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("dups.pcap");
        let mut w = PcapWriter::create(&path, 1, 0).expect("a capture");
        let mut bytes = Vec::new();
        let mut number = 0u64;
        let mut write = |psn: u32, ts: u64| {
            let mut f = RoceFrame::default();
            f.bth.psn = psn;
            f.write(&mut bytes);
            w.write_frame(0, ts, &bytes).expect("written");
            number += 1;
            number
        };
        let ts = |i: u64| 1_700_000_000_000_000_000 + i * 1000;
        let mut dups = Vec::new();
        for i in 0..BATCH as u64 + 10 {
            // Every frame is a record: the BATCH-th one ends the first batch.
            let written = write(i as u32, ts(i));
            // Again, next to it; the last record of the first batch again,
            // as the first record of the second one.
            if i == 5 || written == BATCH as u64 {
                dups.push(write(i as u32, ts(i)));
            }
            // Same timestamp, other bytes.
            if i == 7 {
                write(1 << 20, ts(i));
            }
        }
        w.finish().expect("flushed");
        for threads in [Threads::Pipelined, Threads::Inline] {
            let opts = Options {
                threads,
                ..Options::default()
            };
            let out = run(std::slice::from_ref(&path), &opts, None).expect("analysed");
            let warned: Vec<_> = out
                .warnings
                .iter()
                .filter(|w| w.contains("duplicate"))
                .collect();
            assert_eq!(warned.len(), 2, "{threads:?}: {warned:?}");
            assert!(
                warned[0].contains(&format!("frame {} duplicates", dups[0])),
                "{warned:?}"
            );
            assert!(
                warned[1].contains("2 frames in all duplicate"),
                "{threads:?}: {warned:?}"
            );
        }
    }

    #[test]
    fn interface_names_are_unique_and_predictable() {
        let mut one = IfaceNames::new(&[PathBuf::from("/x/tap1.pcapng")]);
        assert_eq!(one.index(0, 0, Some("eth0")), Some(0));
        assert_eq!(one.index(0, 1, None), Some(1));
        assert_eq!(one.index(0, 2, Some("eth0")), Some(2));
        assert_eq!(one.index(0, 0, Some("eth0")), Some(0));
        assert_eq!(one.into_names(), ["eth0", "tap1#1", "eth0#2"]);

        let mut two = IfaceNames::new(&[PathBuf::from("a.pcap"), PathBuf::from("b.pcapng")]);
        two.index(0, 0, None);
        two.index(1, 0, Some("eth0"));
        assert_eq!(two.into_names(), ["a", "b/eth0"]);
    }
}
