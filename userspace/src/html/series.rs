//! What the page plots, gathered while the capture streams through:
//! PSN points per request flow and timeline bins per flow, both bounded.

use std::collections::BTreeMap;

use super::{MAX_BINS, MAX_POINTS, PLOT_BINS};
use crate::analyze::TimelineRow;

/// A sent request packet: the tcptrace picture's dot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mark {
    Original,
    Retrans,
    /// A retransmission that started a Go-Back-N rewind.
    Rewind,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Point {
    pub ts_ns: u64,
    /// The PSN unwrapped (24-bit serial arithmetic) relative to the first.
    pub psn: i64,
    pub mark: Mark,
}

#[derive(Debug, Default)]
pub(crate) struct FlowPoints {
    pub first_psn: u32,
    last: Option<(u32, i64)>,
    /// Keep every `stride`-th original send.
    stride: u64,
    originals: u64,
    pub points: Vec<Point>,
    /// Originals were thinned.
    pub thinned: bool,
}

impl FlowPoints {
    pub(super) fn push(&mut self, ts_ns: u64, psn: u32, mark: Mark) {
        let unwrapped = match self.last {
            None => {
                self.first_psn = psn;
                self.stride = 1;
                0
            }
            Some((last, at)) => {
                // Signed 24-bit distance from the previous PSN.
                let d = (psn.wrapping_sub(last) & 0x00ff_ffff) as i64;
                at + if d >= 1 << 23 { d - (1 << 24) } else { d }
            }
        };
        self.last = Some((psn, unwrapped));
        if mark == Mark::Original {
            self.originals += 1;
            if !self.originals.is_multiple_of(self.stride) {
                return;
            }
        }
        self.points.push(Point {
            ts_ns,
            psn: unwrapped,
            mark,
        });
        if self.points.len() > MAX_POINTS {
            self.thin();
        }
    }

    /// Halves the originals kept so far and from now on.
    fn thin(&mut self) {
        let mut n = 0u64;
        self.points.retain(|p| {
            if p.mark != Mark::Original {
                return true;
            }
            n += 1;
            n.is_multiple_of(2)
        });
        self.stride *= 2;
        self.thinned = true;
    }
}

/// A timeline bin, merged from the analyzer's rows.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Bin {
    pub bits: f64,
    pub goodput_bits: f64,
    pub ce: u64,
    pub cnps: u64,
    pub retrans: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Series {
    pub width_ns: u64,
    pub bins: BTreeMap<u64, Bin>,
}

impl Bin {
    fn add(&mut self, o: &Bin) {
        self.bits += o.bits;
        self.goodput_bits += o.goodput_bits;
        self.ce += o.ce;
        self.cnps += o.cnps;
        self.retrans += o.retrans;
    }
}

/// A bin width for drawing `span_ns`: about [`PLOT_BINS`] bins, a 1-2-5
/// multiple of `base` (the timelines' width, which it cannot go below).
pub(crate) fn plot_bin_ns(span_ns: u64, base: u64) -> u64 {
    let base = base.max(1);
    let want = span_ns / PLOT_BINS;
    let mut decade = 1u64;
    loop {
        for m in [1, 2, 5] {
            let w = base.saturating_mul(decade.saturating_mul(m));
            if w >= want || w == u64::MAX {
                return w;
            }
        }
        decade = decade.saturating_mul(10);
    }
}

/// `bins` re-cut `width` wide over `[t0, t1]`: every bin, empty ones at 0
/// (a line drawn through the bins with traffic alone would bridge a pause).
pub(super) fn rebin<'a>(
    bins: impl IntoIterator<Item = (&'a u64, &'a Bin)>,
    width: u64,
    t0: u64,
    t1: u64,
) -> Vec<(u64, Bin)> {
    let width = width.max(1);
    let first = t0 / width * width;
    let n = (t1.saturating_sub(first) / width).saturating_add(1);
    let mut out: Vec<(u64, Bin)> = (0..n.min(4 * PLOT_BINS))
        .map(|i| (first + i * width, Bin::default()))
        .collect();
    for (&k, b) in bins {
        let i = (k.saturating_sub(first) / width) as usize;
        if let Some(slot) = out.get_mut(i) {
            slot.1.add(b);
        }
    }
    out
}

impl Series {
    pub(super) fn add(&mut self, row: &TimelineRow) {
        if self.width_ns == 0 {
            self.width_ns = row.bin_ns.max(1);
        }
        let key = row.bin_start_ns / self.width_ns * self.width_ns;
        let b = self.bins.entry(key).or_default();
        b.bits += row.bytes as f64 * 8.0;
        b.goodput_bits += row.goodput_gbps * row.bin_ns as f64;
        b.ce += row.ce;
        b.cnps += row.cnps;
        b.retrans += row.retrans_packets;
        if self.bins.len() > MAX_BINS {
            self.width_ns *= 2;
            let old = std::mem::take(&mut self.bins);
            for (k, v) in old {
                self.bins
                    .entry(k / self.width_ns * self.width_ns)
                    .or_default()
                    .add(&v);
            }
        }
    }
}
