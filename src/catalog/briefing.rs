//! The paragraph appended to a run's instructions, composed from its runtime's catalog entry.

use super::runtimes::{RuntimeCatalog, RuntimeSource};

/// sandboxd's `work_dir`: where a session's workspace is mounted in its container.
pub const WORK_DIR: &str = "/workspace";

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
                let (system, npm) = (entry.system_packages(), entry.global_npm_packages());
                let lists: Vec<String> =
                    [("system packages", &system), ("Node packages", &npm), ("Python packages", packages)]
                        .into_iter()
                        .filter(|(_, names)| !names.is_empty())
                        .map(|(kind, names)| format!("{kind} {}", names.join(", ")))
                        .collect();
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::catalog::fixtures::{build_entry, catalog, image_entry, with};

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
}
