//! The sandboxd version pin (`catalog/sandboxd.version`): the release this deployment runs.

use std::path::Path;

use super::error::{read_text, CatalogError};
use super::json::json_string;

/// Reads a version pin file: one line, a release number like `0.2.37` (never a moving tag).
pub fn read_version_file(path: &Path) -> Result<String, CatalogError> {
    let text = read_text(path)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_file_holds_one_release_number() {
        let dir = std::env::temp_dir().join(format!("catalog-version-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join("sandboxd.version");
        std::fs::write(&file, "0.2.37\n").expect("write");
        assert_eq!(read_version_file(&file).expect("valid"), "0.2.37");
        for bad in ["latest\n", "0.2\n", "0.2.37\n0.2.38\n", "", "v0.2.37"] {
            std::fs::write(&file, bad).expect("write");
            let err = read_version_file(&file).expect_err(bad);
            assert!(matches!(err, CatalogError::Version { .. }), "{err}");
            assert!(err.to_string().starts_with(&file.display().to_string()), "{err}");
        }
        std::fs::remove_dir_all(&dir).ok();
        assert!(matches!(read_version_file(&file), Err(CatalogError::Read { .. })));
    }
}
