//! Frame sources: the pcap / pcapng capture reader, the BPF filter, and for
//! several captures the merge by time ([`Merge`]) and their grouping into
//! taps ([`Taps`], `--tap`; docs/inputs.md, "Several inputs").
//!
//! ```no_run
//! use rocescope::sources::{CaptureReader, Filter};
//! # fn main() -> rocescope::Result<()> {
//! let mut reader = CaptureReader::open("capture.pcapng".as_ref())?;
//! let mut filter = Filter::new("udp dst port 4791")?;
//! while let Some(frame) = reader.next_frame()? {
//!     if filter.matches(&frame)? {
//!         // decode frame.data (frame.linktype) ...
//!     }
//! }
//! for warning in reader.take_warnings() {
//!     eprintln!("warning: {warning}");
//! }
//! # Ok(()) }
//! ```
//!
//! # Decisions where the brief was silent
//!
//! * **Errors vs warnings.** A file that cannot be read from its start (empty,
//!   unknown magic, cut or damaged file header / first section header) is an
//!   `Err` ([`crate::Error::NotACapture`] or [`crate::Error::BadCapture`]).
//!   Anything wrong later is a [`Warning`]: either the reader *stops* there
//!   (`Ok(None)`, `Warning::stopped`, everything before it was returned) or it
//!   *skips* one frame and reads on. An I/O error while reading (EIO, …) is an
//!   `Err` ([`crate::Error::Read`]) with the byte offset; the frames before it
//!   were returned.
//! * **Stop** (framing can no longer be trusted): the file ends inside a
//!   record or block; a classic pcap record claims more than [`MAX_CAPLEN`]
//!   (256 KiB, libpcap's maximum) captured bytes; a pcapng block that does
//!   not parse within its own length, whose length is not a multiple of 4, or
//!   a packet / interface / section block larger than the reader's
//!   [`BUFFER_CAPACITY`] (1 MiB); more than [`MAX_INTERFACES`] interfaces.
//! * **Skip one frame** (the block's length checked out, so the next block
//!   is found): an EPB / obsolete Packet Block naming an interface its
//!   section did not declare, an SPB before any interface, a pcapng frame
//!   with more than [`MAX_CAPLEN`] captured bytes.
//! * **Large non-packet pcapng blocks** (e.g. decryption secrets, custom
//!   blocks) larger than the buffer are streamed over, not loaded.
//! * **Kept with a warning**: a frame with more captured bytes than its
//!   interface's snaplen (warned once per file, bytes kept); an IDB whose
//!   `if_tsresol` is no usable resolution (its timestamps taken as µs).
//! * **Warning flood**: at most [`MAX_WARNINGS`] non-fatal warnings per file;
//!   one last warning counts the ones not listed.
//! * **Frame numbers** count every packet record, skipped ones included,
//!   so they match Wireshark's numbering.
//! * **Interfaces over several pcapng sections**: [`Frame::iface`] indexes
//!   [`CaptureReader::interfaces`], which lists the interfaces of all
//!   sections in file order (a section's interface ids are local to it).
//! * **Timestamps**: classic pcap's `thiszone` is ignored (every tool writes
//!   0, as libpcap does); pcapng `if_tsresol` 10^-n and 2^-n and `if_tsoffset`
//!   (seconds) are applied; a result before 1970 or past the u64 ns range
//!   (2554) is an error ([`crate::Error::BadCapture`]) naming the file,
//!   interface and byte offset, from `next_frame` (the frames before it
//!   were returned): a made-up time would misplace every interval. An SPB
//!   has no timestamp: it gets the previous frame's (0 for the first).
//!   Timestamps going backwards are passed through, with one warning per
//!   file (at the first frame earlier than the one before it).
//! * **Lengths**: [`Frame::orig_len`] is never less than the captured length
//!   (a record claiming otherwise gets `orig_len = data.len()`). An SPB's
//!   captured length is min(original length, its data, snaplen of
//!   interface 0).
//! * **Link types** are reported as the file gives them (upper FCS bits of
//!   classic pcap's link-type field masked off); the decoder handles
//!   Ethernet, Linux SLL and SLL2. The first frame of any other link type
//!   gets a warning (once per link type and file): its frames are skipped.
//! * **Reads** fill the whole buffer before parsing (retrying on
//!   `Interrupted`), so from a pipe frames come out in 1 MiB batches; an I/O
//!   error after some bytes is reported once those bytes are used up.
//! * **Memory** is one [`BUFFER_CAPACITY`] buffer plus one [`Interface`] per
//!   declared interface; no allocation follows a length read from the file.
mod compress;
mod filter;
mod frame_time;
mod input;
mod merge;
mod reader;
mod sniffer_clock;
mod taps;
mod wrap;

pub use compress::Compression;
pub use filter::Filter;
pub use frame_time::{Clock, FileTime, FrameTimes, TimeChoice, TimeFacts, erspan_ns};
pub use input::{Input, Inputs, capture_stem, skipped};
pub use merge::{FirstLook, HeldFrame, Merge, Next, Visit};
pub use reader::{
    BUFFER_CAPACITY, CaptureReader, Frame, Interface, InterfaceDrops, MAX_CAPLEN, MAX_INTERFACES,
    MAX_WARNINGS, Warning,
};
pub use sniffer_clock::{SnifferClock, Survey, mac_value};
pub use taps::{Grouping, TapFacts, TapSpec, Taps};

#[cfg(test)]
mod tests;
