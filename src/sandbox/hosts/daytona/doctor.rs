//! `agenticos doctor`'s checks of a Daytona connection (docs/daytona.md): its API answers like
//! Daytona's, its key is present and accepted, and the snapshot new sandboxes start from exists.

use crate::sandbox::connections::model::Connection;
use crate::sandbox::doctor_check::{
    credential, failed, passed, skipped, Check, Outcome, CREDENTIAL_ACCEPTED, CREDENTIAL_PRESENT, REACHABLE,
    READ_TIMEOUT, SNAPSHOT_PRESENT,
};
use crate::sandbox::hosts::daytona::client::Timeouts as DaytonaTimeouts;
use crate::sandbox::hosts::daytona::connections as daytona;
use crate::state::AppState;

/// The four checks of one Daytona connection: its API answers like Daytona's, its key is in the
/// vault (of purpose `daytona`, bound to the API URL), Daytona accepts it, and the snapshot new
/// sandboxes start from exists (the connection's, else Daytona's default). Nothing is sent without
/// a usable key.
pub async fn checks(st: &AppState, org_id: &str, conn: &Connection) -> Vec<Check> {
    let present = match credential(st, org_id, conn).await {
        Ok(_) => passed(CREDENTIAL_PRESENT, format!("vault key \"{}\"", conn.credential_name.as_deref().unwrap_or(""))),
        Err(why) => failed(CREDENTIAL_PRESENT, why),
    };
    let client = match &present.outcome {
        Outcome::Passed(_) => daytona::client_for(st, org_id, conn).await.map_err(|e| e.to_string()),
        _ => Err("not checked (no usable credential: nothing is sent to Daytona without one)".to_string()),
    };
    let client = match client {
        Ok(c) => c.with_timeouts(DaytonaTimeouts { read: READ_TIMEOUT, ..DaytonaTimeouts::default() }),
        Err(why) => {
            let reach = if matches!(present.outcome, Outcome::Passed(_)) {
                failed(REACHABLE, why.clone())
            } else {
                skipped(REACHABLE, why.clone())
            };
            return vec![reach, present, skipped(CREDENTIAL_ACCEPTED, why.clone()), skipped(SNAPSHOT_PRESENT, why)];
        }
    };
    let found = daytona::find(&client, conn.default_runtime.as_deref()).await;
    if let Err(why) = found.reached() {
        let not = "not checked (Daytona's API did not answer)";
        return vec![
            failed(REACHABLE, why),
            present,
            skipped(CREDENTIAL_ACCEPTED, not),
            skipped(SNAPSHOT_PRESENT, not),
        ];
    }
    let mut checks = vec![passed(REACHABLE, "Daytona's API answered"), present];
    if let Err(e) = &found.key {
        checks.push(failed(CREDENTIAL_ACCEPTED, daytona::words(e)));
        checks.push(skipped(SNAPSHOT_PRESENT, "not checked (the key was refused)"));
        return checks;
    }
    checks.push(passed(CREDENTIAL_ACCEPTED, "Daytona accepted the key"));
    checks.push(match &found.snapshot {
        Some(s) if s.found.is_ok() => {
            passed(SNAPSHOT_PRESENT, format!("\"{}\"{}", s.name, if s.chosen { "" } else { " (Daytona's default)" }))
        }
        _ => failed(SNAPSHOT_PRESENT, found.probe(st).message),
    });
    checks
}
