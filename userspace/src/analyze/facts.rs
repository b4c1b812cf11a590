//! Facts about a capture that limit what it can show (docs/analysis.md,
//! `capture_facts`): computed when a run finishes (`finish`), worded by
//! `crate::render::facts` into `summary.json`'s `capture_facts`.

/// A fact about the capture that limits what it can show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaptureFact {
    /// A NIC's RDMA sniffer capture at `iface`: the sniffer rewrote the
    /// headers, so every RoCE frame's ICRC fails and says nothing.
    SnifferTap { iface: u16 },
    /// RoCE frames cut short of their IP length: their ICRC unchecked.
    CutFrames { frames: u64 },
    /// An ECMP group none of whose interfaces recorded a frame.
    SilentEcmpGroup { members: Vec<String> },
    /// Two taps carry different QPs between the same two hosts: parallel
    /// paths perhaps, judged only when named as an ECMP group.
    UnnamedParallelPaths {
        taps: [u16; 2],
        src: [u8; 16],
        dst: [u8; 16],
    },
    /// PSNs the responders acknowledged that never reached the capture.
    CaptureLost { psns: u64 },
    /// PSNs whose fate the capture does not show.
    Unresolved { psns: u64 },
}
