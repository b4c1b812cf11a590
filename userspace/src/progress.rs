//! The progress bar of a file run on a terminal: percentage of the bytes of
//! every capture, read rate, ETA and frames so far (indicatif). Nothing
//! when stderr is not a terminal (a pipe, a log, CI), nor when asked not to.
//! Where the size is unknown (a pipe or FIFO given as a capture), a
//! spinner with the bytes, the rate and the frames instead.
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Frames between looks at the clock: reading must not pay for the bar.
const EVERY_FRAMES: u64 = 4096;
/// How often the bar is redrawn.
const REFRESH: Duration = Duration::from_millis(200);

pub struct FileProgress {
    bar: Option<ProgressBar>,
    /// Bytes read of each file so far (files are read merged by time: the
    /// bar's position is their sum).
    read: Vec<u64>,
    last: Instant,
}

impl FileProgress {
    /// A bar over `paths` (their sizes summed) when `wanted` and stderr is a
    /// terminal.
    pub fn new(wanted: bool, paths: &[PathBuf]) -> Self {
        let sizes: Vec<Option<u64>> = paths
            .iter()
            .map(|p| {
                std::fs::metadata(p)
                    .ok()
                    .filter(|m| m.is_file())
                    .map(|m| m.len())
            })
            .collect();
        let read = vec![0; sizes.len()];
        let bar = (wanted && std::io::stderr().is_terminal()).then(|| {
            match sizes.iter().copied().sum::<Option<u64>>() {
                Some(total) => ProgressBar::new(total).with_style(
                    ProgressStyle::with_template(
                        "{percent:>3}% {wide_bar} {bytes}/{total_bytes} {bytes_per_sec} ETA {eta} · {msg}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
                ),
                None => ProgressBar::new_spinner().with_style(
                    ProgressStyle::with_template("{spinner} {bytes} {bytes_per_sec} · {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                ),
            }
        });
        Self {
            bar,
            read,
            last: Instant::now(),
        }
    }

    /// `frames` read so far, the current file (`file_index`) at byte `offset`.
    /// Called on every frame: without a bar (not a terminal, or not asked)
    /// it is this inlined check alone, the bar's work out of line
    /// (docs/benchmarks.md, "pairhash").
    #[inline]
    pub fn tick(&mut self, file_index: usize, offset: u64, frames: u64) {
        if self.bar.is_some() {
            self.tick_bar(file_index, offset, frames);
        }
    }

    /// [`Self::tick`] with a bar.
    #[inline(never)]
    fn tick_bar(&mut self, file_index: usize, offset: u64, frames: u64) {
        let Some(bar) = &self.bar else {
            return;
        };
        if let Some(r) = self.read.get_mut(file_index) {
            *r = offset;
        }
        if !frames.is_multiple_of(EVERY_FRAMES) || self.last.elapsed() < REFRESH {
            return;
        }
        self.last = Instant::now();
        bar.set_position(self.read.iter().sum());
        bar.set_message(format!("{frames} frames"));
    }

    /// Clears the bar (the report or the summary line follows).
    pub fn done(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
