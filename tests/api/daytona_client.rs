//! The Daytona client (src/sandbox/daytona_client/) against the FAKE Daytona
//! (tests/peer/daytona/fake_daytona.py, see daytona_fake.rs): every call both halves of issue 28
//! use, the errors each maps to, and where the key goes (never through a redirect, never to a
//! toolbox on another scheme). Each test's requests then match Daytona's documents.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use agenticos::sandbox::hosts::daytona::client::{
    CreateSandbox, DaytonaClient, DaytonaError, ExecuteRequest, SandboxState,
};
use secrecy::SecretString;
use url::Url;

use crate::daytona_fake::FakeDaytona;

fn client(fake: &FakeDaytona) -> DaytonaClient {
    client_with_key(fake, &fake.api_key)
}

fn client_with_key(fake: &FakeDaytona, key: &str) -> DaytonaClient {
    DaytonaClient::new(
        DaytonaClient::default_http().unwrap(),
        Url::parse(&fake.api_url).unwrap(),
        SecretString::from(key.to_owned()),
    )
    .unwrap()
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn create(name: &str, labels: BTreeMap<String, String>) -> CreateSandbox {
    CreateSandbox { name: Some(name.into()), labels, auto_delete_interval: Some(-1), ..Default::default() }
}

/// A listener that records every request it receives (its head), answering 404.
fn recorder() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(2)));
            let mut buf = [0u8; 8192];
            let n = stream.read(&mut buf).unwrap_or(0);
            log.lock().unwrap().push(String::from_utf8_lossy(&buf[..n]).into_owned());
            let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    (format!("http://{addr}"), seen)
}

#[tokio::test]
async fn daytona_client_sandbox_lifecycle_and_lists() {
    let fake = FakeDaytona::start(&[]);
    let c = client(&fake);
    let mine = labels(&[("agenticos.io/deployment", "d1"), ("agenticos.io/org", "o1")]);
    // By name: 404 before, one sandbox after, 409 for a second create of the name.
    assert!(matches!(c.get_sandbox("dc-client-1").await, Err(DaytonaError::NotFound { .. })));
    let s = c.create_sandbox(&create("dc-client-1", mine.clone())).await.unwrap();
    assert_eq!(s.name, "dc-client-1");
    assert_eq!(s.labels, mine);
    assert_eq!(s.state(), SandboxState::Started);
    let again = c.create_sandbox(&create("dc-client-1", mine.clone())).await.unwrap_err();
    assert!(matches!(&again, DaytonaError::Conflict { message } if message.contains("already exists")), "{again:?}");
    assert_eq!(c.get_sandbox("dc-client-1").await.unwrap().id, s.id);
    assert_eq!(c.get_sandbox(&s.id).await.unwrap().name, "dc-client-1");
    // Stopped, then started again.
    fake.set_sandbox(&s.id, serde_json::json!({"state": "stopped"}));
    assert_eq!(c.get_sandbox(&s.id).await.unwrap().state(), SandboxState::Stopped);
    // Daytona holds a start until the sandbox started (sandbox.controller.ts waitForSandboxStarted).
    assert_eq!(c.start_sandbox(&s.id).await.unwrap().state(), SandboxState::Started);
    // Lists by labels with the cursor: three of ours, one of another organization.
    for n in 2..=3 {
        c.create_sandbox(&create(&format!("dc-client-{n}"), mine.clone())).await.unwrap();
    }
    let other = labels(&[("agenticos.io/deployment", "d1"), ("agenticos.io/org", "o2")]);
    c.create_sandbox(&create("dc-client-other", other)).await.unwrap();
    let page = c.list_sandboxes(&mine, 1, None).await.unwrap();
    assert_eq!(page.items.len(), 1);
    assert!(page.next_cursor.is_some());
    let second = c.list_sandboxes(&mine, 1, page.next_cursor.as_deref()).await.unwrap();
    assert_ne!(second.items[0].id, page.items[0].id);
    let all = c.list_all_sandboxes(&mine, 1000).await.unwrap();
    let mut names: Vec<_> = all.iter().map(|s| s.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["dc-client-1", "dc-client-2", "dc-client-3"]);
    // Snapshots by name (a `/` in it) and a missing one.
    assert_eq!(c.get_snapshot("daytonaio/sandbox:fake").await.unwrap().name, "daytonaio/sandbox:fake");
    assert!(matches!(c.get_snapshot("no-such-snapshot").await, Err(DaytonaError::NotFound { .. })));
    // Delete: accepted, the name is free at once, the sandbox gone after.
    c.delete_sandbox("dc-client-2").await.unwrap();
    assert!(matches!(c.get_sandbox("dc-client-2").await, Err(DaytonaError::NotFound { .. })));
    c.create_sandbox(&create("dc-client-2", mine.clone())).await.unwrap();
    // An unknown snapshot on create is a 400 in Daytona's words.
    let bad = CreateSandbox { snapshot: Some("nope".into()), ..create("dc-client-bad", mine.clone()) };
    let e = c.create_sandbox(&bad).await.unwrap_err();
    assert!(matches!(&e, DaytonaError::Invalid { message, .. } if message.starts_with("Snapshot nope not found")));
    // A wrong key is refused, 503 and 429 keep their meaning.
    let refused = client_with_key(&fake, "wrong").get_sandbox("dc-client-1").await.unwrap_err();
    assert!(matches!(refused, DaytonaError::KeyRefused));
    fake.set_hooks(serde_json::json!({"fail": [
        {"route": "DELETE /sandbox/{sandboxIdOrName}", "status": 503, "times": 3},
        {"route": "GET /sandbox", "status": 429, "retryAfter": 0, "times": 3}
    ]}));
    let down = c.delete_sandbox("dc-client-3").await.unwrap_err();
    assert!(matches!(&down, DaytonaError::Status { status: 503, .. }) && down.is_retryable(), "{down:?}");
    assert!(matches!(c.list_sandboxes(&mine, 10, None).await, Err(DaytonaError::Throttled { .. })));
    fake.assert_log_matches_the_documents();
}

#[tokio::test]
async fn daytona_client_toolbox_files_and_commands() {
    let fake = FakeDaytona::start(&[]);
    let c = client(&fake);
    let s = c.create_sandbox(&create("dc-toolbox-1", BTreeMap::new())).await.unwrap();
    let tb = c.toolbox(&s).await.unwrap();
    // Upload creates parents; download, info and list read it back.
    tb.upload("deep/er/a.txt", b"hello\n").await.unwrap();
    assert_eq!(tb.download("deep/er/a.txt", 1024).await.unwrap(), b"hello\n");
    let info = tb.info("deep/er/a.txt").await.unwrap();
    assert_eq!((info.name.as_str(), info.size, info.is_dir), ("a.txt", Some(6), false));
    let listed = tb.list("deep").await.unwrap();
    assert_eq!(listed.len(), 1);
    assert!(listed[0].is_dir && listed[0].name == "er");
    // Over the limit: refused, not read whole.
    assert!(matches!(tb.download("deep/er/a.txt", 3).await, Err(DaytonaError::Refused(_))));
    // Folders: made with parents; a folder removed only recursively.
    tb.create_folder("x/y/z").await.unwrap();
    assert!(tb.info("x/y/z").await.unwrap().is_dir);
    assert!(matches!(tb.delete("x", false).await, Err(DaytonaError::Invalid { .. })));
    tb.delete("x", true).await.unwrap();
    assert!(matches!(tb.info("x").await, Err(DaytonaError::NotFound { .. })));
    assert!(matches!(tb.download("x/none", 10).await, Err(DaytonaError::NotFound { .. })));
    assert!(matches!(tb.download("deep", 10).await, Err(DaytonaError::Invalid { .. })));
    assert!(matches!(tb.info("/etc/passwd").await, Err(DaytonaError::AccessDenied { .. })));
    // Commands: output and exit code; a timeout is its own error.
    let run = |command: &str, timeout| ExecuteRequest {
        command: command.into(),
        cwd: None,
        envs: BTreeMap::from([("GREETING".to_string(), "hi".to_string())]),
        timeout,
    };
    let out = tb.execute(&run("echo $GREETING; cat deep/er/a.txt; exit 3", 10), 1024).await.unwrap();
    assert_eq!((out.exit(), out.result.as_str(), out.output_limited), (Some(3), "hi\nhello\n", false));
    let cut = tb.execute(&run("echo 0123456789", 10), 4).await.unwrap();
    assert_eq!((cut.exit(), cut.result.as_str(), cut.output_limited), (Some(0), "0123", true));
    assert!(matches!(tb.execute(&run("sleep 5", 1), 1024).await, Err(DaytonaError::RequestTimeout)));
    // An old daemon's empty error bodies map by status alone.
    fake.set_sandbox(&s.id, serde_json::json!({"daemonVersion": "0.190.0"}));
    assert!(matches!(tb.info("none").await, Err(DaytonaError::NotFound { .. })));
    // A stopped sandbox's toolbox refuses: the runner's 400 "no IP address found", read as not
    // running; an archived one's the proxy's 400 "failed to get runner info", a deleted one's 401.
    fake.set_sandbox(&s.id, serde_json::json!({"state": "stopped"}));
    let stopped = tb.info("deep").await.unwrap_err();
    assert!(
        matches!(&stopped, DaytonaError::NotRunning { message } if message.contains("Is the Sandbox started?")),
        "{stopped:?}"
    );
    fake.set_sandbox(&s.id, serde_json::json!({"state": "archived"}));
    assert!(
        matches!(tb.info("deep").await, Err(DaytonaError::NotRunning { message }) if message.starts_with("failed to get runner info"))
    );
    fake.set_sandbox(&s.id, serde_json::json!({"state": "destroyed"}));
    assert!(matches!(tb.info("deep").await, Err(DaytonaError::NotRunning { .. })));
    fake.assert_log_matches_the_documents();
}

#[tokio::test]
async fn daytona_client_never_sends_the_key_elsewhere() {
    let fake = FakeDaytona::start(&[]);
    let c = client(&fake);
    let (elsewhere, seen) = recorder();
    // A redirect from the API is an error, never followed.
    fake.set_hooks(serde_json::json!({"redirect": {"status": 307, "location": format!("{elsewhere}/api/sandbox/x"), "pathPrefix": "/api/sandbox", "times": 1}}));
    let e = c.get_sandbox("anything").await.unwrap_err();
    assert!(matches!(e, DaytonaError::Redirected { status: 307 }), "{e:?}");
    // A toolbox on another host but the API's scheme is the API's word: the key goes there.
    fake.set_hooks(serde_json::json!({"toolboxProxyUrl": format!("{elsewhere}/toolbox")}));
    let s = c.create_sandbox(&create("dc-elsewhere", BTreeMap::new())).await.unwrap();
    let tb = c.toolbox(&s).await.unwrap();
    assert!(matches!(tb.info("a").await, Err(DaytonaError::NotFound { .. })));
    assert_eq!(seen.lock().unwrap().len(), 1);
    // One on another scheme is refused before anything is sent.
    fake.set_hooks(serde_json::json!({"toolboxProxyUrl": "https://127.0.0.1:9/toolbox"}));
    let s = c.create_sandbox(&create("dc-other-scheme", BTreeMap::new())).await.unwrap();
    assert!(matches!(c.toolbox(&s).await, Err(DaytonaError::ToolboxRefused { .. })));
    fake.set_hooks(serde_json::json!({"toolboxProxyUrl": null, "redirect": null}));
    // Nothing but that one toolbox call reached the other listener.
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].starts_with("GET /toolbox/"), "{}", seen[0]);
    assert!(!format!("{e:?}{e}").contains(&fake.api_key));
}

/// Many sandboxes destroyed at once (the orphan purge's helper): each deleted and confirmed gone,
/// one already gone counted as done, each outcome in the order asked.
#[tokio::test]
async fn daytona_sandboxes_are_destroyed_many_at_a_time() {
    let fake = FakeDaytona::start(&[]);
    let c = client(&fake);
    let mut ids = Vec::new();
    for n in 0..12 {
        ids.push(c.create_sandbox(&create(&format!("dc-many-{n}"), BTreeMap::new())).await.unwrap().id);
    }
    ids.push("never-existed".to_string());
    let outcomes = agenticos::sandbox::hosts::daytona::tombstones::destroy_many(&c, &ids).await;
    assert_eq!(outcomes.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>(), ids);
    assert!(outcomes.iter().all(|(_, o)| o.is_ok()), "{outcomes:?}");
    for id in &ids {
        assert!(matches!(c.get_sandbox(id).await, Err(DaytonaError::NotFound { .. })), "{id} still there");
    }
    fake.assert_log_matches_the_documents();
}
