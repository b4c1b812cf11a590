//! Where the tests and benches find the real captures by others: the
//! repository's sibling `../shared/captures` (never edited), one level
//! further up from a git worktree at `wt/NAME`, or wherever
//! `ROCESCOPE_CAPTURES` points (a clone somewhere else).
//!
//! Not part of the tool: public only so that the integration tests, which
//! link the library as users do, look in the same places as the unit tests.
use std::path::{Path, PathBuf};

/// Names the captures folder, overriding the places searched.
pub const CAPTURES_ENV: &str = "ROCESCOPE_CAPTURES";

/// The captures folder: `$ROCESCOPE_CAPTURES`, else the first of the
/// sibling and the worktree places that exists, else the sibling one (so
/// a missing file is reported where it was expected).
pub fn captures_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(CAPTURES_ENV) {
        return PathBuf::from(dir);
    }
    // The library's manifest is `<repo>/userspace/Cargo.toml`.
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let sibling = repo.join("../shared/captures");
    let from_worktree = repo.join("../../shared/captures");
    if !sibling.is_dir() && from_worktree.is_dir() {
        from_worktree
    } else {
        sibling
    }
}

/// The capture `name` in [`captures_dir`].
pub fn shared_capture(name: &str) -> PathBuf {
    captures_dir().join(name)
}
