//! A manifest's `git_repo` fetched by the console, for a runtime without network: a
//! single-branch `git clone` (not shallow: git's dumb HTTP transport cannot be) into a temporary folder, then its files (regular files only, `.git/` left out)
//! read for writing into the workspace.
//!
//! Against SSRF: only `http`, `https` and `git` URLs without credentials are saved
//! (`agents::manifest::check`); at fetch time the host must resolve to public addresses only —
//! loopback, private, link-local, shared, documentation, multicast and unspecified addresses are
//! refused unless `MANIFEST_GIT_ALLOW_PRIVATE=true`. Git runs with redirects off, only those three
//! protocols allowed, no credential prompts, no system or user configuration, no submodules,
//! no hooks (the clone's own are never run), a [`TIMEOUT`] and size bounds ([`BYTES_MAX`],
//! [`FILES_MAX`]). Symbolic links in the repository are skipped, never followed.

use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

/// How long one fetch may take.
pub const TIMEOUT: Duration = Duration::from_secs(60);
/// The most bytes a fetched checkout's files may take together.
pub const BYTES_MAX: u64 = 64 * 1024 * 1024;
/// The most files a fetched checkout may hold.
pub const FILES_MAX: usize = 5000;

/// The files of `url` at `git_ref`: (path relative to the checkout, bytes), or why not.
pub async fn fetch(url: &str, git_ref: Option<&str>, allow_private: bool) -> Result<Vec<(String, Vec<u8>)>, String> {
    check_host(url, allow_private).await?;
    let dir = tempfile::tempdir().map_err(|e| format!("could not make a temporary folder: {e}"))?;
    let checkout = dir.path().join("checkout");
    let mut cmd = tokio::process::Command::new("git");
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_ASKPASS", "/bin/false")
        .args(["-c", "protocol.allow=never", "-c", "protocol.http.allow=always"])
        .args(["-c", "protocol.https.allow=always", "-c", "protocol.git.allow=always"])
        .args(["-c", "http.followRedirects=false", "-c", "core.hooksPath=/dev/null", "-c", "core.symlinks=true"])
        .args(["clone", "--quiet", "--single-branch", "--no-tags"]);
    if let Some(r) = git_ref {
        cmd.args(["--branch", r]);
    }
    cmd.arg("--").arg(url).arg(&checkout).kill_on_drop(true).stdin(std::process::Stdio::null());
    let out = match tokio::time::timeout(TIMEOUT, cmd.output()).await {
        Err(_) => return Err(format!("git clone took longer than {} seconds", TIMEOUT.as_secs())),
        Ok(Err(e)) => return Err(format!("git could not be started: {e}")),
        Ok(Ok(out)) => out,
    };
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let line = stderr.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("no reason given");
        let line: String = line.chars().filter(|c| !c.is_control()).take(300).collect();
        return Err(format!("git clone failed: {line}"));
    }
    tokio::task::spawn_blocking(move || read_checkout(&checkout))
        .await
        .map_err(|e| format!("reading the checkout failed: {e}"))?
}

/// The checkout's regular files (not under `.git/`), within the bounds.
fn read_checkout(root: &Path) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut files = Vec::new();
    let mut total = 0u64;
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("reading the checkout failed: {e}"))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("reading the checkout failed: {e}"))?;
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).map_err(|e| format!("reading the checkout failed: {e}"))?;
            if dir == root && entry.file_name() == ".git" {
                continue;
            }
            if meta.is_dir() {
                pending.push(path);
            } else if meta.is_file() {
                total += meta.len();
                if total > BYTES_MAX || files.len() >= FILES_MAX {
                    return Err(format!(
                        "the repository is larger than {} MiB or {FILES_MAX} files",
                        BYTES_MAX / 1024 / 1024
                    ));
                }
                let rel = path.strip_prefix(root).map_err(|e| e.to_string())?;
                let rel = rel.to_str().ok_or("a file name in the repository is not UTF-8")?.to_string();
                let bytes = std::fs::read(&path).map_err(|e| format!("reading the checkout failed: {e}"))?;
                files.push((rel, bytes));
            }
        }
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(files)
}

/// The URL's host resolves to public addresses only (unless `allow_private`).
async fn check_host(url: &str, allow_private: bool) -> Result<(), String> {
    let parsed = url::Url::parse(url).map_err(|_| "the URL cannot be read".to_string())?;
    let host = parsed.host_str().ok_or("the URL names no host")?.trim_matches(['[', ']']).to_string();
    let port = parsed.port_or_known_default().unwrap_or(9418);
    let addrs: Vec<IpAddr> = tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|e| format!("the host {host} could not be resolved: {e}"))?
        .map(|a| a.ip())
        .collect();
    if addrs.is_empty() {
        return Err(format!("the host {host} could not be resolved"));
    }
    if !allow_private {
        if let Some(a) = addrs.iter().find(|a| !is_public(a)) {
            return Err(format!(
                "the host {host} resolves to {a}, an internal address; the console fetches only from public hosts"
            ));
        }
    }
    Ok(())
}

/// Whether an address is on the public internet.
pub fn is_public(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || o[0] == 0
                || (o[0] == 100 && (64..128).contains(&o[1]))
                || (o[0] == 192 && o[1] == 0 && o[2] == 0)
                || (o[0] == 198 && (18..20).contains(&o[1]))
                || o[0] >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(&IpAddr::V4(v4));
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] == 0x2001 && s[1] == 0x0db8)
                || (s[0] == 0x64 && s[1] == 0xff9b))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses_are_not_public() {
        for a in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!is_public(&a.parse().unwrap()), "{a}");
        }
        for a in ["140.82.112.3", "2606:4700::1111"] {
            assert!(is_public(&a.parse().unwrap()), "{a}");
        }
    }

    #[tokio::test]
    async fn a_loopback_host_is_refused_unless_allowed() {
        let e = check_host("http://127.0.0.1:9/r.git", false).await.unwrap_err();
        assert!(e.contains("internal address"), "{e}");
        assert!(check_host("http://127.0.0.1:9/r.git", true).await.is_ok());
    }
}
