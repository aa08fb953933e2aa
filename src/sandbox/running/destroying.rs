//! Claiming a session's name before the Running tab deletes its files (sandboxd's "Close and
//! delete files", Daytona's delete), as the tombstone sweep does: refused under the claim when
//! another workspace uses the session now or an open of its name is under way (docs/workspaces.md,
//! "Running sessions").

use super::error::RunningError;
use crate::sandbox::workspaces::claims::{self, Destroy};
use crate::state::AppState;

type Result<T> = std::result::Result<T, RunningError>;

/// Claims host session `what` (named `name`) for deleting its files, as an open claims its name
/// ([`claims::claim_destroy`]): refused, with nothing sent to the host, when a workspace other than
/// `allowed` (the one the session was shown for) uses it now, or an open of its name is under way
/// with no workspace using it yet (it may be one's in a moment). Then the caller deletes and
/// releases the claim.
pub(crate) async fn claim(st: &AppState, name: &str, what: &str, allowed: Option<&str>) -> Result<()> {
    match claims::claim_destroy(&st.db, name, what, allowed, crate::db::now_ms()).await? {
        Destroy::Go => Ok(()),
        Destroy::InUse(_) => Err(RunningError::InUse(
            "A workspace uses this session now (it was opened again by its name): nothing was deleted. \
             The Running tab shows whose it is."
                .into(),
        )),
        Destroy::Opening => Err(RunningError::InUse(
            "A run is opening a workspace on this session right now: nothing was deleted. Try again in a minute."
                .into(),
        )),
        Destroy::Busy => {
            Err(RunningError::InUse("This session is being deleted right now: nothing more was sent.".into()))
        }
    }
}
