//! A test hook: a snapshot held at a point (its first file archived, its upload begun at the
//! store), so a test can kill the host or cut the store at exactly that moment
//! (tests/api/snapshots_interrupted.rs). Each console has its own (`AppState::snapshot_hold`).
//! Unarmed (always, outside those tests) it costs one uncontended lock per snapshot.

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// Where a snapshot may be held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// The first file read from the host was handed to the archive.
    FirstFile,
    /// The store accepted the upload (a multipart upload exists) and no part was sent yet.
    UploadStarted,
}

/// An armed hold: the snapshot notifies `reached`, then waits for `release`.
#[derive(Default)]
pub struct Held {
    pub reached: Notify,
    pub release: Notify,
}

type Armed = Vec<(Point, String, Arc<Held>)>;

/// The holds armed on one console (none outside tests; each is used once).
#[derive(Clone, Default)]
pub struct SnapshotHold(Arc<Mutex<Armed>>);

impl SnapshotHold {
    /// Holds the next snapshot at `point` whose source (a sandboxd session id, a Daytona sandbox
    /// id; at the store, its object key) contains `source`, once.
    pub fn arm(&self, point: Point, source: &str) -> Arc<Held> {
        let held = Arc::new(Held::default());
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push((point, source.to_string(), held.clone()));
        held
    }

    /// Called by a snapshot of `source` at `point`: waits while a hold is armed for it.
    pub(super) async fn at(&self, point: Point, source: &str) {
        at(&self.0, point, source).await
    }
}

async fn at(armed: &Mutex<Armed>, point: Point, source: &str) {
    let held = {
        let mut armed = armed.lock().unwrap_or_else(|p| p.into_inner());
        let found = armed.iter().position(|(p, s, _)| *p == point && source.contains(s.as_str()));
        found.map(|i| armed.remove(i).2)
    };
    if let Some(held) = held {
        held.reached.notify_one();
        held.release.notified().await;
    }
}
