//! tcpdump-syntax frame filter, compiled by libpcap.
//!
//! The expression is compiled once for Ethernet when the filter is made (so
//! a bad expression fails at once, with libpcap's message), then lazily for
//! each other link type the capture shows: a capture (pcapng) may mix link
//! types, and BPF code depends on the link-layer header.
//!
//! The pcap crate's `BpfProgram::filter` passes the captured length as
//! both `caplen` and `len`, which would make `len`, `greater` and `less`
//! test the captured length of a snaplen-cut frame. On 64-bit Linux the
//! filter calls libpcap's `pcap_offline_filter` itself with the frame's
//! true `orig_len`; elsewhere it falls back to `BpfProgram::filter`.
use std::collections::HashMap;

use pcap::{BpfProgram, Capture, Linktype};

use super::Frame;
use crate::error::{Error, Result};

/// A compiled capture filter (see the module docs).
pub struct Filter {
    expr: String,
    /// Per link type: the program, or libpcap's message when the
    /// expression does not apply to that link type.
    programs: HashMap<u32, std::result::Result<BpfProgram, String>>,
}

impl std::fmt::Debug for Filter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Filter").field("expr", &self.expr).finish()
    }
}

fn compile(expr: &str, linktype: u32) -> std::result::Result<BpfProgram, String> {
    use rocescope_common::proto::linktype as lt;
    // libpcap compiles for a DLT_* value: raw IP is DLT_RAW (12 on Linux),
    // whichever LINKTYPE_* number (101, or 12/14 from the BSDs) the file has.
    let linktype = match linktype {
        lt::RAW | lt::RAW_OPENBSD => lt::RAW_DLT,
        other => other,
    };
    let lt =
        i32::try_from(linktype).map_err(|_| format!("link type {linktype} is out of range"))?;
    let dead = Capture::dead(Linktype(lt)).map_err(|e| e.to_string())?;
    dead.compile(expr, true).map_err(|e| e.to_string())
}

impl Filter {
    /// Compiles `expr` (tcpdump syntax). A bad expression is
    /// [`Error::Filter`] with libpcap's message.
    pub fn new(expr: &str) -> Result<Filter> {
        let ethernet = rocescope_common::proto::linktype::ETHERNET;
        let program = compile(expr, ethernet).map_err(|detail| Error::Filter {
            expr: expr.to_string(),
            detail,
        })?;
        let mut programs = HashMap::new();
        programs.insert(ethernet, Ok(program));
        Ok(Filter {
            expr: expr.to_string(),
            programs,
        })
    }

    /// The expression as given.
    pub fn expr(&self) -> &str {
        &self.expr
    }

    /// Whether the frame passes the filter. [`Error::Filter`] when the
    /// expression cannot be compiled for the frame's link type.
    pub fn matches(&mut self, frame: &Frame<'_>) -> Result<bool> {
        let expr = &self.expr;
        let program = self
            .programs
            .entry(frame.linktype)
            .or_insert_with(|| compile(expr, frame.linktype));
        match program {
            Ok(p) => Ok(run(p, frame.data, frame.orig_len)),
            Err(detail) => Err(Error::Filter {
                expr: self.expr.clone(),
                detail: format!(
                    "it cannot be applied to link type {} (frame {}): {detail}",
                    frame.linktype, frame.number
                ),
            }),
        }
    }
}

#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn run(program: &BpfProgram, data: &[u8], orig_len: u32) -> bool {
    use std::ffi::{c_int, c_long, c_uint, c_void};

    /// `struct bpf_program` (libpcap's pcap/bpf.h).
    #[repr(C)]
    struct BpfProgramC {
        bf_len: c_uint,
        bf_insns: *const c_void,
    }
    /// `struct timeval` on 64-bit Linux.
    #[repr(C)]
    struct Timeval {
        tv_sec: c_long,
        tv_usec: c_long,
    }
    /// `struct pcap_pkthdr` (pcap/pcap.h).
    #[repr(C)]
    struct PktHdr {
        ts: Timeval,
        caplen: u32,
        len: u32,
    }
    unsafe extern "C" {
        fn pcap_offline_filter(prog: *const BpfProgramC, h: *const PktHdr, pkt: *const u8)
        -> c_int;
    }

    let insns = program.get_instructions();
    // `BpfInstruction` is `#[repr(transparent)]` over libpcap's `struct
    // bpf_insn`, so the slice is the instruction array libpcap compiled.
    let prog = BpfProgramC {
        bf_len: insns.len() as c_uint,
        bf_insns: insns.as_ptr().cast(),
    };
    let caplen = u32::try_from(data.len()).unwrap_or(u32::MAX);
    let hdr = PktHdr {
        ts: Timeval {
            tv_sec: 0,
            tv_usec: 0,
        },
        caplen,
        len: orig_len.max(caplen),
    };
    // SAFETY: `prog` points at `insns`, which `program` keeps alive for the
    // call; `hdr.caplen` is `data.len()`, and libpcap's BPF interpreter
    // reads packet bytes only below `caplen` (a load past it rejects the
    // packet).
    unsafe { pcap_offline_filter(&prog, &hdr, data.as_ptr()) > 0 }
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
fn run(program: &BpfProgram, data: &[u8], _orig_len: u32) -> bool {
    program.filter(data)
}
