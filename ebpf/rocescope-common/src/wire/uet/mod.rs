//! The UET transport's headers (Ultra Ethernet Transport, UE Specification
//! 1.0.1): typed views of the PDS headers ([`pds`]), the TSS encryption
//! header ([`tss`]) and the SES headers ([`ses`]), and [`over_udp`] /
//! [`over_ip`], which walk what follows UDP (port 4793 by default) or a
//! native IP header (the operator's protocol number, then a 4-byte entropy
//! header) from PDS to SES and say what they found. The shared walk
//! (`wire::walk`, the XDP program's and the userspace decoder's) runs the
//! same code through `Frame` ([`walk`]), filling the record's UET view.
//!
//! The layouts follow the 1.0.1 text as Wireshark master's
//! `epan/dissectors/packet-uet.c` reads it, checked against xdp2's
//! `src/include/uet/pds.h` and `ses.h`; docs/inputs.md ("UET") lists each
//! place the two differ and which was followed.
//!
//! `no_std`, no allocation; every read is bounds-checked (a short buffer is
//! an [`Error`], never a panic).
/// A field's value set as the specification names it: the enum (`u8`
/// values) and `from_u8`, `None` for a value it does not name.
macro_rules! wire_enum {
    ($(#[$m:meta])* pub enum $name:ident { $($(#[$vm:meta])* $var:ident = $val:expr,)+ }) => {
        $(#[$m])*
        #[repr(u8)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vm])* $var = $val,)+ }

        impl $name {
            /// The value `v` names, if the specification names it.
            pub const fn from_u8(v: u8) -> Option<$name> {
                $(if v == $val { return Some($name::$var); })+
                None
            }
        }
    };
}

pub mod build;
mod nack;
pub mod pds;
pub mod ses;
pub mod tss;
mod view;
pub(super) mod walk;

pub use self::pds::{CcState, ControlType, NackCode, Pds, PdsType};
pub use self::ses::{NextHeader, Opcode, ResponseOpcode, Ses};
pub use self::tss::Tss;
pub use self::view::{UetView, uet_present};

/// UET's UDP destination port (IANA); the source port is the entropy.
pub const UDP_PORT: u16 = 4793;

/// The IP protocol number the UEC reference provider gives UET's native
/// IP mode; not a default (IANA assigned none), a value to configure
/// (`--ip-proto`'s messages quote it).
pub const REFERENCE_IP_PROTOCOL: u8 = 253;

/// The native IP mode's entropy header: entropy (16 bits), reserved (16).
pub const ENTROPY_HEADER_LEN: usize = 4;
/// Where the entropy lies in it.
pub const ENTROPY: usize = 0;

impl crate::wire::Layer {
    /// The entropy header's layer's name in `summary.json` and messages
    /// (as the `uet_entropy` column's: the entropy is UET's).
    pub(crate) const ENTROPY_NAME: &'static str = "uet_entropy";
}

/// A header the walk reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Header {
    Entropy,
    /// The first 16 bits every PDS header starts with.
    PdsPrefix,
    Pds(PdsType),
    Tss,
    Ses(NextHeader),
}

/// Why a UET header could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The buffer ends before the header does.
    Truncated(Header),
    /// A type or next-header value the specification does not define.
    UnknownType(Header, u8),
}

/// What [`over_udp`] and [`over_ip`] found in one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found<'a> {
    /// Native IP mode: the entropy header's entropy (in UDP mode the
    /// entropy is the UDP source port, which the shared walk has).
    pub entropy: Option<u16>,
    /// The TSS header when the packet is encrypted; then `pds` and `ses`
    /// are `None` and the rest is only counted (`encrypted_len`).
    pub tss: Option<Tss<'a>>,
    pub encrypted_len: usize,
    pub pds: Option<Pds<'a>>,
    pub ses: Option<Ses<'a>>,
    /// Bytes after the last header read (the application payload, a
    /// CONTROL's nothing).
    pub payload_len: usize,
}

/// The UDP payload of a UET datagram (`payload`: what follows the UDP
/// header, as the UDP length bounds it), read by the walk the shared walk
/// runs ([`walk::packet`]).
pub fn over_udp(payload: &[u8]) -> Result<Found<'_>, Error> {
    found(payload, false)
}

/// A native IP mode packet: the IP payload, starting with the entropy
/// header.
pub fn over_ip(payload: &[u8]) -> Result<Found<'_>, Error> {
    found(payload, true)
}

/// [`walk::packet`] over `buf`, its headers handed out as views.
fn found(buf: &[u8], native: bool) -> Result<Found<'_>, Error> {
    let mut u = UetView::default();
    let len = buf.len();
    let read = walk::packet(buf, &mut (), &mut u, 0, len, len, native).map_err(|f| f.error)?;
    let tss = walk::tss_of(buf, &u, &read);
    let pds = match tss {
        Some(_) => None,
        None => Some(Pds::new_checked(buf.get(read.first..).unwrap_or(&[]))?),
    };
    let ses = match (read.ses, NextHeader::from_u8(u.next_header)) {
        (Some(at), Some(kind)) => Some(Ses::new_checked(buf.get(at..).unwrap_or(&[]), kind)?),
        _ => None,
    };
    let rest = len - read.after;
    Ok(Found {
        entropy: native.then_some(u.entropy),
        tss,
        encrypted_len: if tss.is_some() { rest } else { 0 },
        pds,
        ses,
        payload_len: if tss.is_some() { 0 } else { rest },
    })
}

// Reads that never panic: a view's constructor checked its length, and a
// read past the end (which would be a bug here) yields zeros.
#[inline(always)]
fn byte(b: &[u8], at: usize) -> u8 {
    b.get(at).copied().unwrap_or(0)
}

#[inline(always)]
fn be_n<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    match b.get(at..at.saturating_add(N)) {
        Some(s) => {
            let mut out = [0u8; N];
            out.copy_from_slice(s);
            out
        }
        None => [0u8; N],
    }
}

#[inline(always)]
fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(be_n(b, at))
}

#[inline(always)]
fn be24(b: &[u8], at: usize) -> u32 {
    let [x, y, z] = be_n::<3>(b, at);
    u32::from_be_bytes([0, x, y, z])
}

#[inline(always)]
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(be_n(b, at))
}

#[inline(always)]
fn be64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(be_n(b, at))
}

#[cfg(test)]
mod tests;
