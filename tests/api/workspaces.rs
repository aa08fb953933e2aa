//! Workspaces for runs, through our API only, against the real sandboxd peer and the `state`
//! backend, each on SQLite and PostgreSQL.

use reqwest::Method;
use serde_json::json;

use crate::peer::{self, Peer, PeerOptions};
use crate::support::{row, service_agent, Org};
use crate::{db_test, host_test};

host_test! {
    async fn a_workspace_opens_on_first_use_and_records_each_operation_once(app: TestApp, host: &Host) {
        let o = Org::new(&app).await;
        host.connect(&o).await;
        let agent = o.agent(service_agent("coder", "conversation")).await;
        let conv = o.conversation(&agent, json!({})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;

        let state = o.ws(&run, Method::GET, "state", None).await.json();
        assert_eq!(state["state"], "not_opened");
        assert!(host.open_workspaces(&o).await.is_empty(), "nothing opened before the first operation");

        let secret = "top-secret-content-4711";
        assert_eq!(o.write(&run, "notes/hello.txt", secret).await.status, 204);
        let state = o.ws(&run, Method::GET, "state", None).await.json();
        assert_eq!(state["state"], "open");
        assert_eq!(state["backend"], host.backend(), "{state}");
        let key = state["session_key"].as_str().expect("key").to_string();
        assert!(key.starts_with("xc-") && key.len() <= 64, "{key}");
        assert_eq!(host.open_workspaces(&o).await, [key.as_str()], "the first operation opened one workspace");
        assert_eq!(host.file(&key, "notes/hello.txt").await.as_deref(), Some(secret), "the file on the host");

        let r = o.read(&run, "/workspace/notes/hello.txt").await;
        assert_eq!((r.status.as_u16(), r.body.as_str()), (200, secret));
        let ls = o.ws(&run, Method::GET, "ls?path=notes", None).await.json();
        assert_eq!((ls[0]["name"].as_str(), ls[0]["path"].as_str(), ls[0]["size"].as_u64()), (Some("hello.txt"), Some("notes/hello.txt"), Some(23)));
        let stat = o.ws(&run, Method::GET, "stat?path=notes", None).await.json();
        assert_eq!((stat["is_dir"].as_bool(), stat["path"].as_str()), (Some(true), Some("notes")));
        assert_eq!(o.ws(&run, Method::POST, "mkdir", Some(json!({"path": "a/b/c"}))).await.status, 204);
        let out = o.exec(&run, "cat notes/hello.txt").await.json();
        assert_eq!((out["stdout"].as_str(), out["exit_code"].as_i64(), out["timed_out"].as_bool()), (Some(secret), Some(0), Some(false)));
        let out = o.exec(&run, "echo secret-output-99; exit 3").await.json();
        assert_eq!((out["stdout"].as_str(), out["exit_code"].as_i64()), (Some("secret-output-99\n"), Some(3)));
        let slow = o.ws(&run, Method::POST, "exec", Some(json!({"command": "sleep 5", "timeout_seconds": 1}))).await.json();
        assert_eq!((slow["timed_out"].as_bool(), slow["exit_code"].as_i64()), (Some(true), None));
        // Errors in our words: a missing file 404, a folder read 400.
        o.read(&run, "nothing-here.txt").await.problem(404);
        o.read(&run, "notes").await.problem(400);
        assert_eq!(o.ws(&run, Method::POST, "remove", Some(json!({"path": "notes/hello.txt"}))).await.status, 204);
        o.ws(&run, Method::GET, "stat?path=notes/hello.txt", None).await.problem(404);
        assert_eq!(host.file(&key, "notes/hello.txt").await, None, "removed on the host");
        o.finish(&run).await;

        assert_eq!(
            o.rows(&run).await,
            vec![
                row("write", "/workspace/notes/hello.txt", true, &format!("{} bytes", secret.len())),
                row("read", "/workspace/notes/hello.txt", true, &format!("{} bytes", secret.len())),
                row("ls", "/workspace/notes", true, "1 entries"),
                row("mkdir", "/workspace/a/b/c", true, ""),
                row("execute", "cat notes/hello.txt", true, "exit 0"),
                row("execute", "echo secret-output-99; exit 3", false, "exit 3"),
                row("execute", "sleep 5", false, "timed out"),
                row("read", "/workspace/nothing-here.txt", false, "not found"),
                row("read", "/workspace/notes", false, "is a directory"),
                row("remove", "/workspace/notes/hello.txt", true, ""),
            ]
        );
        // A conversation scope outlives its run: the workspace is kept, and the next run attaches.
        let run2 = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.ws(&run2, Method::GET, "ls?path=a/b", None).await.json()[0]["name"], "c");
        assert_eq!(host.open_workspaces(&o).await, [key.as_str()], "the second run attached to the same workspace");
        // No payload, no output and no secret in any row.
        app.state.log.settle().await;
        let mut c = app.state.db.conn().await.expect("conn");
        let everything: Vec<(String, String)> =
            sqlx::query_as("SELECT target, detail FROM sandbox_operations").fetch_all(&mut *c).await.expect("q");
        for (t, d) in everything {
            for hidden in [secret, host.secret()] {
                assert!(!t.contains(hidden) && !d.contains(hidden), "{t} / {d}");
            }
            assert!(!d.contains("secret-output-99"), "{d}");
        }
    }
}

db_test! {
    async fn a_state_workspace_does_the_same_in_the_database(app: TestApp) {
        let o = Org::new(&app).await;
        let agent = o.agent(json!({"name": "doc", "backend": "state", "scope": "conversation"})).await;
        let conv = o.conversation(&agent, json!({})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&run, "notes/hello.txt", "hello state").await.status, 204);
        assert_eq!(o.read(&run, "notes/hello.txt").await.body, "hello state");
        let ls = o.ws(&run, Method::GET, "ls?path=/workspace/notes", None).await.json();
        assert_eq!(ls[0]["name"], "hello.txt");
        assert_eq!(ls[0]["size"], 11);
        let r = o.exec(&run, "cat notes/hello.txt").await;
        let p = r.problem(400);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("runs no commands")));
        assert_eq!(o.ws(&run, Method::POST, "mkdir", Some(json!({"path": "empty/dir"}))).await.status, 204);
        assert_eq!(o.ws(&run, Method::POST, "remove", Some(json!({"path": "notes/hello.txt"}))).await.status, 204);
        o.ws(&run, Method::GET, "stat?path=notes/hello.txt", None).await.problem(404);
        let briefing = o.ws(&run, Method::GET, "briefing", None).await.json();
        assert!(briefing["briefing"].is_null());
        o.finish(&run).await;
        assert_eq!(
            o.rows(&run).await,
            vec![
                row("write", "/workspace/notes/hello.txt", true, "11 bytes"),
                row("read", "/workspace/notes/hello.txt", true, "11 bytes"),
                row("ls", "/workspace/notes", true, "1 entries"),
                row("mkdir", "/workspace/empty/dir", true, ""),
                row("remove", "/workspace/notes/hello.txt", true, ""),
            ]
        );
        // A later run of the conversation sees the folder.
        let run2 = o.run(&agent, Some(&conv), json!({})).await;
        let ls = o.ws(&run2, Method::GET, "ls?path=empty", None).await.json();
        assert_eq!(ls[0]["name"], "dir");
    }
}

db_test! {
    async fn the_state_backend_refuses_a_write_over_its_storage_limit_and_keeps_the_document(app: TestApp)
        settings(&[("AGENTICOS_STATE_LIMIT_BYTES", "100")])
    {
        let o = Org::new(&app).await;
        let agent = o.agent(json!({"name": "doc", "backend": "state", "scope": "agent"})).await;
        let run = o.run(&agent, None, json!({})).await;
        assert_eq!(o.write(&run, "a.txt", &"x".repeat(50)).await.status, 204);
        let r = o.write(&run, "b.txt", &"y".repeat(60)).await;
        let p = r.problem(413);
        assert!(
            p["detail"].as_str().is_some_and(|d| d.contains("storage limit") && d.contains("Nothing was written")),
            "{p}"
        );
        let ls = o.ws(&run, Method::GET, "ls", None).await.json();
        assert_eq!(ls.as_array().map(Vec::len), Some(1), "the document is unchanged: {ls}");
        // Shrinking is always allowed.
        assert_eq!(o.write(&run, "a.txt", "small").await.status, 204);
        // Empty folders count too.
        let r = o.ws(&run, Method::POST, "mkdir", Some(json!({"path": "f".repeat(120)}))).await;
        r.problem(413);
    }
}

db_test! {
    async fn scopes_decide_who_shares_files(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        // conversation scope: two runs of one conversation share; two conversations do not.
        let agent = o.agent(service_agent("conv", "conversation")).await;
        let (c1, c2) = (o.conversation(&agent, json!({})).await, o.conversation(&agent, json!({})).await);
        let r1 = o.run(&agent, Some(&c1), json!({})).await;
        assert_eq!(o.write(&r1, "shared.txt", "one").await.status, 204);
        o.finish(&r1).await;
        let r2 = o.run(&agent, Some(&c1), json!({})).await;
        assert_eq!(o.read(&r2, "shared.txt").await.body, "one");
        let r3 = o.run(&agent, Some(&c2), json!({})).await;
        o.read(&r3, "shared.txt").await.problem(404);

        // agent scope: shared across conversations.
        let everyone = o.agent(service_agent("everyone", "agent")).await;
        let (d1, d2) = (o.conversation(&everyone, json!({})).await, o.conversation(&everyone, json!({})).await);
        let a1 = o.run(&everyone, Some(&d1), json!({})).await;
        assert_eq!(o.write(&a1, "all.txt", "for all").await.status, 204);
        let a2 = o.run(&everyone, Some(&d2), json!({})).await;
        assert_eq!(o.read(&a2, "all.txt").await.body, "for all");

        // user scope: two users apart, a widget run refused.
        let personal = o.agent(service_agent("personal", "user")).await;
        let bob = app.scalar_strings("SELECT id FROM users").await.remove(0);
        app.member_with_role("second@example.com", "member").await;
        let second = app.scalar_strings("SELECT id FROM users WHERE email = 'second@example.com'").await.remove(0);
        let u1 = o.run(&personal, None, json!({"user_id": bob})).await;
        assert_eq!(o.write(&u1, "mine.txt", "bob's").await.status, 204);
        let u2 = o.run(&personal, None, json!({"started_by": "api", "user_id": second})).await;
        o.read(&u2, "mine.txt").await.problem(404);
        let u3 = o.run(&personal, None, json!({"user_id": bob})).await;
        assert_eq!(o.read(&u3, "mine.txt").await.body, "bob's");
        // Runs the scope could never serve are refused when created (422), naming the scope.
        let runs = "/api/v1/runs";
        let widget = o.call(Method::POST, runs, Some(json!({"agent_id": personal, "started_by": "widget"}))).await;
        let p = widget.problem(422);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("widget") && d.contains("user scope")), "{p}");
        o.call(Method::POST, runs, Some(json!({"agent_id": personal, "started_by": "trigger"}))).await.problem(422);
        let as_creator =
            o.run(&personal, None, json!({"started_by": "trigger", "trigger_as_creator": true, "user_id": bob})).await;
        assert_eq!(o.read(&as_creator, "mine.txt").await.body, "bob's");

        // A scope whose subject is missing is refused, naming the scope.
        let no_conv = o.call(Method::POST, runs, Some(json!({"agent_id": agent, "started_by": "member"}))).await;
        let p = no_conv.problem(422);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("conversation scope")), "{p}");
        let channel = o.agent(service_agent("chan", "channel")).await;
        let plain = o.conversation(&channel, json!({})).await;
        let no_chan = o.call(Method::POST, runs, Some(json!({"agent_id": channel, "conversation_id": plain, "started_by": "member"}))).await;
        let p = no_chan.problem(422);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("channel scope")), "{p}");
    }
}

db_test! {
    async fn a_run_that_never_touches_its_workspace_calls_no_host(app: TestApp) {
        let peer = Peer::start(PeerOptions::default()).await.expect("peer");
        let o = Org::new(&app).await;
        o.connect(&peer).await;
        let agent = o.agent(service_agent("idle", "run")).await;
        let requests_before = std::fs::read_to_string(&peer.log_path).expect("log").matches("HTTP/1.1\"").count();
        let run = o.run(&agent, None, json!({})).await;
        assert_eq!(o.ws(&run, Method::GET, "state", None).await.json()["state"], "not_opened");
        assert!(o.ws(&run, Method::GET, "briefing", None).await.json()["briefing"].as_str().is_some());
        o.finish(&run).await;
        let requests_after = std::fs::read_to_string(&peer.log_path).expect("log").matches("HTTP/1.1\"").count();
        assert_eq!(requests_before, requests_after, "a request reached the host:\n{}", peer.log_tail(20));
        assert!(o.rows(&run).await.is_empty());
    }
}

host_test! {
    async fn concurrent_first_operations_of_one_scope_open_one_workspace(app: TestApp, host: &Host) {
        let o = Org::new(&app).await;
        host.connect(&o).await;
        // Twenty operations spread over four runs of one conversation.
        let agent = o.agent(service_agent("busy", "conversation")).await;
        let conv = o.conversation(&agent, json!({})).await;
        let mut runs = Vec::new();
        for _ in 0..4 {
            runs.push(o.run(&agent, Some(&conv), json!({})).await);
        }
        let calls = (0..20).map(|i| {
            let run = runs[i % runs.len()].clone();
            let o = &o;
            async move { o.write(&run, &format!("f{i}.txt"), "x").await.status.as_u16() }
        });
        let statuses = futures_util::future::join_all(calls).await;
        assert!(statuses.iter().all(|s| *s == 204), "{statuses:?}");
        let key = key_of(&o, &runs[0]).await;
        assert_eq!(host.open_workspaces(&o).await, [key.as_str()]);
        let ls = o.ws(&runs[0], Method::GET, "ls", None).await.json();
        assert_eq!(ls.as_array().map(Vec::len), Some(20));

        // The first operations of eight runs of an agent scope, at once.
        let agent = o.agent(service_agent("shared", "agent")).await;
        let mut runs = Vec::new();
        for _ in 0..8 {
            runs.push(o.run(&agent, None, json!({})).await);
        }
        let writes = runs.iter().enumerate().map(|(i, run)| {
            let o = &o;
            async move { o.write(run, &format!("from-{i}.txt"), "x").await.status.as_u16() }
        });
        assert_eq!(futures_util::future::join_all(writes).await, vec![204; 8]);
        let key2 = key_of(&o, &runs[0]).await;
        let mut both = vec![key, key2];
        both.sort();
        assert_eq!(host.open_workspaces(&o).await, both);
        let ls = o.ws(&runs[7], Method::GET, "ls", None).await.json();
        assert_eq!(ls.as_array().map(Vec::len), Some(8));
    }
}

db_test! {
    async fn a_session_whose_files_are_gone_is_reported_lost_not_replaced(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let (agent, conv) = o.conversation_whose_files_are_gone(peer).await;

        let r2 = o.run(&agent, Some(&conv), json!({})).await;
        let p = o.read(&r2, "work.txt").await.problem(410);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("files are gone")), "{p}");
        assert_eq!(o.ws(&r2, Method::GET, "state", None).await.json()["state"], "lost");
        // Still lost for the rest of this run: never a silent empty workspace.
        o.write(&r2, "new.txt", "x").await.problem(410);
        o.finish(&r2).await;
        // The next turn starts fresh.
        let r3 = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&r3, "new.txt", "fresh").await.status, 204);
        o.read(&r3, "work.txt").await.problem(404);
    }
}

db_test! {
    async fn the_hosts_tenant_cap_arrives_as_429_in_its_own_words(app: TestApp) {
        let peer = Peer::start(PeerOptions::default().env("SANDBOXD_MAX_SESSIONS_PER_TENANT", "1")).await.expect("peer");
        let o = Org::new(&app).await;
        o.connect(&peer).await;
        let agent = o.agent(service_agent("capped", "conversation")).await;
        let r1 = o.run(&agent, Some(&o.conversation(&agent, json!({})).await), json!({})).await;
        assert_eq!(o.write(&r1, "a", "1").await.status, 204);
        let r2 = o.run(&agent, Some(&o.conversation(&agent, json!({})).await), json!({})).await;
        let p = o.write(&r2, "a", "1").await.problem(429);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("already holds 1 of 1")), "{p}");
    }
}

db_test! {
    async fn a_host_missing_a_route_is_a_502_version_mismatch(app: TestApp) {
        let peer =
            Peer::start(PeerOptions::default().drop_route("/sessions/{session_id}/files/write")).await.expect("peer");
        let o = Org::new(&app).await;
        // Its save is refused (a version mismatch) unless saved anyway, as here.
        o.connect_with(&peer, json!({"save_anyway": true})).await;
        let agent = o.agent(service_agent("old", "run")).await;
        let run = o.run(&agent, None, json!({})).await;
        let p = o.write(&run, "a.txt", "1").await.problem(502);
        let d = p["detail"].as_str().expect("detail");
        assert!(d.contains("/sessions/{session_id}/files/write") && d.contains("ghcr.io/vstorm-co/sandboxd:0.2.37"), "{d}");
        assert!(!d.contains(&peer.url));
    }
}

host_test! {
    async fn a_finished_run_scoped_workspace_is_purged_on_the_host(app: TestApp, host: &Host) {
        let o = Org::new(&app).await;
        host.connect(&o).await;
        let agent = o.agent(json!({"name": "once", "backend": "service", "scope": "run", "skills": [{"path": "howto.md", "content": "# how"}], "manifest_files": [{"path": "data", "is_dir": true}]})).await;
        let run = o.run(&agent, None, json!({})).await;
        assert_eq!(o.write(&run, "out.txt", "x").await.status, 204);
        // Skills and the manifest were written at the first operation.
        assert_eq!(o.read(&run, "skills/howto.md").await.body, "# how");
        assert_eq!(o.ws(&run, Method::GET, "stat?path=data", None).await.json()["is_dir"], true);
        let key = key_of(&o, &run).await;
        assert!(key.starts_with("xr-"), "{key}");
        assert_eq!(host.file(&key, "out.txt").await.as_deref(), Some("x"));
        o.finish(&run).await;
        assert_eq!(host.files_of(&key).await, None, "the run's files were purged");
        assert!(host.open_workspaces(&o).await.is_empty());
    }
}

db_test! {
    async fn another_organizations_run_is_404_and_escapes_are_400_before_any_host(app: TestApp) {
        let o = Org::new(&app).await;
        let agent = o.agent(json!({"name": "doc", "backend": "state", "scope": "run"})).await;
        let run = o.run(&agent, None, json!({})).await;
        for bad in ["../etc/passwd", "/etc/passwd", "a/../../b", "/workspace/../x"] {
            let r = o.read(&run, bad).await;
            r.problem(400);
        }
        let r = o.ws(&run, Method::POST, "exec", Some(json!({"command": "ls", "argv": ["ls"]}))).await;
        r.problem(400);
        let b = app.other_org_user("b@example.com", "B").await;
        let bt = b.create_token_in_page("b", "owner").await;
        for (m, sub, body) in [
            (Method::GET, "state", None),
            (Method::GET, "briefing", None),
            (Method::GET, "files?path=a", None),
            (Method::PUT, "files?path=a", None),
            (Method::GET, "ls", None),
            (Method::GET, "stat?path=a", None),
            (Method::POST, "mkdir", Some(json!({"path": "a"}))),
            (Method::POST, "remove", Some(json!({"path": "a"}))),
            (Method::POST, "exec", Some(json!({"command": "ls"}))),
        ] {
            b.bearer(&bt, m.clone(), &format!("/api/v1/runs/{run}/workspace/{sub}"), body).await.problem(404);
        }
        b.bearer(&bt, Method::POST, &format!("/api/v1/runs/{run}/finish"), None).await.problem(404);
        b.bearer(&bt, Method::GET, &format!("/api/v1/runs/{run}"), None).await.problem(404);
        assert!(o.rows(&run).await.is_empty(), "nothing of the refused calls was recorded");
    }
}

db_test! {
    async fn publishing_refuses_incoherent_sandbox_settings(app: TestApp) {
        let o = Org::new(&app).await;
        let r = o.call(Method::POST, "/api/v1/agents", Some(json!({"name": "a", "backend": "state", "scope": "run", "runtime": "python"}))).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["runtime"]);
        let r = o.call(Method::POST, "/api/v1/agents", Some(json!({"name": "a", "backend": "service", "scope": "run"}))).await;
        r.problem(422);
        assert!(r.json()["detail"].as_str().is_some_and(|d| d.contains("no sandbox connection")));
        let bare = o.call(Method::POST, "/api/v1/sandbox-connections", Some(json!({"name": "nokey", "address": "http://10.1.2.3:8080", "save_anyway": true}))).await.json();
        let r = o.call(Method::POST, "/api/v1/agents", Some(json!({"name": "a", "backend": "service", "scope": "run", "connection_id": bare["id"]}))).await;
        r.problem(422);
        assert!(r.json()["detail"].as_str().is_some_and(|d| d.contains("no credential")));
        // A Daytona connection with its key carries workspaces now: an agent may use it.
        let key = o.call(Method::POST, "/api/v1/vault/secrets", Some(json!({"name": "dtn", "purpose": "daytona", "value": "dtn_key"}))).await.json();
        let day = app.insert_daytona_connection(&o.org_id, "day", key["id"].as_str()).await;
        let r = o.call(Method::POST, "/api/v1/agents", Some(json!({"name": "on-daytona", "backend": "service", "scope": "run", "connection_id": day}))).await;
        assert_eq!(r.status, 201, "{}", r.body);
        let r = o.call(Method::POST, "/api/v1/agents", Some(json!({"name": "a", "backend": "state", "scope": "run", "skills": [{"path": "../x", "content": ""}]}))).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["skills"]);
        assert_eq!(app.count("agents").await, 1, "only the agent on Daytona");
    }
}

db_test! {
    async fn a_switched_off_connection_refuses_new_work_but_still_gets_its_sessions_purged(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let conn = o.connect(peer).await;
        let agent = o.agent(service_agent("once", "run")).await;
        let run = o.run(&agent, None, json!({})).await;
        assert_eq!(o.write(&run, "out.txt", "x").await.status, 204);
        let key = o.ws(&run, Method::GET, "state", None).await.json()["session_key"].as_str().expect("key").to_string();
        let r =
            o.call(Method::PATCH, &format!("/api/v1/sandbox-connections/{conn}"), Some(json!({"is_enabled": false}))).await;
        assert_eq!(r.json()["is_enabled"], false);
        // New work is refused, in words.
        let other = o.run(&agent, None, json!({})).await;
        let p = o.write(&other, "a.txt", "1").await.problem(409);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("switched off")), "{p}");
        // Finishing still destroys the run's sandbox on the host.
        o.finish(&run).await;
        assert_eq!(host_tree_status(peer, &key).await, 404, "the switched-off connection's session was purged");
    }
}

db_test! {
    async fn path_escapes_are_400_and_never_reach_the_host(app: TestApp) {
        let peer = Peer::start(PeerOptions::default()).await.expect("peer");
        let o = Org::new(&app).await;
        o.connect(&peer).await;
        let agent = o.agent(service_agent("careful", "conversation")).await;
        let run = o.run(&agent, Some(&o.conversation(&agent, json!({})).await), json!({})).await;
        // Open the session first, so any later request would be a file operation reaching the host.
        assert_eq!(o.write(&run, "ok.txt", "fine").await.status, 204);
        let requests = || std::fs::read_to_string(&peer.log_path).expect("log").matches("HTTP/1.1\"").count();
        let before = requests();
        for bad in ["../etc/passwd", "/etc/passwd", "a/../../b", "/workspace/../x", "~/.ssh/id_rsa"] {
            let p = o.read(&run, bad).await.problem(400);
            assert!(p["detail"].as_str().is_some_and(|d| !d.is_empty()), "{bad:?}: {p}");
            o.write(&run, bad, "x").await.problem(400);
        }
        // A NUL is refused at the edge, naming the field, before any path rule.
        for r in [o.read(&run, "a\u{0}b").await, o.write(&run, "a\u{0}b", "x").await] {
            r.problem(422);
            assert_eq!(r.problem_fields(), vec!["path".to_string()]);
        }
        o.read(&run, &"a/".repeat(600)).await.problem(400);
        o.ws(&run, Method::POST, "remove", Some(json!({"path": "../.."}))).await.problem(400);
        assert_eq!(requests(), before, "a refused path reached the host:\n{}", peer.log_tail(20));
        o.finish(&run).await;
        // Only the one legitimate write was recorded.
        assert_eq!(o.rows(&run).await, vec![row("write", "/workspace/ok.txt", true, "4 bytes")]);
    }
}

/// The session key of `run`'s workspace.
async fn key_of(o: &Org<'_>, run: &str) -> String {
    o.ws(run, Method::GET, "state", None).await.json()["session_key"].as_str().expect("key").to_string()
}

/// The status the host answers for a workspace's file tree, asked directly (404: no files).
async fn host_tree_status(peer: &Peer, key: &str) -> u16 {
    let r = peer.request(Method::POST, &format!("/workspaces/{key}/tree")).json(&json!({})).send().await;
    r.expect("tree").status().as_u16()
}
