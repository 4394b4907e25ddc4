//! A table held by a distributed query engine (Apache DataFusion Ballista), counted where
//! it lies: `--data ballista://HOST:PORT/PATH` (a cluster's scheduler) or
//! `ballista://local/PATH` (a scheduler and an executor in this process).
//!
//! Why Ballista: it is Rust-native (DataFusion, Arrow), so the engine links as a library
//! behind a cargo feature, runs in-process for tests, and speaks SQL over Parquet and CSV
//! on a shared file system or object store. Spark Connect would need a JVM cluster and a
//! Rust client that is not maintained to a release.
//!
//! The engine returns exact counts of groups; dpsynth adds the noise, as for any count
//! source (`methods::counts`). The cells go through the same rules as a file read here
//! ([`super::cells`]): the engine trims text and turns the missing-value tokens into
//! missing, groups, and sends each group's values back; dpsynth finishes, encodes and
//! discretises them itself. A continuous column is binned in the query (the public bounds
//! and bin count are pushed down), and each group comes back with its smallest and largest
//! value: both must land in one level by dpsynth's own rule, so a bin the engine draws
//! differently is an error, never a silently different count (levels grow with the value,
//! so every value between the two lands there too).
//!
//! The ledger keys such a table by the content digest a file of the same records gets
//! ([`EngineTable::survey`]: the records stream through this client once to be hashed), so
//! training a file and then the same rows through an engine spends one budget; its
//! byte-key slot holds the table's identity (the URL). After the counting pass the engine
//! fingerprints the records again where they are, and a table that changed since its
//! survey is refused before anything is released ([`EngineTable::check_unchanged`]).

#[cfg(feature = "ballista")]
mod arrays;
#[cfg(feature = "ballista")]
mod ballista;
#[cfg(feature = "ballista")]
mod cluster;
#[cfg(feature = "ballista")]
mod grouping;
#[cfg(feature = "ballista")]
mod sql;
#[cfg(feature = "ballista")]
mod witness;

use super::cells::Cell;

/// Where a `ballista://` table is.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineSource {
    /// `None`: an in-process scheduler and executor (`ballista://local/…`).
    pub scheduler: Option<(String, u16)>,
    /// The table's file or folder, as the executors (and this client, for its columns)
    /// see it.
    pub path: String,
}

/// Whether this build can reach an engine (cargo feature `ballista`).
pub const AVAILABLE: bool = cfg!(feature = "ballista");

/// What a build without the engine says when asked for one.
pub const ABSENT: &str = "this build has no distributed engine: build dpsynth with `--features ballista` (cargo install --path . --features ballista)";

/// How an engine table is written, for messages that ask for one.
pub const URL_FORMS: &str =
    "ballista://HOST:PORT/PATH (a cluster's scheduler) or ballista://local/PATH (in this process)";

/// Asked while the engine works: true stops the query (a run's cancel).
pub type Stop<'a> = &'a mut dyn FnMut() -> bool;

/// What a stopped query says.
pub const STOPPED: &str = "stopped while the engine was counting";

/// What a table whose records changed between the survey that keyed its budget and the
/// counting pass says.
pub const CHANGED: &str = "changed while the run read it (its records differ from when they were surveyed to key the privacy budget): nothing was released; run again on the table as it is now";

/// The scheduler port Ballista listens on by default.
pub const DEFAULT_PORT: u16 = 50050;

impl EngineSource {
    /// `Some` when `data` names an engine table; an error says what a malformed one lacks.
    pub fn parse(data: &std::path::Path) -> Option<Result<Self, super::DataError>> {
        let s = data.to_str()?;
        let rest = s.strip_prefix("ballista://")?;
        let bad = |why: &str| {
            Some(Err(super::DataError::file(
                s,
                format!("{why}: write {URL_FORMS}"),
            )))
        };
        let Some(slash) = rest.find('/') else {
            return bad("names no table path");
        };
        let (host, path) = (&rest[..slash], &rest[slash..]);
        if path.len() < 2 {
            return bad("names no table path");
        }
        let scheduler = if host == "local" {
            None
        } else {
            let (name, port) = match host.rsplit_once(':') {
                Some((h, p)) => match p.parse::<u16>() {
                    Ok(p) => (h, p),
                    Err(_) => return bad("has a port that is not a number"),
                },
                None => (host, DEFAULT_PORT),
            };
            if name.is_empty() {
                return bad("names no scheduler host");
            }
            Some((name.to_string(), port))
        };
        Some(Ok(Self {
            scheduler,
            path: path.to_string(),
        }))
    }

    /// The table's identity, as the ledger and the statement name it.
    pub fn identity(&self) -> String {
        match &self.scheduler {
            Some((h, p)) => format!("ballista://{h}:{p}{}", self.path),
            None => format!("ballista://local{}", self.path),
        }
    }

    /// What a release names the table by: a digest of [`Self::identity`], never the
    /// engine's host, port or path (which say where the private rows lie). The data's
    /// owner can match it against the address they used; nobody else learns anything.
    pub fn opaque_identity(&self) -> String {
        use sha2::{Digest as _, Sha256};
        let d = Sha256::digest(self.identity().as_bytes());
        let hex: String = d.iter().take(8).map(|b| format!("{b:02x}")).collect();
        format!("engine table {hex}")
    }
}

/// How a column's cells are grouped in a count query.
#[derive(Debug, Clone, PartialEq)]
pub enum Grouping {
    /// By the cell's text (trimmed; missing tokens missing): categorical and binary columns.
    Text,
    /// By the bin of a number in [`lo`, `hi`] (clamped) cut into `size` equal bins, or one
    /// level per whole number from `first` when `integers` (dpsynth's own rules). A number
    /// at one of `points` (the schema's point masses, within the schema's tolerance) takes
    /// level `size + k` instead, as the domain's binned attributes do.
    Bins {
        lo: f64,
        hi: f64,
        size: usize,
        integers: Option<f64>,
        points: Vec<f64>,
    },
    /// By whether the cell is missing only.
    Missing,
}

/// One group of a count query: per column asked, the smallest and the largest cell of the
/// group (equal for text), and how many records it holds.
#[derive(Debug, Clone)]
pub struct Group {
    pub cells: Vec<(Cell, Cell)>,
    pub count: u64,
}

/// What the survey of an engine table found.
#[derive(Debug, Clone)]
pub struct EngineSurvey {
    pub rows: usize,
    /// The key a file of the same records gets ([`crate::data::digest::TableDigest`]).
    pub content_key: String,
}

#[cfg(feature = "ballista")]
pub use ballista::EngineTable;
#[cfg(feature = "ballista")]
pub use cluster::LocalCluster;

/// Without the `ballista` feature: every call says how to get one.
#[cfg(not(feature = "ballista"))]
#[derive(Debug)]
pub struct EngineTable {
    pub source: EngineSource,
}

#[cfg(not(feature = "ballista"))]
impl EngineTable {
    fn absent(&self) -> super::DataError {
        super::DataError::file(&self.source.identity(), ABSENT)
    }

    pub fn connect(source: EngineSource) -> Result<Self, super::DataError> {
        Err(Self { source }.absent())
    }

    pub fn survey(
        &mut self,
        _schema: &super::schema::Schema,
        _opts: &super::csv::LoadOptions,
        _stop: Stop<'_>,
    ) -> Result<EngineSurvey, super::DataError> {
        Err(self.absent())
    }

    pub fn groups(
        &self,
        _sets: &[Vec<(String, Grouping)>],
        _stop: Stop<'_>,
    ) -> Result<Vec<Vec<Group>>, super::DataError> {
        Err(self.absent())
    }

    pub fn check_unchanged(&self, _stop: Stop<'_>) -> Result<(), super::DataError> {
        Err(self.absent())
    }

    /// A valid cell of each schema column (the survey's), to fill the columns a count
    /// query did not ask for before encoding.
    pub fn filler(&self) -> &[(String, Cell)] {
        &[]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_names_an_engine_table_without_its_address() {
        let e = EngineSource::parse(std::path::Path::new(
            "ballista://db.example:50050/srv/people.parquet",
        ))
        .unwrap()
        .unwrap();
        let named = e.opaque_identity();
        assert!(named.starts_with("engine table "), "{named}");
        assert!(
            !named.contains("db.example") && !named.contains("people"),
            "{named}"
        );
        assert_eq!(named, e.opaque_identity(), "stable");
    }
    use std::path::Path;

    #[test]
    fn urls_parse_or_say_what_is_missing() {
        let s = EngineSource::parse(Path::new("ballista://sched:4000/data/adult.parquet"))
            .unwrap()
            .unwrap();
        assert_eq!(s.scheduler, Some(("sched".into(), 4000)));
        assert_eq!(s.path, "/data/adult.parquet");
        assert_eq!(s.identity(), "ballista://sched:4000/data/adult.parquet");
        let l = EngineSource::parse(Path::new("ballista://local/tmp/a.csv"))
            .unwrap()
            .unwrap();
        assert_eq!((l.scheduler, l.path.as_str()), (None, "/tmp/a.csv"));
        let d = EngineSource::parse(Path::new("ballista://h/x.parquet"))
            .unwrap()
            .unwrap();
        assert_eq!(d.scheduler, Some(("h".into(), DEFAULT_PORT)));
        for bad in [
            "ballista://host:99999/x",
            "ballista://host",
            "ballista://:1/x",
        ] {
            let e = EngineSource::parse(Path::new(bad)).unwrap().unwrap_err();
            assert!(e.to_string().contains("ballista://HOST:PORT/PATH"), "{e}");
        }
        assert!(EngineSource::parse(Path::new("adult.csv")).is_none());
    }
}
