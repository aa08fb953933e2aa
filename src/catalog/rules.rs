//! How the catalog's fields must be spelled: aliases, environment variable names, package names,
//! Docker memory limits and pinned image references.

use super::json::json_string;

/// The longest alias accepted. A built runtime's image is tagged `<alias>-<12 hex>`, and a
/// Docker tag holds at most 128 characters; 63 also keeps the alias readable in a dialog.
pub(super) const MAX_ALIAS_LEN: usize = 63;

/// Whether `alias` is spelled like a runtime alias (`[a-z][a-z0-9-]*`, at most 63 characters).
pub fn is_valid_alias(alias: &str) -> bool {
    alias.len() <= MAX_ALIAS_LEN && is_alias(alias)
}

pub(super) fn is_alias(alias: &str) -> bool {
    let mut chars = alias.chars();
    matches!(chars.next(), Some('a'..='z')) && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '-'))
}

pub(super) fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('A'..='Z' | 'a'..='z' | '_')) && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// sandboxd's own package-name rule (`PACKAGE_NAME` in its image builder): a build with a name
/// outside it fails on first use, so it is refused here at start-up instead.
pub(super) fn is_package_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric() || c == '@')
        && chars.all(|c| c.is_ascii_alphanumeric() || "._@/+=<>~![]-".contains(c))
}

/// Docker memory syntax that both the Docker SDK (which sandboxd uses) and the Docker CLI accept:
/// a positive number (`2`, `1.5`), then optionally `b`, `k`, `m` or `g` in either case, optionally
/// followed by `b` (`512m`, `2g`, `2GB`).
pub(super) fn is_docker_memory(limit: &str) -> bool {
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

pub(super) fn has_line_break(text: &str) -> bool {
    text.contains('\n') || text.contains('\r')
}

/// Checks that an image reference is pinned: a tag other than `latest`, or a digest.
/// On failure, returns the rest of a sentence that starts with the field's name.
pub(super) fn check_pinned_image(reference: &str) -> Result<(), String> {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::catalog::fixtures::{build_entry, catalog, image_entry, sole_problem, with, without};

    #[test]
    fn a_valid_alias_is_lowercase_and_at_most_63_characters() {
        assert!(is_valid_alias("workbench") && is_valid_alias("py-3") && is_valid_alias(&"a".repeat(63)));
        for bad in ["", "Py", "1py", "py_3", "-py", "py thon"] {
            assert!(!is_valid_alias(bad), "{bad:?}");
        }
        assert!(!is_valid_alias(&"a".repeat(64)));
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
    fn an_overlong_alias_is_refused() {
        let long = "a".repeat(64);
        let msg = sole_problem(image_entry(&long));
        assert!(msg.ends_with("alias must be at most 63 characters"), "{msg}");
        assert!(msg.starts_with(&format!("catalog entry 2 (\"{long}\")")), "{msg}");
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
}
