//! The sandboxd version pin as the repository's files must name it: where the pin lives, the
//! image it names, and every version a text mentions.

use std::path::Path;

use super::yaml::leading_blanks;
use crate::catalog::{read_version_file, CatalogError};

/// Where the sandboxd version pin lives, relative to the repository root.
pub const VERSION_FILE: &str = "catalog/sandboxd.version";
/// The sandboxd image, without its tag.
pub const SANDBOXD_IMAGE: &str = "ghcr.io/vstorm-co/sandboxd";

/// The pinned sandboxd version, read from `<repo_root>/catalog/sandboxd.version`.
pub fn sandboxd_version(repo_root: &Path) -> Result<String, CatalogError> {
    read_version_file(&repo_root.join(VERSION_FILE))
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
        pos += leading_blanks(&lower[pos..]);
        if !lower[pos..].starts_with("==") {
            continue;
        }
        pos += 2;
        pos += leading_blanks(&lower[pos..]);
        found.push((pos, version_token(&text[pos..])));
    }

    found.sort_by_key(|(at, _)| *at);
    found.into_iter().map(|(_, v)| v).filter(|v| !v.is_empty()).collect()
}

fn version_token(text: &str) -> String {
    let end = text.find(|c: char| c.is_whitespace() || "\"'`|,;)<>#".contains(c)).unwrap_or(text.len());
    text[..end].trim_end_matches(['.', ':']).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn the_pin_is_read_from_the_catalog_folder_of_a_repository() {
        let dir = std::env::temp_dir().join(format!("catalog-version-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("catalog")).expect("temp dir");
        let file = dir.join(VERSION_FILE);
        std::fs::write(&file, "0.2.37\n").expect("write");
        assert_eq!(sandboxd_version(&dir).expect("valid"), "0.2.37");
        std::fs::write(&file, "latest\n").expect("write");
        let err = sandboxd_version(&dir).expect_err("a moving tag");
        assert!(err.to_string().starts_with(&file.display().to_string()), "{err}");
        std::fs::remove_dir_all(&dir).ok();
        assert!(matches!(sandboxd_version(&dir), Err(CatalogError::Read { .. })));
        assert_eq!(sandboxd_image("0.2.37"), "ghcr.io/vstorm-co/sandboxd:0.2.37");
    }
}
