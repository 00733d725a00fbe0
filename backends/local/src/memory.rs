//! Memory the process holds: its peak, and handing freed heap memory back to the system.

/// Peak resident set size (VmHWM) of this process, on Linux.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Returns the heap's free pages to the system, after a model is dropped. A model's load reads
/// each weight into an allocation of a few MiB before packing it, and keeps its unpacked
/// tensors in others, which glibc serves from its heap; freed, they stay resident until
/// reused, and the next model's load does not reuse them all: a reload (or a second engine in
/// one process) held 100–200 MiB more than one model needs when the packed weights lay on the
/// heap too. (They now lie in a `WeightArena`'s runs, which go back to the system as they are
/// freed.) A no-op where the allocator is not glibc's.
pub fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointer; it walks glibc's own free lists under its locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Bytes of this process's memory on transparent huge pages (`AnonHugePages`), on Linux.
pub fn huge_page_bytes() -> Option<u64> {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
    let line = rollup.lines().find(|l| l.starts_with("AnonHugePages:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The system's transparent huge page setting, `always`, `madvise` or `never` (the bracketed
/// word of `/sys/kernel/mm/transparent_hugepage/enabled`), on Linux.
pub fn huge_page_setting() -> Option<String> {
    let enabled = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok()?;
    bracketed(&enabled).map(str::to_string)
}

/// The word in brackets: the chosen one of a sysfs setting's choices.
fn bracketed(choices: &str) -> Option<&str> {
    let (_, rest) = choices.split_once('[')?;
    rest.split_once(']').map(|(chosen, _)| chosen)
}

/// Starts [`peak_rss`] over from the present size, so that the next phase's peak can be read
/// on its own. False where the kernel refuses (before Linux 4.0, or not Linux).
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

#[cfg(test)]
mod tests {
    use super::bracketed;

    #[test]
    fn the_chosen_setting_is_the_bracketed_one() {
        assert_eq!(bracketed("always [madvise] never\n"), Some("madvise"));
        assert_eq!(bracketed("[always] madvise never"), Some("always"));
        assert_eq!(bracketed("always madvise never"), None);
    }
}
