//! What the home page shows: for those who may see sandboxes, where the console keeps its
//! records and the capacity this organization uses on each host (switched-off ones marked), and the caller's
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
    /// Where the console keeps its records; `None` for a role that may not see sandboxes (an
    /// operator's matter, not a member's).
    pub database: Option<&'static str>,
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

    /// The switched-on hosts whose capacity card says they could not be read, and that the health
    /// report does not already name as a problem: `(connection id, name, why)`. The capacity
    /// cards ask the hosts now; the report reads the last check, which may be a little older.
    pub fn unreadable(&self) -> Vec<(String, String, String)> {
        let named =
            |id: &str| self.health.iter().flat_map(|h| h.connections.iter()).any(|c| c.id == id && c.is_problem());
        let hosts = self.capacity.iter().flatten().filter(|h| h.is_enabled && !named(&h.connection_id));
        hosts
            .filter_map(|h| h.problem.clone().map(|p| (h.connection_id.clone(), h.connection_name.clone(), p)))
            .collect()
    }

    /// "Is everything OK?": the health report's answer, no host near a limit, and no capacity card
    /// saying a switched-on host could not be read (the page never says yes beside such a card).
    pub fn all_ok(&self) -> bool {
        self.health.as_ref().is_some_and(|h| h.ok) && self.near_cap().is_empty() && self.unreadable().is_empty()
    }
}

pub async fn home(st: &AppState, caller: &Caller) -> Result<Home, DashboardError> {
    let database = caller.role.can_see_sandboxes().then_some(match st.db.kind() {
        DbKind::Sqlite => "SQLite (embedded)",
        DbKind::Postgres => "PostgreSQL",
    });
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
