//! The NACK codes a PDS NACK carries (UE Specification 1.0.1; Wireshark
//! master and xdp2 list the same values).

/// The NACK codes, named as the specification names them.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NackCode {
    Trimmed = 0x01,
    TrimmedLasthop = 0x02,
    TrimmedAck = 0x03,
    NoPdcAvail = 0x04,
    NoCccAvail = 0x05,
    NoBitmap = 0x06,
    NoPktBuffer = 0x07,
    NoGtdDelAvail = 0x08,
    NoSesMsgAvail = 0x09,
    NoResource = 0x0A,
    PsnOorWindow = 0x0B,
    RodOoo = 0x0D,
    InvDpdcid = 0x0E,
    PdcHdrMismatch = 0x0F,
    Closing = 0x10,
    ClosingInErr = 0x11,
    PktNotRcvd = 0x12,
    GtdDelRespUnavail = 0x13,
    AckWithData = 0x14,
    InvalidSyn = 0x15,
    PdcModeMismatch = 0x16,
    NewStartPsn = 0x17,
    RcvdSesProcg = 0x18,
    UnexpEvent = 0x19,
    RcvrInferLoss = 0x1A,
    ExpNackNormal = 0xFD,
    ExpNackErr = 0xFE,
    ExpNackFatal = 0xFF,
}

impl NackCode {
    pub const fn from_u8(v: u8) -> Option<NackCode> {
        use NackCode::*;
        Some(match v {
            0x01 => Trimmed,
            0x02 => TrimmedLasthop,
            0x03 => TrimmedAck,
            0x04 => NoPdcAvail,
            0x05 => NoCccAvail,
            0x06 => NoBitmap,
            0x07 => NoPktBuffer,
            0x08 => NoGtdDelAvail,
            0x09 => NoSesMsgAvail,
            0x0A => NoResource,
            0x0B => PsnOorWindow,
            0x0D => RodOoo,
            0x0E => InvDpdcid,
            0x0F => PdcHdrMismatch,
            0x10 => Closing,
            0x11 => ClosingInErr,
            0x12 => PktNotRcvd,
            0x13 => GtdDelRespUnavail,
            0x14 => AckWithData,
            0x15 => InvalidSyn,
            0x16 => PdcModeMismatch,
            0x17 => NewStartPsn,
            0x18 => RcvdSesProcg,
            0x19 => UnexpEvent,
            0x1A => RcvrInferLoss,
            0xFD => ExpNackNormal,
            0xFE => ExpNackErr,
            0xFF => ExpNackFatal,
            _ => return None,
        })
    }

    /// A switch cut the packet short: a congestion signal, not loss.
    pub const fn is_trimmed(self) -> bool {
        matches!(
            self,
            NackCode::Trimmed | NackCode::TrimmedLasthop | NackCode::TrimmedAck
        )
    }
}
