//! The data layer's errors: each names the file, line or column at fault, so the message
//! alone tells a person what to fix.

/// An error loading, describing or encoding data.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The file exists but its content is not usable; `message` says why and where.
    #[error("{path}: {message}")]
    File { path: String, message: String },
    /// The operating system refused to read or write a file. (Not a `#[source]`: the
    /// message already says it, and error chains would print it twice.)
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
    /// A schema (from a file or from inference) is contradictory or does not fit the data.
    #[error("{0}")]
    Schema(String),
    /// A column's values cannot be used as its kind says.
    #[error("column '{column}': {message}")]
    Column { column: String, message: String },
}

impl DataError {
    pub(crate) fn file(path: &str, message: impl Into<String>) -> Self {
        Self::File {
            path: path.to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn column(column: &str, message: impl Into<String>) -> Self {
        Self::Column {
            column: column.to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.display().to_string(),
            error: source,
        }
    }
}
