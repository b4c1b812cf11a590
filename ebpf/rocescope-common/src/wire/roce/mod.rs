//! The RoCE transport's walk: the InfiniBand transport headers (the BTH
//! and its extension headers) after each of its three encapsulations —
//! RoCEv2's UDP datagram ([`over_udp`]), RoCEv1's GRH straight in Ethernet
//! ([`grh`]) and native InfiniBand's LRH ([`walk_infiniband`]) — as the
//! registry (`wire::registry`) hands them over once the shared walk has
//! read the link layer, IP and UDP.
use crate::proto::{self, ib, udp};
use crate::wire::Foreign;
use crate::wire::{Frame, L3, Next, Span, Visit, Walked, be16, be24, be32, be64, field, ipv6_like};
use crate::wire::{Layer, Stop, traffic_class};
use crate::{Kind, PacketRecord, RoceView, flags};

/// RoCEv2: the UDP datagram at `l3.at + l3.l4_at`, `datagram_len` bytes
/// as its UDP and IP lengths declare them (the shared walk read the UDP
/// header and found the port RoCE's), the BTH `inserted` bytes after the
/// UDP header (switch telemetry in between: INT-MD, IFA metadata).
#[inline(always)]
pub(super) fn over_udp<F: Frame + ?Sized, V: Visit>(
    f: &F,
    rec: &mut PacketRecord,
    v: &mut V,
    w: &mut Walked,
    l3: &L3,
    datagram_len: usize,
    inserted: usize,
) -> Next {
    let seg = l3.at + l3.l4_at;
    const MIN_DATAGRAM: usize = udp::HEADER_LEN + ib::BTH_LEN + ib::ICRC_LEN;
    if datagram_len < MIN_DATAGRAM + inserted {
        claim(rec, Kind::Malformed);
        return Next::Stop(Stop::Invalid(Layer::Udp));
    }
    claim(rec, Kind::Roce);
    // What the capture holds of the datagram (Ethernet padding and FCS,
    // beyond the IP/UDP lengths, are not part of it).
    let dg_end = l3.end.min(seg + datagram_len);
    if dg_end - seg == datagram_len {
        if l3.icrc_computable {
            w.icrc = Some(Span {
                at: l3.at,
                end: dg_end,
            });
        }
    } else {
        w.cut = true;
    }
    transport_headers(
        f,
        rec,
        v,
        w,
        seg + udp::HEADER_LEN + inserted,
        dg_end,
        datagram_len - udp::HEADER_LEN - inserted,
    )
}

/// RoCEv1: the GRH, then the BTH and all after it, as RoCEv2 has them after
/// UDP. The GRH payload length bounds the transport headers the way the UDP
/// length does for RoCEv2.
#[inline(always)]
pub(super) fn grh<F: Frame + ?Sized, V: Visit>(
    f: &F,
    rec: &mut PacketRecord,
    v: &mut V,
    w: &mut Walked,
    at: usize,
    end: usize,
) -> Next {
    use field::grh as fg;
    let h = match ipv6_like(f, rec, v, Layer::Grh, at, end) {
        Ok(h) => h,
        Err(stop) => return stop,
    };
    rec.flags |= flags::HAS_GRH;
    // The TClass is the byte RoCEv2 carries as IP's traffic class (Annex
    // A17 maps one onto the other; the verbs' traffic_class sets either):
    // DSCP and ECN, as IPv6's. InfiniBand's GRH is not read so: there the
    // congestion mark is the BTH's FECN.
    traffic_class(rec, &h);
    if h[fg::NXTHDR] != ib::GRH_NXTHDR_BTH {
        return Next::Stop(Stop::Foreign(Foreign::GrhNextHeader));
    }
    let declared = usize::from(be16(&h, fg::PAYLEN));
    if declared < ib::BTH_LEN + ib::ICRC_LEN {
        claim(rec, Kind::Malformed);
        return Next::Stop(Stop::Invalid(Layer::Grh));
    }
    claim(rec, Kind::Roce);
    let bth = at + ib::GRH_LEN;
    let captured_end = end.min(bth + declared);
    if captured_end - bth == declared {
        w.icrc = Some(Span {
            at,
            end: captured_end,
        });
    } else {
        w.cut = true;
    }
    let (bth, captured_end, declared) = (f.opaque(bth), f.opaque(captured_end), f.opaque(declared));
    transport_headers(f, rec, v, w, bth, captured_end, declared)
}

/// A native InfiniBand packet from its LRH at `at` (LINKTYPE_INFINIBAND,
/// an ERF InfiniBand record's payload) into `rec` (whatever it held is
/// replaced): the LRH, the GRH when its LNH says so, then the BTH and all
/// after it. The LRH's `PktLen` bounds the transport headers the way the UDP
/// length does for RoCEv2. Userspace only: no XDP program sees InfiniBand.
#[inline]
pub fn walk_infiniband<F: Frame + ?Sized, V: Visit>(
    f: &F,
    rec: &mut PacketRecord,
    v: &mut V,
    at: usize,
    end: usize,
) -> Walked {
    f.reset(rec);
    let mut w = Walked::default();
    if let Next::Stop(s) = lrh(f, rec, v, &mut w, at, end) {
        w.stop = Some(s);
    }
    w
}

#[inline]
fn lrh<F: Frame + ?Sized, V: Visit>(
    f: &F,
    rec: &mut PacketRecord,
    v: &mut V,
    w: &mut Walked,
    at: usize,
    end: usize,
) -> Next {
    use field::lrh as fl;
    use proto::lrh;
    let Some(h) = f.load::<{ lrh::LRH_LEN }>(at, end) else {
        return Next::Stop(Stop::Cut(Layer::Lrh));
    };
    v.header(Layer::Lrh, at, at + lrh::LRH_LEN);
    let bth = match h[fl::SL_LNH] & fl::LNH_MASK {
        lrh::LNH_IBA_LOCAL => {
            rec.src_ip = lrh::lid_addr(be16(&h, fl::SLID));
            rec.dst_ip = lrh::lid_addr(be16(&h, fl::DLID));
            at + lrh::LRH_LEN
        }
        lrh::LNH_IBA_GLOBAL => {
            let g = match ipv6_like(f, rec, v, Layer::Grh, at + lrh::LRH_LEN, end) {
                Ok(g) => g,
                Err(stop) => return stop,
            };
            if g[field::grh::NXTHDR] != ib::GRH_NXTHDR_BTH {
                return Next::Stop(Stop::Foreign(Foreign::LinkNextHeader));
            }
            rec.flags |= flags::HAS_GRH;
            at + lrh::LRH_LEN + ib::GRH_LEN
        }
        _ => return Next::Stop(Stop::Foreign(Foreign::LinkNextHeader)),
    };
    rec.flags |= flags::IB_LRH;
    let packet_len = usize::from(be16(&h, fl::PKT_LEN) & fl::PKT_LEN_MASK) * lrh::PKT_LEN_UNIT;
    let headers = bth - at;
    if packet_len < headers + ib::BTH_LEN + ib::ICRC_LEN {
        claim(rec, Kind::Malformed);
        return Next::Stop(Stop::Invalid(Layer::Lrh));
    }
    claim(rec, Kind::Roce);
    let captured_end = end.min(at + packet_len);
    if captured_end - at == packet_len {
        w.icrc = Some(Span {
            at,
            end: captured_end,
        });
        if end - captured_end >= lrh::VCRC_LEN {
            w.vcrc = Some(Span {
                at: captured_end,
                end: captured_end + lrh::VCRC_LEN,
            });
        }
    } else {
        w.cut = true;
    }
    transport_headers(f, rec, v, w, bth, captured_end, packet_len - headers)
}

/// The record is RoCE's, of kind `kind` (the BTH may still make it a CNP).
#[inline(always)]
fn claim(rec: &mut PacketRecord, kind: Kind) {
    rec.kind = kind as u8;
    rec.roce_mut();
}

/// The BTH at `at` and everything after it: `declared` bytes up to the end
/// of the ICRC, of which the capture holds those before `end`.
#[inline(always)]
fn transport_headers<F: Frame + ?Sized, V: Visit>(
    f: &F,
    rec: &mut PacketRecord,
    v: &mut V,
    w: &mut Walked,
    at: usize,
    end: usize,
    declared: usize,
) -> Next {
    use field::bth as fb;
    let Some(b) = f.load::<{ ib::BTH_LEN }>(at, end) else {
        return Next::Stop(Stop::Cut(Layer::Bth));
    };
    v.header(Layer::Bth, at, at + ib::BTH_LEN);
    let opcode = b[fb::OPCODE];
    if opcode == ib::OPCODE_CNP {
        rec.kind = Kind::Cnp as u8;
    }
    let se_m_pad_tver = b[fb::SE_M_PAD_TVER];
    let pad_count = (se_m_pad_tver >> fb::PAD_SHIFT) & fb::PAD_MASK;
    let r = rec.roce_mut();
    r.opcode = opcode;
    r.pad_count = pad_count;
    r.tver = se_m_pad_tver & fb::TVER_MASK;
    r.pkey = be16(&b, fb::P_KEY);
    r.dest_qp = be24(&b, fb::DEST_QP);
    r.psn = be24(&b, fb::PSN);
    let mut fl = flags::HAS_BTH;
    if se_m_pad_tver & fb::SE != 0 {
        fl |= flags::SE;
    }
    if se_m_pad_tver & fb::MIGREQ != 0 {
        fl |= flags::MIGREQ;
    }
    if b[fb::FECN_BECN] & fb::FECN != 0 {
        fl |= flags::FECN;
    }
    if b[fb::FECN_BECN] & fb::BECN != 0 {
        fl |= flags::BECN;
    }
    if b[fb::ACKREQ] & fb::ACK_REQ != 0 {
        fl |= flags::ACK_REQ;
    }

    let ext = ib::ext_headers_se(opcode, se_m_pad_tver & fb::SE != 0);
    if ext & ib::ext::UNKNOWN != 0 {
        // A RoCE record all the same; what follows the BTH is unknown.
        rec.flags |= fl;
        return Next::Done;
    }
    let overhead = ib::BTH_LEN + ib::ext_headers_len(ext) + usize::from(pad_count) + ib::ICRC_LEN;
    let payload_len = declared.saturating_sub(overhead);

    // Extension headers live between the BTH and the ICRC.
    let before_icrc = end.min(at + declared - ib::ICRC_LEN);
    let (after, ext_fl) = ext_headers(f, r, v, ext, at + ib::BTH_LEN, before_icrc);
    rec.payload_len = payload_len as u32;
    rec.flags |= fl | flags::HAS_PAYLOAD_LEN | ext_fl;
    match after {
        Some(after) => {
            w.payload = Span {
                at: after,
                end: before_icrc.min(after + payload_len),
            };
            Next::Done
        }
        None => Next::Stop(Stop::Cut(Layer::ExtHeaders)),
    }
}

/// The extension headers in `mask`, in spec order, while each is whole
/// before `end`, into `r`: where they end, or `None` when one was cut, and
/// the `flags` of those read (a cut one's and the following ones' stay
/// clear).
#[inline(always)]
fn ext_headers<F: Frame + ?Sized, V: Visit>(
    f: &F,
    r: &mut RoceView,
    v: &mut V,
    mask: u16,
    at: usize,
    end: usize,
) -> (Option<usize>, u32) {
    use ib::ext;
    let mut at = f.opaque(at);
    let end = f.opaque(end);
    let mask = f.opaque(usize::from(mask)) as u16;
    let mut fl = 0;
    macro_rules! take {
        ($bit:expr, $len:expr, |$h:ident| $fill:block) => {
            if mask & $bit != 0 {
                let Some($h) = f.load::<{ $len }>(at, end) else {
                    return (None, fl);
                };
                v.header(Layer::ExtHeaders, at, at + $len);
                $fill
                at += $len;
            }
        };
    }
    // The DC headers of the RD range, RDETH, XRCETH and FETH have no
    // record fields: read only to find what follows.
    take!(ext::DC_BTH, ib::DC_BTH_LEN, |_h| {});
    take!(ext::DCCETH, ib::DCCETH_LEN, |_h| {});
    take!(ext::RDETH, ib::RDETH_LEN, |_h| {});
    take!(ext::DETH, ib::DETH_LEN, |h| {
        r.deth_qkey = be32(&h, field::deth::Q_KEY);
        r.deth_src_qp = be24(&h, field::deth::SRC_QP);
        fl |= flags::HAS_DETH;
    });
    take!(ext::XRCETH, ib::XRCETH_LEN, |_h| {});
    take!(ext::FETH, ib::FETH_LEN, |_h| {});
    take!(ext::RETH, ib::RETH_LEN, |h| {
        r.reth_va = be64(&h, field::reth::VA);
        r.reth_rkey = be32(&h, field::reth::R_KEY);
        r.reth_len = be32(&h, field::reth::DMA_LEN);
        fl |= flags::HAS_RETH;
    });
    take!(ext::ATOMIC_ETH, ib::ATOMIC_ETH_LEN, |h| {
        use field::atomic_eth as fa;
        r.atomic_va = be64(&h, fa::VA);
        r.atomic_rkey = be32(&h, fa::R_KEY);
        r.atomic_swap_add = be64(&h, fa::SWAP_ADD_DATA);
        r.atomic_compare = be64(&h, fa::COMPARE_DATA);
        fl |= flags::HAS_ATOMIC_ETH;
    });
    take!(ext::AETH, ib::AETH_LEN, |h| {
        r.aeth_syndrome = h[field::aeth::SYNDROME];
        r.aeth_msn = be24(&h, field::aeth::MSN);
        fl |= flags::HAS_AETH;
    });
    take!(ext::ATOMIC_ACK_ETH, ib::ATOMIC_ACK_ETH_LEN, |h| {
        r.atomic_orig = be64(&h, field::atomic_ack_eth::ORIG_REM_DT);
        fl |= flags::HAS_ATOMIC_ACK_ETH;
    });
    take!(ext::IMMDT, ib::IMMDT_LEN, |h| {
        r.imm = be32(&h, field::immdt::IMMEDIATE_DATA);
        fl |= flags::HAS_IMMDT;
    });
    take!(ext::IETH, ib::IETH_LEN, |h| {
        r.ieth_rkey = be32(&h, field::ieth::R_KEY);
        fl |= flags::HAS_IETH;
    });
    (Some(at), fl)
}
