//! The `SANDBOXD_RUNTIMES` value a sandboxd host needs for the catalog.

use super::json::{json_array, JsonObject};
use super::runtimes::{RuntimeCatalog, RuntimeEntry, RuntimeSource};

/// The variable sandboxd reads its runtime allowlist from.
pub const RUNTIMES_VARIABLE: &str = "SANDBOXD_RUNTIMES";

impl RuntimeCatalog {
    /// The `SANDBOXD_RUNTIMES` value a sandboxd 0.2.37 host needs for this catalog.
    ///
    /// sandboxd (`pydantic_ai_backends/remote/env.py`) reads a value starting with `{` as JSON:
    /// an object of `alias: entry`, in order (its first alias is the host's default runtime when
    /// `SANDBOXD_DEFAULT_RUNTIME` is unset). Each entry is a `SandboxRuntime`: exactly one of
    /// `image` (ready-made) or `runtime`, here an object that becomes a `RuntimeConfig`
    /// (`name`, `image` or `base_image`, `setup_commands`, `packages` installed with pip,
    /// `env_vars`), plus `description`, `mem_limit` and `network_mode`. The compact
    /// `alias=image;field=value,…` form cannot carry packages, setup commands or environment
    /// variables, nor a description with a comma, so it is never used.
    ///
    /// An `image` entry with environment variables is written as a `runtime` object with an
    /// `image`, because `SandboxRuntime` itself has no `env_vars`. The description is kept out of
    /// the `runtime` object: sandboxd tags a built image with a hash of that object, and a
    /// reworded description should not cost every host a rebuild.
    ///
    /// The rendering is one line of JSON with a fixed key order, so the same catalog always
    /// renders the same bytes.
    pub fn sandboxd_runtimes_value(&self) -> String {
        let mut outer = JsonObject::default();
        for entry in &self.entries {
            outer.raw(&entry.alias, render_entry(entry));
        }
        outer.finish()
    }
}

fn render_entry(entry: &RuntimeEntry) -> String {
    let mut object = JsonObject::default();
    match &entry.source {
        RuntimeSource::Image(image) if entry.env_vars.is_empty() => object.string("image", image),
        source => {
            let mut runtime = JsonObject::default();
            runtime.string("name", &entry.alias);
            match source {
                RuntimeSource::Image(image) => runtime.string("image", image),
                RuntimeSource::Build { base_image, setup_commands, packages } => {
                    runtime.string("base_image", base_image);
                    for (key, items) in [("setup_commands", setup_commands), ("packages", packages)] {
                        if !items.is_empty() {
                            runtime.raw(key, json_array(items));
                        }
                    }
                }
            }
            if !entry.env_vars.is_empty() {
                let mut env = JsonObject::default();
                for (name, value) in &entry.env_vars {
                    env.string(name, value);
                }
                runtime.raw("env_vars", env.finish());
            }
            object.raw("runtime", runtime.finish());
        }
    }
    object.string("description", &entry.description);
    if let Some(limit) = &entry.mem_limit {
        object.string("mem_limit", limit);
    }
    object.string("network_mode", entry.network_mode());
    object.finish()
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::catalog::fixtures::{build_entry, catalog, image_entry, with, without};

    #[test]
    fn an_image_entry_renders_as_an_image() {
        let c = catalog(vec![image_entry("python")]).expect("valid");
        assert_eq!(
            c.sandboxd_runtimes_value(),
            r#"{"python":{"image":"python:3.12.11-slim-bookworm","description":"Python, standard library only","mem_limit":"1g","network_mode":"none"}}"#
        );
    }

    #[test]
    fn a_build_entry_renders_as_a_runtime_object_in_catalog_order() {
        let c = catalog(vec![build_entry("workbench"), image_entry("python")]).expect("valid");
        let expected = concat!(
            r#"{"workbench":{"runtime":{"name":"workbench","base_image":"python:3.12.11-slim-bookworm","#,
            r#""setup_commands":["apt-get update && apt-get install -y --no-install-recommends git poppler-utils && rm -rf /var/lib/apt/lists/*","npm install -g tsx@4.23.15"],"#,
            r#""packages":["pypdf","python-docx"],"env_vars":{"MPLBACKEND":"Agg","PYTHONUTF8":"1"}},"#,
            r#""description":"Python with document tools","mem_limit":"2g","network_mode":"bridge"},"#,
            r#""python":{"image":"python:3.12.11-slim-bookworm","description":"Python, standard library only","mem_limit":"1g","network_mode":"none"}}"#
        );
        assert_eq!(c.sandboxd_runtimes_value(), expected);
        // The default is the first alias, and JSON order is what sandboxd keeps.
        let reversed = catalog(vec![image_entry("python"), build_entry("workbench")]).expect("valid");
        assert!(reversed.sandboxd_runtimes_value().starts_with(r#"{"python":"#));
    }

    #[test]
    fn an_image_entry_with_env_vars_renders_as_a_runtime_object_with_an_image() {
        let entry = with(without(image_entry("python"), "mem_limit"), "env_vars", json!({"PYTHONUTF8": "1"}));
        let c = catalog(vec![entry]).expect("valid");
        assert_eq!(
            c.sandboxd_runtimes_value(),
            r#"{"python":{"runtime":{"name":"python","image":"python:3.12.11-slim-bookworm","env_vars":{"PYTHONUTF8":"1"}},"description":"Python, standard library only","network_mode":"none"}}"#
        );
    }

    #[test]
    fn the_rendered_value_is_valid_json_whatever_the_text() {
        let entry = with(build_entry("wb"), "setup_commands", json!([r#"echo "a\b" 'c' $HOME, ok; done"#]));
        let c = catalog(vec![with(entry, "description", json!("Ünïcode, commas; and \"quotes\""))]).expect("valid");
        let parsed: Value = serde_json::from_str(&c.sandboxd_runtimes_value()).expect("json");
        assert_eq!(parsed["wb"]["runtime"]["setup_commands"][0], r#"echo "a\b" 'c' $HOME, ok; done"#);
        assert_eq!(parsed["wb"]["description"], "Ünïcode, commas; and \"quotes\"");
    }
}
