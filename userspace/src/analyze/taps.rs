//! Per-tap state: interface names, capture files and their drop counters, ICRC
//! tallies and the sniffer verdict (`docs/analysis.md`, *ICRC*).

use rocescope_common::proto;
use rocescope_common::{PacketRecord, flags};

use super::Analyzer;

/// What the analyzer tallies per tap (interface).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct TapState {
    /// The capture file it is an interface of, and its index there.
    pub(super) capture: u32,
    pub(super) local: u32,
    /// The capture's own drop counters (pcapng ISB), when it wrote them.
    pub(super) isb_ifdrop: Option<u64>,
    pub(super) isb_osdrop: Option<u64>,
    pub(super) seen: bool,
    /// Its records (RoCE, CNP, PFC, PAUSE, malformed).
    pub(super) records: u64,
    pub(super) first_ts: u64,
    pub(super) last_ts: u64,
    pub(super) icrc_checked: u64,
    pub(super) icrc_failed: u64,
    /// Failing frames from UDP source port 4791 (a sniffer's rewrite).
    pub(super) failed_from_4791: u64,
    /// RoCE frames from another UDP source port.
    pub(super) other_sport: u64,
    /// RoCE frames a switch trimmed (docs/analysis.md, "RoCE: trimmed
    /// frames"): not in `icrc_failed`.
    pub(super) trimmed: u64,
}

impl TapState {
    /// A frame on a tap that, so far, looks like a sniffer's: every RoCE
    /// frame from UDP port 4791 with a failing ICRC.
    pub(super) fn sniffer_like(&self) -> bool {
        self.other_sport == 0
            && self.failed_from_4791 > 0
            && self.failed_from_4791 == self.icrc_failed
    }

    /// The verdict at the end: (almost) every checked frame failed, and
    /// every one came from port 4791.
    pub(super) fn is_sniffer(&self) -> bool {
        self.other_sport == 0
            && self.icrc_checked > 0
            && self.failed_from_4791 * 100 >= self.icrc_checked * 95
    }
}

impl Analyzer {
    /// Where interface `iface` comes from, for its flows' display filters.
    pub(super) fn origin(&self, iface: u16) -> super::IfaceOrigin {
        let t = self
            .taps
            .get(usize::from(iface))
            .copied()
            .unwrap_or_default();
        super::IfaceOrigin {
            local: t.local,
            shared_file: self
                .taps
                .iter()
                .filter(|o| o.seen && o.capture == t.capture)
                .count()
                > 1,
        }
    }

    /// Interface `iface` belongs to capture file `capture`: its pauses end
    /// when that capture ends (by default every interface is of capture 0).
    pub fn set_iface_capture(&mut self, iface: u16, capture: u32, local: u32) {
        let t = self.tap_mut(iface);
        t.capture = capture;
        t.local = local;
    }

    /// The capture of interface `iface` says it dropped frames: `ifdrop` by
    /// the interface, `osdrop` by the capture host (pcapng interface
    /// statistics, cumulative).
    pub fn set_tap_drops(&mut self, iface: u16, ifdrop: Option<u64>, osdrop: Option<u64>) {
        let t = self.tap_mut(iface);
        t.isb_ifdrop = ifdrop.or(t.isb_ifdrop);
        t.isb_osdrop = osdrop.or(t.isb_osdrop);
    }

    #[inline]
    pub(super) fn tap_mut(&mut self, iface: u16) -> &mut TapState {
        let i = usize::from(iface);
        if self.taps.len() <= i {
            self.grow_taps(i);
        }
        &mut self.taps[i]
    }

    /// A first record of tap `i` beyond the taps so far (once a tap).
    #[cold]
    fn grow_taps(&mut self, i: usize) {
        self.taps.resize(i + 1, TapState::default());
    }

    /// A RoCE frame's ICRC on its tap: counts it, and says whether the
    /// failure is a sniffer's rewrite rather than corruption.
    #[inline]
    pub(super) fn icrc(&mut self, rec: &PacketRecord) -> (bool, bool) {
        let checked = rec.has(flags::ICRC_CHECKED);
        let failed = checked && !rec.has(flags::ICRC_OK);
        // An InfiniBand link CRC failure is corruption too; sniffers
        // rewrite Ethernet captures, so it takes no part in that test.
        let vcrc_failed = rec.has(flags::VCRC_CHECKED) && !rec.has(flags::VCRC_OK);
        let udp = rec.has(flags::HAS_UDP);
        let from_4791 = udp && rec.udp_sport == proto::udp::ROCEV2_PORT;
        let t = self.tap_mut(rec.iface);
        t.other_sport += u64::from(udp && !from_4791);
        t.icrc_checked += u64::from(checked);
        if failed {
            return Self::icrc_failed(t, from_4791, vcrc_failed);
        }
        (vcrc_failed, false)
    }

    /// A failing ICRC on tap `t`: counted; corruption, or a sniffer's
    /// rewrite (the rare path of [`Self::icrc`], out of its line).
    #[cold]
    fn icrc_failed(t: &mut TapState, from_4791: bool, vcrc_failed: bool) -> (bool, bool) {
        t.icrc_failed += 1;
        t.failed_from_4791 += u64::from(from_4791);
        let rewritten = t.sniffer_like();
        (!rewritten || vcrc_failed, rewritten)
    }

    /// Names an interface index for the summary and the report.
    pub fn set_iface_name(&mut self, iface: u16, name: &str) {
        self.ifaces.insert(iface, name.to_string());
        if let Some(&(_, bps)) = self
            .config
            .tap_link_speed_bps
            .iter()
            .find(|(n, _)| n == name)
        {
            self.pfc.set_speed(iface, bps);
        }
        self.ecmp.set_iface(iface, name);
    }
}
