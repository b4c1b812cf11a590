//! Several captures as one stream in timestamp order: a k-way merge, as
//! `mergecap` does, with bounded memory (docs/inputs.md, "Several inputs").
//!
//! * Every capture is opened once up front for its first timestamp (its
//!   first frame), then closed again; it is reopened when the merge reaches
//!   that timestamp, and closed at its end. So the files of a rotation set
//!   are open one (at a boundary two) at a time, however many there are.
//!   Standard input and FIFOs cannot be reopened: they stay open, their
//!   first frame held.
//! * One frame per open file is held, copied out of its reader's buffer,
//!   only when another file's frame comes first; a file whose next frame
//!   is also the merge's next is read straight from its buffer (one file
//!   alone, or a rotation set, costs no copy).
//! * Ties go to the file with the earlier first timestamp (then the
//!   earlier input), so a rotation set's frames come in their files' order.
use std::cmp::Reverse;
use std::collections::BinaryHeap;
#[cfg(test)]
use std::path::Path;
use std::path::PathBuf;

use super::input::{Input, skipped};
use super::reader::{CaptureReader, Frame};
use crate::error::{Error, Result};

/// A frame copied out of its reader, waiting for its turn.
#[derive(Default)]
pub struct HeldFrame {
    pub number: u64,
    pub iface: u32,
    pub ts_ns: u64,
    pub linktype: u32,
    pub orig_len: u32,
    pub offset: u64,
    pub data: Vec<u8>,
}

impl HeldFrame {
    fn hold(&mut self, frame: &Frame<'_>) {
        self.number = frame.number;
        self.iface = frame.iface;
        self.ts_ns = frame.ts_ns;
        self.linktype = frame.linktype;
        self.orig_len = frame.orig_len;
        self.offset = frame.offset;
        self.data.clear();
        self.data.extend_from_slice(frame.data);
    }

    pub fn frame(&self) -> Frame<'_> {
        Frame {
            number: self.number,
            iface: self.iface,
            ts_ns: self.ts_ns,
            linktype: self.linktype,
            orig_len: self.orig_len,
            offset: self.offset,
            data: &self.data,
        }
    }
}

/// What the first look at a capture found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FirstLook {
    /// Timestamp of the first frame (None: no frame, or an error before one).
    pub first_ts: Option<u64>,
    /// The interfaces declared before the first frame: link type and
    /// `if_name`.
    pub layout: Vec<(u32, Option<String>)>,
}

/// One input of the merge.
pub struct Slot {
    pub input: Input,
    pub name: PathBuf,
    pub look: FirstLook,
    /// Its next frame, when another file's came first.
    held: Option<HeldFrame>,
    /// A buffer to hold the next frame in (kept between holds).
    spare: HeldFrame,
    /// An error reading its first frame, reported at its turn.
    error: Option<Error>,
    /// Position in the merge's tie order.
    rank: u32,
}

/// The inputs of a run, in timestamp order.
pub struct Merge {
    pub slots: Vec<Slot>,
    /// Open: being read, or standard input / a FIFO kept from the first look.
    readers: Vec<Option<CaptureReader>>,
    /// (timestamp of the next frame, rank) of every file with one to come.
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    by_rank: Vec<usize>,
}

/// What a walk over the merged stream ([`Merge::walk`]) does with each
/// file's frames: `analyze` and `extract` read the captures through it, so
/// both see the same frames in the same order.
pub trait Visit {
    /// What [`Visit::frame`] keeps of a frame for [`Visit::after`].
    type Kept;
    /// File `slot`'s turn begins: its frames come next.
    fn turn(&mut self, slot: usize, look: &FirstLook);
    /// A frame, while it borrows its reader's buffer.
    fn frame(&mut self, slot: usize, frame: &Frame<'_>) -> Result<Self::Kept>;
    /// The rest of that frame's work, with its file's reader (interfaces,
    /// offsets); `offset` is the frame's in the file.
    fn after(
        &mut self,
        slot: usize,
        kept: Self::Kept,
        offset: u64,
        reader: &CaptureReader,
    ) -> Result<()>;
    /// File `slot` is read to its end, or the walk stopped: its reader.
    fn end(&mut self, slot: usize, reader: CaptureReader);
    /// File `slot` was readable at the first look and cannot be opened now
    /// (gone or changed): an error ends the walk.
    fn skipped(&mut self, slot: usize, error: Error) -> Result<()>;
}

/// What [`Merge::next`] found in a file.
pub enum Next<'a> {
    /// Its next frame, which is the merge's next.
    Frame(Frame<'a>),
    /// Another file's frame comes first: this file's waits, held.
    Later,
    /// The file is read to its end.
    End,
}

impl Merge {
    /// Takes the first look at every input. One that cannot be opened is a
    /// warning (and left out) among several, the error when alone.
    pub fn open(inputs: &[Input], warnings: &mut Vec<String>) -> Result<Merge> {
        let several = inputs.len() > 1;
        let mut slots = Vec::with_capacity(inputs.len());
        let mut readers = Vec::with_capacity(inputs.len());
        for input in inputs {
            let mut reader = match input.open() {
                Ok(r) => r,
                Err(e) if several => {
                    warnings.push(skipped(&e));
                    continue;
                }
                Err(e) => return Err(e),
            };
            let mut slot = Slot {
                input: input.clone(),
                name: input.name(),
                look: FirstLook::default(),
                held: None,
                spare: HeldFrame::default(),
                error: None,
                rank: 0,
            };
            let reopens = matches!(input, Input::File(p) if p.is_file());
            match reader.next_frame() {
                Ok(Some(frame)) => {
                    slot.look.first_ts = Some(frame.ts_ns);
                    if !reopens {
                        slot.spare.hold(&frame);
                        slot.held = Some(std::mem::take(&mut slot.spare));
                    }
                }
                // No frame: its warnings are said at its turn, first.
                Ok(None) => {}
                Err(e) => slot.error = Some(e),
            }
            slot.look.layout = reader
                .interfaces()
                .iter()
                .map(|i| (i.linktype, i.name.clone()))
                .collect();
            // A regular file is read again from its start at its turn: one
            // read buffer per open file, not per input.
            let keep = !reopens || slot.look.first_ts.is_none();
            readers.push(keep.then_some(reader));
            slots.push(slot);
        }
        // Tie order: first timestamp, then input order; empty files first
        // (their warnings), files whose first frame failed last (everything
        // else is read before the error stops the run).
        let key = |s: &Slot| match (&s.error, s.look.first_ts) {
            (Some(_), _) => u64::MAX,
            (None, ts) => ts.unwrap_or(0),
        };
        let mut by_rank: Vec<usize> = (0..slots.len()).collect();
        by_rank.sort_by_key(|&i| (key(&slots[i]), i));
        let mut heap = BinaryHeap::with_capacity(slots.len());
        for (rank, &i) in by_rank.iter().enumerate() {
            let rank = u32::try_from(rank).unwrap_or(u32::MAX);
            slots[i].rank = rank;
            heap.push(Reverse((key(&slots[i]), rank)));
        }
        Ok(Merge {
            slots,
            readers,
            heap,
            by_rank,
        })
    }

    /// The file whose frame comes next; None at the end. Its reader is
    /// open (reopened if need be) or the error why not is returned, as is a
    /// failure of its first look.
    pub fn pop(&mut self) -> Option<(usize, Result<()>)> {
        let Reverse((_, rank)) = self.heap.pop()?;
        let slot = *self.by_rank.get(rank as usize)?;
        if let Some(e) = self.slots[slot].error.take() {
            return Some((slot, Err(e)));
        }
        if self.readers[slot].is_none() {
            match self.slots[slot].input.open() {
                Ok(r) => self.readers[slot] = Some(r),
                Err(e) => return Some((slot, Err(e))),
            }
        }
        Some((slot, Ok(())))
    }

    /// File `slot`'s held frame; give it back with [`Merge::release`].
    pub fn take_held(&mut self, slot: usize) -> Option<HeldFrame> {
        self.slots[slot].held.take()
    }

    /// Keeps a held frame's buffer for the next hold.
    pub fn release(&mut self, slot: usize, held: HeldFrame) {
        self.slots[slot].spare = held;
    }

    /// The next frame of file `slot` (just popped), if it comes before
    /// every other file's.
    pub fn next(&mut self, slot: usize) -> Result<Next<'_>> {
        let next_key = self.heap.peek().map_or((u64::MAX, u32::MAX), |r| r.0);
        let s = &mut self.slots[slot];
        let Some(reader) = self.readers[slot].as_mut() else {
            return Ok(Next::End);
        };
        match reader.next_frame()? {
            None => Ok(Next::End),
            Some(frame) if (frame.ts_ns, s.rank) <= next_key => Ok(Next::Frame(frame)),
            Some(frame) => {
                let mut held = std::mem::take(&mut s.spare);
                held.hold(&frame);
                self.heap.push(Reverse((frame.ts_ns, s.rank)));
                s.held = Some(held);
                Ok(Next::Later)
            }
        }
    }

    /// Every frame of every file, in timestamp order, through `v`. When an
    /// error stops the walk, the files open then are ended first.
    pub fn walk<V: Visit>(&mut self, v: &mut V) -> Result<()> {
        while let Some((slot, opened)) = self.pop() {
            let turn = match opened {
                Err(e @ Error::Open { .. }) => {
                    self.close(slot);
                    v.skipped(slot, e)
                }
                Err(e) => Err(e),
                Ok(()) => self.turn(slot, v),
            };
            if let Err(e) = turn {
                for open in 0..self.slots.len() {
                    if let Some(reader) = self.close(open) {
                        v.end(open, reader);
                    }
                }
                return Err(e);
            }
        }
        Ok(())
    }

    /// File `slot`'s turn: its held frame, then its frames for as long as
    /// they come before every other file's.
    fn turn<V: Visit>(&mut self, slot: usize, v: &mut V) -> Result<()> {
        v.turn(slot, &self.slots[slot].look);
        if let Some(held) = self.take_held(slot) {
            let kept = v.frame(slot, &held.frame())?;
            if let Some(reader) = self.reader(slot) {
                v.after(slot, kept, held.offset, reader)?;
            }
            self.release(slot, held);
        }
        loop {
            let (kept, offset) = match self.next(slot)? {
                Next::Frame(frame) => (v.frame(slot, &frame)?, frame.offset),
                Next::Later => return Ok(()),
                Next::End => {
                    if let Some(reader) = self.close(slot) {
                        v.end(slot, reader);
                    }
                    return Ok(());
                }
            };
            if let Some(reader) = self.reader(slot) {
                v.after(slot, kept, offset, reader)?;
            }
        }
    }

    /// The reader of file `slot`, while it is open.
    pub fn reader(&self, slot: usize) -> Option<&CaptureReader> {
        self.readers.get(slot)?.as_ref()
    }

    /// File `slot` is read to its end: its reader is closed.
    pub fn close(&mut self, slot: usize) -> Option<CaptureReader> {
        self.slots[slot].spare = HeldFrame::default();
        self.readers.get_mut(slot)?.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::capture_writer::{CaptureWrite, PcapWriter};

    /// A file of one-byte frames at `times` (µs), each frame's byte its tag.
    fn capture(dir: &Path, name: &str, tag: u8, times: &[u64]) -> Input {
        let path = dir.join(name);
        let mut w = PcapWriter::create(&path, 1, 0).expect("a capture");
        for &t in times {
            w.write_frame(0, 1_700_000_000_000_000_000 + t * 1000, &[tag])
                .expect("written");
        }
        w.finish().expect("flushed");
        Input::File(path)
    }

    /// Frames come in timestamp order, ties in the files' order; a rotation
    /// set keeps one file open at a time (beside a file overlapping it),
    /// and a frame is copied only when another file's comes first.
    #[test]
    fn frames_in_time_order_with_few_files_open() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let d = dir.path();
        let inputs = [
            capture(d, "x2.pcap", 2, &[20, 21, 29]),
            capture(d, "x0.pcap", 0, &[0, 5, 9]),
            capture(d, "x1.pcap", 1, &[9, 15, 19]),
            capture(d, "other.pcap", 9, &[7, 16, 40]),
        ];
        let mut warnings = Vec::new();
        let mut merge = Merge::open(&inputs, &mut warnings).expect("opened");
        assert!(warnings.is_empty());
        // Every regular file was closed after its first look.
        assert!(merge.readers.iter().all(Option::is_none));
        let (mut order, mut most_open, mut held) = (Vec::new(), 0, 0);
        while let Some((slot, opened)) = merge.pop() {
            opened.expect("reopened");
            most_open = most_open.max(merge.readers.iter().filter(|r| r.is_some()).count());
            if let Some(h) = merge.take_held(slot) {
                held += 1;
                order.push((h.ts_ns / 1000 % 1_000_000, h.data[0]));
                merge.release(slot, h);
            }
            loop {
                match merge.next(slot).expect("read") {
                    Next::Frame(f) => order.push((f.ts_ns / 1000 % 1_000_000, f.data[0])),
                    Next::Later => break,
                    Next::End => {
                        merge.close(slot);
                        break;
                    }
                }
            }
        }
        let want = [
            (0, 0),
            (5, 0),
            (7, 9),
            (9, 0),
            (9, 1),
            (15, 1),
            (16, 9),
            (19, 1),
            (20, 2),
            (21, 2),
            (29, 2),
            (40, 9),
        ];
        assert_eq!(order, want);
        assert_eq!(most_open, 2, "a set's file and the file beside it");
        // Copied: each frame that had to wait for another file's — x0's at
        // 9 µs (behind other's 7), other's at 16 (behind x0's and x1's 9)
        // and 40, x1's at 19 (behind other's 16).
        assert_eq!(held, 4);
    }
}
