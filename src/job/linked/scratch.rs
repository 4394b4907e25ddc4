//! The private folder a linked run writes its derived tables into (real rows: the
//! parents with their counts, the children beside their parents). It is removed when the
//! run ends, however it ends while the process lives; a process killed mid-run (power
//! cut, `kill -9`) cannot remove it, so each new linked run first removes the folders of
//! runs whose process is gone. Each folder names its owner's process id in a file.

use std::path::Path;

use crate::job::JobError;

/// What every such folder's name starts with.
const PREFIX: &str = "dpsynth-linked-";
/// The file inside naming the process that made it.
const OWNER: &str = "owner.pid";

/// A fresh private folder under the system's temporary folder, after removing those
/// left by dead runs.
pub(super) fn folder() -> Result<tempfile::TempDir, JobError> {
    let root = std::env::temp_dir();
    sweep(&root);
    let dir = tempfile::Builder::new()
        .prefix(PREFIX)
        .tempdir_in(&root)
        .map_err(|e| JobError::Training(format!("a temporary folder for the linked run: {e}")))?;
    std::fs::write(dir.path().join(OWNER), std::process::id().to_string())
        .map_err(|e| JobError::Training(format!("a temporary folder for the linked run: {e}")))?;
    Ok(dir)
}

/// Removes every linked run's folder under `root` whose owner is no longer running
/// (best effort: a folder that cannot be read or removed is left).
pub(super) fn sweep(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with(PREFIX) || !e.path().is_dir() {
            continue;
        }
        let owner = std::fs::read_to_string(e.path().join(OWNER))
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok());
        if owner.is_some_and(|pid| !running(pid)) || owner.is_none() && old(&e.path()) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Whether a process with this id is running.
fn running(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    if cfg!(target_os = "linux") {
        Path::new("/proc").join(pid.to_string()).exists()
    } else {
        // Elsewhere there is no cheap check: keep it (its age decides, below).
        true
    }
}

/// A folder with no owner file (being made, or from an older version) older than a day.
fn old(path: &Path) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age > std::time::Duration::from_secs(24 * 3600))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_runs_folder_is_removed_and_a_live_ones_kept() {
        let root = tempfile::tempdir().unwrap();
        let dead = root.path().join(format!("{PREFIX}dead"));
        let live = root.path().join(format!("{PREFIX}live"));
        let other = root.path().join("someone-elses");
        for d in [&dead, &live, &other] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("child.csv"), "id,year\n1,1984\n").unwrap();
        }
        // No process has the largest id a pid can be on Linux.
        std::fs::write(dead.join(OWNER), "4194304").unwrap();
        std::fs::write(live.join(OWNER), std::process::id().to_string()).unwrap();
        sweep(root.path());
        if cfg!(target_os = "linux") {
            assert!(!dead.exists(), "a dead run's real rows were left");
        }
        assert!(live.exists() && other.exists());
    }
}
