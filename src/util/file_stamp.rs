//! A file's size and modification time: how the product tells that a file changed
//! without reading it (a kept report against its model and data, a streamed run's file
//! between the survey that keys its budget and the counting pass).

use std::path::Path;

/// A file's size and modification time (nanoseconds since 1970; 0 where the platform
/// gives no time, so only the size can differ then).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileStamp {
    pub len: u64,
    pub modified: u128,
}

impl FileStamp {
    pub fn of(path: &Path) -> std::io::Result<Self> {
        let m = std::fs::metadata(path)?;
        let modified = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        Ok(Self {
            len: m.len(),
            modified,
        })
    }
}
