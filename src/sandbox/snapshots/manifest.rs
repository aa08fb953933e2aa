//! An archive's manifest (issue 50): the last entry of every archive, `.agenticos/snapshot-manifest.json`
//! (our own folder: never a person's file, never restored), listing each file's path, size and
//! SHA-256. A restore reads the whole archive against it before writing anything, and a file that
//! differs (changed, missing, added) is named.

use std::collections::BTreeMap;
use std::io::Read;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Where the manifest sits in an archive.
pub const MANIFEST_PATH: &str = ".agenticos/snapshot-manifest.json";

/// How many differing files a refusal names (the rest are counted).
const NAMED: usize = 10;

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Manifest {
    pub files: Vec<ManifestFile>,
}

/// One file: workspace-relative path, bytes, SHA-256 (hex).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestFile {
    pub path: String,
    pub size: u64,
    pub sha256: String,
}

/// What checking an archive against its manifest found.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every file as listed.
    Matches,
    /// These files differ (changed, missing from the archive, or not listed), by path.
    Differs(Vec<String>),
    /// No manifest (an archive taken before manifests): not checked.
    Unchecked,
}

impl Verdict {
    /// "notes/a.md, b.bin and 3 more"
    pub fn named(paths: &[String]) -> String {
        let mut shown = paths.iter().take(NAMED).cloned().collect::<Vec<_>>().join(", ");
        if paths.len() > NAMED {
            shown.push_str(&format!(" and {} more", paths.len() - NAMED));
        }
        shown
    }
}

impl ManifestFile {
    pub fn of(path: &str, bytes: &[u8]) -> ManifestFile {
        ManifestFile { path: path.to_string(), size: bytes.len() as u64, sha256: hex::encode(Sha256::digest(bytes)) }
    }

    /// The same, of what `r` reads to its end.
    pub fn read(path: &str, r: &mut impl Read) -> std::io::Result<ManifestFile> {
        let mut hash = Sha256::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut size = 0u64;
        loop {
            let n = r.read(&mut buf)?;
            if n == 0 {
                break;
            }
            size += n as u64;
            hash.update(&buf[..n]);
        }
        Ok(ManifestFile { path: path.to_string(), size, sha256: hex::encode(hash.finalize()) })
    }
}

impl Manifest {
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a manifest serializes")
    }

    pub fn from_json(body: &[u8]) -> std::io::Result<Manifest> {
        serde_json::from_slice(body)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("a snapshot's manifest: {e}")))
    }

    /// The files found against the files listed.
    pub fn compare(&self, found: &[ManifestFile]) -> Verdict {
        let listed: BTreeMap<&str, &ManifestFile> = self.files.iter().map(|f| (f.path.as_str(), f)).collect();
        let mut differ: Vec<String> = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for f in found {
            seen.insert(f.path.as_str());
            if listed.get(f.path.as_str()).is_none_or(|l| *l != f) {
                differ.push(f.path.clone());
            }
        }
        differ.extend(listed.keys().filter(|p| !seen.contains(*p)).map(|p| p.to_string()));
        differ.sort();
        differ.dedup();
        if differ.is_empty() {
            Verdict::Matches
        } else {
            Verdict::Differs(differ)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_a_missing_and_an_added_file_are_each_named() {
        let m = Manifest {
            files: vec![ManifestFile::of("a", b"1"), ManifestFile::of("b", b"2"), ManifestFile::of("c", b"3")],
        };
        assert_eq!(m.compare(&m.files), Verdict::Matches);
        let found = vec![ManifestFile::of("a", b"1"), ManifestFile::of("b", b"X"), ManifestFile::of("d", b"4")];
        assert_eq!(m.compare(&found), Verdict::Differs(vec!["b".into(), "c".into(), "d".into()]));
        let mut r: &[u8] = b"2";
        assert_eq!(ManifestFile::read("b", &mut r).unwrap(), ManifestFile::of("b", b"2"));
    }

    #[test]
    fn a_long_list_is_cut_after_ten_names() {
        let paths: Vec<String> = (0..12).map(|i| format!("f{i}")).collect();
        assert!(Verdict::named(&paths).ends_with("f9 and 2 more"));
    }
}
