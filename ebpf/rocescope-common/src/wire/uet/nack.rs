//! The NACK codes a PDS NACK carries (UE Specification 1.0.1; Wireshark
//! master and xdp2 list the same values).

wire_enum! {
/// The NACK codes, named as the specification names them.
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
}

impl NackCode {
    /// A switch cut the packet short: a congestion signal, not loss.
    pub const fn is_trimmed(self) -> bool {
        matches!(
            self,
            NackCode::Trimmed | NackCode::TrimmedLasthop | NackCode::TrimmedAck
        )
    }
}
