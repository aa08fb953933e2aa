//! The object store snapshots live in: one interface ([`object_store::ObjectStore`]) over a local
//! folder (the default, under the data folder) or any S3-compatible store (several replicas share
//! it). Archives go up from a file in parts and come down as a stream: never whole in memory.

use std::path::Path;
use std::sync::Arc;

use actix_web::web::Bytes;
use anyhow::Context;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, WriteMultipart};
use secrecy::ExposeSecret;
use tokio::io::AsyncReadExt;

use crate::config::SnapshotStoreConfig;

/// The size of one uploaded part (S3 wants at least 5 MiB but the last).
const PART: usize = 8 * 1024 * 1024;
/// Parts in flight at once: what an upload holds in memory is about `PART * (IN_FLIGHT + 1)`.
const IN_FLIGHT: usize = 2;

/// Where snapshots are stored.
#[derive(Clone)]
pub struct Objects {
    inner: Arc<dyn ObjectStore>,
    /// `local` or `s3`, for logs and the README.
    pub kind: &'static str,
}

impl std::fmt::Debug for Objects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Objects").field("kind", &self.kind).finish()
    }
}

impl Objects {
    /// The store the configuration names (a local folder is created if missing).
    pub fn from_config(config: &SnapshotStoreConfig) -> anyhow::Result<Objects> {
        match config {
            SnapshotStoreConfig::Local(dir) => {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating the snapshot folder {}", dir.display()))?;
                let fs = LocalFileSystem::new_with_prefix(dir).context("opening the snapshot folder")?;
                Ok(Objects { inner: Arc::new(fs), kind: "local" })
            }
            SnapshotStoreConfig::S3 { bucket, endpoint, region, access_key_id, secret_access_key, prefix } => {
                let mut b = AmazonS3Builder::from_env().with_bucket_name(bucket).with_region(region);
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
                Ok(Objects { inner, kind: "s3" })
            }
        }
    }

    /// Uploads the file at `file` as `key`, in parts.
    pub async fn put_file(&self, key: &str, file: &Path) -> anyhow::Result<()> {
        let path = object_path(key)?;
        let upload = self.inner.put_multipart(&path).await.map_err(store_error)?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, PART);
        let mut f = tokio::fs::File::open(file).await.context("opening the archive")?;
        let mut buf = vec![0u8; 1024 * 1024];
        loop {
            let n = match f.read(&mut buf).await {
                Ok(n) => n,
                Err(e) => {
                    let _ = writer.abort().await;
                    return Err(anyhow::Error::from(e).context("reading the archive"));
                }
            };
            if n == 0 {
                break;
            }
            if let Err(e) = writer.wait_for_capacity(IN_FLIGHT).await {
                return Err(store_error(e));
            }
            writer.write(&buf[..n]);
        }
        writer.finish().await.map_err(store_error)?;
        Ok(())
    }

    /// The object's bytes, as they come.
    pub async fn get(&self, key: &str) -> anyhow::Result<BoxStream<'static, anyhow::Result<Bytes>>> {
        let got = self.inner.get(&object_path(key)?).await.map_err(store_error)?;
        Ok(got.into_stream().map(|r| r.map_err(store_error)).boxed())
    }

    /// Deletes the object; one already gone is fine.
    pub async fn delete(&self, key: &str) -> anyhow::Result<()> {
        match self.inner.delete(&object_path(key)?).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(store_error(e)),
        }
    }

    /// Downloads the object into the file at `to`.
    pub async fn get_to_file(&self, key: &str, to: &Path) -> anyhow::Result<()> {
        use tokio::io::AsyncWriteExt;
        let mut stream = self.get(key).await?;
        let mut f = tokio::fs::File::create(to).await.context("creating a temporary file")?;
        while let Some(chunk) = stream.next().await {
            f.write_all(&chunk?).await.context("writing a temporary file")?;
        }
        f.flush().await.context("writing a temporary file")?;
        Ok(())
    }
}

fn object_path(key: &str) -> anyhow::Result<ObjectPath> {
    ObjectPath::parse(key).map_err(|e| anyhow::anyhow!("bad object key: {e}"))
}

/// The store's error in our words (never a credential: the crate does not print them).
fn store_error(e: object_store::Error) -> anyhow::Error {
    anyhow::anyhow!("the snapshot store: {e}")
}
