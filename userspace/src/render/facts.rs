//! The capture facts in words (`summary.json`'s `capture_facts`, the
//! report's notes; docs/analysis.md lists them).

use crate::addr::Ip;
use crate::analyze::{CaptureFact, Summary};

/// `fact` as `summary.json` and the report say it; interfaces by the names
/// in `summary`.
pub fn fact_words(fact: &CaptureFact, summary: &Summary) -> String {
    match fact {
        CaptureFact::SnifferTap { iface } => format!(
            "{}: a NIC's RDMA sniffer capture (every RoCE frame from UDP port 4791 with a failing ICRC: the sniffer rewrote the headers); ICRC results are unknown for its frames",
            summary.iface_name(*iface)
        ),
        // The count is every transport's: a capture with another transport
        // is not told its frames are RoCE's.
        CaptureFact::CutFrames { frames } if summary.frames.beyond_roce() > 0 => format!(
            "{frames} frames are cut short of their IP length (snap length, sniffer or ERSPAN truncation): a RoCE frame's ICRC could not be checked, nor what any carried past the cut"
        ),
        CaptureFact::CutFrames { frames } => format!(
            "{frames} RoCE frames are cut short of their IP length (snap length, sniffer or ERSPAN truncation): their ICRC could not be checked"
        ),
        CaptureFact::SilentEcmpGroup { members } => format!(
            "ECMP group {}: none of its interfaces recorded a frame, so its balance was not judged (give the names as in the tables' iface column)",
            members.join(",")
        ),
        CaptureFact::UnnamedParallelPaths { taps, src, dst } => {
            let (a, b) = (summary.iface_name(taps[0]), summary.iface_name(taps[1]));
            format!(
                "{a} and {b} carry different QPs between the same hosts ({} → {}): if they are parallel paths, name them with --ecmp-group {a},{b}; ECMP balance is judged only for named groups",
                Ip(*src),
                Ip(*dst)
            )
        }
        CaptureFact::CaptureLost { psns } => format!(
            "the capture is incomplete: {psns} PSNs the responders acknowledged never reached the capture; every count is a lower bound"
        ),
        CaptureFact::Unresolved { psns } => format!(
            "the capture ends before, or lacks the direction that shows, what became of {psns} PSNs it never saw (neither resent, NAKed nor acknowledged in it): unknown, not counted as loss"
        ),
    }
}
