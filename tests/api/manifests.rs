//! Issue 14, part A: an agent's manifest of typed entries (file, dir, git_repo, env) on every host
//! kind (`host_test!`: the real sandboxd peer and the FAKE Daytona) and the `state` backend, each on
//! SQLite and PostgreSQL. A repository is served on loopback by a small dumb-HTTP file server over a
//! bare repository (after `git update-server-info`); a sandbox clones it itself, for the `state`
//! backend the console fetches it.

use std::path::{Path, PathBuf};
use std::process::Command;

use reqwest::Method;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::TestApp;
use crate::peer;
use crate::snapshots::get_bytes;
use crate::support::{row, urlencode, Org};
use crate::{db_test, host_test};

/// A bare repository with `README.md` and `src/lib.txt` on branch `main`, served over dumb
/// HTTP on loopback; `url` is its clone URL.
pub(crate) struct Repo {
    pub(crate) url: String,
    _dir: tempfile::TempDir,
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

pub(crate) async fn serve_repo() -> Repo {
    let dir = tempfile::tempdir().expect("dir");
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("src")).expect("mkdir");
    std::fs::write(work.join("README.md"), "# served repo\n").expect("write");
    std::fs::write(work.join("src/lib.txt"), "library\n").expect("write");
    git(&work, &["init", "-q"]);
    git(&work, &["add", "."]);
    git(&work, &["commit", "-q", "-m", "first"]);
    git(dir.path(), &["clone", "-q", "--bare", "work", "repo.git"]);
    git(&dir.path().join("repo.git"), &["update-server-info"]);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://127.0.0.1:{}/repo.git", listener.local_addr().expect("addr").port());
    let root = dir.path().to_path_buf();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve_file(stream, root.clone()));
        }
    });
    Repo { url, _dir: dir }
}

/// Answers one GET with the file under `root` (404 otherwise), then closes.
async fn serve_file(mut stream: tokio::net::TcpStream, root: PathBuf) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let head = String::from_utf8_lossy(&buf).to_string();
    let path = head.split_whitespace().nth(1).unwrap_or("/").split('?').next().unwrap_or("/").to_string();
    let file =
        (!path.contains("..")).then(|| std::fs::read(root.join(path.trim_start_matches('/')))).and_then(Result::ok);
    let (status, body) = match file {
        Some(b) => ("200 OK", b),
        None => ("404 Not Found", b"not found".to_vec()),
    };
    let head = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(&body).await;
}

async fn secret(o: &Org<'_>, name: &str, purpose: &str, value: &str) -> String {
    let body = json!({"name": name, "purpose": purpose, "value": value});
    let r = o.call(Method::POST, "/api/v1/vault/secrets", Some(body)).await;
    assert_eq!(r.status, 201, "{}", r.body);
    r.json()["id"].as_str().expect("id").to_string()
}

fn names(ls: &Value) -> Vec<String> {
    let mut n: Vec<String> =
        ls.as_array().expect("list").iter().filter_map(|e| e["name"].as_str().map(str::to_string)).collect();
    n.sort();
    n
}

fn sorted(mut rows: Vec<(String, String, bool, String)>) -> Vec<(String, String, bool, String)> {
    rows.sort();
    rows
}

const SECRET_VALUE: &str = "s3cr3t-manifest-env-7f1c2a9d";

/// Prints the plain variable and the SHA-256 of the secret's line (never the secret), and keeps the
/// digest in a file of the workspace.
const EXEC_WITH_SECRET: &str = "printenv GREETING && printenv DEPLOY_TOKEN | sha256sum | cut -c1-64 | tee token.sha256";

/// The digest [`EXEC_WITH_SECRET`] prints: of the secret and the line break `printenv` ends it with.
fn secret_digest() -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(format!("{SECRET_VALUE}\n").as_bytes()))
}

/// The run's workspace, saved when it finished: its files are there (the digest the command
/// wrote), the secret in none of them, nor in the archive's bytes.
async fn secret_in_no_snapshot(o: &Org<'_>, run: &str) {
    // A finish stores its snapshot in the background.
    agenticos::sandbox::snapshots::pending::wait_for_run(&o.app.state, run).await;
    let state = o.ws(run, Method::GET, "state", None).await.json();
    let workspace = state["workspace_id"].as_str().expect("workspace id").to_string();
    let list = o.call(Method::GET, &format!("/api/v1/workspaces/{workspace}/snapshots"), None).await;
    let id = list.json()[0]["id"].as_str().expect("a snapshot taken at finish").to_string();
    let url = o.app.web.url(&format!("/api/v1/snapshots/{id}/archive"));
    let gz = reqwest::Client::new().get(url).bearer_auth(&o.token).send().await.expect("archive");
    assert_eq!(gz.status().as_u16(), 200);
    let gz = gz.bytes().await.expect("bytes").to_vec();
    let mut tar = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(gz.as_slice()), &mut tar).expect("gunzip");
    let text = String::from_utf8_lossy(&tar);
    assert!(text.contains(&secret_digest()) && text.contains("notes"), "the snapshot holds the workspace");
    assert!(!text.contains(SECRET_VALUE) && !text.contains("DEPLOY_TOKEN"), "the snapshot holds the secret");
}

/// The secret is in no operation row, no audit row, no agent's or run's row, no answer but the
/// exec's, no log line.
async fn secret_is_kept_nowhere(app: &TestApp) {
    app.state.log.settle().await;
    let mut c = app.state.db.conn().await.expect("conn");
    let ops: Vec<(String, String)> =
        sqlx::query_as("SELECT target, detail FROM sandbox_operations").fetch_all(&mut *c).await.expect("ops");
    let audit: Vec<(String, String)> =
        sqlx::query_as("SELECT target, detail FROM audit_events").fetch_all(&mut *c).await.expect("audit");
    let stored = format!("{ops:?}{audit:?}");
    assert!(!stored.contains(SECRET_VALUE), "an operation or audit row keeps the secret");
    let runs: Vec<(Option<String>,)> =
        sqlx::query_as("SELECT manifest FROM runs").fetch_all(&mut *c).await.expect("runs");
    let agents: Vec<(String,)> =
        sqlx::query_as("SELECT manifest FROM agents").fetch_all(&mut *c).await.expect("agents");
    assert!(!format!("{runs:?}{agents:?}").contains(SECRET_VALUE), "an agent's or run's row keeps the secret");
    assert_eq!(app.web.all_bodies().matches(SECRET_VALUE).count(), 0, "an answer shows the secret");
    assert!(!crate::helpers::captured_logs().contains(SECRET_VALUE), "a log line shows the secret");
}

/// A manifest of every kind (a file, a binary one, a folder, a repository, a plain and a secret
/// variable) naming `repo` and the secret `secret_id`.
fn manifest_of_each_kind(repo: &Repo, secret_id: &str) -> Value {
    json!({"entries": [
        {"kind": "file", "path": "notes.md", "content": "notes"},
        {"kind": "file", "path": "data/raw.bin", "content_base64": "AAEC/w=="},
        {"kind": "dir", "path": "out"},
        {"kind": "git_repo", "url": repo.url, "ref": "main", "path": "repo"},
        {"kind": "env", "name": "GREETING", "value": "hello"},
        {"kind": "env", "name": "DEPLOY_TOKEN", "secret_id": secret_id, "ephemeral": true},
    ]})
}

/// An agent of `backend` in conversation scope with [`manifest_of_each_kind`]; it shows the
/// secret's id, never its value.
async fn agent_with_each_kind(o: &Org<'_>, repo: &Repo, backend: &str) -> String {
    let secret_id = secret(o, "deploy token", "other", SECRET_VALUE).await;
    let manifest = manifest_of_each_kind(repo, &secret_id);
    let agent = o
        .agent(
            json!({"name": format!("m-{backend}"), "backend": backend, "scope": "conversation", "manifest": manifest}),
        )
        .await;
    let shown = o.call(Method::GET, &format!("/api/v1/agents/{agent}"), None).await.json();
    assert_eq!(
        shown["manifest"]["entries"][5],
        json!({"kind": "env", "name": "DEPLOY_TOKEN", "secret_id": secret_id, "ephemeral": true})
    );
    agent
}

/// A first run of a new conversation of `agent` finds the manifest's entries (the repository
/// without its history): (the conversation, the run).
async fn first_run_finds_each_kind(o: &Org<'_>, agent: &str) -> (String, String) {
    let conv = o.conversation(agent, json!({})).await;
    let r1 = o.run(agent, Some(&conv), json!({})).await;
    let ls = o.ws(&r1, Method::GET, "ls", None).await;
    assert_eq!(ls.status, 200, "{}", ls.body);
    assert_eq!(names(&ls.json()), ["data", "notes.md", "out", "repo"]);
    assert_eq!(o.read(&r1, "repo/README.md").await.body, "# served repo\n");
    assert_eq!(o.read(&r1, "repo/src/lib.txt").await.body, "library\n");
    o.read(&r1, "repo/.git/HEAD").await.problem(404);
    (conv, r1)
}

/// A later run of conversation `conv`'s workspace attaches: nothing is written again.
async fn a_later_run_writes_nothing_again(o: &Org<'_>, agent: &str, conv: &str) {
    let r2 = o.run(agent, Some(conv), json!({})).await;
    assert_eq!(o.write(&r2, "notes.md", "changed").await.status, 204);
    assert_eq!(o.read(&r2, "notes.md").await.body, "changed");
    o.finish(&r2).await;
    assert_eq!(
        o.rows(&r2).await,
        vec![row("write", "/workspace/notes.md", true, "7 bytes"), row("read", "/workspace/notes.md", true, "7 bytes")]
    );
}

host_test! {
    async fn a_manifest_of_each_kind_materialises_once_in_a_sandbox_and_its_secret_reaches_only_exec(app: TestApp, host: &Host) {
        let repo = serve_repo().await;
        let o = Org::new(&app).await;
        host.connect(&o).await;
        let agent = agent_with_each_kind(&o, &repo, "service").await;
        // A snapshot when each run finishes: the secret must not be in it either.
        let r = o.call(Method::PUT, &format!("/api/v1/agents/{agent}/snapshot-settings"), Some(json!({"snapshots": "on_finish"}))).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let (conv, r1) = first_run_finds_each_kind(&o, &agent).await;
        let (status, raw) = get_bytes(&o, &format!("/api/v1/runs/{r1}/workspace/files?path={}", urlencode("data/raw.bin"))).await;
        assert_eq!((status, raw), (200, vec![0u8, 1, 2, 255]));
        // The repository was cloned in the sandbox itself (its runtime has network), in the
        // workspace's folder on the host.
        let key = o.ws(&r1, Method::GET, "state", None).await.json()["session_key"].as_str().expect("key").to_string();
        assert_eq!(host.file(&key, "repo/src/lib.txt").await.as_deref(), Some("library\n"));
        // The command sees the secret (its digest proves it) without any answer carrying it; what
        // the command writes from it is a file like any other.
        let e = o.exec(&r1, EXEC_WITH_SECRET).await;
        assert_eq!(e.json()["stdout"], format!("hello\n{}\n", secret_digest()), "{}", e.body);
        o.finish(&r1).await;
        secret_in_no_snapshot(&o, &r1).await;
        // The manifest's writes, recorded as operations like any other, before the run's own first
        // operation: the folder, the clone (one row), the files (in any order: they run four at a
        // time).
        let rows = o.rows(&r1).await;
        assert_eq!(rows[0], row("mkdir", "/workspace/out", true, ""), "{rows:?}");
        assert_eq!(rows[1], row("execute", &format!("git clone {} /workspace/repo", repo.url), true, "cloned"), "{rows:?}");
        assert_eq!(
            sorted(rows[2..4].to_vec()),
            vec![row("write", "/workspace/data/raw.bin", true, "4 bytes"), row("write", "/workspace/notes.md", true, "5 bytes")]
        );
        assert_eq!(rows[4], row("ls", "/workspace", true, "4 entries"), "{rows:?}");
        assert!(rows.iter().any(|(_, target, _, _)| target == EXEC_WITH_SECRET), "{rows:?}");
        a_later_run_writes_nothing_again(&o, &agent, &conv).await;
        secret_is_kept_nowhere(&app).await;
    }
}

db_test! {
    async fn a_manifest_of_each_kind_materialises_once_in_the_state_backend_fetched_by_the_console(app: TestApp) {
        let repo = serve_repo().await;
        let o = Org::new(&app).await;
        let agent = agent_with_each_kind(&o, &repo, "state").await;
        let (conv, r1) = first_run_finds_each_kind(&o, &agent).await;
        o.finish(&r1).await;
        // The `state` backend has no sandbox: the console fetched the repository and wrote its
        // files, each a row (in any order: they run four at a time).
        let rows = o.rows(&r1).await;
        assert_eq!(rows[0], row("mkdir", "/workspace/out", true, ""), "{rows:?}");
        assert_eq!(
            sorted(rows[1..5].to_vec()),
            vec![
                row("write", "/workspace/data/raw.bin", true, "4 bytes"),
                row("write", "/workspace/notes.md", true, "5 bytes"),
                row("write", "/workspace/repo/README.md", true, "14 bytes"),
                row("write", "/workspace/repo/src/lib.txt", true, "8 bytes"),
            ]
        );
        assert_eq!(rows[5], row("ls", "/workspace", true, "4 entries"));
        a_later_run_writes_nothing_again(&o, &agent, &conv).await;
        secret_is_kept_nowhere(&app).await;
    }
}

db_test! {
    async fn a_run_brings_its_own_manifest_for_its_new_workspace(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let manifest = json!({"entries": [{"kind": "file", "path": "agent.txt", "content": "agent's"}]});
        let agent = o.agent(json!({"name": "own", "backend": "service", "scope": "run", "manifest": manifest})).await;
        let own = json!({"entries": [{"kind": "file", "path": "run.txt", "content": "run's"}, {"kind": "env", "name": "MODE", "value": "override"}]});
        let r = o.run(&agent, None, json!({"manifest": own})).await;
        assert_eq!(names(&o.ws(&r, Method::GET, "ls", None).await.json()), ["run.txt"]);
        assert_eq!(o.exec(&r, "printenv MODE").await.json()["stdout"], "override\n");
        o.finish(&r).await;
        // Without one, the agent's.
        let r = o.run(&agent, None, json!({})).await;
        assert_eq!(names(&o.ws(&r, Method::GET, "ls", None).await.json()), ["agent.txt"]);
        o.finish(&r).await;
        // A run's manifest is checked like an agent's.
        let bad = json!({"agent_id": agent, "started_by": "member", "manifest": {"entries": [{"kind": "dir", "path": "../up"}]}});
        let p = o.call(Method::POST, "/api/v1/runs", Some(bad)).await.problem(422);
        assert_eq!(p["errors"][0]["field"], "manifest.entries[0].path", "{p}");
    }
}

db_test! {
    async fn a_manifest_is_refused_at_save_naming_its_entry_and_a_failed_fetch_names_it_too(app: TestApp) {
        let o = Org::new(&app).await;
        let save = |manifest: Value| o.call(Method::POST, "/api/v1/agents", Some(json!({"name": "bad", "backend": "state", "scope": "run", "manifest": manifest})));
        let field = |p: Value| p["errors"][0]["field"].as_str().unwrap_or_default().to_string();
        let p = save(json!({"entries": [{"kind": "dir", "path": "ok"}, {"kind": "file", "path": "/etc/passwd"}]})).await.problem(422);
        assert_eq!(field(p.clone()), "manifest.entries[1].path", "{p}");
        assert!(p["errors"][0]["message"].as_str().unwrap_or_default().contains("relative"), "{p}");
        let p = save(json!({"entries": [{"kind": "file", "path": "a/../../b"}]})).await.problem(422);
        assert_eq!(field(p), "manifest.entries[0].path");
        // A kind this version does not know is named at its entry, on an agent and on a run.
        let p = save(json!({"entries": [{"kind": "dir", "path": "ok"}, {"kind": "dir", "path": "b"}, {"kind": "zip", "path": "x"}]})).await.problem(422);
        assert_eq!(field(p.clone()), "manifest.entries[2].kind", "{p}");
        assert!(p["errors"][0]["message"].as_str().unwrap_or_default().contains("git_repo"), "{p}");
        assert_eq!(p["errors"].as_array().map(Vec::len), Some(1), "{p}");
        let agent = o.agent(json!({"name": "plain", "backend": "state", "scope": "run"})).await;
        let bad = json!({"agent_id": agent, "started_by": "member", "manifest": {"entries": [{"kind": "symlink", "path": "x"}]}});
        let p = o.call(Method::POST, "/api/v1/runs", Some(bad)).await.problem(422);
        assert_eq!(field(p.clone()), "manifest.entries[0].kind", "{p}");
        let p = save(json!({"entries": [{"kind": "git_repo", "url": "file:///etc", "path": "r"}]})).await.problem(422);
        assert_eq!(field(p), "manifest.entries[0].url");
        let host_key = secret(&o, "host key", "sandboxd", "a-host-token-value-123").await;
        let p = save(json!({"entries": [{"kind": "env", "name": "K", "secret_id": host_key}]})).await.problem(422);
        assert_eq!(field(p.clone()), "manifest.entries[0].secret_id", "{p}");
        let both = json!({"name": "both", "backend": "state", "scope": "run", "manifest": {"entries": []}, "manifest_files": []});
        let p = o.call(Method::POST, "/api/v1/agents", Some(both)).await.problem(422);
        assert_eq!(field(p), "manifest_files");
        // The deprecated alias is read as file and dir entries.
        let legacy = json!({"name": "legacy", "backend": "state", "scope": "run", "manifest_files": [{"path": "data", "is_dir": true}, {"path": "a.txt", "content": "a"}]});
        let r = o.call(Method::POST, "/api/v1/agents", Some(legacy)).await;
        assert_eq!(r.status, 201, "{}", r.body);
        assert_eq!(r.json()["manifest"], json!({"entries": [{"kind": "dir", "path": "data"}, {"kind": "file", "path": "a.txt", "content": "a"}]}));
        // A repository that cannot be fetched: the first operation fails naming the entry, and
        // nothing was written (the next operation tries again).
        let repo = serve_repo().await;
        let missing = repo.url.replace("repo.git", "missing.git");
        let agent = o.agent(json!({"name": "gone", "backend": "state", "scope": "run", "manifest": {"entries": [{"kind": "git_repo", "url": missing, "path": "src"}]}})).await;
        let run = o.run(&agent, None, json!({})).await;
        let p = o.ws(&run, Method::GET, "ls", None).await.problem(502);
        let detail = p["detail"].as_str().unwrap_or_default();
        assert!(detail.starts_with(&format!("manifest.entries[0] (git_repo {missing})")) && detail.contains("could not fetch"), "{p}");
        // Nothing was written: no write row (the failed operation itself may be a failed row,
        // now that rows are committed before the answer).
        let rows = o.rows(&run).await;
        assert!(rows.iter().all(|(op, _, ok, _)| op != "write" && !ok), "{rows:?}");
    }
}
