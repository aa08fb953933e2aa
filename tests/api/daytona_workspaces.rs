//! What only Daytona workspaces (src/sandbox/workspaces/daytona/) do, through our API, against
//! the FAKE Daytona (tests/peer/daytona/fake_daytona.py; see daytona_fake.rs), on SQLite and
//! PostgreSQL: our labels on the sandbox, Daytona's 408 as a host timeout, a name another replica
//! created first, a sandbox started when stopped, waited for while it is prepared or refused by its
//! state, a run's sandbox's week-long backstop, and the key nowhere but in requests to Daytona.
//! Each test says in a comment why it is Daytona's own.
//! What every host kind does alike (opening on first use, the rows, concurrent first operations, a
//! run's workspace purged at its end) is in workspaces.rs, run on each kind by `host_test!`.
//! After each test, every request in the fake's log matches Daytona's documents.

use reqwest::Method;
use serde_json::json;

use crate::daytona_fake::FakeDaytona;
use crate::db_test;
use crate::support::connections::daytona;
use crate::support::{row, service_agent, Org};

/// The fake's sandbox named `name` (not destroyed).
fn sandbox_named(fake: &FakeDaytona, name: &str) -> Option<serde_json::Value> {
    fake.sandboxes().into_iter().find(|s| s["name"] == name)
}

async fn key_of(o: &Org<'_>, run: &str) -> String {
    o.ws(run, Method::GET, "state", None).await.json()["session_key"].as_str().expect("key").to_string()
}

// Daytona only: its labels, intervals and 408.
db_test! {
    async fn a_daytona_sandbox_carries_our_labels_and_daytonas_408_is_a_host_timeout(app: TestApp) {
        let fake = FakeDaytona::start(&[]);
        let o = Org::new(&app).await;
        let conn = daytona(&o, &fake.api_url, &fake.api_key).await;
        let agent = o.agent(service_agent("coder", "conversation")).await;
        let conv = o.conversation(&agent, json!({})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;
        let secret = "top-secret-content-4711";
        assert_eq!(o.write(&run, "notes/hello.txt", secret).await.status, 204);
        let key = key_of(&o, &run).await;
        let sb = sandbox_named(&fake, &key).expect("one sandbox named by the session key");
        assert_eq!(sb["labels"]["agenticos.io/org"], o.org_id.as_str());
        assert_eq!(sb["labels"]["agenticos.io/connection"], conn.as_str());
        assert_eq!(sb["labels"]["agenticos.io/scope"], "conversation");
        assert_eq!(sb["labels"]["agenticos.io/workspace"], key.as_str());
        assert!(sb["labels"]["agenticos.io/deployment"].as_str().is_some_and(|d| d.len() == 16));
        assert_eq!((sb["autoStopInterval"].as_i64(), sb["autoDeleteInterval"].as_i64()), (Some(15), Some(-1)));
        assert_eq!(sb["labels"]["agenticos.io/root"], "workspace");
        // The workspace is the `workspace` folder under the sandbox's home.
        let on_disk = std::path::Path::new(sb["dir"].as_str().expect("dir")).join("workspace/notes/hello.txt");
        assert_eq!(std::fs::read_to_string(on_disk).expect("the file in the sandbox"), secret);

        // Daytona's 408 on a file operation (not only on exec): a 504 `host-timeout`, a row that
        // says so; the next read works.
        fake.set_hooks(json!({"fail": [{"route": "GET /toolbox/{sandboxId}/files/download", "status": 408, "times": 1}]}));
        let p = o.read(&run, "notes/hello.txt").await.problem(504);
        assert_eq!(p["type"], "https://agenticos.dev/problems/host-timeout", "{p}");
        assert_eq!(o.read(&run, "notes/hello.txt").await.body, secret);
        fake.set_hooks(json!({"fail": null}));
        o.finish(&run).await;
        assert_eq!(
            o.rows(&run).await,
            vec![
                row("write", "/workspace/notes/hello.txt", true, &format!("{} bytes", secret.len())),
                row("read", "/workspace/notes/hello.txt", false, "timed out"),
                row("read", "/workspace/notes/hello.txt", true, &format!("{} bytes", secret.len())),
            ]
        );
        // A conversation scope's sandbox outlives its run, started.
        assert!(sandbox_named(&fake, &key).is_some_and(|s| s["state"] == "started"));
        fake.assert_log_matches_the_documents();
    }
}

// Daytona only: its create by name meeting another replica's (sandboxd opens with `reuse`).
db_test! {
    async fn a_name_another_replica_creates_between_our_get_and_our_post_ends_on_its_sandbox(app: TestApp) {
        let fake = FakeDaytona::start(&[]);
        let o = Org::new(&app).await;
        daytona(&o, &fake.api_url, &fake.api_key).await;
        // Another replica creating the name between our GET and our POST: the POST's 409 leads
        // to the one sandbox (the fake's GET answers one 404 while the sandbox already exists).
        let agent2 = o.agent(service_agent("raced", "agent")).await;
        let run = o.run(&agent2, None, json!({})).await;
        let key2 = key_of(&o, &run).await;
        let client = agenticos::sandbox::hosts::daytona::client::DaytonaClient::new(
            agenticos::sandbox::hosts::daytona::client::DaytonaClient::default_http().unwrap(),
            url::Url::parse(&fake.api_url).unwrap(),
            secrecy::SecretString::from(fake.api_key.clone()),
        ).unwrap();
        let theirs = client
            .create_sandbox(&agenticos::sandbox::hosts::daytona::client::CreateSandbox { name: Some(key2.clone()), ..Default::default() })
            .await
            .expect("the other replica's create");
        fake.set_hooks(json!({"fail": [{"route": "GET /sandbox/{sandboxIdOrName}", "status": 404, "times": 1}]}));
        fake.reset_request_counts();
        assert_eq!(o.write(&run, "raced.txt", "y").await.status, 204);
        assert_eq!(fake.request_counts().get("POST /sandbox").copied(), Some(1), "our create met the 409");
        let ours = o.ws(&run, Method::GET, "state", None).await.json();
        assert_eq!(ours["state"], "open");
        // The other replica's sandbox was made here without the workspace-folder label: its files
        // stay at its work dir (a sandbox made before the workspace folder).
        let on_disk = std::path::Path::new(sandbox_named(&fake, &key2).expect("one")["dir"].as_str().unwrap()).join("raced.txt");
        assert!(on_disk.exists(), "the write landed in the other replica's sandbox {}", theirs.id);
        fake.set_hooks(json!({"fail": null}));
        fake.assert_log_matches_the_documents();
    }
}

// Daytona only: its sandbox states.
db_test! {
    async fn a_daytona_sandbox_is_started_waited_for_or_refused_by_its_state(app: TestApp) {
        let fake = FakeDaytona::start(&[]);
        let o = Org::new(&app).await;
        daytona(&o, &fake.api_url, &fake.api_key).await;
        let agent = o.agent(service_agent("stateful", "conversation")).await;
        let conv = o.conversation(&agent, json!({})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;
        let key = key_of(&o, &run).await;

        // Prepared: the create answers before the sandbox started (a slow start); the workspace
        // reads `preparing` until it runs, then the write lands.
        fake.set_hooks(json!({"names": {key.as_str(): {"buildSeconds": 4, "createWaitSeconds": 0}}}));
        let writing = o.write(&run, "a.txt", "slow");
        tokio::pin!(writing);
        let mut seen_preparing = false;
        let status = loop {
            tokio::select! {
                r = &mut writing => break r.status.as_u16(),
                () = tokio::time::sleep(std::time::Duration::from_millis(200)) => {
                    let s = o.ws(&run, Method::GET, "state", None).await.json();
                    seen_preparing |= s["state"] == "preparing";
                }
            }
        };
        assert_eq!(status, 204);
        assert!(seen_preparing, "the workspace read `preparing` while Daytona started the sandbox");
        assert_eq!(o.ws(&run, Method::GET, "state", None).await.json()["state"], "open");
        o.finish(&run).await;

        // Stopped (Daytona's auto-stop): the next run starts it again.
        fake.set_sandbox(&key, json!({"state": "stopped"}));
        fake.reset_request_counts();
        let run2 = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.read(&run2, "a.txt").await.body, "slow");
        assert_eq!(fake.request_counts().get("POST /sandbox/{sandboxIdOrName}/start").copied(), Some(1));
        o.finish(&run2).await;

        // Failed: the state and Daytona's reason, in a refusal; nothing written, a failed row.
        fake.set_sandbox(&key, json!({"state": "error", "errorReason": "disk quota exceeded"}));
        let run3 = o.run(&agent, Some(&conv), json!({})).await;
        let p = o.write(&run3, "b.txt", "no").await.problem(409);
        let detail = p["detail"].as_str().unwrap_or_default().to_string();
        assert!(detail.contains("“error”") && detail.contains("disk quota exceeded"), "{detail}");
        assert!(!detail.contains(&fake.api_key) && !detail.contains("127.0.0.1"), "{detail}");

        // A new conversation whose snapshot does not exist: Daytona's refusal in its words.
        let conv2 = o.conversation(&agent, json!({})).await;
        let run4 = o.run(&agent, Some(&conv2), json!({})).await;
        let key4 = key_of(&o, &run4).await;
        fake.set_hooks(json!({"names": {key4.as_str(): {"buildFail": "image pull failed"}}}));
        let p = o.write(&run4, "c.txt", "no").await.problem(409);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("image pull failed")), "{p}");
        fake.set_hooks(json!({"names": null}));
        fake.assert_log_matches_the_documents();
    }
}

// Daytona only: auto-delete as a backstop and its toolbox address (the purge at a run's end is
// workspaces.rs's, on every kind).
db_test! {
    async fn a_run_scoped_daytona_sandbox_has_a_week_long_backstop_and_the_key_stays_home(app: TestApp) {
        let fake = FakeDaytona::start(&[]);
        let o = Org::new(&app).await;
        daytona(&o, &fake.api_url, &fake.api_key).await;
        let agent = o.agent(service_agent("once", "run")).await;
        let run = o.run(&agent, None, json!({})).await;
        assert_eq!(o.write(&run, "a.txt", "gone soon").await.status, 204);
        let key = key_of(&o, &run).await;
        let sb = sandbox_named(&fake, &key).expect("the run's sandbox");
        // Not deleted by Daytona when it stops (an idle run keeps its files): a week, as a backstop.
        assert_eq!((sb["labels"]["agenticos.io/scope"].as_str(), sb["autoDeleteInterval"].as_i64()), (Some("run"), Some(7 * 24 * 60)));

        // A toolbox address on another scheme than the API's is refused: nothing is sent there.
        fake.set_hooks(json!({"toolboxProxyUrl": "https://127.0.0.1:9/toolbox"}));
        let run2 = o.run(&agent, None, json!({})).await;
        let r = o.write(&run2, "a.txt", "no").await;
        let p = r.problem(409);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("toolbox address")), "{p}");
        assert!(!r.body.contains(&fake.api_key));
        fake.set_hooks(json!({"toolboxProxyUrl": null}));
        // A redirect from the API is never followed.
        fake.set_hooks(json!({"redirect": {"status": 307, "location": "http://127.0.0.1:9/api/sandbox", "pathPrefix": "/api/sandbox", "times": 1}}));
        let run3 = o.run(&agent, None, json!({})).await;
        let r = o.write(&run3, "a.txt", "no").await;
        assert_eq!(r.status.as_u16(), 502, "{}", r.body);
        assert!(!r.body.contains(&fake.api_key));
        fake.set_hooks(json!({"redirect": null}));
        let rows = o.rows(&run3).await;
        assert!(rows.iter().all(|(_, t, _, d)| !t.contains(&fake.api_key) && !d.contains(&fake.api_key)));
    }
}
