//! UET's walk through [`Frame`]: what follows the UDP header (UDP mode) or
//! the IP header (native IP mode, the entropy header first), from the PDS
//! (or TSS) header to the SES header, into the record's UET view. The
//! XDP program and the userspace decoder run it inside the shared walk
//! ([`over_udp`], [`over_ip`]); the slice functions of the module
//! (`uet::over_udp`, `uet::over_ip`) run the same [`packet`] over a byte
//! slice and hand out the header views.
//!
//! Each header is loaded whole into a stack buffer by one bounds-checked
//! [`Frame::load_into`] of its constant length (the kernel cannot read a
//! length it only knows at run time), then read through the typed views
//! of [`super::pds`], [`super::ses`] and [`super::tss`] over that buffer.
use super::{ENTROPY, ENTROPY_HEADER_LEN, Error, Header, NextHeader, Pds, PdsType, Ses, pds, ses};
use super::{Tss, tss};
use super::{UetView, uet_present as present};
use crate::proto::udp;
use crate::wire::{Frame, L3, Layer, Next, Span, Stop, Visit, Walked};
use crate::{Kind, PacketRecord, flags};

/// The longest PDS header (ACK_CCX) and SES header (a standard request).
const PDS_MAX: usize = pds::ACK_CCX_LEN;
const SES_MAX: usize = ses::STANDARD_LEN;
const _: () = assert!(PDS_MAX >= tss::WITH_SSI_LEN);

/// Where [`packet`] found the headers it read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Read {
    /// The PDS (or TSS) header's first byte.
    pub first: usize,
    /// The SES header's first byte, when there is one.
    pub ses: Option<usize>,
    /// The first byte after the last header read.
    pub after: usize,
}

/// Why [`packet`] stopped: as the slice functions report it, and as the
/// shared walk counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Fail {
    pub error: Error,
    pub stop: Stop,
}

/// UDP mode: the UDP datagram at `l3.at + l3.l4_at`, `datagram_len` bytes
/// as its UDP and IP lengths declare them (the shared walk read the UDP
/// header, found UET's port and set `udp_sport`), the PDS header
/// `inserted` bytes after the UDP header (switch telemetry in between).
/// The UDP source port is the entropy.
#[inline(always)]
pub(in crate::wire) fn over_udp<F: Frame + ?Sized, V: Visit>(
    f: &F,
    rec: &mut PacketRecord,
    v: &mut V,
    w: &mut Walked,
    l3: &L3,
    datagram_len: usize,
    inserted: usize,
) -> Next {
    let seg = l3.at + l3.l4_at;
    let declared_end = seg + datagram_len;
    let entropy = rec.udp_sport;
    let u = claim(rec);
    u.entropy = entropy;
    u.present |= present::ENTROPY;
    let at = seg + udp::HEADER_LEN + inserted;
    let end = l3.end.min(declared_end);
    headers(f, rec, v, w, at, end, declared_end, false)
}

/// Native IP mode: the IP payload at `l3.at + l3.l4_at`, `l3.declared`
/// bytes as the IP header declares them: the entropy header, then PDS.
#[inline(always)]
pub(in crate::wire) fn over_ip<F: Frame + ?Sized, V: Visit>(
    f: &F,
    rec: &mut PacketRecord,
    v: &mut V,
    w: &mut Walked,
    l3: &L3,
) -> Next {
    claim(rec);
    let at = l3.at + l3.l4_at;
    // A first fragment holds the packet's start only: what its headers
    // leave is in the next fragments, so no length is declared here.
    let declared_end = if l3.first_fragment {
        usize::MAX
    } else {
        at + l3.declared
    };
    headers(f, rec, v, w, at, l3.end, declared_end, true)
}

/// The record is UET's, of kind `Uet`: its view, emptied.
#[inline(always)]
fn claim(rec: &mut PacketRecord) -> &mut UetView {
    rec.kind = Kind::Uet as u8;
    rec.uet_mut()
}

/// [`packet`] into `rec`, and what the walk reports: the payload span,
/// `payload_len` when the packet's length is declared, a cut datagram.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn headers<F: Frame + ?Sized, V: Visit>(
    f: &F,
    rec: &mut PacketRecord,
    v: &mut V,
    w: &mut Walked,
    at: usize,
    end: usize,
    declared_end: usize,
    native: bool,
) -> Next {
    let (at, end) = (f.opaque(at), f.opaque(end));
    let known = declared_end != usize::MAX;
    if end < declared_end {
        w.cut = true;
    }
    match packet(f, v, rec.uet_mut(), at, end, declared_end, native) {
        Ok(read) => {
            w.payload = Span {
                at: read.after,
                end: end.max(read.after),
            };
            if known {
                rec.payload_len = (declared_end - read.after) as u32;
                rec.flags |= flags::HAS_PAYLOAD_LEN;
            }
            Next::Done
        }
        Err(fail) => Next::Stop(fail.stop),
    }
}

/// UET's headers from `at`: with `native`, the entropy header first; then
/// a TSS header (and nothing more: the rest is encrypted) or a PDS header
/// and the SES header its next header names. Whole headers lie before
/// `end`; the packet ends at `declared_end` as its length fields say (a
/// header that does not fit there is invalid, one the capture ends inside
/// is cut). Fills `u` as far as headers were whole.
#[inline(always)]
pub(super) fn packet<F: Frame + ?Sized, V: Visit>(
    f: &F,
    v: &mut V,
    u: &mut UetView,
    mut at: usize,
    end: usize,
    declared_end: usize,
    native: bool,
) -> Result<Read, Fail> {
    // A header of `len` bytes at `at` that could not be loaded.
    let missing = |at: usize, len: usize, layer: Layer, header: Header| Fail {
        error: Error::Truncated(header),
        stop: if at.saturating_add(len) > declared_end {
            Stop::Invalid(layer)
        } else {
            Stop::Cut(layer)
        },
    };
    let invalid = |layer: Layer, header: Header, value: u8| Fail {
        error: Error::UnknownType(header, value),
        stop: Stop::Invalid(layer),
    };
    if native {
        let Some(e) = f.load::<ENTROPY_HEADER_LEN>(at, end) else {
            let l = ENTROPY_HEADER_LEN;
            return Err(missing(at, l, Layer::Entropy, Header::Entropy));
        };
        v.header(Layer::Entropy, at, at + ENTROPY_HEADER_LEN);
        u.entropy = u16::from_be_bytes([e[ENTROPY], e[ENTROPY + 1]]);
        u.present |= present::ENTROPY;
        at += ENTROPY_HEADER_LEN;
    }
    let first = at;
    let Some(p) = f.load::<{ pds::PREFIX_LEN }>(at, end) else {
        return Err(missing(at, pds::PREFIX_LEN, Layer::Pds, Header::PdsPrefix));
    };
    let prefix = u16::from_be_bytes(p);
    let raw_type = (prefix >> pds::field::TYPE_SHIFT) as u8;
    u.pds_type = raw_type;
    u.present |= present::PDS;

    let mut buf = [0u8; PDS_MAX];
    // A TSS header's other prefix bits are its SP and AN, not a PDS's
    // next header and flags: those stay 0.
    if raw_type == tss::TYPE {
        // Type, SP, AN and SDI in the first word say how long it is.
        let Some(w0) = f.load::<4>(at, end) else {
            return Err(missing(at, tss::BASE_LEN, Layer::Tss, Header::Tss));
        };
        let sp = u32::from_be_bytes(w0) & tss::field::SP != 0;
        let len = if sp { tss::WITH_SSI_LEN } else { tss::BASE_LEN };
        if !load_header(f, at, end, len, &mut buf) {
            return Err(missing(at, len, Layer::Tss, Header::Tss));
        }
        v.header(Layer::Tss, at, at + len);
        u.present |= present::TSS;
        return Ok(Read {
            first,
            ses: None,
            after: at + len,
        });
    }
    u.next_header =
        ((prefix >> pds::field::NEXT_HEADER_SHIFT) & pds::field::NEXT_HEADER_MASK) as u8;
    u.pds_flags = (prefix & pds::field::FLAGS_MASK) as u8;
    let Some(t) = PdsType::from_u8(raw_type) else {
        return Err(invalid(Layer::Pds, Header::PdsPrefix, raw_type));
    };
    let len = t.header_len();
    if !load_header(f, at, end, len, &mut buf) {
        return Err(missing(at, len, Layer::Pds, Header::Pds(t)));
    }
    v.header(Layer::Pds, at, at + len);
    let Some(h) = buf.get(..len) else {
        return Err(missing(at, len, Layer::Pds, Header::Pds(t)));
    };
    let pds = match Pds::new_checked(h) {
        Ok(pds) => pds,
        Err(error) => {
            return Err(Fail {
                error,
                stop: Stop::Invalid(Layer::Pds),
            });
        }
    };
    fill_pds(u, &pds);
    at = f.opaque(at + len);
    // CONTROL's next-header bits are its control type: no SES follows.
    if t == PdsType::Control {
        return Ok(Read {
            first,
            ses: None,
            after: at,
        });
    }
    let kind = match NextHeader::from_u8(u.next_header) {
        Some(NextHeader::None) => {
            return Ok(Read {
                first,
                ses: None,
                after: at,
            });
        }
        Some(kind) => kind,
        None => return Err(invalid(Layer::Pds, Header::PdsPrefix, u.next_header)),
    };
    let len = kind.header_len();
    let mut buf = [0u8; SES_MAX];
    if !load_header(f, at, end, len, &mut buf) {
        return Err(missing(at, len, Layer::Ses, Header::Ses(kind)));
    }
    v.header(Layer::Ses, at, at + len);
    let Some(Ok(s)) = buf.get(..len).map(|h| Ses::new_checked(h, kind)) else {
        return Err(missing(at, len, Layer::Ses, Header::Ses(kind)));
    };
    fill_ses(u, &s);
    Ok(Read {
        first,
        ses: Some(at),
        after: at + len,
    })
}

/// The `len` bytes at `at` (before `end`) into the start of `buf`, by one
/// load of a constant length: one of the header lengths UET defines.
#[inline(always)]
fn load_header<F: Frame + ?Sized, const MAX: usize>(
    f: &F,
    at: usize,
    end: usize,
    len: usize,
    buf: &mut [u8; MAX],
) -> bool {
    macro_rules! sized {
        ($($n:literal)*) => {
            match len {
                $($n => match buf.first_chunk_mut::<$n>() {
                    Some(dst) => f.load_into::<$n>(at, end, dst),
                    None => false,
                },)*
                _ => false,
            }
        };
    }
    // PDS 4, 8, 12, 16, 32, 40; TSS 12, 16; SES 4, 12, 20, 32, 44.
    sized!(4 8 12 16 20 32 40 44)
}

/// The PDS header's fields into `u` (the prefix's are there already).
#[inline(always)]
fn fill_pds(u: &mut UetView, p: &Pds<'_>) {
    if let Some(psn) = p.psn() {
        u.psn = psn;
        u.present |= present::PSN;
    }
    if let Some(id) = p.spdcid() {
        u.spdcid = id;
        u.present |= present::PDC;
    }
    if let Some(id) = p.dpdcid() {
        u.dpdcid = id;
        u.present |= present::DPDCID;
    }
    if let (Some(ccc_id), Some(target)) = (p.ccc_id(), p.credit_target()) {
        u.ccc_id = ccc_id;
        u.credit_target = target;
        u.present |= present::REQUEST_CC;
    }
    if let Some(id) = p.rudi_pkt_id() {
        u.pkt_id = id;
        u.present |= present::PKT_ID;
    }
    if let (Some(cack), Some(ack)) = (p.cack_psn(), p.ack_psn()) {
        u.cack_psn = cack;
        u.ack_psn = ack;
        u.present |= present::ACK;
        if let (Some(offset), Some(bitmap)) = (p.sack_psn_offset(), p.sack_bitmap()) {
            u.sack_base = cack.wrapping_add(u32::from(offset));
            u.sack_bitmap = bitmap;
            u.present |= present::SACK;
        }
    }
    if let (Some(cc_type), Some(state)) = (p.cc_type(), p.cc_state_raw()) {
        u.cc_type = cc_type;
        u.cc_state = state;
        u.present |= present::CC;
    }
    if let Some(code) = p.nack_code_raw() {
        u.nack_code = code;
        u.present |= present::NACK;
    }
}

/// The SES header's fields into `u`.
#[inline(always)]
fn fill_ses(u: &mut UetView, s: &Ses<'_>) {
    u.ses_opcode = s.opcode_raw();
    u.ses_flags = s.flags_byte();
    u.present |= present::SES;
    if let Some(id) = s.message_id() {
        u.message_id = id;
        u.present |= present::MESSAGE_ID;
    }
    if let Some(id) = s.job_id() {
        u.job_id = id;
        u.present |= present::JOB_ID;
    }
}

/// The TSS header at `read.first` of `buf`, when [`packet`] read one.
pub(super) fn tss_of<'a>(buf: &'a [u8], u: &UetView, read: &Read) -> Option<Tss<'a>> {
    if u.present & present::TSS == 0 {
        return None;
    }
    Tss::new_checked(buf.get(read.first..)?).ok()
}
