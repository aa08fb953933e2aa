//! Why the catalog or the version pin could not be used.

use std::fmt;
use std::path::{Path, PathBuf};

use super::json::json_string;

/// Why the catalog or the version pin could not be used.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}", render_problems(.path.as_deref(), .problems))]
    Invalid { path: Option<PathBuf>, problems: Vec<CatalogProblem> },
    #[error("{}: {message}", .path.display())]
    Version { path: PathBuf, message: String },
}

impl CatalogError {
    /// The individual problems of an invalid catalog (empty for the other kinds).
    pub fn problems(&self) -> &[CatalogProblem] {
        match self {
            CatalogError::Invalid { problems, .. } => problems,
            _ => &[],
        }
    }
}

/// One broken rule, and the entry that breaks it (none for the file as a whole).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogProblem {
    /// Position in the file, counted from 1.
    pub entry: Option<usize>,
    /// The entry's alias, when it has a readable one.
    pub alias: Option<String>,
    /// The rule, in words.
    pub rule: String,
}

impl fmt::Display for CatalogProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.entry, &self.alias) {
            (Some(n), Some(alias)) => write!(f, "catalog entry {n} ({}): {}", json_string(alias), self.rule),
            (Some(n), None) => write!(f, "catalog entry {n}: {}", self.rule),
            (None, _) => write!(f, "catalog: {}", self.rule),
        }
    }
}

fn render_problems(path: Option<&Path>, problems: &[CatalogProblem]) -> String {
    let listed = problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ");
    let counted = if problems.len() > 1 { format!("{} problems: {listed}", problems.len()) } else { listed };
    match path {
        Some(path) => format!("{}: {counted}", path.display()),
        None => counted,
    }
}

/// The text of a file under `catalog/`; a failure is [`CatalogError::Read`], naming the file.
pub(super) fn read_text(path: &Path) -> Result<String, CatalogError> {
    std::fs::read_to_string(path).map_err(|source| CatalogError::Read { path: path.to_path_buf(), source })
}
