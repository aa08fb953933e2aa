//! A session's live activity as the activity page shows it: the host's event ring, in words.

use serde::Serialize;

use super::model::RunningSession;
use crate::sandbox::connections::model::Connection;
use crate::sandbox::hosts::sandboxd::client::{EventOp, SessionEvent, SessionEvents, SessionInfo};
use crate::sandbox::policy::model::ConnectionRef;

/// One entry of a session's event ring.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ActivityEvent {
    /// The host's sequence number of this entry (increasing; the next poll's `after`).
    pub seq: u64,
    /// When it happened: epoch seconds (UTC), with a fraction.
    pub at: f64,
    /// `run`, `read`, `write`, `stat`, `realpath`, `ls`, `mkdir`, `remove` or `other`.
    #[schema(value_type = String)]
    pub op: &'static str,
    /// The command, or the path.
    pub target: String,
    /// Whether the host reports it succeeded.
    pub ok: bool,
    /// The host's words about it (`exit 0`, an error).
    pub detail: String,
    /// How long it took: milliseconds.
    pub duration_ms: f64,
}

impl ActivityEvent {
    fn of(e: &SessionEvent) -> Self {
        ActivityEvent {
            seq: e.seq,
            at: e.at,
            op: op_name(e.op),
            target: e.target.clone(),
            ok: e.ok,
            detail: e.detail.clone(),
            duration_ms: e.duration_ms,
        }
    }

    /// When it happened, in epoch milliseconds (for `values::when`).
    pub fn at_ms(&self) -> i64 {
        (self.at * 1000.0) as i64
    }

    /// `7.4 ms`, `2.78 s`.
    pub fn duration(&self) -> String {
        if self.duration_ms < 1000.0 {
            format!("{:.1} ms", self.duration_ms)
        } else {
            format!("{:.2} s", self.duration_ms / 1000.0)
        }
    }
}

fn op_name(op: EventOp) -> &'static str {
    match op {
        EventOp::Run => "run",
        EventOp::Read => "read",
        EventOp::Write => "write",
        EventOp::Stat => "stat",
        EventOp::Realpath => "realpath",
        EventOp::Ls => "ls",
        EventOp::Mkdir => "mkdir",
        EventOp::Remove => "remove",
        EventOp::Other => "other",
    }
}

/// A session's live activity: the entries after `after`, newest last.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Activity {
    /// The connection whose host holds the session.
    pub connection: ConnectionRef,
    /// The session as the Running tab shows it.
    #[schema(inline)]
    pub session: RunningSession,
    /// The entries after `after`, oldest first.
    pub events: Vec<ActivityEvent>,
    /// What was asked for: entries with a greater `seq`.
    pub after: u64,
    /// The last sequence number the host assigned: the next poll's `after`.
    pub latest_seq: u64,
    /// Entries that fell off the host's ring before they could be shown.
    pub missed: u64,
}

impl Activity {
    pub(super) fn of(
        conn: &Connection,
        info: &SessionInfo,
        after: u64,
        log: SessionEvents,
        idle_timeout: Option<u64>,
    ) -> Self {
        let missed = log.events.first().map(|e| e.seq.saturating_sub(after + 1)).unwrap_or(0);
        Activity {
            connection: ConnectionRef::of(conn),
            session: RunningSession::of(&conn.id, info, idle_timeout),
            events: log.events.iter().filter(|e| e.seq > after).map(ActivityEvent::of).collect(),
            after,
            // Never poll backwards, whatever the host says.
            latest_seq: log.latest_seq.max(after),
            missed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::model::fixtures::{conn, info};
    use super::*;
    use crate::sandbox::hosts::sandboxd::client::SessionState;

    #[test]
    fn entries_that_fell_off_the_ring_are_counted() {
        let event = |seq| SessionEvent {
            seq,
            at: 0.0,
            op: EventOp::Run,
            target: "echo".into(),
            ok: true,
            detail: "exit 0".into(),
            duration_ms: 1.0,
        };
        let log = SessionEvents { events: vec![event(8), event(9)], latest_seq: 9 };
        let a = Activity::of(&conn(), &info(None, SessionState::Running, true, 0.0), 5, log, Some(1800));
        assert_eq!((a.missed, a.latest_seq, a.events.len()), (2, 9, 2));
        assert_eq!(a.session.closes_in_words(), "30 min");
        assert_eq!(a.poll_path(), "/sandboxes/c1/sessions/s-1/activity?after=9");
    }
}
