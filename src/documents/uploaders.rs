//! Who attached which file (issue 49): the names Documents puts on files attached through the
//! console, read from `workspace_uploads` for the workspaces an answer shows, only while the
//! person is a member of the organization (docs/design.md §4 and §9).

use std::collections::HashMap;

use super::error::DocumentError;
use super::model::{DocumentsPage, FileItem, Tile, TreeNode, WorkspaceGroup};
use super::store;
use crate::state::AppState;

/// The person who attached each file, by workspace and path.
pub struct Uploaders(HashMap<(String, String), String>);

impl Uploaders {
    /// The attached files' people of these workspaces (one query).
    pub async fn of(st: &AppState, org_id: &str, workspace_ids: &[&str]) -> Result<Uploaders, DocumentError> {
        if workspace_ids.is_empty() {
            return Ok(Uploaders(HashMap::new()));
        }
        let mut c = st.db.conn().await?;
        let rows = store::uploaders(&mut c, org_id, workspace_ids).await?;
        Ok(Uploaders(rows.into_iter().map(|(w, path, name)| ((w, path), name)).collect()))
    }

    fn name(&self, workspace_id: &str, path: &str) -> Option<String> {
        if self.0.is_empty() {
            return None;
        }
        self.0.get(&(workspace_id.to_string(), path.to_string())).cloned()
    }

    pub fn file(&self, f: &mut FileItem) {
        f.added_by_name = self.name(&f.workspace_id, &f.path);
    }

    pub fn tiles(&self, tiles: &mut [Tile]) {
        tiles.iter_mut().for_each(|t| self.file(&mut t.file));
    }

    fn group(&self, g: &mut WorkspaceGroup) {
        g.files.iter_mut().for_each(|f| self.file(f));
        g.folders.iter_mut().flat_map(|r| r.first_files.iter_mut()).for_each(|f| self.file(f));
    }

    /// Every file of a Documents page: the strip, the groups and the hits.
    pub fn page(&self, p: &mut DocumentsPage) {
        self.tiles(&mut p.tiles);
        p.groups.iter_mut().for_each(|g| self.group(g));
        if let Some(hits) = p.hits.as_mut() {
            self.tiles(hits);
        }
    }

    /// A workspace's tree.
    pub fn tree(&self, workspace_id: &str, nodes: &mut [TreeNode]) {
        for n in nodes.iter_mut().filter(|n| !n.is_dir) {
            n.added_by_name = self.name(workspace_id, &n.path);
        }
    }
}
