//! Where the tests and benches find the real captures by others: the
//! repository's `tests/data/` (provenance and licences in
//! `tests/data/README.md`; never edited), or wherever `ROCESCOPE_CAPTURES`
//! points (another set of captures with the same names).
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
