//! Any bytes as a capture: the reader must never panic, hang or allocate
//! by a length read from the input, and what it returns must be coherent.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocescope::sources::{CaptureReader, MAX_CAPLEN};

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = CaptureReader::from_reader("fuzz", std::io::Cursor::new(data.to_vec()))
    else {
        return;
    };
    let mut last_number = 0u64;
    loop {
        let (number, iface, caplen, orig_len) = match reader.next_frame() {
            Ok(Some(f)) => (f.number, f.iface, f.data.len(), f.orig_len),
            Ok(None) => break,
            // A timestamp that does not fit ends the capture with an error.
            Err(rocescope::Error::BadCapture { .. }) => break,
            Err(e) => panic!("an in-memory capture gave an I/O error: {e}"),
        };
        assert!(number > last_number, "frame numbers go up");
        last_number = number;
        assert!(
            (iface as usize) < reader.interfaces().len(),
            "iface in range"
        );
        assert!(caplen <= MAX_CAPLEN as usize);
        assert!(caplen <= orig_len as usize);
        assert!(reader.offset() <= data.len() as u64);
    }
    assert!(
        reader.next_frame().is_ok_and(|f| f.is_none()),
        "stays at the end"
    );
    for w in reader.take_warnings() {
        assert!(
            w.offset <= data.len() as u64,
            "warning offset inside the file: {w}"
        );
    }
});
