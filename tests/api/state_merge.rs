//! The `state` backend under concurrency (docs/design.md §11), on SQLite and PostgreSQL: each run of a
//! shared document works on its own view and is merged at `finish`; the limit counts files and
//! empty folders, also of the merged result; what does not merge is kept in a recovery copy that
//! goes with its source. Runs are interleaved explicitly, request by request (no sleeps).

use base64::Engine;
use reqwest::Method;
use serde_json::{json, Value};

use crate::db_test;
use crate::helpers::TestApp;
use crate::support::Org;

async fn state_agent(o: &Org<'_>, name: &str) -> String {
    o.agent(json!({"name": name, "backend": "state", "scope": "agent"})).await
}

async fn workspace_id(o: &Org<'_>, run: &str) -> String {
    o.ws(run, Method::GET, "state", None).await.json()["workspace_id"].as_str().expect("workspace id").to_string()
}

/// Finishes a run and returns the run as `finish` answers it.
async fn finish(o: &Org<'_>, run: &str) -> Value {
    let r = o.call(Method::POST, &format!("/api/v1/runs/{run}/finish"), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()
}

/// A workspace's stored document (the shared one, or a recovery copy's).
async fn document(app: &TestApp, id: &str) -> Option<String> {
    let mut c = app.state.db.conn().await.expect("conn");
    sqlx::query_scalar("SELECT document FROM sandbox_workspaces WHERE id = $1")
        .bind(id)
        .fetch_one(&mut *c)
        .await
        .expect("document")
}

/// The text of `path` in a stored document, if it holds that file.
fn file_in(doc: Option<&str>, path: &str) -> Option<String> {
    let v: Value = serde_json::from_str(doc?).expect("json");
    let data = v["entries"][path]["data"].as_str()?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(data).expect("base64");
    Some(String::from_utf8(bytes).expect("utf-8"))
}

async fn workspace_count(app: &TestApp, id: &str) -> i64 {
    let mut c = app.state.db.conn().await.expect("conn");
    sqlx::query_scalar("SELECT COUNT(*) FROM sandbox_workspaces WHERE id = $1")
        .bind(id)
        .fetch_one(&mut *c)
        .await
        .expect("count")
}

/// Two runs of `agent` that both change `x.txt` (after a first run left "base" there): the second
/// to finish loses. Returns (the shared workspace, the losing run, its `finish` answer).
async fn a_conflict(o: &Org<'_>, agent: &str) -> (String, String, Value) {
    let r0 = o.run(agent, None, json!({})).await;
    assert_eq!(o.write(&r0, "x.txt", "base").await.status, 204);
    finish(o, &r0).await;
    let (r1, r2) = (o.run(agent, None, json!({})).await, o.run(agent, None, json!({})).await);
    assert_eq!(o.read(&r1, "x.txt").await.body, "base");
    assert_eq!(o.read(&r2, "x.txt").await.body, "base");
    assert_eq!(o.write(&r1, "x.txt", "from run one").await.status, 204);
    assert_eq!(o.write(&r2, "x.txt", "from run two").await.status, 204);
    assert!(finish(o, &r2).await["workspace_error"].is_null());
    let answer = finish(o, &r1).await;
    (workspace_id(o, &r0).await, r1, answer)
}

db_test! {
    async fn two_runs_editing_different_files_both_land(app: TestApp) {
        let o = Org::new(&app).await;
        let agent = state_agent(&o, "shared").await;
        let (r1, r2) = (o.run(&agent, None, json!({})).await, o.run(&agent, None, json!({})).await);
        assert_eq!(o.write(&r1, "one.txt", "first").await.status, 204);
        assert_eq!(o.write(&r2, "two.txt", "second").await.status, 204);
        assert_eq!(o.ws(&r2, Method::POST, "mkdir", Some(json!({"path": "empty"}))).await.status, 204);
        // Each run sees its own view until it finishes.
        o.read(&r1, "two.txt").await.problem(404);
        o.read(&r2, "one.txt").await.problem(404);
        let a1 = finish(&o, &r1).await;
        let a2 = finish(&o, &r2).await;
        assert!(a1["workspace_error"].is_null() && a1["recovery_workspace_id"].is_null(), "{a1}");
        assert!(a2["workspace_error"].is_null() && a2["recovery_workspace_id"].is_null(), "{a2}");
        let r3 = o.run(&agent, None, json!({})).await;
        assert_eq!(o.read(&r3, "one.txt").await.body, "first");
        assert_eq!(o.read(&r3, "two.txt").await.body, "second");
        assert_eq!(o.ws(&r3, Method::GET, "stat?path=empty", None).await.json()["is_dir"], true);
        assert_eq!(app.count("sandbox_workspaces").await, 1, "no recovery copy");
        assert_eq!(app.count("state_run_views").await, 1, "only the running run keeps a view");
    }
}

db_test! {
    async fn two_runs_finishing_at_the_same_moment_lose_nothing(app: TestApp) {
        let o = Org::new(&app).await;
        let agent = state_agent(&o, "busy").await;
        let (r1, r2) = (o.run(&agent, None, json!({})).await, o.run(&agent, None, json!({})).await);
        assert_eq!(o.write(&r1, "one.txt", "first").await.status, 204);
        assert_eq!(o.write(&r2, "two.txt", "second").await.status, 204);
        let (a1, a2) = tokio::join!(finish(&o, &r1), finish(&o, &r2));
        assert!(a1["workspace_error"].is_null() && a2["workspace_error"].is_null(), "{a1} {a2}");
        let r3 = o.run(&agent, None, json!({})).await;
        assert_eq!(o.read(&r3, "one.txt").await.body, "first");
        assert_eq!(o.read(&r3, "two.txt").await.body, "second");
    }
}

db_test! {
    async fn two_runs_editing_one_file_the_earlier_finish_wins_and_the_other_is_in_a_recovery_copy(app: TestApp) {
        let o = Org::new(&app).await;
        let agent = state_agent(&o, "shared").await;
        let (source, _loser, answer) = a_conflict(&o, &agent).await;
        let copy = answer["recovery_workspace_id"].as_str().expect("a recovery copy").to_string();
        let error = answer["workspace_error"].as_str().expect("an error");
        assert!(error.contains(&copy) && error.contains("x.txt") && error.contains("finished earlier"), "{error}");
        assert_eq!(answer["status"], "finished");
        // The run that finished first keeps its version; the other's is in the copy.
        let r = o.run(&agent, None, json!({})).await;
        assert_eq!(o.read(&r, "x.txt").await.body, "from run two");
        assert_eq!(file_in(document(&app, &copy).await.as_deref(), "x.txt").as_deref(), Some("from run one"));
        let of = app.scalar_strings(&format!("SELECT recovery_of FROM sandbox_workspaces WHERE id = '{copy}'")).await;
        assert_eq!(of, vec![source.clone()]);
        // The run keeps the error: reading it again says the same.
        let run = o.call(Method::GET, &format!("/api/v1/runs/{}", _loser), None).await.json();
        assert_eq!(run["recovery_workspace_id"], copy.as_str());
        // Documents lists the copy as what it is, named for its source.
        let docs = o.call(Method::GET, "/api/v1/documents", None).await.json();
        let groups = docs["groups"].as_array().expect("groups");
        let summary = |id: &str| groups.iter().map(|g| &g["workspace"]).find(|w| w["id"] == id).cloned();
        let listed = summary(&copy).expect("the copy is listed under Documents");
        assert_eq!(listed["kind_label"], "recovery copy");
        assert_eq!(listed["recovery_of"], source.as_str());
        let source_title = summary(&source).expect("the source is listed")["title"].as_str().unwrap_or("").to_string();
        assert_eq!(listed["title"], format!("recovery copy of {source_title}").as_str());
        assert!(summary(&source).expect("source")["recovery_of"].is_null());
    }
}

db_test! {
    async fn a_merged_result_over_the_limit_leaves_the_shared_document_unchanged_and_finish_names_the_copy(app: TestApp)
        settings(&[("AGENTICOS_STATE_LIMIT_BYTES", "100")])
    {
        let o = Org::new(&app).await;
        let agent = state_agent(&o, "small").await;
        let (r1, r2) = (o.run(&agent, None, json!({})).await, o.run(&agent, None, json!({})).await);
        // 5 + 60 bytes each: either fits alone, both do not.
        assert_eq!(o.write(&r1, "a.txt", &"a".repeat(60)).await.status, 204);
        assert_eq!(o.write(&r2, "b.txt", &"b".repeat(60)).await.status, 204);
        assert!(finish(&o, &r1).await["workspace_error"].is_null());
        let source = workspace_id(&o, &r1).await;
        let before = document(&app, &source).await;
        let answer = finish(&o, &r2).await;
        let copy = answer["recovery_workspace_id"].as_str().expect("a recovery copy").to_string();
        let error = answer["workspace_error"].as_str().expect("an error");
        assert!(error.contains(&copy) && error.contains("storage limit of 100 bytes") && error.contains("unchanged"), "{error}");
        assert_eq!(document(&app, &source).await, before, "the shared document is unchanged");
        let copied = document(&app, &copy).await;
        assert_eq!(file_in(copied.as_deref(), "b.txt"), Some("b".repeat(60)));
        assert_eq!(file_in(copied.as_deref(), "a.txt"), None, "the copy is the later run's own state");
    }
}

db_test! {
    async fn an_empty_folder_counts_toward_the_limit_also_when_merged(app: TestApp)
        settings(&[("AGENTICOS_STATE_LIMIT_BYTES", "20")])
    {
        let o = Org::new(&app).await;
        let agent = state_agent(&o, "folders").await;
        let (r1, r2) = (o.run(&agent, None, json!({})).await, o.run(&agent, None, json!({})).await);
        assert_eq!(o.ws(&r1, Method::POST, "mkdir", Some(json!({"path": "folder-one-x"}))).await.status, 204);
        // A second empty folder of 12 characters passes 20 within one run.
        let p = o.ws(&r1, Method::POST, "mkdir", Some(json!({"path": "folder-two-x"}))).await.problem(413);
        assert_eq!(p["type"], "https://agenticos.dev/problems/payload-too-large");
        assert_eq!(o.ws(&r2, Method::POST, "mkdir", Some(json!({"path": "folder-2-abc"}))).await.status, 204);
        assert!(finish(&o, &r1).await["workspace_error"].is_null());
        let answer = finish(&o, &r2).await;
        assert!(answer["recovery_workspace_id"].is_string(), "two empty folders do not fit together: {answer}");
        let r3 = o.run(&agent, None, json!({})).await;
        let names: Vec<Value> = o.ws(&r3, Method::GET, "ls", None).await.json().as_array().cloned().unwrap_or_default();
        assert_eq!(names.iter().map(|e| e["name"].clone()).collect::<Vec<_>>(), vec![json!("folder-one-x")]);
    }
}

db_test! {
    async fn over_a_lowered_limit_a_shrinking_write_is_accepted_and_a_growing_one_refused(app: TestApp)
        settings(&[("AGENTICOS_STATE_LIMIT_BYTES", "100")])
    {
        let o = Org::new(&app).await;
        let agent = state_agent(&o, "lowered").await;
        let r0 = o.run(&agent, None, json!({})).await;
        assert_eq!(o.write(&r0, "big.txt", "x").await.status, 204);
        finish(&o, &r0).await;
        let source = workspace_id(&o, &r0).await;
        // The document as a higher limit allowed it: 7 + 150 bytes.
        let big = base64::engine::general_purpose::STANDARD.encode("x".repeat(150));
        let doc = json!({"entries": {"big.txt": {"data": big, "size": 150}}}).to_string();
        app.execute(&format!("UPDATE sandbox_workspaces SET document = '{doc}', document_version = document_version + 1 WHERE id = '{source}'")).await;
        let r1 = o.run(&agent, None, json!({})).await;
        let p = o.write(&r1, "new.txt", "more").await.problem(413);
        assert_eq!(p["type"], "https://agenticos.dev/problems/payload-too-large");
        let detail = p["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("storage limit of 100 bytes") && detail.contains("Nothing was written"), "{detail}");
        assert!(detail.contains("only changes that make it smaller are accepted"), "{detail}");
        assert_eq!(o.write(&r1, "big.txt", &"x".repeat(120)).await.status, 204, "shrinking is accepted");
        o.write(&r1, "big.txt", &"x".repeat(130)).await.problem(413);
        assert!(finish(&o, &r1).await["workspace_error"].is_null(), "a merge that shrinks lands");
        assert_eq!(file_in(document(&app, &source).await.as_deref(), "big.txt"), Some("x".repeat(120)));
    }
}

db_test! {
    async fn deleting_the_source_deletes_its_recovery_copy_also_when_both_are_deleted_at_once(app: TestApp) {
        let o = Org::new(&app).await;
        // Plain: the foreign key takes the copy with its source; the run forgets the copy.
        let agent = state_agent(&o, "first").await;
        let (source, loser, answer) = a_conflict(&o, &agent).await;
        let copy = answer["recovery_workspace_id"].as_str().expect("copy").to_string();
        app.execute(&format!("DELETE FROM sandbox_workspaces WHERE id = '{source}'")).await;
        assert_eq!(workspace_count(&app, &copy).await, 0);
        let run = o.call(Method::GET, &format!("/api/v1/runs/{loser}"), None).await.json();
        assert!(run["recovery_workspace_id"].is_null(), "{run}");

        // At once, both orders: one transaction deletes first and holds its locks while the other
        // statement starts, then commits; both end without an error and nothing is left.
        for copy_first in [true, false] {
            let agent = state_agent(&o, if copy_first { "second" } else { "third" }).await;
            let (source, _, answer) = a_conflict(&o, &agent).await;
            let copy = answer["recovery_workspace_id"].as_str().expect("copy").to_string();
            let (held, other) = if copy_first { (&copy, &source) } else { (&source, &copy) };
            let mut tx = app.state.db.begin().await.expect("begin");
            sqlx::query("DELETE FROM sandbox_workspaces WHERE id = $1").bind(held).execute(&mut *tx).await.expect("first delete");
            let pool = app.state.db.pool().clone();
            let other = other.clone();
            let second = tokio::spawn(async move {
                sqlx::query("DELETE FROM sandbox_workspaces WHERE id = $1").bind(other).execute(&pool).await.map(|r| r.rows_affected())
            });
            wait_until_blocked(&app).await;
            tx.commit().await.expect("commit");
            second.await.expect("task").expect("the second delete succeeds");
            assert_eq!(workspace_count(&app, &source).await + workspace_count(&app, &copy).await, 0);
        }
    }
}

/// On PostgreSQL, waits until a statement waits on a lock another transaction holds (the second
/// delete has started and is blocked). SQLite shows no such thing: its second writer waits on the
/// database lock, which the first transaction holds until it commits.
async fn wait_until_blocked(app: &TestApp) {
    if app.backend != crate::helpers::Backend::Postgres {
        return;
    }
    for _ in 0..10_000 {
        let mut c = app.state.db.conn().await.expect("conn");
        let waiting: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM pg_locks WHERE NOT granted")
            .fetch_one(&mut *c)
            .await
            .expect("pg_locks");
        if waiting > 0 {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("the second delete never waited on the first");
}

db_test! {
    async fn a_recovery_copy_opens_only_for_who_may_view_and_use_its_source(app: TestApp) {
        use agenticos::access::{Caller, Role, Via};
        use agenticos::sandbox::workspaces::error::WorkspaceError;
        use agenticos::sandbox::workspaces::recovery::{copies_of, recovery_copy};

        let o = Org::new(&app).await;
        app.member_with_role("in@example.com", "member").await;
        app.member_with_role("out@example.com", "member").await;
        let ids = |email: &str| format!("SELECT id FROM users WHERE email = '{email}'");
        let inside = app.scalar_strings(&ids("in@example.com")).await.remove(0);
        let outside = app.scalar_strings(&ids("out@example.com")).await.remove(0);
        let agent = o.agent(json!({"name": "talk", "backend": "state", "scope": "conversation"})).await;
        let conv = o.conversation(&agent, json!({"member_user_ids": [inside]})).await;
        let r0 = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&r0, "x.txt", "base").await.status, 204);
        finish(&o, &r0).await;
        let (r1, r2) = (o.run(&agent, Some(&conv), json!({})).await, o.run(&agent, Some(&conv), json!({})).await);
        assert_eq!(o.write(&r1, "x.txt", "one").await.status, 204);
        assert_eq!(o.write(&r2, "x.txt", "two").await.status, 204);
        finish(&o, &r2).await;
        let copy = finish(&o, &r1).await["recovery_workspace_id"].as_str().expect("copy").to_string();
        let source = workspace_id(&o, &r0).await;

        let caller = |user_id: &str, role: Role, org_id: &str| Caller {
            user_id: user_id.to_string(),
            email: String::new(),
            org_id: org_id.to_string(),
            org_name: String::new(),
            role,
            via: Via::Session { session_id: String::new() },
        };
        let st = &app.state;
        let member_in = caller(&inside, Role::Member, &o.org_id);
        let w = recovery_copy(st, &member_in, &copy).await.expect("a member of the conversation opens it");
        assert_eq!(w.recovery_of.as_deref(), Some(source.as_str()));
        assert_eq!(agenticos::sandbox::workspaces::model::recovery_label("chat"), "recovery copy of chat");
        assert_eq!(copies_of(st, &member_in, &source).await.expect("list").len(), 1);
        let member_out = caller(&outside, Role::Member, &o.org_id);
        assert!(matches!(recovery_copy(st, &member_out, &copy).await, Err(WorkspaceError::NotFound(_))));
        assert!(copies_of(st, &member_out, &source).await.expect("list").is_empty());
        let operator = caller(&outside, Role::Operator, &o.org_id);
        recovery_copy(st, &operator, &copy).await.expect("an operator views and uses every workspace");
        let stranger = caller(&inside, Role::Owner, "00000000-0000-4000-8000-000000000000");
        assert!(matches!(recovery_copy(st, &stranger, &copy).await, Err(WorkspaceError::NotFound(_))));
        // The source itself is no recovery copy.
        assert!(matches!(recovery_copy(st, &operator, &source).await, Err(WorkspaceError::NotFound(_))));
        // Without its agent nobody can use the source, so nobody opens the copy.
        app.execute(&format!("UPDATE sandbox_workspaces SET agent_id = NULL WHERE id = '{source}'")).await;
        assert!(matches!(recovery_copy(st, &operator, &copy).await, Err(WorkspaceError::NotFound(_))));
    }
}
