//! A test hook: an open held between its host call and the write of its row, so a test can run
//! the orphan listing and purge at exactly that moment (tests/api/orphan_race.rs). Unarmed (always,
//! outside those tests) it costs one uncontended lock per open.

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// At most one armed hold, for one session key.
#[derive(Default)]
pub struct OpenHold(Mutex<Option<(String, Arc<Held>)>>);

/// An armed hold: the open notifies `reached` once its host answered, then waits for `release`.
#[derive(Default)]
pub struct Held {
    pub reached: Notify,
    pub release: Notify,
}

impl OpenHold {
    /// Holds the next open of `key` (once).
    pub fn arm(&self, key: &str) -> Arc<Held> {
        let held = Arc::new(Held::default());
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some((key.to_string(), held.clone()));
        held
    }

    /// Called by an open of `key` between its host call and its row: waits while a hold is armed
    /// for it.
    pub(crate) async fn at_host_opened(&self, key: &str) {
        let held = {
            let mut armed = self.0.lock().unwrap_or_else(|p| p.into_inner());
            match armed.as_ref() {
                Some((k, _)) if k == key => armed.take().map(|(_, h)| h),
                _ => None,
            }
        };
        if let Some(held) = held {
            held.reached.notify_one();
            held.release.notified().await;
        }
    }
}
