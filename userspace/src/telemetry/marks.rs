//! The telemetry options (`--int-dscp`, `--int-port`,
//! `--telemetry-report-port`, `--ifa-proto`), parsed into the walk's
//! [`TelemetryMarks`] before anything runs (docs/inputs.md, "Switch
//! telemetry").
use rocescope_common::proto::{gre, ip};
use rocescope_common::wire::registry::UNSET;
use rocescope_common::wire::telemetry::{NO_DSCP, TelemetryMarks};
use rocescope_common::wire::{Recognition, TransportId};

/// `--int-dscp`: a DSCP value (0–63) or `none`.
pub fn parse_dscp(s: &str) -> Result<u8, String> {
    if s.eq_ignore_ascii_case("none") {
        return Ok(NO_DSCP);
    }
    match s.trim().parse::<u8>() {
        Ok(d) if d < 64 => Ok(d),
        _ => Err(format!("{s:?} is not a DSCP value (0-63, or none)")),
    }
}

/// `--int-port`, `--telemetry-report-port`: a UDP port (1–65535) or `none`.
pub fn parse_port(s: &str) -> Result<u16, String> {
    if s.eq_ignore_ascii_case("none") {
        return Ok(UNSET);
    }
    match s.trim().parse::<u16>() {
        Ok(p) if p != UNSET => Ok(p),
        _ => Err(format!("{s:?} is not a UDP port (1-65535, or none)")),
    }
}

/// `--ifa-proto`: an IP protocol number (1–255, not UDP's or GRE's) or
/// `none`.
pub fn parse_protocol(s: &str) -> Result<u8, String> {
    if s.eq_ignore_ascii_case("none") {
        return Ok(0);
    }
    match s.trim().parse::<u8>() {
        Ok(ip::PROTO_UDP | gre::IP_PROTO) => Err(format!(
            "{s:?} is UDP's or GRE's protocol number: IFA needs one of its own"
        )),
        Ok(p) if p != 0 => Ok(p),
        _ => Err(format!(
            "{s:?} is not an IP protocol number (1-255, or none)"
        )),
    }
}

/// `reg` with `marks` applied: refused when a telemetry port is a
/// transport's (a frame could not say which it is) or INT and reports
/// share one.
pub fn apply(mut reg: Recognition, marks: TelemetryMarks) -> Result<Recognition, String> {
    for (what, port) in [
        ("--int-port", marks.int_port),
        ("--telemetry-report-port", marks.report_port),
    ] {
        if port == UNSET {
            continue;
        }
        if let Some(t) = reg.by_udp_port(port) {
            return Err(format!(
                "{what} {port} is {}'s UDP port: telemetry needs a port of its own",
                t.entry().name
            ));
        }
    }
    if marks.int_port != UNSET && marks.int_port == marks.report_port {
        return Err(format!(
            "--int-port and --telemetry-report-port are both {}",
            marks.int_port
        ));
    }
    if marks.ifa_protocol != 0
        && let Some(t) = TransportId::ALL
            .into_iter()
            .find(|&t| reg.ip_protocol(t) == marks.ifa_protocol)
    {
        let p = marks.ifa_protocol;
        return Err(format!(
            "IP protocol {p} is given to both {} (--ip-proto) and IFA (--ifa-proto, {}): give IFA another number or none",
            t.entry().name,
            if p == TelemetryMarks::DEFAULT.ifa_protocol {
                "its default"
            } else {
                "as set"
            },
        ));
    }
    reg.telemetry = marks;
    Ok(reg)
}

/// The lines the marks add to a run's identity (docs/tables.md): only
/// those that differ from the defaults, so default runs keep their id.
pub fn identity(marks: &TelemetryMarks) -> String {
    let d = TelemetryMarks::DEFAULT;
    let mut s = String::new();
    if marks.int_dscp != d.int_dscp {
        s.push_str(&format!("int_dscp={}\n", marks.int_dscp));
    }
    if marks.int_port != d.int_port {
        s.push_str(&format!("int_port={}\n", marks.int_port));
    }
    if marks.report_port != d.report_port {
        s.push_str(&format!("telemetry_report_port={}\n", marks.report_port));
    }
    if marks.ifa_protocol != d.ifa_protocol {
        s.push_str(&format!("ifa_proto={}\n", marks.ifa_protocol));
    }
    s
}
