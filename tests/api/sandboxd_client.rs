//! The sandboxd client against the real sandboxd (the peer in `tests/peer/`),
//! and against small local servers for what a real host never does.

// Tests may panic on what they did not expect.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::peer::{self, free_port, Peer, PeerOptions};
use agenticos::sandbox::hosts::sandboxd::client::{
    required_routes, FileErrorKind, OpenSession, PolicyUpdate, RunOutcome, RunRequest, SandboxdClient, SandboxdError,
    SessionState, Timeouts, TreeOptions, OPEN_WAIT,
};
use secrecy::{ExposeSecret as _, SecretString};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::OnceCell;
use url::Url;

// ---------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------

fn client_for(peer: &Peer) -> SandboxdClient {
    client_at(&peer.url, &peer.token)
}

fn client_at(url: &str, token: &str) -> SandboxdClient {
    SandboxdClient::new(
        SandboxdClient::default_http().expect("http client"),
        Url::parse(url).expect("url"),
        SecretString::from(token.to_owned()),
    )
}

/// The same host through both ways a call can travel: reqwest (the client given to
/// [`SandboxdClient::new`]), and the console's keep-alive connection of the calling thread
/// ([`SandboxdClient::with_thread_pools`]: hyper's connection API for a plain `http://` host).
fn both_transports(url: &str, token: &str) -> [(&'static str, SandboxdClient); 2] {
    [("reqwest", client_at(url, token)), ("thread connection", client_at(url, token).with_thread_pools())]
}

/// A session id no other test uses.
fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", &uuid::Uuid::new_v4().simple().to_string()[..12])
}

async fn open(client: &SandboxdClient, id: &str) -> agenticos::sandbox::hosts::sandboxd::client::SessionCreated {
    client
        .open_session(&OpenSession::named(id), OPEN_WAIT)
        .await
        .unwrap_or_else(|e| panic!("opening {id}: {e} ({e:?})"))
}

/// Polls `check` (with a short growing pause) until it yields, for at most `limit`.
async fn eventually<T, F, Fut>(limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + limit;
    let mut pause = Duration::from_millis(10);
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(Instant::now() < deadline, "condition not met within {limit:?}");
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(200));
    }
}

/// The peer of this binary that lacks two routes, as an older host would.
const DROPPED: [&str; 2] = ["/sessions/{session_id}/files/read", "/workspaces/trees"];

async fn route_dropped_peer() -> &'static Peer {
    static PEER: OnceCell<Peer> = OnceCell::const_new();
    PEER.get_or_init(|| async {
        let mut options = PeerOptions::default();
        for route in DROPPED {
            options = options.drop_route(route);
        }
        Peer::start(options).await.unwrap_or_else(|e| panic!("{e:#}"))
    })
    .await
}

/// The address as the peer's URL names it, and as a message must not.
fn address_of(peer: &Peer) -> String {
    format!("127.0.0.1:{}", peer.port())
}

fn assert_clean(message: &str, peer: &Peer) {
    assert!(!message.contains(&address_of(peer)), "address in {message:?}");
    assert!(!message.contains(&peer.token), "token in {message:?}");
    assert!(!message.contains("127.0.0.1"), "address in {message:?}");
}

/// A local HTTP server answering every request with what `answer` returns
/// for its request line; it records each request's head.
struct FakeHost {
    url: String,
    heads: Arc<Mutex<Vec<String>>>,
}

async fn fake_host(answer: fn(&str) -> String) -> FakeHost {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = heads.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                let mut chunk = [0u8; 4096];
                let head_end = loop {
                    let Ok(n) = stream.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buffer.extend_from_slice(&chunk[..n]);
                    if let Some(i) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
                let length = head
                    .lines()
                    .find_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length").then(|| value.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                while buffer.len() < head_end + length {
                    let Ok(n) = stream.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        break;
                    }
                    buffer.extend_from_slice(&chunk[..n]);
                }
                let request_line = head.lines().next().unwrap_or_default().to_owned();
                seen.lock().expect("lock").push(head);
                let _ = stream.write_all(answer(&request_line).as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    FakeHost { url, heads }
}

fn http(status: &str, content_type: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

// ---------------------------------------------------------------------------
// the service
// ---------------------------------------------------------------------------

#[tokio::test]
async fn health_and_index_answer_without_a_token() {
    let peer = peer::shared().await;
    let client = client_at(&peer.url, "not-the-token");

    let health = client.health().await.expect("health");
    assert_eq!(health.status, "ok");
    assert_eq!(health.runtimes, ["python", "workbench"]);

    let index = client.index().await.expect("index");
    assert_eq!(index.service, "sandboxd");
    assert_eq!(index.health.status, "ok");
    assert!(index.endpoints.iter().any(|e| e == "/workspaces/trees"));
}

#[tokio::test]
async fn the_pinned_release_serves_every_route_this_client_calls() {
    let client = client_for(peer::shared().await);
    assert_eq!(client.missing_routes().await.expect("index"), Vec::<String>::new());
    client.check_version().await.expect("same version");
    assert_eq!(client.expected_version(), "0.2.37");
}

#[tokio::test]
async fn policy_reports_runtimes_and_native_files() {
    let client = client_for(peer::shared().await);
    let policy = client.policy().await.expect("policy");
    assert_eq!(policy.default_runtime, "workbench");
    let aliases: Vec<&str> = policy.runtimes.iter().map(|r| r.alias.as_str()).collect();
    assert_eq!(aliases, ["python", "workbench"]);
    assert!(policy.native_files && policy.native_writes && policy.native_realpath);
    assert_eq!(policy.work_dir, "/workspace");
    assert_eq!(policy.execute_timeout, 300);
}

// ---------------------------------------------------------------------------
// sessions
// ---------------------------------------------------------------------------

#[tokio::test]
async fn opening_with_a_tenant_and_reuse_returns_the_same_session() {
    let client = client_for(peer::shared().await);
    let id = unique("open");
    let tenant = unique("acme");

    let request = OpenSession::named(&id).tenant(&tenant).runtime("python");
    let first = client.open_session(&request, OPEN_WAIT).await.expect("open");
    assert_eq!(first.session.session_id, id);
    assert_eq!(first.session.tenant.as_deref(), Some(tenant.as_str()));
    assert_eq!(first.session.runtime, "python");
    assert!(first.session.alive);
    assert_eq!(first.session.state, SessionState::Running);
    assert_eq!(first.token.expose_secret().len(), 43);

    let again = client.open_session(&request, OPEN_WAIT).await.expect("reuse");
    assert_eq!(again.token.expose_secret(), first.token.expose_secret());

    let fresh = OpenSession { reuse: false, ..request.clone() };
    match client.open_session(&fresh, OPEN_WAIT).await {
        Err(SandboxdError::Conflict { detail }) => {
            assert_eq!(detail, format!("Session exists: {id}"))
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    let other_runtime = OpenSession::named(&id).runtime("workbench");
    match client.open_session(&other_runtime, OPEN_WAIT).await {
        Err(SandboxdError::Conflict { detail }) => {
            assert!(detail.contains("is open on runtime 'python'"), "{detail}")
        }
        other => panic!("expected a runtime conflict, got {other:?}"),
    }

    let info = client.session(&id, true).await.expect("session");
    assert_eq!(info.tenant.as_deref(), Some(tenant.as_str()));
    assert!(info.usage.is_some());
    let listed = client.sessions(false).await.expect("sessions");
    assert!(listed.sessions.iter().any(|s| s.session_id == id));

    // A server-chosen id.
    let anonymous = client.open_session(&OpenSession::default(), OPEN_WAIT).await.expect("open without id");
    assert!(anonymous.session.session_id.starts_with("s-"));

    for gone in [&id, &anonymous.session.session_id] {
        client.delete_session(gone, true).await.expect("delete");
    }
}

#[tokio::test]
async fn invalid_requests_come_back_in_words() {
    let client = client_for(peer::shared().await);
    let unknown_runtime = OpenSession::named(unique("rt")).runtime("node");
    match client.open_session(&unknown_runtime, OPEN_WAIT).await {
        Err(SandboxdError::Invalid { detail }) => {
            assert_eq!(detail, "Unknown runtime 'node'. Allowed: python, workbench")
        }
        other => panic!("expected invalid, got {other:?}"),
    }
    // Refused before sending: ".." would otherwise vanish from the URL path.
    for bad in ["..", "a/b", "bad id"] {
        match client.session(bad, false).await {
            Err(SandboxdError::Invalid { detail }) => {
                assert!(detail.contains("is not a session id"))
            }
            other => panic!("expected invalid for {bad:?}, got {other:?}"),
        }
    }
    match client.run("x", &RunRequest::new(Vec::<String>::new())).await {
        Err(SandboxdError::Invalid { .. }) => {}
        other => panic!("expected invalid, got {other:?}"),
    }
}

#[tokio::test]
async fn an_unknown_session_is_not_found() {
    let client = client_for(peer::shared().await);
    match client.session("nope-never-opened", false).await {
        Err(SandboxdError::NotFound { detail }) => {
            assert_eq!(detail, "No such session: nope-never-opened")
        }
        other => panic!("expected not found, got {other:?}"),
    }
    match client.run("nope-never-opened", &RunRequest::new(["true"])).await {
        Err(SandboxdError::NotFound { detail }) => {
            assert_eq!(detail, "No such session: nope-never-opened")
        }
        other => panic!("expected not found, got {other:?}"),
    }
    match client.open_session(&OpenSession::attach("nope-never-opened"), OPEN_WAIT).await {
        Err(SandboxdError::NotFound { detail }) => {
            assert_eq!(detail, "Nothing to attach to: nope-never-opened")
        }
        other => panic!("expected not found, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// commands
// ---------------------------------------------------------------------------

#[tokio::test]
async fn run_reports_exit_codes_output_env_and_timeouts() {
    let client = client_for(peer::shared().await);
    let id = unique("run");
    open(&client, &id).await;

    let out = client.run(&id, &RunRequest::new(["echo", "hi"])).await.expect("run");
    assert_eq!(out.stdout, "hi\n");
    assert_eq!(out.outcome(), RunOutcome::Exited(0));

    let out = client.run(&id, &RunRequest::shell("echo partial; echo oops >&2; exit 3")).await.expect("run");
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("partial\n", "oops\n"));
    assert_eq!(out.outcome(), RunOutcome::Exited(3));

    let out = client
        .run(&id, &RunRequest::shell("pwd -P; echo $GREETING").env("GREETING", "hello from env"))
        .await
        .expect("run");
    assert_eq!(out.stdout, "/workspace\nhello from env\n");

    let out = client.run(&id, &RunRequest::new(["no-such-program"])).await.expect("run");
    assert_eq!(out.outcome(), RunOutcome::Exited(127));

    let out = client
        .run(&id, &RunRequest::shell("echo start; sleep 5; echo never").timeout(Duration::from_secs(1)))
        .await
        .expect("run");
    assert_eq!(out.outcome(), RunOutcome::TimedOut);
    assert_eq!(out.stdout, "start\n");

    client.delete_session(&id, true).await.expect("delete");
}

#[tokio::test]
async fn a_running_command_can_be_stopped_and_a_cancelled_one_is_stopped() {
    let client = client_for(peer::shared().await);
    let id = unique("stop");
    open(&client, &id).await;
    let started = |marker: &'static str| {
        let client = client.clone();
        let id = id.clone();
        async move {
            eventually(Duration::from_secs(10), || {
                let client = client.clone();
                let id = id.clone();
                async move { client.stat(&id, marker).await.ok() }
            })
            .await
        }
    };

    // Stopped from another request: the run answers 143.
    let request = RunRequest::shell("touch /workspace/one; sleep 30").timeout(Duration::from_secs(60));
    let run = client.run(&id, &request);
    tokio::pin!(run);
    tokio::select! {
        early = &mut run => panic!("finished before it was stopped: {early:?}"),
        _ = started("/workspace/one") => {}
    }
    client.stop_run(&id, &request.run_id).await.expect("stop");
    let out = run.await.expect("run");
    assert_eq!(out.outcome(), RunOutcome::Exited(143));

    // Dropped while it runs: the client stops it on the host.
    let request = RunRequest::shell("touch /workspace/two; sleep 31").timeout(Duration::from_secs(60));
    let run = Box::pin(client.run(&id, &request));
    let mut run = Some(run);
    tokio::select! {
        early = run.as_mut().expect("run") => panic!("finished before it was dropped: {early:?}"),
        _ = started("/workspace/two") => {}
    }
    drop(run.take());
    let event = eventually(Duration::from_secs(10), || {
        let client = client.clone();
        let id = id.clone();
        async move {
            let events = client.events(&id, 0).await.ok()?;
            events.events.into_iter().find(|e| e.target.contains("sleep 31"))
        }
    })
    .await;
    assert_eq!(event.detail, "exit 143");

    client.delete_session(&id, true).await.expect("delete");
}

#[tokio::test]
async fn events_after_a_sequence_number_list_only_later_operations() {
    let client = client_for(peer::shared().await);
    let id = unique("events");
    open(&client, &id).await;

    client.run(&id, &RunRequest::new(["echo", "one"])).await.expect("run");
    client.write_file(&id, "/workspace/e.txt", b"x").await.expect("write");
    client.run(&id, &RunRequest::shell("exit 2")).await.expect("run");

    let all = client.events(&id, 0).await.expect("events");
    assert_eq!(all.latest_seq, 3);
    let seqs: Vec<u64> = all.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [1, 2, 3]);
    assert_eq!(all.events[0].op, agenticos::sandbox::hosts::sandboxd::client::EventOp::Run);
    assert_eq!(all.events[0].target, "echo one");
    assert_eq!(all.events[1].op, agenticos::sandbox::hosts::sandboxd::client::EventOp::Write);
    assert!(!all.events[2].ok);
    assert_eq!(all.events[2].detail, "exit 2");

    let later = client.events(&id, 1).await.expect("events");
    let seqs: Vec<u64> = later.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [2, 3]);
    let none = client.events(&id, all.latest_seq).await.expect("events");
    assert!(none.events.is_empty());
    assert_eq!(none.latest_seq, 3);

    client.delete_session(&id, true).await.expect("delete");
}

// ---------------------------------------------------------------------------
// files
// ---------------------------------------------------------------------------

#[tokio::test]
async fn native_file_operations_round_trip() {
    let peer = peer::shared().await;
    for (way, client) in both_transports(&peer.url, &peer.token) {
        native_round_trip(way, &client).await;
    }
}

async fn native_round_trip(way: &str, client: &SandboxdClient) {
    let id = unique("files");
    eprintln!("native file operations through {way}");
    open(client, &id).await;
    let bytes: Vec<u8> = (0u8..=255).chain(*b"\nline two\n").collect();

    client.write_file(&id, "/workspace/notes/todo.bin", &bytes).await.expect("write");
    assert_eq!(client.read_file(&id, "/workspace/notes/todo.bin").await.expect("read"), bytes);

    client.mkdir(&id, "/workspace/build/out").await.expect("mkdir");
    let listing = client.list(&id, "/workspace").await.expect("list");
    let names: Vec<(&str, &str, bool)> = listing.iter().map(|e| (e.name.as_str(), e.path.as_str(), e.is_dir)).collect();
    assert_eq!(names, [("build", "/workspace/build", true), ("notes", "/workspace/notes", true)]);

    let stat = client.stat(&id, "/workspace/notes/todo.bin").await.expect("stat");
    assert_eq!(stat.size, Some(bytes.len() as u64));
    assert!(!stat.is_dir);
    assert_eq!(stat.modified_at, None);
    assert_eq!(client.realpath(&id, "/workspace/notes/todo.bin").await.expect("realpath"), "/workspace/notes/todo.bin");

    client.remove(&id, "/workspace/build").await.expect("remove");
    let listing = client.list(&id, "/workspace").await.expect("list");
    assert_eq!(listing.len(), 1);

    // The shell sees what the native routes wrote.
    let out = client.run(&id, &RunRequest::shell("wc -c < /workspace/notes/todo.bin")).await.expect("run");
    assert_eq!(out.stdout.trim(), bytes.len().to_string());

    client.delete_session(&id, true).await.expect("delete");
}

#[tokio::test]
async fn native_file_errors_keep_the_hosts_words() {
    let client = client_for(peer::shared().await);
    let id = unique("ferr");
    open(&client, &id).await;
    client.mkdir(&id, "/workspace/notes").await.expect("mkdir");

    match client.read_file(&id, "/workspace/missing.txt").await {
        Err(SandboxdError::File { kind: FileErrorKind::NotFound, message }) => {
            assert_eq!(message, "[Errno 2] No such file or directory: 'missing.txt'")
        }
        other => panic!("expected a missing file, got {other:?}"),
    }
    match client.read_file(&id, "notes/todo.txt").await {
        Err(SandboxdError::File { kind: FileErrorKind::InvalidPath, message }) => {
            assert_eq!(message, "path must be absolute: 'notes/todo.txt'")
        }
        other => panic!("expected an invalid path, got {other:?}"),
    }
    match client.read_file(&id, "/workspace/notes").await {
        Err(error @ SandboxdError::File { kind: FileErrorKind::IsADirectory, .. }) => {
            assert_eq!(error.to_string(), "notes is a directory")
        }
        other => panic!("expected a directory, got {other:?}"),
    }
    match client.read_file(&id, "/etc/passwd").await {
        Err(SandboxdError::NotNative { detail }) => {
            assert_eq!(detail, "/etc/passwd is outside the work directory")
        }
        other => panic!("expected a hand-back, got {other:?}"),
    }
    match client.remove(&id, "/workspace").await {
        Err(SandboxdError::File { kind: FileErrorKind::InvalidPath, message }) => {
            assert_eq!(message, "refusing to remove the working directory")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    client.delete_session(&id, true).await.expect("delete");
}

#[tokio::test]
async fn stored_workspaces_are_read_without_a_sandbox() {
    let client = client_for(peer::shared().await);
    let id = unique("ws");
    let other = unique("ws-other");
    open(&client, &id).await;
    open(&client, &other).await;
    client.write_file(&id, "/workspace/notes/todo.txt", b"line one\nline two\nline three\n").await.expect("write");
    client.write_file(&id, "/workspace/a/b/c/d/e.txt", b"deep\n").await.expect("write");
    let png = b"\x89PNG\r\n\x1a\n\x00\x01";
    client.write_file(&id, "/workspace/chart.png", png).await.expect("write");

    let ls = client.workspace_ls(&id, ".").await.expect("ls");
    let names: Vec<&str> = ls.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["a", "notes", "chart.png"]);
    assert!(ls[2].modified_at.is_some());

    let tree = client.workspace_tree(&id, &TreeOptions::default()).await.expect("tree");
    assert!(!tree.truncated);
    let paths: Vec<&str> = tree.entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["a", "notes", "chart.png", "a/b", "notes/todo.txt", "a/b/c", "a/b/c/d", "a/b/c/d/e.txt"]);
    let shallow = TreeOptions { max_depth: 1, ..TreeOptions::default() };
    let tree = client.workspace_tree(&id, &shallow).await.expect("tree");
    assert!(tree.truncated);
    assert_eq!(tree.entries.len(), 3);

    let ghost = unique("ghost");
    let notes = TreeOptions { path: "notes".to_owned(), max_depth: 1, ..TreeOptions::default() };
    let results = client.workspace_trees(&[id.as_str(), other.as_str(), ghost.as_str()], &notes).await.expect("trees");
    assert_eq!(results.len(), 3);
    let first = results[0].result().expect("first tree");
    assert_eq!(first.entries[0].path, "notes/todo.txt");
    match results[1].result() {
        Err(SandboxdError::NotFound { detail }) => assert_eq!(detail, "No such directory: notes"),
        other => panic!("expected no directory, got {other:?}"),
    }
    match results[2].result() {
        Err(SandboxdError::NotFound { detail }) => {
            assert_eq!(detail, format!("No workspace for session: {ghost}"))
        }
        other => panic!("expected no workspace, got {other:?}"),
    }

    let text = client.workspace_read(&id, "notes/todo.txt", 1, 1).await.expect("read");
    assert_eq!(text, "line two\n\n[... 1 more lines. Use offset=2 to read more.]");
    let text = client.workspace_read(&id, "/workspace/notes/todo.txt", 0, 2000).await.expect("read");
    assert_eq!(text, "line one\nline two\nline three");
    assert_eq!(client.workspace_read_bytes(&id, "chart.png").await.expect("bytes"), png);
    match client.workspace_read(&id, "nope.txt", 0, 10).await {
        Err(SandboxdError::NotFound { detail }) => assert_eq!(detail, "No such file: nope.txt"),
        other => panic!("expected no file, got {other:?}"),
    }
    match client.workspace_read(&id, "../x/workspace/y", 0, 10).await {
        Err(SandboxdError::Invalid { detail }) => {
            assert!(detail.contains("is outside the workspace"))
        }
        other => panic!("expected outside, got {other:?}"),
    }

    for gone in [&id, &other] {
        client.delete_session(gone, true).await.expect("delete");
    }
}

#[tokio::test]
async fn closing_keeps_files_and_purging_removes_them() {
    let peer = peer::shared().await;
    let client = client_for(peer);
    let id = unique("purge");
    open(&client, &id).await;
    client.write_file(&id, "/workspace/kept.txt", b"kept").await.expect("write");

    client.delete_session(&id, false).await.expect("close");
    assert!(peer.workspace_root.join(&id).join("workspace/kept.txt").is_file());
    let tree = client.workspace_tree(&id, &TreeOptions::default()).await.expect("tree after close");
    assert_eq!(tree.entries[0].name, "kept.txt");
    match client.session(&id, false).await {
        Err(SandboxdError::NotFound { .. }) => {}
        other => panic!("expected a closed session, got {other:?}"),
    }

    let attached = client.open_session(&OpenSession::attach(&id), OPEN_WAIT).await.expect("attach after close");
    assert_eq!(attached.session.session_id, id);
    assert_eq!(client.read_file(&id, "/workspace/kept.txt").await.expect("read"), b"kept");

    client.delete_session(&id, true).await.expect("purge");
    assert!(!peer.workspace_root.join(&id).exists());
    match client.workspace_tree(&id, &TreeOptions::default()).await {
        Err(SandboxdError::NotFound { detail }) => {
            assert_eq!(detail, format!("No workspace for session: {id}"))
        }
        other => panic!("expected no workspace, got {other:?}"),
    }
    match client.open_session(&OpenSession::attach(&id), OPEN_WAIT).await {
        Err(SandboxdError::NotFound { detail }) => {
            assert_eq!(detail, format!("Nothing to attach to: {id}"))
        }
        other => panic!("expected nothing to attach to, got {other:?}"),
    }
    match client.delete_session(&id, true).await {
        Err(SandboxdError::NotFound { .. }) => {}
        other => panic!("expected already gone, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// credentials
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_wrong_token_is_refused_without_showing_it() {
    let peer = peer::shared().await;
    for (way, client) in both_transports(&peer.url, "wrong-token-123") {
        eprintln!("through {way}");
        refused_without_showing_it(peer, &client).await;
    }
}

async fn refused_without_showing_it(peer: &Peer, client: &SandboxdClient) {
    for result in [
        client.policy().await.map(|_| ()),
        client.sessions(false).await.map(|_| ()),
        client.open_session(&OpenSession::named(unique("x")), OPEN_WAIT).await.map(|_| ()),
        client.session("nope", false).await.map(|_| ()),
    ] {
        let error = result.expect_err("refused");
        assert!(matches!(error, SandboxdError::CredentialRefused), "{error:?}");
        assert_clean(&error.to_string(), peer);
        assert!(!format!("{error:?}").contains("wrong-token-123"));
    }
    assert!(!format!("{client:?}").contains("wrong-token-123"));
}

#[tokio::test]
async fn a_session_token_works_on_its_own_session_only() {
    let peer = peer::shared().await;
    let service = client_for(peer);
    let mine = unique("tok");
    let theirs = unique("tok-other");
    let created = open(&service, &mine).await;
    open(&service, &theirs).await;

    let session_client = service.with_token(created.token.clone());
    let out = session_client.run(&mine, &RunRequest::new(["echo", "mine"])).await.expect("run");
    assert_eq!(out.stdout, "mine\n");
    assert!(matches!(session_client.session(&theirs, false).await, Err(SandboxdError::CredentialRefused)));
    assert!(matches!(session_client.policy().await, Err(SandboxdError::CredentialRefused)));

    session_client.delete_session(&mine, true).await.expect("delete own");
    // A closed session's token is refused, not "not found".
    assert!(matches!(session_client.session(&mine, false).await, Err(SandboxdError::CredentialRefused)));
    service.delete_session(&theirs, true).await.expect("delete");
}

// ---------------------------------------------------------------------------
// addresses that are not a sandboxd
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_port_serving_html_is_not_a_sandbox_service() {
    let host = fake_host(|line| {
        if line.starts_with("GET /healthz") {
            http("200 OK", "text/html", "<html><body>Welcome to nginx!</body></html>")
        } else {
            http("404 Not Found", "text/html", "<html><body>404</body></html>")
        }
    })
    .await;
    for (way, client) in both_transports(&host.url, "some-token") {
        for error in [
            client.health().await.map(|_| ()).expect_err("html"),
            client.policy().await.map(|_| ()).expect_err("html 404"),
            client.session("x", false).await.map(|_| ()).expect_err("html 404"),
        ] {
            assert!(matches!(error, SandboxdError::NotJson), "{way}: {error:?}");
            assert_eq!(error.to_string(), "The address answered, but not like a sandbox service — check the port");
        }
    }
    // The token went only as the header.
    let heads = host.heads.lock().expect("lock").clone();
    assert!(heads.iter().any(|h| h.contains("x-sandbox-token: some-token")));
    assert!(heads.iter().all(|h| !h.lines().next().unwrap_or_default().contains("some-token")));
}

#[tokio::test]
async fn a_closed_port_is_unreachable() {
    let port = free_port().expect("port");
    for (way, client) in both_transports(&format!("http://127.0.0.1:{port}"), "tok") {
        let error = client.health().await.expect_err("closed");
        assert!(matches!(error, SandboxdError::Unreachable { .. }), "{way}: {error:?}");
        assert_eq!(error.to_string(), "The sandbox service did not answer");
        assert!(!format!("{error:?}").contains(&port.to_string()), "{way}: {error:?}");
    }
}

#[tokio::test]
async fn a_silent_port_times_out() {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    // Accepts and never answers.
    let _held = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    for (way, client) in both_transports(&url, "tok") {
        let client = client.with_timeouts(Timeouts { read: Duration::from_millis(300), ..Timeouts::default() });
        let started = Instant::now();
        let error = client.health().await.expect_err("silent");
        assert!(matches!(error, SandboxdError::Timeout), "{way}: {error:?}");
        assert_eq!(error.to_string(), "The sandbox service did not answer in time");
        assert!(started.elapsed() < Duration::from_secs(5), "{way}: the deadline was not kept");
    }
}

/// A local HTTP/1.1 server that keeps connections open, answering `GET /healthz` with a health
/// document as long as the client asks on the same connection, and closing a connection (with
/// `connection: close`, or silently when `announce` is false) after `close_after` answers. It
/// counts the connections it accepted.
async fn keep_alive_host(close_after: usize, announce: bool) -> (String, Arc<Mutex<usize>>) {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let accepted = Arc::new(Mutex::new(0usize));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            *count.lock().expect("lock") += 1;
            tokio::spawn(async move {
                let body = r#"{"status":"ok","sessions":0,"limit":null,"open_sessions":0,"open_limit":null,"runtimes":["python"]}"#;
                let mut buffer = Vec::new();
                let mut chunk = [0u8; 4096];
                for answered in 1.. {
                    // Requests without a body: one head per request.
                    let end = loop {
                        if let Some(i) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                        }
                    };
                    buffer.drain(..end);
                    let last = answered == close_after;
                    let connection = if last && announce { "close" } else { "keep-alive" };
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: {connection}\r\n\r\n{body}",
                        body.len()
                    );
                    if stream.write_all(answer.as_bytes()).await.is_err() || last {
                        return;
                    }
                }
            });
        }
    });
    (url, accepted)
}

#[tokio::test]
async fn the_thread_connection_is_kept_between_calls_and_replaced_when_the_host_closes_it() {
    // Kept: five calls, one connection.
    let (url, accepted) = keep_alive_host(usize::MAX, true).await;
    let client = client_at(&url, "tok").with_thread_pools();
    for _ in 0..5 {
        assert_eq!(client.health().await.expect("health").status, "ok");
    }
    assert_eq!(*accepted.lock().expect("lock"), 1, "every call should reuse the kept connection");

    // Closed by the host after every second answer: the next call opens a new one.
    let (url, accepted) = keep_alive_host(2, true).await;
    let client = client_at(&url, "tok").with_thread_pools();
    for _ in 0..6 {
        assert_eq!(client.health().await.expect("health").status, "ok");
    }
    assert_eq!(*accepted.lock().expect("lock"), 3);

    // Closed after every answer without saying so (as a host restarting, or closing an idle
    // connection, does): no call fails, each goes out on a new connection.
    let (url, accepted) = keep_alive_host(1, false).await;
    let client = client_at(&url, "tok").with_thread_pools();
    for _ in 0..4 {
        assert_eq!(client.health().await.expect("health after a silent close").status, "ok");
    }
    assert_eq!(*accepted.lock().expect("lock"), 4);
}

#[tokio::test]
async fn redirects_are_not_followed_so_the_token_stays_home() {
    let elsewhere = fake_host(|_| http("200 OK", "application/json", r#"{"status":"ok"}"#)).await;
    // The redirect target is fixed at compile time of the closure: a static.
    static TARGET: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TARGET.get_or_init(|| elsewhere.url.clone());
    let redirecting = fake_host(|_| {
        let target = TARGET.get().cloned().unwrap_or_default();
        format!("HTTP/1.1 302 Found\r\nlocation: {target}/policy\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
    })
    .await;
    for (way, client) in both_transports(&redirecting.url, "secret-token-abc") {
        let error = client.policy().await.expect_err("redirect");
        assert!(matches!(error, SandboxdError::NotJson), "{way}: {error:?}");
    }
    assert_eq!(redirecting.heads.lock().expect("lock").len(), 2);
    assert!(elsewhere.heads.lock().expect("lock").is_empty());
}

#[tokio::test]
async fn a_bare_not_found_with_an_unreadable_index_keeps_its_error() {
    let host = fake_host(|line| {
        if line.starts_with("GET / ") {
            http("500 Internal Server Error", "text/plain", "boom")
        } else {
            http("404 Not Found", "application/json", r#"{"detail":"Not Found"}"#)
        }
    })
    .await;
    for (way, client) in both_transports(&host.url, "tok") {
        // Another FastAPI app on the port: every sandboxd serves /healthz.
        assert!(matches!(client.health().await, Err(SandboxdError::NotJson)), "{way}");
        match client.workspace_trees(&["a"], &TreeOptions::default()).await {
            Err(SandboxdError::NotFound { detail }) => assert_eq!(detail, "Not Found"),
            other => panic!("{way}: expected the original 404, got {other:?}"),
        }
    }
    let heads = host.heads.lock().expect("lock").clone();
    assert!(heads.iter().any(|h| h.starts_with("GET / ")), "the index was asked");
}

// ---------------------------------------------------------------------------
// capacity
// ---------------------------------------------------------------------------

#[tokio::test]
async fn the_tenant_cap_is_capacity_in_the_hosts_words() {
    let peer = Peer::start(PeerOptions::default().env("SANDBOXD_MAX_SESSIONS_PER_TENANT", "1"))
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
    let client = client_for(&peer);

    let policy = client.policy().await.expect("policy");
    assert_eq!(policy.max_sessions_per_tenant, Some(1));
    open_for(&client, "one", "acme").await.expect("first of the tenant");
    let error = open_for(&client, "two", "acme").await.expect_err("over the cap");
    match &error {
        SandboxdError::Capacity { detail } => assert_eq!(
            detail,
            "Tenant 'acme' already holds 1 of 1 sessions. Release an idle session before opening another."
        ),
        other => panic!("expected capacity, got {other:?}"),
    }
    assert_eq!(
        error.to_string(),
        "Tenant 'acme' already holds 1 of 1 sessions. Release an idle session before opening another."
    );
    assert_eq!(error.status(), Some(429));
    open_for(&client, "three", "other").await.expect("another tenant");

    // An explicit null lifts the cap.
    let update = PolicyUpdate { max_sessions_per_tenant: Some(None), ..PolicyUpdate::default() };
    let policy = client.update_policy(&update).await.expect("update");
    assert_eq!(policy.max_sessions_per_tenant, None);
    assert_eq!(policy.execute_timeout, 300, "absent fields are left alone");
    open_for(&client, "two", "acme").await.expect("cap lifted");
    let listed = client.sessions(false).await.expect("sessions");
    assert_eq!(listed.sessions.len(), 3);
    assert_eq!(listed.tenant_limit, None);
}

async fn open_for(
    client: &SandboxdClient,
    id: &str,
    tenant: &str,
) -> Result<agenticos::sandbox::hosts::sandboxd::client::SessionCreated, SandboxdError> {
    client.open_session(&OpenSession::named(id).tenant(tenant), OPEN_WAIT).await
}

// ---------------------------------------------------------------------------
// version mismatch
// ---------------------------------------------------------------------------

/// Everything this test binary logged (one process-wide subscriber, see `helpers`).
struct Captured;

impl Captured {
    fn text(&self) -> String {
        crate::helpers::captured_logs()
    }
}

fn captured_warnings() -> &'static Captured {
    crate::helpers::captured_logs();
    &Captured
}

#[tokio::test]
async fn a_host_without_routes_is_a_version_mismatch_naming_them() {
    let logs = captured_warnings();
    // A peer of its own, so its address marks this test's log lines.
    let mut options = PeerOptions::default();
    for route in DROPPED {
        options = options.drop_route(route);
    }
    let peer = &Peer::start(options).await.unwrap_or_else(|e| panic!("{e:#}"));

    let client = client_for(peer).with_expected_version("0.2.37");
    let id = unique("old");
    open(&client, &id).await;
    let expected_missing: Vec<String> =
        required_routes().into_iter().filter(|r| DROPPED.contains(&r.as_str())).collect();
    assert_eq!(expected_missing.len(), 2);

    let error = client.workspace_trees(&[id.as_str()], &TreeOptions::default()).await.expect_err("trees is gone");
    match &error {
        SandboxdError::VersionMismatch { missing, expected } => {
            assert_eq!(missing, &expected_missing);
            assert_eq!(expected, "0.2.37");
        }
        other => panic!("expected a version mismatch, got {other:?}"),
    }
    let message = error.to_string();
    assert_eq!(
        message,
        "The sandbox service does not serve /sessions/{session_id}/files/read, /workspaces/trees - its version does not match this platform (expected 0.2.37). Run ghcr.io/vstorm-co/sandboxd:0.2.37 and redeploy it"
    );
    assert_clean(&message, peer);
    assert_clean(&format!("{error:?}"), peer);

    // The other missing route, from a live session.
    client.write_file(&id, "/workspace/a.txt", b"a").await.expect("write still there");
    match client.read_file(&id, "/workspace/a.txt").await {
        Err(SandboxdError::VersionMismatch { missing, .. }) => {
            assert_eq!(missing, expected_missing)
        }
        other => panic!("expected a version mismatch, got {other:?}"),
    }
    assert!(matches!(client.check_version().await, Err(SandboxdError::VersionMismatch { .. })));

    // Logged with the address, once for this client however often it happens.
    let all = logs.text();
    let address = address_of(peer);
    let mine: Vec<&str> = all.lines().filter(|l| l.contains(&address)).collect();
    assert_eq!(mine.len(), 1, "{all}");
    assert!(mine[0].contains("WARN"), "{all}");
    assert!(mine[0].contains("sandboxd_version_mismatch"), "{all}");
    assert!(mine[0].contains("/workspaces/trees"), "{all}");
    assert!(!all.contains(&peer.token), "{all}");

    client.delete_session(&id, true).await.expect("delete");
}

#[tokio::test]
async fn the_hosts_own_not_found_is_not_a_version_mismatch() {
    let client = client_for(route_dropped_peer().await);
    match client.session("nope-never-opened", false).await {
        Err(SandboxdError::NotFound { detail }) => {
            assert_eq!(detail, "No such session: nope-never-opened")
        }
        other => panic!("expected not found, got {other:?}"),
    }
    match client.workspace_tree("ghost-never", &TreeOptions::default()).await {
        Err(SandboxdError::NotFound { detail }) => {
            assert_eq!(detail, "No workspace for session: ghost-never")
        }
        other => panic!("expected not found, got {other:?}"),
    }
}

#[tokio::test]
async fn a_conflict_on_reattach_is_checked_against_the_hosts_routes() {
    let attach_other_runtime = |id: &str| OpenSession::attach(id).runtime("python");

    // A complete host: the 409 stays a conflict.
    let client = client_for(peer::shared().await);
    let id = unique("reattach");
    open(&client, &id).await;
    match client.open_session(&attach_other_runtime(&id), OPEN_WAIT).await {
        Err(SandboxdError::Conflict { detail }) => {
            assert!(detail.contains("is open on runtime"), "{detail}")
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    client.delete_session(&id, true).await.expect("delete");

    // A host lacking routes: the same 409 on re-attach is the version.
    let client = client_for(route_dropped_peer().await);
    let id = unique("reattach");
    open(&client, &id).await;
    match client.open_session(&attach_other_runtime(&id), OPEN_WAIT).await {
        Err(SandboxdError::VersionMismatch { missing, .. }) => assert_eq!(missing.len(), 2),
        other => panic!("expected a version mismatch, got {other:?}"),
    }
    // A 409 without attach is an ordinary conflict even there.
    let plain = OpenSession { session_id: Some(id.clone()), ..OpenSession::default() };
    assert!(matches!(client.open_session(&plain, OPEN_WAIT).await, Err(SandboxdError::Conflict { .. })));
    client.delete_session(&id, true).await.expect("delete");
}

#[tokio::test]
async fn an_older_release_is_a_version_mismatch() {
    // pydantic-ai-backend 0.2.36: everything but /workspaces/trees (new in 0.2.37).
    let peer = Peer::start(PeerOptions::default().package_version("0.2.36")).await.unwrap_or_else(|e| panic!("{e:#}"));
    let client = client_for(&peer);
    assert_eq!(client.missing_routes().await.expect("index"), ["/workspaces/trees"]);
    let id = unique("v0236");
    open(&client, &id).await;
    let out = client.run(&id, &RunRequest::new(["echo", "old"])).await.expect("run");
    assert_eq!(out.stdout, "old\n");
    client.workspace_tree(&id, &TreeOptions::default()).await.expect("tree is there");
    let error = client.workspace_trees(&[id.as_str()], &TreeOptions::default()).await.expect_err("trees is not");
    match &error {
        SandboxdError::VersionMismatch { missing, .. } => {
            assert_eq!(missing, &["/workspaces/trees"])
        }
        other => panic!("expected a version mismatch, got {other:?}"),
    }
    assert_clean(&error.to_string(), &peer);
}

#[tokio::test]
async fn a_much_older_release_lacks_native_files_and_trees() {
    // pydantic-ai-backend 0.2.34: no /files/* routes, no tree, no trees.
    let peer = Peer::start(PeerOptions::default().package_version("0.2.34")).await.unwrap_or_else(|e| panic!("{e:#}"));
    let client = client_for(&peer);
    let missing = client.missing_routes().await.expect("index");
    assert_eq!(
        missing,
        [
            "/sessions/{session_id}/files/read",
            "/sessions/{session_id}/files/write",
            "/sessions/{session_id}/files/stat",
            "/sessions/{session_id}/files/realpath",
            "/sessions/{session_id}/files/list",
            "/sessions/{session_id}/files/mkdir",
            "/sessions/{session_id}/files/remove",
            "/workspaces/trees",
            "/workspaces/{session_id}/tree",
        ]
    );
    let policy = client.policy().await.expect("policy");
    assert!(!policy.native_files, "an older policy has no native flags");
    let id = unique("v0234");
    open(&client, &id).await;
    match client.write_file(&id, "/workspace/a.txt", b"a").await {
        Err(SandboxdError::VersionMismatch { missing: m, .. }) => assert_eq!(m, missing),
        other => panic!("expected a version mismatch, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// the launcher
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_route_the_host_does_not_have_cannot_be_dropped() {
    let error = Peer::start(PeerOptions::default().drop_route("/workspaces/nope"))
        .await
        .expect_err("a typo must not give a complete host");
    let message = format!("{error:#}");
    assert!(
        message.contains("PEER_DROP_ROUTES names routes this service does not have: /workspaces/nope"),
        "{message}"
    );
    assert!(message.contains("it exited with exit status: 2"), "{message}");
    // The directory was kept for a person; this one was expected, so remove it.
    let log = message.split("its log is ").nth(1).and_then(|rest| rest.split(":\n").next()).expect("the log's path");
    let dir = std::path::Path::new(log).parent().expect("its directory");
    assert!(dir.join("KEPT").is_file());
    std::fs::remove_dir_all(dir).expect("remove");
}
