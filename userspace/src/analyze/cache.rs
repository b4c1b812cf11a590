//! Cache hints shared by the analyzer's tables: a leaf module, so that any
//! of them can prefetch without depending on another.

/// Starts loading the cache lines from `p` on that hold `bytes` (no
/// effect off x86-64).
#[inline]
pub(super) fn prefetch_lines<T>(p: *const T, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    for line in (0..bytes).step_by(64) {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: a prefetch is a hint, never a load: it faults on no
        // address, and SSE is in every x86-64 CPU.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>().wrapping_add(line)) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, bytes);
}
