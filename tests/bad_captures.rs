//! The bad-capture catalogue, end to end through the `rocescope` binary:
//! each damaged or odd capture has one exact expected behaviour.
//!
//! * A file that cannot be read from its start: one error line naming the
//!   file, non-zero exit, no table written.
//! * A fault later in the file: one warning line naming the file and the
//!   byte offset of the record concerned; every frame before it analysed and
//!   written (row counts in `packets.parquet` checked), exit 0.
//! * Odd frames (bad GRE, IPv4 options, fragments): an exact per-frame
//!   decode (kept, or not recorded), no warning; the frames not recorded
//!   counted by reason in `summary.json` (`input.decode`) and in one note
//!   line on stderr.
//! * A run of which no frame could be decoded (no frames, nothing RoCE, a
//!   filter matching nothing): every table written, one error line saying
//!   so, non-zero exit.
//!
//! Every run is under an address-space limit (`RLIMIT_AS`), so an
//! allocation sized by a length field from the file would abort the run;
//! the 4 GB length cases also check the child's peak RSS.
use crate::common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::Table;
use rocescope::synth::frame::{Erspan, RoceFrame, WireFrame, ipv4_checksum};

/// Address space the binary may use: far below any 4 GB length field.
const AS_LIMIT: u64 = 1 << 30;

const LINKTYPE_ETHERNET: u32 = 1;
const LINKTYPE_LINUX_SLL: u32 = 113;
const LINKTYPE_IEEE802_11: u32 = 105;
const TS0_US: u64 = 1_700_000_000_000_000;

/// A valid RC RDMA WRITE Only (QP 0x200, 64-byte payload, valid ICRC).
fn roce(psn: u32) -> Vec<u8> {
    let mut f = RoceFrame::default();
    f.bth.opcode = 0x0A;
    f.bth.dest_qp = 0x200;
    f.bth.psn = psn;
    f.ext.reth_len = 64;
    f.payload_len = 64;
    bytes(&f)
}

fn bytes(f: &impl WireFrame) -> Vec<u8> {
    let mut v = Vec::new();
    f.write(&mut v);
    v
}

// ---- classic pcap (little-endian, microseconds) ----

fn pcap_header(linktype: u32, snaplen: u32) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&0xA1B2_C3D4u32.to_le_bytes());
    v.extend_from_slice(&2u16.to_le_bytes());
    v.extend_from_slice(&4u16.to_le_bytes());
    v.extend_from_slice(&0i32.to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    v.extend_from_slice(&snaplen.to_le_bytes());
    v.extend_from_slice(&linktype.to_le_bytes());
    v
}

/// Appends a record header claiming `caplen`/`orig`, then `data` as given.
fn pcap_record(out: &mut Vec<u8>, ts_us: u64, caplen: u32, orig: u32, data: &[u8]) {
    out.extend_from_slice(&((ts_us / 1_000_000) as u32).to_le_bytes());
    out.extend_from_slice(&((ts_us % 1_000_000) as u32).to_le_bytes());
    out.extend_from_slice(&caplen.to_le_bytes());
    out.extend_from_slice(&orig.to_le_bytes());
    out.extend_from_slice(data);
}

fn pcap_frame(out: &mut Vec<u8>, ts_us: u64, data: &[u8]) {
    pcap_record(out, ts_us, data.len() as u32, data.len() as u32, data);
}

/// A pcap of `n` valid frames (PSNs 0..n, 1 µs apart).
fn pcap_with(n: u32) -> Vec<u8> {
    let mut v = pcap_header(LINKTYPE_ETHERNET, 65535);
    for psn in 0..n {
        pcap_frame(&mut v, TS0_US + u64::from(psn), &roce(psn));
    }
    v
}

// ---- pcapng (little-endian, default µs resolution) ----

fn block(block_type: u32, body: &[u8]) -> Vec<u8> {
    let padded = body.len().div_ceil(4) * 4;
    let len = (12 + padded) as u32;
    let mut v = Vec::new();
    v.extend_from_slice(&block_type.to_le_bytes());
    v.extend_from_slice(&len.to_le_bytes());
    v.extend_from_slice(body);
    v.resize(8 + padded, 0);
    v.extend_from_slice(&len.to_le_bytes());
    v
}

fn shb() -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&0x1A2B_3C4Du32.to_le_bytes());
    body.extend_from_slice(&1u16.to_le_bytes());
    body.extend_from_slice(&0u16.to_le_bytes());
    body.extend_from_slice(&(-1i64).to_le_bytes());
    block(0x0A0D_0D0A, &body)
}

fn idb(linktype: u16, snaplen: u32) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&linktype.to_le_bytes());
    body.extend_from_slice(&0u16.to_le_bytes());
    body.extend_from_slice(&snaplen.to_le_bytes());
    block(1, &body)
}

fn epb(iface: u32, ts_us: u64, data: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&iface.to_le_bytes());
    body.extend_from_slice(&((ts_us >> 32) as u32).to_le_bytes());
    body.extend_from_slice(&(ts_us as u32).to_le_bytes());
    body.extend_from_slice(&(data.len() as u32).to_le_bytes());
    body.extend_from_slice(&(data.len() as u32).to_le_bytes());
    body.extend_from_slice(data);
    block(6, &body)
}

// ---- running the binary ----

struct Run {
    _dir: tempfile::TempDir,
    cap: PathBuf,
    out: PathBuf,
    output: Output,
}

impl Run {
    fn ok(&self) -> bool {
        self.output.status.success()
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    fn rows(&self) -> usize {
        Table::read(&self.out.join("packets.parquet")).rows()
    }

    fn packets(&self) -> Table {
        Table::read(&self.out.join("packets.parquet"))
    }

    /// The `frame` column.
    fn frames(&self) -> Vec<i128> {
        self.packets().ints("frame").into_iter().flatten().collect()
    }

    /// Requires a clean exit whose stderr is exactly `warnings` lines, each
    /// `rocescope: warning: FILE: at byte N: ...` with the offsets given
    /// and containing the matching text (and notes, see
    /// [`Run::expect_not_decoded`]).
    fn expect_warnings(&self, want: &[(u64, &str)]) {
        let err = self.stderr();
        assert!(self.ok(), "run failed: {err}");
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| !l.starts_with("rocescope: note: "))
            .collect();
        assert_eq!(lines.len(), want.len(), "warnings: {err}");
        for (line, (offset, text)) in lines.iter().zip(want) {
            let head = format!(
                "rocescope: warning: {}: at byte {offset}: ",
                self.cap.display()
            );
            assert!(line.starts_with(&head), "want {head:?}…, got {line:?}");
            assert!(line.contains(text), "want {text:?} in {line:?}");
        }
        self.expect_every_table();
    }

    /// `summary.json`'s `input.decode`.
    fn decode(&self) -> serde_json::Value {
        let text = std::fs::read_to_string(self.out.join("summary.json")).unwrap();
        let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
        summary["input"]["decode"].clone()
    }

    /// Requires `summary.json` to count exactly these frames not decoded,
    /// by reason, and stderr to say so in one note (none when `want` is
    /// empty).
    fn expect_not_decoded(&self, want: &[(&str, u64)]) {
        let d = self.decode();
        let got: Vec<(String, u64)> = d["not_decoded_by_reason"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
            .collect();
        let want_owned: Vec<(String, u64)> =
            want.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        assert_eq!(got, want_owned, "{d}");
        let total: u64 = want.iter().map(|(_, n)| n).sum();
        assert_eq!(d["not_decoded"], total);
        let err = self.stderr();
        let notes: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("rocescope: note: ") && l.contains("not decoded"))
            .collect();
        if total == 0 {
            assert!(notes.is_empty(), "{err}");
        } else {
            assert_eq!(notes.len(), 1, "{err}");
            assert!(
                notes[0].contains(&format!("rocescope: note: {total} of ")),
                "{err}"
            );
        }
    }

    /// Requires the run to have written every table and failed with one
    /// error line containing `text`.
    fn expect_failure_after_writing(&self, text: &str) {
        let err = self.stderr();
        assert!(!self.ok(), "should fail: {err}");
        let errors: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("rocescope: error: "))
            .collect();
        assert_eq!(errors.len(), 1, "{err}");
        assert!(errors[0].contains(text), "want {text:?} in {err}");
        self.expect_every_table();
    }

    fn expect_every_table(&self) {
        for t in ["packets", "flows", "events", "pfc", "timeline"] {
            let p = self.out.join(format!("{t}.parquet"));
            assert!(p.exists(), "{} missing", p.display());
            Table::read(&p);
        }
        let summary = std::fs::read_to_string(self.out.join("summary.json")).unwrap();
        serde_json::from_str::<serde_json::Value>(&summary).unwrap();
        assert_no_partials(&self.out);
    }

    /// Requires one error line naming the file, a failed exit, no tables.
    fn expect_error(&self, text: &str) {
        let err = self.stderr();
        assert!(!self.ok(), "should fail: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        let head = format!("rocescope: error: {}", self.cap.display());
        assert!(err.starts_with(&head), "want {head:?}…, got {err:?}");
        assert!(err.contains(text), "want {text:?} in {err:?}");
        let written: Vec<_> = std::fs::read_dir(&self.out)
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(written.is_empty(), "wrote {written:?}");
    }
}

fn assert_no_partials(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(!name.ends_with(".partial"), "left behind: {name}");
    }
}

/// `rocescope analyze FILE --out DIR` on `content` saved as `name`, with
/// the address space limited to [`AS_LIMIT`].
fn analyze(name: &str, content: &[u8]) -> Run {
    analyze_with(name, content, &[])
}

/// [`analyze`] with more arguments.
fn analyze_with(name: &str, content: &[u8], args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join(name);
    std::fs::write(&cap, content).unwrap();
    let out = dir.path().join("out");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rocescope"));
    cmd.args([
        "analyze",
        cap.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    cmd.args(args);
    // SAFETY: setrlimit is async-signal-safe; nothing else runs in the child.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: AS_LIMIT,
                rlim_max: AS_LIMIT,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let output = cmd.output().expect("rocescope runs");
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(!err.contains("panicked"), "{name}: panic: {err}");
    assert!(
        !err.contains("memory allocation"),
        "{name}: allocation failed: {err}"
    );
    Run {
        _dir: dir,
        cap,
        out,
        output,
    }
}

/// Largest peak RSS of any child this test process has waited for, in KiB.
fn children_max_rss_kib() -> i64 {
    // SAFETY: getrusage fills the struct it is given.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut u);
        u.ru_maxrss
    }
}

// ---- the catalogue ----

#[test]
fn empty_file_is_an_error() {
    analyze("empty.pcap", b"").expect_error("not a pcap or pcapng capture");
}

#[test]
fn wrong_magic_is_an_error() {
    let mut v = pcap_with(2);
    v[..4].copy_from_slice(b"GIF8");
    analyze("magic.pcap", &v).expect_error("not a pcap or pcapng capture");
}

#[test]
fn header_only_captures_fail_as_empty_runs() {
    let r = analyze("header.pcap", &pcap_header(LINKTYPE_ETHERNET, 65535));
    r.expect_failure_after_writing("the captures hold no frames");
    assert_eq!(r.rows(), 0);
    let r = analyze("header.pcapng", &[shb(), idb(1, 0)].concat());
    r.expect_failure_after_writing("the captures hold no frames");
    assert_eq!(r.rows(), 0);
    r.expect_not_decoded(&[]);
}

#[test]
fn cut_file_header_is_an_error() {
    let v = pcap_header(LINKTYPE_ETHERNET, 65535);
    analyze("cuthdr.pcap", &v[..10]).expect_error("cuthdr.pcap");
}

#[test]
fn record_cut_midway_keeps_everything_before() {
    let full = pcap_with(4);
    let frame_len = roce(0).len();
    let fourth = 24 + 3 * (16 + frame_len);
    // Cut inside the 4th record's data, then inside its header.
    for cut in [fourth + 16 + 10, fourth + 7] {
        let r = analyze("cut.pcap", &full[..cut]);
        r.expect_warnings(&[(fourth as u64, "")]);
        assert_eq!(r.rows(), 3, "cut at {cut}");
        assert!(r.stderr().contains("stopped reading there"));
    }
}

#[test]
fn zero_length_record_is_read_past() {
    let mut v = pcap_header(LINKTYPE_ETHERNET, 65535);
    pcap_frame(&mut v, TS0_US, &roce(0));
    pcap_record(&mut v, TS0_US + 1, 0, 0, &[]);
    pcap_frame(&mut v, TS0_US + 2, &roce(1));
    let r = analyze("zero.pcap", &v);
    r.expect_warnings(&[]);
    // The empty record is frame 2 (numbers match Wireshark's): no row.
    assert_eq!(r.frames(), [1, 3]);
    r.expect_not_decoded(&[("cut.link", 1)]);
    assert_eq!(r.decode()["parse_failures"], 1);
}

#[test]
fn record_over_the_snaplen_is_kept_with_one_warning() {
    let mut v = pcap_header(LINKTYPE_ETHERNET, 64);
    let f = roce(0);
    for i in 0..3 {
        pcap_frame(&mut v, TS0_US + i, &f);
    }
    let r = analyze("snap.pcap", &v);
    r.expect_warnings(&[(24, "snaplen")]);
    assert_eq!(r.rows(), 3);
    assert!(
        r.packets()
            .bools("icrc_ok")
            .iter()
            .all(|v| *v == Some(true))
    );
}

#[test]
fn record_over_the_largest_snaplen_stops_the_file() {
    let mut v = pcap_with(2);
    let at = v.len() as u64;
    let big = vec![0u8; 300_000];
    pcap_record(&mut v, TS0_US + 5, 300_000, 300_000, &big);
    pcap_frame(&mut v, TS0_US + 6, &roce(2));
    let r = analyze("huge.pcap", &v);
    r.expect_warnings(&[(at, "")]);
    assert_eq!(r.rows(), 2);
}

#[test]
fn four_gigabyte_lengths_allocate_nothing() {
    // classic pcap: captured length 0xFFFFFFFF.
    let mut v = pcap_with(3);
    let at = v.len() as u64;
    pcap_record(&mut v, TS0_US + 9, u32::MAX, u32::MAX, &roce(3));
    let r = analyze("4g.pcap", &v);
    r.expect_warnings(&[(at, "")]);
    assert_eq!(r.rows(), 3);

    // pcapng: an EPB and an unknown block claiming ~4 GB.
    for block_type in [6u32, 0x0000_0BAD] {
        let mut v = [shb(), idb(1, 0), epb(0, TS0_US, &roce(0))].concat();
        let at = v.len() as u64;
        v.extend_from_slice(&block_type.to_le_bytes());
        v.extend_from_slice(&0xFFFF_FFFCu32.to_le_bytes());
        v.extend_from_slice(&[0u8; 64]);
        let r = analyze("4g.pcapng", &v);
        r.expect_warnings(&[(at, "")]);
        assert_eq!(r.rows(), 1);
    }
    let rss = children_max_rss_kib();
    assert!(rss < 200 * 1024, "a child peaked at {rss} KiB");
}

#[test]
fn pcapng_unknown_and_oversized_blocks_are_skipped() {
    let mut v = [shb(), idb(1, 0), epb(0, TS0_US, &roce(0))].concat();
    v.extend(block(0x0000_0BAD, &[7u8; 40]));
    v.extend(epb(0, TS0_US + 1, &roce(1)));
    // A custom block (2989) of 3 MB: larger than the reader's buffer.
    v.extend(block(0x0000_0BAD, &vec![9u8; 3 << 20]));
    v.extend(epb(0, TS0_US + 2, &roce(2)));
    let r = analyze("blocks.pcapng", &v);
    r.expect_warnings(&[]);
    assert_eq!(r.frames(), [1, 2, 3]);
}

#[test]
fn interface_id_out_of_range_skips_that_frame() {
    let mut v = [shb(), idb(1, 0), epb(0, TS0_US, &roce(0))].concat();
    let at = v.len() as u64;
    v.extend(epb(7, TS0_US + 1, &roce(1)));
    v.extend(epb(0, TS0_US + 2, &roce(2)));
    let r = analyze("iface.pcapng", &v);
    r.expect_warnings(&[(at, "interface 7")]);
    assert_eq!(r.frames(), [1, 3]);
}

#[test]
fn mixed_link_types_decode_what_they_can() {
    let eth = roce(0);
    // Linux cooked (SLL): 16-byte header, protocol 0x0800, then the IP packet.
    let mut sll = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, 0x08, 0x00];
    sll.extend_from_slice(&roce(1)[14..]);
    let mut v = [shb(), idb(1, 0), idb(LINKTYPE_LINUX_SLL as u16, 0)].concat();
    v.extend(idb(LINKTYPE_IEEE802_11 as u16, 0));
    v.extend(epb(0, TS0_US, &eth));
    v.extend(epb(1, TS0_US + 1, &sll));
    let wifi_at = v.len() as u64;
    v.extend(epb(2, TS0_US + 2, &eth));
    v.extend(epb(0, TS0_US + 3, &roce(2)));
    let r = analyze("mixed.pcapng", &v);
    r.expect_warnings(&[(wifi_at, "link type 105")]);
    assert_eq!(r.frames(), [1, 2, 4]);
    r.expect_not_decoded(&[("link_type_not_supported", 1)]);
    assert_eq!(r.decode()["link_types_not_supported"]["105"], 1);
    let ifaces = r.packets().strings("iface");
    assert_eq!(ifaces[0], ifaces[2]);
    assert_ne!(ifaces[0], ifaces[1]);
}

#[test]
fn timestamps_going_backwards_are_kept_in_file_order_with_a_warning() {
    let mut v = pcap_header(LINKTYPE_ETHERNET, 65535);
    pcap_frame(&mut v, TS0_US + 10, &roce(0));
    let at = v.len() as u64;
    pcap_frame(&mut v, TS0_US + 5, &roce(1));
    pcap_frame(&mut v, TS0_US + 1, &roce(2));
    let r = analyze("back.pcap", &v);
    r.expect_warnings(&[(at, "backwards")]);
    let ts = r.packets().ints("ts_ns");
    let want: Vec<_> = [10, 5, 1]
        .iter()
        .map(|d| Some(i128::from((TS0_US + d) * 1000)))
        .collect();
    assert_eq!(ts, want);
}

#[test]
fn a_duplicated_frame_is_a_mirror_copy_and_warned_about() {
    let mut v = pcap_header(LINKTYPE_ETHERNET, 65535);
    pcap_frame(&mut v, TS0_US, &roce(0));
    let at = v.len() as u64;
    pcap_frame(&mut v, TS0_US, &roce(0));
    pcap_frame(&mut v, TS0_US + 1, &roce(1));
    let r = analyze("dup.pcap", &v);
    r.expect_warnings(&[(at, "duplicate")]);
    // A copy at the same instant is the mirror's, not a resend: a row of
    // its own, marked, and left out of the sequence analysis.
    assert_eq!(r.frames(), [1, 2, 3]);
    let p = r.packets();
    assert_eq!(p.bools("retrans"), [Some(false), None, Some(false)]);
    assert_eq!(
        p.bools("mirror_copy"),
        [Some(false), Some(true), Some(false)]
    );
}

#[test]
fn erspan_with_a_bad_gre_header_is_not_recorded() {
    let inner = RoceFrame {
        payload_len: 64,
        ..RoceFrame::default()
    };
    let mut good = Vec::new();
    Erspan::default().write(&inner, &mut good);
    let gre = 14 + 20; // outer Ethernet + IPv4
    let mut version1 = good.clone();
    version1[gre + 1] |= 1; // GRE version 1 (PPTP)
    let mut routing = good.clone();
    routing[gre] |= 0x40; // RFC 1701 routing bit
    let mut proto = good.clone();
    proto[gre + 2..gre + 4].copy_from_slice(&0x6558u16.to_be_bytes()); // TEB, not ERSPAN
    let mut cut = good.clone();
    cut.truncate(gre + 6); // GRE cut by the snaplen

    let mut v = pcap_header(LINKTYPE_ETHERNET, 65535);
    for (i, f) in [&good, &version1, &routing, &proto].iter().enumerate() {
        pcap_frame(&mut v, TS0_US + i as u64, f);
    }
    pcap_record(
        &mut v,
        TS0_US + 9,
        cut.len() as u32,
        good.len() as u32,
        &cut,
    );
    let r = analyze("erspan.pcap", &v);
    r.expect_warnings(&[]);
    assert_eq!(r.frames(), [1]);
    r.expect_not_decoded(&[("cut.gre", 1), ("not_roce.gre_protocol", 3)]);
    assert_eq!(r.decode()["parse_failures_by_layer"]["gre"], 1);
    assert_eq!(r.packets().bools("erspan"), [Some(true)]);
}

/// `frame` (Ethernet + IPv4) with 4 bytes of IPv4 options (NOP NOP NOP EOL).
fn with_ipv4_options(frame: &[u8]) -> Vec<u8> {
    let ip = 14;
    let mut v = frame[..ip + 20].to_vec();
    v.extend_from_slice(&[1, 1, 1, 0]);
    v.extend_from_slice(&frame[ip + 20..]);
    v[ip] = 0x46;
    let total = u16::from_be_bytes([v[ip + 2], v[ip + 3]]) + 4;
    v[ip + 2..ip + 4].copy_from_slice(&total.to_be_bytes());
    fix_ipv4_checksum(&mut v, ip);
    v
}

fn fix_ipv4_checksum(v: &mut [u8], ip: usize) {
    let ihl = usize::from(v[ip] & 0xF) * 4;
    v[ip + 10..ip + 12].copy_from_slice(&[0, 0]);
    let c = ipv4_checksum(&v[ip..ip + ihl]);
    v[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
}

#[test]
fn ipv4_options_and_fragments_to_4791() {
    let whole = roce(5);
    let ip = 14;
    let options = with_ipv4_options(&whole);

    // First fragment: MF, offset 0, the first 48 bytes of the datagram.
    let mut first = whole[..ip + 20 + 48].to_vec();
    first[ip + 6..ip + 8].copy_from_slice(&0x2000u16.to_be_bytes());
    first[ip + 2..ip + 4].copy_from_slice(&(20u16 + 48).to_be_bytes());
    fix_ipv4_checksum(&mut first, ip);

    // A later fragment (offset 48 bytes) whose payload happens to look like
    // a UDP header to port 4791: it has no UDP header, so it is not RoCE.
    let mut later = whole[..ip + 20].to_vec();
    later.extend_from_slice(&[0xC0, 0x00, 0x12, 0xB7, 0, 40, 0, 0]);
    later.extend_from_slice(&whole[ip + 20 + 56..]);
    later[ip + 6..ip + 8].copy_from_slice(&6u16.to_be_bytes());
    let total = (later.len() - ip) as u16;
    later[ip + 2..ip + 4].copy_from_slice(&total.to_be_bytes());
    fix_ipv4_checksum(&mut later, ip);

    let mut v = pcap_header(LINKTYPE_ETHERNET, 65535);
    for (i, f) in [&options, &first, &later].iter().enumerate() {
        pcap_frame(&mut v, TS0_US + i as u64, f);
    }
    let r = analyze("frag.pcap", &v);
    r.expect_warnings(&[]);
    let p = r.packets();
    assert_eq!(r.frames(), [1, 2]);
    r.expect_not_decoded(&[("not_roce.ip_fragment", 1)]);
    assert_eq!(
        p.strings("kind"),
        [Some("roce".into()), Some("roce".into())]
    );
    assert_eq!(p.ints("psn"), [Some(5), Some(5)]);
    assert_eq!(p.ints("payload_len"), [Some(64), Some(64)]);
    // The first fragment is decoded like a capture cut: ICRC unchecked.
    assert_eq!(p.bools("icrc_ok")[1], None);
}

/// An ARP request (42 bytes).
fn arp() -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 1, 0x08, 0x06]);
    f.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 1, 10, 0, 0, 1]);
    f.extend_from_slice(&[0, 0, 0, 0, 0, 0, 10, 0, 0, 2]);
    f
}

/// `frame` (Ethernet + IPv4 to UDP 4791) as TCP.
fn as_tcp(frame: &[u8]) -> Vec<u8> {
    let mut v = frame.to_vec();
    v[14 + 9] = 6;
    fix_ipv4_checksum(&mut v, 14);
    v
}

#[test]
fn nothing_decodable_fails_loudly() {
    let mut v = pcap_header(LINKTYPE_ETHERNET, 65535);
    pcap_frame(&mut v, TS0_US, &arp());
    pcap_frame(&mut v, TS0_US + 1, &as_tcp(&roce(0)));
    pcap_frame(&mut v, TS0_US + 2, &as_tcp(&roce(1)));
    let r = analyze("tcp.pcap", &v);
    r.expect_failure_after_writing("no frame could be decoded as RoCE, UET, CNP, PFC or PAUSE");
    r.expect_not_decoded(&[("not_roce.ethertype", 1), ("not_roce.ip_protocol", 2)]);
    assert_eq!(r.rows(), 0);
    assert!(
        r.stderr()
            .contains("1 not IP (another EtherType), 2 IP but neither UDP nor GRE"),
        "{}",
        r.stderr()
    );

    // Raw IP of the same frames: as much a capture, as little RoCE.
    let mut v = pcap_header(101, 65535);
    pcap_frame(&mut v, TS0_US, &as_tcp(&roce(0))[14..]);
    let r = analyze("tcp-raw.pcap", &v);
    r.expect_failure_after_writing("no frame could be decoded");
    r.expect_not_decoded(&[("not_roce.ip_protocol", 1)]);

    // A filter that matches nothing: every frame filtered out.
    let r = analyze_with("filtered.pcap", &pcap_with(4), &["--filter", "udp port 9"]);
    r.expect_failure_after_writing("no frame could be decoded");
    r.expect_not_decoded(&[("filtered_out", 4)]);

    // Frames of a link type rocescope does not read.
    let mut v = pcap_header(LINKTYPE_IEEE802_11, 65535);
    pcap_frame(&mut v, TS0_US, &roce(0));
    pcap_frame(&mut v, TS0_US + 1, &roce(1));
    let r = analyze("wifi.pcap", &v);
    r.expect_failure_after_writing("2 of a link type rocescope does not decode (105)");
    r.expect_not_decoded(&[("link_type_not_supported", 2)]);

    // One RoCE frame among them is enough for a run.
    let mut v = pcap_header(LINKTYPE_ETHERNET, 65535);
    pcap_frame(&mut v, TS0_US, &arp());
    pcap_frame(&mut v, TS0_US + 1, &roce(0));
    let r = analyze("one.pcap", &v);
    r.expect_warnings(&[]);
    r.expect_not_decoded(&[("not_roce.ethertype", 1)]);
}

#[test]
fn decoder_limits_are_counted_by_layer() {
    let f = roce(3);
    // 5 VLAN tags, one more than the decoder steps over (4 are fine).
    let tagged = |n: usize| {
        let mut v = f[..12].to_vec();
        for _ in 0..n {
            v.extend_from_slice(&[0x81, 0x00, 0x60, 0x05]);
        }
        v.extend_from_slice(&f[12..]);
        v
    };
    let mut v = pcap_header(LINKTYPE_ETHERNET, 65535);
    pcap_frame(&mut v, TS0_US, &tagged(4));
    pcap_frame(&mut v, TS0_US + 1, &tagged(5));
    // Cut inside the IPv4 header by the snaplen (caplen 30 of 98).
    pcap_record(&mut v, TS0_US + 2, 30, f.len() as u32, &f[..30]);
    // Cut inside the BTH: a RoCE row all the same, counted as a parse failure.
    pcap_record(
        &mut v,
        TS0_US + 3,
        14 + 20 + 8 + 6,
        f.len() as u32,
        &f[..48],
    );
    let r = analyze("limits.pcap", &v);
    r.expect_warnings(&[]);
    assert_eq!(r.frames(), [1, 4]);
    r.expect_not_decoded(&[("cut.ipv4", 1), ("decoder_limit.vlan_depth", 1)]);
    let d = r.decode();
    assert_eq!(d["parse_failures"], 3, "{d}");
    assert_eq!(d["parse_failures_by_layer"]["vlan"], 1);
    assert_eq!(d["parse_failures_by_layer"]["ipv4"], 1);
    assert_eq!(d["parse_failures_by_layer"]["bth"], 1);
}

/// An IDB with `if_name` and `if_tsoffset`.
fn idb_with_offset(linktype: u16, name: &str, offset_s: i64) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&linktype.to_le_bytes());
    body.extend_from_slice(&0u16.to_le_bytes());
    body.extend_from_slice(&0u32.to_le_bytes());
    let padded = name.len().div_ceil(4) * 4;
    body.extend_from_slice(&2u16.to_le_bytes());
    body.extend_from_slice(&(name.len() as u16).to_le_bytes());
    body.extend_from_slice(name.as_bytes());
    body.resize(body.len() + padded - name.len(), 0);
    body.extend_from_slice(&14u16.to_le_bytes());
    body.extend_from_slice(&8u16.to_le_bytes());
    body.extend_from_slice(&offset_s.to_le_bytes());
    body.extend_from_slice(&[0; 4]);
    block(1, &body)
}

#[test]
fn a_timestamp_that_does_not_fit_is_an_error() {
    // if_tsoffset -1700000000 s: the first frame (at 1.7e9 + 1 s) is at 1 s
    // after the epoch, the second (1 µs before 1.7e9 s) before it.
    let mut v = [shb(), idb_with_offset(1, "mirror0", -1_700_000_000)].concat();
    v.extend(epb(0, 1_700_000_001_000_000, &roce(0)));
    let at = v.len();
    v.extend(epb(0, 1_699_999_999_999_999, &roce(1)));
    v.extend(epb(0, 1_700_000_002_000_000, &roce(2)));
    let r = analyze("offset.pcapng", &v);
    let err = r.stderr();
    r.expect_failure_after_writing(&format!(
        "offset.pcapng: at byte {at}: frame 2 (interface 0 \"mirror0\"): timestamp 1699999999999999"
    ));
    assert!(err.contains("if_tsoffset -1700000000 s"), "{err}");
    // The frame before it is analysed and written.
    assert_eq!(r.frames(), [1]);
    assert_eq!(r.packets().ints("ts_ns"), [Some(1_000_000_000)]);
}
