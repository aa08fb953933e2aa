//! The agent form's manifest editor: one row per entry (a file, a folder, a repository, an
//! environment variable), posted as `m{i}.kind`, `m{i}.path`, … and edited without script —
//! "Add …" and "Remove" are submit buttons that show the form again with a row more or less.
//! A row's messages are the service's (`manifest.entries[i].path`), shown at its control.

use std::collections::BTreeMap;

use crate::agents::manifest::{Manifest, ManifestEntry};
use crate::validate::FieldErrors;

/// One entry as the form shows and posts it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryRow {
    pub index: usize,
    pub kind: String,
    pub path: String,
    pub content: String,
    /// A file's bytes (base64) as saved through the API: kept, not edited here.
    pub content_base64: String,
    pub url: String,
    pub git_ref: String,
    pub name: String,
    pub value: String,
    pub secret_id: String,
    pub ephemeral: bool,
}

/// The kinds a row can be, with the label of its "Add" button.
pub const KINDS: [(&str, &str); 4] = [
    ("file", "Add a file"),
    ("dir", "Add a folder"),
    ("git_repo", "Add a repository"),
    ("env", "Add an environment variable"),
];

impl EntryRow {
    /// The control id of `field` (`m3-path`), which its message names.
    pub fn id(&self, field: &str) -> String {
        format!("m{}-{field}", self.index)
    }
    /// The posted name of `field` (`m3.path`).
    pub fn name_of(&self, field: &str) -> String {
        format!("m{}.{field}", self.index)
    }
    /// The service's message for `field` of this entry, if any.
    pub fn error<'a>(&self, errors: &'a FieldErrors, field: &str) -> Option<&'a str> {
        errors.get(&format!("manifest.entries[{}].{field}", self.index))
    }
    pub fn heading(&self) -> String {
        let what = match self.kind.as_str() {
            "file" => "File",
            "dir" => "Folder",
            "git_repo" => "Repository",
            _ => "Environment variable",
        };
        format!("{what} (entry {})", self.index + 1)
    }
}

/// The rows of a saved manifest.
pub fn rows_of(m: &Manifest) -> Vec<EntryRow> {
    let known: Vec<&ManifestEntry> = m.entries.iter().filter(|e| !matches!(e, ManifestEntry::Unknown)).collect();
    let rows = known.iter().map(|e| match e {
        ManifestEntry::File { path, content, content_base64 } => EntryRow {
            path: path.clone(),
            content: content.clone(),
            content_base64: content_base64.clone().unwrap_or_default(),
            ..EntryRow::default()
        },
        ManifestEntry::Dir { path } => EntryRow { path: path.clone(), ..EntryRow::default() },
        ManifestEntry::GitRepo { url, git_ref, path } => EntryRow {
            url: url.clone(),
            git_ref: git_ref.clone().unwrap_or_default(),
            path: path.clone(),
            ..EntryRow::default()
        },
        ManifestEntry::Env { name, value, secret_id, ephemeral } => EntryRow {
            name: name.clone(),
            value: value.clone().unwrap_or_default(),
            secret_id: secret_id.clone().unwrap_or_default(),
            ephemeral: *ephemeral,
            ..EntryRow::default()
        },
        // Left out above: a saved manifest holds none.
        ManifestEntry::Unknown => EntryRow::default(),
    });
    known.iter().zip(rows).enumerate().map(|(i, (e, r))| EntryRow { index: i, kind: e.kind().into(), ..r }).collect()
}

/// The rows posted (`m0.kind`, `m1.kind`, … in order), with `remove` (an index) left out and
/// a new row of kind `add` appended.
pub fn rows_posted(fields: &BTreeMap<String, String>, remove: Option<usize>, add: Option<&str>) -> Vec<EntryRow> {
    let get = |i: usize, f: &str| fields.get(&format!("m{i}.{f}")).cloned().unwrap_or_default();
    let mut rows = Vec::new();
    for i in 0.. {
        let Some(kind) = fields.get(&format!("m{i}.kind")) else { break };
        if Some(i) == remove {
            continue;
        }
        rows.push(EntryRow {
            index: rows.len(),
            kind: kind.clone(),
            path: get(i, "path"),
            content: get(i, "content").replace("\r\n", "\n"),
            content_base64: get(i, "content_base64"),
            url: get(i, "url"),
            git_ref: get(i, "ref"),
            name: get(i, "name"),
            value: get(i, "value"),
            secret_id: get(i, "secret_id"),
            ephemeral: fields.contains_key(&format!("m{i}.ephemeral")),
        });
    }
    if let Some(kind) = add.filter(|k| KINDS.iter().any(|(x, _)| x == k)) {
        rows.push(EntryRow { index: rows.len(), kind: kind.to_string(), ..EntryRow::default() });
    }
    rows
}

/// The manifest the rows stand for. An environment variable with a secret chosen takes the
/// secret; without one, its value (empty is a value).
pub fn manifest_of(rows: &[EntryRow]) -> Manifest {
    let opt = |s: &str| Some(s.to_string()).filter(|s| !s.trim().is_empty());
    let entries = rows
        .iter()
        .map(|r| match r.kind.as_str() {
            "dir" => ManifestEntry::Dir { path: r.path.clone() },
            "git_repo" => ManifestEntry::GitRepo { url: r.url.clone(), git_ref: opt(&r.git_ref), path: r.path.clone() },
            "env" => {
                let secret_id = opt(&r.secret_id);
                let value = secret_id.is_none().then(|| r.value.clone());
                ManifestEntry::Env { name: r.name.clone(), value, secret_id, ephemeral: r.ephemeral }
            }
            _ => ManifestEntry::File {
                path: r.path.clone(),
                content: r.content.clone(),
                content_base64: opt(&r.content_base64),
            },
        })
        .collect();
    Manifest { entries }
}

/// The posted fields of `rows` (what [`rows_posted`] reads back).
pub fn fields_of(rows: &[EntryRow]) -> BTreeMap<String, String> {
    let mut fields = BTreeMap::new();
    for r in rows {
        let values = [
            ("kind", &r.kind),
            ("path", &r.path),
            ("content", &r.content),
            ("content_base64", &r.content_base64),
            ("url", &r.url),
            ("ref", &r.git_ref),
            ("name", &r.name),
            ("value", &r.value),
            ("secret_id", &r.secret_id),
        ];
        for (f, v) in values {
            fields.insert(r.name_of(f), v.clone());
        }
        if r.ephemeral {
            fields.insert(r.name_of("ephemeral"), "on".into());
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posted_rows_round_trip_and_add_and_remove_keep_the_order() {
        let m: Manifest = serde_json::from_str(
            r#"{"entries":[{"kind":"dir","path":"out"},{"kind":"git_repo","url":"https://h/r.git","ref":"main","path":"src"},
            {"kind":"env","name":"TOKEN","secret_id":"s"},{"kind":"env","name":"MODE","value":""}]}"#,
        )
        .unwrap();
        let fields = fields_of(&rows_of(&m));
        assert_eq!(manifest_of(&rows_posted(&fields, None, None)), m);
        let edited = rows_posted(&fields, Some(0), Some("file"));
        assert_eq!(edited.iter().map(|r| r.kind.as_str()).collect::<Vec<_>>(), ["git_repo", "env", "env", "file"]);
        assert_eq!(edited.iter().map(|r| r.index).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!(rows_posted(&fields, None, Some("bogus")).len(), 4);
    }
}
