//! The `Org` fixture: an organization with an owner's API token, and what a test does through
//! it (connections, agents, conversations, runs and their workspaces), with the rows a run
//! recorded.

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{Resp, TestApp};
use crate::peer::Peer;

/// An organization with a token and (optionally) a connection to a host.
pub(crate) struct Org<'a> {
    pub(crate) app: &'a TestApp,
    pub(crate) token: String,
    pub(crate) org_id: String,
}

impl<'a> Org<'a> {
    pub(crate) async fn new(app: &'a TestApp) -> Org<'a> {
        app.setup_owner().await;
        let token = app.web.create_token_in_page("runtime", "owner").await;
        let org_id = app.web.bearer(&token, Method::GET, "/api/v1/me", None).await.json()["organization"]["id"]
            .as_str()
            .expect("org id")
            .to_string();
        Org { app, token, org_id }
    }

    pub(crate) async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Resp {
        self.app.web.bearer(&self.token, method, path, body).await
    }

    pub(crate) async fn connect(&self, peer: &Peer) -> String {
        self.connect_with(peer, json!({})).await
    }

    /// Connects to `peer` with more fields in the body (`{"save_anyway": true}` for a host that
    /// fails the save's check on purpose).
    pub(crate) async fn connect_with(&self, peer: &Peer, extra: Value) -> String {
        let mut body = json!({"name": format!("peer-{}", peer.port()), "address": peer.url, "new_key": peer.token});
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        let r = self.call(Method::POST, "/api/v1/sandbox-connections", Some(body)).await;
        assert_eq!(r.status, 201, "{}", r.body);
        r.json()["id"].as_str().expect("id").to_string()
    }

    pub(crate) async fn agent(&self, body: Value) -> String {
        let r = self.call(Method::POST, "/api/v1/agents", Some(body)).await;
        assert_eq!(r.status, 201, "{}", r.body);
        r.json()["id"].as_str().expect("id").to_string()
    }

    pub(crate) async fn conversation(&self, agent: &str, extra: Value) -> String {
        let mut body = json!({"agent_id": agent, "title": "chat"});
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        let r = self.call(Method::POST, "/api/v1/conversations", Some(body)).await;
        assert_eq!(r.status, 201, "{}", r.body);
        r.json()["id"].as_str().expect("id").to_string()
    }

    pub(crate) async fn run(&self, agent: &str, conversation: Option<&str>, extra: Value) -> String {
        let mut body = json!({"agent_id": agent, "conversation_id": conversation, "started_by": "member"});
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        let r = self.call(Method::POST, "/api/v1/runs", Some(body)).await;
        assert_eq!(r.status, 201, "{}", r.body);
        r.json()["id"].as_str().expect("id").to_string()
    }

    pub(crate) async fn ws(&self, run: &str, method: Method, sub: &str, body: Option<Value>) -> Resp {
        self.call(method, &format!("/api/v1/runs/{run}/workspace/{sub}"), body).await
    }

    pub(crate) async fn write(&self, run: &str, path: &str, content: &str) -> Resp {
        let url = self.app.web.url(&format!("/api/v1/runs/{run}/workspace/files?path={}", urlencode(path)));
        self.app.web.send(reqwest::Client::new().put(url).bearer_auth(&self.token).body(content.to_string())).await
    }

    pub(crate) async fn read(&self, run: &str, path: &str) -> Resp {
        self.ws(run, Method::GET, &format!("files?path={}", urlencode(path)), None).await
    }

    pub(crate) async fn exec(&self, run: &str, command: &str) -> Resp {
        self.ws(run, Method::POST, "exec", Some(json!({"command": command}))).await
    }

    pub(crate) async fn finish(&self, run: &str) {
        let r = self.call(Method::POST, &format!("/api/v1/runs/{run}/finish"), None).await;
        assert_eq!(r.status, 200, "{}", r.body);
    }

    /// A conversation of `agent` (a `conversation`-scoped one) whose workspace holds `a.txt` at
    /// the host: (conversation id, session key).
    pub(crate) async fn conversation_with_files(&self, agent: &str) -> (String, String) {
        let conv = self.conversation(agent, json!({})).await;
        let run = self.run(agent, Some(&conv), json!({})).await;
        assert_eq!(self.write(&run, "a.txt", "kept").await.status, 204);
        let state = self.ws(&run, Method::GET, "state", None).await.json();
        (conv, state["session_key"].as_str().expect("key").to_string())
    }

    /// An agent and a conversation whose workspace held `work.txt` until the host purged it
    /// behind our back (after its run finished).
    pub(crate) async fn conversation_whose_files_are_gone(&self, peer: &Peer) -> (String, String) {
        self.connect(peer).await;
        let agent = self.agent(service_agent("keeper", "conversation")).await;
        let conv = self.conversation(&agent, json!({})).await;
        let r1 = self.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(self.write(&r1, "work.txt", "important").await.status, 204);
        self.finish(&r1).await;
        self.purge_behind_our_back(peer, &r1).await;
        (agent, conv)
    }

    /// Purges the session of `run`'s workspace on the host directly, files and all, as a
    /// workspace TTL or a rebuilt host would.
    pub(crate) async fn purge_behind_our_back(&self, peer: &Peer, run: &str) {
        let state = self.ws(run, Method::GET, "state", None).await.json();
        let key = state["session_key"].as_str().expect("key").to_string();
        let r = peer.request(Method::DELETE, &format!("/sessions/{key}?purge=true")).send().await.expect("purge");
        assert_eq!(r.status(), 204);
    }

    /// (operation, target, ok, detail) of a run's rows, in order.
    pub(crate) async fn rows(&self, run: &str) -> Vec<(String, String, bool, String)> {
        self.app.state.log.settle().await;
        let mut c = self.app.state.db.conn().await.expect("conn");
        let rows: Vec<(String, String, i64, String)> = sqlx::query_as(
            "SELECT operation, target, ok, detail FROM sandbox_operations WHERE CAST(run_id AS TEXT) = $1 ORDER BY seq",
        )
        .bind(run)
        .fetch_all(&mut *c)
        .await
        .expect("rows");
        rows.into_iter().map(|(o, t, ok, d)| (o, t, ok == 1, d)).collect()
    }

    /// This organization's sessions on `peer`.
    pub(crate) async fn sessions_on(&self, peer: &Peer) -> Vec<Value> {
        peer.get("/sessions").await["sessions"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|s| s["tenant"] == self.org_id.as_str())
            .collect()
    }
}

pub(crate) fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

pub(crate) fn row(op: &str, target: &str, ok: bool, detail: &str) -> (String, String, bool, String) {
    (op.to_string(), target.to_string(), ok, detail.to_string())
}

pub(crate) fn service_agent(name: &str, scope: &str) -> Value {
    json!({"name": name, "backend": "service", "scope": scope})
}
