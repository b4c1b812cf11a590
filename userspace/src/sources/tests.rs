//! Tests of the capture reader and the filter, on captures built here.
use std::io::{self, Read};
use std::path::Path;

use super::*;
use crate::error::Error;
use rocescope_common::proto::linktype;

// ---------------------------------------------------------------- builders

/// A classic pcap file.
struct Pcap {
    be: bool,
    ns: bool,
    buf: Vec<u8>,
}

impl Pcap {
    fn new(be: bool, ns: bool, linktype: u32, snaplen: u32) -> Pcap {
        let mut p = Pcap {
            be,
            ns,
            buf: Vec::new(),
        };
        p.u32(if ns { 0xa1b2_3c4d } else { 0xa1b2_c3d4 });
        p.u16(2);
        p.u16(4);
        p.u32(0);
        p.u32(0);
        p.u32(snaplen);
        p.u32(linktype);
        p
    }
    fn u16(&mut self, v: u16) {
        let b = if self.be {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.buf.extend_from_slice(&b);
    }
    fn u32(&mut self, v: u32) {
        let b = if self.be {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.buf.extend_from_slice(&b);
    }
    /// A record; `frac` is µs or ns per the magic.
    fn record(mut self, sec: u32, frac: u32, data: &[u8], orig: u32) -> Pcap {
        self.u32(sec);
        self.u32(frac);
        self.u32(data.len() as u32);
        self.u32(orig);
        self.buf.extend_from_slice(data);
        self
    }
    fn bytes(self) -> Vec<u8> {
        let _ = self.ns;
        self.buf
    }
}

/// A pcapng file, one section after another.
struct Ng {
    be: bool,
    buf: Vec<u8>,
}

fn pad4(v: &mut Vec<u8>) {
    while !v.len().is_multiple_of(4) {
        v.push(0);
    }
}

impl Ng {
    fn new(be: bool) -> Ng {
        Ng {
            be,
            buf: Vec::new(),
        }
        .shb(be)
    }
    fn w16(&self, v: u16) -> [u8; 2] {
        if self.be {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }
    fn w32(&self, v: u32) -> [u8; 4] {
        if self.be {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }
    fn block(mut self, btype: u32, mut body: Vec<u8>) -> Ng {
        pad4(&mut body);
        let len = 12 + body.len() as u32;
        let (t, l) = (self.w32(btype), self.w32(len));
        self.buf.extend_from_slice(&t);
        self.buf.extend_from_slice(&l);
        self.buf.extend_from_slice(&body);
        self.buf.extend_from_slice(&l);
        self
    }
    /// Starts a new section in byte order `be`.
    fn shb(mut self, be: bool) -> Ng {
        self.be = be;
        let mut body = Vec::new();
        body.extend_from_slice(&self.w32(0x1A2B_3C4D));
        body.extend_from_slice(&self.w16(1));
        body.extend_from_slice(&self.w16(0));
        body.extend_from_slice(&if be {
            (-1i64).to_be_bytes()
        } else {
            (-1i64).to_le_bytes()
        });
        self.block(0x0A0D_0D0A, body)
    }
    fn opt(&self, body: &mut Vec<u8>, code: u16, value: &[u8]) {
        body.extend_from_slice(&self.w16(code));
        body.extend_from_slice(&self.w16(value.len() as u16));
        body.extend_from_slice(value);
        pad4(body);
    }
    fn idb(
        self,
        linktype: u16,
        snaplen: u32,
        name: Option<&str>,
        tsresol: Option<u8>,
        tsoffset: Option<i64>,
    ) -> Ng {
        let mut body = Vec::new();
        body.extend_from_slice(&self.w16(linktype));
        body.extend_from_slice(&self.w16(0));
        body.extend_from_slice(&self.w32(snaplen));
        if let Some(n) = name {
            self.opt(&mut body, 2, n.as_bytes());
        }
        if let Some(r) = tsresol {
            self.opt(&mut body, 9, &[r]);
        }
        if let Some(o) = tsoffset {
            let b = if self.be {
                o.to_be_bytes()
            } else {
                o.to_le_bytes()
            };
            self.opt(&mut body, 14, &b);
        }
        self.opt(&mut body, 0, &[]);
        self.block(1, body)
    }
    /// An EPB's fixed fields and data.
    fn epb_body(&self, if_id: u32, ts: u64, data: &[u8], orig: u32) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&self.w32(if_id));
        body.extend_from_slice(&self.w32((ts >> 32) as u32));
        body.extend_from_slice(&self.w32(ts as u32));
        body.extend_from_slice(&self.w32(data.len() as u32));
        body.extend_from_slice(&self.w32(orig));
        body.extend_from_slice(data);
        body
    }
    fn epb(self, if_id: u32, ts: u64, data: &[u8], orig: u32) -> Ng {
        let body = self.epb_body(if_id, ts, data, orig);
        self.block(6, body)
    }
    /// An EPB with an `epb_flags` option (inbound) after its data.
    fn epb_flagged(self, if_id: u32, ts: u64, data: &[u8], orig: u32) -> Ng {
        let mut body = self.epb_body(if_id, ts, data, orig);
        pad4(&mut body);
        self.opt(&mut body, 2, &self.w32(1));
        self.opt(&mut body, 0, &[]);
        self.block(6, body)
    }
    fn spb(self, data: &[u8], orig: u32) -> Ng {
        let mut body = Vec::new();
        body.extend_from_slice(&self.w32(orig));
        body.extend_from_slice(data);
        self.block(3, body)
    }
    fn pb(self, if_id: u16, ts: u64, data: &[u8], orig: u32) -> Ng {
        let mut body = Vec::new();
        body.extend_from_slice(&self.w16(if_id));
        body.extend_from_slice(&self.w16(0));
        body.extend_from_slice(&self.w32((ts >> 32) as u32));
        body.extend_from_slice(&self.w32(ts as u32));
        body.extend_from_slice(&self.w32(data.len() as u32));
        body.extend_from_slice(&self.w32(orig));
        body.extend_from_slice(data);
        self.block(2, body)
    }
    fn bytes(self) -> Vec<u8> {
        self.buf
    }
}

/// Owned copy of a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
struct F {
    number: u64,
    iface: u32,
    ts_ns: u64,
    linktype: u32,
    orig_len: u32,
    data: Vec<u8>,
}

fn reader(bytes: Vec<u8>) -> CaptureReader {
    CaptureReader::from_reader("test.pcap", io::Cursor::new(bytes)).expect("a capture")
}

fn all(r: &mut CaptureReader) -> Vec<F> {
    let mut out = Vec::new();
    while let Some(f) = r.next_frame().expect("no I/O error") {
        out.push(F {
            number: f.number,
            iface: f.iface,
            ts_ns: f.ts_ns,
            linktype: f.linktype,
            orig_len: f.orig_len,
            data: f.data.to_vec(),
        });
    }
    // Stays at the end.
    assert!(r.next_frame().unwrap().is_none());
    out
}

fn read_all(bytes: Vec<u8>) -> (Vec<F>, Vec<Warning>, CaptureReader) {
    let mut r = reader(bytes);
    let frames = all(&mut r);
    let w = r.take_warnings();
    (frames, w, r)
}

fn frame(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| seed.wrapping_add(i as u8)).collect()
}

const T0: u64 = 1_700_000_000;

// ------------------------------------------------------------- classic pcap

#[test]
fn pcap_microseconds_little_endian() {
    let a = frame(60, 1);
    let b = frame(1514, 7);
    let bytes = Pcap::new(false, false, linktype::ETHERNET, 65535)
        .record(T0 as u32, 250_000, &a, 60)
        .record(T0 as u32 + 1, 999_999, &b, 1514)
        .bytes();
    let len = bytes.len() as u64;
    let (frames, warnings, r) = read_all(bytes);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        r.interfaces(),
        &[Interface {
            name: None,
            linktype: linktype::ETHERNET,
            snaplen: 65535,
            drops: None,
        }]
    );
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0].number, 1);
    assert_eq!(frames[0].iface, 0);
    assert_eq!(frames[0].ts_ns, T0 * 1_000_000_000 + 250_000_000);
    assert_eq!(frames[0].data, a);
    assert_eq!(frames[0].linktype, linktype::ETHERNET);
    assert_eq!(frames[1].number, 2);
    assert_eq!(frames[1].ts_ns, (T0 + 1) * 1_000_000_000 + 999_999_000);
    assert_eq!(frames[1].data, b);
    assert_eq!(frames[1].orig_len, 1514);
    assert_eq!(r.offset(), len);
}

#[test]
fn pcap_nanoseconds_and_snaplen_cut() {
    let a = frame(128, 3);
    let bytes = Pcap::new(false, true, linktype::ETHERNET, 128)
        .record(T0 as u32, 123_456_789, &a, 4200)
        .bytes();
    let (frames, warnings, _) = read_all(bytes);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].ts_ns, T0 * 1_000_000_000 + 123_456_789);
    assert_eq!(frames[0].orig_len, 4200);
    assert_eq!(frames[0].data.len(), 128);
}

#[test]
fn pcap_big_endian_both_resolutions() {
    for ns in [false, true] {
        let a = frame(42, 9);
        let bytes = Pcap::new(true, ns, linktype::LINUX_SLL, 262144)
            .record(T0 as u32, 5, &a, 42)
            .record(T0 as u32, 6, &a, 42)
            .bytes();
        let (frames, warnings, r) = read_all(bytes);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(r.interfaces()[0].linktype, linktype::LINUX_SLL);
        assert_eq!(r.interfaces()[0].snaplen, 262144);
        assert_eq!(frames.len(), 2);
        let unit = if ns { 1 } else { 1000 };
        assert_eq!(frames[0].ts_ns, T0 * 1_000_000_000 + 5 * unit);
        assert_eq!(frames[1].ts_ns, T0 * 1_000_000_000 + 6 * unit);
        assert_eq!(frames[1].data, a);
        assert_eq!(frames[1].linktype, linktype::LINUX_SLL);
    }
}

#[test]
fn pcap_link_types_sll_and_sll2_reported() {
    for lt in [linktype::LINUX_SLL, linktype::LINUX_SLL2] {
        let bytes = Pcap::new(false, false, lt, 65535)
            .record(1, 0, &frame(50, 0), 50)
            .bytes();
        let (frames, _, r) = read_all(bytes);
        assert_eq!(r.interfaces()[0].linktype, lt);
        assert_eq!(frames[0].linktype, lt);
    }
    // FCS bits in the upper part of the link-type field are masked off.
    let bytes = Pcap::new(false, false, 0x1000_0000 | linktype::ETHERNET, 65535)
        .record(1, 0, &frame(50, 0), 50)
        .bytes();
    let (frames, _, _) = read_all(bytes);
    assert_eq!(frames[0].linktype, linktype::ETHERNET);
}

#[test]
fn pcap_cut_mid_record_returns_frames_before_and_one_warning() {
    let full = Pcap::new(false, false, linktype::ETHERNET, 65535)
        .record(1, 0, &frame(60, 0), 60)
        .record(2, 0, &frame(70, 0), 70)
        .record(3, 0, &frame(80, 0), 80)
        .bytes();
    let third_at = (24 + 16 + 60 + 16 + 70) as u64;
    // Cut inside the third record's data, and inside its header.
    for cut in [full.len() - 10, third_at as usize + 7] {
        let (frames, warnings, _) = read_all(full[..cut].to_vec());
        assert_eq!(frames.len(), 2);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let w = &warnings[0];
        assert!(w.stopped);
        assert_eq!(w.offset, third_at);
        assert_eq!(w.frames_before, 2);
        let text = w.to_string();
        assert!(
            text.starts_with(&format!("test.pcap: at byte {third_at}: ")),
            "{text}"
        );
        assert!(text.contains("(analysed the 2 frames before it)"), "{text}");
    }
}

#[test]
fn pcap_header_only_has_no_frames() {
    let bytes = Pcap::new(false, false, linktype::ETHERNET, 65535).bytes();
    let (frames, warnings, _) = read_all(bytes);
    assert!(frames.is_empty());
    assert!(warnings.is_empty());
}

#[test]
fn pcap_absurd_caplen_stops() {
    let mut bytes = Pcap::new(false, false, linktype::ETHERNET, 65535)
        .record(1, 0, &frame(60, 0), 60)
        .bytes();
    let bad_at = bytes.len() as u64;
    for v in [2u32, 0, 0x7fff_ffff, 60] {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    bytes.extend_from_slice(&[0; 200]);
    let (frames, warnings, _) = read_all(bytes);
    assert_eq!(frames.len(), 1);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].stopped);
    assert_eq!(warnings[0].offset, bad_at);
    assert!(warnings[0].detail.contains("damaged"), "{}", warnings[0]);

    // Between MAX_CAPLEN and the buffer size: parsed, then refused.
    let big = vec![0u8; MAX_CAPLEN as usize + 1];
    let bytes = Pcap::new(false, false, linktype::ETHERNET, 0)
        .record(1, 0, &frame(60, 0), 60)
        .record(1, 0, &big, big.len() as u32)
        .bytes();
    let (frames, warnings, _) = read_all(bytes);
    assert_eq!(frames.len(), 1);
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].stopped);
}

#[test]
fn pcap_caplen_over_snaplen_is_kept_with_one_warning() {
    let bytes = Pcap::new(false, false, linktype::ETHERNET, 64)
        .record(1, 0, &frame(100, 0), 100)
        .record(1, 0, &frame(100, 0), 100)
        .bytes();
    let (frames, warnings, _) = read_all(bytes);
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[1].data.len(), 100);
    assert_eq!(warnings.len(), 1);
    assert!(!warnings[0].stopped);
}

#[test]
fn orig_len_never_below_captured() {
    let bytes = Pcap::new(false, false, linktype::ETHERNET, 65535)
        .record(1, 0, &frame(100, 0), 10)
        .bytes();
    let (frames, _, _) = read_all(bytes);
    assert_eq!(frames[0].orig_len, 100);
}

// ------------------------------------------------------------------ pcapng

#[test]
fn pcapng_two_interfaces_with_their_own_resolution_and_name() {
    let a = frame(60, 1);
    let b = frame(90, 2);
    let bytes = Ng::new(false)
        .idb(1, 65535, Some("eth0"), Some(6), None)
        .idb(276, 262144, Some("mirror1"), Some(9), None)
        .epb(0, T0 * 1_000_000 + 12, &a, 60)
        .epb(1, T0 * 1_000_000_000 + 345, &b, 1000)
        .epb(0, T0 * 1_000_000 + 13, &b, 90)
        .bytes();
    let len = bytes.len() as u64;
    let (frames, warnings, r) = read_all(bytes);
    // Frame 2 (T0 + 345 ns) is earlier than frame 1 (T0 + 12 µs).
    assert_only_backwards_warning(&warnings, 2);
    assert_eq!(
        r.interfaces(),
        &[
            Interface {
                name: Some("eth0".into()),
                linktype: 1,
                snaplen: 65535,
                drops: None,
            },
            Interface {
                name: Some("mirror1".into()),
                linktype: linktype::LINUX_SLL2,
                snaplen: 262144,
                drops: None,
            },
        ]
    );
    assert_eq!(frames.len(), 3);
    assert_eq!(frames[0].iface, 0);
    assert_eq!(frames[0].ts_ns, T0 * 1_000_000_000 + 12_000);
    assert_eq!(frames[0].data, a);
    assert_eq!(frames[1].iface, 1);
    assert_eq!(frames[1].linktype, linktype::LINUX_SLL2);
    assert_eq!(frames[1].ts_ns, T0 * 1_000_000_000 + 345);
    assert_eq!(frames[1].orig_len, 1000);
    assert_eq!(frames[1].data, b);
    assert_eq!(frames[2].number, 3);
    assert_eq!(frames[2].ts_ns, T0 * 1_000_000_000 + 13_000);
    assert_eq!(r.offset(), len);
}

/// Plain EPBs are read in place, EPBs with options by pcap-parser: one
/// sequence of frames either way, in both byte orders.
#[test]
fn pcapng_plain_and_optioned_packet_blocks_interleaved() {
    let mut ng = Ng::new(false).idb(1, 0, None, Some(9), None);
    let mut want = Vec::new();
    for section in 0..2u64 {
        if section == 1 {
            ng = ng.shb(true).idb(1, 0, None, Some(9), None);
        }
        for i in 0..6u64 {
            let data = frame(57 + i as usize, i as u8);
            let ts = T0 * 1_000_000_000 + section * 100 + i;
            ng = if i % 2 == 0 {
                ng.epb(0, ts, &data, 1000 + i as u32)
            } else {
                ng.epb_flagged(0, ts, &data, 1000 + i as u32)
            };
            want.push((section as u32, ts, 1000 + i as u32, data));
        }
    }
    let bytes = ng.bytes();
    let len = bytes.len() as u64;
    let (frames, warnings, r) = read_all(bytes);
    assert!(warnings.is_empty(), "{warnings:?}");
    let got: Vec<_> = frames
        .into_iter()
        .map(|f| (f.iface, f.ts_ns, f.orig_len, f.data))
        .collect();
    assert_eq!(got, want);
    assert_eq!(r.offset(), len);
}

#[test]
fn pcapng_power_of_two_resolution_and_offset() {
    // 2^-10 s units, 100 s offset.
    let bytes = Ng::new(false)
        .idb(1, 0, None, Some(0x80 | 10), Some(100))
        .epb(0, 3 * 1024 + 512, &frame(60, 0), 60)
        .bytes();
    let (frames, warnings, r) = read_all(bytes);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(r.interfaces()[0].name, None);
    assert_eq!(frames[0].ts_ns, 103_500_000_000);

    // A timestamp before the epoch (a negative offset) or past 2554 (1 s
    // units): an error naming the file, interface and block, after the
    // frames before it.
    for (resol, offset_s, good, bad) in [
        (None, -10, 20_000_000, 5_000_000),
        (Some(0), 0, 1_700_000_000, u64::MAX / 1000),
    ] {
        let before = Ng::new(false)
            .idb(1, 0, Some("eth7"), resol, Some(offset_s))
            .epb(0, good, &frame(60, 0), 60)
            .bytes();
        let at = before.len() as u64;
        let bytes = Ng::new(false)
            .idb(1, 0, Some("eth7"), resol, Some(offset_s))
            .epb(0, good, &frame(60, 0), 60)
            .epb(0, bad, &frame(60, 1), 60)
            .bytes();
        let mut r = reader(bytes);
        assert!(r.next_frame().expect("the first frame").is_some());
        let err = r.next_frame().expect_err("a timestamp that does not fit");
        assert!(
            matches!(err, Error::BadCapture { offset, .. } if offset == at),
            "{err:?}"
        );
        let text = err.to_string();
        assert!(
            text.starts_with("test.pcap: at byte ")
                && text.contains("frame 2 (interface 0 \"eth7\")")
                && text.contains(&format!("if_tsoffset {offset_s} s")),
            "{text}"
        );
        assert!(r.next_frame().expect("at the end").is_none());
    }

    // An unusable resolution: µs, with a warning.
    let bytes = Ng::new(false)
        .idb(1, 0, None, Some(20), None)
        .epb(0, 7, &frame(60, 0), 60)
        .bytes();
    let (frames, warnings, _) = read_all(bytes);
    assert_eq!(frames[0].ts_ns, 7000);
    assert_eq!(warnings.len(), 1);
    assert!(!warnings[0].stopped);
}

#[test]
fn pcapng_big_endian_and_several_sections() {
    let bytes = Ng::new(true)
        .idb(1, 65535, Some("be0"), Some(9), Some(1))
        .epb(0, 42, &frame(61, 0), 61)
        .shb(false)
        .idb(113, 65535, Some("le0"), None, None)
        .idb(1, 65535, Some("le1"), None, None)
        .epb(1, 5, &frame(62, 0), 62)
        .epb(0, 6, &frame(63, 0), 63)
        .shb(true)
        .idb(276, 65535, None, None, None)
        .pb(0, 8, &frame(64, 0), 64)
        .bytes();
    let (frames, warnings, r) = read_all(bytes);
    assert_only_backwards_warning(&warnings, 2);
    let names: Vec<_> = r.interfaces().iter().map(|i| i.name.clone()).collect();
    assert_eq!(
        names,
        [
            Some("be0".into()),
            Some("le0".into()),
            Some("le1".into()),
            None
        ]
    );
    let got: Vec<_> = frames
        .iter()
        .map(|f| (f.number, f.iface, f.linktype, f.ts_ns, f.data.len()))
        .collect();
    assert_eq!(
        got,
        [
            (1, 0, 1, 1_000_000_042, 61),
            (2, 2, 1, 5_000, 62),
            (3, 1, 113, 6_000, 63),
            (4, 3, 276, 8_000, 64),
        ]
    );
}

#[test]
fn pcapng_simple_packet_block_uses_interface_0() {
    let bytes = Ng::new(false)
        .idb(1, 100, Some("snap100"), None, None)
        .idb(113, 0, None, None, None)
        .epb(1, 77, &frame(60, 0), 60)
        .spb(&frame(150, 5), 150)
        .spb(&frame(61, 5), 60)
        .bytes();
    let (frames, warnings, _) = read_all(bytes);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(frames.len(), 3);
    // Captured length = min(original length, snaplen of interface 0).
    assert_eq!(frames[1].iface, 0);
    assert_eq!(frames[1].linktype, 1);
    assert_eq!(frames[1].data, frame(100, 5));
    assert_eq!(frames[1].orig_len, 150);
    // No timestamp of its own: the previous frame's.
    assert_eq!(frames[1].ts_ns, 77_000);
    assert_eq!(frames[2].data, frame(60, 5));
}

#[test]
fn pcapng_skips_unknown_and_other_blocks() {
    let bytes = Ng::new(false)
        .block(0x1234_5678, vec![1, 2, 3, 4, 5, 6, 7])
        .idb(1, 0, None, None, None)
        .block(4, vec![0, 0, 0, 0]) // NRB, only the end record
        .epb(0, 1, &frame(60, 0), 60)
        .block(0x0000_0BAD, vec![0xAA; 40]) // custom block
        .block(5, {
            let mut v = vec![0; 12];
            v.extend_from_slice(&[0; 4]);
            v
        }) // ISB
        .epb(0, 2, &frame(60, 0), 60)
        .bytes();
    let (frames, warnings, _) = read_all(bytes);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[1].number, 2);
}

#[test]
fn pcapng_streams_over_a_huge_non_packet_block() {
    let bytes = Ng::new(false)
        .idb(1, 0, None, None, None)
        .epb(0, 1, &frame(60, 0), 60)
        .block(0x1234_5678, vec![0x55; 3 * BUFFER_CAPACITY])
        .epb(0, 2, &frame(60, 0), 60)
        .bytes();
    let len = bytes.len() as u64;
    let (frames, warnings, r) = read_all(bytes.clone());
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(frames.len(), 2);
    assert_eq!(r.offset(), len);

    // The same, cut inside the huge block.
    let cut = bytes.len() - BUFFER_CAPACITY;
    let (frames, warnings, _) = read_all(bytes[..cut].to_vec());
    assert_eq!(frames.len(), 1);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].stopped);
    assert_eq!(warnings[0].offset, 28 + 24 + 92); // SHB + IDB + EPB
}

#[test]
fn pcapng_epb_interface_out_of_range_is_skipped() {
    let bytes = Ng::new(false)
        .idb(1, 0, None, None, None)
        .epb(0, 1, &frame(60, 0), 60)
        .epb(3, 2, &frame(60, 0), 60)
        .epb(0, 3, &frame(60, 0), 60)
        .bytes();
    let (frames, warnings, _) = read_all(bytes);
    assert_eq!(frames.iter().map(|f| f.number).collect::<Vec<_>>(), [1, 3]);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(!warnings[0].stopped);
    assert_eq!(warnings[0].offset, 28 + 24 + 92);
    assert!(
        warnings[0].detail.contains("interface 3"),
        "{}",
        warnings[0]
    );

    // Before any IDB: an SPB is skipped the same way.
    let bytes = Ng::new(false).spb(&frame(60, 0), 60).bytes();
    let (frames, warnings, _) = read_all(bytes);
    assert!(frames.is_empty());
    assert_eq!(warnings.len(), 1);
}

#[test]
fn pcapng_cut_mid_block() {
    let full = Ng::new(false)
        .idb(1, 0, None, None, None)
        .epb(0, 1, &frame(60, 0), 60)
        .epb(0, 2, &frame(60, 0), 60)
        .bytes();
    let second_at = (28 + 24 + 92) as u64;
    for cut in [
        full.len() - 1,
        second_at as usize + 5,
        second_at as usize + 40,
    ] {
        let (frames, warnings, _) = read_all(full[..cut].to_vec());
        assert_eq!(frames.len(), 1);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].stopped);
        assert_eq!(warnings[0].offset, second_at);
        assert_eq!(warnings[0].frames_before, 1);
    }
}

#[test]
fn pcapng_damaged_block_stops() {
    // An EPB whose captured length overruns the block.
    let mut bytes = Ng::new(false)
        .idb(1, 0, None, None, None)
        .epb(0, 1, &frame(60, 0), 60)
        .bytes();
    let bad_at = bytes.len();
    let good = Ng::new(false).epb(0, 2, &frame(60, 0), 60).bytes();
    let mut epb = good[28..].to_vec();
    epb[20..24].copy_from_slice(&500u32.to_le_bytes());
    bytes.extend_from_slice(&epb);
    bytes.extend_from_slice(&good[28..]);
    let (frames, warnings, _) = read_all(bytes);
    assert_eq!(frames.len(), 1);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].stopped);
    assert_eq!(warnings[0].offset, bad_at as u64);

    // A block length that is not a multiple of 4, or below 12.
    for blen in [13u32, 4] {
        let mut bytes = Ng::new(false).idb(1, 0, None, None, None).bytes();
        bytes.extend_from_slice(&6u32.to_le_bytes());
        bytes.extend_from_slice(&blen.to_le_bytes());
        bytes.extend_from_slice(&[0; 64]);
        let (frames, warnings, _) = read_all(bytes);
        assert!(frames.is_empty());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].stopped);
    }
}

#[test]
fn pcapng_block_shorter_than_its_header_stops_without_panic() {
    // Found by the reader fuzz target: a Process Information block
    // (0x80000001) whose length is 8 made pcap-parser subtract past zero.
    for btype in [0x8000_0001u32, 0x0000_0004, 0x0000_0005] {
        let mut bytes = Ng::new(false)
            .idb(1, 0, None, None, None)
            .epb(0, 1, &frame(60, 0), 60)
            .bytes();
        let bad_at = bytes.len();
        bytes.extend_from_slice(&btype.to_le_bytes());
        bytes.extend_from_slice(&8u32.to_le_bytes());
        bytes.extend_from_slice(&[0; 32]);
        let (frames, warnings, _) = read_all(bytes);
        assert_eq!(frames.len(), 1, "the frame before the damage is read");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].stopped);
        assert_eq!(warnings[0].offset, bad_at as u64);
    }
}

#[test]
fn pcapng_obsolete_packet_block() {
    let bytes = Ng::new(false)
        .idb(1, 0, None, Some(9), None)
        .pb(0, 1234, &frame(70, 0), 80)
        .pb(1, 1234, &frame(70, 0), 80)
        .bytes();
    let (frames, warnings, _) = read_all(bytes);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].ts_ns, 1234);
    assert_eq!(frames[0].orig_len, 80);
    assert_eq!(frames[0].data, frame(70, 0));
    assert_eq!(warnings.len(), 1);
}

#[test]
fn pcapng_oversized_frame_is_skipped() {
    let big = vec![0u8; MAX_CAPLEN as usize + 4];
    let bytes = Ng::new(false)
        .idb(1, 0, None, None, None)
        .epb(0, 1, &big, big.len() as u32)
        .epb(0, 2, &frame(60, 0), 60)
        .bytes();
    let (frames, warnings, _) = read_all(bytes);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].number, 2);
    assert_eq!(warnings.len(), 1);
    assert!(!warnings[0].stopped);
}

#[test]
fn warnings_are_capped() {
    let mut ng = Ng::new(false).idb(1, 0, None, None, None);
    for _ in 0..50 {
        ng = ng.epb(9, 1, &frame(60, 0), 60);
    }
    let (frames, warnings, _) = read_all(ng.bytes());
    assert!(frames.is_empty());
    assert_eq!(warnings.len(), MAX_WARNINGS + 1);
    assert!(
        warnings[MAX_WARNINGS]
            .detail
            .starts_with("30 more warnings")
    );
}

// ------------------------------------------------------------ bad files

/// One layer of compression is undone, not two (the `decompress` fuzz
/// target's finding: an lz4 stream holding a gzip stream): what the outer
/// layer holds is refused with a message that says it is compressed again.
#[test]
fn a_capture_compressed_twice_is_refused_saying_so() {
    use super::compress::tests::compressed;
    let plain = Pcap::new(false, false, linktype::ETHERNET, 65535)
        .record(T0 as u32, 0, &frame(60, 1), 60)
        .bytes();
    for outer in [Compression::Gzip, Compression::Zstd, Compression::Lz4] {
        for inner in [Compression::Gzip, Compression::Zstd, Compression::Lz4] {
            let once = compressed(inner, &plain);
            assert_eq!(all(&mut reader(once.clone())).len(), 1, "{inner} once");
            let err =
                CaptureReader::from_reader("x.pcap.gz", io::Cursor::new(compressed(outer, &once)))
                    .err()
                    .unwrap_or_else(|| panic!("{inner} inside {outer} read as a capture"));
            assert!(matches!(err, Error::NotACapture { .. }), "{err:?}");
            let text = err.to_string();
            assert!(
                text.contains(&format!("{outer}-compressed"))
                    && text.contains(&format!("{inner}'s magic number"))
                    && text.contains("compressed twice"),
                "{text}"
            );
        }
    }
}

#[test]
fn empty_file_and_wrong_magic_name_the_file() {
    let err = CaptureReader::from_reader("/tmp/x.pcap", io::Cursor::new(Vec::new()))
        .err()
        .unwrap();
    assert!(matches!(err, Error::NotACapture { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.starts_with("/tmp/x.pcap: "), "{text}");
    assert!(text.contains("empty"), "{text}");

    let err = CaptureReader::from_reader("y.cap", io::Cursor::new(b"hello world".to_vec()))
        .err()
        .unwrap();
    assert!(matches!(err, Error::NotACapture { .. }), "{err:?}");
    assert!(err.to_string().starts_with("y.cap: "));
    assert!(err.to_string().contains("68 65 6c 6c"), "{err}");

    let err = CaptureReader::from_reader("z.pcap.gz", io::Cursor::new(vec![0x1f, 0x8b, 8, 0, 0]))
        .err()
        .unwrap();
    let text = err.to_string();
    assert!(
        text.contains("gzip-compressed") && text.contains("cut"),
        "{err}"
    );

    let err = CaptureReader::from_reader("short", io::Cursor::new(vec![0xd4, 0xc3]))
        .err()
        .unwrap();
    assert!(matches!(err, Error::NotACapture { .. }), "{err:?}");

    // A pcap magic, then the file ends inside the header.
    let err = CaptureReader::from_reader(
        "cut.pcap",
        io::Cursor::new(vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0]),
    )
    .err()
    .unwrap();
    assert!(matches!(err, Error::NotACapture { .. }), "{err:?}");
    assert!(err.to_string().contains("header"), "{err}");

    // A damaged pcapng section header (bad byte-order magic).
    let mut bytes = Ng::new(false).bytes();
    bytes[8] = 0;
    let err = CaptureReader::from_reader("bad.pcapng", io::Cursor::new(bytes))
        .err()
        .unwrap();
    assert!(
        matches!(err, Error::BadCapture { offset: 0, .. }),
        "{err:?}"
    );
}

#[test]
fn open_errors_name_the_file() {
    let err = CaptureReader::open(Path::new("/nonexistent/dir/a.pcap"))
        .err()
        .unwrap();
    assert!(matches!(err, Error::Open { .. }), "{err:?}");
    assert!(err.to_string().starts_with("/nonexistent/dir/a.pcap: "));

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.pcap");
    std::fs::write(&path, b"").unwrap();
    let err = CaptureReader::open(&path).err().unwrap();
    assert!(matches!(err, Error::NotACapture { .. }), "{err:?}");
    assert!(err.to_string().contains("empty.pcap"));
}

/// Hands out one byte per read, with an `Interrupted` now and then.
struct Trickle {
    data: Vec<u8>,
    at: usize,
    calls: usize,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.calls += 1;
        if self.calls.is_multiple_of(7) {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "signal"));
        }
        if self.at >= self.data.len() || buf.is_empty() {
            return Ok(0);
        }
        buf[0] = self.data[self.at];
        self.at += 1;
        Ok(1)
    }
}

#[test]
fn short_reads_are_fine() {
    let bytes = Ng::new(false)
        .idb(1, 0, Some("x"), None, None)
        .epb(0, 1, &frame(60, 0), 60)
        .epb(0, 2, &frame(61, 0), 61)
        .bytes();
    let mut r = CaptureReader::from_reader(
        "pipe",
        Trickle {
            data: bytes,
            at: 0,
            calls: 0,
        },
    )
    .unwrap();
    let frames = all(&mut r);
    assert_eq!(frames.len(), 2);
    assert!(r.take_warnings().is_empty());
}

/// Fails after `ok` bytes.
struct Failing {
    data: Vec<u8>,
    at: usize,
    ok: usize,
}

impl Read for Failing {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at >= self.ok {
            return Err(io::Error::other("disk on fire"));
        }
        let n = buf
            .len()
            .min(self.ok - self.at)
            .min(self.data.len() - self.at);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[test]
fn io_error_is_an_error_with_the_offset() {
    let bytes = Pcap::new(false, false, linktype::ETHERNET, 65535)
        .record(1, 0, &frame(60, 0), 60)
        .record(2, 0, &frame(60, 0), 60)
        .bytes();
    let mut r = CaptureReader::from_reader(
        "disk.pcap",
        Failing {
            data: bytes,
            at: 0,
            ok: 24 + 76 + 10,
        },
    )
    .unwrap();
    // The buffered first frame comes out, then the error.
    let mut n = 0;
    let err = loop {
        match r.next_frame() {
            Ok(Some(_)) => n += 1,
            Ok(None) => panic!("expected an I/O error"),
            Err(e) => break e,
        }
    };
    assert_eq!(n, 1);
    assert!(matches!(err, Error::Read { offset: 100, .. }), "{err:?}");
    assert!(err.to_string().contains("disk on fire"), "{err}");
    assert!(r.next_frame().unwrap().is_none());
}

// ------------------------------------------------------------ real captures

/// The only warning is the once-per-file one about timestamps going
/// backwards, at frame `frame`.
fn assert_only_backwards_warning(warnings: &[Warning], frame: u64) {
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = &warnings[0];
    assert!(!w.stopped, "{w}");
    assert!(
        w.detail
            .starts_with(&format!("timestamps go backwards: frame {frame} is ")),
        "{w}"
    );
}

/// A real capture from `tests/data/`, if it is there.
fn shared_capture(name: &str) -> Option<std::path::PathBuf> {
    Some(crate::testdata::shared_capture(name)).filter(|p| p.exists())
}

#[test]
fn real_oferby_proxy_roce() {
    let path = shared_capture("oferby-proxy-roce.pcap")
        .expect("the real captures in tests/data/ (or the folder ROCESCOPE_CAPTURES names)");
    let mut r = CaptureReader::open(&path).unwrap();
    let mut n = 0u64;
    let mut roce = 0;
    let mut ts = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        n += 1;
        assert_eq!(f.number, n);
        assert_eq!(f.linktype, linktype::ETHERNET);
        assert_eq!(f.data.len() as u32, f.orig_len);
        ts.push(f.ts_ns);
        // IPv4 / UDP / dst port 4791
        let d = f.data;
        if d.len() > 37 && d[12..14] == [8, 0] && d[23] == 17 && d[36..38] == [0x12, 0xb7] {
            roce += 1;
        }
    }
    assert_eq!(n, 123);
    assert_eq!(roce, 105);
    // Frame 67 is stamped before frame 66: passed through as it is.
    assert_eq!(ts[66], 1_650_970_190_671_271_000);
    assert!(ts[66] < ts[65]);
    assert_only_backwards_warning(&r.take_warnings(), 67);
    assert_eq!(r.offset(), std::fs::metadata(&path).unwrap().len());
}

#[test]
fn real_connectx4lx_cnp_pcapng() {
    let path = shared_capture("connectx4lx-cnp.pcap")
        .expect("the real captures in tests/data/ (or the folder ROCESCOPE_CAPTURES names)");
    let mut r = CaptureReader::open(&path).unwrap();
    let f = r.next_frame().unwrap().expect("one frame");
    assert_eq!(f.number, 1);
    assert_eq!(f.iface, 0);
    assert_eq!(f.linktype, linktype::ETHERNET);
    assert_eq!(f.data.len(), 74);
    assert_eq!(f.orig_len, 74);
    assert!(r.next_frame().unwrap().is_none());
    assert_eq!(r.interfaces().len(), 1);
    assert_eq!(
        r.interfaces()[0].name.as_deref(),
        Some("Fake IF, text2pcap")
    );
    assert!(r.take_warnings().is_empty());
}

// ------------------------------------------------------------------ filter

/// Ethernet / IPv4 / UDP to `dport`, with `payload` bytes.
fn udp_frame(dport: u16, payload: usize) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x08, 0x00];
    let ip_len = (20 + 8 + payload) as u16;
    f.extend_from_slice(&[0x45, 0x00]);
    f.extend_from_slice(&ip_len.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    f.extend_from_slice(&1234u16.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&((8 + payload) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend(std::iter::repeat_n(0xAB, payload));
    f
}

fn fr(linktype: u32, data: &[u8], orig_len: u32) -> Frame<'_> {
    Frame {
        number: 1,
        iface: 0,
        ts_ns: 0,
        linktype,
        orig_len,
        offset: 0,
        data,
    }
}

#[test]
fn filter_udp_dst_port_4791() {
    let mut f = Filter::new("udp dst port 4791").unwrap();
    let roce = udp_frame(4791, 40);
    let other = udp_frame(53, 40);
    assert!(
        f.matches(&fr(linktype::ETHERNET, &roce, roce.len() as u32))
            .unwrap()
    );
    assert!(
        !f.matches(&fr(linktype::ETHERNET, &other, other.len() as u32))
            .unwrap()
    );
    // The same on Linux SLL (16-byte header, protocol at 14).
    let mut sll = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 2, 0, 0, 0x08, 0x00];
    sll.extend_from_slice(&roce[14..]);
    assert!(
        f.matches(&fr(linktype::LINUX_SLL, &sll, sll.len() as u32))
            .unwrap()
    );
    let mut sll_other = sll.clone();
    sll_other[16 + 22..16 + 24].copy_from_slice(&53u16.to_be_bytes());
    assert!(
        !f.matches(&fr(linktype::LINUX_SLL, &sll_other, sll.len() as u32))
            .unwrap()
    );
    // A frame cut before the port: no match, no crash.
    assert!(!f.matches(&fr(linktype::ETHERNET, &roce[..30], 82)).unwrap());
    assert!(!f.matches(&fr(linktype::ETHERNET, &[], 82)).unwrap());
}

#[test]
fn filter_len_uses_the_wire_length() {
    let mut f = Filter::new("greater 1000").unwrap();
    let roce = udp_frame(4791, 40);
    assert!(
        !f.matches(&fr(linktype::ETHERNET, &roce, roce.len() as u32))
            .unwrap()
    );
    assert!(f.matches(&fr(linktype::ETHERNET, &roce, 4096)).unwrap());
}

#[test]
fn filter_bad_expression() {
    let err = Filter::new("udp dst prot 4791").unwrap_err();
    match &err {
        Error::Filter { expr, detail } => {
            assert_eq!(expr, "udp dst prot 4791");
            assert!(!detail.is_empty());
        }
        e => panic!("{e:?}"),
    }
    assert!(err.to_string().contains("tcpdump syntax"), "{err}");
    assert!(matches!(Filter::new("a\0b"), Err(Error::Filter { .. })));
}

#[test]
fn filter_not_applicable_to_a_link_type() {
    // "ether" primitives do not exist on raw IP (LINKTYPE_RAW = 101).
    let mut f = Filter::new("ether host 02:00:00:00:00:01").unwrap();
    let roce = udp_frame(4791, 40);
    assert!(f.matches(&fr(linktype::ETHERNET, &roce, 82)).unwrap());
    let err = f.matches(&fr(101, &roce[14..], 68)).unwrap_err();
    assert!(matches!(err, Error::Filter { .. }), "{err:?}");
}

/// An ISB's drop counters reach the interface, in either byte order; the
/// latest ISB of an interface replaces the earlier one.
#[test]
fn pcapng_interface_statistics_give_the_captures_drops() {
    use crate::sources::InterfaceDrops;
    for be in [false, true] {
        let ng = Ng::new(be);
        let isb = |ng: &Ng, iface: u32, ifdrop: u64, osdrop: Option<u64>| {
            let w64 = |v: u64| if be { v.to_be_bytes() } else { v.to_le_bytes() };
            let w16 = |v: u16| if be { v.to_be_bytes() } else { v.to_le_bytes() };
            let mut v = Vec::new();
            for w in [iface, 0, 0] {
                v.extend_from_slice(&ng.w32(w));
            }
            let mut opts = vec![(5u16, ifdrop)];
            opts.extend(osdrop.map(|o| (7u16, o)));
            for (code, x) in opts {
                v.extend_from_slice(&w16(code));
                v.extend_from_slice(&w16(8));
                v.extend_from_slice(&w64(x));
            }
            v.extend_from_slice(&[0; 4]);
            v
        };
        let (first, second, other) = (
            isb(&ng, 0, 5, Some(1)),
            isb(&ng, 0, 9, None),
            isb(&ng, 1, 2, Some(0)),
        );
        let bytes = ng
            .idb(1, 0, None, None, None)
            .idb(1, 0, None, None, None)
            .epb(0, 1, &frame(60, 0), 60)
            .block(5, first)
            .block(5, second)
            .block(5, other)
            .bytes();
        let (frames, warnings, r) = read_all(bytes);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(frames.len(), 1);
        let drops: Vec<_> = r.interfaces().iter().map(|i| i.drops).collect();
        assert_eq!(
            drops,
            [
                Some(InterfaceDrops {
                    ifdrop: Some(9),
                    osdrop: None
                }),
                Some(InterfaceDrops {
                    ifdrop: Some(2),
                    osdrop: Some(0)
                }),
            ],
            "big-endian: {be}"
        );
    }
}
