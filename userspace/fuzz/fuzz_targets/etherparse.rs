//! Any bytes as one Ethernet frame: the frame walk and etherparse's lax
//! slicing must find the same Ethernet, VLAN, IP and UDP headers and stop
//! at the same layer (tests/common/oracle.rs says where they may not, by
//! design; docs/fuzzing.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../../tests/common/oracle.rs"]
mod oracle;

fuzz_target!(|frame: &[u8]| {
    if let Err(e) = oracle::compare(frame) {
        panic!("{e}");
    }
});
