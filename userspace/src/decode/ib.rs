//! InfiniBand transport headers as RoCEv2 carries them (IBA Vol. 1 §9.2-9.3,
//! Annex A17): the Base Transport Header and every extension header an
//! opcode can imply. Field names follow the specification.
//!
//! Which extension headers follow a BTH, and in which order, is decided by
//! [`rocescope_common::proto::ib::ext_headers`]; these views only read them.
use rocescope_common::proto::ib;

use super::field;

fixed_view! {
    /// Base Transport Header (12 bytes).
    ///
    /// ```text
    /// 0: OpCode | 1: SE M PadCnt(2) TVer(4) | 2-3: P_Key
    /// 4: F B resv6 | 5-7: DestQP | 8: A resv7 | 9-11: PSN
    /// ```
    /// Byte 4 is IBA's `resv8a`; RoCEv2 (Annex A17.3.2) puts FECN and BECN
    /// in its top two bits.
    Bth, ib::BTH_LEN
}
payload_after!(Bth);

impl<T: AsRef<[u8]>> Bth<T> {
    pub fn opcode(&self) -> u8 {
        field::u8_at(self.bytes(), 0)
    }

    /// Transport service (RC, UC, RD, UD, CNP, XRC): the top three opcode bits.
    pub fn transport(&self) -> u8 {
        self.opcode() >> 5
    }

    /// The extension headers this opcode implies (`proto::ib::ext`).
    pub fn ext_headers(&self) -> u16 {
        ib::ext_headers(self.opcode())
    }

    pub fn solicited_event(&self) -> bool {
        field::u8_at(self.bytes(), 1) & 0x80 != 0
    }

    pub fn mig_req(&self) -> bool {
        field::u8_at(self.bytes(), 1) & 0x40 != 0
    }

    /// Pad bytes (0-3) between the payload and the ICRC.
    pub fn pad_count(&self) -> u8 {
        (field::u8_at(self.bytes(), 1) >> 4) & 0x3
    }

    /// Transport header version (0).
    pub fn tver(&self) -> u8 {
        field::u8_at(self.bytes(), 1) & 0x0F
    }

    pub fn pkey(&self) -> u16 {
        field::be16(self.bytes(), 2)
    }

    pub fn fecn(&self) -> bool {
        field::u8_at(self.bytes(), 4) & 0x80 != 0
    }

    pub fn becn(&self) -> bool {
        field::u8_at(self.bytes(), 4) & 0x40 != 0
    }

    pub fn dest_qp(&self) -> u32 {
        field::be24(self.bytes(), 5)
    }

    pub fn ack_req(&self) -> bool {
        field::u8_at(self.bytes(), 8) & 0x80 != 0
    }

    pub fn psn(&self) -> u32 {
        field::be24(self.bytes(), 9)
    }
}

fixed_view! {
    /// Reliable Datagram ETH (4 bytes): reserved, EE-Context.
    Rdeth, ib::RDETH_LEN
}
payload_after!(Rdeth);

impl<T: AsRef<[u8]>> Rdeth<T> {
    pub fn ee_context(&self) -> u32 {
        field::be24(self.bytes(), 1)
    }
}

fixed_view! {
    /// Datagram ETH (8 bytes): Q_Key, reserved, SrcQP.
    Deth, ib::DETH_LEN
}
payload_after!(Deth);

impl<T: AsRef<[u8]>> Deth<T> {
    pub fn qkey(&self) -> u32 {
        field::be32(self.bytes(), 0)
    }

    pub fn src_qp(&self) -> u32 {
        field::be24(self.bytes(), 5)
    }
}

fixed_view! {
    /// XRC ETH (4 bytes): reserved, XRCSRQ.
    Xrceth, ib::XRCETH_LEN
}
payload_after!(Xrceth);

impl<T: AsRef<[u8]>> Xrceth<T> {
    pub fn xrc_srq(&self) -> u32 {
        field::be24(self.bytes(), 1)
    }
}

fixed_view! {
    /// RDMA ETH (16 bytes): virtual address, R_Key, DMA length.
    Reth, ib::RETH_LEN
}
payload_after!(Reth);

impl<T: AsRef<[u8]>> Reth<T> {
    pub fn va(&self) -> u64 {
        field::be64(self.bytes(), 0)
    }

    pub fn rkey(&self) -> u32 {
        field::be32(self.bytes(), 8)
    }

    pub fn dma_len(&self) -> u32 {
        field::be32(self.bytes(), 12)
    }
}

fixed_view! {
    /// Atomic ETH (28 bytes): VA, R_Key, swap (or add) data, compare data.
    AtomicEth, ib::ATOMIC_ETH_LEN
}
payload_after!(AtomicEth);

impl<T: AsRef<[u8]>> AtomicEth<T> {
    pub fn va(&self) -> u64 {
        field::be64(self.bytes(), 0)
    }

    pub fn rkey(&self) -> u32 {
        field::be32(self.bytes(), 8)
    }

    pub fn swap_add_data(&self) -> u64 {
        field::be64(self.bytes(), 12)
    }

    pub fn compare_data(&self) -> u64 {
        field::be64(self.bytes(), 20)
    }
}

fixed_view! {
    /// ACK ETH (4 bytes): syndrome, MSN.
    Aeth, ib::AETH_LEN
}
payload_after!(Aeth);

impl<T: AsRef<[u8]>> Aeth<T> {
    /// ACK 0x00-0x1F (low bits: credit count), RNR NAK 0x20-0x3F (low bits:
    /// timer), NAK 0x60-0x7F (low bits: NAK code).
    pub fn syndrome(&self) -> u8 {
        field::u8_at(self.bytes(), 0)
    }

    pub fn msn(&self) -> u32 {
        field::be24(self.bytes(), 1)
    }

    pub fn is_ack(&self) -> bool {
        ib::aeth::is_ack(self.syndrome())
    }

    pub fn is_rnr_nak(&self) -> bool {
        ib::aeth::is_rnr_nak(self.syndrome())
    }

    pub fn is_nak(&self) -> bool {
        ib::aeth::is_nak(self.syndrome())
    }

    /// Credit count, RNR timer or NAK code, depending on the kind.
    pub fn syndrome_value(&self) -> u8 {
        self.syndrome() & 0x1F
    }
}

fixed_view! {
    /// Atomic Acknowledge ETH (8 bytes): the original remote data.
    AtomicAckEth, ib::ATOMIC_ACK_ETH_LEN
}
payload_after!(AtomicAckEth);

impl<T: AsRef<[u8]>> AtomicAckEth<T> {
    pub fn orig_rem_dt(&self) -> u64 {
        field::be64(self.bytes(), 0)
    }
}

fixed_view! {
    /// Immediate Data ETH (4 bytes).
    ImmDt, ib::IMMDT_LEN
}
payload_after!(ImmDt);

impl<T: AsRef<[u8]>> ImmDt<T> {
    pub fn imm(&self) -> u32 {
        field::be32(self.bytes(), 0)
    }
}

fixed_view! {
    /// Invalidate ETH (4 bytes): the R_Key to invalidate.
    Ieth, ib::IETH_LEN
}
payload_after!(Ieth);

impl<T: AsRef<[u8]>> Ieth<T> {
    pub fn rkey(&self) -> u32 {
        field::be32(self.bytes(), 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bth_all_bits_set() {
        let b = [0xFF; 12];
        let h = Bth::new_checked(&b[..]).unwrap();
        assert_eq!(h.opcode(), 0xFF);
        assert_eq!(h.transport(), 0b111);
        assert_eq!(h.ext_headers(), ib::ext::UNKNOWN);
        assert!(h.solicited_event() && h.mig_req() && h.fecn() && h.becn() && h.ack_req());
        assert_eq!(h.pad_count(), 3);
        assert_eq!(h.tver(), 0xF);
        assert_eq!(h.pkey(), 0xFFFF);
        assert_eq!(h.dest_qp(), 0xFF_FFFF);
        assert_eq!(h.psn(), 0xFF_FFFF);
        assert!(Bth::new_checked(&b[..11]).is_err());
    }

    #[test]
    fn bth_fields_are_separate() {
        let b = [
            0x0A, // RC RDMA WRITE Only
            0x60, // SE 0, M 1, PadCnt 2, TVer 0
            0x80, 0x01, // P_Key
            0x80, // FECN, not BECN
            0x12, 0x34, 0x56, // DestQP
            0x00, // AckReq 0
            0xAB, 0xCD, 0xEF, // PSN
            0x99,
        ];
        let h = Bth::new_checked(&b[..]).unwrap();
        assert_eq!(h.opcode(), 0x0A);
        assert_eq!(h.transport(), ib::transport::RC);
        assert_eq!(h.ext_headers(), ib::ext::RETH);
        assert!(!h.solicited_event() && h.mig_req());
        assert_eq!((h.pad_count(), h.tver()), (2, 0));
        assert_eq!(h.pkey(), 0x8001);
        assert!(h.fecn() && !h.becn() && !h.ack_req());
        assert_eq!(h.dest_qp(), 0x12_3456);
        assert_eq!(h.psn(), 0xAB_CDEF);
        assert_eq!(h.payload(), &[0x99]);
    }

    #[test]
    fn aeth_syndromes() {
        let ack = [0x1F, 0x00, 0x00, 0x2A]; // ACK, credits 31, MSN 42
        let a = Aeth::new_checked(&ack[..]).unwrap();
        assert!(a.is_ack() && !a.is_nak() && !a.is_rnr_nak());
        assert_eq!((a.syndrome(), a.syndrome_value(), a.msn()), (0x1F, 31, 42));

        let rnr = [0x2E, 0x12, 0x34, 0x56]; // RNR NAK, timer 14
        let a = Aeth::new_checked(&rnr[..]).unwrap();
        assert!(a.is_rnr_nak() && !a.is_ack() && !a.is_nak());
        assert_eq!((a.syndrome_value(), a.msn()), (14, 0x12_3456));

        let nak = [0x60, 0xFF, 0xFF, 0xFF]; // NAK: PSN sequence error
        let a = Aeth::new_checked(&nak[..]).unwrap();
        assert!(a.is_nak() && !a.is_ack() && !a.is_rnr_nak());
        assert_eq!(a.syndrome_value(), ib::aeth::NAK_PSN_SEQUENCE_ERROR);
        assert_eq!(a.msn(), 0xFF_FFFF);
        assert!(Aeth::new_checked(&nak[..3]).is_err());
    }

    #[test]
    fn reth_fields() {
        let b = [
            0x00, 0x00, 0x7F, 0x12, 0x34, 0x56, 0x78, 0x9A, // VA
            0xCA, 0xFE, 0xBA, 0xBE, // R_Key
            0x00, 0x01, 0x00, 0x00, // DMA length 65536
        ];
        let r = Reth::new_checked(&b[..]).unwrap();
        assert_eq!(r.va(), 0x0000_7F12_3456_789A);
        assert_eq!(r.rkey(), 0xCAFE_BABE);
        assert_eq!(r.dma_len(), 65536);
        assert!(Reth::new_checked(&b[..15]).is_err());
    }

    #[test]
    fn atomic_eth_and_ack() {
        let b = [
            0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, // VA
            0x01, 0x02, 0x03, 0x04, // R_Key
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, // swap/add
            0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE, // compare
        ];
        let a = AtomicEth::new_checked(&b[..]).unwrap();
        assert_eq!(a.va(), 0x1122_3344_5566_7788);
        assert_eq!(a.rkey(), 0x0102_0304);
        assert_eq!(a.swap_add_data(), 5);
        assert_eq!(a.compare_data(), 0xFFFF_FFFF_FFFF_FFFE);
        assert!(AtomicEth::new_checked(&b[..27]).is_err());

        let o = AtomicAckEth::new_checked(&b[..8]).unwrap();
        assert_eq!(o.orig_rem_dt(), 0x1122_3344_5566_7788);
        assert!(AtomicAckEth::new_checked(&b[..7]).is_err());
    }

    #[test]
    fn datagram_and_small_headers() {
        let d = [0x80, 0x01, 0x00, 0x00, 0xEE, 0x00, 0x00, 0x01]; // Q_Key, SrcQP 1
        let d = Deth::new_checked(&d[..]).unwrap();
        assert_eq!(d.qkey(), 0x8001_0000);
        assert_eq!(d.src_qp(), 1);

        let four = [0xEE, 0x0A, 0x0B, 0x0C];
        assert_eq!(
            Rdeth::new_checked(&four[..]).unwrap().ee_context(),
            0x0A_0B0C
        );
        assert_eq!(Xrceth::new_checked(&four[..]).unwrap().xrc_srq(), 0x0A_0B0C);
        assert_eq!(ImmDt::new_checked(&four[..]).unwrap().imm(), 0xEE0A_0B0C);
        assert_eq!(Ieth::new_checked(&four[..]).unwrap().rkey(), 0xEE0A_0B0C);
        assert!(ImmDt::new_checked(&four[..3]).is_err());
        assert!(Deth::new_checked(&four[..]).is_err());
    }
}
