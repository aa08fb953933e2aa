//! The runtime catalog (`catalog/sandbox_runtimes.json`) and the sandboxd version pin
//! (`catalog/sandboxd.version`). This module is the only reader of `catalog/`.
//!
//! The catalog names the runtimes this deployment ships to its sandboxd hosts (docs/design.md §5).
//! What the server loads at start-up lives here: the validated [`RuntimeCatalog`], the
//! `SANDBOXD_RUNTIMES` value and the briefing derived from it, and [`read_version_file`].
//! [`repo`] is the repository tooling used only by the CLI and the tests (compose drift, version
//! pins across the repository's files); nothing here imports it.

mod briefing;
mod error;
#[cfg(test)]
mod fixtures;
mod json;
pub mod repo;
mod rules;
mod runtimes;
mod sandboxd_runtimes;
mod validate;
mod version;

pub use briefing::WORK_DIR;
pub use error::{CatalogError, CatalogProblem};
pub use rules::is_valid_alias;
pub use runtimes::{RuntimeCatalog, RuntimeEntry, RuntimeSource};
pub use sandboxd_runtimes::RUNTIMES_VARIABLE;
pub use version::read_version_file;
