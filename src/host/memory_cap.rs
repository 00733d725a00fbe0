//! A cap on the memory a child process may map. The checkers hearth runs on what a model
//! wrote (rustc, python3, `sh -n`) take untrusted text; a few lines of it can ask a compiler
//! for gigabytes. The cap makes such a child fail on its own allocation instead of pushing
//! the machine into swap while the check's timeout runs.

/// Limits the address space of the process `command` starts to `bytes` (Linux; elsewhere a
/// no-op: the caller's timeout still applies).
pub fn cap_memory(command: &mut tokio::process::Command, bytes: u64) {
    #[cfg(target_os = "linux")]
    {
        let limit = libc::rlimit {
            rlim_cur: bytes,
            rlim_max: bytes,
        };
        // SAFETY: the closure runs in the child between fork and exec and calls only setrlimit,
        // which is async-signal-safe, on a value copied into the closure.
        unsafe {
            command.pre_exec(move || {
                if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (command, bytes);
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::cap_memory;

    /// A child asking for more than its cap fails, and one that stays under it does not.
    #[tokio::test]
    async fn a_capped_child_cannot_map_more_than_its_cap() {
        let Ok(python) = which_python() else {
            return;
        };
        let run = |size: u64| {
            let mut command = tokio::process::Command::new(&python);
            cap_memory(&mut command, 512 << 20);
            command
                .args(["-c", &format!("b = bytearray({size}); print(len(b))")])
                .output()
        };
        let big = run(1 << 30).await.expect("python3 starts");
        assert!(!big.status.success(), "1 GiB mapped under a 512 MiB cap");
        let small = run(1 << 20).await.expect("python3 starts");
        assert!(small.status.success());
    }

    fn which_python() -> Result<std::path::PathBuf, ()> {
        ["/usr/bin/python3", "/usr/local/bin/python3"]
            .iter()
            .map(std::path::PathBuf::from)
            .find(|p| p.is_file())
            .ok_or(())
    }
}
