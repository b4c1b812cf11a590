//! Switch telemetry in the walk: INT-MD over UDP ([`super::int`]), the
//! Telemetry Report ([`super::report`]) and IFA ([`super::ifa`]) — how the
//! operator marked them ([`TelemetryMarks`], part of the run's
//! [`super::Recognition`]) and what the walk found ([`Found`]).
//!
//! A RoCE packet carrying INT-MD or IFA is still a RoCE record: the walk
//! steps over the telemetry bytes to the BTH and says where they were, so
//! userspace reads the hops and judges the ICRC on the packet without
//! them. A telemetry report is no record (its inner packet is a truncated
//! copy): the walk checks its group header and stops with
//! `Foreign::TelemetryReport`, and userspace reads its reports.
use super::{Frame, Layer, Limit, Next, Span, Stop, Visit, Walked, be16};
use super::{ifa, int, report};
use crate::proto::udp;

/// No DSCP value marks INT.
pub const NO_DSCP: u8 = 0xFF;

/// No UDP port marks INT or reports (the registry's unset port, 0, which
/// no frame is recognised by).
pub const NO_PORT: u16 = 0;

/// Where the operator marks telemetry: plain bytes, held by the XDP
/// program as the global `TELEMETRY` (`crate::live::GLOBAL_TELEMETRY`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TelemetryMarks {
    /// The UDP destination port that says INT follows (the original port
    /// in the shim); 0: none.
    pub int_port: u16,
    /// The UDP destination port of telemetry reports; 0: none.
    pub report_port: u16,
    /// The IP protocol that says an IFA header follows; 0: none.
    pub ifa_protocol: u8,
    /// The DSCP value that says INT follows the UDP header; [`NO_DSCP`]:
    /// none.
    pub int_dscp: u8,
    /// Keeps every byte named.
    pub _reserved: [u8; 2],
}

impl TelemetryMarks {
    /// The defaults (docs/inputs.md, "Switch telemetry"): IFA on the
    /// draft's protocol 131; INT and reports only where the operator says,
    /// as their specs leave the DSCP value and the ports to the operator.
    pub const DEFAULT: TelemetryMarks = TelemetryMarks {
        int_port: NO_PORT,
        report_port: NO_PORT,
        ifa_protocol: ifa::DEFAULT_IP_PROTOCOL,
        int_dscp: NO_DSCP,
        _reserved: [0; 2],
    };
}

impl TelemetryMarks {
    /// Its bytes as the XDP program's global holds them (the loader sets
    /// globals as plain byte arrays; host order, which the BPF target
    /// shares).
    pub fn to_ne_bytes(&self) -> [u8; 8] {
        let [a, b] = self.int_port.to_ne_bytes();
        let [c, d] = self.report_port.to_ne_bytes();
        [a, b, c, d, self.ifa_protocol, self.int_dscp, 0, 0]
    }
}

impl Default for TelemetryMarks {
    fn default() -> Self {
        TelemetryMarks::DEFAULT
    }
}

/// Which telemetry a frame carried.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// INT-MD over UDP, in front of the packet's payload (a BTH).
    IntMd = 1,
    /// A Telemetry Report to the collector's port.
    Report = 2,
    /// IFA: a header between IP and UDP, metadata after UDP.
    Ifa = 3,
}

impl Source {
    /// The name in `telemetry.parquet`'s `source` column.
    pub const fn as_str(self) -> &'static str {
        match self {
            Source::IntMd => "int-md",
            Source::Report => "report",
            Source::Ifa => "ifa",
        }
    }
}

/// Where the walk found telemetry in a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    pub source: Source,
    /// INT-MD: the shim through the end of the stack; IFA: the metadata
    /// header and stack after UDP; a report: the UDP payload (what the
    /// capture holds of it).
    pub span: Span,
    /// IFA: its header between IP and UDP (empty otherwise).
    pub ifa_header: Span,
    /// The UDP header's first byte.
    pub udp_at: usize,
    /// INT-MD marked by port: the original UDP destination port (the shim's).
    pub original_port: Option<u16>,
}

/// INT-MD or IFA bytes between the UDP header at `seg` and the BTH.
pub(super) struct Inserted {
    pub len: usize,
    pub original_port: Option<u16>,
}

/// The INT shim after the UDP header at `seg` and the headers it
/// declares: their length, all before `dg_end` (the datagram as far as
/// captured) and `declared_end` (as its lengths declare it).
#[inline(always)]
pub(super) fn int_after_udp<F: Frame + ?Sized, V: Visit>(
    f: &F,
    v: &mut V,
    seg: usize,
    dg_end: usize,
    declared_end: usize,
    by_port: bool,
) -> Result<Inserted, Next> {
    let at = seg + udp::HEADER_LEN;
    let Some(s) = f.load::<{ int::SHIM_LEN }>(at, dg_end) else {
        return Err(Next::Stop(Stop::Cut(Layer::Int)));
    };
    let len = int::SHIM_LEN + usize::from(s[int::field::shim::LENGTH]) * 4;
    within(Layer::Int, at + len, dg_end, declared_end)?;
    let npt =
        (s[int::field::shim::TYPE_NPT] >> int::field::shim::NPT_SHIFT) & int::field::shim::NPT_MASK;
    let original_port = if by_port {
        // NPT 2 (a new UDP header in front of the original L4 header) is
        // not followed; NPT 0 names no original port.
        if npt != int::NPT_UDP_PAYLOAD {
            return Err(Next::Stop(Stop::Limit(Limit::IntNextProtocol)));
        }
        Some(be16(&s, int::field::shim::PORT_PROTO_DSCP))
    } else {
        None
    };
    v.header(Layer::Int, at, at + len);
    Ok(Inserted { len, original_port })
}

/// Headers of `layer` that end at `end`: past the datagram as its lengths
/// declare it (`declared_end`) they are invalid, past what the capture
/// holds of it (`dg_end`) cut.
#[inline(always)]
fn within(layer: Layer, end: usize, dg_end: usize, declared_end: usize) -> Result<(), Next> {
    if end > declared_end {
        return Err(Next::Stop(Stop::Invalid(layer)));
    }
    if end > dg_end {
        return Err(Next::Stop(Stop::Cut(layer)));
    }
    Ok(())
}

/// IFA's metadata header and stack after the UDP header at `seg`.
#[inline(always)]
pub(super) fn ifa_after_udp<F: Frame + ?Sized, V: Visit>(
    f: &F,
    v: &mut V,
    seg: usize,
    dg_end: usize,
    declared_end: usize,
) -> Result<Inserted, Next> {
    let at = seg + udp::HEADER_LEN;
    let Some(m) = f.load::<{ ifa::MD_HEADER_LEN }>(at, dg_end) else {
        return Err(Next::Stop(Stop::Cut(Layer::Ifa)));
    };
    let len = ifa::MD_HEADER_LEN + usize::from(m[ifa::field::md::CURRENT_LENGTH]) * 4;
    within(Layer::Ifa, at + len, dg_end, declared_end)?;
    v.header(Layer::Ifa, at, at + len);
    Ok(Inserted {
        len,
        original_port: None,
    })
}

/// A telemetry report in the UDP datagram at `seg`: its group header
/// whole and of version 2, the rest left to userspace.
#[inline(always)]
pub(super) fn report<F: Frame + ?Sized, V: Visit>(
    f: &F,
    v: &mut V,
    w: &mut Walked,
    seg: usize,
    dg_end: usize,
) -> Next {
    let at = seg + udp::HEADER_LEN;
    let Some(g) = f.load::<{ report::GROUP_HEADER_LEN }>(at, dg_end) else {
        return Next::Stop(Stop::Cut(Layer::TelemetryReport));
    };
    if g[report::field::group::VER_HW_SEQ] >> 4 != report::VERSION {
        return Next::Stop(Stop::Invalid(Layer::TelemetryReport));
    }
    v.header(Layer::TelemetryReport, at, at + report::GROUP_HEADER_LEN);
    w.telemetry = Some(Found {
        source: Source::Report,
        span: Span { at, end: dg_end },
        ifa_header: Span::default(),
        udp_at: seg,
        original_port: None,
    });
    Next::Stop(Stop::Foreign(super::Foreign::TelemetryReport))
}

/// The IFA header at `at` (the IP payload's start), before `end`: its
/// next header, or why the walk stops.
#[inline(always)]
pub(super) fn ifa_header<F: Frame + ?Sized, V: Visit>(
    f: &F,
    v: &mut V,
    at: usize,
    end: usize,
) -> Result<u8, Next> {
    use ifa::field::header as fh;
    let Some(h) = f.load::<{ ifa::HEADER_LEN }>(at, end) else {
        return Err(Next::Stop(Stop::Cut(Layer::Ifa)));
    };
    v.header(Layer::Ifa, at, at + ifa::HEADER_LEN);
    if h[fh::FLAGS] & (fh::MF | fh::TS | fh::C) != 0 {
        return Err(Next::Stop(Stop::Limit(Limit::IfaHeaders)));
    }
    Ok(h[fh::NEXT_HDR])
}

// `to_ne_bytes` writes the fields where `repr(C)` puts them.
const _: () = assert!(core::mem::offset_of!(TelemetryMarks, int_port) == 0);
const _: () = assert!(core::mem::offset_of!(TelemetryMarks, report_port) == 2);
const _: () = assert!(core::mem::offset_of!(TelemetryMarks, ifa_protocol) == 4);
const _: () = assert!(core::mem::offset_of!(TelemetryMarks, int_dscp) == 5);
