//! The NIC's clock in a ConnectX RDMA sniffer capture's source MACs
//! (`--time sniffer`; docs/inputs.md, "Hardware time"). On the real
//! sniffer captures the project has seen (`tcpdump -i mlx5_N`), the source
//! MAC of every RoCE frame is a 48-bit counter that only increases per
//! direction, by about 10⁹ a second: the NIC's nanosecond clock, finer than
//! the capture's microseconds (libpcap's RDMA sniffer stamps a frame with
//! `gettimeofday` when it polls the completion). That reading is inferred,
//! not documented, so it is used only where the capture itself shows it:
//! [`Survey`] reads a whole file first and takes its MACs as a clock only
//! when, on every RoCE frame, they behave like one.
use std::collections::{BTreeMap, HashMap};

use rocescope_common::wire::Recognition;
use rocescope_common::{PacketRecord, flags};

use super::input::Input;

/// The counter's span: 48 bits of nanoseconds wrap after 78 hours.
pub const SPAN: u64 = 1 << 48;
const HALF: u64 = SPAN / 2;
/// How far a frame's capture may lag its MAC time beyond the quickest
/// frame's lag: this plus [`SLACK_PER_SPAN`] of the file's span. A clock
/// that is not ~1 GHz drifts out of it over the file; a frame whose MAC is
/// no time at all lands anywhere.
const SLACK_NS: u64 = 1_000_000;
/// One part in this of the file's span (1%).
const SLACK_PER_SPAN: u64 = 100;
/// By default the clock is taken only where the file pins its rate to
/// 1 GHz within one part in this (5%): the lag's spread over an
/// interface's span bounds how far its rate is from the capture clock's.
/// A file too short or too jittery for that is left to `--time sniffer`.
pub const AUTO_RATE_PARTS: u64 = 20;
/// By default, each interface's clock rests on at least this many frames.
pub const AUTO_MIN_FRAMES: u64 = 16;
/// A file whose first this-many frames gave no direction a second RoCE
/// frame is not surveyed further (no sniffer capture starts that way).
const FIRST_FRAMES: u64 = 4096;
/// At most this many directions are followed (memory bounded by the file's
/// peers, not its length); more is no single NIC's sniffer.
const MAX_DIRECTIONS: usize = 65_536;

/// A file's source MACs read as the NIC's clock, per capture interface
/// (each its own NIC): a frame's time is its MAC value plus its
/// interface's offset, modulo 2⁴⁸, taken nearest its capture time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnifferClock {
    /// Per interface of the file that showed a clock: (capture time − MAC
    /// value) mod 2⁴⁸ of its frame captured soonest after its MAC time.
    pub offsets: BTreeMap<u32, u64>,
    /// The RoCE frames surveyed.
    pub frames: u64,
    /// The interface whose rate the file pins least: its frames, the
    /// capture time they span and their lag's spread.
    pub weakest: Evidence,
}

/// What one interface's frames show of its clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Evidence {
    pub iface: u32,
    pub frames: u64,
    pub span_ns: u64,
    pub spread_ns: u64,
}

impl Evidence {
    /// Enough to take the clock by default: the rate pinned to 1 GHz
    /// within 5% by at least [`AUTO_MIN_FRAMES`] frames.
    pub fn pins_the_rate(&self) -> bool {
        self.frames >= AUTO_MIN_FRAMES
            && self.span_ns > 0
            && self.spread_ns.saturating_mul(AUTO_RATE_PARTS) <= self.span_ns
    }

    /// Pins the rate less than `other`: fails where it passes, else a
    /// wider bound (spread over span).
    fn weaker_than(&self, other: &Evidence) -> bool {
        match (self.pins_the_rate(), other.pins_the_rate()) {
            (false, true) => true,
            (true, false) => false,
            _ => {
                u128::from(self.spread_ns) * u128::from(other.span_ns.max(1))
                    > u128::from(other.spread_ns) * u128::from(self.span_ns.max(1))
            }
        }
    }
}

impl SnifferClock {
    /// The NIC's time of `rec`, captured on interface `file_iface` of its
    /// file at `capture_ns`, if it is a RoCE frame (whose MAC the sniffer
    /// rewrote) of an interface that showed a clock.
    pub fn time(&self, file_iface: u32, rec: &PacketRecord, capture_ns: u64) -> Option<u64> {
        if !rec.has(flags::HAS_BTH) {
            return None;
        }
        let offset = self.offsets.get(&file_iface)?;
        let at = (mac_value(&rec.src_mac) + offset) % SPAN;
        let ns = super::wrap::nearest(u128::from(capture_ns), u128::from(at), u128::from(SPAN));
        u64::try_from(ns).ok()
    }
}

/// The source MAC as a 48-bit big-endian number.
pub fn mac_value(mac: &[u8; 6]) -> u64 {
    mac.iter().fold(0, |v, &b| v << 8 | u64::from(b))
}

/// One interface's lag of the capture clock behind the MAC clock: the
/// first frame's, and every other's distance from it.
#[derive(Debug, Default)]
struct Lags {
    first: u64,
    min_rel: i64,
    max_rel: i64,
    first_ts: u64,
    last_ts: u64,
    frames: u64,
    /// Some direction had a second frame.
    paired: bool,
}

/// The survey of one file's RoCE frames: per interface and direction
/// (source and destination address) the last MAC value, and per interface
/// the spread of the capture clock's lag behind the MAC clock.
#[derive(Debug, Default)]
pub struct Survey {
    last: HashMap<(u32, [u8; 16], [u8; 16]), u64>,
    lags: BTreeMap<u32, Lags>,
    frames_read: u64,
    frames: u64,
    paired: bool,
}

/// Lag `b` relative to lag `a`, both modulo 2⁴⁸, as a signed distance.
fn rel(a: u64, b: u64) -> i64 {
    let d = b.wrapping_sub(a) % SPAN;
    if d >= HALF {
        -((SPAN - d) as i64)
    } else {
        d as i64
    }
}

impl Survey {
    /// One more frame of the file (`number` for messages), captured on
    /// its interface `iface` at `capture_ns`. `Err`: its MACs are no
    /// clock, why.
    pub fn push(
        &mut self,
        iface: u32,
        rec: &PacketRecord,
        capture_ns: u64,
        number: u64,
    ) -> Result<(), String> {
        self.frames_read += 1;
        if rec.has(flags::HAS_BTH) {
            self.push_roce(iface, rec, capture_ns, number)?;
        }
        if !self.paired && self.frames_read >= FIRST_FRAMES {
            return Err(format!(
                "no two RoCE frames of one direction in its first {FIRST_FRAMES} frames"
            ));
        }
        Ok(())
    }

    fn push_roce(
        &mut self,
        iface: u32,
        rec: &PacketRecord,
        capture_ns: u64,
        number: u64,
    ) -> Result<(), String> {
        let value = mac_value(&rec.src_mac);
        let directions = self.last.len();
        let mut paired = false;
        match self.last.get_mut(&(iface, rec.src_ip, rec.dst_ip)) {
            Some(last) => {
                let step = value.wrapping_sub(*last) % SPAN;
                if step == 0 || step >= HALF {
                    return Err(format!(
                        "frame {number}: the source MAC of {} -> {} {} (a clock only increases)",
                        crate::addr::Ip(rec.src_ip),
                        crate::addr::Ip(rec.dst_ip),
                        if step == 0 { "repeats" } else { "goes back" }
                    ));
                }
                *last = value;
                paired = true;
            }
            None if directions >= MAX_DIRECTIONS => {
                return Err(format!(
                    "more than {MAX_DIRECTIONS} directions: no one NIC's sniffer"
                ));
            }
            None => {
                self.last.insert((iface, rec.src_ip, rec.dst_ip), value);
            }
        }
        let lag = capture_ns.wrapping_sub(value) % SPAN;
        let l = self.lags.entry(iface).or_insert_with(|| Lags {
            first: lag,
            first_ts: capture_ns,
            ..Lags::default()
        });
        let r = rel(l.first, lag);
        l.min_rel = l.min_rel.min(r);
        l.max_rel = l.max_rel.max(r);
        l.last_ts = l.last_ts.max(capture_ns);
        l.frames += 1;
        l.paired |= paired;
        self.paired |= paired;
        self.frames += 1;
        Ok(())
    }

    /// The clock, if the whole file showed one: on every interface with
    /// RoCE frames, every direction increasing and every frame's capture
    /// within the slack of its MAC time (one clock at ~1 GHz for all its
    /// directions).
    pub fn finish(self) -> Result<SnifferClock, String> {
        if !self.paired {
            return Err("no two RoCE frames of one direction".into());
        }
        let mut offsets = BTreeMap::new();
        let mut weakest: Option<Evidence> = None;
        for (iface, l) in self.lags.iter().filter(|(_, l)| l.paired) {
            let span_ns = l.last_ts.saturating_sub(l.first_ts);
            let spread = l.max_rel.abs_diff(l.min_rel);
            let slack = SLACK_NS + span_ns / SLACK_PER_SPAN;
            if spread > slack {
                return Err(format!(
                    "interface {iface}: the capture clock's lag behind the source MACs varies by {spread} ns over {span_ns} ns of capture (at most {slack}): not one ~1 GHz clock"
                ));
            }
            let offset = (i128::from(l.first) + i128::from(l.min_rel)).rem_euclid(i128::from(SPAN));
            offsets.insert(*iface, offset as u64);
            let e = Evidence {
                iface: *iface,
                frames: l.frames,
                span_ns,
                spread_ns: spread,
            };
            if weakest.is_none_or(|w| e.weaker_than(&w)) {
                weakest = Some(e);
            }
        }
        Ok(SnifferClock {
            offsets,
            frames: self.frames,
            weakest: weakest.unwrap_or_default(),
        })
    }
}

/// Why a file's source MACs were not taken as a clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub reason: String,
    /// Some direction's MAC had increased before the survey stopped: the
    /// file looked like a sniffer's (the default says why it was refused).
    pub clock_like: bool,
}

/// Reads `input` from its start and surveys its source MACs. A capture
/// read from standard input cannot be read twice; a file that fails to
/// read is no clock (its error is the walk's to report).
pub fn survey(input: &Input, reg: &Recognition) -> Result<SnifferClock, Refusal> {
    let refused = |reason: String, clock_like| Refusal { reason, clock_like };
    let Input::File(path) = input else {
        return Err(refused(
            "standard input is read once: its source MACs are not surveyed".into(),
            false,
        ));
    };
    if !path.is_file() {
        return Err(refused(
            "not a regular file: its source MACs are not surveyed".into(),
            false,
        ));
    }
    let mut reader = super::CaptureReader::open(path).map_err(|e| refused(e.to_string(), false))?;
    let mut survey = Survey::default();
    let mut rec = PacketRecord::default();
    loop {
        let frame = match reader.next_frame() {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => return Err(refused(format!("reading it: {e}"), survey.paired)),
        };
        crate::decode::decode_walk_with(&mut rec, reg, frame.linktype, frame.data, frame.orig_len);
        if let Err(reason) = survey.push(frame.iface, &rec, frame.ts_ns, frame.number) {
            return Err(refused(reason, survey.paired));
        }
    }
    let paired = survey.paired;
    survey.finish().map_err(|reason| refused(reason, paired))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roce(src: u8, dst: u8, mac: u64) -> PacketRecord {
        let mut r = PacketRecord {
            flags: flags::HAS_BTH | flags::HAS_IPV4,
            ..PacketRecord::default()
        };
        r.src_ip[15] = src;
        r.dst_ip[15] = dst;
        r.src_mac.copy_from_slice(&mac.to_be_bytes()[2..]);
        r
    }

    /// Two directions of one NIC clock (booted 5 h before), each frame
    /// captured 3–40 µs after its MAC time, truncated to the microsecond.
    fn sniffer_frames(boot: u64, n: u64, step: u64) -> Vec<(PacketRecord, u64)> {
        let epoch = 1_767_225_600_000_000_000u64;
        (0..n)
            .map(|i| {
                let nic = boot + i * step + (i % 7) * 13;
                let lag = 3_000 + (i * 7919 % 37_000);
                let capture = (epoch + nic + lag) / 1000 * 1000;
                let (s, d) = if i % 3 == 0 { (2, 1) } else { (1, 2) };
                (roce(s, d, nic % SPAN), capture)
            })
            .collect()
    }

    fn run(frames: &[(PacketRecord, u64)]) -> Result<SnifferClock, String> {
        let mut s = Survey::default();
        for (i, (r, ts)) in frames.iter().enumerate() {
            s.push(0, r, *ts, i as u64 + 1)?;
        }
        s.finish()
    }

    #[test]
    fn a_clock_that_holds_times_frames_to_the_nanosecond() {
        let boot = 5 * 3600 * 1_000_000_000u64;
        let frames = sniffer_frames(boot, 2000, 70_000);
        let clock = run(&frames).expect("a clock");
        assert_eq!(clock.frames, 2000);
        // Frame times differ exactly as the MACs do, and lag the capture
        // by no more than the quickest frame's lag allows.
        let times: Vec<u64> = frames
            .iter()
            .map(|(r, ts)| clock.time(0, r, *ts).expect("a RoCE frame"))
            .collect();
        for w in times.windows(2).zip(frames.windows(2)) {
            let (t, f) = w;
            let macs = mac_value(&f[1].0.src_mac) - mac_value(&f[0].0.src_mac);
            assert_eq!(t[1] - t[0], macs);
        }
        for (t, (_, ts)) in times.iter().zip(&frames) {
            assert!(*t <= *ts && ts - t < 50_000, "{t} vs {ts}");
        }
        // Not a RoCE frame: no MAC time.
        assert_eq!(clock.time(0, &PacketRecord::default(), 5), None);
        // Nor a frame of an interface that showed no clock.
        assert_eq!(clock.time(1, &frames[0].0, frames[0].1), None);
    }

    #[test]
    fn the_48_bit_wrap_is_crossed() {
        // The NIC's counter wraps 60 ms into the file.
        let boot = SPAN - 60_000_000;
        let frames = sniffer_frames(boot, 2000, 70_000);
        let clock = run(&frames).expect("a clock across the wrap");
        let first = clock.time(0, &frames[0].0, frames[0].1).unwrap();
        let last = clock.time(0, &frames[1999].0, frames[1999].1).unwrap();
        assert_eq!(last - first, 1999 * 70_000 + (1999 % 7) * 13);
    }

    #[test]
    fn macs_that_are_no_clock_are_refused_with_a_reason() {
        // Real MACs: constant per host.
        let frames: Vec<_> = (0..10u64)
            .map(|i| (roce(1, 2, 0x183d_5ebf_5192), 1_000 + i * 1_000))
            .collect();
        assert!(run(&frames).unwrap_err().contains("repeats"));
        // A counter going back in one direction.
        let mut frames = sniffer_frames(1 << 40, 100, 70_000);
        frames.swap(10, 13);
        assert!(run(&frames).unwrap_err().contains("goes back"));
        // Increasing, but at half the capture's rate: the lag drifts by
        // 70 ms over 140 ms of capture.
        let frames: Vec<_> = (0..2000u64)
            .map(|i| (roce(1, 2, (1 << 40) + i * 35_000), 1_000_000 + i * 70_000))
            .collect();
        assert!(run(&frames).unwrap_err().contains("not one ~1 GHz clock"));
        // Two directions on clocks a second apart.
        let frames: Vec<_> = (0..200u64)
            .map(|i| {
                let (s, d, skew) = if i % 2 == 0 {
                    (1, 2, 0)
                } else {
                    (2, 1, 1_000_000_000)
                };
                (
                    roce(s, d, (1 << 40) + i * 70_000 + skew),
                    (1 << 41) + i * 70_000,
                )
            })
            .collect();
        assert!(run(&frames).is_err());
        // Nothing but frames without a BTH.
        let mut s = Survey::default();
        let plain = PacketRecord::default();
        let err = (0..FIRST_FRAMES).try_for_each(|i| s.push(0, &plain, i, i + 1));
        assert!(err.unwrap_err().contains("first 4096 frames"));
        assert!(Survey::default().finish().is_err());
    }
}
