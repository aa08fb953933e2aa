//! The runtime catalog (`catalog/sandbox_runtimes.json`) and the sandboxd version pin
//! (`catalog/sandboxd.version`). This module is the only reader of `catalog/`.
//!
//! The catalog names the runtimes this deployment ships to its sandboxd hosts (DESIGN.md §5).
//! It is validated when loaded, and every problem is reported at once, naming the entry (its
//! position, counted from 1, and its alias) and the rule it breaks: a selection with a hole in it
//! is otherwise found by a user.
//!
//! Three things are derived from it:
//! - [`RuntimeCatalog::sandboxd_runtimes_value`]: the `SANDBOXD_RUNTIMES` value a sandboxd
//!   0.2.37 host parses (its JSON form, the only one that can carry packages, setup commands and
//!   environment variables), plus [`rewrite_compose`] / [`compose_drift`] to keep the compose files
//!   in step with it;
//! - [`RuntimeCatalog::briefing`]: the paragraph appended to a run's instructions;
//! - the version pin, read by [`sandboxd_version`] and checked against every file that names a
//!   sandboxd version with [`pinned_version_mentions`].
//!
//! [`check_catalog`], [`check_compose_drift`] and [`check_pins`] run those checks on the files
//! under a repository root, one line per problem: the repository's own tests call them on the
//! repository, and on broken temporary copies of it.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// Where the catalog lives, relative to the repository root.
pub const CATALOG_FILE: &str = "catalog/sandbox_runtimes.json";
/// Where the sandboxd version pin lives, relative to the repository root.
pub const VERSION_FILE: &str = "catalog/sandboxd.version";
/// The sandboxd image, without its tag.
pub const SANDBOXD_IMAGE: &str = "ghcr.io/vstorm-co/sandboxd";
/// The variable sandboxd reads its runtime allowlist from.
pub const RUNTIMES_VARIABLE: &str = "SANDBOXD_RUNTIMES";
/// The command that rewrites `SANDBOXD_RUNTIMES` in every compose file.
pub const WRITE_COMMAND: &str = "agenticos sandbox-runtimes --write";
/// sandboxd's `work_dir`: where a session's workspace is mounted in its container.
pub const WORK_DIR: &str = "/workspace";

/// The longest alias accepted. A built runtime's image is tagged `<alias>-<12 hex>`, and a
/// Docker tag holds at most 128 characters; 63 also keeps the alias readable in a dialog.
const MAX_ALIAS_LEN: usize = 63;

// ---------------------------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------------------------

/// The validated catalog. Never empty; the first entry is the default runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeCatalog {
    entries: Vec<RuntimeEntry>,
}

/// One validated runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeEntry {
    /// What an agent's settings name, `[a-z][a-z0-9-]*`.
    pub alias: String,
    /// Shown under *Default runtime* in the connection dialog.
    pub description: String,
    /// A ready-made image, or a base image sandboxd builds on first use.
    pub source: RuntimeSource,
    /// Set in every container of this runtime.
    pub env_vars: BTreeMap<String, String>,
    /// Sentences for the model that cannot be derived from the other fields.
    pub briefing: Vec<String>,
    /// Docker memory syntax (`2g`); `None` takes the host's `SANDBOXD_MEM_LIMIT`.
    pub mem_limit: Option<String>,
    /// Whether a session on this runtime gets a network (`bridge`) or none.
    pub needs_network: bool,
}

/// Where a runtime's image comes from: exactly one of the two.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeSource {
    /// A ready-made image, started as it is.
    Image(String),
    /// Built on first use: `FROM base_image`, then each setup command (`RUN`), then
    /// `pip install` of the packages.
    Build { base_image: String, setup_commands: Vec<String>, packages: Vec<String> },
}

impl RuntimeEntry {
    /// The ready-made image, for an `image` entry.
    pub fn image(&self) -> Option<&str> {
        match &self.source {
            RuntimeSource::Image(image) => Some(image),
            RuntimeSource::Build { .. } => None,
        }
    }

    /// The image a build starts from, for a `base_image` entry.
    pub fn base_image(&self) -> Option<&str> {
        match &self.source {
            RuntimeSource::Image(_) => None,
            RuntimeSource::Build { base_image, .. } => Some(base_image),
        }
    }

    /// The image this runtime runs, or is built from.
    pub fn image_label(&self) -> &str {
        match &self.source {
            RuntimeSource::Image(image) => image,
            RuntimeSource::Build { base_image, .. } => base_image,
        }
    }

    /// The pip packages installed at build time (empty for an `image` entry).
    pub fn packages(&self) -> &[String] {
        match &self.source {
            RuntimeSource::Image(_) => &[],
            RuntimeSource::Build { packages, .. } => packages,
        }
    }

    /// The shell commands run at build time, before the packages (empty for an `image` entry).
    pub fn setup_commands(&self) -> &[String] {
        match &self.source {
            RuntimeSource::Image(_) => &[],
            RuntimeSource::Build { setup_commands, .. } => setup_commands,
        }
    }

    /// The Debian packages the setup commands install (`apt-get install …` / `apt install …`),
    /// in the order written, without options.
    pub fn system_packages(&self) -> Vec<String> {
        installed_by(self.setup_commands(), &["apt-get", "apt"], "install", None)
    }

    /// The Node packages the setup commands install globally (`npm install -g …`), as written.
    pub fn global_npm_packages(&self) -> Vec<String> {
        installed_by(self.setup_commands(), &["npm"], "install", Some(&["-g", "--global"]))
    }

    /// The Docker network mode sessions on this runtime get. Always explicit: a runtime that
    /// left it out would inherit whatever `SANDBOXD_NETWORK_MODE` a host was started with.
    pub fn network_mode(&self) -> &'static str {
        if self.needs_network {
            "bridge"
        } else {
            "none"
        }
    }

    /// Whether the first session on this runtime waits for an image build.
    pub fn builds(&self) -> bool {
        matches!(self.source, RuntimeSource::Build { .. })
    }
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Loading and validation
// ---------------------------------------------------------------------------------------------

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
        let text =
            std::fs::read_to_string(path).map_err(|source| CatalogError::Read { path: path.to_path_buf(), source })?;
        RuntimeCatalog::from_json(&text).map_err(|e| match e {
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

    /// Every entry, in file order.
    pub fn entries(&self) -> &[RuntimeEntry] {
        &self.entries
    }

    /// The first entry: the runtime of an agent that names none.
    pub fn default_runtime(&self) -> &RuntimeEntry {
        // `from_json` refuses an empty catalog, so there is always a first entry.
        &self.entries[0]
    }

    /// The entry with this alias, if the catalog ships it.
    pub fn get(&self, alias: &str) -> Option<&RuntimeEntry> {
        self.entries.iter().find(|e| e.alias == alias)
    }

    /// The aliases, in file order.
    pub fn aliases(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.alias.as_str())
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

/// Whether `alias` is spelled like a runtime alias (`[a-z][a-z0-9-]*`, at most 63 characters).
pub fn is_valid_alias(alias: &str) -> bool {
    alias.len() <= 63 && is_alias(alias)
}

fn is_alias(alias: &str) -> bool {
    let mut chars = alias.chars();
    matches!(chars.next(), Some('a'..='z')) && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '-'))
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('A'..='Z' | 'a'..='z' | '_')) && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// sandboxd's own package-name rule (`PACKAGE_NAME` in its image builder): a build with a name
/// outside it fails on first use, so it is refused here at start-up instead.
fn is_package_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric() || c == '@')
        && chars.all(|c| c.is_ascii_alphanumeric() || "._@/+=<>~![]-".contains(c))
}

/// Docker memory syntax that both the Docker SDK (which sandboxd uses) and the Docker CLI accept:
/// a positive number (`2`, `1.5`), then optionally `b`, `k`, `m` or `g` in either case, optionally
/// followed by `b` (`512m`, `2g`, `2GB`).
fn is_docker_memory(limit: &str) -> bool {
    let lower = limit.to_ascii_lowercase();
    let number_end = lower.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(lower.len());
    let (number, unit) = lower.split_at(number_end);
    let well_formed = match number.split_once('.') {
        Some((whole, fraction)) => !whole.is_empty() && !fraction.is_empty() && !fraction.contains('.'),
        None => !number.is_empty(),
    };
    let positive = number.chars().any(|c| matches!(c, '1'..='9'));
    well_formed && positive && matches!(unit, "" | "b" | "k" | "m" | "g" | "kb" | "mb" | "gb")
}

fn has_line_break(text: &str) -> bool {
    text.contains('\n') || text.contains('\r')
}

/// Checks that an image reference is pinned: a tag other than `latest`, or a digest.
/// On failure, returns the rest of a sentence that starts with the field's name.
fn check_pinned_image(reference: &str) -> Result<(), String> {
    let quoted = json_string(reference);
    if reference.is_empty() || reference.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{quoted} is not an image reference"));
    }
    let (name_and_tag, digest) = match reference.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (reference, None),
    };
    let last_slash = name_and_tag.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match name_and_tag[last_slash..].rfind(':') {
        Some(i) => (&name_and_tag[..last_slash + i], Some(&name_and_tag[last_slash + i + 1..])),
        None => (name_and_tag, None),
    };
    let name_ok = !name.is_empty()
        && !name.starts_with('/')
        && !name.ends_with('/')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "._-/:".contains(c));
    if !name_ok {
        return Err(format!("{quoted} is not an image reference"));
    }
    if let Some(digest) = digest {
        let hex = digest.strip_prefix("sha256:").unwrap_or("");
        if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!("{quoted} has a malformed digest (expected sha256: and 64 hex digits)"));
        }
    }
    match tag {
        Some(tag) if tag.eq_ignore_ascii_case("latest") => {
            Err(format!("{quoted} uses the moving tag latest; pin it to a version tag"))
        }
        Some(tag) if !is_tag(tag) => Err(format!("{quoted} has a malformed tag")),
        Some(_) => Ok(()),
        None if digest.is_some() => Ok(()),
        None => Err(format!("{quoted} has no tag (which means latest); pin it to a version tag")),
    }
}

fn is_tag(tag: &str) -> bool {
    let mut chars = tag.chars();
    tag.len() <= 128
        && matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
}

/// The arguments of `<tool> [options] <verb> …` in each `&&`/`;`/`|`-separated step of the
/// commands: every word after the verb up to the end of the step, options dropped. With
/// `required_flag`, a step counts only when it carries one of those flags (`npm install -g`).
fn installed_by(commands: &[String], tools: &[&str], verb: &str, required_flag: Option<&[&str]>) -> Vec<String> {
    let mut found = Vec::new();
    for command in commands {
        for step in command.split(['&', ';', '|']) {
            let words: Vec<&str> = step.split_whitespace().collect();
            let Some(tool_at) = words.iter().position(|w| tools.contains(w)) else { continue };
            let rest = &words[tool_at + 1..];
            let Some(verb_at) = rest.iter().position(|w| *w == verb) else { continue };
            if rest[..verb_at].iter().any(|w| !w.starts_with('-')) {
                continue; // another subcommand came first
            }
            if let Some(flags) = required_flag {
                if !rest.iter().any(|w| flags.contains(w)) {
                    continue;
                }
            }
            for word in &rest[verb_at + 1..] {
                if !word.starts_with('-') && !found.iter().any(|f| f == word) {
                    found.push((*word).to_owned());
                }
            }
        }
    }
    found
}

// ---------------------------------------------------------------------------------------------
// SANDBOXD_RUNTIMES
// ---------------------------------------------------------------------------------------------

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
                    if !setup_commands.is_empty() {
                        runtime.raw("setup_commands", json_array(setup_commands));
                    }
                    if !packages.is_empty() {
                        runtime.raw("packages", json_array(packages));
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

/// A JSON object written in insertion order (serde_json's map sorts its keys unless a feature
/// that another crate may switch on says otherwise; the order of the aliases carries the default).
#[derive(Default)]
struct JsonObject {
    out: String,
}

impl JsonObject {
    fn raw(&mut self, key: &str, raw_json: String) {
        self.out.push(if self.out.is_empty() { '{' } else { ',' });
        self.out.push_str(&json_string(key));
        self.out.push(':');
        self.out.push_str(&raw_json);
    }

    fn string(&mut self, key: &str, value: &str) {
        self.raw(key, json_string(value));
    }

    fn finish(mut self) -> String {
        if self.out.is_empty() {
            self.out.push('{');
        }
        self.out.push('}');
        self.out
    }
}

fn json_string(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

fn json_array(items: &[String]) -> String {
    format!("[{}]", items.iter().map(|i| json_string(i)).collect::<Vec<_>>().join(","))
}

// ---------------------------------------------------------------------------------------------
// Briefing
// ---------------------------------------------------------------------------------------------

impl RuntimeCatalog {
    /// The paragraph appended to the instructions of a run on `alias`, composed from its entry;
    /// `None` for an alias this catalog does not ship (a prompt that guesses is worse than one
    /// that is silent).
    pub fn briefing(&self, alias: &str) -> Option<String> {
        let entry = self.get(alias)?;
        let mut sentences = vec![format!(
            "Your sandbox runs the `{}` runtime: {}.",
            entry.alias,
            entry.description.trim_end_matches('.')
        )];

        match &entry.source {
            RuntimeSource::Image(image) => {
                sentences.push(format!("It is the ready-made image `{image}`, with nothing added to it."));
            }
            RuntimeSource::Build { base_image, packages, .. } => {
                let mut lists = Vec::new();
                let system = entry.system_packages();
                if !system.is_empty() {
                    lists.push(format!("system packages {}", system.join(", ")));
                }
                let npm = entry.global_npm_packages();
                if !npm.is_empty() {
                    lists.push(format!("Node packages {}", npm.join(", ")));
                }
                if !packages.is_empty() {
                    lists.push(format!("Python packages {}", packages.join(", ")));
                }
                if lists.is_empty() {
                    sentences.push(format!("It is built on `{base_image}`."));
                } else {
                    sentences.push(format!("It is built on `{base_image}` with {}.", lists.join("; ")));
                }
            }
        }

        sentences.extend(entry.briefing.iter().map(|s| s.trim().to_owned()));

        sentences.push(if entry.needs_network {
            "It has network access.".to_owned()
        } else {
            "It has no network access: nothing can be downloaded or installed, so work with what is there.".to_owned()
        });
        if let Some(limit) = &entry.mem_limit {
            sentences.push(format!("Its memory is limited to {limit}."));
        }

        sentences.push(format!(
            "How to work there: commands run under POSIX /bin/sh, not bash, so there is no brace expansion \
             (`mkdir -p src tests` makes two folders, `mkdir -p {{src,tests}}` makes one folder named `{{src,tests}}`). \
             Project files belong in {WORK_DIR}; your home directory (~) is outside the shared files, so nothing \
             kept there is part of the workspace. Every command is a new process: `cd` and shell variables do not \
             carry over to the next command, so use absolute paths or join steps with `&&` in one command. Check \
             each command's exit status and error output, and verify that a file exists and holds what you meant \
             before you say you succeeded."
        ));
        Some(sentences.join(" "))
    }
}

// ---------------------------------------------------------------------------------------------
// Compose files
// ---------------------------------------------------------------------------------------------

/// The compose files at the root of a repository (`docker-compose*.yml`, `compose*.yaml`, …),
/// sorted by name: the files whose `SANDBOXD_RUNTIMES` must match the catalog.
pub fn compose_files(repo_root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for dir_entry in std::fs::read_dir(repo_root)? {
        let dir_entry = dir_entry?;
        let name = dir_entry.file_name().to_string_lossy().into_owned();
        let is_compose = (name.starts_with("docker-compose") || name.starts_with("compose"))
            && (name.ends_with(".yml") || name.ends_with(".yaml"));
        if is_compose && dir_entry.file_type()?.is_file() {
            files.push(dir_entry.path());
        }
    }
    files.sort();
    Ok(files)
}

/// `text` with every `SANDBOXD_RUNTIMES` setting (`SANDBOXD_RUNTIMES: …` in a mapping, or
/// `- SANDBOXD_RUNTIMES=…` in a list) replaced by `value`, written as one single-quoted YAML
/// scalar with `$` doubled for compose's interpolation. A value spread over several lines (a
/// block scalar, or a folded continuation) is replaced whole. Every other byte is kept.
pub fn rewrite_compose(text: &str, value: &str) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = String::with_capacity(text.len() + value.len());
    let mut i = 0;
    while i < lines.len() {
        let Some(setting) = runtimes_setting(&lines, i) else {
            out.push_str(lines[i]);
            i += 1;
            continue;
        };
        let body = lines[i].trim_end_matches(['\n', '\r']);
        let ending = &lines[i][body.len()..];
        out.push_str(&body[..setting.value_start]);
        if setting.value_start == body.len() && body.ends_with(':') {
            out.push(' ');
        }
        match setting.style {
            Style::Mapping => out.push_str(&compose_scalar(value)),
            Style::List => out.push_str(&compose_scalar(&format!("{RUNTIMES_VARIABLE}={value}"))),
        }
        out.push_str(ending);
        i = setting.end;
    }
    out
}

/// Whether `text` fails to set `SANDBOXD_RUNTIMES` to exactly `value`: true when it never sets it
/// (sandboxd would fall back to its library's own runtimes), or when any setting reads otherwise
/// after YAML quoting and compose's `$$` are undone. A value compose would interpolate (a lone
/// `$`) or that spans several lines counts as drifted; [`rewrite_compose`] writes the one form
/// that does not.
pub fn compose_drift(text: &str, value: &str) -> bool {
    let values = compose_runtimes_values(text);
    values.is_empty() || values.iter().any(|v| v.as_deref() != Some(value))
}

/// Every `SANDBOXD_RUNTIMES` value in a compose text, decoded; `None` for one that cannot be read
/// back as a literal (multi-line, malformed quoting, or compose interpolation).
pub fn compose_runtimes_values(text: &str) -> Vec<Option<String>> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut values = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(setting) = runtimes_setting(&lines, i) else {
            i += 1;
            continue;
        };
        let decoded = if setting.end > i + 1 {
            None
        } else {
            let body = lines[i].trim_end_matches(['\n', '\r']);
            decode_scalar(&body[setting.value_start..]).and_then(|scalar| match setting.style {
                Style::Mapping => Some(scalar),
                Style::List => scalar.strip_prefix(&format!("{RUNTIMES_VARIABLE}=")).map(str::to_owned),
            })
        }
        .and_then(|literal| compose_unescape(&literal));
        values.push(decoded);
        i = setting.end;
    }
    values
}

enum Style {
    Mapping,
    List,
}

struct Setting {
    style: Style,
    /// Byte offset in the line where the value (for a list item: the whole item) starts.
    value_start: usize,
    /// Index of the first line after the setting (continuation lines included).
    end: usize,
}

/// Recognises a `SANDBOXD_RUNTIMES` setting starting at line `i`.
fn runtimes_setting(lines: &[&str], i: usize) -> Option<Setting> {
    let line = lines[i].trim_end_matches(['\n', '\r']);
    let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
    let rest = &line[indent..];
    let (style, value_start) = if let Some(after) = rest.strip_prefix(RUNTIMES_VARIABLE) {
        let after_trim = after.trim_start_matches([' ', '\t']);
        let colon_rest = after_trim.strip_prefix(':')?;
        if !(colon_rest.is_empty() || colon_rest.starts_with([' ', '\t'])) {
            return None;
        }
        let skipped = colon_rest.len() - colon_rest.trim_start_matches([' ', '\t']).len();
        (Style::Mapping, line.len() - colon_rest.len() + skipped)
    } else if let Some(after_dash) = rest.strip_prefix('-') {
        let item = after_dash.trim_start_matches([' ', '\t']);
        if item.len() == after_dash.len() {
            return None;
        }
        let unquoted = item.trim_start_matches(['\'', '"']);
        let name_end = unquoted.strip_prefix(RUNTIMES_VARIABLE)?;
        if !name_end.starts_with('=') {
            return None;
        }
        (Style::List, line.len() - item.len())
    } else {
        return None;
    };

    // Continuation lines: anything more indented than the key (blank lines in between count
    // only when more such lines follow).
    let mut end = i + 1;
    let mut j = i + 1;
    while j < lines.len() {
        let next = lines[j].trim_end_matches(['\n', '\r']);
        if next.trim().is_empty() {
            j += 1;
            continue;
        }
        let next_indent = next.len() - next.trim_start_matches([' ', '\t']).len();
        if next_indent > indent {
            j += 1;
            end = j;
        } else {
            break;
        }
    }
    Some(Setting { style, value_start, end })
}

/// A value written as a single-quoted YAML scalar, `$` doubled so compose does not interpolate.
fn compose_scalar(value: &str) -> String {
    format!("'{}'", value.replace('$', "$$").replace('\'', "''"))
}

/// Undoes compose's `$$`; `None` when a lone `$` would be interpolated.
fn compose_unescape(literal: &str) -> Option<String> {
    let mut out = String::with_capacity(literal.len());
    let mut chars = literal.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' {
            if chars.peek() == Some(&'$') {
                chars.next();
            } else {
                return None;
            }
        }
        out.push(c);
    }
    Some(out)
}

/// Decodes a one-line YAML scalar: single-quoted, double-quoted (common escapes) or plain, with
/// an optional trailing comment. `None` for anything else (a block scalar indicator, bad quoting).
fn decode_scalar(raw: &str) -> Option<String> {
    let raw = raw.trim();
    let trailing_ok = |rest: &str| {
        let rest = rest.trim_start();
        rest.is_empty() || rest.starts_with('#')
    };
    if let Some(body) = raw.strip_prefix('\'') {
        let mut out = String::new();
        let mut chars = body.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            if c == '\'' {
                if matches!(chars.peek(), Some((_, '\''))) {
                    chars.next();
                    out.push('\'');
                } else {
                    return trailing_ok(&body[at + 1..]).then_some(out);
                }
            } else {
                out.push(c);
            }
        }
        return None;
    }
    if let Some(body) = raw.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = body.char_indices();
        while let Some((at, c)) = chars.next() {
            match c {
                '"' => return trailing_ok(&body[at + 1..]).then_some(out),
                '\\' => {
                    let (_, escaped) = chars.next()?;
                    match escaped {
                        '"' | '\\' | '/' | '\'' => out.push(escaped),
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        '$' => out.push('$'),
                        'u' => {
                            let hex: String = (0..4).filter_map(|_| chars.next().map(|(_, h)| h)).collect();
                            out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                        }
                        _ => return None,
                    }
                }
                _ => out.push(c),
            }
        }
        return None;
    }
    if raw.is_empty() || raw.starts_with(['|', '>', '&', '*', '!', '[', '{', '#']) {
        return None;
    }
    let plain = match raw.find(" #") {
        Some(at) => raw[..at].trim_end(),
        None => raw,
    };
    Some(plain.to_owned())
}

// ---------------------------------------------------------------------------------------------
// The sandboxd version pin
// ---------------------------------------------------------------------------------------------

/// The pinned sandboxd version, read from `<repo_root>/catalog/sandboxd.version`.
pub fn sandboxd_version(repo_root: &Path) -> Result<String, CatalogError> {
    read_version_file(&repo_root.join(VERSION_FILE))
}

/// Reads a version pin file: one line, a release number like `0.2.37` (never a moving tag).
pub fn read_version_file(path: &Path) -> Result<String, CatalogError> {
    let text =
        std::fs::read_to_string(path).map_err(|source| CatalogError::Read { path: path.to_path_buf(), source })?;
    let fail = |message: String| CatalogError::Version { path: path.to_path_buf(), message };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let [line] = lines.as_slice() else {
        return Err(fail(format!("must hold exactly one line with the sandboxd version, found {}", lines.len())));
    };
    let version = line.trim();
    let is_release = version.split('.').count() == 3
        && version.split('.').all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_digit()));
    if !is_release {
        return Err(fail(format!("{} is not a release number like 0.2.37", json_string(version))));
    }
    Ok(version.to_owned())
}

/// The sandboxd image for a version: `ghcr.io/vstorm-co/sandboxd:<version>`.
pub fn sandboxd_image(version: &str) -> String {
    format!("{SANDBOXD_IMAGE}:{version}")
}

/// Every sandboxd version a text names, in order: the tag of each `vstorm-co/sandboxd:<tag>`
/// image reference and the version of each `pydantic-ai-backend[extras]==<version>` requirement
/// (any spelling of the distribution name, any case). A moving reference is returned as written
/// (`latest`, `${SANDBOXD_VERSION}`), so comparing every mention with the pin catches it; an
/// image named without a tag is not a mention, so a check should also require at least one.
pub fn pinned_version_mentions(text: &str) -> Vec<String> {
    let lower = text.to_ascii_lowercase();
    let mut found: Vec<(usize, String)> = Vec::new();

    let image = "vstorm-co/sandboxd:";
    let mut from = 0;
    while let Some(at) = lower[from..].find(image) {
        let start = from + at + image.len();
        found.push((start, version_token(&text[start..])));
        from = start;
    }

    let mut from = 0;
    while let Some(at) = lower[from..].find("pydantic") {
        let start = from + at;
        from = start + "pydantic".len();
        let rest = &lower[start..];
        let name_len = ["pydantic-ai-backend", "pydantic_ai_backend", "pydantic.ai.backend"]
            .iter()
            .find(|n| rest.starts_with(**n))
            .map(|n| n.len());
        let Some(name_len) = name_len else { continue };
        let mut pos = start + name_len;
        if lower[pos..].starts_with(['-', '_', '.']) || lower[pos..].starts_with(|c: char| c.is_ascii_alphanumeric()) {
            continue; // a longer name, like pydantic-ai-backends
        }
        if lower[pos..].starts_with('[') {
            match lower[pos..].find(']') {
                Some(close) => pos += close + 1,
                None => continue,
            }
        }
        let after_space = lower[pos..].trim_start_matches([' ', '\t']);
        pos = lower.len() - after_space.len();
        if !lower[pos..].starts_with("==") {
            continue;
        }
        pos += 2;
        let after_space = lower[pos..].trim_start_matches([' ', '\t']);
        pos = lower.len() - after_space.len();
        found.push((pos, version_token(&text[pos..])));
    }

    found.sort_by_key(|(at, _)| *at);
    found.into_iter().map(|(_, v)| v).filter(|v| !v.is_empty()).collect()
}

fn version_token(text: &str) -> String {
    let end = text.find(|c: char| c.is_whitespace() || "\"'`|,;)<>#".contains(c)).unwrap_or(text.len());
    text[..end].trim_end_matches(['.', ':']).to_owned()
}

// ---------------------------------------------------------------------------------------------
// Checking a repository's files
// ---------------------------------------------------------------------------------------------

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
    let files = match compose_files(repo_root) {
        Ok(files) => files,
        Err(e) => return vec![format!("cannot list {}: {e}", repo_root.display())],
    };
    if files.is_empty() {
        return vec![format!("{} holds no compose file (docker-compose*.yml, compose*.yaml)", repo_root.display())];
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
    let mut files = match compose_files(repo_root) {
        Ok(files) => files,
        Err(e) => return vec![format!("cannot list {}: {e}", repo_root.display())],
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

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn image_entry(alias: &str) -> Value {
        json!({
            "alias": alias,
            "description": "Python, standard library only",
            "image": "python:3.12.11-slim-bookworm",
            "mem_limit": "1g",
            "needs_network": false
        })
    }

    fn build_entry(alias: &str) -> Value {
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

    fn catalog(entries: Vec<Value>) -> Result<RuntimeCatalog, CatalogError> {
        RuntimeCatalog::from_json(&Value::Array(entries).to_string())
    }

    /// The one problem an otherwise valid catalog of [python image, `entry`] has, as displayed.
    fn sole_problem(entry: Value) -> String {
        let err = catalog(vec![image_entry("python"), entry]).expect_err("the entry breaks a rule");
        assert_eq!(err.problems().len(), 1, "exactly one problem expected, got: {err}");
        err.to_string()
    }

    fn with(mut entry: Value, key: &str, value: Value) -> Value {
        entry[key] = value;
        entry
    }

    fn without(mut entry: Value, key: &str) -> Value {
        entry.as_object_mut().map(|o| o.remove(key));
        entry
    }

    // --- validation: one test per rule ----------------------------------------------------

    #[test]
    fn a_valid_catalog_loads_with_the_first_entry_as_default() {
        let c = catalog(vec![build_entry("workbench"), image_entry("python")]).expect("valid");
        assert_eq!(c.default_runtime().alias, "workbench");
        assert_eq!(c.entries().len(), 2);
        assert_eq!(c.get("python").and_then(RuntimeEntry::image), Some("python:3.12.11-slim-bookworm"));
        assert!(c.get("ruby").is_none());
        assert_eq!(c.aliases().collect::<Vec<_>>(), ["workbench", "python"]);
    }

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
    fn an_alias_outside_the_pattern_is_refused() {
        for bad in ["Py", "1py", "py_3", "-py", "py thon"] {
            let msg = sole_problem(image_entry(bad));
            let expected = format!(
                "catalog entry 2 ({}): alias {} must match [a-z][a-z0-9-]*",
                json_string(bad),
                json_string(bad)
            );
            assert_eq!(msg, expected);
        }
    }

    #[test]
    fn a_missing_alias_is_refused() {
        let msg = sole_problem(without(image_entry("py"), "alias"));
        assert_eq!(msg, "catalog entry 2: alias must be set (lowercase, matching [a-z][a-z0-9-]*)");
    }

    #[test]
    fn an_overlong_alias_is_refused() {
        let long = "a".repeat(64);
        let msg = sole_problem(image_entry(&long));
        assert!(msg.ends_with("alias must be at most 63 characters"), "{msg}");
        assert!(msg.starts_with(&format!("catalog entry 2 (\"{long}\")")), "{msg}");
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
    fn an_image_without_a_tag_is_refused() {
        let msg = sole_problem(with(image_entry("py"), "image", json!("python")));
        assert_eq!(
            msg,
            r#"catalog entry 2 ("py"): image "python" has no tag (which means latest); pin it to a version tag"#
        );
        // A registry port is not a tag.
        let msg = sole_problem(with(image_entry("py"), "image", json!("localhost:5000/tools/python")));
        assert!(msg.contains("has no tag"), "{msg}");
    }

    #[test]
    fn an_image_tagged_latest_is_refused() {
        let msg = sole_problem(with(image_entry("py"), "image", json!("python:latest")));
        assert_eq!(
            msg,
            r#"catalog entry 2 ("py"): image "python:latest" uses the moving tag latest; pin it to a version tag"#
        );
        let msg = sole_problem(with(build_entry("wb"), "base_image", json!("ghcr.io/acme/base:latest")));
        assert_eq!(
            msg,
            r#"catalog entry 2 ("wb"): base_image "ghcr.io/acme/base:latest" uses the moving tag latest; pin it to a version tag"#
        );
    }

    #[test]
    fn a_malformed_image_reference_is_refused() {
        for bad in ["", "python 3.12", "python:", "python@sha256:abc"] {
            let msg = sole_problem(with(image_entry("py"), "image", json!(bad)));
            assert!(msg.starts_with(r#"catalog entry 2 ("py"): image "#), "{msg}");
        }
    }

    #[test]
    fn pinned_image_references_are_accepted() {
        let digest = format!("sha256:{}", "a".repeat(64));
        for good in [
            "python:3.12.11-slim-bookworm".to_owned(),
            "localhost:5000/tools/python:3.12".to_owned(),
            "ghcr.io/acme/base:1.0".to_owned(),
            format!("python@{digest}"),
            format!("python:3.12@{digest}"),
        ] {
            catalog(vec![with(image_entry("py"), "image", json!(good))]).expect("pinned");
        }
    }

    #[test]
    fn a_mem_limit_outside_docker_syntax_is_refused() {
        for bad in ["2 GB", "2x", "0", "0.0g", "g", "", "1.g", ".5g", "1.2.3g", "-1g", "2t"] {
            let msg = sole_problem(with(image_entry("py"), "mem_limit", json!(bad)));
            let expected = format!(
                "catalog entry 2 (\"py\"): mem_limit {} is not Docker memory syntax (a positive number with an optional unit b, k, m or g, like 2g or 512m)",
                json_string(bad)
            );
            assert_eq!(msg, expected);
        }
        for good in ["512m", "2g", "2G", "2gb", "1.5g", "1048576", "64k"] {
            catalog(vec![with(image_entry("py"), "mem_limit", json!(good))]).expect("docker syntax");
        }
        catalog(vec![without(image_entry("py"), "mem_limit")]).expect("mem_limit is optional");
    }

    #[test]
    fn an_invalid_env_var_name_is_refused() {
        for bad in ["1X", "MY-VAR", "", "A B"] {
            let msg = sole_problem(with(build_entry("wb"), "env_vars", json!({ bad: "1" })));
            let expected = format!(
                "catalog entry 2 (\"wb\"): env_vars name {} must match [A-Za-z_][A-Za-z0-9_]*",
                json_string(bad)
            );
            assert_eq!(msg, expected);
        }
        catalog(vec![with(build_entry("wb"), "env_vars", json!({"_x1": "1", "lower_ok": "2"}))]).expect("valid names");
    }

    #[test]
    fn an_env_var_value_over_several_lines_is_refused() {
        let msg = sole_problem(with(build_entry("wb"), "env_vars", json!({"GREETING": "a\nb"})));
        assert_eq!(msg, r#"catalog entry 2 ("wb"): env_vars value of "GREETING" must be a single line"#);
    }

    #[test]
    fn an_invalid_package_name_is_refused() {
        for bad in ["pandas; rm -rf /", "", "-e", "two words"] {
            let msg = sole_problem(with(build_entry("wb"), "packages", json!([bad])));
            let expected = format!(
                "catalog entry 2 (\"wb\"): package {} is not a package name (letters, digits and ._@/+=<>~![]-, no spaces)",
                json_string(bad)
            );
            assert_eq!(msg, expected);
        }
        catalog(vec![with(
            build_entry("wb"),
            "packages",
            json!(["pandas==2.2.3", "httpx[http2]>=0.28", "@types/node"]),
        )])
        .expect("specifiers and extras");
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

    // --- rendering ------------------------------------------------------------------------

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

    // --- briefing -------------------------------------------------------------------------

    #[test]
    fn an_alias_the_catalog_does_not_ship_gets_no_briefing() {
        let c = catalog(vec![build_entry("workbench")]).expect("valid");
        assert_eq!(c.briefing("coding"), None);
        assert_eq!(c.briefing(""), None);
    }

    #[test]
    fn the_briefing_is_composed_from_the_entry() {
        let c = catalog(vec![build_entry("workbench"), image_entry("python")]).expect("valid");
        let text = c.briefing("workbench").expect("shipped");
        for part in [
            "`workbench` runtime: Python with document tools.",
            "built on `python:3.12.11-slim-bookworm`",
            "system packages git, poppler-utils",
            "Node packages tsx@4.23.15",
            "Python packages pypdf, python-docx",
            "Use `lit parse FILE` to read a PDF.",
            "It has network access.",
            "limited to 2g",
            "POSIX /bin/sh",
            "`{src,tests}`",
            "/workspace",
            "(~) is outside the shared files",
            "`cd` and shell variables do not carry over",
            "verify that a file exists",
        ] {
            assert!(text.contains(part), "briefing lacks {part:?}: {text}");
        }
        assert!(!text.contains('\n'), "one paragraph: {text}");

        let python = c.briefing("python").expect("shipped");
        assert!(python.contains("ready-made image `python:3.12.11-slim-bookworm`"), "{python}");
        assert!(python.contains("It has no network access"), "{python}");
        assert!(!python.contains("It has network access"), "{python}");
    }

    #[test]
    fn a_package_added_to_the_catalog_reaches_the_briefing() {
        let entry = with(build_entry("workbench"), "packages", json!(["pypdf", "python-docx", "duckdb"]));
        let c = catalog(vec![entry]).expect("valid");
        assert!(c.briefing("workbench").expect("shipped").contains("Python packages pypdf, python-docx, duckdb."));
    }

    #[test]
    fn system_packages_are_read_from_the_setup_commands() {
        let c = catalog(vec![with(
            build_entry("wb"),
            "setup_commands",
            json!([
                "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get -y install --no-install-recommends git jq && rm -rf /x",
                "apt install -y pandoc; npm install left-pad && npm install --global tsx@4"
            ]),
        )])
        .expect("valid");
        let wb = c.get("wb").expect("entry");
        assert_eq!(wb.system_packages(), ["git", "jq", "pandoc"]);
        assert_eq!(wb.global_npm_packages(), ["tsx@4"]);
    }

    // --- compose --------------------------------------------------------------------------

    const COMPOSE: &str = "services:\n  sandboxd:\n    image: ghcr.io/vstorm-co/sandboxd:0.2.37\n    environment:\n      SANDBOXD_TOKEN: ${SANDBOXD_TOKEN}\n      SANDBOXD_RUNTIMES: 'old'   # generated\n      SANDBOXD_NETWORK_MODE: none\n";

    #[test]
    fn rewrite_replaces_only_the_runtimes_value() {
        let out = rewrite_compose(COMPOSE, r#"{"a":{"image":"x:1"}}"#);
        assert_eq!(out, COMPOSE.replace("'old'   # generated", r#"'{"a":{"image":"x:1"}}'"#));
        assert!(!compose_drift(&out, r#"{"a":{"image":"x:1"}}"#));
        assert!(compose_drift(COMPOSE, r#"{"a":{"image":"x:1"}}"#));
        assert_eq!(rewrite_compose(&out, r#"{"a":{"image":"x:1"}}"#), out, "idempotent");
    }

    #[test]
    fn rewrite_escapes_dollars_and_quotes_for_compose() {
        let value = r#"{"a":{"runtime":{"setup_commands":["echo \"$HOME\" 'x' $$"]}}}"#;
        let out = rewrite_compose(COMPOSE, value);
        assert!(
            out.contains(r#"SANDBOXD_RUNTIMES: '{"a":{"runtime":{"setup_commands":["echo \"$$HOME\" ''x'' $$$$"]}}}'"#),
            "{out}"
        );
        assert_eq!(compose_runtimes_values(&out), vec![Some(value.to_owned())]);
        assert!(!compose_drift(&out, value));
    }

    #[test]
    fn rewrite_replaces_a_value_spread_over_several_lines() {
        let text = "    environment:\n      SANDBOXD_RUNTIMES: >-\n        {\"a\":\n        {\"image\":\"x:1\"}}\n\n      SANDBOXD_UI_ENABLED: \"0\"\n";
        assert_eq!(compose_runtimes_values(text), vec![None]);
        assert!(compose_drift(text, "v"));
        let out = rewrite_compose(text, "v");
        assert_eq!(out, "    environment:\n      SANDBOXD_RUNTIMES: 'v'\n\n      SANDBOXD_UI_ENABLED: \"0\"\n");
    }

    #[test]
    fn rewrite_handles_list_style_environment_and_a_value_on_the_next_line() {
        let text = "    environment:\n      - SANDBOXD_TOKEN=abc\n      - \"SANDBOXD_RUNTIMES=old\"\n";
        assert_eq!(compose_runtimes_values(text), vec![Some("old".to_owned())]);
        let out = rewrite_compose(text, "{\"a\":1}");
        assert_eq!(out, "    environment:\n      - SANDBOXD_TOKEN=abc\n      - 'SANDBOXD_RUNTIMES={\"a\":1}'\n");
        assert!(!compose_drift(&out, "{\"a\":1}"));

        let text = "      SANDBOXD_RUNTIMES:\n        old\n      X: y\n";
        assert_eq!(rewrite_compose(text, "v"), "      SANDBOXD_RUNTIMES: 'v'\n      X: y\n");
    }

    #[test]
    fn drift_reads_every_quoting_style() {
        assert!(!compose_drift("  SANDBOXD_RUNTIMES: \"{\\\"a\\\":1}\"\n", "{\"a\":1}"));
        assert!(!compose_drift("  SANDBOXD_RUNTIMES: python=python:3.12 # plain\n", "python=python:3.12"));
        assert!(!compose_drift("  SANDBOXD_RUNTIMES: 'it''s $$x'", "it's $x"));
    }

    #[test]
    fn a_file_that_never_sets_the_runtimes_or_interpolates_them_has_drifted() {
        assert!(compose_drift("services: {}\n", "v"));
        assert!(compose_drift("  SANDBOXD_RUNTIMES: ${RUNTIMES}\n", "${RUNTIMES}"));
        assert!(compose_drift("  SANDBOXD_RUNTIMES_EXTRA: 'v'\n", "v"));
        assert!(compose_drift("  SANDBOXD_RUNTIMES: 'v'\n  SANDBOXD_RUNTIMES: 'w'\n", "v"));
    }

    // --- the version pin ------------------------------------------------------------------

    #[test]
    fn mentions_are_the_image_tags_and_requirement_pins() {
        let text = "image: ghcr.io/vstorm-co/sandboxd:0.2.37\n\
                    url: http://sandboxd:8080\n\
                    SANDBOXD_RUNTIMES: '{\"python\":{\"image\":\"python:3.12.11-slim\"}}'\n\
                    pydantic-ai-backend[server]==0.2.36\n\
                    | sandboxd | `ghcr.io/vstorm-co/sandboxd:0.2.35` | MIT |\n\
                    Pydantic_AI_Backend == 0.2.34.\n\
                    pydantic-ai-backends==9.9.9 and pydantic-ai-backend>=0.2\n";
        assert_eq!(pinned_version_mentions(text), ["0.2.37", "0.2.36", "0.2.35", "0.2.34"]);
    }

    #[test]
    fn moving_references_are_returned_as_written() {
        let text = "image: ghcr.io/vstorm-co/sandboxd:latest\nimage: ghcr.io/vstorm-co/sandboxd:${SANDBOXD_VERSION}\n";
        assert_eq!(pinned_version_mentions(text), ["latest", "${SANDBOXD_VERSION}"]);
        assert!(pinned_version_mentions("image: ghcr.io/vstorm-co/sandboxd\n").is_empty());
    }

    #[test]
    fn the_version_file_holds_one_release_number() {
        let dir = std::env::temp_dir().join(format!("catalog-version-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("catalog")).expect("temp dir");
        let file = dir.join(VERSION_FILE);
        std::fs::write(&file, "0.2.37\n").expect("write");
        assert_eq!(sandboxd_version(&dir).expect("valid"), "0.2.37");
        for bad in ["latest\n", "0.2\n", "0.2.37\n0.2.38\n", "", "v0.2.37"] {
            std::fs::write(&file, bad).expect("write");
            let err = sandboxd_version(&dir).expect_err(bad);
            assert!(err.to_string().starts_with(&file.display().to_string()), "{err}");
        }
        std::fs::remove_dir_all(&dir).ok();
        assert!(matches!(sandboxd_version(&dir), Err(CatalogError::Read { .. })));
        assert_eq!(sandboxd_image("0.2.37"), "ghcr.io/vstorm-co/sandboxd:0.2.37");
    }

    // --- the repository's own files -------------------------------------------------------

    fn repo_root() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn the_shipped_catalog_is_valid_with_workbench_first() {
        let problems = check_catalog(repo_root());
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        let c = RuntimeCatalog::load(repo_root().join(CATALOG_FILE)).expect("the shipped catalog is valid");
        let default = c.default_runtime();
        assert_eq!(default.alias, "workbench");
        assert!(default.needs_network && default.builds());
        let python = c.get("python").expect("a python runtime ships");
        assert!(!python.needs_network);
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
