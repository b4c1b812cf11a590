//! Where the tests and benches find the real captures by others: the
//! repository's `tests/data/` (provenance and licences in
//! `tests/data/README.md`; never edited), or wherever `ROCESCOPE_CAPTURES`
//! points (another set of captures with the same names); and a real frame
//! from a capture too private to ship, as bytes.
//!
//! Not part of the tool: public only so that the integration tests, which
//! link the library as users do, look in the same place as the unit tests.
use std::path::{Path, PathBuf};

/// Names the captures folder, overriding `tests/data/`.
pub const CAPTURES_ENV: &str = "ROCESCOPE_CAPTURES";

/// The captures folder: `$ROCESCOPE_CAPTURES`, else `<repo>/tests/data`.
pub fn captures_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(CAPTURES_ENV) {
        return PathBuf::from(dir);
    }
    // The library's manifest is `<repo>/userspace/Cargo.toml`.
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data")
}

/// The capture `name` in [`captures_dir`].
pub fn shared_capture(name: &str) -> PathBuf {
    captures_dir().join(name)
}

/// One frame of a real ConnectX `ibdump` capture (ERF, issue 28): an
/// IPoIB broadcast, a UD SEND to the multicast QP 0xFFFFFF with a GRH
/// (LNH = 3), from the LRH through the VCRC, in hex. Its ICRC (bytes
/// 168..172, `05 66 d5 4d`) and VCRC (`35 df`) are the hardware's.
pub const IBDUMP_GRH_FRAME_HEX: &str = concat!(
    "0003c000002b0005",
    "60000000007c1b00fe800000000000000002c90300001f2dff12401bffff000000000000ffffffff",
    "6440ffff00ffffff000de6f8",
    "00000b1b00000048",
    "0800000045000060000040004011256b0a0000240a0000ffc15dc15d004cc8db000010060000003c0200",
    "c15ec0a87f24000000000000000033396661653032392d323835642d343532372d623936302d313464",
    "3432353363353063320000000000000000",
    "0566d54d",
    "35df",
);

/// [`IBDUMP_GRH_FRAME_HEX`] as bytes.
pub fn ibdump_grh_frame() -> Vec<u8> {
    let s = IBDUMP_GRH_FRAME_HEX;
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("the constant is hex"))
        .collect()
}

/// The CNP of `connectx4lx-cnp.pcap` in [`captures_dir`] (a ConnectX-4 Lx),
/// from the IPv4 header on; its ICRC is the hardware's.
pub const CONNECTX4LX_CNP_IP: [u8; 60] = [
    0x45, 0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61, 0x0a, 0x00, 0x11, 0x01,
    0x0a, 0x00, 0x12, 0x01, // IPv4
    0x00, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00, // UDP 0 -> 4791
    0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00, 0x00, 0x00, // BTH
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // reserved
    0x82, 0xfd, 0x00, 0x2a, // ICRC
];
