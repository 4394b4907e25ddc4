//! What the window remembers between sessions (eframe's storage; egui keeps the theme and
//! eframe the window's size and place on its own).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Recent files listed on the start screen.
const RECENT: usize = 8;

/// The user's last choices.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Most recent first.
    pub recent: Vec<PathBuf>,
    /// The method the user picked; empty (or not `method_chosen`) while the window still
    /// follows the recommendation for the open data.
    pub method: String,
    /// The user picked `method` on a card (an older settings file's method was only the
    /// default then, and the recommendation replaces it).
    pub method_chosen: bool,
    pub preset: String,
    pub epsilon: String,
    pub export_rows: usize,
    /// The folder of the last file opened or saved through a dialog.
    pub last_dir: Option<PathBuf>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            recent: Vec::new(),
            method: String::new(),
            method_chosen: false,
            preset: crate::job::DEFAULT_PRESET.into(),
            epsilon: "1".into(),
            export_rows: 1000,
            last_dir: None,
        }
    }
}

impl Settings {
    /// Puts `path` first in the recent list (absolute, once).
    pub fn opened(&mut self, path: &Path) {
        let p = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        self.recent.retain(|r| r != &p);
        self.recent.insert(0, p.clone());
        self.recent.truncate(RECENT);
        if let Some(d) = p.parent() {
            self.last_dir = Some(d.to_path_buf());
        }
    }
}

impl Settings {
    /// Drops `path` from the recent list (it failed to open).
    pub fn forget(&mut self, path: &Path) {
        let p = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        self.recent.retain(|r| r != &p && r != path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_files_are_unique_newest_first_and_bounded() {
        let mut s = Settings::default();
        for i in 0..12 {
            s.opened(Path::new(&format!("/nonexistent/f{i}.csv")));
        }
        s.opened(Path::new("/nonexistent/f5.csv"));
        assert_eq!(s.recent.len(), RECENT);
        assert_eq!(s.recent[0], PathBuf::from("/nonexistent/f5.csv"));
        assert_eq!(s.recent[1], PathBuf::from("/nonexistent/f11.csv"));
        assert_eq!(s.recent.iter().filter(|p| p.ends_with("f5.csv")).count(), 1);
        assert_eq!(s.last_dir, Some(PathBuf::from("/nonexistent")));
        s.forget(Path::new("/nonexistent/f5.csv"));
        assert_eq!(s.recent.len(), RECENT - 1);
        assert!(!s.recent.iter().any(|p| p.ends_with("f5.csv")));
    }

    #[test]
    fn old_or_partial_settings_still_load() {
        let s: Settings = serde_json::from_str(r#"{"epsilon":"0.5"}"#).unwrap();
        assert_eq!(s.epsilon, "0.5");
        assert!(!s.method_chosen);
        // An older file's method was the old default, not a choice: the recommendation
        // replaces it.
        let s: Settings = serde_json::from_str(r#"{"method":"dp-auto-gan"}"#).unwrap();
        assert!(!s.method_chosen);
    }
}
