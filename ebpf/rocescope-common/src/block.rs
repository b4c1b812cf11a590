//! The record's transport block: the bytes a [`PacketRecord`] gives to
//! the fields of one transport (or of link-level flow control), a tag
//! naming whose they are, and one `repr(C)` view per owner — [`RoceView`]
//! and [`LinkControlView`] here, a newer transport's in its own module
//! (`wire::<transport>`, a [`View`] whose tag is its `wire::TransportId`) —
//! read and written only through the record's methods, which check the
//! tag first.
//!
//! Every view is plain integers (any bit pattern is a valid value) no
//! larger than the block and no more aligned, which is what makes reading
//! one out of the block's words sound; the tag is what makes it meaningful.
//! A view read from a record whose block holds someone else's fields is
//! the empty view (all zeros: what every other record's RoCE fields were
//! when they were flat on the record). Writing claims the block: the tag
//! changes and the bytes are zeroed first when another owner held them.
use crate::PacketRecord;

/// Bytes of the block shared by the views.
pub const BLOCK_SIZE: usize = 96;
const BLOCK_WORDS: usize = BLOCK_SIZE / 8;

/// Who the block's bytes belong to: a transport (its `wire::TransportId`
/// value, `TransportId::from_tag`; RoCE's asserted in the crate root), or
/// link-level flow control (PFC and PAUSE records, which have no
/// transport).
pub(crate) mod tag {
    pub const NONE: u8 = 0;
    pub const ROCE: u8 = 1;
    pub const LINK_CONTROL: u8 = 0xFF;
}

/// The transport-specific part of a record. Its bytes are private: the
/// record's views are the only way in.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct TransportBlock {
    words: [u64; BLOCK_WORDS],
}

pub const TRANSPORT_BLOCK_SIZE: usize = BLOCK_SIZE;
const _: () = assert!(core::mem::size_of::<TransportBlock>() == TRANSPORT_BLOCK_SIZE);

impl core::fmt::Debug for TransportBlock {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TransportBlock")
            .field("words", &self.words)
            .finish()
    }
}

/// Whose fields the [`TransportBlock`] holds (`tag::*`); a byte of the
/// record of its own, outside the block, so the block is all words. Only
/// the record's view methods change it.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
pub struct BlockTag(u8);

impl BlockTag {
    /// `tag::*`.
    pub(crate) const fn get(self) -> u8 {
        self.0
    }
}

/// A view the block can hold: `repr(C)` plain integers, no larger than
/// the block, no more aligned than its words (checked where it is named).
///
/// # Safety
/// Implement only for such types.
pub(crate) unsafe trait View: Copy {
    const TAG: u8;
}

/// All zeros: the empty view.
pub(crate) const fn empty<V: View>() -> V {
    // SAFETY: a `View` is plain integers, for which all zeros is a value.
    unsafe { core::mem::zeroed() }
}

pub(crate) const fn fits<V>() -> bool {
    core::mem::size_of::<V>() <= BLOCK_SIZE && core::mem::align_of::<V>() <= 8
}

impl PacketRecord {
    /// `V`'s fields, if the block holds them.
    #[inline(always)]
    pub(crate) fn view<V: View>(&self) -> Option<&V> {
        if self.block_tag.0 == V::TAG {
            // SAFETY: `V` is plain integers that fit the block's words in
            // size and alignment (`View`), so any bytes there read as a `V`.
            Some(unsafe { &*self.block.words.as_ptr().cast::<V>() })
        } else {
            None
        }
    }

    /// `V`'s fields to write: claims the block for `V` (emptied first if
    /// another owner held it).
    #[inline(always)]
    pub(crate) fn view_mut<V: View>(&mut self) -> &mut V {
        if self.block_tag.0 != V::TAG {
            if self.block_tag.0 != tag::NONE {
                // Word stores the compiler keeps (a `memset` would be a
                // byte loop in the XDP program).
                for w in self.block.words.iter_mut() {
                    // SAFETY: a valid, aligned `u64` of `self`.
                    unsafe { core::ptr::write_volatile(w, 0) };
                }
            }
            self.block_tag = BlockTag(V::TAG);
        }
        // SAFETY: as in `view`; writes through `V` keep the words plain bytes.
        unsafe { &mut *self.block.words.as_mut_ptr().cast::<V>() }
    }
}

/// RoCE's fields (RoCEv2, RoCEv1, native InfiniBand): the BTH, its
/// extension headers and the ICRC. Which of them hold a value the record's
/// `flags` say (`HAS_BTH`, `HAS_RETH`, …, `ICRC_CHECKED`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RoceView {
    pub reth_va: u64,
    pub atomic_va: u64,
    pub atomic_swap_add: u64,
    pub atomic_compare: u64,
    /// AtomicAckETH original remote data.
    pub atomic_orig: u64,
    /// BTH destination QP (24 bits).
    pub dest_qp: u32,
    /// BTH packet sequence number (24 bits).
    pub psn: u32,
    /// AETH message sequence number (24 bits).
    pub aeth_msn: u32,
    pub reth_rkey: u32,
    pub reth_len: u32,
    /// ImmDt immediate data (host order of the big-endian wire value).
    pub imm: u32,
    /// IETH R_Key to invalidate.
    pub ieth_rkey: u32,
    pub deth_qkey: u32,
    /// DETH source QP (24 bits).
    pub deth_src_qp: u32,
    pub atomic_rkey: u32,
    /// The ICRC as carried on the wire, read as a little-endian u32 (the
    /// CRC-32 value itself: RoCE transmits it least significant byte first).
    pub icrc: u32,
    pub pkey: u16,
    pub opcode: u8,
    pub pad_count: u8,
    pub tver: u8,
    /// AETH syndrome byte (ACK 0x00-0x1F, RNR NAK 0x20-0x3F, NAK 0x60-0x7F).
    pub aeth_syndrome: u8,
    /// Keeps the size a multiple of 8 with every byte named.
    pub _reserved: [u8; 6],
}

const _: () = assert!(core::mem::size_of::<RoceView>() == 5 * 8 + 11 * 4 + 2 + 4 + 6);
const _: () = assert!(fits::<RoceView>());
// SAFETY: integers only, and it fits (asserted above).
unsafe impl View for RoceView {
    const TAG: u8 = tag::ROCE;
}

impl RoceView {
    /// All zeros: what the view reads as on a record that is not its own.
    pub const EMPTY: RoceView = empty();
}

/// Link-level flow control's fields: 802.1Qbb PFC (`HAS_PFC`) and 802.3x
/// PAUSE (`HAS_PAUSE`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct LinkControlView {
    /// PFC pause quanta per priority 0..7.
    pub pfc_quanta: [u16; 8],
    /// 802.3x PAUSE quanta.
    pub pause_quanta: u16,
    /// PFC class-enable vector (low 8 bits; one bit per priority).
    pub pfc_enable: u8,
    /// Keeps the size a multiple of 2 with every byte named.
    pub _reserved: u8,
}

const _: () = assert!(core::mem::size_of::<LinkControlView>() == 16 + 2 + 1 + 1);
const _: () = assert!(fits::<LinkControlView>());
// SAFETY: integers only, and it fits (asserted above).
unsafe impl View for LinkControlView {
    const TAG: u8 = tag::LINK_CONTROL;
}

impl LinkControlView {
    /// All zeros: what the view reads as on a record that is not its own.
    pub const EMPTY: LinkControlView = empty();
}

impl PacketRecord {
    /// RoCE's fields; all zero unless the record is RoCE's.
    #[inline(always)]
    pub fn roce(&self) -> &RoceView {
        self.try_roce().unwrap_or(&RoceView::EMPTY)
    }

    /// RoCE's fields if the record is RoCE's (the XDP program reads them
    /// so: no pointer to the empty view's constant).
    #[inline(always)]
    pub fn try_roce(&self) -> Option<&RoceView> {
        self.view()
    }

    /// RoCE's fields to write: makes the record RoCE's (the block is
    /// emptied first if it held another's fields).
    #[inline(always)]
    pub fn roce_mut(&mut self) -> &mut RoceView {
        self.view_mut()
    }

    /// PFC's and PAUSE's fields; all zero on any other record.
    #[inline(always)]
    pub fn link_control(&self) -> &LinkControlView {
        self.view().unwrap_or(&LinkControlView::EMPTY)
    }

    /// PFC's and PAUSE's fields to write (see [`PacketRecord::roce_mut`]).
    #[inline(always)]
    pub fn link_control_mut(&mut self) -> &mut LinkControlView {
        self.view_mut()
    }

    /// `self` holding RoCE's fields `v` (for building records by hand).
    pub fn with_roce(mut self, v: RoceView) -> PacketRecord {
        *self.roce_mut() = v;
        self
    }

    /// `self` holding link control's fields `v`.
    pub fn with_link_control(mut self, v: LinkControlView) -> PacketRecord {
        *self.link_control_mut() = v;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::uet::UetView;

    #[test]
    fn a_view_reads_only_its_own_block() {
        let mut r = PacketRecord::default();
        assert_eq!(r.transport(), None);
        r.roce_mut().psn = 7;
        r.roce_mut().icrc = 0xDEAD_BEEF;
        assert_eq!(r.transport(), Some(crate::wire::TransportId::Roce));
        assert_eq!((r.roce().psn, r.roce().icrc), (7, 0xDEAD_BEEF));
        assert_eq!(*r.link_control(), LinkControlView::default());
        assert_eq!(*r.uet(), UetView::default());

        // Claiming it for another owner empties it first.
        r.uet_mut().sack_base = 9;
        assert_eq!(r.transport(), Some(crate::wire::TransportId::Uet));
        assert_eq!(*r.roce(), RoceView::default());
        assert_eq!(
            *r.uet(),
            UetView {
                sack_base: 9,
                ..UetView::default()
            }
        );
        r.link_control_mut().pause_quanta = 3;
        assert_eq!(r.transport(), None);
        assert_eq!(r.link_control().pause_quanta, 3);
        assert_eq!(*r.uet(), UetView::default());
        r.roce_mut();
        assert_eq!(*r.roce(), RoceView::default());
    }

    #[test]
    fn the_views_share_the_blocks_bytes() {
        let r = PacketRecord::default().with_roce(RoceView {
            reth_va: 0x0102_0304_0506_0708,
            ..RoceView::default()
        });
        let words = r.block.words;
        assert_eq!(words[0], 0x0102_0304_0506_0708);
        assert!(words[1..].iter().all(|w| *w == 0));
    }
}
