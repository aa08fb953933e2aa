//! What only Daytona workspaces' Documents and snapshots do, through our API only, against the
//! FAKE Daytona (tests/peer/daytona/fake_daytona.py; see daytona_fake.rs), on SQLite and
//! PostgreSQL: a folder the toolbox fails to list makes the listing incomplete, a stopped sandbox
//! is never started for Documents; a snapshot on demand of a sandbox Daytona stopped. The workspace
//! is the `workspace` folder under the sandbox's home: the home's dotfiles never show in a listing,
//! Documents or a snapshot (a sandbox made before that keeps its files where they are); a name that
//! is not UTF-8 never hides the rest of a listing. What every kind does alike is run on each by
//! `host_test!`: the bounded listing with its tiles and previews (documents.rs), a manifest of each
//! kind (manifests.rs), the snapshot round trip at a run's end (snapshots.rs). After each test,
//! every request in the fake's log matches Daytona's documents.
use std::path::PathBuf;

use reqwest::Method;
use serde_json::{json, Value};

use crate::daytona_fake::FakeDaytona;
use crate::db_test;
use crate::documents::{documents_of, in_tree, plan_and_photo, put};
use crate::hosts::{Host, HostKind};
use crate::snapshots::{archive_files, binary, get_bytes, put_bytes, snapshots_of};
use crate::support::connections::daytona;
use crate::support::{service_agent, urlencode, Org};

/// The session key, the workspace folder (`<home>/workspace`) of the fake's sandbox for `run`'s
/// workspace, and the workspace's id.
async fn sandbox_of(o: &Org<'_>, fake: &FakeDaytona, run: &str) -> (String, PathBuf, String) {
    let (key, home, workspace) = home_of(o, fake, run).await;
    (key, home.join("workspace"), workspace)
}

/// As [`sandbox_of`], with the sandbox's home (the fake's folder of it).
async fn home_of(o: &Org<'_>, fake: &FakeDaytona, run: &str) -> (String, PathBuf, String) {
    let state = o.ws(run, Method::GET, "state", None).await.json();
    let key = state["session_key"].as_str().expect("key").to_string();
    let sb = fake.sandboxes().into_iter().find(|s| s["name"] == key.as_str()).expect("the run's sandbox");
    let home = PathBuf::from(sb["dir"].as_str().expect("dir"));
    (key, home, state["workspace_id"].as_str().expect("workspace id").to_string())
}

// Daytona only: a folder its toolbox fails to list, and a sandbox Daytona stopped (sandboxd's
// unreadable folder is documents.rs's, on a peer of its own without root's read override).
db_test! {
    async fn a_daytona_folder_that_fails_makes_the_listing_incomplete_and_a_stopped_sandbox_is_never_started_for_it(app: TestApp) {
        let host = Host::start(HostKind::Daytona).await;
        let Host::Daytona(fake) = &host else { unreachable!() };
        let o = Org::new(&app).await;
        let (key, dir, workspace) = plan_and_photo(&o, &host).await;

        // A folder that fails: skipped, the listing incomplete, the rest shown.
        // (The toolbox is asked by absolute path, below the workspace folder.)
        let notes = dir.join("notes").to_str().expect("utf-8").to_string();
        fake.set_hooks(json!({"fail": [{"route": "GET /toolbox/{sandboxId}/files", "path": notes, "status": 500, "times": 1000}]}));
        let d = documents_of(&o, &workspace).await;
        fake.set_hooks(json!({"fail": null}));
        assert_eq!((d["listing"]["incomplete"].as_bool(), d["listing"]["limited"].as_bool()), (Some(true), Some(false)), "{}", d["listing"]);
        assert!(d["listing"]["note"].as_str().is_some_and(|n| n.contains("could not be read")), "{}", d["listing"]);
        assert_eq!(in_tree(&d, false), ["uploads/photo.png"]);

        // A sandbox Daytona stopped is never started for Documents: unreadable, saying why.
        fake.set_sandbox(&key, json!({"state": "stopped"}));
        fake.reset_request_counts();
        let d = documents_of(&o, &workspace).await;
        assert!(d["listing"]["unreadable"].as_str().is_some_and(|u| u.contains("stopped")), "{}", d["listing"]);
        assert_eq!(fake.request_counts().get("POST /sandbox/{sandboxIdOrName}/start"), None);
        let page = o.call(Method::GET, "/api/v1/documents", None).await;
        assert_eq!(page.status, 200, "{}", page.body);
        assert!(!page.body.contains(&fake.api_key) && !page.body.contains("127.0.0.1"), "{}", page.body);
        host.check_after();
    }
}

// Daytona only: its stopped and deleted sandbox states.
db_test! {
    async fn a_snapshot_on_demand_starts_a_stopped_daytona_sandbox_and_a_gone_one_is_refused(app: TestApp) {
        let fake = FakeDaytona::start(&[]);
        let o = Org::new(&app).await;
        daytona(&o, &fake.api_url, &fake.api_key).await;
        let agent = o.agent(service_agent("saver", "conversation")).await;
        let conv = o.conversation(&agent, json!({})).await;
        let r1 = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&r1, "notes/plan.md", "# Plan\nship it\n").await.status, 204);
        put_bytes(&o, &r1, "data/blob.bin", binary()).await;
        let (key, _, workspace) = sandbox_of(&o, &fake, &r1).await;

        // On demand, of a sandbox Daytona stopped meanwhile: it is started for the snapshot.
        fake.set_sandbox(&key, json!({"state": "stopped"}));
        fake.reset_request_counts();
        let r = o.call(Method::POST, &format!("/api/v1/workspaces/{workspace}/snapshots"), None).await;
        assert_eq!(r.status, 201, "{}", r.body);
        assert_eq!((r.json()["taken_by"].as_str(), r.json()["file_count"].as_i64()), (Some("on_demand"), Some(2)), "{}", r.body);
        assert_eq!(fake.request_counts().get("POST /sandbox/{sandboxIdOrName}/start").copied(), Some(1));
        // A sandbox Daytona no longer has: refused in plain words, nothing saved.
        let sb = fake.sandboxes().into_iter().find(|s| s["name"] == key.as_str()).expect("sandbox");
        let client = agenticos::sandbox::hosts::daytona::client::DaytonaClient::new(
            agenticos::sandbox::hosts::daytona::client::DaytonaClient::default_http().unwrap(),
            url::Url::parse(&fake.api_url).unwrap(),
            secrecy::SecretString::from(fake.api_key.clone()),
        )
        .unwrap();
        client.delete_sandbox(sb["id"].as_str().expect("id")).await.expect("deleted behind our back");
        let began = std::time::Instant::now();
        while fake.sandboxes().iter().any(|s| s["id"] == sb["id"] && s["state"] != "destroyed") {
            assert!(began.elapsed() < std::time::Duration::from_secs(30), "the fake never destroyed it");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let gone = o.call(Method::POST, &format!("/api/v1/workspaces/{workspace}/snapshots"), None).await;
        let p = gone.problem(409);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("no longer has")), "{p}");
        assert_eq!(snapshots_of(&o, &workspace).await.len(), 1);
        fake.assert_log_matches_the_documents();
    }
}

/// Every path of a Documents tree, folders and files.
fn tree_paths(d: &Value) -> Vec<String> {
    let mut all = in_tree(d, true);
    all.extend(in_tree(d, false));
    all.sort();
    all
}

/// The names of a workspace folder listed through the API.
async fn names_in(o: &Org<'_>, run: &str, folder: &str) -> Vec<String> {
    let r = o.ws(run, Method::GET, &format!("ls?path={}", urlencode(folder)), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mut names: Vec<String> =
        r.json().as_array().expect("entries").iter().map(|e| e["name"].as_str().expect("name").to_string()).collect();
    names.sort();
    names
}

// Daytona only: the workspace folder under the sandbox's home.
db_test! {
    async fn a_daytona_workspace_is_the_workspace_folder_under_home_and_the_homes_dotfiles_never_show(app: TestApp) {
        let fake = FakeDaytona::start(&[]);
        let o = Org::new(&app).await;
        daytona(&o, &fake.api_url, &fake.api_key).await;
        let agent = o.agent(service_agent("tidy", "conversation")).await;
        let conv = o.conversation(&agent, json!({})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&run, "notes/a.md", "hello").await.status, 204);
        let (_, home, workspace) = home_of(&o, &fake, &run).await;
        // The write landed under home/workspace; the home keeps the snapshot's dotfiles, untouched.
        assert_eq!(std::fs::read_to_string(home.join("workspace/notes/a.md")).expect("under home/workspace"), "hello");
        assert!(!home.join("notes").exists());
        let bashrc = std::fs::read_to_string(home.join(".bashrc")).expect("the home's .bashrc");
        assert!(home.join(".daytona").is_dir() && home.join(".zshrc").is_file());

        // A listing of the root: the workspace's files only; a command starts in the folder.
        assert_eq!(names_in(&o, &run, ".").await, ["notes"]);
        let out = o.exec(&run, "pwd; ls -A").await.json();
        let expected = format!("{}\nnotes\n", home.join("workspace").display());
        assert_eq!(out["stdout"].as_str(), Some(expected.as_str()), "{out}");
        // `.bashrc` in the workspace is the workspace's own: the home's is not reached.
        o.read(&run, ".bashrc").await.problem(404);

        // Documents: the workspace's files, none of the home's.
        let d = documents_of(&o, &workspace).await;
        assert_eq!(tree_paths(&d), ["notes", "notes/a.md"], "{}", d["tree"]);
        assert_eq!(d["file_count"], 1);

        // A snapshot: the same, and restored into a new workspace's folder, the home left alone.
        let r = o.call(Method::POST, &format!("/api/v1/workspaces/{workspace}/snapshots"), None).await;
        assert_eq!(r.status, 201, "{}", r.body);
        assert_eq!(r.json()["file_count"], 1, "{}", r.body);
        let id = r.json()["id"].as_str().expect("id").to_string();
        let (status, gz) = get_bytes(&o, &format!("/api/v1/snapshots/{id}/archive")).await;
        assert_eq!(status, 200);
        // The workspace's files and our manifest (issue 50), none of the home's.
        let files: Vec<String> = archive_files(&gz).into_keys().collect();
        assert_eq!(files, [".agenticos/snapshot-manifest.json", "notes/", "notes/a.md"]);
        let conv2 = o.conversation(&agent, json!({})).await;
        let r2 = o.run(&agent, Some(&conv2), json!({"snapshot_id": id})).await;
        assert_eq!(o.read(&r2, "notes/a.md").await.body, "hello");
        let (_, home2, _) = home_of(&o, &fake, &r2).await;
        assert_ne!(home2, home);
        assert_eq!(std::fs::read_to_string(home2.join("workspace/notes/a.md")).expect("restored"), "hello");
        assert_eq!(std::fs::read_to_string(home2.join(".bashrc")).expect("its .bashrc"), bashrc);
        assert!(!home2.join("notes").exists());
        fake.assert_log_matches_the_documents();
    }
}

// Daytona only: sandboxes made before the workspace folder (no `root` label).
db_test! {
    async fn a_daytona_sandbox_made_before_the_workspace_folder_keeps_its_files_where_they_are(app: TestApp) {
        use agenticos::sandbox::hosts::daytona::client::{CreateSandbox, DaytonaClient};
        let fake = FakeDaytona::start(&[]);
        let o = Org::new(&app).await;
        daytona(&o, &fake.api_url, &fake.api_key).await;
        let agent = o.agent(service_agent("veteran", "conversation")).await;
        let conv = o.conversation(&agent, json!({})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;
        let key = o.ws(&run, Method::GET, "state", None).await.json()["session_key"].as_str().expect("key").to_string();
        // Its sandbox was made by an earlier version: no `agenticos.io/root` label, its files at
        // the work dir (the home).
        let client = DaytonaClient::new(
            DaytonaClient::default_http().expect("http"),
            url::Url::parse(&fake.api_url).expect("url"),
            secrecy::SecretString::from(fake.api_key.clone()),
        )
        .expect("client");
        let made = client
            .create_sandbox(&CreateSandbox { name: Some(key.clone()), ..Default::default() })
            .await
            .expect("the sandbox of before");
        let home = PathBuf::from(
            fake.sandboxes().into_iter().find(|s| s["id"] == made.id.as_str()).expect("it")["dir"].as_str().expect("dir"),
        );
        put(&home, "report.txt", b"from before");
        // Read and written where they were: nothing moves, no workspace folder appears.
        assert_eq!(o.read(&run, "report.txt").await.body, "from before");
        assert_eq!(o.write(&run, "next.txt", "after").await.status, 204);
        assert_eq!(std::fs::read_to_string(home.join("next.txt")).expect("beside it"), "after");
        assert!(!home.join("workspace").exists());
        fake.assert_log_matches_the_documents();
    }
}

// Daytona only: its toolbox's raw-byte names (sandboxd's listing is the host's own).
db_test! {
    async fn a_name_that_is_not_utf8_never_hides_the_rest_of_a_daytona_listing(app: TestApp) {
        use std::os::unix::ffi::OsStrExt;
        let fake = FakeDaytona::start(&[]);
        let o = Org::new(&app).await;
        daytona(&o, &fake.api_url, &fake.api_key).await;
        let agent = o.agent(service_agent("babel", "conversation")).await;
        let conv = o.conversation(&agent, json!({})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&run, "odd/good.txt", "fine").await.status, 204);
        assert_eq!(o.write(&run, "top.txt", "fine").await.status, 204);
        let (_, dir, workspace) = sandbox_of(&o, &fake, &run).await;
        std::fs::write(dir.join("odd").join(std::ffi::OsStr::from_bytes(b"bad\xffname.txt")), b"x").expect("write");
        // As Daytona sends it (U+FFFD in its place), and as raw bytes (the fake's `rawNames`,
        // not Daytona): every other file is listed, through the API and in Documents.
        for raw in [false, true] {
            fake.set_hooks(json!({"rawNames": if raw { json!(true) } else { Value::Null }}));
            assert_eq!(names_in(&o, &run, "odd").await, ["bad\u{FFFD}name.txt", "good.txt"], "raw bytes: {raw}");
            let d = documents_of(&o, &workspace).await;
            let files = in_tree(&d, false);
            for path in ["odd/good.txt", "top.txt", "odd/bad\u{FFFD}name.txt"] {
                assert!(files.iter().any(|f| f == path), "raw bytes {raw}: {path} missing from {files:?}");
            }
            assert_eq!(d["listing"]["complete"], true, "raw bytes {raw}: {}", d["listing"]);
        }
        fake.set_hooks(json!({"rawNames": null}));
        fake.assert_log_matches_the_documents();
    }
}
