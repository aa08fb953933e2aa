//! Tiles: files drawn with a thumbnail, their first lines, or a glyph, within a budget per request
//! (at most 24 thumbnails and 24 text previews), cached so a second view reads nothing again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::future::join_all;

use super::cache;
use super::files::{read_bytes, read_text};
use super::grouping;
use super::listing::HostCounter;
use super::model::{Cost, FileItem, Tile};
use super::store::VisibleRow;
use super::thumbnails;
use crate::state::AppState;
use crate::vocabulary::paths;

/// `files` as tiles, in order; `cost` counts the images read from a host.
pub async fn tiles(
    st: &AppState,
    org_id: &str,
    rows: &HashMap<&str, &VisibleRow>,
    files: Vec<(FileItem, Option<String>)>,
    counter: &HostCounter,
    cost: &mut Cost,
) -> Vec<Tile> {
    let mut thumbs = 0;
    let mut previews = 0;
    let mut jobs = Vec::with_capacity(files.len());
    for (file, agent_name) in files {
        let thumb = thumbs < thumbnails::MAX_THUMBNAILS && thumbnails::is_thumbnail_candidate(&file.path, file.size);
        let preview =
            previews < thumbnails::MAX_TEXT_PREVIEWS && thumbnails::is_preview_candidate(&file.path, file.size);
        thumbs += usize::from(thumb);
        previews += usize::from(preview);
        jobs.push((file, agent_name, thumb, preview));
    }
    let reads = AtomicU64::new(0);
    let made = join_all(jobs.into_iter().map(|(file, agent_name, thumb, preview)| {
        let reads = &reads;
        async move {
            let row = rows.get(file.workspace_id.as_str()).copied();
            let key = cache::key(&file.workspace_id, &file.path, file.size, file.modified_at.as_deref());
            let mut thumbnail = None;
            let mut text_preview = None;
            if let (true, Some(row)) = (thumb, row) {
                thumbnail = match st.documents_cache.thumbnails.get(&key) {
                    Some(cached) => cached,
                    None => {
                        let made = match paths::normalise(&file.path) {
                            Ok(p) => match read_bytes(st, org_id, row, &p, counter).await {
                                Ok(bytes) => {
                                    if row.backend != "state" {
                                        reads.fetch_add(1, Ordering::Relaxed);
                                    }
                                    thumbnails::thumbnail(bytes).await
                                }
                                Err(_) => None,
                            },
                            Err(_) => None,
                        };
                        st.documents_cache.thumbnails.put(key.clone(), made.clone());
                        made
                    }
                };
            }
            if let (true, Some(row)) = (preview, row) {
                text_preview = match st.documents_cache.previews.get(&key) {
                    Some(cached) => cached,
                    None => {
                        let made = match paths::normalise(&file.path) {
                            Ok(p) => read_text(st, org_id, row, &p, 0, thumbnails::PREVIEW_LINES, counter)
                                .await
                                .ok()
                                .map(|page| thumbnails::text_preview(&page.text)),
                            Err(_) => None,
                        };
                        st.documents_cache.previews.put(key, made.clone());
                        made
                    }
                };
            }
            let glyph = grouping::glyph(file.kind).to_string();
            Tile { file, agent_name, thumbnail, text_preview, glyph }
        }
    }))
    .await;
    cost.image_reads += reads.load(Ordering::Relaxed);
    made
}
