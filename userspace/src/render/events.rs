//! An event's `detail` (`events.parquet`, docs/tables.md) in words: one
//! line for a person from the values `analyze::EventDetail` holds. The
//! tables write it straight into their column (it is `Display`).

use std::fmt;

use rocescope_common::proto::ib::aeth;

use super::fmt::{fmt_duration, fmt_ended_by};
use crate::addr::{Ip, Mac};
use crate::analyze::{
    CnpDetail, EventDetail, GapClass, LatePsn, Missing, NakDetail, PauseStart, ResolvedPsns,
    RewindDetail, Storm, Trigger,
};

impl fmt::Display for EventDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventDetail::PfcPause(p) => pause(f, p),
            EventDetail::PfcStorm(s) => storm(f, s),
            EventDetail::Rewind(r) => rewind(f, r),
            EventDetail::Gap(m) => missing(f, m),
            EventDetail::Late(l) => late(f, l),
            EventDetail::Resolved(r) => resolved(f, r),
            EventDetail::Nak(n) => nak(f, n),
            EventDetail::Cnp(c) => cnp(f, c),
        }
    }
}

fn pause(f: &mut fmt::Formatter<'_>, p: &PauseStart) -> fmt::Result {
    write!(
        f,
        "priority {} paused by {} ({} quanta = {})",
        p.priority,
        Mac(p.src_mac),
        p.quanta,
        fmt_duration(p.pause_ns)
    )
}

fn storm(f: &mut fmt::Formatter<'_>, s: &Storm) -> fmt::Result {
    write!(
        f,
        "priority {} paused by {} continuously for {} from {} (storm threshold {}, {} frames, {})",
        s.priority,
        Mac(s.src_mac),
        fmt_duration(s.paused_ns),
        s.start_ns,
        fmt_duration(s.threshold_ns),
        s.frames,
        fmt_ended_by(s.ended_by)
    )
}

fn rewind(f: &mut fmt::Formatter<'_>, r: &RewindDetail) -> fmt::Result {
    let (next, q, depth) = (r.next, r.psn, r.depth);
    write!(
        f,
        "go-back-N from next PSN {next} back to {q} (depth {depth}), "
    )?;
    match r.nak_before_ns {
        Some(before) => write!(
            f,
            "{} for PSN {q} seen {} before",
            if r.trigger == Trigger::Rnr {
                "RNR NAK"
            } else {
                "NAK"
            },
            fmt_duration(before)
        )?,
        None => write!(f, "no NAK for PSN {q} seen")?,
    }
    write!(
        f,
        "; idle {}; {} of the rewound PSNs already acknowledged",
        fmt_duration(r.idle_ns),
        r.acked
    )?;
    if r.lost_before_tap {
        write!(f, "; PSN {q} was never seen before: lost before the tap")?;
    }
    if let Some(p) = r.paused {
        write!(
            f,
            "; priority {} paused {} of the idle time (pause by {} from {})",
            p.priority,
            fmt_duration(p.paused_ns),
            Mac(p.src_mac),
            p.start_ns
        )?;
    }
    Ok(())
}

fn missing(f: &mut fmt::Formatter<'_>, m: &Missing) -> fmt::Result {
    write!(f, "{} PSNs missing: {}..={}", m.psns, m.first, m.last)
}

fn late(f: &mut fmt::Formatter<'_>, l: &LatePsn) -> fmt::Result {
    write!(
        f,
        "PSN {} arrived {} after it went missing, {} PSNs late, and was not resent: reordered on the path",
        l.psn,
        fmt_duration(l.late_ns),
        l.psns_late
    )
}

fn resolved(f: &mut fmt::Formatter<'_>, r: &ResolvedPsns) -> fmt::Result {
    let why = match r.class {
        GapClass::LostBeforeTap => "first seen in a resend: lost before the tap",
        GapClass::NakLost => "named by a sequence-error NAK: lost before the responder",
        GapClass::CaptureLost => {
            "never seen, yet acknowledged with no NAK and no resend: the tap missed them"
        }
        GapClass::Unresolved => "never seen, and nothing in the capture says what became of them",
        GapClass::Late => "arrived late",
    };
    write!(
        f,
        "{} missing PSN{} {}..={} {why} (missing since {} before)",
        r.psns,
        if r.psns == 1 { "" } else { "s" },
        r.first,
        r.last,
        fmt_duration(r.missing_ns)
    )
}

/// A NAK code's name (IBTA's AETH syndrome table).
fn nak_name(code: u8) -> &'static str {
    match code {
        aeth::NAK_PSN_SEQUENCE_ERROR => "PSN sequence error",
        aeth::NAK_INVALID_REQUEST => "invalid request",
        aeth::NAK_REMOTE_ACCESS_ERROR => "remote access error",
        aeth::NAK_REMOTE_OPERATIONAL_ERROR => "remote operational error",
        aeth::NAK_INVALID_RD_REQUEST => "invalid RD request",
        _ => "reserved code",
    }
}

fn nak(f: &mut fmt::Formatter<'_>, n: &NakDetail) -> fmt::Result {
    if n.rnr {
        write!(f, "RNR NAK (timer code {}) for PSN {}", n.code, n.psn)?;
    } else {
        write!(f, "NAK {} for PSN {}", nak_name(n.code), n.psn)?;
    }
    if let Some(id) = n.request_flow {
        write!(f, " to request flow {id}")?;
    }
    Ok(())
}

fn cnp(f: &mut fmt::Formatter<'_>, c: &CnpDetail) -> fmt::Result {
    write!(
        f,
        "CNP from {} to QP {} on {}",
        Ip(c.src_ip),
        c.qp,
        Ip(c.dst_ip)
    )?;
    if let Some(rt) = c.reaction_ns {
        write!(
            f,
            ", {:.1} µs after the first unanswered CE",
            rt as f64 / 1000.0
        )?;
    }
    Ok(())
}
