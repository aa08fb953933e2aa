//! Catalog entries and helpers shared by the catalog's unit tests.

use serde_json::{json, Value};

use super::{CatalogError, RuntimeCatalog};

pub(super) fn image_entry(alias: &str) -> Value {
    json!({
        "alias": alias,
        "description": "Python, standard library only",
        "image": "python:3.12.11-slim-bookworm",
        "mem_limit": "1g",
        "needs_network": false
    })
}

pub(super) fn build_entry(alias: &str) -> Value {
    json!({
        "alias": alias,
        "description": "Python with document tools",
        "base_image": "python:3.12.11-slim-bookworm",
        "setup_commands": ["apt-get update && apt-get install -y --no-install-recommends git poppler-utils && rm -rf /var/lib/apt/lists/*",
                           "npm install -g tsx@4.23.15"],
        "packages": ["pypdf", "python-docx"],
        "env_vars": {"PYTHONUTF8": "1", "MPLBACKEND": "Agg"},
        "briefing": ["Use `lit parse FILE` to read a PDF."],
        "mem_limit": "2g",
        "needs_network": true
    })
}

pub(super) fn catalog(entries: Vec<Value>) -> Result<RuntimeCatalog, CatalogError> {
    RuntimeCatalog::from_json(&Value::Array(entries).to_string())
}

/// The one problem an otherwise valid catalog of [python image, `entry`] has, as displayed.
pub(super) fn sole_problem(entry: Value) -> String {
    let err = catalog(vec![image_entry("python"), entry]).expect_err("the entry breaks a rule");
    assert_eq!(err.problems().len(), 1, "exactly one problem expected, got: {err}");
    err.to_string()
}

pub(super) fn with(mut entry: Value, key: &str, value: Value) -> Value {
    entry[key] = value;
    entry
}

pub(super) fn without(mut entry: Value, key: &str) -> Value {
    entry.as_object_mut().map(|o| o.remove(key));
    entry
}
