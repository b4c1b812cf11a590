//! Native InfiniBand packets, as LINKTYPE_INFINIBAND (247) captures hold
//! them and `ibdump` writes them in ERF records (LINKTYPE_ERF 197, record
//! type InfiniBand): LRH, an optional GRH, then the BTH, extension headers,
//! payload and pad as [`super::frame`] writes them for RoCE, the ICRC (IB
//! rules) and the VCRC. See docs/synth.md, "InfiniBand packets".
//!
//! ```
//! use rocescope::synth::ib_frame::{IbFrame, erf_record};
//! use rocescope::synth::frame::WireFrame;
//! let mut pkt = Vec::new();
//! let mut f = IbFrame::default(); // RC SEND Only, LID 2 -> LID 1, no GRH
//! f.payload_len = 8;
//! f.write(&mut pkt);
//! assert_eq!(pkt.len(), 8 + 12 + 8 + 4 + 2);
//! let mut rec = Vec::new();
//! erf_record(1_700_000_000_000_000_000, &pkt, &mut rec);
//! assert_eq!(rec.len(), 16 + pkt.len());
//! ```
use rocescope_common::proto::{erf, ib, lrh};
use rocescope_common::wire::field::lrh as fl;

pub use super::frame::GrhFields;
use super::frame::{Bth, ExtHeaders, IcrcMode, WireFrame};
use crate::transport::roce::lrh::{icrc, vcrc};

/// Local Route Header values (LNH follows from [`IbFrame::grh`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LrhFields {
    /// Virtual lane (4 bits).
    pub vl: u8,
    /// Link version (4 bits, 0).
    pub lver: u8,
    /// Service level (4 bits).
    pub sl: u8,
    pub dlid: u16,
    pub slid: u16,
}

impl Default for LrhFields {
    fn default() -> Self {
        LrhFields {
            vl: 0,
            lver: 0,
            sl: 0,
            dlid: 1,
            slid: 2,
        }
    }
}

/// A native InfiniBand packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IbFrame {
    pub lrh: LrhFields,
    /// `Some`: LNH says a GRH follows (IBA global); `None`: IBA local.
    pub grh: Option<GrhFields>,
    pub bth: Bth,
    pub ext: ExtHeaders,
    /// Payload bytes after the extension headers; byte `i` is
    /// `payload_seed + i` (mod 256).
    pub payload_len: usize,
    pub payload_seed: u8,
    pub icrc: IcrcMode,
    /// The VCRC: `Valid`, `Corrupt` (every bit flipped) or `Value` (low 16
    /// bits; written least significant byte first, as the ICRC).
    pub vcrc: IcrcMode,
}

impl Default for IbFrame {
    fn default() -> Self {
        IbFrame {
            lrh: LrhFields::default(),
            grh: None,
            bth: Bth::default(),
            ext: ExtHeaders::default(),
            payload_len: 0,
            payload_seed: 0,
            icrc: IcrcMode::Valid,
            vcrc: IcrcMode::Valid,
        }
    }
}

impl IbFrame {
    /// The BTH pad count written (to a multiple of 4 unless the BTH says).
    pub fn effective_pad_count(&self) -> u8 {
        self.bth
            .pad_count
            .map_or(((4 - self.payload_len % 4) % 4) as u8, |n| n & 3)
    }

    /// Extension headers written after the BTH.
    pub fn ext_mask(&self) -> u16 {
        ib::ext_headers_se(self.bth.opcode, self.bth.se) & !ib::ext::UNKNOWN
    }

    /// Bytes from the LRH to the end of the ICRC (`PktLen` × 4).
    pub fn packet_len(&self) -> usize {
        lrh::LRH_LEN
            + self.grh.map_or(0, |_| ib::GRH_LEN)
            + ib::BTH_LEN
            + ib::ext_headers_len(self.ext_mask())
            + self.payload_len
            + usize::from(self.effective_pad_count())
            + ib::ICRC_LEN
    }

    /// The whole packet with its VCRC.
    pub fn wire_len(&self) -> usize {
        self.packet_len() + lrh::VCRC_LEN
    }
}

impl WireFrame for IbFrame {
    fn append(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let len = self.packet_len();
        let l = &self.lrh;
        let lnh = if self.grh.is_some() {
            lrh::LNH_IBA_GLOBAL
        } else {
            lrh::LNH_IBA_LOCAL
        };
        let mut h = [0u8; lrh::LRH_LEN];
        h[fl::VL_LVER] = (l.vl << 4) | (l.lver & 0x0F);
        h[fl::SL_LNH] = (l.sl << 4) | lnh;
        h[fl::DLID..fl::DLID + 2].copy_from_slice(&l.dlid.to_be_bytes());
        let words = (len / lrh::PKT_LEN_UNIT) as u16 & fl::PKT_LEN_MASK;
        h[fl::PKT_LEN..fl::PKT_LEN + 2].copy_from_slice(&words.to_be_bytes());
        h[fl::SLID..fl::SLID + 2].copy_from_slice(&l.slid.to_be_bytes());
        out.extend_from_slice(&h);
        if let Some(g) = &self.grh {
            g.append(out, (len - lrh::LRH_LEN - ib::GRH_LEN) as u16);
        }
        let pad = self.effective_pad_count();
        self.bth.append(out, pad);
        self.ext.append(out, self.ext_mask());
        let seed = self.payload_seed;
        out.extend((0..self.payload_len).map(|i| seed.wrapping_add(i as u8)));
        out.resize(out.len() + usize::from(pad), 0);
        out.extend_from_slice(&[0; ib::ICRC_LEN]);
        debug_assert_eq!(out.len() - start, len);
        let crc = self
            .icrc
            .apply(icrc(&out[start..]).expect("a built IB packet has every header"));
        let end = out.len();
        out[end - ib::ICRC_LEN..].copy_from_slice(&crc.to_le_bytes());
        // The low 16 bits: `Corrupt` flips each of them, `Value` keeps its own.
        let v = self.vcrc.apply(u32::from(vcrc(&out[start..]))) as u16;
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// `packet` as one ERF record of type InfiniBand, as `ibdump` writes it in
/// a LINKTYPE_ERF capture: the 16-byte header (timestamp `ts_ns` in ERF's
/// 32.32 fixed point, little-endian; flags 0x04, variable-length record;
/// `rlen` and `wlen` big-endian), no extension header, the packet.
pub fn erf_record(ts_ns: u64, packet: &[u8], out: &mut Vec<u8>) {
    let secs = ts_ns / 1_000_000_000;
    let frac = ((ts_ns % 1_000_000_000) << 32) / 1_000_000_000;
    out.extend_from_slice(&((secs << 32) | frac).to_le_bytes());
    out.push(erf::TYPE_INFINIBAND);
    out.push(0x04);
    out.extend_from_slice(&((erf::HEADER_LEN + packet.len()) as u16).to_be_bytes());
    out.extend_from_slice(&0u16.to_be_bytes());
    out.extend_from_slice(&(packet.len() as u16).to_be_bytes());
    out.extend_from_slice(packet);
}
