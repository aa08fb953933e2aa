//! A run's workspace over its life, against the real sandboxd peer and the `state` backend, each
//! on SQLite and PostgreSQL: a finished run is closed, failures are recorded as failures, losses
//! reach only the run that met them, the agent's files are written (and recorded) at the first
//! operation, and exec input a host cannot start is refused before it reaches one.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use crate::db_test;
use crate::peer::{self, Peer, PeerOptions};
use crate::support::{row, service_agent, Org};

/// Requests the peer has answered so far (its access log).
fn requests(peer: &Peer) -> usize {
    std::fs::read_to_string(&peer.log_path).expect("log").matches("HTTP/1.1\"").count()
}

/// Every workspace route but `state`, as (method, sub-path, body).
fn every_workspace_route() -> Vec<(Method, String, Option<Value>)> {
    vec![
        (Method::GET, "files?path=a.txt".into(), None),
        (Method::PUT, "files?path=b.txt".into(), None),
        (Method::GET, "ls".into(), None),
        (Method::GET, "stat?path=a.txt".into(), None),
        (Method::GET, "briefing".into(), None),
        (Method::POST, "mkdir".into(), Some(json!({"path": "d"}))),
        (Method::POST, "remove".into(), Some(json!({"path": "a.txt"}))),
        (Method::POST, "exec".into(), Some(json!({"command": "ls"}))),
    ]
}

async fn assert_closed(o: &Org<'_>, run: &str) {
    for (method, sub, body) in every_workspace_route() {
        let r = o.ws(run, method.clone(), &sub, body).await;
        let p = r.problem(409);
        assert_eq!(p["detail"], "This run is finished.", "{method} {sub}: {p}");
    }
    assert_eq!(o.ws(run, Method::GET, "state", None).await.json()["state"], "finished");
}

async fn finish_run(o: &Org<'_>, run: &str) -> Value {
    let r = o.call(Method::POST, &format!("/api/v1/runs/{run}/finish"), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()
}

db_test! {
    async fn a_finished_run_is_closed_and_no_request_reaches_the_host_after_finish(app: TestApp) {
        let peer = Peer::start(PeerOptions::default()).await.expect("peer");
        let o = Org::new(&app).await;
        o.connect(&peer).await;
        // A run-scoped session is purged at the end (every later call would have re-created it);
        // a conversation-scoped one stays open on the host for the next run.
        for scope in ["run", "conversation"] {
            let agent = o.agent(service_agent(&format!("closed-{scope}"), scope)).await;
            let conv = o.conversation(&agent, json!({})).await;
            let run = o.run(&agent, Some(&conv), json!({})).await;
            assert_eq!(o.write(&run, "a.txt", "kept").await.status, 204);
            assert_eq!(finish_run(&o, &run).await["status"], "finished");
            let before = requests(&peer);
            assert_closed(&o, &run).await;
            // Finishing again is fine, changes nothing and asks no host.
            assert_eq!(finish_run(&o, &run).await["status"], "finished");
            assert_eq!(requests(&peer), before, "{scope}: a request reached the host after finish:\n{}", peer.log_tail(20));
            assert_eq!(o.rows(&run).await, vec![row("write", "/workspace/a.txt", true, "4 bytes")], "{scope}");
        }
        // The org has no session left but the conversation's.
        let sessions = o.sessions_on(&peer).await;
        assert_eq!(sessions.len(), 1, "{sessions:?}");
        assert!(sessions[0]["session_id"].as_str().is_some_and(|k| k.starts_with("xc-")), "{sessions:?}");
    }
}

db_test! {
    async fn a_finished_state_run_is_closed_too(app: TestApp) {
        let o = Org::new(&app).await;
        let agent = o.agent(json!({"name": "doc", "backend": "state", "scope": "agent"})).await;
        let run = o.run(&agent, None, json!({})).await;
        assert_eq!(o.write(&run, "a.txt", "x").await.status, 204);
        finish_run(&o, &run).await;
        assert_closed(&o, &run).await;
        assert_eq!(o.rows(&run).await, vec![row("write", "/workspace/a.txt", true, "1 bytes")]);
    }
}

db_test! {
    async fn finishing_marks_the_run_finished_even_when_the_purge_fails(app: TestApp) {
        let peer = Peer::start(PeerOptions::default()).await.expect("peer");
        let o = Org::new(&app).await;
        o.connect(&peer).await;
        let agent = o.agent(service_agent("once", "run")).await;
        let run = o.run(&agent, None, json!({})).await;
        assert_eq!(o.write(&run, "a.txt", "x").await.status, 204);
        // The host goes down before the run ends: the purge cannot happen.
        drop(peer);
        let finished = finish_run(&o, &run).await;
        assert_eq!(finished["status"], "finished");
        assert!(finished["finished_at"].is_i64(), "{finished}");
        assert_eq!(finish_run(&o, &run).await["status"], "finished");
        assert_closed(&o, &run).await;
        let status = app.scalar_strings(&format!("SELECT status FROM runs WHERE id = '{run}'")).await;
        assert_eq!(status, vec!["finished".to_string()]);
    }
}

db_test! {
    async fn a_failed_command_is_recorded_as_a_failure(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let agent = o.agent(service_agent("runner", "run")).await;
        let run = o.run(&agent, None, json!({})).await;
        assert_eq!(o.exec(&run, "true").await.json()["exit_code"], 0);
        assert_eq!(o.exec(&run, "exit 3").await.json()["exit_code"], 3);
        let slow = o.ws(&run, Method::POST, "exec", Some(json!({"command": "sleep 5", "timeout_seconds": 1}))).await;
        assert_eq!(slow.json()["timed_out"], true, "{}", slow.body);
        let loud = o.exec(&run, "yes | head -c 11000000").await;
        assert_eq!(loud.json()["output_limited"], true, "{}", &loud.body[..200.min(loud.body.len())]);
        o.finish(&run).await;
        assert_eq!(
            o.rows(&run).await,
            vec![
                row("execute", "true", true, "exit 0"),
                row("execute", "exit 3", false, "exit 3"),
                row("execute", "sleep 5", false, "timed out"),
                row("execute", "yes | head -c 11000000", false, "output limit"),
            ]
        );
    }
}

db_test! {
    async fn a_loss_is_reported_to_the_run_that_met_it_and_the_next_run_opens_fresh(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let (agent, conv) = o.conversation_whose_files_are_gone(peer).await;

        // The run that meets the loss is told, and never finishes.
        let r2 = o.run(&agent, Some(&conv), json!({})).await;
        o.read(&r2, "work.txt").await.problem(410);
        // The next run is not told again: it opens fresh.
        let r3 = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.ws(&r3, Method::GET, "state", None).await.json()["state"], "not_opened");
        assert_eq!(o.write(&r3, "new.txt", "fresh").await.status, 204);
        assert_eq!(o.ws(&r3, Method::GET, "state", None).await.json()["state"], "open");
        o.read(&r3, "work.txt").await.problem(404);
        // The run that met it still is never handed an empty workspace.
        o.write(&r2, "x.txt", "x").await.problem(410);
        assert_eq!(o.ws(&r2, Method::GET, "state", None).await.json()["state"], "lost");
        o.finish(&r2).await;
        o.finish(&r3).await;
        let r4 = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.read(&r4, "new.txt").await.body, "fresh");
    }
}

db_test! {
    async fn a_hosts_410_gone_is_a_lost_workspace(app: TestApp) {
        // No workspace root: the files live and die with the sandbox.
        let peer = Peer::start(PeerOptions::default().env("SANDBOXD_WORKSPACE_ROOT", "")).await.expect("peer");
        let o = Org::new(&app).await;
        o.connect(&peer).await;
        let agent = o.agent(service_agent("fragile", "conversation")).await;
        let conv = o.conversation(&agent, json!({})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.exec(&run, "echo hi > a.txt").await.json()["exit_code"], 0);
        let key = o.ws(&run, Method::GET, "state", None).await.json()["session_key"].as_str().expect("key").to_string();
        // Behind our back the sandbox dies (like `docker rm -f`), its files with it.
        // The peer keeps each sandbox's scratch in `$TMPDIR/sandboxd-peer-scratch-*/<session>-<ns>`.
        let tmp = peer.workspace_root.parent().expect("peer dir").join("tmp");
        let mut removed = 0;
        for root in std::fs::read_dir(&tmp).expect("tmp").flatten().filter(|e| e.path().is_dir()) {
            for entry in std::fs::read_dir(root.path()).expect("scratch").flatten() {
                if entry.file_name().to_string_lossy().starts_with(&format!("{key}-")) {
                    std::fs::remove_dir_all(entry.path()).expect("remove");
                    removed += 1;
                }
            }
        }
        assert_eq!(removed, 1, "the sandbox's scratch directory");
        let p = o.exec(&run, "cat a.txt").await.problem(410);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("files are gone")), "{p}");
        assert_eq!(o.ws(&run, Method::GET, "state", None).await.json()["state"], "lost");
        o.exec(&run, "true").await.problem(410);
        o.finish(&run).await;
        assert_eq!(
            o.rows(&run).await,
            vec![
                row("execute", "echo hi > a.txt", true, "exit 0"),
                row("execute", "cat a.txt", false, "lost"),
                row("execute", "true", false, "lost"),
            ]
        );
        // The next turn starts fresh.
        let next = o.run(&agent, Some(&conv), json!({})).await;
        let fresh = o.exec(&next, "ls").await;
        assert_eq!(fresh.status, 200, "{}", fresh.body);
        assert_eq!(fresh.json()["stdout"], "");
    }
}

fn agent_with_files(backend: &str, scope: &str) -> Value {
    json!({"name": format!("files-{backend}"), "backend": backend, "scope": scope,
        "skills": [{"path": "howto.md", "content": "# how"}],
        "manifest_files": [{"path": "data", "is_dir": true}, {"path": "data/seed.txt", "content": "seed"}]})
}

db_test! {
    async fn skills_and_manifest_files_are_written_and_recorded_at_the_first_operation_on_both_backends(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        for backend in ["state", "service"] {
            let agent = o.agent(agent_with_files(backend, "conversation")).await;
            let conv = o.conversation(&agent, json!({})).await;
            let r1 = o.run(&agent, Some(&conv), json!({})).await;
            let ls = o.ws(&r1, Method::GET, "ls", None).await.json();
            let mut names: Vec<&str> = ls.as_array().expect("list").iter().filter_map(|e| e["name"].as_str()).collect();
            names.sort_unstable();
            assert_eq!(names, vec!["data", "skills"], "{backend}: {ls}");
            assert_eq!(o.read(&r1, "skills/howto.md").await.body, "# how", "{backend}");
            assert_eq!(o.read(&r1, "data/seed.txt").await.body, "seed", "{backend}");
            o.finish(&r1).await;
            // Folders first, then the files (written several at a time: in any order).
            let mut rows = o.rows(&r1).await;
            rows[1..3].sort();
            assert_eq!(
                rows,
                vec![
                    row("mkdir", "/workspace/data", true, ""),
                    row("write", "/workspace/data/seed.txt", true, "4 bytes"),
                    row("write", "/workspace/skills/howto.md", true, "5 bytes"),
                    row("ls", "/workspace", true, "2 entries"),
                    row("read", "/workspace/skills/howto.md", true, "5 bytes"),
                    row("read", "/workspace/data/seed.txt", true, "4 bytes"),
                ],
                "{backend}"
            );
            // A later run of the workspace gets its skills again, not the manifest.
            let r2 = o.run(&agent, Some(&conv), json!({})).await;
            assert_eq!(o.ws(&r2, Method::POST, "remove", Some(json!({"path": "data"}))).await.status, 204);
            o.finish(&r2).await;
            assert_eq!(
                o.rows(&r2).await,
                vec![row("write", "/workspace/skills/howto.md", true, "5 bytes"), row("remove", "/workspace/data", true, "")],
                "{backend}"
            );
        }
    }
}

db_test! {
    async fn preparing_is_never_left_behind_by_a_failure_after_opening(app: TestApp) {
        // `@coding` is a runtime the host builds on first use; the peer opens it at once.
        let peer = Peer::start(PeerOptions::default().env("SANDBOXD_RUNTIMES", "workbench=@coding")).await.expect("peer");
        let policy = peer.get("/policy").await;
        assert_eq!(policy["runtimes"][0]["builds"], true, "{policy}");
        let o = Org::new(&app).await;
        o.connect(&peer).await;
        let agent = o.agent(json!({"name": "built", "backend": "service", "scope": "conversation",
            "skills": [{"path": "howto.md", "content": "# how"}]})).await;
        let conv = o.conversation(&agent, json!({})).await;
        let r1 = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&r1, "a.txt", "1").await.status, 204);
        // An image already built opens at once: never `preparing`.
        assert_eq!(o.ws(&r1, Method::GET, "state", None).await.json()["state"], "open");
        o.finish(&r1).await;
        // Behind our back `skills` becomes a file: the next run's skills write fails after opening.
        let key = o.ws(&r1, Method::GET, "state", None).await.json()["session_key"].as_str().expect("key").to_string();
        let skills = peer.workspace_root.join(&key).join("workspace/skills");
        std::fs::remove_dir_all(&skills).expect("remove skills");
        std::fs::write(&skills, "in the way").expect("file");
        let r2 = o.run(&agent, Some(&conv), json!({})).await;
        let r = o.read(&r2, "a.txt").await;
        assert!(r.status.is_client_error(), "{}: {}", r.status, r.body);
        let state = o.ws(&r2, Method::GET, "state", None).await.json();
        assert_eq!(state["state"], "open", "{state}");
        let states = app.scalar_strings("SELECT state FROM sandbox_workspaces").await;
        assert!(!states.iter().any(|s| s == "preparing"), "{states:?}");
        o.finish(&r2).await;
        // The failed write is recorded, then the read it stopped.
        assert_eq!(
            o.rows(&r2).await,
            vec![
                row("write", "/workspace/skills/howto.md", false, "not a directory"),
                row("read", "/workspace/a.txt", false, "not a directory"),
            ]
        );
    }
}

db_test! {
    async fn exec_input_a_host_cannot_start_is_a_400_before_any_host(app: TestApp) {
        let peer = Peer::start(PeerOptions::default()).await.expect("peer");
        let o = Org::new(&app).await;
        o.connect(&peer).await;
        let agent = o.agent(service_agent("strict", "conversation")).await;
        let run = o.run(&agent, Some(&o.conversation(&agent, json!({})).await), json!({})).await;
        // The longest command a sandbox starts (docs/workspaces.md, "Command limits") runs.
        let longest = format!("true #{}", "x".repeat(131_071 - 6));
        let r = o.ws(&run, Method::POST, "exec", Some(json!({"command": longest}))).await;
        assert_eq!(r.json()["exit_code"], 0, "{}", &r.body[..200.min(r.body.len())]);
        let before = requests(&peer);
        let too_long = format!("{longest}x");
        for (body, words) in [
            (json!({"command": too_long}), "131071 bytes"),
            (json!({"argv": ["echo", "y".repeat(131_072)]}), "Argument 1 of “argv”"),
            (json!({"command": "env", "env": {"BIG": "v".repeat(131_068)}}), "“BIG” in “env”"),
        ] {
            let p = o.ws(&run, Method::POST, "exec", Some(body)).await.problem(400);
            let detail = p["detail"].as_str().unwrap_or_default();
            assert!(detail.contains(words) && !detail.contains(&peer.url), "{detail}");
        }
        // A NUL in `env` is refused at the edge (422 naming the field), before the exec rules.
        for (body, field) in [
            (json!({"command": "env", "env": {"A": "x\u{0}y"}}), "env.A"),
            (json!({"command": "env", "env": {"A\u{0}B": "x"}}), "env"),
        ] {
            let r = o.ws(&run, Method::POST, "exec", Some(body)).await;
            r.problem(422);
            assert_eq!(r.problem_fields(), vec![field.to_string()]);
        }
        assert_eq!(requests(&peer), before, "a refused command reached the host:\n{}", peer.log_tail(20));
        o.finish(&run).await;
        assert_eq!(o.rows(&run).await.len(), 1, "only the command that ran was recorded");
    }
}

db_test! {
    async fn exec_returns_binary_output_base64_encoded_on_request(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let agent = o.agent(service_agent("binary", "run")).await;
        let run = o.run(&agent, None, json!({})).await;
        let body = json!({"command": "printf '\\377\\000\\001'; printf 'e\\376' >&2; exit 3", "output_encoding": "base64"});
        let out = o.ws(&run, Method::POST, "exec", Some(body)).await.json();
        assert_eq!(out["stdout_base64"], "/wAB", "{out}");
        assert_eq!(out["stderr_base64"], "Zf4=", "{out}");
        assert_eq!(out["exit_code"], 3, "{out}");
        assert!(out.get("stdout").is_none() && out.get("stderr").is_none(), "{out}");
        // argv keeps its words; a larger output survives whole.
        let body = json!({"argv": ["head", "-c", "100000", "/dev/urandom"], "output_encoding": "base64"});
        let out = o.ws(&run, Method::POST, "exec", Some(body)).await.json();
        let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, out["stdout_base64"].as_str().expect("b64")).expect("decodes");
        assert_eq!(bytes.len(), 100_000);
        assert_eq!(out["exit_code"], 0);
        // The default is unchanged: text, no base64 fields.
        let out = o.exec(&run, "echo hi").await.json();
        assert_eq!(out["stdout"], "hi\n");
        assert!(out.get("stdout_base64").is_none(), "{out}");
        o.finish(&run).await;
        let rows = o.rows(&run).await;
        assert_eq!(rows[0], row("execute", "printf '\\377\\000\\001'; printf 'e\\376' >&2; exit 3", false, "exit 3"));
        assert_eq!(rows[1], row("execute", "head -c 100000 /dev/urandom", true, "exit 0"));
    }
}

db_test! {
    async fn a_folder_holding_a_symlink_is_listed_through_the_shell_marking_the_link(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let agent = o.agent(service_agent("venv", "run")).await;
        let run = o.run(&agent, None, json!({})).await;
        let setup = "mkdir -p .venv/bin/sub && printf abc > .venv/bin/activate && ln -s /usr/bin/python3 .venv/bin/python";
        assert_eq!(o.exec(&run, setup).await.json()["exit_code"], 0);
        let r = o.ws(&run, Method::GET, "ls?path=.venv/bin", None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let ls = r.json();
        assert_eq!(
            ls,
            json!([
                {"name": "activate", "path": ".venv/bin/activate", "is_dir": false, "size": 3},
                {"name": "python", "path": ".venv/bin/python", "is_dir": false, "size": null, "is_link": true},
                {"name": "sub", "path": ".venv/bin/sub", "is_dir": true, "size": null},
            ])
        );
        o.ws(&run, Method::GET, "ls?path=.venv/missing", None).await.problem(404);
        o.finish(&run).await;
        assert_eq!(
            o.rows(&run).await,
            vec![
                row("execute", setup, true, "exit 0"),
                row("ls", "/workspace/.venv/bin", true, "3 entries"),
                row("ls", "/workspace/.venv/missing", false, "not found"),
            ]
        );
    }
}

db_test! {
    async fn an_operation_without_its_path_is_a_field_error_before_any_host(app: TestApp) {
        let peer = Peer::start(PeerOptions::default()).await.expect("peer");
        let o = Org::new(&app).await;
        o.connect(&peer).await;
        let agent = o.agent(service_agent("paths", "conversation")).await;
        let run = o.run(&agent, Some(&o.conversation(&agent, json!({})).await), json!({})).await;
        assert_eq!(o.write(&run, "a.txt", "first").await.status, 204);
        let before = requests(&peer);
        // The same 422 problem every other missing field gets, naming `path`.
        for body in [json!({}), json!({"path": ""}), json!({"path": "  "})] {
            for sub in ["mkdir", "remove"] {
                let r = o.ws(&run, Method::POST, sub, Some(body.clone())).await;
                let p = r.problem(422);
                assert_eq!(p["type"], "https://agenticos.dev/problems/invalid-input", "{sub} {body}: {p}");
                assert_eq!(r.problem_fields(), vec!["path".to_string()], "{sub} {body}");
            }
        }
        for query in ["", "?path=", "?path=%20"] {
            let url = o.app.web.url(&format!("/api/v1/runs/{run}/workspace/files{query}"));
            let r = o.app.web.send(reqwest::Client::new().put(url).bearer_auth(&o.token).body("x")).await;
            r.problem(422);
            assert_eq!(r.problem_fields(), vec!["path".to_string()], "PUT files{query}");
        }
        // Naming the root is a path rule (400), as before.
        let p = o.ws(&run, Method::POST, "remove", Some(json!({"path": "/workspace"}))).await.problem(400);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("root")), "{p}");
        assert_eq!(requests(&peer), before, "a refused path reached the host:\n{}", peer.log_tail(20));
        o.finish(&run).await;
        assert_eq!(o.rows(&run).await, vec![row("write", "/workspace/a.txt", true, "5 bytes")]);
    }
}

async fn state_of(o: &Org<'_>, run: &str) -> String {
    o.ws(run, Method::GET, "state", None).await.json()["state"].as_str().unwrap_or_default().to_string()
}

db_test! {
    async fn preparing_shows_while_a_slow_build_is_pending_and_never_outlives_it(app: TestApp) {
        // Two runtimes the host builds on first use, each build taking 4 s; `broken`'s then fails.
        let peer = Peer::start(
            PeerOptions::default()
                .env("SANDBOXD_RUNTIMES", "slow=@coding;description=slow build,broken=@coding;description=failing build")
                .env("PEER_BUILD_DELAY_SECONDS", "4")
                .env("PEER_BUILD_FAIL", "broken"),
        )
        .await
        .expect("peer");
        let o = Org::new(&app).await;
        o.connect(&peer).await;
        for (runtime, status, after) in [("slow", 204, "open"), ("broken", 502, "not_opened")] {
            let agent = o.agent(json!({"name": runtime, "backend": "service", "scope": "conversation", "runtime": runtime})).await;
            let run = o.run(&agent, Some(&o.conversation(&agent, json!({})).await), json!({})).await;
            assert_eq!(state_of(&o, &run).await, "not_opened");
            // The run's first operation opens the session; meanwhile the state is polled until it
            // says `preparing` (bounded by a deadline, failing on anything else).
            let first = o.write(&run, "a.txt", "built");
            let watch = async {
                let deadline = Instant::now() + Duration::from_secs(30);
                loop {
                    let state = state_of(&o, &run).await;
                    if state == "preparing" {
                        return;
                    }
                    assert_eq!(state, "not_opened", "{runtime}: before `preparing`");
                    assert!(Instant::now() < deadline, "{runtime}: never `preparing`");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            };
            let (answer, ()) = tokio::join!(first, watch);
            assert_eq!(answer.status, status, "{runtime}: {}", answer.body);
            // Then `open`, or (the build failed) back where it came from: never left `preparing`.
            assert_eq!(state_of(&o, &run).await, after, "{runtime}");
            if runtime == "broken" {
                assert!(answer.body.contains("Could not start sandbox"), "{}", answer.body);
                assert_eq!(o.sessions_on(&peer).await.len(), 1, "only `slow` opened");
            } else {
                assert_eq!(o.read(&run, "a.txt").await.body, "built");
            }
        }
        let states = app.scalar_strings("SELECT state FROM sandbox_workspaces ORDER BY state").await;
        assert_eq!(states, vec!["not_opened".to_string(), "open".to_string()]);
    }
}
