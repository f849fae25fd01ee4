//! The heap of a long-running controller, kept near what it holds rather than at its busiest moment.
//!
//! A pass parses and renders megabytes that it frees when it ends (the installer's core and aws
//! bundles are about 7 MiB of parsed objects). glibc's malloc keeps freed memory in its arenas, and
//! two of its defaults keep more than the process uses: the threshold above which a block gets its own
//! mapping rises with every large block freed (up to 32 MiB), so the next pass's large blocks land in
//! the arenas instead; and an arena's free pages go back to the system only from its top. Measured
//! with the installer converged on core + aws: 7.2 MiB in use, 17 MiB of anonymous memory resident
//! (BENCHMARKS.md, "the heap handed back").
//!
//! [`tune`] fixes both thresholds at start; [`release_free`] hands free pages back, and
//! [`crate::pace::run`] calls it after each pass and once more when the loop has been quiet for a
//! while, after the pass's last frees (its watch events, the blocking pool's) have happened. Another
//! allocator was tried: mimalloc kept 74 MiB resident where glibc kept 29.

/// Large blocks (a YAML document's text, a parsed bundle's buffers) get mappings of their own, given
/// back when freed, and an arena's top is trimmed beyond this much free memory; both fixed, so that
/// glibc's dynamic threshold does not grow.
const THRESHOLD: i32 = 64 * 1024;

/// Fixes malloc's mapping and trim thresholds ([`THRESHOLD`]). Call once, before the work starts.
pub fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; any value is accepted or refused whole.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, THRESHOLD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, THRESHOLD);
    }
}

/// Hands the pages of the heap that are free back to the system. Cheap (a walk over the free
/// lists); worth it after work that freed megabytes.
pub fn release_free() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns unused pages of the allocator's own arenas to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}
