//! The reader's per-file state, what looking at one block tells it to do
//! ([`Step`]), and the warnings it keeps (at most [`MAX_WARNINGS`], then
//! counted).
use std::path::PathBuf;

use super::timestamps::TsScale;
use super::{Interface, MAX_WARNINGS, Warning};
use crate::sources::compress::Compression;

pub(super) struct State {
    pub(super) path: PathBuf,
    /// The stream is decompressed (offsets are in the decompressed data).
    pub(super) decompressed: Option<Compression>,
    pub(super) interfaces: Vec<Interface>,
    pub(super) scales: Vec<TsScale>,
    /// Classic pcap: timestamps' fraction is in ns (else µs).
    pub(super) legacy_ns: bool,
    /// Classic pcap in the "modified" format (24-byte record headers).
    pub(super) legacy_modified: bool,
    /// Index in `interfaces` of the current pcapng section's interface 0.
    pub(super) section_base: usize,
    /// Current pcapng section is big-endian.
    pub(super) section_be: bool,
    pub(super) pcapng: bool,
    pub(super) warnings: Vec<Warning>,
    pub(super) warnings_noted: usize,
    pub(super) warnings_dropped: u64,
    pub(super) snaplen_warned: bool,
    /// A timestamp going backwards was warned about (once per file).
    pub(super) backwards_warned: bool,
    /// Link types warned about as not decoded (once per link type).
    pub(super) undecoded_warned: Vec<u32>,
    /// File offset of the first byte of the reader's buffered data.
    pub(super) pos: u64,
    /// Length of the block of the frame last returned, consumed on the next call.
    pub(super) pending: usize,
    pub(super) number: u64,
    pub(super) delivered: u64,
    pub(super) last_ts: u64,
    pub(super) done: bool,
}

/// What to do after looking at one block or parser result.
pub(super) enum Step {
    /// Return a frame: the block is `len` bytes; its captured bytes are at
    /// `start..start + caplen` of the buffered data.
    Frame {
        len: usize,
        start: usize,
        caplen: usize,
        meta: Meta,
    },
    /// Consume this many bytes and go on.
    Consume(usize),
    NeedData,
    Eof,
    /// A warning with `stopped` was pushed; end of the frames.
    Stop,
    TooLarge,
    Corrupt(String),
    /// A fault that ends the run: an error naming the block at the front.
    Fatal(String),
    Io,
}

#[derive(Clone, Copy)]
pub(super) struct Meta {
    pub(super) number: u64,
    pub(super) iface: u32,
    pub(super) ts_ns: u64,
    pub(super) linktype: u32,
    pub(super) orig_len: u32,
}

impl State {
    /// Warnings about a frame about to be returned (its block starts at `pos`).
    pub(super) fn on_frame(&mut self, meta: &Meta, data: &[u8]) {
        if meta.linktype == rocescope_common::proto::linktype::ERF
            && let Err(e) = crate::decode::erf::record(data)
        {
            self.warn(
                self.pos,
                format!(
                    "frame {} (interface {}) is a bad ERF record: {e}; it is skipped and counted",
                    meta.number, meta.iface
                ),
            );
        }
        if !self.backwards_warned && self.delivered > 0 && meta.ts_ns < self.last_ts {
            self.backwards_warned = true;
            self.warn(
                self.pos,
                format!(
                    "timestamps go backwards: frame {} is {} ns earlier than the frame before it; frames are analysed in file order (warned once per file)",
                    meta.number,
                    self.last_ts - meta.ts_ns
                ),
            );
        }
        if !crate::decode::decodes_linktype(meta.linktype)
            && self.undecoded_warned.len() < MAX_WARNINGS
            && !self.undecoded_warned.contains(&meta.linktype)
        {
            self.undecoded_warned.push(meta.linktype);
            self.warn(
                self.pos,
                format!(
                    "frame {} (interface {}) has link type {}, which rocescope does not decode (it reads {}): frames of this link type are skipped",
                    meta.number,
                    meta.iface,
                    meta.linktype,
                    crate::decode::DECODED_LINKTYPES
                ),
            );
        }
    }

    pub(super) fn warn(&mut self, offset: u64, detail: String) {
        if self.warnings_noted >= MAX_WARNINGS {
            self.warnings_dropped += 1;
            return;
        }
        self.warnings_noted += 1;
        self.warnings.push(Warning {
            path: self.path.clone(),
            offset,
            frames_before: self.delivered,
            detail,
            stopped: false,
            decompressed: self.decompressed,
        });
    }

    /// Stops at the block at the front of the buffer.
    pub(super) fn stop(&mut self, detail: String) {
        self.stop_at(self.pos, detail);
    }

    pub(super) fn stop_at(&mut self, offset: u64, detail: String) {
        self.warnings.push(Warning {
            path: self.path.clone(),
            offset,
            frames_before: self.delivered,
            detail,
            stopped: true,
            decompressed: self.decompressed,
        });
        self.finish();
    }

    pub(super) fn finish(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        if self.warnings_dropped > 0 {
            self.warnings.push(Warning {
                path: self.path.clone(),
                offset: self.pos,
                frames_before: self.delivered,
                detail: format!(
                    "{} more warnings like the ones above were not listed",
                    self.warnings_dropped
                ),
                stopped: false,
                decompressed: self.decompressed,
            });
        }
    }
}
