//! Children that do not outlive hearth. Commands and MCP servers run in their own process
//! groups, which hearth kills on every orderly exit (SIGTERM, SIGHUP, Ctrl-C, end of input).
//! For the exit no code sees — `kill -9`, a crash — Linux offers a parent-death signal: the
//! child is killed when the thread that started it ends. That thread is a runtime worker,
//! which lives as long as hearth does.

/// Makes the process `command` starts receive SIGKILL when hearth dies (Linux; elsewhere a
/// no-op: the process-group kill on exit still applies).
pub fn die_with_parent(command: &mut tokio::process::Command) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the closure runs in the child between fork and exec and calls only
        // async-signal-safe functions (prctl, getppid, _exit), touching no shared state.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent may have died before the signal was armed.
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = command;
}
