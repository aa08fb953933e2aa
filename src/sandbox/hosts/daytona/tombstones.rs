//! Destroying a Daytona sandbox a tombstone names (docs/daytona.md): `DELETE /sandbox/{id}`
//! answers 200 when Daytona *accepted* the delete, so the tombstone goes only once a `GET`
//! confirms it gone (404, or `destroyed`). A sandbox already being destroyed is not deleted again,
//! only watched. A 409 (a state change in progress), a 5xx, no answer, and a refused key fail the
//! attempt: the sweep retries with its usual backoff, and the connection's row shows why.

use std::time::Duration;

use crate::sandbox::hosts::daytona::client::{DaytonaClient, DaytonaError, SandboxState};

/// How long one attempt watches an accepted delete before it leaves the rest to the next one.
const CONFIRM_WITHIN: Duration = Duration::from_secs(10);

/// Deletes sandbox `id` (its id or name) and confirms it gone; the error in our words.
pub async fn destroy(client: &DaytonaClient, id: &str) -> Result<(), String> {
    match state(client, id).await? {
        None | Some(SandboxState::Destroyed) => return Ok(()),
        Some(SandboxState::Destroying) => {}
        Some(_) => match client.delete_sandbox(id).await {
            Ok(()) | Err(DaytonaError::NotFound { .. }) => {}
            Err(e) => return Err(words(&e)),
        },
    }
    confirm_gone(client, id).await
}

/// How many destroys [`destroy_many`] (and the orphan purge, `running::orphans::purge`) run at once.
pub const DESTROY_CONCURRENCY: usize = 8;

/// Destroys each of `ids` (ids or names) as [`destroy`] does, [`DESTROY_CONCURRENCY`] at a time
/// (hundreds of orphans take seconds, not minutes: each destroy mostly waits for Daytona); each
/// id with its outcome, in the order given.
pub async fn destroy_many(client: &DaytonaClient, ids: &[String]) -> Vec<(String, Result<(), String>)> {
    use futures_util::stream::{self, StreamExt as _};
    stream::iter(ids.iter().cloned())
        .map(|id| async move {
            let outcome = destroy(client, &id).await;
            (id, outcome)
        })
        .buffered(DESTROY_CONCURRENCY)
        .collect()
        .await
}

/// The sandbox's state; none when Daytona no longer knows it (404).
async fn state(client: &DaytonaClient, id: &str) -> Result<Option<SandboxState>, String> {
    match client.get_sandbox(id).await {
        Ok(sandbox) => Ok(Some(sandbox.state())),
        Err(DaytonaError::NotFound { .. }) => Ok(None),
        Err(e) => Err(words(&e)),
    }
}

/// Polls until the sandbox is gone (100 ms, doubling to 1 s), at most [`CONFIRM_WITHIN`].
async fn confirm_gone(client: &DaytonaClient, id: &str) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + CONFIRM_WITHIN;
    let mut pause = Duration::from_millis(100);
    loop {
        let now = match state(client, id).await? {
            None | Some(SandboxState::Destroyed) => return Ok(()),
            Some(s) => s,
        };
        if tokio::time::Instant::now() + pause > deadline {
            return Err(format!(
                "Daytona accepted the delete, but the sandbox is still {}: the next attempt checks again.",
                now.as_str()
            ));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(1));
    }
}

/// A failure in the words the connection's row shows (never the API URL or the key).
fn words(e: &DaytonaError) -> String {
    match e {
        DaytonaError::KeyRefused => "Daytona refused the connection's API key: nothing was destroyed. Give the \
             connection a key Daytona accepts; the sweep keeps trying."
            .into(),
        DaytonaError::Conflict { message } => {
            format!("Daytona is changing the sandbox's state ({message}): the sweep tries again.")
        }
        other => format!("{} The sweep tries again.", other.in_words()),
    }
}
