//! What may name a Daytona snapshot (a connection's default runtime).

/// The longest snapshot name a connection keeps.
const SNAPSHOT_NAME_MAX: usize = 200;

/// Whether `s` may name a Daytona snapshot (`daytonaio/sandbox:0.4.3`, `my-python`): 1 to 200
/// letters, digits and `. _ - : / @`.
pub fn is_snapshot_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= SNAPSHOT_NAME_MAX
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':' | '/' | '@'))
}

#[cfg(test)]
mod tests {
    use super::is_snapshot_name;

    #[test]
    fn snapshot_names_are_plain_image_like_names() {
        for ok in ["daytonaio/sandbox:0.4.3", "my-python", "registry.example.com/team/img@sha256", "a"] {
            assert!(is_snapshot_name(ok), "{ok:?} refused");
        }
        for bad in ["", "has space", "semi;colon", "new\nline", &"x".repeat(201), "quote\"d"] {
            assert!(!is_snapshot_name(bad), "{bad:?} accepted");
        }
    }
}
