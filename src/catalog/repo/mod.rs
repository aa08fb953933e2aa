//! Repository tooling, used only by the CLI and the tests, never by the server: the compose files'
//! `SANDBOXD_RUNTIMES` (listing the files, finding drift, rewriting them to what the catalog
//! renders) and the sandboxd version pin across `docker-compose.yml`, `tests/peer/requirements.txt`
//! and `THIRD_PARTY.md`.

mod checks;
mod compose;
mod pins;
mod yaml;

pub use checks::{
    check_catalog, check_compose_drift, check_pins, compose_drift_problems, CATALOG_FILE, PINNED_FILES, WRITE_COMMAND,
};
pub use compose::{compose_drift, compose_files, compose_runtimes_values, no_compose_file, rewrite_compose};
pub use pins::{pinned_version_mentions, sandboxd_image, sandboxd_version, SANDBOXD_IMAGE, VERSION_FILE};
