//! The agents page and form, the conversations list and a conversation's page.

use reqwest::Method;
use serde_json::{json, Value};

use crate::db_test;
use crate::helpers::{Client, Resp};
use crate::support::htmx::hx_get;

/// A form of the agent page, with the fields a person leaves as they are.
fn agent_form<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut f = vec![
        ("name", "coder"),
        ("backend", "state"),
        ("connection_id", ""),
        ("scope", "conversation"),
        ("runtime", ""),
        ("shell_enabled", "on"),
        ("skills", ""),
    ];
    for (k, v) in extra {
        f.retain(|(name, _)| name != k);
        f.push((k, v));
    }
    f
}

async fn created(r: Resp) -> Value {
    assert_eq!(r.status, 201, "{}", r.body);
    r.json()
}

async fn state_agent(c: &Client, name: &str) -> String {
    let a = created(
        c.api(Method::POST, "/api/v1/agents", Some(json!({"name": name, "backend": "state", "scope": "conversation"})))
            .await,
    )
    .await;
    a["id"].as_str().expect("id").to_string()
}

async fn conversation(c: &Client, agent: &str, title: &str, members: &[String]) -> String {
    let body = json!({"agent_id": agent, "title": title, "member_user_ids": members});
    let conv = created(c.api(Method::POST, "/api/v1/conversations", Some(body)).await).await;
    conv["id"].as_str().expect("id").to_string()
}

async fn start_run(c: &Client, agent: &str, conversation: &str) -> String {
    let body = json!({"agent_id": agent, "conversation_id": conversation, "started_by": "member"});
    let run = created(c.api(Method::POST, "/api/v1/runs", Some(body)).await).await;
    run["id"].as_str().expect("id").to_string()
}

/// Saved even when the host fails the check: some tests need a host that is down.
async fn connection(c: &Client, name: &str, address: &str, key: &str) -> String {
    let body = json!({"name": name, "address": address, "new_key": key, "save_anyway": true});
    let conn = created(c.api(Method::POST, "/api/v1/sandbox-connections", Some(body)).await).await;
    conn["id"].as_str().expect("id").to_string()
}

fn option_values(r: &Resp, select: &str) -> Vec<String> {
    let sel = scraper::Selector::parse(&format!("{select} option")).expect("selector");
    r.html().select(&sel).filter_map(|o| o.value().attr("value").map(str::to_string)).collect()
}

db_test! {
    async fn an_agent_created_through_the_form_is_listed(app: TestApp) {
        app.setup_owner().await;
        let empty = app.web.get("/agents").await;
        assert_eq!(empty.status, 200);
        assert!(empty.select_text("#agents-empty").is_some_and(|t| t.contains("No agent")), "{}", empty.body);

        let skills = "--- review/SKILL.md\r\n# Review\r\nRead the diff.\r\n--- notes/\r\n";
        let r = app.web.post_form("/agents", &agent_form(&[("skills", skills)])).await;
        assert_eq!(r.status, 303, "{}", r.body);
        assert_eq!(r.location().as_deref(), Some("/agents"));

        let page = app.web.get("/agents").await;
        let row = page.select_text("#agents-table tbody tr").expect("a row");
        assert!(row.contains("coder") && row.contains("state") && row.contains("whoever is in this conversation"), "{row}");
        assert!(page.select_text(".flash-success").is_some_and(|t| t.contains("coder")));

        // The list is a summary; the agent itself carries its files.
        let agents = app.web.api(Method::GET, "/api/v1/agents", None).await.json();
        assert!(agents[0]["skills"].is_null(), "{agents}");
        let id = agents[0]["id"].as_str().expect("id");
        let agent = app.web.api(Method::GET, &format!("/api/v1/agents/{id}"), None).await.json();
        assert_eq!(agent["skills"], json!([
            {"path": "review/SKILL.md", "content": "# Review\nRead the diff.\n", "is_dir": false},
            {"path": "notes", "content": "", "is_dir": true},
        ]));
        // The edit form shows the files in the same format.
        let edit = app.web.get(&format!("/agents/{id}")).await;
        assert_eq!(edit.status, 200);
        assert_eq!(edit.select_text("#agent-skills").as_deref(), Some("--- review/SKILL.md\n# Review\nRead the diff.\n--- notes/"));
    }
}

db_test! {
    async fn a_state_agent_with_a_runtime_is_refused_inline_and_nothing_is_written(app: TestApp) {
        app.setup_owner().await;
        let r = app.web.post_form("/agents", &agent_form(&[("runtime", "python")])).await;
        assert_eq!(r.status, 422, "{}", r.body);
        assert!(r.field_error("agent-runtime").is_some_and(|m| m.contains("no runtime")), "{}", r.body);
        // The input is kept.
        assert_eq!(r.select_attr("#agent-name", "value").as_deref(), Some("coder"));
        assert_eq!(r.select_attr("#agent-runtime option[selected]", "value").as_deref(), Some("python"));
        assert_eq!(app.count("agents").await, 0);

        // A manifest entry with an absolute path is refused at its own field, its input kept.
        let r = app.web.post_form("/agents", &agent_form(&[("m0.kind", "dir"), ("m0.path", "out"), ("m1.kind", "file"), ("m1.path", "/etc/x"), ("m1.content", "hi")])).await;
        assert_eq!(r.status, 422, "{}", r.body);
        assert!(r.field_error("m1-path").is_some_and(|m| m.contains("relative")), "{}", r.body);
        assert!(r.field_error("m0-path").is_none(), "{}", r.body);
        assert_eq!(r.select_attr("#m1-path", "value").as_deref(), Some("/etc/x"));
        assert_eq!(r.select_text("#m1-content").as_deref(), Some("hi"));
        assert_eq!(app.count("agents").await, 0);

        // "Add a repository" shows the form again with a repository row, nothing saved; a
        // saved manifest shows its rows on the agent's page.
        let r = app.web.post_form("/agents", &agent_form(&[("m0.kind", "dir"), ("m0.path", "out"), ("add_entry", "git_repo")])).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(r.select_attr("#m1-url", "name").is_some_and(|n| n == "m1.url"), "{}", r.body);
        assert_eq!(app.count("agents").await, 0);
        let r = app.web.post_form("/agents", &agent_form(&[("m0.kind", "dir"), ("m0.path", "out"), ("m1.kind", "env"), ("m1.name", "MODE"), ("m1.value", "fast")])).await;
        assert_eq!(r.status, 303, "{}", r.body);
        let mut c = app.state.db.conn().await.expect("conn");
        let (id,): (String,) = sqlx::query_as("SELECT id FROM agents").fetch_one(&mut *c).await.expect("the agent");
        let page = app.web.get(&format!("/agents/{id}")).await;
        assert_eq!(page.select_attr("#m0-path", "value").as_deref(), Some("out"));
        assert_eq!(page.select_attr("#m1-name", "value").as_deref(), Some("MODE"));
        assert_eq!(page.select_attr("#m1-value", "value").as_deref(), Some("fast"));
    }
}

db_test! {
    async fn the_agent_form_sets_when_snapshots_are_taken_and_refuses_a_bad_setting_inline(app: TestApp) {
        app.setup_owner().await;
        let host = app.insert_idle_sandboxd_connection("host-a").await;
        let service = [("backend", "service"), ("connection_id", host.as_str())];
        // Both settings wrong: each message at its control, the input kept, nothing saved.
        let bad = [service[0], service[1], ("snapshots", "sometimes"), ("keep_last", "0")];
        let r = app.web.post_form("/agents", &agent_form(&bad)).await;
        assert_eq!(r.status, 422, "{}", r.body);
        assert!(r.field_error("agent-snapshots").is_some_and(|m| m.contains("on_finish")), "{}", r.body);
        assert!(r.field_error("agent-keep-last").is_some_and(|m| m.contains("1 to 100")), "{}", r.body);
        assert_eq!(r.select_attr("#agent-keep-last", "value").as_deref(), Some("0"));
        assert_eq!(r.select_attr("#agent-name", "value").as_deref(), Some("coder"));
        assert_eq!(app.count("agents").await, 0);
        let r = app.web.post_form("/agents", &agent_form(&[service[0], service[1], ("keep_last", "many")])).await;
        assert_eq!(r.status, 422, "{}", r.body);
        assert!(r.field_error("agent-keep-last").is_some(), "{}", r.body);
        assert!(r.field_error("agent-snapshots").is_none(), "{}", r.body);
        assert_eq!(app.count("agents").await, 0);

        // A good setting is saved with the agent, shown on its page and by the API.
        let good = [service[0], service[1], ("snapshots", "on_finish_when_changed"), ("keep_last", "3")];
        let r = app.web.post_form("/agents", &agent_form(&good)).await;
        assert_eq!(r.status, 303, "{}", r.body);
        let id = app.web.api(Method::GET, "/api/v1/agents", None).await.json()[0]["id"].as_str().expect("id").to_string();
        let settings = app.web.api(Method::GET, &format!("/api/v1/agents/{id}/snapshot-settings"), None).await.json();
        assert_eq!(settings, json!({"snapshots": "on_finish_when_changed", "keep_last": 3}));
        let page = app.web.get(&format!("/agents/{id}")).await;
        assert_eq!(page.select_attr("#agent-snapshots option[selected]", "value").as_deref(), Some("on_finish_when_changed"));
        assert_eq!(page.select_attr("#agent-keep-last", "value").as_deref(), Some("3"));
        // Editing it back; a new agent's form shows the defaults.
        let r = app.web.post_form(&format!("/agents/{id}"), &agent_form(&[service[0], service[1], ("snapshots", "never"), ("keep_last", "")])).await;
        assert_eq!(r.status, 303, "{}", r.body);
        let settings = app.web.api(Method::GET, &format!("/api/v1/agents/{id}/snapshot-settings"), None).await.json();
        assert_eq!(settings, json!({"snapshots": "never", "keep_last": 5}));
        let new = app.web.get("/agents/new").await;
        assert_eq!(new.select_attr("#agent-snapshots option[selected]", "value").as_deref(), Some("never"));
        assert_eq!(new.select_attr("#agent-keep-last", "value").as_deref(), Some("5"));
    }
}

db_test! {
    async fn choosing_the_agent_scope_says_every_user_shares_the_files(app: TestApp) {
        app.setup_owner().await;
        let r = hx_get(&app.web, "/agents/_scope_field?scope=agent").await;
        assert_eq!(r.status, 200);
        let warning = r.select_text("#agent-scope-warning").expect("the warning");
        assert!(warning.contains("Every user of this agent shares the files"), "{warning}");
        let r = hx_get(&app.web, "/agents/_scope_field?scope=conversation").await;
        assert!(r.select_text("#agent-scope-warning").is_none());
        // Without htmx the fragment endpoint sends people to the page.
        assert_eq!(app.web.get("/agents/_scope_field?scope=agent").await.status, 303);

        // Server-rendered, so it works without JavaScript: a re-rendered form and a saved agent.
        let r = app.web.post_form("/agents", &agent_form(&[("scope", "agent"), ("name", "")])).await;
        assert_eq!(r.status, 422);
        assert!(r.select_text("#agent-scope-warning").is_some_and(|t| t.contains("Every user")));
        let r = app.web.post_form("/agents", &agent_form(&[("scope", "agent")])).await;
        assert_eq!(r.status, 303, "{}", r.body);
        let id = app.web.api(Method::GET, "/api/v1/agents", None).await.json()[0]["id"].as_str().expect("id").to_string();
        let edit = app.web.get(&format!("/agents/{id}")).await;
        assert!(edit.select_text("#agent-scope-warning").is_some_and(|t| t.contains("Every user")));
        assert!(app.web.get("/agents/new").await.select_text("#agent-scope-warning").is_none());
    }
}

db_test! {
    async fn the_runtime_select_lists_what_the_host_allows_or_says_it_did_not_answer(app: TestApp) {
        let peer = crate::peer::shared().await;
        app.setup_owner().await;
        let conn = connection(&app.web, "peer", &peer.url, &peer.token).await;
        let body = json!({"name": "coder", "backend": "service", "connection_id": conn, "scope": "run"});
        let agent = created(app.web.api(Method::POST, "/api/v1/agents", Some(body)).await).await;
        let id = agent["id"].as_str().expect("id");

        let edit = app.web.get(&format!("/agents/{id}")).await;
        assert_eq!(edit.status, 200);
        let runtimes = option_values(&edit, "#agent-runtime");
        assert!(runtimes.contains(&"workbench".into()) && runtimes.contains(&"python".into()), "{runtimes:?}");
        assert_eq!(runtimes[0], "", "connection default comes first");
        let field = hx_get(&app.web, &format!("/agents/_runtime_field?backend=service&connection_id={conn}")).await;
        assert_eq!(field.status, 200);
        assert_eq!(option_values(&field, "#agent-runtime"), runtimes);
        assert!(!app.web.all_bodies().contains(&peer.token), "the token reached the browser");

        // A host that does not answer: said inline, and the connection default can still be chosen.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let address = format!("http://127.0.0.1:{}", closed.local_addr().expect("addr").port());
        drop(closed);
        let down = connection(&app.web, "down", &address, "some-key-1234").await;
        let field =
            hx_get(&app.web, &format!("/agents/_runtime_field?backend=service&connection_id={down}&runtime=python"))
                .await;
        assert_eq!(field.status, 200);
        let message = field.select_text("#runtime-unavailable").expect("an inline message");
        assert!(message.contains("did not answer"), "{message}");
        assert_eq!(option_values(&field, "#agent-runtime"), vec!["".to_string(), "python".to_string()]);
        // A state agent asks no host.
        let field = hx_get(&app.web, &format!("/agents/_runtime_field?backend=state&connection_id={down}")).await;
        assert!(field.select_text("#runtime-unavailable").is_none());
        assert!(field.select_text("#agent-runtime-hint").is_some_and(|t| t.contains("no runtime")));
    }
}

db_test! {
    async fn the_conversation_page_says_the_sandbox_is_being_prepared(app: TestApp) {
        app.setup_owner().await;
        let agent = state_agent(&app.web, "coder").await;
        let conv = conversation(&app.web, &agent, "Quarterly report", &[]).await;

        let page = app.web.get(&format!("/conversations/{conv}")).await;
        assert_eq!(page.status, 200, "{}", page.body);
        assert!(page.select_text("#workspace-none").is_some_and(|t| t.contains("Nothing started yet")));
        let list = app.web.get("/conversations").await;
        assert!(list.select_text("#conversations-table").is_some_and(|t| t.contains("Quarterly report") && t.contains("coder")));

        let run = start_run(&app.web, &agent, &conv).await;
        let state = app.web.api(Method::GET, &format!("/api/v1/runs/{run}/workspace/state"), None).await;
        assert_eq!(state.json()["state"], "not_opened", "{}", state.body);
        let page = app.web.get(&format!("/conversations/{conv}")).await;
        assert!(page.select_text("#workspace-not-opened").is_some_and(|t| t.contains("Nothing started yet")));
        // The run is named, not shown as its id (the id is on hover and in the row's anchor).
        assert_eq!(page.select_text(&format!("#runs-table tr#run-{run} td")).as_deref(), Some("Run 1"));
        assert_eq!(page.select_attr(&format!("#runs-table tr#run-{run} td"), "title"), Some(format!("Run {run}")));
        let latest = page.select_text("#workspace-latest-run").unwrap_or_default();
        // The person who started it is named (issue 49): the signed-in owner, through the API.
        assert!(latest.starts_with("Run 1 · started by ") && latest.contains(crate::helpers::OWNER_EMAIL) && latest.ends_with(" ago"), "{latest:?}");
        assert!(!latest.contains(&run), "{latest:?}");
        assert_eq!(page.select_attr("#workspace-latest-run a", "href"), Some(format!("#run-{run}")));

        let mut c = app.state.db.conn().await.expect("conn");
        sqlx::query("UPDATE sandbox_workspaces SET state = 'preparing'").execute(&mut *c).await.expect("update");
        let page = app.web.get(&format!("/conversations/{conv}")).await;
        let alert = page.select_text("#conversation-workspace .alert-info").expect("the preparing alert");
        assert!(alert.contains("The sandbox is being prepared"), "{alert}");
        assert!(page.select_attr("#conversation-workspace .alert-info .spinner", "class").is_some());
        assert_eq!(page.select_attr("#conversation-workspace", "hx-trigger").as_deref(), Some("every 3s"));
        let fragment = hx_get(&app.web, &format!("/conversations/{conv}/workspace")).await;
        assert_eq!(fragment.status, 200);
        assert!(fragment.select_text(".alert-info").is_some_and(|t| t.contains("The sandbox is being prepared")));
        assert!(!fragment.body.contains("<html"), "a fragment, not a page");
        assert_eq!(app.web.get(&format!("/conversations/{conv}/workspace")).await.status, 303);

        // Once it changes the fragment stops polling.
        sqlx::query("UPDATE sandbox_workspaces SET state = 'lost'").execute(&mut *c).await.expect("update");
        let fragment = hx_get(&app.web, &format!("/conversations/{conv}/workspace")).await;
        assert!(fragment.select_text("#workspace-lost").is_some_and(|t| t.contains("This workspace's files are gone; the next turn starts fresh")));
        assert_eq!(fragment.select_attr("#conversation-workspace", "hx-trigger"), None);
    }
}

db_test! {
    async fn another_organizations_agents_and_conversations_are_not_found(app: TestApp) {
        app.setup_owner().await;
        let agent = state_agent(&app.web, "coder").await;
        let conv = conversation(&app.web, &agent, "chat", &[]).await;
        let b = app.other_org_user("b@example.com", "B Corp").await;
        for path in [format!("/agents/{agent}"), format!("/conversations/{conv}")] {
            assert_eq!(b.get(&path).await.status, 404, "{path}");
        }
        assert_eq!(hx_get(&b, &format!("/conversations/{conv}/workspace")).await.status, 404);
        let r = b.post_form(&format!("/agents/{agent}"), &agent_form(&[("name", "stolen")])).await;
        assert_eq!(r.status, 404, "{}", r.body);
        assert!(b.get("/conversations").await.select_text("#conversations-empty").is_some());
        assert!(b.get("/agents").await.select_text("#agents-empty").is_some());
        assert_eq!(app.scalar_strings("SELECT name FROM agents").await, vec!["coder".to_string()]);
    }
}

db_test! {
    async fn a_member_sees_the_conversations_they_are_in_and_nothing_else(app: TestApp) {
        app.setup_owner().await;
        let member = app.member_with_role("member@example.com", "member").await;
        let member_id = app.scalar_strings("SELECT id FROM users WHERE email = 'member@example.com'").await.remove(0);
        let agent = state_agent(&app.web, "coder").await;
        let shared = conversation(&app.web, &agent, "with the member", std::slice::from_ref(&member_id)).await;
        let private = conversation(&app.web, &agent, "owner only", &[]).await;
        start_run(&app.web, &agent, &shared).await;

        let page = member.get(&format!("/conversations/{shared}")).await;
        assert_eq!(page.status, 200, "{}", page.body);
        let members = page.select_text("#conversation-members").expect("members");
        assert!(members.contains("member@example.com") && members.contains("owner@example.com"), "{members}");
        assert!(page.select_text("#workspace-not-opened").is_some(), "a member sees the workspace state: {}", page.body);
        assert_eq!(member.get(&format!("/conversations/{private}")).await.status, 404);
        let list = member.get("/conversations").await;
        let titles = list.select_all("#conversations-table tbody td:first-child");
        assert_eq!(titles, vec!["with the member".to_string()]);
        assert_eq!(member.get("/agents").await.status, 403);
        assert_eq!(member.get(&format!("/agents/{agent}")).await.status, 403);
    }
}

db_test! {
    async fn operators_see_the_agents_read_only_and_cannot_create_one(app: TestApp) {
        app.setup_owner().await;
        state_agent(&app.web, "coder").await;
        let operator = app.member_with_role("operator@example.com", "operator").await;
        let list = operator.get("/agents").await;
        assert_eq!(list.status, 200);
        assert!(list.select_text("#agents-table").is_some_and(|t| t.contains("coder")));
        assert!(list.select_text("#new-agent").is_none() && list.select_attr("#agents-table a", "href").is_none());
        assert_eq!(operator.get("/agents/new").await.status, 403);
        let r = operator.post_form("/agents", &agent_form(&[("name", "mine")])).await;
        assert_eq!(r.status, 403, "{}", r.body);
        let r = operator.post_form("/agents", &agent_form(&[("name", "mine"), ("skills", "not the format")])).await;
        assert_eq!(r.status, 403, "{}", r.body);
        assert_eq!(app.count("agents").await, 1);
    }
}
