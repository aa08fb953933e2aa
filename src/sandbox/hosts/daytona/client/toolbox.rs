//! One sandbox's toolbox (`{toolboxProxyUrl}/{sandboxId}`): files and commands
//! (`toolbox.json`). Relative paths resolve against the sandbox's work dir.

use std::time::Duration;

use reqwest::Method;
use url::Url;

use super::error::{DaytonaError, Side};
use super::exec_output::ExecScan;
use super::http::{join, json_body, Body, DaytonaClient};
use super::multipart;
use super::wire::{Dir, ExecuteRequest, ExecuteResponse, FileInfo};

/// The toolbox of one sandbox. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Toolbox {
    pub(super) client: DaytonaClient,
    /// `{toolboxProxyUrl}/{sandboxId}`, checked by [`DaytonaClient::toolbox_at`].
    base: Url,
}

impl Toolbox {
    pub(super) fn new(client: DaytonaClient, base: Url) -> Self {
        Self { client, base }
    }

    /// `{toolboxProxyUrl}/{sandboxId}`. For logs, not for users.
    pub fn base(&self) -> &Url {
        &self.base
    }

    pub(super) fn url(&self, route: &[&str], query: &[(&str, &str)]) -> Url {
        let mut url = join(&self.base, route);
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        url
    }

    pub(super) fn operation(&self) -> Duration {
        self.client.timeouts.operation
    }

    async fn json<T: serde::de::DeserializeOwned>(
        &self,
        method: Method,
        url: Url,
        body: Body,
    ) -> Result<T, DaytonaError> {
        self.client.json(Side::Toolbox, method, url, body, self.operation()).await
    }

    async fn empty(&self, method: Method, url: Url) -> Result<(), DaytonaError> {
        self.client.send(Side::Toolbox, method, url, Body::None, self.operation()).await.map(drop)
    }

    /// `GET /files?path=`: a folder's entries (one level).
    pub async fn list(&self, path: &str) -> Result<Vec<FileInfo>, DaytonaError> {
        self.json(Method::GET, self.url(&["files"], &[("path", path)]), Body::None).await
    }

    /// `GET /files/info?path=`.
    pub async fn info(&self, path: &str) -> Result<FileInfo, DaytonaError> {
        self.json(Method::GET, self.url(&["files", "info"], &[("path", path)]), Body::None).await
    }

    /// `GET /files/download?path=`: the file's bytes; one over `max` bytes is
    /// [`DaytonaError::Refused`] before more than `max + 1` bytes are read.
    pub async fn download(&self, path: &str, max: usize) -> Result<Vec<u8>, DaytonaError> {
        self.download_within(path, max, false).await
    }

    /// `GET /files/download?path=`: at most the file's first `max` bytes (the rest is never read:
    /// the answer is dropped there). For a preview.
    pub async fn download_head(&self, path: &str, max: usize) -> Result<Vec<u8>, DaytonaError> {
        self.download_within(path, max, true).await
    }

    async fn download_within(&self, path: &str, max: usize, head: bool) -> Result<Vec<u8>, DaytonaError> {
        let url = self.url(&["files", "download"], &[("path", path)]);
        let mut response = self.client.send(Side::Toolbox, Method::GET, url, Body::None, self.operation()).await?;
        if !head && response.content_length().is_some_and(|n| n > max as u64) {
            return Err(too_large(max));
        }
        let mut out = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(DaytonaError::from_transport)? {
            if out.len() + chunk.len() > max {
                if head {
                    out.extend_from_slice(&chunk[..max - out.len()]);
                    break;
                }
                return Err(too_large(max));
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }

    /// `POST /files/bulk-upload` with one file: parents are created, a file there is replaced.
    pub async fn upload(&self, path: &str, bytes: &[u8]) -> Result<(), DaytonaError> {
        let (boundary, bytes) = multipart::bulk_upload(path, bytes)?;
        let url = self.url(&["files", "bulk-upload"], &[]);
        let body = Body::Multipart { boundary, bytes };
        self.client.send(Side::Toolbox, Method::POST, url, body, self.operation()).await.map(drop)
    }

    /// `POST /files/folder?path=&mode=0755` (with its parents; an existing folder is fine).
    pub async fn create_folder(&self, path: &str) -> Result<(), DaytonaError> {
        self.empty(Method::POST, self.url(&["files", "folder"], &[("path", path), ("mode", "0755")])).await
    }

    /// `DELETE /files?path=&recursive=`.
    pub async fn delete(&self, path: &str, recursive: bool) -> Result<(), DaytonaError> {
        let recursive = if recursive { "true" } else { "false" };
        self.empty(Method::DELETE, self.url(&["files"], &[("path", path), ("recursive", recursive)])).await
    }

    /// `GET /work-dir`: where relative paths resolve.
    pub async fn work_dir(&self) -> Result<String, DaytonaError> {
        let dir: Dir = self.json(Method::GET, self.url(&["work-dir"], &[]), Body::None).await?;
        Ok(dir.dir)
    }

    /// `GET /user-home-dir`: the home folder of the sandbox's user (absolute).
    pub async fn user_home_dir(&self) -> Result<String, DaytonaError> {
        let dir: Dir = self.json(Method::GET, self.url(&["user-home-dir"], &[]), Body::None).await?;
        Ok(dir.dir)
    }

    /// `POST /process/execute`, sent once (a command must not run twice): waits the command's own
    /// `timeout` plus a margin. A command past its timeout is [`DaytonaError::RequestTimeout`]
    /// (killed; no output comes back). The answer is read as it streams: `result` is kept up to
    /// `limit` bytes (`output_limited` past it), the rest never held.
    pub async fn execute(&self, request: &ExecuteRequest, limit: usize) -> Result<ExecuteResponse, DaytonaError> {
        if request.command.trim().is_empty() {
            return Err(DaytonaError::Refused("A command cannot be empty.".into()));
        }
        let wait = Duration::from_secs(request.timeout) + self.client.timeouts.exec_margin;
        let url = self.url(&["process", "execute"], &[]);
        let mut response =
            self.client.send_with(Side::Toolbox, Method::POST, url, json_body(request)?, wait, 1).await?;
        let mut scan = ExecScan::new(limit);
        while let Some(chunk) = response.chunk().await.map_err(DaytonaError::from_transport)? {
            scan.feed(&chunk);
        }
        let Some(s) = scan.finish() else {
            tracing::debug!(target: "daytona", "an execute answer that is not Daytona's");
            return Err(DaytonaError::NotDaytona);
        };
        Ok(ExecuteResponse { exit_code: s.exit, code: None, result: s.result, output_limited: s.limited })
    }
}

fn too_large(max: usize) -> DaytonaError {
    DaytonaError::Refused(format!("The file is larger than {} MiB.", max / 1024 / 1024))
}

/// `sh -c '<argv quoted>'`: POSIX semantics whatever shell the daemon pipes the command to.
pub fn sh_command(argv: &[String]) -> String {
    let quoted: Vec<String> = argv.iter().map(|a| shell_quote(a)).collect();
    format!("sh -c {}", shell_quote(&quoted.join(" ")))
}

/// One POSIX single-quoted word.
pub fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_quoted_for_sh() {
        let argv = vec!["echo".to_string(), "it's".to_string(), "$HOME".to_string()];
        let out = std::process::Command::new("sh").arg("-c").arg(sh_command(&argv)).env("HOME", "/h").output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "it's $HOME\n");
    }

    #[test]
    fn toolbox_urls_keep_the_sandbox_and_encode_queries() {
        let c = DaytonaClient::new(
            reqwest::Client::new(),
            Url::parse("http://127.0.0.1:9/api").unwrap(),
            secrecy::SecretString::from("k"),
        )
        .unwrap();
        let tb = c.toolbox_at("http://127.0.0.1:9/toolbox", "sb-1").unwrap();
        assert_eq!(
            tb.url(&["files", "info"], &[("path", "a b/ü&x")]).as_str(),
            "http://127.0.0.1:9/toolbox/sb-1/files/info?path=a+b%2F%C3%BC%26x"
        );
    }
}
