//! The transports behind the shared walk, seen from userspace: how the
//! operator says where each is recognised (`--udp-port`), on top of the
//! registry the walk, the XDP program and synth share
//! (`rocescope_common::wire::registry`). docs/build.md, "Adding a
//! transport", lists what a transport owns and where it is registered.

use rocescope_common::wire::registry::{TRANSPORTS, UNSET};
use rocescope_common::wire::{Recognition, TransportId};

/// One `--udp-port TRANSPORT=PORT`: `transport` is recognised on UDP
/// destination port `port` instead of its registered default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpPort {
    pub transport: TransportId,
    pub port: u16,
}

/// Parses `TRANSPORT=PORT` (e.g. `roce=4792`).
pub fn parse_udp_port(s: &str) -> Result<UdpPort, String> {
    let names = || {
        TRANSPORTS
            .iter()
            .filter(|t| t.udp_port.is_some())
            .map(|t| t.name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let walked_names = || {
        TRANSPORTS
            .iter()
            .filter(|t| t.udp_port.is_some() && t.walked)
            .map(|t| t.name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some((name, port)) = s.split_once('=') else {
        return Err(format!(
            "expected TRANSPORT=PORT (e.g. roce=4792), got {s:?}"
        ));
    };
    let transport = TransportId::from_name(name.trim())
        .filter(|t| t.entry().udp_port.is_some())
        .ok_or_else(|| {
            format!(
                "no transport over UDP is called {name:?} (known: {})",
                names()
            )
        })?;
    // A port for a transport the walk does not decode yet would change
    // nothing: refused rather than silently ignored.
    if !transport.entry().walked {
        return Err(format!(
            "{name:?} is registered but not decoded yet (docs/build.md, \"UET so far\"); only {} can be moved",
            walked_names()
        ));
    }
    let port = match port.trim().parse::<u16>() {
        Ok(p) if p != UNSET => p,
        _ => return Err(format!("{port:?} is not a UDP port (1-65535)")),
    };
    Ok(UdpPort { transport, port })
}

/// The registry's defaults with `ports` applied; two transports on one
/// port are refused (a frame could not say which it is).
pub fn recognition(ports: &[UdpPort]) -> Result<Recognition, String> {
    let mut reg = Recognition::DEFAULT;
    for p in ports {
        reg = reg.with_udp_port(p.transport, p.port);
    }
    for (i, a) in TransportId::ALL.iter().enumerate() {
        for b in &TransportId::ALL[i + 1..] {
            let port = reg.udp_port(*a);
            if port != UNSET && port == reg.udp_port(*b) {
                return Err(format!(
                    "UDP port {port} is given to both {} and {}",
                    a.entry().name,
                    b.entry().name
                ));
            }
        }
    }
    Ok(reg)
}

/// The lines `reg` adds to a run's identity (docs/tables.md): none when
/// every transport is where the registry puts it, so runs with the
/// defaults keep the identity they always had.
pub fn identity(reg: &Recognition) -> String {
    let mut s = String::new();
    for t in TransportId::ALL {
        let port = reg.udp_port(t);
        if port != Recognition::DEFAULT.udp_port(t) {
            s.push_str(&format!("udp_port.{}={port}\n", t.entry().name));
        }
    }
    s.push_str(&crate::telemetry::marks::identity(&reg.telemetry));
    s
}

pub mod roce;
pub mod sequencing;
pub mod uet;

#[cfg(test)]
mod tests;
