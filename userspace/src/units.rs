//! The quantities the command line takes, parsed into typed values when the
//! arguments are parsed (clap `value_parser`s): link speeds (`100G`,
//! `400Gbps`, `25g`), durations (`100us`, `200ms`, `30s`, `1.5ms`), sizes
//! (`180KB`, `64MiB`) and probabilities.
//!
//! Errors say why the value was refused and what to write; clap prints
//! them after the option and the value given (`invalid value '0us' for
//! '--bin <DURATION>': must be more than 0 …`).
//!
//! Hand-written rather than a crate's: `humantime` takes no decimals
//! (`1.05ms`) and no bare Gb/s; `bytesize` and `parse-size` parse sizes but
//! with their own messages, not ones that say which units to write. Each
//! parser here is a few lines over one unit table.

/// The duration units, for error messages.
const DURATION_UNITS: &str = "ns, us (or µs), ms, s, m, h";

/// A link speed in bits per second. A bare number is Gb/s, as network
/// engineers say "100" for a 100G port.
pub fn link_speed(text: &str) -> Result<u64, String> {
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
                unit => {
                    return Err(format!(
                        "unknown unit {unit:?}: write e.g. 100G, 400G or 25Gbps (units T, G, M, K)"
                    ));
                }
            };
            (&t[..i], scale)
        }
    };
    let value: f64 = number.trim().parse().map_err(|_| {
        format!(
            "{:?} is not a number: write e.g. 100G, 400G or 25Gbps",
            number.trim()
        )
    })?;
    let bps = value * scale;
    if !(bps.is_finite() && (1e6..=1e13).contains(&bps)) {
        return Err("out of range: a link speed is 1M to 10T (e.g. 100G, 400G)".into());
    }
    Ok(bps.round() as u64)
}

/// `--link-speed [TAP=]SPEED`: one tap's speed, or every tap's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TapSpeed {
    /// The tap (interface name as in the tables); `None`: every tap.
    pub tap: Option<String>,
    pub bps: u64,
}

/// `--clock-offset TAP=±DURATION`: a tap's clock minus the other taps'.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TapOffset {
    pub tap: String,
    pub ns: i64,
}

pub fn tap_clock_offset(text: &str) -> Result<TapOffset, String> {
    let Some((tap, d)) = text.split_once('=').filter(|(t, _)| !t.trim().is_empty()) else {
        return Err(
            "name the tap and the offset of its clock, e.g. --clock-offset node1=+48us or node2=-1.5ms".into(),
        );
    };
    let d = d.trim();
    let (sign, rest) = match d.strip_prefix('-') {
        Some(r) => (-1, r),
        None => (1, d.strip_prefix('+').unwrap_or(d)),
    };
    let ns = i64::try_from(duration_ns(rest)?)
        .map_err(|_| format!("{d}: too large for a clock offset"))?;
    Ok(TapOffset {
        tap: tap.trim().to_string(),
        ns: sign * ns,
    })
}

pub fn tap_link_speed(text: &str) -> Result<TapSpeed, String> {
    match text.split_once('=') {
        Some((tap, speed)) if !tap.trim().is_empty() => Ok(TapSpeed {
            tap: Some(tap.trim().to_string()),
            bps: link_speed(speed)?,
        }),
        Some(_) => Err(
            "name the tap before '=' (e.g. --link-speed eth2=400G), or give a speed alone for every tap"
                .into(),
        ),
        None => Ok(TapSpeed {
            tap: None,
            bps: link_speed(text)?,
        }),
    }
}

/// A duration in nanoseconds: a number and a unit (ns, us/µs, ms, s, m,
/// h); 0 is allowed here ([`positive_duration`] refuses it).
pub fn duration_ns(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err(format!(
            "no duration given: write a number and a unit ({DURATION_UNITS}), e.g. 100us"
        ));
    }
    let Some(split) = t.find(|c: char| c.is_alphabetic()) else {
        return Err(format!(
            "no unit: write a number and a unit ({DURATION_UNITS}), e.g. {t}us or {t}ms"
        ));
    };
    let (number, unit) = (t[..split].trim(), t[split..].trim());
    if number.is_empty() {
        return Err(format!(
            "no number: write a number and a unit ({DURATION_UNITS}), e.g. 100us or 30s"
        ));
    }
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => {
            return Err(format!(
                "unknown unit {unit:?}: the units are {DURATION_UNITS}"
            ));
        }
    };
    let value: f64 = number.parse().map_err(|_| {
        format!("{number:?} is not a number: write a number and a unit, e.g. 100us, 200ms, 30s")
    })?;
    if value < 0.0 {
        return Err("must not be negative".into());
    }
    let ns = value * scale;
    if !(ns.is_finite() && ns < 1e18) {
        return Err("too long: at most 1e9 s".into());
    }
    Ok(ns.round() as u64)
}

/// A duration that must be more than 0 (a bin width, a threshold, a run time).
pub fn positive_duration(text: &str) -> Result<u64, String> {
    match duration_ns(text)? {
        0 => Err(format!(
            "must be more than 0 (write a number and a unit: {DURATION_UNITS}, e.g. 100us)"
        )),
        ns => Ok(ns),
    }
}

/// A duration, or a bare `0` to turn a check off.
pub fn duration_or_off(text: &str) -> Result<u64, String> {
    if text.trim().parse::<f64>().is_ok_and(|v| v == 0.0) {
        return Ok(0);
    }
    duration_ns(text)
}

/// `--storm-ms`: a bare number is milliseconds (the option's old form);
/// with a unit, any duration.
pub fn milliseconds(text: &str) -> Result<u64, String> {
    match text.trim().parse::<f64>() {
        Ok(ms) => positive_duration(&format!("{ms}ms")),
        Err(_) => positive_duration(text),
    }
}

/// A buffer size in bytes: `180KB`, `2.8MB`, `800k`, `4096`. K and M are
/// binary (1024, 1048576), as switch buffer settings mean them.
pub fn bytes(text: &str) -> Result<u64, String> {
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
    let value: f64 = number.trim().parse().map_err(|_| {
        "not a size: write a number with B, KB, MB or GB (e.g. 180KB, 2.8MB, 4096)".to_string()
    })?;
    let bytes = value * scale;
    if !(bytes.is_finite() && (0.0..1e15).contains(&bytes)) {
        return Err("out of range: a size is 0 to 1e15 bytes".into());
    }
    Ok(bytes.round() as u64)
}

/// A probability, 0 to 1.
pub fn probability(text: &str) -> Result<f64, String> {
    let p: f64 = text
        .trim()
        .parse()
        .map_err(|_| "not a number: write a probability from 0 to 1 (e.g. 0.1)".to_string())?;
    if !(0.0..=1.0).contains(&p) {
        return Err("must be from 0 to 1 (e.g. 0.1)".into());
    }
    Ok(p)
}

/// A count that must be at least 1.
pub fn positive_count(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err("not a whole number: write e.g. 1000".into()),
    }
}

/// `26=3,48=6` → a 64-entry DSCP → priority table (unlisted: DSCP / 8).
pub fn dscp_map(text: &str) -> Result<[u8; 64], String> {
    let mut map: [u8; 64] = std::array::from_fn(|dscp| (dscp / 8) as u8);
    let bad = |item: &str| {
        format!(
            "entry {item:?}: write DSCP=PRIORITY pairs separated by commas, DSCP 0-63, priority 0-7 (e.g. 26=3,48=6)"
        )
    };
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (d, p) = item.split_once('=').ok_or_else(|| bad(item))?;
        let d: usize = d.trim().parse().map_err(|_| bad(item))?;
        let p: u8 = p.trim().parse().map_err(|_| bad(item))?;
        if d > 63 || p > 7 {
            return Err(bad(item));
        }
        map[d] = p;
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes() {
        assert_eq!(bytes("180KB").unwrap(), 180 * 1024);
        assert_eq!(bytes("800k").unwrap(), 800 * 1024);
        assert_eq!(bytes("4096").unwrap(), 4096);
        assert_eq!(bytes("2MiB").unwrap(), 2 * 1024 * 1024);
        assert!(bytes("lots").unwrap_err().contains("180KB"));
    }

    #[test]
    fn link_speeds() {
        assert_eq!(link_speed("100G").unwrap(), 100_000_000_000);
        assert_eq!(link_speed("400gbps").unwrap(), 400_000_000_000);
        assert_eq!(link_speed("25").unwrap(), 25_000_000_000);
        assert_eq!(link_speed("2.5G").unwrap(), 2_500_000_000);
        assert!(link_speed("fast").is_err());
        assert!(link_speed("0G").unwrap_err().contains("1M to 10T"));
        assert!(link_speed("100X").unwrap_err().contains("\"x\""));
        assert_eq!(
            tap_link_speed("eth2=400G").unwrap(),
            TapSpeed {
                tap: Some("eth2".into()),
                bps: 400_000_000_000
            }
        );
        assert!(
            tap_link_speed("=400G")
                .unwrap_err()
                .contains("name the tap")
        );
    }

    #[test]
    fn durations() {
        assert_eq!(duration_ns("100us").unwrap(), 100_000);
        assert_eq!(duration_ns("100µs").unwrap(), 100_000);
        assert_eq!(duration_ns("200ms").unwrap(), 200_000_000);
        assert_eq!(duration_ns("1.5ms").unwrap(), 1_500_000);
        assert_eq!(duration_ns("30s").unwrap(), 30_000_000_000);
        assert_eq!(duration_ns("0us").unwrap(), 0);
        assert!(duration_ns("100").unwrap_err().contains("no unit"));
        assert!(duration_ns("-1s").unwrap_err().contains("negative"));
        assert!(
            duration_ns("5 parsecs")
                .unwrap_err()
                .contains("\"parsecs\"")
        );
        let zero = positive_duration("0us").unwrap_err();
        assert!(
            zero.contains("more than 0") && zero.contains("ms"),
            "{zero}"
        );
        assert_eq!(duration_or_off("0").unwrap(), 0);
        assert_eq!(duration_or_off("10us").unwrap(), 10_000);
        assert_eq!(milliseconds("200").unwrap(), 200_000_000);
        assert_eq!(milliseconds("200ms").unwrap(), 200_000_000);
        assert_eq!(milliseconds("1.5s").unwrap(), 1_500_000_000);
        assert!(milliseconds("0").is_err());
    }

    #[test]
    fn probabilities_and_counts() {
        assert_eq!(probability("0.1").unwrap(), 0.1);
        assert!(probability("1.5").unwrap_err().contains("0 to 1"));
        assert!(positive_count("0").is_err());
        assert_eq!(positive_count("12").unwrap(), 12);
    }

    #[test]
    fn dscp_map_parses_and_defaults() {
        let m = dscp_map("26=3, 48=6").unwrap();
        assert_eq!(m[26], 3);
        assert_eq!(m[48], 6);
        assert_eq!(m[46], 5);
        assert!(dscp_map("64=1").is_err());
        assert!(dscp_map("26:3").is_err());
    }
}
