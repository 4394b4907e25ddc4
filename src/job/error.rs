//! Why a job or a job service failed, as values the window and the CLI can tell apart.

use std::path::PathBuf;

/// A job's failure. Each message says what to do about it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum JobError {
    /// The request itself is wrong (unknown method, preset or setting; ε or δ out of range):
    /// the CLI's "bad usage".
    #[error("{0}")]
    Usage(String),
    /// A method the design promises that this version lacks.
    #[error("{0}")]
    Unavailable(String),
    /// The data, schema or model file cannot be used as given.
    #[error("{}: {message}", path.display())]
    File { path: PathBuf, message: String },
    /// No plan fits the run's own (ε, δ) with these settings and this data.
    #[error("{0}")]
    CannotPlan(String),
    /// The dataset's ledger has too little left for the run (refused before training).
    #[error("{0}")]
    OverBudget(String),
    /// The budget ledger cannot be read or written.
    #[error("{0}")]
    Ledger(String),
    /// Training or sampling failed after the run started.
    #[error("{0}")]
    Training(String),
    /// Evaluation failed.
    #[error("evaluation: {0}")]
    Evaluation(#[from] crate::eval::report::EvalError),
    /// Writing an output failed.
    #[error("could not write {}: {message}", path.display())]
    Write { path: PathBuf, message: String },
}

impl JobError {
    pub(crate) fn file(path: &std::path::Path, e: impl std::fmt::Display) -> Self {
        // Lower layers often name the file already: say it once.
        let message = e.to_string();
        let prefix = format!("{}: ", path.display());
        let message = message
            .strip_prefix(&prefix)
            .map(str::to_string)
            .unwrap_or(message);
        Self::File {
            path: path.to_path_buf(),
            message,
        }
    }

    pub(crate) fn write(path: &std::path::Path, e: impl std::fmt::Display) -> Self {
        Self::Write {
            path: path.to_path_buf(),
            message: e.to_string(),
        }
    }

    /// The CLI's exit status for this error (DESIGN.md §7: 2 bad usage, 1 anything else).
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Usage(_) => 2,
            _ => 1,
        }
    }
}

impl From<crate::methods::MethodError> for JobError {
    fn from(e: crate::methods::MethodError) -> Self {
        use crate::methods::MethodError as M;
        match e {
            M::Unavailable(m) => Self::Unavailable(m),
            M::Usage(m) => Self::Usage(m),
            M::Plan(m) => Self::CannotPlan(m),
            other => Self::Training(other.to_string()),
        }
    }
}

impl From<crate::privacy::ledger::LedgerError> for JobError {
    fn from(e: crate::privacy::ledger::LedgerError) -> Self {
        use crate::privacy::ledger::LedgerError as L;
        match e {
            L::Insufficient { .. } => Self::OverBudget(e.to_string()),
            other => Self::Ledger(other.to_string()),
        }
    }
}
