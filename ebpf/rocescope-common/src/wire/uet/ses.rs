//! UET's Semantic Sublayer (SES) headers, after a PDS header whose next
//! header names them (UE Specification 1.0.1 as Wireshark master's
//! `packet-uet.c` reads it; docs/inputs.md, "UET").
use super::{Error, Header, be16, be24, be32, be64, byte};

/// Where each SES field starts, from the SES header's first byte.
pub mod field {
    /// Requests and responses: reserved or list (2 bits), opcode (6).
    pub const OPCODE: usize = 0;
    pub const OPCODE_MASK: u8 = 0x3F;
    /// Requests: version (2 bits), DC, IE, REL, HD, EOM, SOM.
    pub const FLAGS: usize = 1;
    pub const FLAG_DC: u8 = 0x20;
    pub const FLAG_IE: u8 = 0x10;
    pub const FLAG_REL: u8 = 0x08;
    pub const FLAG_HD: u8 = 0x04;
    pub const FLAG_EOM: u8 = 0x02;
    pub const FLAG_SOM: u8 = 0x01;
    pub const VERSION_SHIFT: u8 = 6;
    /// 12-bit fields in a 16-bit word (PIDonFEP, resource index).
    pub const LOW12: u16 = 0x0FFF;
    /// 14-bit lengths in a 16- or 32-bit word.
    pub const LOW14: u16 = 0x3FFF;

    /// Standard request (44 bytes); from byte 4 on, also the small and
    /// medium requests' offsets.
    pub mod standard {
        pub const MESSAGE_ID: usize = 2;
        pub const INDEX_GENERATION: usize = 4;
        pub const JOB_ID: usize = 5;
        pub const PID_ON_FEP: usize = 8;
        pub const RESOURCE_INDEX: usize = 10;
        /// Buffer offset, or a deferrable send's restart token.
        pub const BUFFER_OFFSET: usize = 12;
        pub const INITIATOR: usize = 20;
        /// Memory key or match bits (a ready-to-restart's restart token).
        pub const MEMORY_KEY: usize = 24;
        /// With SOM: 8 bytes of header data; without: reserved (18 bits),
        /// payload length (14), message offset (32).
        pub const HEADER_DATA: usize = 32;
        pub const PAYLOAD_LENGTH: usize = 34;
        pub const MESSAGE_OFFSET: usize = 36;
        pub const REQUEST_LENGTH: usize = 40;
    }

    /// Small (20 bytes) and medium (32) requests: bytes 2–3 differ from
    /// the standard request's; from byte 4 on they are its offsets (the
    /// small request ends after the buffer offset).
    pub mod small {
        /// Reserved (2 bits), request length (14).
        pub const REQUEST_LENGTH: usize = 2;
    }

    /// Responses: list (2 bits) and opcode (6); version (2) and return
    /// code (6); then by kind.
    pub mod response {
        pub const RETURN_CODE: usize = 1;
        pub const MESSAGE_ID: usize = 2;
        /// Response: resource index generation; with data: reserved.
        pub const RESOURCE_INDEX_GEN: usize = 4;
        pub const JOB_ID: usize = 5;
        /// Response: modified length.
        pub const MODIFIED_LENGTH: usize = 8;
        /// With data: the read request's message id, the payload length
        /// (14 bits), modified length, message offset.
        pub const READ_REQ_MESSAGE_ID: usize = 8;
        pub const DATA_PAYLOAD_LENGTH: usize = 10;
        pub const DATA_MODIFIED_LENGTH: usize = 12;
        pub const DATA_MESSAGE_OFFSET: usize = 16;
        /// With small data: reserved (2 bits), payload length (14).
        pub const SMALL_PAYLOAD_LENGTH: usize = 2;
    }
}

pub const STANDARD_LEN: usize = 44;
pub const SMALL_LEN: usize = 20;
pub const MEDIUM_LEN: usize = 32;
pub const RESPONSE_LEN: usize = 12;
pub const RESPONSE_DATA_LEN: usize = 20;
/// Wireshark master reads 4 bytes (xdp2: see docs/inputs.md, "UET").
pub const RESPONSE_DATA_SMALL_LEN: usize = 4;
const RETURN_CODE_MASK: u8 = 0x3F;

wire_enum! {
/// What the PDS next-header field says follows.
pub enum NextHeader {
    None = 0,
    RequestSmall = 1,
    RequestMedium = 2,
    RequestStandard = 3,
    Response = 4,
    ResponseData = 5,
    ResponseDataSmall = 6,
}
}

impl NextHeader {
    /// The SES header's length.
    pub const fn header_len(self) -> usize {
        match self {
            NextHeader::None => 0,
            NextHeader::RequestSmall => SMALL_LEN,
            NextHeader::RequestMedium => MEDIUM_LEN,
            NextHeader::RequestStandard => STANDARD_LEN,
            NextHeader::Response => RESPONSE_LEN,
            NextHeader::ResponseData => RESPONSE_DATA_LEN,
            NextHeader::ResponseDataSmall => RESPONSE_DATA_SMALL_LEN,
        }
    }

    const fn is_request(self) -> bool {
        matches!(
            self,
            NextHeader::RequestSmall | NextHeader::RequestMedium | NextHeader::RequestStandard
        )
    }
}

wire_enum! {
/// Request opcodes.
pub enum Opcode {
    NoOp = 0x00,
    Write = 0x01,
    Read = 0x02,
    Atomic = 0x03,
    FetchingAtomic = 0x04,
    Send = 0x05,
    RendezvousSend = 0x06,
    DatagramSend = 0x07,
    DeferrableSend = 0x08,
    TaggedSend = 0x09,
    RendezvousTsend = 0x0A,
    DeferrableTsend = 0x0B,
    DeferrableRtr = 0x0C,
    TsendAtomic = 0x0D,
    TsendFetchAtomic = 0x0E,
    MsgError = 0x0F,
}
}

wire_enum! {
/// Response opcodes.
pub enum ResponseOpcode {
    DefaultResponse = 0x00,
    Response = 0x01,
    ResponseWithData = 0x02,
    NoResponse = 0x03,
}
}

/// An SES header of the kind its PDS next header named, whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ses<'a> {
    buf: &'a [u8],
    kind: NextHeader,
}

impl<'a> Ses<'a> {
    /// The SES header of kind `kind` at the start of `buf` (`kind` must
    /// not be [`NextHeader::None`]).
    pub fn new_checked(buf: &'a [u8], kind: NextHeader) -> Result<Ses<'a>, Error> {
        if kind == NextHeader::None {
            return Err(Error::UnknownType(Header::Ses(kind), 0));
        }
        if buf.len() < kind.header_len() {
            return Err(Error::Truncated(Header::Ses(kind)));
        }
        Ok(Ses { buf, kind })
    }

    pub fn kind(&self) -> NextHeader {
        self.kind
    }

    pub fn header_len(&self) -> usize {
        self.kind.header_len()
    }

    /// The bytes after the header.
    pub fn payload(&self) -> &'a [u8] {
        self.buf.get(self.header_len()..).unwrap_or(&[])
    }

    /// The opcode's 6 bits, a request's or a response's as the kind says.
    pub fn opcode_raw(&self) -> u8 {
        byte(self.buf, field::OPCODE) & field::OPCODE_MASK
    }

    /// Byte 1 as sent: a request's version and flags, a response's
    /// version and return code.
    pub fn flags_byte(&self) -> u8 {
        byte(self.buf, field::FLAGS)
    }

    /// A request's opcode, when known.
    pub fn opcode(&self) -> Option<Opcode> {
        if self.kind.is_request() {
            Opcode::from_u8(self.opcode_raw())
        } else {
            None
        }
    }

    /// A response's opcode, when known.
    pub fn response_opcode(&self) -> Option<ResponseOpcode> {
        if self.kind.is_request() {
            None
        } else {
            ResponseOpcode::from_u8(self.opcode_raw())
        }
    }

    /// A response's return code (6 bits).
    pub fn return_code(&self) -> Option<u8> {
        (!self.kind.is_request())
            .then(|| byte(self.buf, field::response::RETURN_CODE) & RETURN_CODE_MASK)
    }

    fn req_flags(&self) -> u8 {
        if self.kind.is_request() {
            byte(self.buf, field::FLAGS)
        } else {
            0
        }
    }

    /// A request's version (2 bits).
    pub fn version(&self) -> u8 {
        byte(self.buf, field::FLAGS) >> field::VERSION_SHIFT
    }

    pub fn som(&self) -> bool {
        self.req_flags() & field::FLAG_SOM != 0
    }

    pub fn eom(&self) -> bool {
        self.req_flags() & field::FLAG_EOM != 0
    }

    /// Header data present (standard and medium requests).
    pub fn hd(&self) -> bool {
        self.kind != NextHeader::RequestSmall && self.req_flags() & field::FLAG_HD != 0
    }

    /// Delivery complete.
    pub fn dc(&self) -> bool {
        self.req_flags() & field::FLAG_DC != 0
    }

    /// Initiator error.
    pub fn ie(&self) -> bool {
        self.req_flags() & field::FLAG_IE != 0
    }

    /// Relative addressing.
    pub fn rel(&self) -> bool {
        self.req_flags() & field::FLAG_REL != 0
    }

    /// Message id: a standard request's, or a response's.
    pub fn message_id(&self) -> Option<u16> {
        match self.kind {
            NextHeader::RequestStandard => Some(be16(self.buf, field::standard::MESSAGE_ID)),
            NextHeader::Response | NextHeader::ResponseData => {
                Some(be16(self.buf, field::response::MESSAGE_ID))
            }
            _ => None,
        }
    }

    /// Job id (24 bits), every kind but the response with small data.
    pub fn job_id(&self) -> Option<u32> {
        (self.kind != NextHeader::ResponseDataSmall)
            .then(|| be24(self.buf, field::standard::JOB_ID))
    }

    /// Index generation (requests; a response's resource index generation).
    pub fn index_generation(&self) -> Option<u8> {
        matches!(
            self.kind,
            NextHeader::RequestSmall
                | NextHeader::RequestMedium
                | NextHeader::RequestStandard
                | NextHeader::Response
        )
        .then(|| byte(self.buf, field::standard::INDEX_GENERATION))
    }

    /// Requests: PIDonFEP (12 bits).
    pub fn pid_on_fep(&self) -> Option<u16> {
        self.kind
            .is_request()
            .then(|| be16(self.buf, field::standard::PID_ON_FEP) & field::LOW12)
    }

    /// Requests: resource index (12 bits).
    pub fn resource_index(&self) -> Option<u16> {
        self.kind
            .is_request()
            .then(|| be16(self.buf, field::standard::RESOURCE_INDEX) & field::LOW12)
    }

    /// Requests: buffer offset (a deferrable send's restart token; a
    /// medium request's header data when HD is set).
    pub fn buffer_offset(&self) -> Option<u64> {
        self.kind
            .is_request()
            .then(|| be64(self.buf, field::standard::BUFFER_OFFSET))
    }

    /// Standard and medium requests: the initiator.
    pub fn initiator(&self) -> Option<u32> {
        matches!(
            self.kind,
            NextHeader::RequestStandard | NextHeader::RequestMedium
        )
        .then(|| be32(self.buf, field::standard::INITIATOR))
    }

    /// Standard and medium requests: memory key or match bits.
    pub fn memory_key(&self) -> Option<u64> {
        matches!(
            self.kind,
            NextHeader::RequestStandard | NextHeader::RequestMedium
        )
        .then(|| be64(self.buf, field::standard::MEMORY_KEY))
    }

    /// Request length: a standard request's 32 bits, a small or medium
    /// request's 14.
    pub fn request_length(&self) -> Option<u32> {
        match self.kind {
            NextHeader::RequestStandard => Some(be32(self.buf, field::standard::REQUEST_LENGTH)),
            NextHeader::RequestSmall | NextHeader::RequestMedium => Some(u32::from(
                be16(self.buf, field::small::REQUEST_LENGTH) & field::LOW14,
            )),
            _ => None,
        }
    }

    /// A standard request with SOM: its header data.
    pub fn header_data(&self) -> Option<u64> {
        (self.kind == NextHeader::RequestStandard && self.som())
            .then(|| be64(self.buf, field::standard::HEADER_DATA))
    }

    /// Payload length (14 bits): a standard request without SOM, a
    /// response with data or with small data.
    pub fn payload_length(&self) -> Option<u16> {
        let at = match self.kind {
            NextHeader::RequestStandard if !self.som() => field::standard::PAYLOAD_LENGTH,
            NextHeader::ResponseData => field::response::DATA_PAYLOAD_LENGTH,
            NextHeader::ResponseDataSmall => field::response::SMALL_PAYLOAD_LENGTH,
            _ => return None,
        };
        Some(be16(self.buf, at) & field::LOW14)
    }

    /// Message offset: a standard request without SOM, a response with data.
    pub fn message_offset(&self) -> Option<u32> {
        match self.kind {
            NextHeader::RequestStandard if !self.som() => {
                Some(be32(self.buf, field::standard::MESSAGE_OFFSET))
            }
            NextHeader::ResponseData => Some(be32(self.buf, field::response::DATA_MESSAGE_OFFSET)),
            _ => None,
        }
    }

    /// Responses: the modified length.
    pub fn modified_length(&self) -> Option<u32> {
        match self.kind {
            NextHeader::Response => Some(be32(self.buf, field::response::MODIFIED_LENGTH)),
            NextHeader::ResponseData => Some(be32(self.buf, field::response::DATA_MODIFIED_LENGTH)),
            _ => None,
        }
    }

    /// A response with data: the read request's message id.
    pub fn read_req_message_id(&self) -> Option<u16> {
        (self.kind == NextHeader::ResponseData)
            .then(|| be16(self.buf, field::response::READ_REQ_MESSAGE_ID))
    }
}
