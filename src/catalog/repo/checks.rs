//! Checking a repository's files, one line per problem: the catalog loads, the compose files have
//! not drifted from it, and every file naming a sandboxd version names the pin. The repository's
//! own tests call these on the repository, and on broken temporary copies of it.

use std::path::{Path, PathBuf};

use super::compose::{compose_drift, compose_files, no_compose_file};
use super::pins::{pinned_version_mentions, sandboxd_image, sandboxd_version, VERSION_FILE};
use crate::catalog::{CatalogError, RuntimeCatalog, RUNTIMES_VARIABLE};

/// Where the catalog lives, relative to the repository root.
pub const CATALOG_FILE: &str = "catalog/sandbox_runtimes.json";
/// The command that rewrites `SANDBOXD_RUNTIMES` in every compose file.
pub const WRITE_COMMAND: &str = "agenticos sandbox-runtimes --write";
/// The files besides the compose files that must name the pinned sandboxd version, relative to
/// the repository root.
pub const PINNED_FILES: [&str; 2] = ["THIRD_PARTY.md", "tests/peer/requirements.txt"];

/// The problems of the catalog at `<repo_root>/catalog/sandbox_runtimes.json`, one line each,
/// naming the file, the entry and the rule; empty when it loads.
pub fn check_catalog(repo_root: &Path) -> Vec<String> {
    match RuntimeCatalog::load(repo_root.join(CATALOG_FILE)) {
        Ok(_) => Vec::new(),
        Err(CatalogError::Invalid { path, problems }) => {
            let file = path.unwrap_or_else(|| repo_root.join(CATALOG_FILE));
            problems.iter().map(|p| format!("{}: {p}", file.display())).collect()
        }
        Err(other) => vec![other.to_string()],
    }
}

/// The compose files at `repo_root` whose `SANDBOXD_RUNTIMES` is not `value`, one line each naming
/// the file and the command that fixes it. A root without a compose file is a problem too.
pub fn compose_drift_problems(repo_root: &Path, value: &str) -> Vec<String> {
    let files = match listed_compose_files(repo_root) {
        Ok(files) => files,
        Err(problem) => return vec![problem],
    };
    if files.is_empty() {
        return vec![no_compose_file(repo_root)];
    }
    let mut problems = Vec::new();
    for file in files {
        match std::fs::read_to_string(&file) {
            Err(e) => problems.push(format!("cannot read {}: {e}", file.display())),
            Ok(text) if compose_drift(&text, value) => problems.push(format!(
                "{} has drifted from {CATALOG_FILE}: its {RUNTIMES_VARIABLE} is not what the catalog renders. Run `{WRITE_COMMAND}`.",
                file.display()
            )),
            Ok(_) => {}
        }
    }
    problems
}

/// The compose files at `repo_root` that have drifted from the repository's catalog (see
/// [`compose_drift_problems`]); a catalog that does not load is reported instead.
pub fn check_compose_drift(repo_root: &Path) -> Vec<String> {
    match RuntimeCatalog::load(repo_root.join(CATALOG_FILE)) {
        Ok(catalog) => compose_drift_problems(repo_root, &catalog.sandboxd_runtimes_value()),
        Err(e) => vec![format!("{e} (the compose files cannot be checked until the catalog loads)")],
    }
}

/// Every file that must name the pinned sandboxd version (the compose files and
/// [`PINNED_FILES`]) and does not: one line per missing file, per file naming no version, and per
/// mention of another version or a moving tag. Empty when all agree with `catalog/sandboxd.version`.
pub fn check_pins(repo_root: &Path) -> Vec<String> {
    let pin = match sandboxd_version(repo_root) {
        Ok(pin) => pin,
        Err(e) => return vec![e.to_string()],
    };
    let mut problems = Vec::new();
    let mut files = match listed_compose_files(repo_root) {
        Ok(files) => files,
        Err(problem) => return vec![problem],
    };
    if files.is_empty() {
        problems.push(format!("{} holds no compose file; one must run {}", repo_root.display(), sandboxd_image(&pin)));
    }
    files.extend(PINNED_FILES.iter().map(|f| repo_root.join(f)));
    for file in files {
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            Err(e) => {
                problems.push(format!("{} must exist and name sandboxd {pin}: {e}", file.display()));
                continue;
            }
        };
        let mentions = pinned_version_mentions(&text);
        if mentions.is_empty() {
            problems.push(format!("{} names no sandboxd version; it must name {pin} ({VERSION_FILE})", file.display()));
        }
        for mention in mentions.into_iter().filter(|m| *m != pin) {
            problems.push(format!("{} names sandboxd {mention}, but {VERSION_FILE} pins {pin}", file.display()));
        }
    }
    problems
}

/// [`compose_files`], or the problem of a root that cannot be listed.
fn listed_compose_files(repo_root: &Path) -> Result<Vec<PathBuf>, String> {
    compose_files(repo_root).map_err(|e| format!("cannot list {}: {e}", repo_root.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_root() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn the_shipped_catalog_is_valid_and_ships_workbench_alone() {
        let problems = check_catalog(repo_root());
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        let c = RuntimeCatalog::load(repo_root().join(CATALOG_FILE)).expect("the shipped catalog is valid");
        let default = c.default_runtime();
        assert_eq!(default.alias, "workbench");
        assert!(default.needs_network && default.builds());
        // One runtime ships (docs/design.md §5 and §14, "one instead of eight": the host builds
        // every allowlisted alias as it starts).
        assert_eq!(c.aliases().collect::<Vec<_>>(), ["workbench"]);
        for entry in c.entries() {
            assert!(c.briefing(&entry.alias).is_some());
        }
    }

    #[test]
    fn the_compose_files_have_not_drifted_from_the_catalog() {
        let problems = check_compose_drift(repo_root());
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn every_file_naming_a_sandboxd_version_names_the_pin() {
        let problems = check_pins(repo_root());
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
