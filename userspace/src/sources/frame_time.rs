//! Which clock a frame's time comes from (`--time`, docs/inputs.md,
//! "Hardware time"): the capture's own timestamp, the switch's ERSPAN
//! III timestamp of the mirrored frame, read with its granularity and
//! widened to 64 bits, or the NIC's clock a ConnectX RDMA sniffer leaves
//! in the source MACs ([`super::sniffer_clock`]) where the file shows it.
use rocescope_common::wire::Recognition;
use rocescope_common::{Kind, PacketRecord, flags, hw_time};

use super::input::Input;
use super::sniffer_clock::{self, SnifferClock};
use super::wrap::nearest;

const NS_PER_SEC: u64 = 1_000_000_000;
/// By default a file is timed by ERSPAN III only when its first record's
/// switch time is within this of its capture time: a switch clock that is
/// not on the same time service (or a timestamp word that is no time at
/// all) is not silently taken; `--time erspan` takes it anyway.
const AUTO_AGREEMENT_NS: u64 = NS_PER_SEC;
/// A 32-bit timestamp wraps after this many units.
const WRAP: u128 = 1 << 32;

/// `--time`: where frame times come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeChoice {
    /// The best source present: the NIC's clock in a sniffer capture's
    /// source MACs where the whole file shows one and pins its rate to
    /// 1 GHz within 5%;
    /// ERSPAN III time for a capture file whose first record carries it in
    /// a known granularity, within a second of the capture's time; capture
    /// time otherwise.
    #[default]
    Auto,
    /// The capture's timestamps.
    Capture,
    /// The ERSPAN III timestamps wherever a record has one in a known
    /// granularity (capture time for the others, counted).
    Erspan,
    /// The NIC's clock in the source MACs of a ConnectX RDMA sniffer
    /// capture, for each file whose MACs behave like one (capture time for
    /// the others, with the reason).
    Sniffer,
}

/// The clock a capture file's frames were timed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Clock {
    Capture,
    Erspan,
    Sniffer,
}

/// The switch's time of `rec` in nanoseconds, if it carries an ERSPAN III
/// timestamp in a known granularity. A timestamp without its upper bits
/// is widened to the value nearest `capture_ns` (the capture clock),
/// which is right while the two clocks agree to within half the 32-bit
/// span: ±214 s for 100 ns ticks, ±2.5 days for 100 µs ticks, ±0.5 s for
/// IEEE 1588 nanoseconds without their seconds.
pub fn erspan_ns(rec: &PacketRecord, capture_ns: u64) -> Option<u64> {
    if !rec.has(flags::HAS_HW_TIME) {
        return None;
    }
    let format = rec.hw_time_format;
    let low = rec.hw_time & 0xFFFF_FFFF;
    let upper = rec.hw_time >> 32;
    let has_upper = format & hw_time::UPPER != 0;
    let unit_ns: u64 = match format & hw_time::GRANULARITY_MASK {
        hw_time::GRA_100_US => 100_000,
        hw_time::GRA_100_NS => 100,
        hw_time::GRA_IEEE_1588 => 1,
        _ => return None,
    };
    if format & hw_time::GRANULARITY_MASK == hw_time::GRA_IEEE_1588
        && (!has_upper || format & hw_time::UPPER_IS_SECONDS != 0)
    {
        // Seconds and nanoseconds: the low word is the nanoseconds.
        if low >= NS_PER_SEC {
            return None;
        }
        return if has_upper {
            upper.checked_mul(NS_PER_SEC)?.checked_add(low)
        } else {
            let ns = nearest(
                u128::from(capture_ns),
                u128::from(low),
                u128::from(NS_PER_SEC),
            );
            u64::try_from(ns).ok()
        };
    }
    let ticks = if has_upper && format & hw_time::UPPER_IS_SECONDS == 0 {
        u128::from(rec.hw_time)
    } else {
        nearest(u128::from(capture_ns / unit_ns), u128::from(low), WRAP)
    };
    u64::try_from(ticks * u128::from(unit_ns)).ok()
}

/// Per capture file, the clock its frames were timed by, the records of a
/// hardware-timed file that had no usable hardware time, and the sniffer
/// clocks its survey found.
#[derive(Debug)]
pub struct FrameTimes {
    choice: TimeChoice,
    clocks: Vec<Option<Clock>>,
    fallbacks: Vec<u64>,
    sniffer: Vec<Option<SnifferClock>>,
    /// Why a file's source MACs were not taken as a clock (said with
    /// `--time sniffer`, and by default for a file that looked like one).
    reasons: Vec<Option<String>>,
}

impl FrameTimes {
    pub fn new(choice: TimeChoice, files: usize) -> FrameTimes {
        let unsurveyed = (choice == TimeChoice::Sniffer)
            .then(|| "its source MACs were not surveyed (live reads no sniffer capture)".into());
        FrameTimes {
            choice,
            clocks: vec![None; files],
            fallbacks: vec![0; files],
            sniffer: vec![None; files],
            reasons: vec![unsurveyed; files],
        }
    }

    /// [`FrameTimes::new`] for the files `inputs`, each read once first for
    /// the NIC clock in its source MACs, unless `--time` rules it out.
    pub fn surveyed(choice: TimeChoice, inputs: &[&Input], reg: &Recognition) -> FrameTimes {
        let mut t = FrameTimes::new(choice, inputs.len());
        if !matches!(choice, TimeChoice::Auto | TimeChoice::Sniffer) {
            return t;
        }
        for (slot, input) in inputs.iter().enumerate() {
            t.reasons[slot] = match sniffer_clock::survey(input, reg) {
                Ok(clock) if choice == TimeChoice::Auto && !clock.weakest.pins_the_rate() => {
                    let w = clock.weakest;
                    Some(format!(
                        "its source MACs behave like a NIC's clock, but interface {}'s {} frames over {} ns of capture, their lag varying by {} ns, do not pin its rate to 1 GHz within 5% (--time sniffer takes it)",
                        w.iface, w.frames, w.span_ns, w.spread_ns
                    ))
                }
                Ok(clock) => {
                    t.sniffer[slot] = Some(clock);
                    None
                }
                Err(r) if choice == TimeChoice::Sniffer || r.clock_like => {
                    Some(format!("its source MACs are no NIC clock: {}", r.reason))
                }
                Err(_) => None,
            };
        }
        t
    }

    /// The time of `rec`, the next frame of file `slot`, captured on its
    /// interface `file_iface` at `capture_ns`. A frame that is no record
    /// (a telemetry report) takes the file's clock as decided so far, and
    /// neither decides it nor is counted.
    #[inline]
    pub fn time(
        &mut self,
        slot: usize,
        file_iface: u32,
        rec: &PacketRecord,
        capture_ns: u64,
    ) -> u64 {
        // Inlined where every frame asks: a file decided on its capture
        // clock keeps it, and every frame's time (a telemetry report's
        // too) is the capture's.
        if let Some(Some(Clock::Capture)) = self.clocks.get(slot) {
            return capture_ns;
        }
        self.time_by_clock(slot, file_iface, rec, capture_ns)
    }

    /// [`FrameTimes::time`] but of a file not (yet) on its capture clock.
    fn time_by_clock(
        &mut self,
        slot: usize,
        file_iface: u32,
        rec: &PacketRecord,
        capture_ns: u64,
    ) -> u64 {
        if rec.kind() == Kind::Other {
            return self.time_of_other(slot, file_iface, rec, capture_ns);
        }
        let Some(decided) = self.clocks.get(slot).copied() else {
            return capture_ns;
        };
        let clock = decided.unwrap_or_else(|| self.decide(slot, rec, capture_ns));
        self.clocks[slot] = Some(clock);
        let hardware = match clock {
            Clock::Capture => return capture_ns,
            Clock::Erspan => erspan_ns(rec, capture_ns),
            Clock::Sniffer => self.sniffer[slot]
                .as_ref()
                .and_then(|c| c.time(file_iface, rec, capture_ns)),
        };
        hardware.unwrap_or_else(|| {
            self.fallbacks[slot] += 1;
            capture_ns
        })
    }

    /// The time of a frame of file `slot` that is no record (a telemetry
    /// report), in the file's clock as decided so far; nothing counted.
    fn time_of_other(
        &self,
        slot: usize,
        file_iface: u32,
        rec: &PacketRecord,
        capture_ns: u64,
    ) -> u64 {
        let hardware = match self.clocks.get(slot).copied().flatten() {
            Some(Clock::Erspan) => erspan_ns(rec, capture_ns),
            Some(Clock::Sniffer) => self.sniffer[slot]
                .as_ref()
                .and_then(|c| c.time(file_iface, rec, capture_ns)),
            _ => None,
        };
        hardware.unwrap_or(capture_ns)
    }

    /// File `slot`'s clock, from its first record.
    fn decide(&self, slot: usize, rec: &PacketRecord, capture_ns: u64) -> Clock {
        if self.sniffer[slot].is_some() {
            return Clock::Sniffer;
        }
        match self.choice {
            TimeChoice::Erspan => Clock::Erspan,
            TimeChoice::Auto
                if erspan_ns(rec, capture_ns)
                    .is_some_and(|ns| ns.abs_diff(capture_ns) <= AUTO_AGREEMENT_NS) =>
            {
                Clock::Erspan
            }
            _ => Clock::Capture,
        }
    }

    /// What `summary.json` says under `input.time`: nothing when every
    /// frame kept its capture time by default and no file looked like a
    /// sniffer's (the outputs are then what they were before hardware time
    /// was read).
    pub fn facts(&self, captures: &[String]) -> Option<TimeFacts> {
        let hardware = self
            .clocks
            .iter()
            .any(|c| matches!(c, Some(Clock::Erspan | Clock::Sniffer)));
        let said = self.reasons.iter().any(Option::is_some);
        if self.choice == TimeChoice::Auto && !hardware && !said {
            return None;
        }
        Some(TimeFacts {
            choice: self.choice,
            files: captures
                .iter()
                .enumerate()
                .map(|(i, capture)| FileTime {
                    capture: capture.clone(),
                    clock: self
                        .clocks
                        .get(i)
                        .copied()
                        .flatten()
                        .unwrap_or(Clock::Capture),
                    capture_time_records: self.fallbacks.get(i).copied().unwrap_or(0),
                    reason: self.reasons.get(i).cloned().flatten(),
                })
                .collect(),
        })
    }
}

/// `input.time` in `summary.json`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TimeFacts {
    /// `--time` as given (`auto` by default).
    pub choice: TimeChoice,
    pub files: Vec<FileTime>,
}

/// The clock of one capture file's frame times.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FileTime {
    pub capture: String,
    pub clock: Clock,
    /// With clock `erspan`: records timed by the capture clock because
    /// they had no ERSPAN III time in a known granularity; with `sniffer`:
    /// because they are no RoCE frame (PFC), whose MAC is no clock.
    pub capture_time_records: u64,
    /// Why the file's source MACs were not taken as the NIC's clock (with
    /// `--time sniffer`, or by default when they looked like one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamped(time: u64, format: u8) -> PacketRecord {
        PacketRecord {
            kind: Kind::Roce as u8,
            flags: flags::HAS_HW_TIME | flags::ERSPAN,
            hw_time: time,
            hw_time_format: format,
            ..PacketRecord::default()
        }
    }

    #[test]
    fn granularities_and_upper_bits() {
        let capture = 1_700_000_000_123_456_789u64;
        // 100 ns ticks, widened against the capture clock: the switch's
        // clock reads 3 ms before the capture's.
        let switch = capture - 3_000_000;
        let r = stamped((switch / 100) & 0xFFFF_FFFF, hw_time::GRA_100_NS);
        assert_eq!(erspan_ns(&r, capture), Some(switch / 100 * 100));
        // The same ticks with their upper bits need no capture clock.
        let r = stamped(switch / 100, hw_time::GRA_100_NS | hw_time::UPPER);
        assert_eq!(erspan_ns(&r, 0), Some(switch / 100 * 100));
        // 100 µs ticks.
        let r = stamped((switch / 100_000) & 0xFFFF_FFFF, hw_time::GRA_100_US);
        assert_eq!(erspan_ns(&r, capture), Some(switch / 100_000 * 100_000));
        // IEEE 1588 seconds and nanoseconds; nanoseconds alone take the
        // nearest second of the capture clock (across a second boundary).
        let (s, ns) = (switch / NS_PER_SEC, switch % NS_PER_SEC);
        let f = hw_time::GRA_IEEE_1588 | hw_time::UPPER | hw_time::UPPER_IS_SECONDS;
        assert_eq!(erspan_ns(&stamped(s << 32 | ns, f), 0), Some(switch));
        let r = stamped(999_999_000, hw_time::GRA_IEEE_1588);
        assert_eq!(
            erspan_ns(&r, 1_000_000_000_000_000_100),
            Some(999_999_999_999_999_000)
        );
        assert_eq!(
            erspan_ns(&stamped(NS_PER_SEC, hw_time::GRA_IEEE_1588), 5),
            None
        );
        // User-defined units, or no ERSPAN III header: no time.
        assert_eq!(erspan_ns(&stamped(5, hw_time::GRA_USER), capture), None);
        assert_eq!(erspan_ns(&PacketRecord::default(), capture), None);
        // A wrap between the two readings: the 32-bit tick counter has just
        // wrapped on the switch, not yet at the capture clock's reading.
        let capture_ticks: u64 = (7 << 32) - 10;
        let r = stamped(5, hw_time::GRA_100_NS);
        assert_eq!(
            erspan_ns(&r, capture_ticks * 100),
            Some(((7 << 32) + 5) * 100)
        );
    }

    #[test]
    fn the_default_follows_each_files_first_record() {
        let hw = stamped(1_000, hw_time::GRA_100_NS);
        let plain = PacketRecord {
            kind: Kind::Roce as u8,
            ..PacketRecord::default()
        };
        let mut t = FrameTimes::new(TimeChoice::Auto, 2);
        // File 0 starts with ERSPAN III time; file 1 does not.
        assert_eq!(t.time(0, 0, &hw, 100_000), 100_000);
        assert_eq!(t.time(1, 0, &plain, 7), 7);
        assert_eq!(t.time(1, 0, &hw, 8), 8);
        assert_eq!(t.time(0, 0, &plain, 9), 9);
        let names = ["a".to_string(), "b".to_string()];
        let facts = t.facts(&names).expect("a file timed by ERSPAN");
        assert_eq!(
            facts
                .files
                .iter()
                .map(|f| (f.clock, f.capture_time_records))
                .collect::<Vec<_>>(),
            [(Clock::Erspan, 1), (Clock::Capture, 0)]
        );
        let mut t = FrameTimes::new(TimeChoice::Capture, 1);
        assert_eq!(t.time(0, 0, &hw, 5), 5);
        assert!(t.facts(&names[..1]).is_some());
        let mut t = FrameTimes::new(TimeChoice::Auto, 1);
        assert_eq!(t.time(0, 0, &plain, 5), 5);
        assert_eq!(t.facts(&names[..1]), None);
        // A switch clock more than a second off the capture's is not taken
        // by default, only when asked for.
        let off = 100_000 + NS_PER_SEC + 100;
        let mut t = FrameTimes::new(TimeChoice::Auto, 1);
        assert_eq!(t.time(0, 0, &hw, off), off);
        assert_eq!(t.facts(&names[..1]), None);
        let mut t = FrameTimes::new(TimeChoice::Erspan, 1);
        assert_eq!(t.time(0, 0, &hw, off), 100_000);
        let mut t = FrameTimes::new(TimeChoice::Auto, 1);
        assert_eq!(t.time(0, 0, &hw, 100_000 + NS_PER_SEC), 100_000);
    }

    #[test]
    fn a_sniffer_clock_times_the_roce_records_of_its_file() {
        let mut t = FrameTimes::new(TimeChoice::Auto, 1);
        t.sniffer[0] = Some(SnifferClock {
            offsets: [(0, 1_000)].into(),
            frames: 16,
            weakest: Default::default(),
        });
        let mut roce = PacketRecord {
            kind: Kind::Roce as u8,
            flags: flags::HAS_BTH,
            ..PacketRecord::default()
        };
        roce.src_mac = [0, 0, 0, 0, 0x13, 0x88]; // 5000 ns on the NIC's clock
        let pfc = PacketRecord {
            kind: Kind::Pfc as u8,
            ..PacketRecord::default()
        };
        // A telemetry report (no record) before any record: capture time,
        // and the file's clock is not decided by it.
        let report = PacketRecord::default();
        assert_eq!(t.time(0, 0, &report, 7_000), 7_000);
        assert_eq!(t.clocks[0], None);
        assert_eq!(t.time(0, 0, &roce, 6_500), 6_000);
        // PFC's MAC is the port's: capture time, counted.
        assert_eq!(t.time(0, 0, &pfc, 6_600), 6_600);
        // A report's frame has no MAC time either; not counted.
        assert_eq!(t.time(0, 0, &report, 6_700), 6_700);
        // A RoCE frame of an interface that showed no clock.
        assert_eq!(t.time(0, 1, &roce, 6_800), 6_800);
        let facts = t.facts(&["s".to_string()]).expect("a sniffer-timed file");
        assert_eq!(facts.files[0].clock, Clock::Sniffer);
        assert_eq!(facts.files[0].capture_time_records, 2);
        // `--time sniffer` without a survey (live): capture time, and why.
        let mut t = FrameTimes::new(TimeChoice::Sniffer, 1);
        assert_eq!(t.time(0, 0, &roce, 6_500), 6_500);
        let facts = t.facts(&["live".to_string()]).unwrap();
        assert_eq!(facts.files[0].clock, Clock::Capture);
        assert!(
            facts.files[0]
                .reason
                .as_deref()
                .unwrap()
                .contains("not surveyed")
        );
    }
}
