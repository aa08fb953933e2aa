//! An agent's manifest (docs/design.md §7, issue 14): what a new workspace starts with, as typed
//! entries — a `file`, a `dir` (an output folder), a `git_repo` (cloned or fetched and written
//! in), an `env` variable (a plain value or a vault secret, given to every command, never
//! written to a file). A run may bring its own manifest for its new workspace.
//! [`check`] says what may be saved; `sandbox::workspaces::manifest` materialises it.

pub mod check;

use serde::{Deserialize, Serialize};

/// The most entries one manifest holds.
pub const ENTRIES_MAX: usize = 200;
/// The most bytes one `file` entry's content takes (decoded).
pub const FILE_BYTES_MAX: usize = 256 * 1024;
/// The most bytes a manifest's file contents and env values take together.
pub const TOTAL_BYTES_MAX: usize = 4 * 1024 * 1024;
/// How many of a manifest's writes go to a workspace at once.
pub const WRITE_CONCURRENCY: usize = 4;

/// A file (or empty folder) written into a workspace: a skill, or one the manifest declares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceFile {
    /// Relative to the workspace root.
    pub path: String,
    /// The file's text (empty for a folder).
    #[serde(default)]
    pub content: String,
    /// An empty folder rather than a file.
    #[serde(default)]
    pub is_dir: bool,
}

/// What a new workspace starts with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// At most 200 entries, materialised in order (folders first, then files and repositories).
    #[serde(default)]
    pub entries: Vec<ManifestEntry>,
}

/// One thing a new workspace starts with. Every field has a default so that a missing one is
/// refused by [`check`] naming the entry, not by the JSON parser.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ManifestEntry {
    /// A file: `content` (text) or `content_base64` (bytes), at a workspace-relative `path`.
    File {
        #[serde(default)]
        path: String,
        #[serde(default)]
        content: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content_base64: Option<String>,
    },
    /// An empty (output) folder at a workspace-relative `path`.
    Dir {
        #[serde(default)]
        path: String,
    },
    /// A git repository's files at `ref` (a branch or tag; none: its default branch) under the
    /// workspace-relative folder `path`.
    GitRepo {
        #[serde(default)]
        url: String,
        #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
        git_ref: Option<String>,
        #[serde(default)]
        path: String,
    },
    /// An environment variable of every command: a plain `value`, or `secret_id` (a vault
    /// secret of purpose `other`, read at each command and never shown). `ephemeral`: left out
    /// of snapshots and session state.
    Env {
        #[serde(default)]
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        secret_id: Option<String>,
        #[serde(default)]
        ephemeral: bool,
    },
    /// A `kind` this version does not know: kept only so that [`check`] refuses it naming its
    /// entry (`manifest.entries[2].kind`); never saved.
    #[serde(other)]
    #[schema(title = "(refused) any other kind")]
    Unknown,
}

impl ManifestEntry {
    pub fn kind(&self) -> &'static str {
        match self {
            ManifestEntry::File { .. } => "file",
            ManifestEntry::Dir { .. } => "dir",
            ManifestEntry::GitRepo { .. } => "git_repo",
            ManifestEntry::Env { .. } => "env",
            ManifestEntry::Unknown => "unknown",
        }
    }
}

impl Manifest {
    /// The manifest the legacy `manifest_files` (path, content, is_dir) stand for.
    pub fn from_files(files: &[WorkspaceFile]) -> Manifest {
        let entries = files
            .iter()
            .map(|f| match f.is_dir {
                true => ManifestEntry::Dir { path: f.path.clone() },
                false => ManifestEntry::File { path: f.path.clone(), content: f.content.clone(), content_base64: None },
            })
            .collect();
        Manifest { entries }
    }

    /// The stored JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| r#"{"entries":[]}"#.into())
    }

    /// From the stored JSON (an unreadable one is empty).
    pub fn from_json(json: &str) -> Manifest {
        serde_json::from_str(json).unwrap_or_default()
    }

    /// The environment entries, in order.
    pub fn env(&self) -> impl Iterator<Item = &ManifestEntry> {
        self.entries.iter().filter(|e| matches!(e, ManifestEntry::Env { .. }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_tagged_by_kind_and_legacy_files_become_file_and_dir_entries() {
        let m: Manifest = serde_json::from_str(
            r#"{"entries":[{"kind":"git_repo","url":"http://h/r.git","ref":"main","path":"src"},
                {"kind":"env","name":"TOKEN","secret_id":"s1","ephemeral":true}]}"#,
        )
        .unwrap();
        assert_eq!(m.entries[0].kind(), "git_repo");
        assert!(matches!(&m.entries[1], ManifestEntry::Env { ephemeral: true, value: None, .. }));
        assert!(serde_json::from_str::<Manifest>(r#"{"entries":[{"kind":"dir","path":"a","x":1}]}"#).is_err());
        let legacy = [
            WorkspaceFile { path: "data".into(), content: String::new(), is_dir: true },
            WorkspaceFile { path: "a.txt".into(), content: "hi".into(), is_dir: false },
        ];
        let m = Manifest::from_files(&legacy);
        assert_eq!(
            m.to_json(),
            r#"{"entries":[{"kind":"dir","path":"data"},{"kind":"file","path":"a.txt","content":"hi"}]}"#
        );
        assert_eq!(Manifest::from_json(&m.to_json()), m);
    }
}
