//! Parsing of the quantities the command line takes: link speeds (`100G`,
//! `400Gbps`, `25g`) and durations (`100us`, `200ms`, `30s`, `1.5ms`).
use crate::{Error, Result};

/// A link speed in bits per second. A bare number is Gb/s, as network
/// engineers say "100" for a 100G port.
pub fn parse_link_speed(text: &str) -> Result<u64> {
    let t = text.trim().to_ascii_lowercase();
    let t = t
        .strip_suffix("bps")
        .or_else(|| t.strip_suffix("b/s"))
        .unwrap_or(&t);
    let (number, scale) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        None => (t, 1e9),
        Some((i, _)) => {
            let scale = match &t[i..] {
                "t" => 1e12,
                "g" => 1e9,
                "m" => 1e6,
                "k" => 1e3,
                _ => return Err(bad_speed(text)),
            };
            (&t[..i], scale)
        }
    };
    let value: f64 = number.trim().parse().map_err(|_| bad_speed(text))?;
    let bps = value * scale;
    if !(bps.is_finite() && (1e6..=1e13).contains(&bps)) {
        return Err(bad_speed(text));
    }
    Ok(bps.round() as u64)
}

fn bad_speed(text: &str) -> Error {
    Error::Usage(format!(
        "link speed {text:?} is not understood: write e.g. 100G, 400G or 25Gbps (1M to 10T)"
    ))
}

/// A duration in nanoseconds: a number with `ns`, `us`/`µs`, `ms`, `s`,
/// `m` or `h`.
pub fn parse_duration_ns(text: &str) -> Result<u64> {
    let t = text.trim();
    let split = t
        .char_indices()
        .find(|(_, c)| c.is_alphabetic())
        .map(|(i, _)| i)
        .ok_or_else(|| bad_duration(text))?;
    let value: f64 = t[..split].trim().parse().map_err(|_| bad_duration(text))?;
    let scale = match &t[split..] {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => return Err(bad_duration(text)),
    };
    let ns = value * scale;
    if !(ns.is_finite() && (1.0..1e18).contains(&ns)) {
        return Err(bad_duration(text));
    }
    Ok(ns.round() as u64)
}

fn bad_duration(text: &str) -> Error {
    Error::Usage(format!(
        "duration {text:?} is not understood: write a number and a unit, e.g. 100us, 200ms, 30s"
    ))
}

/// A buffer size in bytes: `180KB`, `2.8MB`, `800k`, `4096`. K and M are
/// binary (1024, 1048576), as switch buffer settings mean them.
pub fn parse_bytes(text: &str) -> Result<u64> {
    let t = text.trim().to_ascii_lowercase();
    let t = t
        .strip_suffix("ib")
        .or_else(|| t.strip_suffix('b'))
        .unwrap_or(&t);
    let (number, scale) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1024.0),
        Some('m') => (&t[..t.len() - 1], 1024.0 * 1024.0),
        Some('g') => (&t[..t.len() - 1], 1024.0 * 1024.0 * 1024.0),
        _ => (t, 1.0),
    };
    let value: f64 = number.trim().parse().map_err(|_| bad_bytes(text))?;
    let bytes = value * scale;
    if !(bytes.is_finite() && (0.0..1e15).contains(&bytes)) {
        return Err(bad_bytes(text));
    }
    Ok(bytes.round() as u64)
}

fn bad_bytes(text: &str) -> Error {
    Error::Usage(format!(
        "size {text:?} is not understood: write e.g. 180KB, 2.8MB or 4096"
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn byte_sizes() {
        assert_eq!(parse_bytes("180KB").unwrap(), 180 * 1024);
        assert_eq!(parse_bytes("800k").unwrap(), 800 * 1024);
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert_eq!(parse_bytes("2MiB").unwrap(), 2 * 1024 * 1024);
        assert!(parse_bytes("lots").is_err());
    }

    use super::*;

    #[test]
    fn link_speeds() {
        assert_eq!(parse_link_speed("100G").unwrap(), 100_000_000_000);
        assert_eq!(parse_link_speed("400gbps").unwrap(), 400_000_000_000);
        assert_eq!(parse_link_speed("25").unwrap(), 25_000_000_000);
        assert_eq!(parse_link_speed("2.5G").unwrap(), 2_500_000_000);
        assert!(parse_link_speed("fast").is_err());
        assert!(parse_link_speed("0G").is_err());
        assert!(parse_link_speed("100X").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("100us").unwrap(), 100_000);
        assert_eq!(parse_duration_ns("100µs").unwrap(), 100_000);
        assert_eq!(parse_duration_ns("200ms").unwrap(), 200_000_000);
        assert_eq!(parse_duration_ns("1.5ms").unwrap(), 1_500_000);
        assert_eq!(parse_duration_ns("30s").unwrap(), 30_000_000_000);
        assert!(parse_duration_ns("100").is_err());
        assert!(parse_duration_ns("-1s").is_err());
        assert!(parse_duration_ns("5 parsecs").is_err());
    }
}
