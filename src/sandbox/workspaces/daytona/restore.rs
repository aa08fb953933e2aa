//! Writing a snapshot into a Daytona sandbox being opened (instead of the manifest's files),
//! each entry recorded like any other write, one at a time, through the sandbox's toolbox.

use super::files;
use crate::sandbox::daytona_client::Toolbox;
use crate::sandbox::recording::Operation;
use crate::sandbox::snapshots::archive::Item;
use crate::sandbox::snapshots::model::Snapshot;
use crate::sandbox::snapshots::restore;
use crate::sandbox::workspaces::backend::Result;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::model::Resolved;
use crate::sandbox::workspaces::recorded::{bytes_detail, record, RowKeys};
use crate::state::AppState;

pub(super) async fn write_snapshot(st: &AppState, r: &Resolved, tb: &Toolbox, s: &Snapshot) -> Result<()> {
    let keys = RowKeys::of(r);
    let mut rx = restore::entries(st, s).await?;
    while let Some(item) = rx.recv().await {
        let item = item.map_err(|e| WorkspaceError::Internal(anyhow::Error::from(e).context("reading a snapshot")))?;
        match item {
            Item::Dir(p) => {
                let work = Box::pin(files::mkdir(tb.clone(), &p));
                record(&st.recorder, &keys, Operation::Mkdir, p.display(), work, |_| (true, String::new())).await?;
            }
            Item::File(p, bytes) => {
                let work = Box::pin(files::write(tb.clone(), &p, &bytes));
                record(&st.recorder, &keys, Operation::Write, p.display(), work, |_| bytes_detail(bytes.len())).await?;
            }
        }
    }
    Ok(())
}
