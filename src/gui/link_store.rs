//! A linked pair kept per parent file, so the link (the child file, its column settings,
//! the key, K and the per-parent choices) and the pair's last results come back when the
//! parent file is reopened and after a restart, as a single table's settings and runs do.
//! They live in the app's data folder (`links/<hash of the parent's absolute path>.json`),
//! never beside the user's data. The results are the pair's figures as the Results tab
//! showed them (DP outputs judged against the real pair on this machine: local, like a
//! single run's kept scores).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::linked::Child;
use super::linked::results::Shown;
use crate::data::schema::Schema;
use crate::eval::linked::LinkedReport;

/// What is kept of a link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptLink {
    pub child: PathBuf,
    /// The child's column settings as the editor last showed them.
    pub schema: Schema,
    pub schema_file: Option<PathBuf>,
    pub key: Option<String>,
    pub max_children: usize,
    pub min_children: usize,
    pub unique: Option<String>,
    pub count_by: Option<String>,
    /// The pair's last results: its model, statement and figures.
    #[serde(default)]
    pub results: Option<KeptResults>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptResults {
    pub model: PathBuf,
    pub statement: String,
    pub report: LinkedReport,
}

impl KeptLink {
    pub fn of(c: &Child, results: Option<&Shown>) -> Self {
        Self {
            child: c.path.clone(),
            schema: c.schema.clone(),
            schema_file: c.schema_file.clone(),
            key: c.key.clone(),
            max_children: c.max_children,
            min_children: c.min_children,
            unique: c.unique.clone(),
            count_by: c.count_by.clone(),
            results: results.map(|s| KeptResults {
                model: s.model.clone(),
                statement: s.statement.clone(),
                report: s.report.clone(),
            }),
        }
    }

    /// The child table opened again with these settings (the file read now: call it off
    /// the UI thread), and the kept results while their model is still on disk. The kept
    /// column settings are used only while they still fit the child file.
    pub fn reopen(&self) -> Result<(Child, Option<Shown>), String> {
        let mut c = Child::open(&self.child, None)?;
        if self.schema.validate().is_ok() && self.schema.check_table(&c.table).is_ok() {
            c.schema = self.schema.clone();
            c.schema_file = self.schema_file.clone();
        }
        let has = |n: &Option<String>| n.as_ref().is_none_or(|n| c.table.column(n).is_some());
        if has(&self.key) && has(&self.unique) && has(&self.count_by) {
            c.key = self.key.clone();
            c.unique = self.unique.clone();
            c.count_by = self.count_by.clone();
        }
        c.max_children = self.max_children.max(1);
        c.min_children = self.min_children.min(c.max_children);
        let shown = self
            .results
            .as_ref()
            .filter(|r| r.model.exists())
            .map(|r| Shown {
                model: r.model.clone(),
                statement: r.statement.clone(),
                report: r.report.clone(),
            });
        Ok((c, shown))
    }
}

/// The folder links are kept in.
fn links_dir() -> PathBuf {
    crate::job::paths::data_dir().join("links")
}

/// Where the link kept for the parent file at `parent` lives under `dir`.
fn path_for(dir: &Path, parent: &Path) -> PathBuf {
    let abs = std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_path_buf());
    let hash = Sha256::digest(abs.to_string_lossy().as_bytes());
    let name: String = hash.iter().take(12).map(|b| format!("{b:02x}")).collect();
    dir.join(format!("{name}.json"))
}

/// Keeps `link` for the parent file at `parent`, or forgets the kept one (`None`: the
/// user unlinked the child). Best effort: a failure is returned for the caller to show.
pub fn keep(parent: &Path, link: Option<&KeptLink>) -> Result<(), String> {
    keep_in(&links_dir(), parent, link)
}

fn keep_in(dir: &Path, parent: &Path, link: Option<&KeptLink>) -> Result<(), String> {
    let p = path_for(dir, parent);
    let Some(link) = link else {
        return match std::fs::remove_file(&p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(format!("{}: {e}", p.display()))
            }
            _ => Ok(()),
        };
    };
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    // Absolute paths: the window may start from another folder next time.
    let abs = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let mut link = link.clone();
    link.child = abs(&link.child);
    link.schema_file = link.schema_file.as_deref().map(abs);
    let json = serde_json::to_vec_pretty(&link).map_err(|e| e.to_string())?;
    crate::util::atomic::write_atomic(&p, &json).map_err(|e| format!("{}: {e}", p.display()))
}

/// The link kept for the parent file at `parent`, if any (an unreadable one is ignored).
pub fn kept(parent: &Path) -> Option<KeptLink> {
    kept_in(&links_dir(), parent)
}

fn kept_in(dir: &Path, parent: &Path) -> Option<KeptLink> {
    let text = std::fs::read(path_for(dir, parent)).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Keeps the open parent's link as it changes, on a worker thread (a write ends with an
/// fsync; typing in the child's column editor changes the link every few frames), the
/// newest of a burst only.
#[derive(Default)]
pub struct Keeper {
    /// The parent file and its link as last kept (or as restored when it was opened).
    last: Option<(PathBuf, Option<KeptLink>)>,
    worker: Option<std::sync::mpsc::Sender<(PathBuf, Option<KeptLink>)>>,
    failed: std::sync::Arc<std::sync::Mutex<Option<String>>>,
}

impl Keeper {
    /// Called every frame with the open parent and its link: a change of link on the same
    /// parent is kept; a newly opened parent only sets what counts as unchanged.
    pub fn track(&mut self, now: Option<(&Path, Option<KeptLink>)>) {
        let Some((parent, link)) = now else {
            return;
        };
        match &self.last {
            Some((p, l)) if p == parent && *l == link => return,
            Some((p, _)) if p == parent => {}
            _ => {
                self.last = Some((parent.to_path_buf(), link));
                return;
            }
        }
        self.last = Some((parent.to_path_buf(), link.clone()));
        let failed = self.failed.clone();
        let tx = self.worker.get_or_insert_with(|| {
            let (tx, rx) = std::sync::mpsc::channel::<(PathBuf, Option<KeptLink>)>();
            std::thread::spawn(move || {
                let write = |(p, l): &(PathBuf, Option<KeptLink>)| {
                    if let (Err(e), Ok(mut f)) = (keep(p, l.as_ref()), failed.lock()) {
                        *f = Some(e);
                    }
                };
                while let Ok(mut next) = rx.recv() {
                    while let Ok(n) = rx.try_recv() {
                        if n.0 != next.0 {
                            write(&next);
                        }
                        next = n;
                    }
                    write(&next);
                }
            });
            tx
        });
        let _ = tx.send((parent.to_path_buf(), link));
    }

    /// A write that failed since the last call, to show the user.
    pub fn failure(&self) -> Option<String> {
        self.failed.lock().ok().and_then(|mut f| f.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_kept_for_a_parent_file_comes_back_and_is_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("links");
        let parent = dir.path().join("persons.csv");
        std::fs::write(&parent, "id,female\n1,0\n2,1\n").unwrap();
        let child_path = dir.path().join("years.csv");
        std::fs::write(
            &child_path,
            "id,year,docvis\n1,1984,0\n1,1985,2\n2,1984,1\n",
        )
        .unwrap();
        let mut c = Child::open(&child_path, None).unwrap();
        c.key = Some("id".into());
        c.max_children = 3;
        c.unique = Some("year".into());
        let link = KeptLink::of(&c, None);
        keep_in(&store, &parent, Some(&link)).unwrap();
        let back = kept_in(&store, &parent).unwrap();
        assert_eq!(back, link);
        let (again, shown) = back.reopen().unwrap();
        assert_eq!(again.key.as_deref(), Some("id"));
        assert_eq!(again.unique.as_deref(), Some("year"));
        assert_eq!(again.max_children, 3);
        assert!(shown.is_none());
        keep_in(&store, &parent, None).unwrap();
        assert!(kept_in(&store, &parent).is_none());
    }
}
