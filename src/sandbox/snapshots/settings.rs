//! An agent's snapshot settings written in the caller's transaction, so that the agents service
//! saves an agent and its settings as one action (it may not call the snapshots service, which
//! reaches the workspaces and through them the agents again).

use super::model::Settings;
use super::store;
use crate::db::{self, Conn, DbResult};

pub async fn save_in(c: &mut Conn, org_id: &str, agent_id: &str, s: &Settings) -> DbResult<()> {
    store::put_settings(c, org_id, agent_id, s, db::now_ms()).await
}
