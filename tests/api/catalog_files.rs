//! The repository's own checks (`catalog::repo::check_catalog`, `check_compose_drift`, `check_pins`,
//! which the repository tests in src/catalog/repo/checks.rs run on the repository) fail on a temporary copy of
//! the repository's files (with the test catalog, `tests/catalog/`) broken one way at a time, naming the file, the entry and the rule; and
//! the application refuses to start on a broken catalog.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agenticos::catalog::repo::{
    check_catalog, check_compose_drift, check_pins, rewrite_compose, sandboxd_version, CATALOG_FILE, VERSION_FILE,
    WRITE_COMMAND,
};
use agenticos::catalog::RuntimeCatalog;
use serde_json::{json, Value};

/// The files the checks read, relative to the repository root.
const FILES: [&str; 5] =
    [CATALOG_FILE, VERSION_FILE, "docker-compose.yml", "THIRD_PARTY.md", "tests/peer/requirements.txt"];

const COMPOSE: &str = "docker-compose.yml";
const THIRD_PARTY: &str = "THIRD_PARTY.md";
const REQUIREMENTS: &str = "tests/peer/requirements.txt";

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The pinned sandboxd version of the repository.
fn pin() -> String {
    sandboxd_version(repo_root()).expect("the repository's pin")
}

/// A temporary copy of the files the checks read.
struct RepoCopy {
    dir: tempfile::TempDir,
}

impl RepoCopy {
    fn new() -> RepoCopy {
        let dir = tempfile::tempdir().expect("tempdir");
        for file in FILES {
            let to = dir.path().join(file);
            std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
            std::fs::copy(repo_root().join(file), &to).unwrap_or_else(|e| panic!("copy {file}: {e}"));
        }
        // The test catalog's two entries (a built one and a ready-made one, where the shipped
        // catalog has one), with the compose file rendered from it as `--write` would.
        let catalog = Path::new(crate::helpers::TEST_CATALOG_DIR).join("sandbox_runtimes.json");
        std::fs::copy(&catalog, dir.path().join(CATALOG_FILE)).expect("copy the test catalog");
        let value = RuntimeCatalog::load(&catalog).expect("the test catalog").sandboxd_runtimes_value();
        let compose = dir.path().join(COMPOSE);
        let text = std::fs::read_to_string(&compose).expect("read");
        std::fs::write(&compose, rewrite_compose(&text, &value)).expect("write");
        RepoCopy { dir }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn path(&self, file: &str) -> PathBuf {
        self.root().join(file)
    }

    /// Changes a file; the change must change something.
    fn edit(&self, file: &str, change: impl FnOnce(&str) -> String) {
        let path = self.path(file);
        let text = std::fs::read_to_string(&path).expect("read");
        let changed = change(&text);
        assert_ne!(changed, text, "the edit of {file} changed nothing");
        std::fs::write(&path, changed).expect("write");
    }

    /// Changes the catalog's entries (a JSON array).
    fn edit_catalog(&self, change: impl FnOnce(&mut Vec<Value>)) {
        self.edit(CATALOG_FILE, |text| {
            let mut entries: Vec<Value> = serde_json::from_str(text).expect("the catalog is an array");
            change(&mut entries);
            serde_json::to_string_pretty(&entries).expect("json")
        });
    }

    /// The entry with `alias`.
    fn entry<'a>(entries: &'a mut [Value], alias: &str) -> &'a mut Value {
        entries.iter_mut().find(|e| e["alias"] == alias).unwrap_or_else(|| panic!("no {alias} entry"))
    }
}

fn one(problems: Vec<String>) -> String {
    assert_eq!(problems.len(), 1, "exactly one problem expected: {problems:#?}");
    problems.into_iter().next().expect("one")
}

#[test]
fn an_unchanged_copy_passes_every_check() {
    let copy = RepoCopy::new();
    assert_eq!(check_catalog(copy.root()), Vec::<String>::new());
    assert_eq!(check_compose_drift(copy.root()), Vec::<String>::new());
    assert_eq!(check_pins(copy.root()), Vec::<String>::new());
}

// ---------------------------------------------------------------------------------------------
// The pin

#[test]
fn another_version_in_the_compose_image_tag_fails_the_pin_check() {
    let copy = RepoCopy::new();
    let pin = pin();
    copy.edit(COMPOSE, |t| t.replace(&format!("vstorm-co/sandboxd:{pin}"), "vstorm-co/sandboxd:0.2.1"));
    assert_eq!(
        one(check_pins(copy.root())),
        format!("{} names sandboxd 0.2.1, but {VERSION_FILE} pins {pin}", copy.path(COMPOSE).display())
    );
}

#[test]
fn a_moving_tag_in_the_compose_file_fails_the_pin_check() {
    let copy = RepoCopy::new();
    let pin = pin();
    copy.edit(COMPOSE, |t| t.replace(&format!("vstorm-co/sandboxd:{pin}"), "vstorm-co/sandboxd:latest"));
    assert_eq!(
        one(check_pins(copy.root())),
        format!("{} names sandboxd latest, but {VERSION_FILE} pins {pin}", copy.path(COMPOSE).display())
    );
}

#[test]
fn another_version_in_the_peer_requirements_fails_the_pin_check() {
    let copy = RepoCopy::new();
    let pin = pin();
    copy.edit(REQUIREMENTS, |t| {
        t.replace(&format!("pydantic-ai-backend[server]=={pin}"), "pydantic-ai-backend[server]==0.2.1")
    });
    assert_eq!(
        one(check_pins(copy.root())),
        format!("{} names sandboxd 0.2.1, but {VERSION_FILE} pins {pin}", copy.path(REQUIREMENTS).display())
    );
}

#[test]
fn another_version_in_the_third_party_inventory_fails_the_pin_check() {
    let copy = RepoCopy::new();
    let pin = pin();
    copy.edit(THIRD_PARTY, |t| {
        t.replace(&format!("`ghcr.io/vstorm-co/sandboxd:{pin}`"), "`ghcr.io/vstorm-co/sandboxd:0.2.1`")
    });
    assert_eq!(
        one(check_pins(copy.root())),
        format!("{} names sandboxd 0.2.1, but {VERSION_FILE} pins {pin}", copy.path(THIRD_PARTY).display())
    );
}

#[test]
fn a_file_that_names_no_version_or_is_missing_fails_the_pin_check() {
    let copy = RepoCopy::new();
    let pin = pin();
    copy.edit(THIRD_PARTY, |_| "# Third-party software\n\nsandboxd, some version.\n".to_owned());
    std::fs::remove_file(copy.path(REQUIREMENTS)).expect("remove");
    let problems = check_pins(copy.root());
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert_eq!(
        problems[0],
        format!("{} names no sandboxd version; it must name {pin} ({VERSION_FILE})", copy.path(THIRD_PARTY).display())
    );
    assert!(
        problems[1].starts_with(&format!("{} must exist and name sandboxd {pin}", copy.path(REQUIREMENTS).display())),
        "{problems:#?}"
    );
}

#[test]
fn moving_the_pin_alone_fails_for_every_file_that_names_the_old_one() {
    let copy = RepoCopy::new();
    copy.edit(VERSION_FILE, |_| "9.9.9\n".to_owned());
    let problems = check_pins(copy.root());
    for file in [COMPOSE, THIRD_PARTY, REQUIREMENTS] {
        let named = format!("{} names sandboxd {}, but {VERSION_FILE} pins 9.9.9", copy.path(file).display(), pin());
        assert!(problems.contains(&named), "{file} not reported: {problems:#?}");
    }
}

#[test]
fn a_version_file_with_a_moving_tag_fails_the_pin_check() {
    let copy = RepoCopy::new();
    copy.edit(VERSION_FILE, |_| "latest\n".to_owned());
    let problem = one(check_pins(copy.root()));
    assert!(problem.starts_with(&copy.path(VERSION_FILE).display().to_string()), "{problem}");
    assert!(problem.contains("\"latest\" is not a release number"), "{problem}");
}

// ---------------------------------------------------------------------------------------------
// Drift of the compose file from the catalog

fn drift_message(copy: &RepoCopy) -> String {
    format!(
        "{} has drifted from {CATALOG_FILE}: its SANDBOXD_RUNTIMES is not what the catalog renders. Run `{WRITE_COMMAND}`.",
        copy.path(COMPOSE).display()
    )
}

#[test]
fn an_edited_runtimes_value_fails_the_drift_check() {
    let copy = RepoCopy::new();
    copy.edit(COMPOSE, |t| rewrite_compose(t, r#"{"python":{"image":"python:3.12.11-slim-bookworm"}}"#));
    assert_eq!(one(check_compose_drift(copy.root())), drift_message(&copy));
}

#[test]
fn a_catalog_change_without_rewriting_the_compose_file_fails_the_drift_check() {
    let copy = RepoCopy::new();
    copy.edit_catalog(|entries| {
        RepoCopy::entry(entries, "python")["description"] = json!("Python 3.12, reworded");
    });
    assert_eq!(check_catalog(copy.root()), Vec::<String>::new());
    assert_eq!(one(check_compose_drift(copy.root())), drift_message(&copy));
}

#[test]
fn a_compose_file_without_the_runtimes_fails_the_drift_check() {
    let copy = RepoCopy::new();
    copy.edit(COMPOSE, |t| t.lines().filter(|l| !l.contains("SANDBOXD_RUNTIMES:")).collect::<Vec<_>>().join("\n"));
    assert_eq!(one(check_compose_drift(copy.root())), drift_message(&copy));
}

// ---------------------------------------------------------------------------------------------
// Catalog rules: each broken entry names the file, the entry and the rule

/// The one problem of the copied catalog after `change`, with the file's path checked and cut.
fn catalog_problem(change: impl FnOnce(&mut Vec<Value>)) -> String {
    let copy = RepoCopy::new();
    copy.edit_catalog(change);
    let problem = one(check_catalog(copy.root()));
    let prefix = format!("{}: ", copy.path(CATALOG_FILE).display());
    // The drift check cannot render a broken catalog either, and says why.
    let drift = one(check_compose_drift(copy.root()));
    assert!(drift.contains(problem.strip_prefix(&prefix).unwrap_or("?")), "{drift}");
    problem.strip_prefix(&prefix).unwrap_or_else(|| panic!("{problem} does not name the file")).to_owned()
}

#[test]
fn an_alias_outside_the_pattern_names_the_entry_and_the_rule() {
    let problem = catalog_problem(|e| RepoCopy::entry(e, "python")["alias"] = json!("Python3"));
    assert_eq!(problem, r#"catalog entry 2 ("Python3"): alias "Python3" must match [a-z][a-z0-9-]*"#);
}

#[test]
fn a_duplicate_alias_names_the_entry_and_the_rule() {
    let problem = catalog_problem(|e| RepoCopy::entry(e, "python")["alias"] = json!("workbench"));
    assert_eq!(
        problem,
        r#"catalog entry 2 ("workbench"): alias "workbench" is already used by entry 1; aliases must be unique"#
    );
}

#[test]
fn both_image_and_base_image_name_the_entry_and_the_rule() {
    let problem = catalog_problem(|e| {
        RepoCopy::entry(e, "python")["base_image"] = json!("python:3.12.11-slim-bookworm");
    });
    assert_eq!(problem, r#"catalog entry 2 ("python"): exactly one of image or base_image must be set"#);
}

#[test]
fn packages_without_a_base_image_name_the_entry_and_the_rule() {
    let problem = catalog_problem(|e| RepoCopy::entry(e, "python")["packages"] = json!(["pypdf"]));
    assert_eq!(
        problem,
        r#"catalog entry 2 ("python"): packages are only allowed with base_image (an image entry installs nothing)"#
    );
}

#[test]
fn a_latest_tag_names_the_entry_and_the_rule() {
    let problem = catalog_problem(|e| RepoCopy::entry(e, "workbench")["base_image"] = json!("python:latest"));
    assert_eq!(
        problem,
        r#"catalog entry 1 ("workbench"): base_image "python:latest" uses the moving tag latest; pin it to a version tag"#
    );
}

#[test]
fn a_bad_mem_limit_names_the_entry_and_the_rule() {
    let problem = catalog_problem(|e| RepoCopy::entry(e, "python")["mem_limit"] = json!("lots"));
    assert!(
        problem.starts_with(r#"catalog entry 2 ("python"): mem_limit "lots" is not Docker memory syntax"#),
        "{problem}"
    );
}

#[test]
fn a_bad_env_var_name_names_the_entry_and_the_rule() {
    let problem = catalog_problem(|e| RepoCopy::entry(e, "workbench")["env_vars"]["1-BAD"] = json!("x"));
    assert_eq!(problem, r#"catalog entry 1 ("workbench"): env_vars name "1-BAD" must match [A-Za-z_][A-Za-z0-9_]*"#);
}

#[test]
fn an_unknown_key_names_the_entry_and_the_rule() {
    let problem = catalog_problem(|e| RepoCopy::entry(e, "python")["network"] = json!(true));
    assert!(
        problem.starts_with(r#"catalog entry 2 ("python"): not a valid entry: unknown field `network`"#),
        "{problem}"
    );
}

#[test]
fn an_empty_catalog_names_the_rule() {
    let problem = catalog_problem(Vec::clear);
    assert_eq!(problem, "catalog: must hold at least one runtime entry (the first is the default)");
}

// ---------------------------------------------------------------------------------------------
// Start-up

/// A catalog directory whose second entry has a bad alias.
fn broken_catalog_dir() -> RepoCopy {
    let copy = RepoCopy::new();
    copy.edit_catalog(|e| RepoCopy::entry(e, "python")["alias"] = json!("Python3"));
    copy
}

const BROKEN_RULE: &str = r#"catalog entry 2 ("Python3"): alias "Python3" must match [a-z][a-z0-9-]*"#;

#[tokio::test]
async fn the_app_state_is_not_built_on_a_broken_catalog() {
    let copy = broken_catalog_dir();
    let db = format!("sqlite://{}/a.db", copy.root().display());
    let catalog_dir = copy.path("catalog").display().to_string();
    let config = crate::helpers::test_config(&db, copy.root(), &[("AGENTICOS_CATALOG_DIR", &catalog_dir)]);
    let error = match agenticos::startup::AppState::build(config).await {
        Ok(_) => panic!("the app state was built on a broken catalog"),
        Err(e) => format!("{e:#}"),
    };
    assert!(error.contains(&copy.path(CATALOG_FILE).display().to_string()), "{error}");
    assert!(error.contains(BROKEN_RULE), "{error}");
}

#[tokio::test]
async fn the_binary_refuses_to_serve_on_a_broken_catalog_naming_the_entry_and_the_rule() {
    let copy = broken_catalog_dir();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_agenticos"));
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("AGENTICOS_BIND", "127.0.0.1:0")
        .env("DATABASE_URL", format!("sqlite://{}/a.db", copy.root().display()))
        .env("AGENTICOS_VAULT_KEY_FILE", copy.path("vault.key"))
        .env("AGENTICOS_CATALOG_DIR", copy.path("catalog"))
        .current_dir(copy.root())
        .arg("serve")
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("the binary stops instead of serving")
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(BROKEN_RULE), "{stderr}");
    assert!(stderr.contains(&copy.path(CATALOG_FILE).display().to_string()), "{stderr}");
}
