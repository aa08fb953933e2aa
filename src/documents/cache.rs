//! Documents' caches: thumbnails and text previews, keyed by workspace, path, size and
//! modification time, so a file that changed is drawn again and a second view costs no host read.

use std::time::Duration;

use crate::cache::TtlCache;

pub struct DocumentsCache {
    /// A thumbnail's `data:` URL, or none for an image that did not decode (not read again).
    pub thumbnails: TtlCache<String, Option<String>>,
    /// A text file's first lines.
    pub previews: TtlCache<String, Option<String>>,
}

impl Default for DocumentsCache {
    fn default() -> Self {
        DocumentsCache {
            thumbnails: TtlCache::new(Duration::from_secs(3600), 4096),
            previews: TtlCache::new(Duration::from_secs(3600), 4096),
        }
    }
}

/// The key of one version of one file.
pub fn key(workspace_id: &str, path: &str, size: Option<u64>, modified_at: Option<&str>) -> String {
    format!("{workspace_id}\u{0}{path}\u{0}{}\u{0}{}", size.unwrap_or(0), modified_at.unwrap_or(""))
}
