//! Metrics on: the settings that turn `/metrics` on behind a token, a scrape, and a workload of
//! workspace operations through the real sandboxd peer.

use reqwest::Method;
use serde_json::json;

use super::{service_agent, Org};
use crate::helpers::{Resp, TestApp};
use crate::peer::Peer;

/// The bearer token `/metrics` asks for on the main address in these tests.
pub(crate) const METRICS_TOKEN: &str = "metrics-token-for-tests-0123456789";

/// `/metrics` on, on the main address behind [`METRICS_TOKEN`].
pub(crate) const WITH_TOKEN: &[(&str, &str)] =
    &[("AGENTICOS_METRICS", "1"), ("AGENTICOS_METRICS_TOKEN", METRICS_TOKEN)];

/// `GET /metrics` with `token` (none: no header).
pub(crate) async fn scrape_with(app: &TestApp, token: Option<&str>) -> Resp {
    let mut request = reqwest::Client::new().get(app.web.url("/metrics"));
    if let Some(t) = token {
        request = request.bearer_auth(t);
    }
    app.web.send(request).await
}

/// The metrics text, scraped with the right token.
pub(crate) async fn scrape(app: &TestApp) -> String {
    let r = scrape_with(app, Some(METRICS_TOKEN)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

/// What a workload did: the organization, its connection and the run.
pub(crate) struct Workload<'a> {
    pub(crate) org: Org<'a>,
    pub(crate) connection: String,
    pub(crate) run: String,
}

/// An organization connected to `peer` with a run of a conversation-scoped agent.
pub(crate) async fn workload<'a>(app: &'a TestApp, peer: &Peer) -> Workload<'a> {
    let org = Org::new(app).await;
    let connection = org.connect(peer).await;
    let agent = org.agent(service_agent("metered", "conversation")).await;
    let conv = org.conversation(&agent, json!({})).await;
    let run = org.run(&agent, Some(&conv), json!({})).await;
    Workload { org, connection, run }
}

impl Workload<'_> {
    /// `rounds` × (write, read, ls) of `path` in the run's workspace, each answered 2xx.
    pub(crate) async fn operate(&self, path: &str, rounds: usize) {
        for i in 0..rounds {
            assert_eq!(self.org.write(&self.run, path, &format!("round {i}")).await.status, 204);
            assert_eq!(self.org.read(&self.run, path).await.status, 200);
            let listed = self.org.ws(&self.run, Method::GET, "ls?path=.", None).await;
            assert_eq!(listed.status, 200, "{}", listed.body);
        }
    }
}

/// A tombstone of `org_id` on `connection` naming a session the host does not know, due at
/// `due_at`, with `last_error` from an earlier attempt (a row in a state no route reaches at once).
pub(crate) async fn pending_delete(
    app: &TestApp,
    org_id: &str,
    connection: &str,
    last_error: Option<&str>,
    due_at: i64,
) {
    let now = agenticos::db::now_ms();
    let (attempts, error) = match last_error {
        Some(e) => (1, format!("'{e}'")),
        None => (0, "NULL".to_string()),
    };
    let session = format!("gone-{}", uuid::Uuid::new_v4().simple());
    app.execute(&format!(
        "INSERT INTO sandbox_tombstones (id, organization_id, connection_id, session_key, session_id, reason, \
         attempts, next_attempt_at, last_attempt_at, last_error, created_at) VALUES ('{}', '{org_id}', \
         '{connection}', '{session}', '{session}', 'conversation_deleted', {attempts}, {due_at}, {now}, {error}, {now})",
        uuid::Uuid::new_v4()
    ))
    .await;
}
