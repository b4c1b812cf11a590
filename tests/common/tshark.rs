//! Running tshark for parity tests: whether it is there, its `-T fields`
//! output as one map per frame, and its numbers.
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

/// One frame's fields that tshark showed (absent: not in the frame).
pub type Row = HashMap<String, String>;

pub fn available() -> bool {
    Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `tshark -r path ARGS -T fields -E separator=/t -e F…`, one row per frame.
pub fn fields(path: &Path, args: &[&str], fields: &[&str]) -> Vec<Row> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r")
        .arg(path)
        .args(args)
        .args(["-T", "fields", "-E", "separator=/t"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("run tshark");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            fields
                .iter()
                .zip(line.split('\t'))
                .filter(|(_, v)| !v.is_empty())
                .map(|(f, v)| (f.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// A tshark number: `0x` hex, decimal, or a boolean.
pub fn num(s: &str) -> u64 {
    match s {
        "True" | "true" => 1,
        "False" | "false" => 0,
        _ => match s.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16),
            None => s.parse(),
        }
        .unwrap_or_else(|e| panic!("tshark value {s:?}: {e}")),
    }
}
