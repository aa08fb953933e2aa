//! The end of a run of a shared `state` workspace (docs/design.md §11): its view is merged into the
//! shared document, three-way by path against the run's base ([`crate::sandbox::workspaces::merge`]). Changes to
//! different paths all land; a path that a run finishing earlier changed otherwise keeps the
//! earlier run's version (**the earlier finish wins**, so what is shared is never overwritten by
//! a conflicting change). The limit counts the merged result, files and empty folders alike: a
//! result that would grow the shared document over it is not written, and the document stays as
//! it was. In both cases the run's whole document is kept as a **recovery copy** (a workspace of
//! its own, `recovery_of` its source, deleted with it) and the run records an error naming the
//! copy. The merge is written only if the shared document did not change since it was read (else
//! it is done again), in one transaction with the copy and the end of the view.

use super::ATTEMPTS;
use crate::db::{self, DbError};
use crate::sandbox::workspaces::document::Document;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::merge::three_way;
use crate::sandbox::workspaces::model::Resolved;
use crate::sandbox::workspaces::{state_store, store};
use crate::state::AppState;

type Result<T> = std::result::Result<T, WorkspaceError>;

/// What finishing could not do: the copy that keeps the run's files, and why, in words.
#[derive(Debug, Clone)]
pub struct Recovered {
    pub copy_id: String,
    pub error: String,
}

/// Merges the run's view into the shared document and ends the view. None when everything
/// landed (or the run never used its workspace).
pub async fn merge_at_finish(st: &AppState, r: &Resolved) -> Result<Option<Recovered>> {
    let limit = st.config.sandboxd.state_limit_bytes;
    let (org, ws, run) = (&r.org_id, &r.workspace.id, &r.run.id);
    for _ in 0..ATTEMPTS {
        let mut c = st.db.conn().await?;
        let Some(view) = state_store::view(&mut c, org, run, ws).await? else { return Ok(None) };
        let base = Document::parse(view.base_document.as_deref())?;
        let ours = Document::parse(view.document.as_deref())?;
        if ours == base {
            state_store::delete_view(&mut c, org, run).await?;
            return Ok(None);
        }
        let (text, version) = store::document(&mut c, ws).await?;
        drop(c);
        let theirs = Document::parse(text.as_deref())?;
        let merged = three_way(&base, &ours, &theirs);
        let size = merged.document.usage();
        let too_large = size > limit && size > theirs.usage();
        let why = if too_large {
            Some(format!(
                "This run's changes do not fit together with the changes other runs saved meanwhile: the workspace would \
                 hold {size} bytes, over its storage limit of {limit} bytes (files and empty folders count). The shared \
                 workspace is unchanged"
            ))
        } else if !merged.conflicts.is_empty() {
            Some(format!(
                "A run that finished earlier changed {} this run changed too: {}. The earlier run's version stays in the \
                 shared workspace",
                if merged.conflicts.len() == 1 { "a path" } else { "paths" },
                named(&merged.conflicts)
            ))
        } else {
            None
        };
        let now = db::now_ms();
        let mut tx = st.db.begin().await?;
        let copy_id = match &why {
            Some(_) => state_store::insert_copy(&mut tx, org, ws, run, &ours.to_json(), now).await?,
            None => None,
        };
        if !too_large && !store::replace_document(&mut tx, ws, version, &merged.document.to_json(), now).await? {
            tx.rollback().await.map_err(DbError::from)?;
            continue;
        }
        state_store::delete_view(&mut tx, org, run).await?;
        tx.commit().await.map_err(DbError::from)?;
        return Ok(match (why, copy_id) {
            (Some(why), Some(copy_id)) => Some(Recovered {
                error: format!("{why}; this run's files are kept in the recovery copy {copy_id}."),
                copy_id,
            }),
            // The source was deleted meanwhile: there is nothing to keep a copy of.
            _ => None,
        });
    }
    Err(WorkspaceError::Internal(anyhow::anyhow!("the shared state document kept changing; the run's view is kept")))
}

/// At most ten paths by name, then how many more.
fn named(paths: &[String]) -> String {
    const SHOWN: usize = 10;
    let mut out = paths.iter().take(SHOWN).map(|p| format!("/workspace/{p}")).collect::<Vec<_>>().join(", ");
    if paths.len() > SHOWN {
        out.push_str(&format!(" and {} more", paths.len() - SHOWN));
    }
    out
}
