//! The object store snapshots live in: one interface ([`object_store::ObjectStore`]) over a local
//! folder (the default, under the data folder) or any S3-compatible store (several replicas share
//! it). Archives go up from a file in parts and come down as a stream: never whole in memory.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use actix_web::web::Bytes;
use anyhow::Context;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::client::{HttpError, HttpErrorKind};
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{ClientOptions, ObjectStore, RetryConfig, WriteMultipart};
use secrecy::ExposeSecret;
use tokio::io::AsyncReadExt;

use crate::config::{SnapshotConfig, SnapshotStoreConfig};
use crate::sandbox::workspaces::error::WorkspaceError;

/// The size of one uploaded part (S3 wants at least 5 MiB but the last).
const PART: usize = 8 * 1024 * 1024;
/// Parts in flight at once: what an upload holds in memory is about `PART * (IN_FLIGHT + 1)`.
const IN_FLIGHT: usize = 2;

/// Where snapshots are stored.
#[derive(Clone)]
pub struct Objects {
    inner: Arc<dyn ObjectStore>,
    /// `local` or `s3`, for logs and docs/operating.md.
    pub kind: &'static str,
    /// The local folder (a `local` store): kept private (0700 folders, 0600 files).
    local_root: Option<PathBuf>,
    /// How long one call may wait on the store, its own retries included: past it the store
    /// "did not answer".
    call_deadline: Duration,
}

impl std::fmt::Debug for Objects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Objects").field("kind", &self.kind).finish()
    }
}

/// Why the object store did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// It did not answer within its deadlines (connect, request).
    #[error("the snapshot store did not answer in time: {0:#}")]
    NoAnswer(anyhow::Error),
    /// It answered with a failure, could not be reached, or our side of it failed.
    #[error("the snapshot store: {0:#}")]
    Failed(anyhow::Error),
}

impl StoreError {
    pub fn is_no_answer(&self) -> bool {
        matches!(self, StoreError::NoAnswer(_))
    }

    /// What a person or client reads (504 or 502, naming the store and what did not happen:
    /// `consequence`, e.g. "nothing was saved"); the cause goes to the log.
    pub fn into_workspace_error(self, kind: &str, consequence: &str) -> WorkspaceError {
        match self {
            StoreError::NoAnswer(source) => WorkspaceError::StoreNoAnswer {
                message: format!("The snapshot store ({kind}) did not answer in time; {consequence}. Try again later."),
                source,
            },
            StoreError::Failed(source) => WorkspaceError::StoreFailed {
                message: format!("The snapshot store ({kind}) failed; {consequence}. Try again later."),
                source,
            },
        }
    }
}

type StoreResult<T> = std::result::Result<T, StoreError>;

impl Objects {
    /// The store's failure while saving a snapshot, in the words a person reads.
    pub fn refusal(&self, e: StoreError) -> WorkspaceError {
        e.into_workspace_error(self.kind, "nothing was saved")
    }

    /// The store's failure while reading a snapshot back (`consequence`: what did not happen,
    /// "the download did not start", "nothing was restored").
    pub fn read_refusal(&self, e: StoreError, consequence: &str) -> WorkspaceError {
        e.into_workspace_error(self.kind, consequence)
    }

    /// The store the configuration names (a local folder is created if missing, private to this
    /// process's user), with its deadlines.
    pub fn from_config(config: &SnapshotConfig) -> anyhow::Result<Objects> {
        // A call may take one request, plus a retry started before the request deadline passed.
        let call_deadline = config.connect_timeout + config.request_timeout * 2;
        match &config.store {
            SnapshotStoreConfig::Local(dir) => {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating the snapshot folder {}", dir.display()))?;
                make_private(dir, true).with_context(|| format!("making {} private", dir.display()))?;
                let fs = LocalFileSystem::new_with_prefix(dir).context("opening the snapshot folder")?;
                Ok(Objects { inner: Arc::new(fs), kind: "local", local_root: Some(dir.clone()), call_deadline })
            }
            SnapshotStoreConfig::S3 { bucket, endpoint, region, access_key_id, secret_access_key, prefix } => {
                let options = ClientOptions::new()
                    .with_connect_timeout(config.connect_timeout)
                    .with_timeout(config.request_timeout);
                // The crate's default retries for three minutes; a request's deadline bounds them.
                let retry = RetryConfig { max_retries: 3, retry_timeout: config.request_timeout, ..Default::default() };
                let mut b = AmazonS3Builder::from_env()
                    .with_bucket_name(bucket)
                    .with_region(region)
                    .with_client_options(options)
                    .with_retry(retry);
                if let Some(e) = endpoint {
                    b = b
                        .with_endpoint(e)
                        .with_allow_http(e.starts_with("http://"))
                        .with_virtual_hosted_style_request(false);
                }
                if let (Some(id), Some(secret)) = (access_key_id, secret_access_key) {
                    b = b.with_access_key_id(id).with_secret_access_key(secret.expose_secret());
                }
                let s3 = b.build().context("configuring the S3 snapshot store")?;
                let inner: Arc<dyn ObjectStore> = match prefix.as_deref().filter(|p| !p.is_empty()) {
                    Some(p) => Arc::new(object_store::prefix::PrefixStore::new(s3, p)),
                    None => Arc::new(s3),
                };
                Ok(Objects { inner, kind: "s3", local_root: None, call_deadline })
            }
        }
    }

    /// One call to the store within its deadline.
    async fn call<T>(&self, f: impl std::future::Future<Output = object_store::Result<T>>) -> StoreResult<T> {
        match tokio::time::timeout(self.call_deadline, f).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(store_error(e)),
            Err(_) => Err(StoreError::NoAnswer(anyhow::anyhow!("no answer within {:?}", self.call_deadline))),
        }
    }

    /// Uploads the file at `file` as `key`, in parts.
    pub async fn put_file(&self, key: &str, file: &Path, hold: &super::hold::SnapshotHold) -> StoreResult<()> {
        let path = object_path(key)?;
        let upload = self.call(self.inner.put_multipart(&path)).await?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, PART);
        hold.at(super::hold::Point::UploadStarted, key).await;
        let mut f = tokio::fs::File::open(file).await.context("opening the archive").map_err(StoreError::Failed)?;
        let mut buf = vec![0u8; 1024 * 1024];
        loop {
            let n = match f.read(&mut buf).await {
                Ok(n) => n,
                Err(e) => {
                    let _ = writer.abort().await;
                    return Err(StoreError::Failed(anyhow::Error::from(e).context("reading the archive")));
                }
            };
            if n == 0 {
                break;
            }
            if let Err(e) = self.call(writer.wait_for_capacity(IN_FLIGHT)).await {
                // A store that answers is asked to drop the parts; one that does not would not
                // answer that either.
                if !e.is_no_answer() {
                    let _ = self.call(writer.abort()).await;
                }
                return Err(e);
            }
            writer.write(&buf[..n]);
        }
        self.call(writer.finish()).await?;
        self.make_private(key);
        Ok(())
    }

    /// The object's bytes, as they come.
    pub async fn get(&self, key: &str) -> StoreResult<BoxStream<'static, anyhow::Result<Bytes>>> {
        let got = self.call(self.inner.get(&object_path(key)?)).await?;
        Ok(got.into_stream().map(|r| r.map_err(|e| anyhow::Error::new(store_error(e)))).boxed())
    }

    /// Deletes the object; one already gone is fine.
    pub async fn delete(&self, key: &str) -> StoreResult<()> {
        match tokio::time::timeout(self.call_deadline, self.inner.delete(&object_path(key)?)).await {
            Ok(Ok(()) | Err(object_store::Error::NotFound { .. })) => Ok(()),
            Ok(Err(e)) => Err(store_error(e)),
            Err(_) => Err(StoreError::NoAnswer(anyhow::anyhow!("no answer within {:?}", self.call_deadline))),
        }
    }

    /// Downloads the object into the file at `to` (created readable by this user only).
    pub async fn get_to_file(&self, key: &str, to: &Path) -> StoreResult<()> {
        use tokio::io::AsyncWriteExt;
        let mut stream = self.get(key).await?;
        let local = |e: std::io::Error| StoreError::Failed(anyhow::Error::from(e).context("writing a temporary file"));
        let mut f = private_file(to).await.map_err(local)?;
        while let Some(chunk) = stream.next().await {
            f.write_all(&chunk.map_err(StoreError::Failed)?).await.map_err(local)?;
        }
        f.flush().await.map_err(local)?;
        Ok(())
    }

    /// A local store's object and the folders above it, readable by this user only.
    fn make_private(&self, key: &str) {
        let Some(root) = &self.local_root else { return };
        let mut path = root.clone();
        let parts: Vec<&str> = key.split('/').collect();
        for (i, part) in parts.iter().enumerate() {
            path.push(part);
            if let Err(e) = make_private(&path, i + 1 < parts.len()) {
                tracing::warn!(error = %e, path = %path.display(), "a snapshot file could not be made private");
            }
        }
    }
}

/// A new file (or an emptied one) only this process's user may read.
pub async fn private_file(path: &Path) -> std::io::Result<tokio::fs::File> {
    let mut options = tokio::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    options.mode(0o600);
    let f = options.open(path).await?;
    make_private(path, false)?;
    Ok(f)
}

/// 0700 for a folder, 0600 for a file (on Unix).
pub fn make_private(path: &Path, is_dir: bool) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = if is_dir { 0o700 } else { 0o600 };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    }
    #[cfg(not(unix))]
    let _ = (path, is_dir);
    Ok(())
}

fn object_path(key: &str) -> StoreResult<ObjectPath> {
    ObjectPath::parse(key).map_err(|e| StoreError::Failed(anyhow::anyhow!("bad object key: {e}")))
}

/// The store's error in our words (never a credential: the crate does not print them): no answer
/// when a request timed out (its retries included), a failure otherwise.
fn store_error(e: object_store::Error) -> StoreError {
    if timed_out(&e) {
        StoreError::NoAnswer(anyhow::Error::new(e))
    } else {
        StoreError::Failed(anyhow::Error::new(e))
    }
}

fn timed_out(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = next {
        if err.downcast_ref::<HttpError>().is_some_and(|h| h.kind() == HttpErrorKind::Timeout)
            || err.downcast_ref::<reqwest::Error>().is_some_and(reqwest::Error::is_timeout)
        {
            return true;
        }
        next = err.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_read_says_what_did_not_happen_not_that_nothing_was_saved() {
        let no_answer = StoreError::NoAnswer(anyhow::anyhow!("timed out"));
        let shown = no_answer.into_workspace_error("s3", "the download did not start").to_string();
        assert!(shown.contains("did not answer in time; the download did not start"), "{shown}");
        assert!(!shown.contains("saved"), "{shown}");
        let failed = StoreError::Failed(anyhow::anyhow!("refused"));
        let shown = failed.into_workspace_error("local", "nothing was saved").to_string();
        assert!(shown.contains("(local) failed; nothing was saved"), "{shown}");
    }
}
