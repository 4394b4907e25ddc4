//! Atomic file writes: a reader never sees a half-written export.
//!
//! The bytes go to a temporary file in the destination's own directory (a rename across
//! file systems is not atomic), are flushed to disk, and only then is the temporary file
//! renamed over the destination. The directory is synced afterwards so the rename itself
//! survives a power cut. If anything fails, the destination keeps its previous content.

use std::io::Write as _;
use std::path::Path;

/// Writes `bytes` to `path` atomically (temp file + fsync + rename + directory fsync).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// Like [`write_atomic`], but the content is produced by a closure writing into a buffered
/// writer, so large exports need not be assembled in memory first.
pub fn write_atomic_with<F>(path: &Path, fill: F) -> std::io::Result<()>
where
    F: FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
{
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".to_string());
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{file_name}."))
        .suffix(".tmp")
        .tempfile_in(&dir)?;
    {
        let mut w = std::io::BufWriter::new(tmp.as_file());
        fill(&mut w)?;
        w.flush()?;
    }
    // A temporary file is created private (0600); an export should read like any file.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    // Best effort: some platforms cannot open a directory for syncing.
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.csv");
        write_atomic(&p, b"first").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "temporary files were left behind");
    }

    #[test]
    fn failed_fill_keeps_previous_content() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.csv");
        write_atomic(&p, b"keep me").unwrap();
        let r = write_atomic_with(&p, |w| {
            w.write_all(b"partial")?;
            Err(std::io::Error::other("disk full"))
        });
        assert!(r.is_err());
        assert_eq!(std::fs::read(&p).unwrap(), b"keep me");
    }
}
