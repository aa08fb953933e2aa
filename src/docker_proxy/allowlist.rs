//! Which requests the Docker proxy passes to the engine: the read calls of the console's engine
//! integration (`src/docker/`) and nothing else. A request is judged on its method, its path as
//! sent (never decoded or resolved: a path not in normal form is refused) and whether it asks to
//! upgrade the connection (attach and exec hijack it).

/// A read call the proxy passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadCall {
    /// `/_ping`: is the engine there.
    Ping,
    /// `/version`: the engine's version.
    Version,
    /// `/containers/json`: the container list (discovery, doctor).
    ContainerList,
    /// `/containers/{id}/json`: one container's inspection (doctor: restarts, health).
    ContainerInspect,
    /// `/containers/{id}/stats?stream=false`: one stats sample (the Running tab's usage).
    ContainerStats,
}

/// The longest container id or name passed.
const NAME_MAX: usize = 128;

/// The call `method` `path` (with `query`) is, or why it is refused, in words for the caller.
/// `upgrade`: the request asks to upgrade its connection (`Upgrade`, `Connection: upgrade`).
pub fn judge(method: &str, path: &str, query: Option<&str>, upgrade: bool) -> Result<ReadCall, String> {
    let refused = |why: &str| Err(format!("{method} {path} is refused: {why}"));
    if method != "GET" && method != "HEAD" {
        return refused("only GET and HEAD pass this proxy, and only for the read calls it allows");
    }
    if upgrade {
        return refused("a connection upgrade (attach, exec, a hijacked stream) never passes");
    }
    let Some(segments) = normal_segments(path) else {
        return refused("the path is not in normal form (empty, `.` or `..` segments, or escapes)");
    };
    let segments = match segments.split_first() {
        Some((first, rest)) if is_api_version(first) => rest,
        _ => &segments[..],
    };
    let call = match segments {
        ["_ping"] => ReadCall::Ping,
        ["version"] => ReadCall::Version,
        ["containers", "json"] => ReadCall::ContainerList,
        ["containers", id, "json"] if is_container_name(id) => ReadCall::ContainerInspect,
        ["containers", id, "stats"] if is_container_name(id) => ReadCall::ContainerStats,
        _ => return refused("it is not one of the read calls this proxy passes (container list, inspect, stats)"),
    };
    if call == ReadCall::ContainerStats && !one_sample(query) {
        return refused("stats pass only as one sample (`stream=false`)");
    }
    Ok(call)
}

/// The segments of an absolute path with no empty, `.` or `..` segment and nothing escaped.
fn normal_segments(path: &str) -> Option<Vec<&str>> {
    let rest = path.strip_prefix('/')?;
    if path.contains(['%', '\\']) || path.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return None;
    }
    let segments: Vec<&str> = rest.split('/').collect();
    segments.iter().all(|s| !s.is_empty() && *s != "." && *s != "..").then_some(segments)
}

/// `v1.41`, `v1.47`: the API version prefix a client may put first.
fn is_api_version(segment: &str) -> bool {
    let Some(version) = segment.strip_prefix('v') else { return false };
    let mut parts = version.split('.');
    let number =
        |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()));
    number(parts.next()) && number(parts.next()) && parts.next().is_none()
}

/// A container id or name as the engine makes them: `[A-Za-z0-9][A-Za-z0-9_.-]*`.
fn is_container_name(segment: &str) -> bool {
    let mut bytes = segment.bytes();
    segment.len() <= NAME_MAX
        && bytes.next().is_some_and(|b| b.is_ascii_alphanumeric())
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// Whether the query asks for one stats sample (`stream=false` or `stream=0`).
fn one_sample(query: Option<&str>) -> bool {
    let pairs = query.unwrap_or_default().split('&').filter_map(|p| p.split_once('='));
    let streams: Vec<&str> = pairs.filter(|(k, _)| *k == "stream").map(|(_, v)| v).collect();
    !streams.is_empty() && streams.iter().all(|v| matches!(*v, "false" | "0"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passes(method: &str, path: &str, query: Option<&str>) -> Option<ReadCall> {
        judge(method, path, query, false).ok()
    }

    #[test]
    fn the_console_read_calls_pass_with_or_without_a_version_prefix() {
        assert_eq!(passes("GET", "/v1.41/containers/json", Some("all=true")), Some(ReadCall::ContainerList));
        assert_eq!(passes("GET", "/containers/json", None), Some(ReadCall::ContainerList));
        assert_eq!(passes("GET", "/v1.47/containers/sandboxd-eu/json", None), Some(ReadCall::ContainerInspect));
        assert_eq!(
            passes("GET", "/v1.41/containers/sandboxd-ab12_c.d/stats", Some("stream=false&one-shot=false")),
            Some(ReadCall::ContainerStats)
        );
        assert_eq!(passes("HEAD", "/_ping", None), Some(ReadCall::Ping));
        assert_eq!(passes("GET", "/v1.41/version", None), Some(ReadCall::Version));
    }

    #[test]
    fn every_write_is_refused() {
        for (method, path) in [
            ("POST", "/v1.41/containers/create"),
            ("POST", "/v1.41/containers/x/start"),
            ("POST", "/v1.41/containers/x/exec"),
            ("POST", "/v1.41/exec/abc/start"),
            ("DELETE", "/v1.41/containers/x"),
            ("POST", "/containers/json"),
            ("PUT", "/v1.41/containers/x/archive"),
            ("GET", "/v1.41/containers/x/archive"),
            ("GET", "/v1.41/containers/x/logs"),
            ("GET", "/v1.41/containers/x/export"),
            ("GET", "/v1.41/images/json"),
            ("GET", "/v1.41/info"),
            ("GET", "/v1.41/events"),
            ("GET", "/v1.41/secrets"),
        ] {
            let refusal = judge(method, path, None, false).expect_err(path);
            assert!(refusal.starts_with(&format!("{method} {path} is refused: ")), "{refusal}");
        }
    }

    #[test]
    fn a_path_not_in_normal_form_is_refused_before_it_is_matched() {
        for path in [
            "/containers/json/../create",
            "/v1.41/containers/../containers/json",
            "/containers//json",
            "/containers/./json",
            "/containers/%2e%2e/json",
            "/containers/x%2Fy/json",
            "/containers/x\\y/json",
            "containers/json",
            "/containers/json/",
            "/v1.41",
            "/",
        ] {
            let refusal = judge("GET", path, None, false).expect_err(path);
            assert!(refusal.contains("refused"), "{refusal}");
        }
        // A name starting with a dot or a dash is no container name.
        assert_eq!(passes("GET", "/containers/.x/json", None), None);
        assert_eq!(passes("GET", "/containers/-x/json", None), None);
        assert_eq!(passes("GET", &format!("/containers/{}/json", "a".repeat(NAME_MAX + 1)), None), None);
        // Only a version number is a prefix.
        assert_eq!(passes("GET", "/vx/containers/json", None), None);
        assert_eq!(passes("GET", "/v1.41/v1.41/containers/json", None), None);
    }

    #[test]
    fn an_upgrade_is_refused_even_on_an_allowed_path() {
        let refusal = judge("GET", "/v1.41/containers/json", None, true).expect_err("upgrade");
        assert!(refusal.contains("connection upgrade"), "{refusal}");
    }

    #[test]
    fn stats_pass_only_as_one_sample() {
        assert_eq!(passes("GET", "/containers/x/stats", Some("stream=0")), Some(ReadCall::ContainerStats));
        for query in [None, Some("stream=true"), Some("stream=false&stream=true"), Some("one-shot=true")] {
            let refusal = judge("GET", "/containers/x/stats", query, false).expect_err("a stream");
            assert!(refusal.contains("one sample"), "{query:?}: {refusal}");
        }
    }
}
