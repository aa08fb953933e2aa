//! Daytona as a real account behaves (issue 46), through our API against the FAKE Daytona
//! (tests/peer/daytona/fake_daytona.py; see daytona_fake.rs), on SQLite and PostgreSQL, with the
//! fake's clock moved instead of waiting: a run idle past Daytona's auto-stop (and archive)
//! continues where it was and keeps its files, run-scoped too; a slow start is waited for; an
//! errored sandbox is recovered, or refused with Daytona's reason; a workspace whose sandbox never
//! started leaves nothing at Daytona when deleted; throttling and a bad gateway are retried in one
//! operation row; Daytona's own refusals are shown in its words; a path Daytona would rename is
//! refused; a command's output is capped at 10 MiB without being held whole.

use reqwest::Method;
use serde_json::{json, Value};

use agenticos::sandbox::hosts::daytona::workspaces::keepalive;

use crate::daytona_fake::FakeDaytona;
use crate::db_test;
use crate::support::connections::daytona;
use crate::support::{service_agent, Org};

const MINUTE: u64 = 60;

async fn key_of(o: &Org<'_>, run: &str) -> String {
    o.ws(run, Method::GET, "state", None).await.json()["session_key"].as_str().expect("key").to_string()
}

/// The fake's sandbox of the workspace whose key is `key` (by our label: a deleted one is renamed),
/// destroyed ones too; the last created.
fn named(fake: &FakeDaytona, key: &str) -> Value {
    let mut all: Vec<Value> =
        fake.sandboxes().into_iter().filter(|s| s["labels"]["agenticos.io/workspace"] == key).collect();
    all.pop().unwrap_or_else(|| panic!("no sandbox of workspace {key}"))
}

/// A Daytona connection to `fake`, a conversation-scoped agent named `name`, one of its
/// conversations and a run in it: (agent, conversation, run).
async fn conversation_run(o: &Org<'_>, fake: &FakeDaytona, name: &str) -> (String, String, String) {
    daytona(o, &fake.api_url, &fake.api_key).await;
    let agent = o.agent(service_agent(name, "conversation")).await;
    let conv = o.conversation(&agent, json!({})).await;
    let run = o.run(&agent, Some(&conv), json!({})).await;
    (agent, conv, run)
}

/// How far the fake's clock has been moved, in seconds.
fn fake_clock(fake: &FakeDaytona) -> f64 {
    fake.clock_offset()
}

fn count(fake: &FakeDaytona, route: &str) -> u64 {
    fake.request_counts().get(route).copied().unwrap_or(0)
}

// Daytona only: its auto-stop and auto-archive.
db_test! {
    async fn a_daytona_run_idle_past_auto_stop_continues_and_keeps_its_files(app: TestApp) {
        let fake = FakeDaytona::start(&[]);
        let o = Org::new(&app).await;
        daytona(&o, &fake.api_url, &fake.api_key).await;

        // A conversation's run, idle past auto-stop (15 minutes): the next operation finds the
        // sandbox stopped (400 "no IP address found"), starts it and goes on.
        let agent = o.agent(service_agent("thinker", "conversation")).await;
        let conv = o.conversation(&agent, json!({})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&run, "draft.txt", "chapter one").await.status, 204);
        let key = key_of(&o, &run).await;
        let sb = named(&fake, &key);
        assert_eq!((sb["autoStopInterval"].as_i64(), sb["autoArchiveInterval"].as_i64()), (Some(15), Some(24 * 60)));
        // While the run runs, the once-a-minute sweep keeps its sandbox awake: 10 idle minutes,
        // a touch, 10 more, and it still runs.
        fake.advance_clock(10 * MINUTE);
        let marked = keepalive::touch_open_runs(&app.state, agenticos::db::now_ms()).await.expect("keep-alive");
        assert!(marked >= 1);
        fake.advance_clock(10 * MINUTE);
        assert_eq!(named(&fake, &key)["state"], "started");
        // Idle past auto-stop with no touch (the sweep did not come round): stopped.
        fake.advance_clock(16 * MINUTE);
        assert_eq!(named(&fake, &key)["state"], "stopped");
        fake.reset_request_counts();
        let r = o.read(&run, "draft.txt").await;
        assert_eq!((r.status.as_u16(), r.body.as_str()), (200, "chapter one"), "{}", r.body);
        assert_eq!(count(&fake, "POST /sandbox/{sandboxIdOrName}/start"), 1);
        // Idle for days: archived; the next command restores it and runs.
        fake.advance_clock(3 * 24 * 60 * MINUTE);
        assert_eq!(named(&fake, &key)["state"], "archived");
        let out = o.exec(&run, "cat draft.txt").await;
        assert_eq!(out.json()["stdout"], "chapter one", "{}", out.body);
        let rows = o.rows(&run).await;
        assert!(rows.iter().all(|(_, _, ok, d)| *ok || d.is_empty()), "{rows:?}");
        assert_eq!(rows.len(), 3, "one row per operation: {rows:?}");

        // A run-scoped run idle past auto-stop: its sandbox stops, not deletes itself; the files stay.
        let once = o.agent(service_agent("one-off", "run")).await;
        let run1 = o.run(&once, None, json!({})).await;
        assert_eq!(o.write(&run1, "work.txt", "half done").await.status, 204);
        let key1 = key_of(&o, &run1).await;
        let sb1 = named(&fake, &key1);
        assert!(sb1["autoDeleteInterval"].as_i64().is_some_and(|m| m >= 24 * 60), "{sb1}");
        fake.advance_clock(16 * MINUTE);
        assert_eq!(named(&fake, &key1)["state"], "stopped");
        let r = o.read(&run1, "work.txt").await;
        assert_eq!((r.status.as_u16(), r.body.as_str()), (200, "half done"), "{}", r.body);
        o.finish(&run1).await;
        assert_eq!(named(&fake, &key1)["desiredState"], "destroyed");

        // Deleted behind our back (a known id Daytona no longer has): the workspace is lost, the
        // existing step; never "Credential refused" or "No such file".
        fake.set_sandbox(&key, json!({"state": "destroyed"}));
        let r = o.read(&run, "draft.txt").await;
        let p = r.problem(410);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("files are gone")), "{p}");
        fake.assert_log_matches_the_documents();
    }
}

// Daytona only: its sandbox states.
db_test! {
    async fn a_slow_daytona_start_and_an_errored_sandbox_are_waited_for_recovered_or_refused(app: TestApp) {
        let fake = FakeDaytona::start(&[]);
        let o = Org::new(&app).await;
        let (agent, conv, run) = conversation_run(&o, &fake, "patient").await;
        assert_eq!(o.write(&run, "a.txt", "kept").await.status, 204);
        let key = key_of(&o, &run).await;
        o.finish(&run).await;

        // A start that takes 20 s (the fake's clock): Daytona holds the start until started.
        fake.set_sandbox(&key, json!({"state": "stopped"}));
        fake.set_hooks(json!({"autoClock": true, "startSeconds": 20}));
        let before = fake_clock(&fake);
        let run2 = o.run(&agent, Some(&conv), json!({})).await;
        let r = o.read(&run2, "a.txt").await;
        assert_eq!((r.status.as_u16(), r.body.as_str()), (200, "kept"), "{}", r.body);
        assert!(fake_clock(&fake) - before >= 20.0, "the start took its 20 s of the fake's clock");
        fake.set_hooks(json!({"autoClock": null, "startSeconds": null}));
        o.finish(&run2).await;

        // In error, recoverable: recovered once, the run goes on with the files.
        fake.set_sandbox(&key, json!({"state": "error", "errorReason": "the runner restarted", "recoverable": true}));
        fake.reset_request_counts();
        let run3 = o.run(&agent, Some(&conv), json!({})).await;
        let r = o.read(&run3, "a.txt").await;
        assert_eq!((r.status.as_u16(), r.body.as_str()), (200, "kept"), "{}", r.body);
        assert_eq!(count(&fake, "POST /sandbox/{sandboxIdOrName}/recover"), 1);
        o.finish(&run3).await;

        // In error, not recoverable: refused with Daytona's reason and the way to start fresh.
        fake.set_sandbox(&key, json!({"state": "error", "errorReason": "disk corrupted", "recoverable": false}));
        let run4 = o.run(&agent, Some(&conv), json!({})).await;
        let p = o.read(&run4, "a.txt").await.problem(409);
        let detail = p["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("disk corrupted") && detail.contains("fresh"), "{detail}");
        fake.assert_log_matches_the_documents();
    }
}

// Daytona only: a sandbox that never started (its states).
db_test! {
    async fn deleting_a_daytona_workspace_whose_sandbox_never_started_leaves_nothing(app: TestApp) {
        let fake = FakeDaytona::start(&[]);
        let o = Org::new(&app).await;
        let (_, conv, run) = conversation_run(&o, &fake, "unlucky").await;
        let key = key_of(&o, &run).await;
        // Daytona creates the sandbox but it never starts: the workspace never learns its id.
        fake.set_hooks(json!({"names": {key.as_str(): {"buildFail": "no runner available"}}}));
        let p = o.write(&run, "a.txt", "x").await.problem(409);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("no runner available")), "{p}");
        assert_eq!(o.ws(&run, Method::GET, "state", None).await.json()["state"], "not_opened");
        assert_eq!(named(&fake, &key)["state"], "error");
        o.finish(&run).await;

        let r = o.call(Method::DELETE, &format!("/api/v1/conversations/{conv}"), None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["sandboxes"], 1, "{}", r.body);
        let gone = fake.sandboxes().into_iter().filter(|s| s["labels"]["agenticos.io/workspace"] == key.as_str()).collect::<Vec<_>>();
        assert!(gone.iter().all(|s| s["state"] == "destroyed" || s["desiredState"] == "destroyed"), "{gone:?}");
        fake.assert_log_matches_the_documents();
    }
}

// Daytona only: its throttler, its proxy's 502 and its refusals.
db_test! {
    async fn daytona_throttling_and_bad_gateways_are_retried_and_its_refusals_shown_in_its_words(app: TestApp) {
        let fake = FakeDaytona::start(&[]);
        let o = Org::new(&app).await;
        let (agent, _, run) = conversation_run(&o, &fake, "busy").await;
        assert_eq!(o.write(&run, "a.txt", "v1").await.status, 204);

        // 429 with Retry-After-{throttler}, then the answer: one operation, one row.
        fake.set_hooks(json!({"fail": [{"route": "GET /toolbox/{sandboxId}/files/download", "status": 429,
                                        "throttler": "authenticated", "retryAfter": 1, "times": 1}]}));
        fake.reset_request_counts();
        let r = o.read(&run, "a.txt").await;
        assert_eq!((r.status.as_u16(), r.body.as_str()), (200, "v1"), "{}", r.body);
        assert_eq!(count(&fake, "GET /toolbox/{sandboxId}/files/download"), 2);
        // The toolbox proxy's empty 502 (the daemon did not answer): tried again.
        fake.set_hooks(json!({"fail": [{"route": "POST /toolbox/{sandboxId}/files/bulk-upload", "status": 502,
                                        "empty": true, "times": 1}]}));
        assert_eq!(o.write(&run, "a.txt", "v2").await.status, 204);
        fake.set_hooks(json!({"fail": null}));
        let rows = o.rows(&run).await;
        let ops: Vec<&str> = rows.iter().map(|(op, _, _, _)| op.as_str()).collect();
        assert_eq!(ops, ["write", "read", "write"], "{rows:?}");
        assert!(rows.iter().all(|(_, _, ok, _)| *ok), "{rows:?}");

        // A path Daytona would trim: refused, not renamed.
        let p = o.write(&run, "notes.txt ", "x").await.problem(422);
        assert!(p.to_string().contains("space"), "{p}");

        // Daytona's own refusals, in its words (not "key refused").
        fake.set_hooks(json!({"suspended": "payment overdue"}));
        let conv2 = o.conversation(&agent, json!({})).await;
        let run2 = o.run(&agent, Some(&conv2), json!({})).await;
        let p = o.write(&run2, "a.txt", "x").await.problem(409);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("Organization is suspended: payment overdue")), "{p}");
        fake.set_hooks(json!({"suspended": null, "quota": "disk"}));
        let p = o.write(&run2, "a.txt", "x").await.problem(409);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("Total disk limit exceeded")), "{p}");
        fake.set_hooks(json!({"quota": null, "keyPermissions": ["delete:sandboxes"]}));
        let p = o.write(&run2, "a.txt", "x").await.problem(409);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("write:sandboxes")), "{p}");
        fake.set_hooks(json!({"keyPermissions": null}));
        fake.assert_log_matches_the_documents();
    }
}

// Daytona only: its exec answers stderr inside stdout, read as a stream.
db_test! {
    async fn sixty_megabytes_of_daytona_exec_output_are_capped(app: TestApp) {
        let fake = FakeDaytona::start(&[]);
        let o = Org::new(&app).await;
        let (_, _, run) = conversation_run(&o, &fake, "chatty").await;
        let out = o.exec(&run, "head -c 60000000 /dev/zero | tr '\\0' a; echo done >&2").await;
        assert_eq!(out.status, 200, "{}", &out.body[..out.body.len().min(300)]);
        let v = out.json();
        assert_eq!(v["output_limited"], true);
        let stdout = v["stdout"].as_str().expect("stdout");
        assert_eq!(stdout.len(), 64 * 1024);
        assert!(stdout.bytes().all(|b| b == b'a'));
        assert_eq!(v["exit_code"], 0, "Daytona ran it to its end");
        // A short command still answers whole.
        let v = o.exec(&run, "echo out; echo err >&2").await.json();
        assert_eq!((v["stdout"].as_str(), v["output_limited"].as_bool()), (Some("out\nerr\n"), Some(false)));
        // Standard error came inside stdout, in the order written, and the answer says so.
        assert_eq!((v["stderr"].as_str(), v["output_combined"].as_bool()), (Some(""), Some(true)), "{v}");
    }
}
