//! A REST client's whole job without a browser: its first token from the command line, the
//! conversations and runs lists, a session's live activity as JSON; the API's visibility matching
//! the pages'; settings that could never work refused when saved, naming the field.

use std::process::Command;

use agenticos::sandbox::hosts::sandboxd::client::RunRequest;
use agenticos::startup::Application;
use reqwest::Method;
use serde_json::{json, Value};

use crate::db_test;
use crate::helpers::{test_config, Client, Resp, TestApp};
use crate::support::sandbox_hosts::{caller_of, capped_peer, connect, host, open, unique};

fn id(r: Resp) -> String {
    assert_eq!(r.status, 201, "{}", r.body);
    r.json()["id"].as_str().expect("id").to_string()
}

async fn post(c: &Client, path: &str, body: Value) -> Resp {
    c.api(Method::POST, path, Some(body)).await
}

async fn get(c: &Client, path: &str) -> Resp {
    c.api(Method::GET, path, None).await
}

fn ids(v: &Value, list: &str) -> Vec<String> {
    v[list].as_array().expect("a list").iter().map(|x| x["id"].as_str().expect("id").to_string()).collect()
}

async fn user_id(app: &TestApp, email: &str) -> String {
    app.scalar_strings(&format!("SELECT id FROM users WHERE email = '{email}'")).await.remove(0)
}

db_test! {
    async fn a_member_sees_only_the_conversations_they_are_in_and_no_agent_settings(app: TestApp) {
        app.setup_owner().await;
        let member = app.member_with_role("m@example.com", "member").await;
        let operator = app.member_with_role("op@example.com", "operator").await;
        let m_id = user_id(&app, "m@example.com").await;
        let agent = id(post(&app.web, "/api/v1/agents", json!({"name": "helper", "backend": "state", "scope": "conversation", "skills": [{"path": "secret.md", "content": "the skill"}]})).await);
        let theirs = id(post(&app.web, "/api/v1/conversations", json!({"agent_id": agent, "title": "with m", "member_user_ids": [m_id]})).await);
        let not_theirs = id(post(&app.web, "/api/v1/conversations", json!({"agent_id": agent, "title": "owner only"})).await);
        // One the owner is not in either: an owner's token with the member role must not see it.
        let operators = id(post(&operator, "/api/v1/conversations", json!({"agent_id": agent, "title": "operator only"})).await);

        // The member's session: their conversation, nothing else; the agent's settings are refused like the list.
        assert_eq!(get(&member, &format!("/api/v1/conversations/{theirs}")).await.status, 200);
        get(&member, &format!("/api/v1/conversations/{not_theirs}")).await.problem(404);
        get(&member, &format!("/api/v1/conversations/{operators}")).await.problem(404);
        assert_eq!(ids(&get(&member, "/api/v1/conversations").await.json(), "conversations"), [theirs.as_str()]);
        get(&member, "/api/v1/agents").await.problem(403);
        let r = get(&member, &format!("/api/v1/agents/{agent}")).await;
        r.problem(403);
        assert!(!r.body.contains("the skill"));
        get(&member, &format!("/api/v1/agents/{agent}/runtimes")).await.problem(403);

        // A token carrying the member role acts as a member of its creator's conversations only.
        let token = app.web.create_token_in_page("member-token", "member").await;
        let t = |path: String| {
            let web = &app.web;
            let token = token.clone();
            async move { web.bearer(&token, Method::GET, &path, None).await }
        };
        assert_eq!(t(format!("/api/v1/conversations/{not_theirs}")).await.status, 200);
        t(format!("/api/v1/conversations/{operators}")).await.problem(404);
        let listed = ids(&t("/api/v1/conversations".into()).await.json(), "conversations");
        assert!(listed.contains(&theirs) && listed.contains(&not_theirs) && !listed.contains(&operators), "{listed:?}");
        let r = t(format!("/api/v1/agents/{agent}")).await;
        r.problem(403);
        assert!(!r.body.contains("the skill"));

        // Operators and above see every conversation and the agent, as on the pages.
        assert_eq!(ids(&get(&operator, "/api/v1/conversations").await.json(), "conversations").len(), 3);
        let a = get(&operator, &format!("/api/v1/agents/{agent}")).await;
        assert_eq!(a.status, 200, "{}", a.body);

        // Another organization: 404 for both.
        let b = app.other_org_user("b@example.com", "B Corp").await;
        get(&b, &format!("/api/v1/conversations/{theirs}")).await.problem(404);
        get(&b, &format!("/api/v1/agents/{agent}")).await.problem(404);
        assert_eq!(get(&b, "/api/v1/conversations").await.json()["conversations"], json!([]));
    }
}

db_test! {
    async fn the_agents_list_is_a_summary_and_one_agent_carries_its_files(app: TestApp) {
        app.setup_owner().await;
        let body = json!({
            "name": "helper", "backend": "state", "scope": "conversation",
            "skills": [{"path": "review/SKILL.md", "content": "the skill's secret steps"}],
            "manifest": {"entries": [{"kind": "file", "path": "notes.md", "content": "the manifest's secret notes"}]},
        });
        let agent = id(post(&app.web, "/api/v1/agents", body).await);
        let operator = app.member_with_role("op@example.com", "operator").await;
        let operator_token = app.web.create_token_in_page("runtime", "operator").await;

        // The list, as the agents page shows it: settings without any file's contents.
        let page = operator.get("/agents").await;
        assert_eq!(page.status, 200);
        assert!(page.body.contains("helper") && !page.body.contains("secret steps"), "{}", page.body);
        for list in [get(&operator, "/api/v1/agents").await, app.web.bearer(&operator_token, Method::GET, "/api/v1/agents", None).await] {
            assert_eq!(list.status, 200, "{}", list.body);
            let v = list.json();
            let only = &v.as_array().expect("a list")[0];
            assert_eq!(only["id"], agent.as_str());
            assert_eq!((only["name"].as_str(), only["backend"].as_str(), only["scope"].as_str()), (Some("helper"), Some("state"), Some("conversation")));
            assert!(only["created_at"].as_i64().is_some());
            assert!(only.get("skills").is_none() && only.get("manifest").is_none(), "{only}");
            assert!(!list.body.contains("secret steps") && !list.body.contains("secret notes"), "{}", list.body);
        }

        // One agent, to those who may see agents: the whole of it.
        for one in [get(&operator, &format!("/api/v1/agents/{agent}")).await, app.web.bearer(&operator_token, Method::GET, &format!("/api/v1/agents/{agent}"), None).await] {
            assert_eq!(one.status, 200, "{}", one.body);
            let v = one.json();
            assert_eq!(v["skills"][0]["content"], "the skill's secret steps");
            assert_eq!(v["manifest"]["entries"][0]["content"], "the manifest's secret notes");
        }

        // A member sees neither; another organization nothing of it.
        let member = app.member_with_role("m@example.com", "member").await;
        get(&member, "/api/v1/agents").await.problem(403);
        get(&member, &format!("/api/v1/agents/{agent}")).await.problem(403);
        let b = app.other_org_user("b@example.com", "B Corp").await;
        assert_eq!(get(&b, "/api/v1/agents").await.json(), json!([]));
        get(&b, &format!("/api/v1/agents/{agent}")).await.problem(404);
    }
}

db_test! {
    async fn conversations_and_runs_are_listed_newest_first_filtered_and_paged(app: TestApp) {
        app.setup_owner().await;
        let per_run = id(post(&app.web, "/api/v1/agents", json!({"name": "per-run", "backend": "state", "scope": "run"})).await);
        let other = id(post(&app.web, "/api/v1/agents", json!({"name": "other", "backend": "state", "scope": "run"})).await);
        let c1 = id(post(&app.web, "/api/v1/conversations", json!({"agent_id": per_run, "title": "first"})).await);
        let c2 = id(post(&app.web, "/api/v1/conversations", json!({"agent_id": per_run, "title": "second"})).await);
        let mut in_c1 = Vec::new();
        for _ in 0..3 {
            in_c1.push(id(post(&app.web, "/api/v1/runs", json!({"agent_id": per_run, "conversation_id": c1, "started_by": "member"})).await));
        }
        let lone = id(post(&app.web, "/api/v1/runs", json!({"agent_id": other, "started_by": "api"})).await);
        let r = app.web.api(Method::POST, &format!("/api/v1/runs/{}/finish", in_c1[0]), None).await;
        assert_eq!(r.status, 200, "{}", r.body);

        // Conversations: newest first, a page at a time.
        let v = get(&app.web, "/api/v1/conversations?limit=1").await.json();
        assert_eq!(ids(&v, "conversations"), [c2.as_str()]);
        assert_eq!(v["conversations"][0]["agent_name"], "per-run");
        assert_eq!(v["next_offset"], 1);
        let v = get(&app.web, "/api/v1/conversations?limit=1&offset=1").await.json();
        assert_eq!(ids(&v, "conversations"), [c1.as_str()]);
        assert!(v["next_offset"].is_null());
        let r = get(&app.web, "/api/v1/conversations?limit=0").await;
        r.problem(422);
        assert_eq!(r.problem_fields(), ["limit"]);

        // Runs: filtered by conversation, agent and status; newest first; paged.
        let v = get(&app.web, &format!("/api/v1/runs?conversation_id={c1}")).await.json();
        let newest_first: Vec<String> = in_c1.iter().rev().cloned().collect();
        assert_eq!(ids(&v, "runs"), newest_first);
        assert_eq!(ids(&get(&app.web, &format!("/api/v1/runs?agent_id={other}")).await.json(), "runs"), [lone.as_str()]);
        let finished = get(&app.web, "/api/v1/runs?status=finished").await.json();
        assert_eq!(ids(&finished, "runs"), [in_c1[0].clone()]);
        assert_eq!(finished["runs"][0]["status"], "finished");
        assert!(finished["runs"][0]["finished_at"].as_i64().is_some());
        let running = ids(&get(&app.web, &format!("/api/v1/runs?status=running&agent_id={per_run}")).await.json(), "runs");
        assert_eq!(running, [in_c1[2].clone(), in_c1[1].clone()]);
        let page1 = get(&app.web, "/api/v1/runs?limit=3").await.json();
        assert_eq!(ids(&page1, "runs").len(), 3);
        assert_eq!(page1["next_offset"], 3);
        let page2 = get(&app.web, "/api/v1/runs?limit=3&offset=3").await.json();
        assert_eq!(ids(&page2, "runs").len(), 1);
        assert!(page2["next_offset"].is_null());
        let r = get(&app.web, "/api/v1/runs?status=paused").await;
        r.problem(422);
        assert_eq!(r.problem_fields(), ["status"]);
        let r = get(&app.web, "/api/v1/runs?limit=201").await;
        r.problem(422);
        assert_eq!(r.problem_fields(), ["limit"]);
        assert_eq!(ids(&get(&app.web, "/api/v1/runs?conversation_id=nope").await.json(), "runs"), Vec::<String>::new());

        // A member in none of these conversations sees none of their runs; another organization none.
        let member = app.member_with_role("m@example.com", "member").await;
        assert_eq!(get(&member, "/api/v1/runs").await.json()["runs"], json!([]));
        let b = app.other_org_user("b@example.com", "B Corp").await;
        assert_eq!(get(&b, "/api/v1/runs").await.json()["runs"], json!([]));
        assert_eq!(get(&b, &format!("/api/v1/runs?conversation_id={c1}")).await.json()["runs"], json!([]));
    }
}

db_test! {
    async fn a_member_lists_the_runs_of_the_conversations_they_are_in_and_nothing_else(app: TestApp) {
        app.setup_owner().await;
        let member = app.member_with_role("m@example.com", "member").await;
        let operator = app.member_with_role("op@example.com", "operator").await;
        let m_id = user_id(&app, "m@example.com").await;
        let agent = id(post(&app.web, "/api/v1/agents", json!({"name": "per-run", "backend": "state", "scope": "run"})).await);
        let other = id(post(&app.web, "/api/v1/agents", json!({"name": "other", "backend": "state", "scope": "run"})).await);
        let theirs = id(post(&app.web, "/api/v1/conversations", json!({"agent_id": agent, "title": "with m", "member_user_ids": [m_id]})).await);
        let theirs_too = id(post(&app.web, "/api/v1/conversations", json!({"agent_id": other, "title": "also with m", "member_user_ids": [m_id]})).await);
        let not_theirs = id(post(&app.web, "/api/v1/conversations", json!({"agent_id": agent, "title": "owner only"})).await);
        let operators = id(post(&operator, "/api/v1/conversations", json!({"agent_id": agent, "title": "operator only"})).await);
        let web = &app.web;
        let run_in = |conversation: &str, agent: &str| {
            let body = json!({"agent_id": agent, "conversation_id": conversation, "started_by": "member"});
            async move { id(post(web, "/api/v1/runs", body).await) }
        };
        let first = run_in(&theirs, &agent).await;
        let second = run_in(&theirs, &agent).await;
        let elsewhere = run_in(&theirs_too, &other).await;
        let hidden = run_in(&not_theirs, &agent).await;
        let operators_run = run_in(&operators, &agent).await;
        let lone = id(post(&app.web, "/api/v1/runs", json!({"agent_id": agent, "started_by": "api"})).await);
        let r = app.web.api(Method::POST, &format!("/api/v1/runs/{first}/finish"), None).await;
        assert_eq!(r.status, 200, "{}", r.body);

        // Their conversations' runs, as those pages show them; the filters narrow them.
        let listed = |v: Value| {
            let mut runs = ids(&v, "runs");
            runs.sort();
            runs
        };
        let sorted = |runs: &[&String]| {
            let mut runs: Vec<String> = runs.iter().map(|r| r.to_string()).collect();
            runs.sort();
            runs
        };
        let all_theirs = sorted(&[&first, &second, &elsewhere]);
        assert_eq!(listed(get(&member, "/api/v1/runs").await.json()), all_theirs);
        let page = member.get(&format!("/conversations/{theirs}")).await.html();
        let rows = scraper::Selector::parse("#runs-table tbody tr").expect("selector");
        let mut on_page: Vec<String> =
            page.select(&rows).filter_map(|tr| tr.value().id()?.strip_prefix("run-").map(str::to_string)).collect();
        on_page.sort();
        assert_eq!(on_page, sorted(&[&first, &second]));
        assert_eq!(listed(get(&member, &format!("/api/v1/runs?conversation_id={theirs}")).await.json()), sorted(&[&first, &second]));
        assert_eq!(listed(get(&member, &format!("/api/v1/runs?agent_id={other}")).await.json()), [elsewhere.as_str()]);
        assert_eq!(listed(get(&member, "/api/v1/runs?status=finished").await.json()), [first.as_str()]);
        let page1 = get(&member, "/api/v1/runs?limit=2").await.json();
        assert_eq!((listed(page1.clone()).len(), page1["next_offset"].as_u64()), (2, Some(2)));
        let page2 = get(&member, "/api/v1/runs?limit=2&offset=2").await.json();
        assert!(page2["next_offset"].is_null());
        let mut both = [listed(page1), listed(page2)].concat();
        both.sort();
        assert_eq!(both, all_theirs);
        // Asking for a conversation they are not in narrows to nothing rather than widening.
        for c in [&not_theirs, &operators] {
            assert_eq!(get(&member, &format!("/api/v1/runs?conversation_id={c}")).await.json()["runs"], json!([]));
        }
        get(&member, "/api/v1/runs?status=paused").await.problem(422);

        // One run: theirs, or 404 as another organization's.
        let r = get(&member, &format!("/api/v1/runs/{second}")).await;
        assert_eq!((r.status.as_u16(), r.json()["id"].as_str()), (200, Some(second.as_str())));
        for run in [&hidden, &operators_run, &lone] {
            get(&member, &format!("/api/v1/runs/{run}")).await.problem(404);
        }

        // A token with the member role acts as a member of its creator's conversations.
        let token = app.web.create_token_in_page("member-token", "member").await;
        let v = app.web.bearer(&token, Method::GET, "/api/v1/runs", None).await.json();
        assert_eq!(listed(v), sorted(&[&first, &second, &elsewhere, &hidden]));

        // Operators see every run; another organization none of them.
        assert_eq!(listed(get(&operator, "/api/v1/runs").await.json()).len(), 6);
        let b = app.other_org_user("b@example.com", "B Corp").await;
        assert_eq!(get(&b, "/api/v1/runs").await.json()["runs"], json!([]));
        get(&b, &format!("/api/v1/runs/{second}")).await.problem(404);
    }
}

db_test! {
    async fn a_sessions_live_activity_is_served_as_json_to_its_organization_only(app: TestApp) {
        app.setup_owner().await;
        let peer = capped_peer().await;
        let caller = caller_of(&app.web).await;
        let conn = connect(&app, &caller, "main host", &peer.url, Some(&peer.token)).await;
        let host = host(peer);
        let (ours, theirs) = (unique("events"), unique("other-tenant"));
        open(&host, &ours, &caller.org_id).await;
        open(&host, &theirs, &unique("tenant")).await;
        let path = |session: &str| format!("/api/v1/sandbox-sessions/{}/{session}/events", conn.id);

        let v = get(&app.web, &path(&ours)).await.json();
        assert_eq!(v["events"], json!([]));
        assert_eq!(v["session"]["session_id"], ours.as_str());
        assert_eq!(v["connection"]["id"], conn.id.as_str());
        host.run(&ours, &RunRequest::shell("echo hello-json")).await.expect("run");
        let r = get(&app.web, &path(&ours)).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let v = r.json();
        let events = v["events"].as_array().expect("events");
        assert_eq!(events.len(), 1, "{v}");
        assert_eq!(events[0]["op"], "run");
        assert!(events[0]["target"].as_str().is_some_and(|t| t.contains("echo hello-json")));
        assert_eq!(events[0]["ok"], true);
        assert_eq!(events[0]["detail"], "exit 0");
        assert!(events[0]["at"].as_f64().is_some_and(|s| s > 1.7e9 && s < 1.0e11), "epoch seconds: {}", events[0]["at"]);
        assert!(events[0]["duration_ms"].as_f64().is_some());
        let latest = v["latest_seq"].as_u64().expect("latest_seq");
        assert_eq!(events[0]["seq"].as_u64(), Some(latest));

        // After the latest: nothing old again; then exactly the new entry.
        let v = get(&app.web, &format!("{}?after={latest}", path(&ours))).await.json();
        assert_eq!(v["events"], json!([]));
        assert_eq!(v["latest_seq"].as_u64(), Some(latest));
        host.run(&ours, &RunRequest::shell("echo second")).await.expect("run");
        let v = get(&app.web, &format!("{}?after={latest}", path(&ours))).await.json();
        let events = v["events"].as_array().expect("events");
        assert_eq!(events.len(), 1);
        assert!(events[0]["target"].as_str().is_some_and(|t| t.contains("second")));

        // Another tenant's session, an unknown one, another organization's caller: 404; a member: 403.
        get(&app.web, &path(&theirs)).await.problem(404);
        get(&app.web, &path("never-opened")).await.problem(404);
        let member = app.member_with_role("m@example.com", "member").await;
        get(&member, &path(&ours)).await.problem(403);
        let b = app.other_org_user("b@example.com", "B Corp").await;
        get(&b, &path(&ours)).await.problem(404);
        for id in [&ours, &theirs] {
            let _ = host.delete_session(id, true).await;
        }
    }
}

db_test! {
    async fn settings_that_could_never_work_are_refused_naming_the_field(app: TestApp) {
        app.setup_owner().await;
        let agent = |body: Value| post(&app.web, "/api/v1/agents", body);

        // A state agent runs no commands: no shell; without the field it is saved with none.
        let r = agent(json!({"name": "doc", "backend": "state", "scope": "run", "shell_enabled": true})).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), ["shell_enabled"]);
        let r = agent(json!({"name": "doc", "backend": "state", "scope": "run"})).await;
        assert_eq!(r.status, 201, "{}", r.body);
        assert_eq!(r.json()["shell_enabled"], false);

        // A runtime neither the catalog knows nor the host offers; a catalog one is fine.
        let peer = capped_peer().await;
        let caller = caller_of(&app.web).await;
        connect(&app, &caller, "main host", &peer.url, Some(&peer.token)).await;
        let r = agent(json!({"name": "svc", "backend": "service", "scope": "run", "runtime": "no-such-runtime"})).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), ["runtime"]);
        assert!(r.json()["detail"].as_str().is_some_and(|d| d.contains("no-such-runtime")), "{}", r.body);
        let r = agent(json!({"name": "svc", "backend": "service", "scope": "run", "runtime": "python"})).await;
        assert_eq!(r.status, 201, "{}", r.body);
        assert_eq!(r.json()["shell_enabled"], true);

        // Runs without their scope's subject.
        let per_conversation = id(agent(json!({"name": "conv", "backend": "state", "scope": "conversation"})).await);
        let per_channel = id(agent(json!({"name": "chan", "backend": "state", "scope": "channel"})).await);
        let per_user = id(agent(json!({"name": "user", "backend": "state", "scope": "user"})).await);
        let run = |body: Value| post(&app.web, "/api/v1/runs", body);
        let refused = |r: Resp, field: &str| {
            r.problem(422);
            assert_eq!(r.problem_fields(), [field], "{}", r.body);
        };
        refused(run(json!({"agent_id": per_conversation, "started_by": "member"})).await, "conversation_id");
        let plain = id(post(&app.web, "/api/v1/conversations", json!({"agent_id": per_channel, "title": "no channel"})).await);
        refused(run(json!({"agent_id": per_channel, "started_by": "member"})).await, "conversation_id");
        refused(run(json!({"agent_id": per_channel, "conversation_id": plain, "started_by": "member"})).await, "conversation_id");
        let on_channel = id(post(&app.web, "/api/v1/conversations", json!({"agent_id": per_channel, "title": "slack", "channel_key": "slack:C1"})).await);
        assert_eq!(run(json!({"agent_id": per_channel, "conversation_id": on_channel, "started_by": "member"})).await.status, 201);
        refused(run(json!({"agent_id": per_user, "started_by": "widget"})).await, "started_by");
        refused(run(json!({"agent_id": per_user, "started_by": "trigger"})).await, "trigger_as_creator");
        assert_eq!(run(json!({"agent_id": per_user, "started_by": "member"})).await.status, 201);
        assert_eq!(app.count("runs").await, 2);
    }
}

// ---------------------------------------------------------------------------------------------
// `agenticos admin create-token`

fn agenticos(url: &str, key: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agenticos"));
    c.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", url)
        .env("AGENTICOS_VAULT_KEY_FILE", key);
    c
}

fn run_ok(c: &mut Command) -> String {
    let out = c.output().expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn fails(c: &mut Command, needle: &str) {
    let out = c.output().expect("runs");
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(needle), "{needle:?} not in: {err}");
}

db_test! {
    async fn create_token_prints_a_token_once_that_the_api_accepts(database: TestDatabase) {
        let key = database.dir.path().join("vault.key");
        let cli = || agenticos(&database.url, &key);
        run_ok(cli().arg("migrate"));
        run_ok(cli().args(["admin", "create-owner", "--email", "ops@example.com", "--organization", "Ops"]));
        let text = run_ok(cli().args(["admin", "create-token", "--organization", "Ops", "--role", "admin", "--name", "ci"]));
        let value = text
            .lines()
            .find_map(|l| l.strip_prefix("API token (shown once): "))
            .unwrap_or_else(|| panic!("no token in: {text}"))
            .to_string();
        assert!(value.starts_with("agos_"), "{value}");
        assert!(text.contains("created in Ops by ops@example.com"), "{text}");

        // Refusals name what is wrong; nothing is created by them.
        fails(cli().args(["admin", "create-token", "--organization", "Nope", "--role", "admin", "--name", "x"]), "organization: No organization is named");
        fails(cli().args(["admin", "create-token", "--organization", "Ops", "--role", "boss", "--name", "x"]), "role");
        fails(cli().args(["admin", "create-token", "--organization", "Ops", "--role", "admin", "--name", "x", "--email", "stranger@example.com"]), "email: stranger@example.com is not a member of Ops");
        fails(cli().args(["admin", "create-token", "--organization", "Ops", "--role", "admin"]), "--name is required");

        // The API accepts it, as the owner with the admin role; the audit log says where it came from.
        let dir = tempfile::tempdir().expect("tempdir");
        let app = Application::build(test_config(&database.url, dir.path(), &[])).await.expect("builds");
        let port = app.port();
        tokio::spawn(app.run_until_stopped());
        let client = Client::new(&format!("http://127.0.0.1:{port}"));
        let me = client.bearer(&value, Method::GET, "/api/v1/me", None).await;
        assert_eq!(me.status, 200, "{}", me.body);
        let me = me.json();
        assert_eq!((me["email"].as_str(), me["role"].as_str(), me["token_name"].as_str()), (Some("ops@example.com"), Some("admin"), Some("ci")));
        let events = client.bearer(&value, Method::GET, "/api/v1/audit-events", None).await;
        assert!(events.body.contains("token.created") && events.body.contains("ops@example.com (command line)"), "{}", events.body);
        let tokens = client.bearer(&value, Method::GET, "/api/v1/tokens", None).await.json();
        assert_eq!(tokens.as_array().map(Vec::len), Some(1), "{tokens}");
    }
}

db_test! {
    async fn a_member_token_is_refused_workspace_operations_with_403_not_409(app: TestApp) {
        app.setup_owner().await;
        let token = app.web.create_token_in_page("a member's runtime", "member").await;
        let run = uuid::Uuid::new_v4();
        for (method, sub, body) in [
            (reqwest::Method::POST, "exec", Some(serde_json::json!({"command": "true"}))),
            (reqwest::Method::GET, "ls?path=.", None),
            (reqwest::Method::GET, "state", None),
        ] {
            let r = app.web.bearer(&token, method, &format!("/api/v1/runs/{run}/workspace/{sub}"), body).await;
            let p = r.problem(403);
            assert_eq!(p["detail"], "Agent runtimes use a token with the operator role or above.", "{sub}");
        }
    }
}
