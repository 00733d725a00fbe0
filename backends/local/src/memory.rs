//! Memory the process holds: its peak, and handing freed heap memory back to the system.

/// Peak resident set size (VmHWM) of this process, on Linux.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Returns the heap's free pages to the system, after a model is dropped. A model's packed
/// weights are thousands of allocations of a few MiB, which glibc serves from its heap; freed,
/// they stay resident until reused, and the next model's load does not reuse them all: a
/// reload (or a second engine in one process) then held 100–200 MiB more than one model
/// needs. A no-op where the allocator is not glibc's.
pub fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointer; it walks glibc's own free lists under its locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Starts [`peak_rss`] over from the present size, so that the next phase's peak can be read
/// on its own. False where the kernel refuses (before Linux 4.0, or not Linux).
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}
