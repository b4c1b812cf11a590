//! Transparent huge pages for glibc's heap.
//!
//! `analyze` touches ~50 MB of fresh heap per run (record batches, Arrow
//! arrays, Parquet pages in flight, one glibc arena per pipeline thread):
//! ~13k page faults of 4 KiB, each a trip into the kernel to clear a page.
//! glibc can back its heap with 2 MiB pages instead (`madvise(MADV_HUGEPAGE)`
//! on every heap extension), but only when told through `GLIBC_TUNABLES`
//! before the process starts: no `mallopt` sets it. So the binary, on its
//! first line, re-executes itself once with
//! `glibc.malloc.hugetlb=1:glibc.malloc.top_pad=64 MiB` added (the pad makes
//! each heap extension large enough to hold whole huge pages). Measured on
//! the bench capture (`scripts/bench.sh`): ~700 instead of ~13k faults,
//! `analyze` 12 % less wall clock and CPU, peak RSS 50 → 62 MB.
//!
//! Nothing happens when the kernel offers no transparent huge pages
//! (`/sys/kernel/mm/transparent_hugepage/enabled` is `never`), when
//! `GLIBC_TUNABLES` already sets `glibc.malloc.hugetlb` (the user's choice
//! wins), with `ROCESCOPE_HUGE_PAGES=0`, in a set-user-ID or file-capability
//! binary (glibc then ignores `GLIBC_TUNABLES`), or off glibc. The
//! re-executed process carries `ROCESCOPE_HEAP_REEXECUTED=1` and never
//! re-executes again. If the re-execution fails, the run goes on with
//! glibc's defaults.
use std::ffi::{OsStr, OsString};

/// What is added to `GLIBC_TUNABLES`.
pub const TUNABLES: &str = "glibc.malloc.hugetlb=1:glibc.malloc.top_pad=67108864";
/// `ROCESCOPE_HUGE_PAGES=0` keeps glibc's defaults.
pub const OPT_OUT: &str = "ROCESCOPE_HUGE_PAGES";
/// Set in the re-executed process: never a second time, whatever became of
/// `GLIBC_TUNABLES` on the way.
pub const REEXECUTED: &str = "ROCESCOPE_HEAP_REEXECUTED";
const THP_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/enabled";

/// Re-executes this binary with huge-page tunables when they would take
/// effect and are not set yet; returns only when it did not (or could not).
pub fn reexec_with_huge_pages() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::unix::process::CommandExt;

        // Set-user-ID or file capabilities (`setcap` for `live`): glibc
        // runs in secure mode, where it ignores (or erases) GLIBC_TUNABLES.
        // SAFETY: getauxval reads the process's auxiliary vector.
        if unsafe { libc::getauxval(libc::AT_SECURE) } != 0 {
            return;
        }
        if std::env::var_os(REEXECUTED).is_some() {
            return;
        }
        let thp = std::fs::read_to_string(THP_ENABLED).unwrap_or_default();
        let Some(tunables) = tunables_to_set(
            std::env::var_os("GLIBC_TUNABLES").as_deref(),
            std::env::var_os(OPT_OUT).as_deref(),
            &thp,
        ) else {
            return;
        };
        let mut args = std::env::args_os();
        let arg0 = args.next().unwrap_or_else(|| "rocescope".into());
        // The binary's own path, so that the process keeps its name (`ps`,
        // `top`): executing `/proc/self/exe` would call it `exe`.
        let exe = std::env::current_exe().unwrap_or_else(|_| "/proc/self/exe".into());
        // Same process (pid, open files, signal dispositions), new heap.
        // `exec` returns only on failure: then run on as we are.
        let _failed = std::process::Command::new(exe)
            .arg0(arg0)
            .args(args)
            .env("GLIBC_TUNABLES", tunables)
            .env(REEXECUTED, "1")
            .exec();
    }
}

/// The `GLIBC_TUNABLES` value to re-execute with, given the current one,
/// the opt-out variable and the kernel's THP setting; `None`: leave as is.
pub fn tunables_to_set(
    current: Option<&OsStr>,
    opt_out: Option<&OsStr>,
    thp_enabled: &str,
) -> Option<OsString> {
    if opt_out.is_some_and(|v| v == "0") {
        return None;
    }
    // `always [madvise] never`: the bracketed word is the setting.
    if !(thp_enabled.contains("[madvise]") || thp_enabled.contains("[always]")) {
        return None;
    }
    match current {
        Some(t) if t.to_string_lossy().contains("glibc.malloc.hugetlb") => None,
        Some(t) if !t.is_empty() => {
            let mut value = t.to_os_string();
            value.push(":");
            value.push(TUNABLES);
            Some(value)
        }
        _ => Some(TUNABLES.into()),
    }
}

/// Hands the heap's free pages back to the system (glibc keeps what a
/// thread freed in its arena, in the middle of the heap, for its next
/// allocations). For a phase that frees one large structure while it fills
/// another that lives in fresh memory: the flows becoming their rows at the
/// end of a run (their memory would otherwise count twice in the peak: a
/// million QPs' flows and rows are ~1.2 GB each). No-op off glibc.
pub fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of glibc's arenas.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MADVISE: &str = "always [madvise] never\n";

    #[test]
    fn tunables_are_added_once_and_only_where_they_take_effect() {
        let set = |current: Option<&str>, opt_out: Option<&str>, thp: &str| {
            tunables_to_set(current.map(OsStr::new), opt_out.map(OsStr::new), thp)
                .map(|v| v.to_string_lossy().into_owned())
        };
        assert_eq!(set(None, None, MADVISE).as_deref(), Some(TUNABLES));
        assert_eq!(
            set(Some(""), None, "[always] madvise never").as_deref(),
            Some(TUNABLES)
        );
        // The user's other tunables are kept, ours appended.
        assert_eq!(
            set(Some("glibc.malloc.arena_max=2"), None, MADVISE),
            Some(format!("glibc.malloc.arena_max=2:{TUNABLES}"))
        );
        // Already set (by us, before the re-execution, or by the user): as is.
        assert_eq!(set(Some(TUNABLES), None, MADVISE), None);
        assert_eq!(set(Some("glibc.malloc.hugetlb=0"), None, MADVISE), None);
        // No THP in this kernel, or none readable: nothing to gain.
        assert_eq!(set(None, None, "always madvise [never]"), None);
        assert_eq!(set(None, None, ""), None);
        // Opted out.
        assert_eq!(set(None, Some("0"), MADVISE), None);
        assert_eq!(set(None, Some("1"), MADVISE).as_deref(), Some(TUNABLES));
    }
}
