//! What the home page shows: where the console keeps its records and, for those who may see
//! sandboxes, the capacity this organization uses on each host (switched-off ones marked), and the caller's
//! pending invitations, and "is everything OK?": hosts by state, pending deletes, failed sweeps and
//! failed operations in the last hour (the figures `GET /api/v1/health` answers), and Getting
//! started with the steps already done marked.

use super::error::DashboardError;
use super::getting_started::GettingStarted;
use super::store;
use crate::access::Caller;
use crate::db::DbKind;
use crate::monitoring::model::HealthReport;
use crate::monitoring::service as monitoring;
use crate::orgs::invitations::model::InvitationRecord;
use crate::orgs::invitations::service as invitations;
use crate::sandbox::running::model::HostSessions;
use crate::sandbox::running::service as running;
use crate::state::AppState;

pub struct Home {
    pub database: &'static str,
    /// One entry per sandboxd host (a host registered twice once; switched-off ones marked);
    /// `None` for a role that may not see sandboxes.
    pub capacity: Option<Vec<HostSessions>>,
    /// The caller's pending invitations to other organizations, to accept or decline.
    pub invitations: Vec<InvitationRecord>,
    /// Is everything OK? `None` for a role that may not see sandboxes.
    pub health: Option<HealthReport>,
    /// The first steps of the caller's role, each marked done or not.
    pub getting_started: GettingStarted,
}

impl Home {
    /// The hosts where this organization's sessions, or the host's, are near a limit:
    /// `(connection id, name, why)`.
    pub fn near_cap(&self) -> Vec<(String, String, String)> {
        let hosts = self.capacity.iter().flatten().filter(|h| h.is_enabled);
        hosts
            .filter_map(|h| h.near_cap().map(|n| (h.connection_id.clone(), h.connection_name.clone(), n.why)))
            .collect()
    }

    /// "Is everything OK?": the health report's answer, and no host near a limit.
    pub fn all_ok(&self) -> bool {
        self.health.as_ref().is_some_and(|h| h.ok) && self.near_cap().is_empty()
    }
}

pub async fn home(st: &AppState, caller: &Caller) -> Result<Home, DashboardError> {
    let database = match st.db.kind() {
        DbKind::Sqlite => "SQLite (embedded)",
        DbKind::Postgres => "PostgreSQL",
    };
    let capacity = if caller.role.can_see_sandboxes() { Some(running::capacity(st, caller).await?) } else { None };
    let health = match caller.role.can_see_sandboxes() {
        true => Some(monitoring::health(st, caller, crate::db::now_ms()).await?),
        false => None,
    };
    let invitations = invitations::pending_for(&st.db, &caller.email).await?;
    let mut c = st.db.conn().await?;
    let made = store::made(&mut c, &caller.org_id, crate::db::now_ms()).await?;
    drop(c);
    let getting_started = GettingStarted::for_role(caller.role, &made);
    Ok(Home { database, capacity, invitations, health, getting_started })
}
