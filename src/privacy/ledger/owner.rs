//! Which process holds a reservation, so that one left behind by a killed run can be told
//! from one still training.
//!
//! A reservation stores its owner as `host|boot|pid|start`: the host name, the kernel's
//! boot id, the process id and the process's start time in clock ticks since boot (from
//! `/proc`). The owner is gone when, on the same host, the machine has rebooted since or no
//! process with that id and start time runs (the start time guards against a reused pid).
//! On another host, or where `/proc` is missing, liveness is unknown and the reservation is
//! treated as live: it stays counted in full, the safe direction.

/// This process's identity, or `None` where it cannot be read (then never called stale).
pub(super) fn current() -> Option<String> {
    let pid = std::process::id();
    Some(format!(
        "{}|{}|{pid}|{}",
        host()?,
        boot_id()?,
        start_ticks(pid)?
    ))
}

/// Whether the process recorded as `owner` has certainly ended.
pub(super) fn is_gone(owner: &str) -> bool {
    let parts: Vec<&str> = owner.split('|').collect();
    let [h, boot, pid, start] = parts[..] else {
        return false;
    };
    if host().as_deref() != Some(h) {
        return false;
    }
    let Some(now_boot) = boot_id() else {
        return false;
    };
    if now_boot != boot {
        return true;
    }
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    match start_ticks(pid) {
        Some(s) => s != start,
        // No such process: /proc is there (the boot id was read), the pid is not.
        None => true,
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    let s = std::fs::read_to_string(path).ok()?;
    let s = s.trim();
    (!s.is_empty() && !s.contains('|')).then(|| s.to_string())
}

fn host() -> Option<String> {
    read_trimmed("/proc/sys/kernel/hostname")
}

fn boot_id() -> Option<String> {
    read_trimmed("/proc/sys/kernel/random/boot_id")
}

/// Field 22 of `/proc/PID/stat` (the fields after the command name, which may hold spaces
/// and parentheses, start after its last `)`).
fn start_ticks(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_dead_one_is_gone() {
        let Some(me) = current() else {
            return; // no /proc here: liveness is unknown by design
        };
        assert!(!is_gone(&me), "{me}");
        // A child that has exited (and been reaped) is gone.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let start = start_ticks(pid);
        child.wait().unwrap();
        if let Some(start) = start {
            let owner = format!("{}|{}|{pid}|{start}", host().unwrap(), boot_id().unwrap());
            assert!(is_gone(&owner), "{owner}");
        }
        // Another host, or a garbled record: unknown, so not gone.
        assert!(!is_gone("elsewhere|x|1|1"));
        assert!(!is_gone("garbage"));
    }
}
