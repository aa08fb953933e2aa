//! `agenticos doctor`'s checks of one connection, by its kind (each kind's in its folder,
//! `hosts/<kind>/doctor.rs`).

use crate::sandbox::connections::model::{Connection, ConnectionKind};
use crate::sandbox::doctor_check::Check;
use crate::sandbox::hosts::{daytona, sandboxd};
use crate::state::AppState;

/// The checks of `conn`, in the order they run and print.
pub async fn checks(st: &AppState, org_id: &str, conn: &Connection) -> Vec<Check> {
    match conn.kind {
        ConnectionKind::Sandboxd => sandboxd::doctor::checks(st, org_id, conn).await,
        ConnectionKind::Daytona => daytona::doctor::checks(st, org_id, conn).await,
    }
}
