//! The validated catalog and its entries: what the rest of the server reads.

use std::collections::BTreeMap;

/// The validated catalog. Never empty; the first entry is the default runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeCatalog {
    pub(super) entries: Vec<RuntimeEntry>,
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

impl RuntimeCatalog {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::catalog::fixtures::{build_entry, catalog, image_entry, with};

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
}
