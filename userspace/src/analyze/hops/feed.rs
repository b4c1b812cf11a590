//! The matcher beside the analyzer: on a thread of its own once a capture
//! shows a second tap (docs/benchmarks.md, "matchthread").
//!
//! On a multi-tap capture every RoCE frame is a sighting, and matching
//! them was a third of the analyzer thread's time. The matcher reads
//! nothing of the analyzer's state but the flow index it is handed, and
//! the analyzer reads nothing of the matcher's until the end, so the
//! sightings can go to another thread in batches, in order: the matcher
//! sees the same sequence of pushes and forgets as inline, and what it
//! finds is the same. A single-tap capture never starts the thread (the
//! matcher only keeps a window of frames then), nor does `live`, whose
//! matcher is [`Matcher::one_tap`].

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use rocescope_common::PacketRecord;

use super::{Matcher, Seen};

/// Inputs a batch holds before it goes to the matcher's thread.
const BATCH: usize = 1024;

/// Batches in flight to the matcher's thread: past this the analyzer waits
/// (memory bounded by `DEPTH × BATCH` inputs).
const DEPTH: usize = 8;

/// One call the matcher is to make, in the analyzer's order.
#[derive(Clone, Copy, Debug)]
enum Input {
    Push(Seen, usize),
    Forget(usize),
}

/// The analyzer's handle on its matcher: inline, or on a thread.
#[derive(Debug)]
pub(crate) struct Feed {
    at: At,
    /// The matcher may move to a thread once a second tap shows.
    may_thread: bool,
}

/// One per analyzer, so its size does not matter; the inline matcher is
/// not boxed (no pointer to follow a frame).
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
enum At {
    Inline(Matcher),
    Thread(Worker),
}

#[derive(Debug)]
struct Worker {
    batch: Vec<Input>,
    to: SyncSender<Vec<Input>>,
    spares: Receiver<Vec<Input>>,
    /// Gives the matcher back when its inputs end (`None` only if it
    /// was never handed over, which a [`Worker`] never is).
    thread: JoinHandle<Option<Matcher>>,
}

impl Feed {
    /// `matcher` inline; with `may_thread`, on a thread of its own from the
    /// first frame of a second tap on.
    pub(crate) fn new(matcher: Matcher, may_thread: bool) -> Self {
        Feed {
            at: At::Inline(matcher),
            may_thread,
        }
    }

    /// [`Matcher::push`].
    #[inline]
    pub(crate) fn push(&mut self, rec: &PacketRecord, flow_index: usize) {
        match &mut self.at {
            At::Thread(w) => {
                // What the matcher would not take does not cross (a
                // matcher with two taps is never `one_tap`).
                if let Some(seen) = Seen::of(rec) {
                    w.send(Input::Push(seen, flow_index));
                }
            }
            At::Inline(m) => {
                m.push(rec, flow_index);
                if self.may_thread && m.matching() {
                    self.start();
                }
            }
        }
    }

    /// [`Matcher::forget`].
    pub(crate) fn forget(&mut self, flow_index: usize) {
        match &mut self.at {
            At::Thread(w) => w.send(Input::Forget(flow_index)),
            At::Inline(m) => m.forget(flow_index),
        }
    }

    /// The matcher with every input applied (its thread ended).
    pub(crate) fn into_matcher(self) -> Matcher {
        match self.at {
            At::Inline(m) => m,
            At::Thread(w) => w.end(),
        }
    }

    /// Whether the matcher has moved to its thread.
    #[cfg(test)]
    pub(super) fn threaded(&self) -> bool {
        matches!(self.at, At::Thread(_))
    }

    /// Moves the matcher to a thread; it stays inline if none can be made.
    #[cold]
    fn start(&mut self) {
        self.may_thread = false;
        let At::Inline(m) = &mut self.at else {
            return;
        };
        // The thread is made first and the matcher handed over after: if
        // no thread can be made, or it cannot take it, the matcher stays.
        let (hand_over, taken) = sync_channel::<Matcher>(1);
        let (to, inputs) = sync_channel::<Vec<Input>>(DEPTH);
        let (give_back, spares) = sync_channel::<Vec<Input>>(DEPTH + 1);
        let Ok(thread) = std::thread::Builder::new()
            .name("rocescope-match".into())
            .spawn(move || {
                let Ok(mut matcher) = taken.recv() else {
                    return None;
                };
                for mut batch in inputs {
                    for input in batch.drain(..) {
                        match input {
                            Input::Push(seen, flow_index) => matcher.push_seen(seen, flow_index),
                            Input::Forget(flow_index) => matcher.forget(flow_index),
                        }
                    }
                    let _ = give_back.try_send(batch);
                }
                Some(matcher)
            })
        else {
            return;
        };
        let matcher = std::mem::replace(m, Matcher::new(0));
        match hand_over.send(matcher) {
            Ok(()) => {
                self.at = At::Thread(Worker {
                    batch: Vec::with_capacity(BATCH),
                    to,
                    spares,
                    thread,
                });
            }
            Err(back) => *m = back.0,
        }
    }
}

impl Worker {
    #[inline]
    fn send(&mut self, input: Input) {
        self.batch.push(input);
        if self.batch.len() >= BATCH {
            self.flush();
        }
    }

    fn flush(&mut self) {
        let next = self
            .spares
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH));
        let full = std::mem::replace(&mut self.batch, next);
        // A send fails only if the thread ended, by a panic: `end` passes
        // the panic on.
        let _ = self.to.send(full);
    }

    /// The matcher once every input sent has been applied.
    fn end(mut self) -> Matcher {
        if !self.batch.is_empty() {
            self.flush();
        }
        drop(self.to);
        match self.thread.join() {
            Ok(Some(m)) => m,
            Ok(None) => Matcher::new(0),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}
