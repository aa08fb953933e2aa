//! Loading the catalog: every rule an entry must keep, all problems reported at once, naming the
//! entry (its position, counted from 1, and its alias) and the rule it breaks: a selection with a
//! hole in it is otherwise found by a user.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::error::{read_text, CatalogError, CatalogProblem};
use super::json::json_string;
use super::rules::{
    check_pinned_image, has_line_break, is_alias, is_docker_memory, is_env_name, is_package_name, MAX_ALIAS_LEN,
};
use super::runtimes::{RuntimeCatalog, RuntimeEntry, RuntimeSource};

/// An entry as written. Unknown keys are refused; the rules between fields are checked after.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    #[serde(default)]
    alias: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    image: Option<String>,
    #[serde(default)]
    base_image: Option<String>,
    #[serde(default)]
    setup_commands: Vec<String>,
    #[serde(default)]
    packages: Vec<String>,
    #[serde(default)]
    env_vars: BTreeMap<String, String>,
    #[serde(default)]
    briefing: Vec<String>,
    #[serde(default)]
    mem_limit: Option<String>,
    #[serde(default)]
    needs_network: bool,
}

impl RuntimeCatalog {
    /// Reads and validates the catalog file. Errors name the file.
    pub fn load(path: impl AsRef<Path>) -> Result<RuntimeCatalog, CatalogError> {
        let path = path.as_ref();
        RuntimeCatalog::from_json(&read_text(path)?).map_err(|e| match e {
            CatalogError::Invalid { problems, .. } => {
                CatalogError::Invalid { path: Some(path.to_path_buf()), problems }
            }
            other => other,
        })
    }

    /// Validates a catalog given as JSON text: an array of entries, the first the default.
    pub fn from_json(text: &str) -> Result<RuntimeCatalog, CatalogError> {
        let invalid = |rule: String| CatalogError::Invalid {
            path: None,
            problems: vec![CatalogProblem { entry: None, alias: None, rule }],
        };
        let value: Value = serde_json::from_str(text).map_err(|e| invalid(format!("not valid JSON: {e}")))?;
        let Value::Array(items) = value else {
            return Err(invalid("must be a JSON array of runtime entries, the first being the default".into()));
        };
        if items.is_empty() {
            return Err(invalid("must hold at least one runtime entry (the first is the default)".into()));
        }

        let mut problems = Vec::new();
        let mut entries = Vec::new();
        let mut first_use: BTreeMap<String, usize> = BTreeMap::new();
        for (i, item) in items.into_iter().enumerate() {
            let n = i + 1;
            let readable_alias = item.get("alias").and_then(Value::as_str).filter(|a| !a.is_empty()).map(str::to_owned);
            let mut problem = |rule: String| {
                problems.push(CatalogProblem { entry: Some(n), alias: readable_alias.clone(), rule });
            };
            if !item.is_object() {
                problem("must be a JSON object".into());
                continue;
            }
            let raw: RawEntry = match serde_json::from_value(item) {
                Ok(raw) => raw,
                Err(e) => {
                    problem(format!("not a valid entry: {e}"));
                    continue;
                }
            };
            if !raw.alias.is_empty() {
                if let Some(first) = first_use.get(&raw.alias) {
                    problem(format!(
                        "alias {} is already used by entry {first}; aliases must be unique",
                        json_string(&raw.alias)
                    ));
                } else {
                    first_use.insert(raw.alias.clone(), n);
                }
            }
            if let Some(entry) = validate_entry(raw, &mut problem) {
                entries.push(entry);
            }
        }
        if problems.is_empty() {
            Ok(RuntimeCatalog { entries })
        } else {
            Err(CatalogError::Invalid { path: None, problems })
        }
    }
}

/// Checks every rule of one entry; returns it when it broke none.
fn validate_entry(raw: RawEntry, problem: &mut impl FnMut(String)) -> Option<RuntimeEntry> {
    let mut broken: Vec<String> = Vec::new();

    if raw.alias.is_empty() {
        broken.push("alias must be set (lowercase, matching [a-z][a-z0-9-]*)".into());
    } else if !is_alias(&raw.alias) {
        broken.push(format!("alias {} must match [a-z][a-z0-9-]*", json_string(&raw.alias)));
    } else if raw.alias.len() > MAX_ALIAS_LEN {
        broken.push(format!("alias must be at most {MAX_ALIAS_LEN} characters"));
    }

    if raw.description.trim().is_empty() {
        broken.push("description must not be empty (it is shown in the connection dialog)".into());
    } else if has_line_break(&raw.description) {
        broken.push("description must be a single line".into());
    }

    let source = match (&raw.image, &raw.base_image) {
        (Some(_), Some(_)) | (None, None) => {
            broken.push("exactly one of image or base_image must be set".into());
            None
        }
        (Some(image), None) => {
            if let Err(why) = check_pinned_image(image) {
                broken.push(format!("image {why}"));
            }
            if !raw.setup_commands.is_empty() {
                broken.push("setup_commands are only allowed with base_image (an image entry builds nothing)".into());
            }
            if !raw.packages.is_empty() {
                broken.push("packages are only allowed with base_image (an image entry installs nothing)".into());
            }
            Some(RuntimeSource::Image(image.clone()))
        }
        (None, Some(base)) => {
            if let Err(why) = check_pinned_image(base) {
                broken.push(format!("base_image {why}"));
            }
            Some(RuntimeSource::Build {
                base_image: base.clone(),
                setup_commands: raw.setup_commands.clone(),
                packages: raw.packages.clone(),
            })
        }
    };

    for (i, command) in raw.setup_commands.iter().enumerate() {
        if command.trim().is_empty() {
            broken.push(format!("setup_commands[{i}] must not be empty"));
        } else if has_line_break(command) {
            broken.push(format!("setup_commands[{i}] must be a single line (each becomes one RUN instruction)"));
        }
    }
    for package in &raw.packages {
        if !is_package_name(package) {
            broken.push(format!(
                "package {} is not a package name (letters, digits and ._@/+=<>~![]-, no spaces)",
                json_string(package)
            ));
        }
    }
    for (name, value) in &raw.env_vars {
        if !is_env_name(name) {
            broken.push(format!("env_vars name {} must match [A-Za-z_][A-Za-z0-9_]*", json_string(name)));
        }
        if has_line_break(value) {
            broken.push(format!("env_vars value of {} must be a single line", json_string(name)));
        }
    }
    for (i, sentence) in raw.briefing.iter().enumerate() {
        if sentence.trim().is_empty() {
            broken.push(format!("briefing[{i}] must not be empty"));
        }
    }
    if let Some(limit) = &raw.mem_limit {
        if !is_docker_memory(limit) {
            broken.push(format!(
                "mem_limit {} is not Docker memory syntax (a positive number with an optional unit b, k, m or g, like 2g or 512m)",
                json_string(limit)
            ));
        }
    }

    if !broken.is_empty() {
        broken.into_iter().for_each(problem);
        return None;
    }
    Some(RuntimeEntry {
        alias: raw.alias,
        description: raw.description,
        source: source?,
        env_vars: raw.env_vars,
        briefing: raw.briefing,
        mem_limit: raw.mem_limit,
        needs_network: raw.needs_network,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::catalog::fixtures::{build_entry, catalog, image_entry, sole_problem, with, without};

    #[test]
    fn an_empty_catalog_is_refused() {
        let err = RuntimeCatalog::from_json("[]").expect_err("empty");
        assert_eq!(err.to_string(), "catalog: must hold at least one runtime entry (the first is the default)");
    }

    #[test]
    fn a_catalog_that_is_not_an_array_is_refused() {
        let err = RuntimeCatalog::from_json(r#"{"workbench": {}}"#).expect_err("object");
        assert!(err.to_string().starts_with("catalog: must be a JSON array"), "{err}");
    }

    #[test]
    fn text_that_is_not_json_is_refused() {
        let err = RuntimeCatalog::from_json("[{").expect_err("broken");
        assert!(err.to_string().starts_with("catalog: not valid JSON"), "{err}");
    }

    #[test]
    fn an_entry_that_is_not_an_object_is_refused() {
        let err = catalog(vec![image_entry("python"), json!("workbench")]).expect_err("string entry");
        assert_eq!(err.to_string(), "catalog entry 2: must be a JSON object");
    }

    #[test]
    fn an_unknown_key_is_refused() {
        let msg = sole_problem(with(image_entry("py"), "network", json!(true)));
        assert!(msg.starts_with(r#"catalog entry 2 ("py"): not a valid entry: unknown field `network`"#), "{msg}");
    }

    #[test]
    fn a_field_of_the_wrong_type_is_refused() {
        let msg = sole_problem(with(image_entry("py"), "needs_network", json!("yes")));
        assert!(msg.starts_with(r#"catalog entry 2 ("py"): not a valid entry: invalid type: string "yes""#), "{msg}");
    }

    #[test]
    fn a_missing_alias_is_refused() {
        let msg = sole_problem(without(image_entry("py"), "alias"));
        assert_eq!(msg, "catalog entry 2: alias must be set (lowercase, matching [a-z][a-z0-9-]*)");
    }

    #[test]
    fn a_duplicate_alias_is_refused() {
        let err = catalog(vec![image_entry("python"), build_entry("python")]).expect_err("duplicate");
        assert_eq!(
            err.to_string(),
            r#"catalog entry 2 ("python"): alias "python" is already used by entry 1; aliases must be unique"#
        );
    }

    #[test]
    fn an_empty_description_is_refused() {
        let msg = sole_problem(with(image_entry("py"), "description", json!("  ")));
        assert_eq!(
            msg,
            r#"catalog entry 2 ("py"): description must not be empty (it is shown in the connection dialog)"#
        );
        let msg = sole_problem(without(image_entry("py"), "description"));
        assert!(msg.contains("description must not be empty"), "{msg}");
    }

    #[test]
    fn a_description_over_several_lines_is_refused() {
        let msg = sole_problem(with(image_entry("py"), "description", json!("one\ntwo")));
        assert_eq!(msg, r#"catalog entry 2 ("py"): description must be a single line"#);
    }

    #[test]
    fn both_image_and_base_image_are_refused() {
        let msg = sole_problem(with(image_entry("py"), "base_image", json!("python:3.12.11-slim-bookworm")));
        assert_eq!(msg, r#"catalog entry 2 ("py"): exactly one of image or base_image must be set"#);
    }

    #[test]
    fn neither_image_nor_base_image_is_refused() {
        let msg = sole_problem(without(image_entry("py"), "image"));
        assert_eq!(msg, r#"catalog entry 2 ("py"): exactly one of image or base_image must be set"#);
    }

    #[test]
    fn setup_commands_on_an_image_entry_are_refused() {
        let msg = sole_problem(with(image_entry("py"), "setup_commands", json!(["apt-get update"])));
        assert_eq!(
            msg,
            r#"catalog entry 2 ("py"): setup_commands are only allowed with base_image (an image entry builds nothing)"#
        );
    }

    #[test]
    fn packages_on_an_image_entry_are_refused() {
        let msg = sole_problem(with(image_entry("py"), "packages", json!(["pandas"])));
        assert_eq!(
            msg,
            r#"catalog entry 2 ("py"): packages are only allowed with base_image (an image entry installs nothing)"#
        );
    }

    #[test]
    fn an_env_var_value_over_several_lines_is_refused() {
        let msg = sole_problem(with(build_entry("wb"), "env_vars", json!({"GREETING": "a\nb"})));
        assert_eq!(msg, r#"catalog entry 2 ("wb"): env_vars value of "GREETING" must be a single line"#);
    }

    #[test]
    fn an_empty_or_multi_line_setup_command_is_refused() {
        let msg = sole_problem(with(build_entry("wb"), "setup_commands", json!([" "])));
        assert_eq!(msg, r#"catalog entry 2 ("wb"): setup_commands[0] must not be empty"#);
        let msg = sole_problem(with(build_entry("wb"), "setup_commands", json!(["true", "apt-get update\nRUN evil"])));
        assert_eq!(
            msg,
            r#"catalog entry 2 ("wb"): setup_commands[1] must be a single line (each becomes one RUN instruction)"#
        );
    }

    #[test]
    fn an_empty_briefing_sentence_is_refused() {
        let msg = sole_problem(with(build_entry("wb"), "briefing", json!(["Fine.", ""])));
        assert_eq!(msg, r#"catalog entry 2 ("wb"): briefing[1] must not be empty"#);
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let bad = json!({"alias": "Bad", "description": "", "image": "x:latest", "mem_limit": "lots"});
        let err = catalog(vec![image_entry("python"), bad, image_entry("python")]).expect_err("broken");
        let problems = err.problems();
        assert_eq!(problems.len(), 5, "{err}");
        assert!(problems[..4].iter().all(|p| p.entry == Some(2) && p.alias.as_deref() == Some("Bad")));
        assert_eq!(problems[4].entry, Some(3));
        assert!(err.to_string().starts_with("5 problems: catalog entry 2 (\"Bad\"): alias"), "{err}");
    }

    #[test]
    fn load_names_the_file() {
        let dir = std::env::temp_dir().join(format!("catalog-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("sandbox_runtimes.json");
        std::fs::write(&path, Value::Array(vec![with(image_entry("py"), "image", json!("python"))]).to_string())
            .expect("write");
        let err = RuntimeCatalog::load(&path).expect_err("unpinned");
        assert!(err.to_string().starts_with(&format!("{}: catalog entry 1 (\"py\"): image", path.display())), "{err}");
        let missing = RuntimeCatalog::load(dir.join("missing.json")).expect_err("missing");
        assert!(matches!(missing, CatalogError::Read { .. }));
        assert!(missing.to_string().contains("missing.json"), "{missing}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
