//! This console's snapshot uploads of the background, by run (in `AppState::snapshot_uploads`):
//! what `pending::wait_for_run` waits on. Each leaves the list when it ends, so it holds at most
//! the uploads under way.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;

#[derive(Clone, Default)]
pub struct Uploads(Arc<Mutex<Vec<InFlight>>>);

struct InFlight {
    run_id: String,
    pending_id: String,
    /// Changes (its sender dropped) when the upload ends.
    ended: watch::Receiver<()>,
}

impl Uploads {
    fn list(&self) -> MutexGuard<'_, Vec<InFlight>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An upload of pending snapshot `pending_id` of `run_id` begins: it ends when `done` drops.
    pub fn begin(&self, run_id: String, pending_id: String) -> watch::Sender<()> {
        let (done, ended) = watch::channel(());
        self.list().push(InFlight { run_id, pending_id, ended });
        done
    }

    pub fn end(&self, pending_id: &str) {
        self.list().retain(|f| f.pending_id != pending_id);
    }

    /// What to wait on for `run_id`'s uploads under way.
    pub fn of_run(&self, run_id: &str) -> Vec<watch::Receiver<()>> {
        self.list().iter().filter(|f| f.run_id == run_id).map(|f| f.ended.clone()).collect()
    }
}
