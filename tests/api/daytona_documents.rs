//! Documents, snapshots and manifests of Daytona workspaces through our API only, against the
//! FAKE Daytona (tests/peer/daytona/fake_daytona.py; see daytona_fake.rs), on SQLite and
//! PostgreSQL: a bounded tree (breadth-first over the toolbox's `GET /files`; a cut says so, a
//! folder that fails makes it incomplete, a stopped sandbox is never started for it), tiles and a
//! preview read through the toolbox's download; a snapshot on demand of a sandbox Daytona
//! stopped (the round trip at a run's end is snapshots.rs's, run on each host kind); a manifest of each file kind (a
//! repository cloned in the sandbox's own folder). The workspace is the `workspace` folder under
//! the sandbox's home: the home's dotfiles never show in a listing, Documents or a snapshot (a
//! sandbox made before that keeps its files where they are); a name that is not UTF-8 never hides
//! the rest of a listing. After each test, every request in the fake's log matches Daytona's
//! documents.

use std::path::PathBuf;

use reqwest::Method;
use serde_json::{json, Value};

use crate::daytona_fake::FakeDaytona;
use crate::db_test;
use crate::documents::{documents_of, put};
use crate::manifests::serve_repo;
use crate::snapshots::{archive_files, binary, get_bytes, put_bytes, snapshots_of};
use crate::support::connections::daytona;
use crate::support::{row, service_agent, urlencode, Org};

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

fn in_tree(d: &Value, dirs: bool) -> Vec<String> {
    let mut out: Vec<String> = d["tree"]
        .as_array()
        .expect("tree")
        .iter()
        .filter(|n| n["is_dir"] == dirs)
        .map(|n| n["path"].as_str().expect("path").to_string())
        .collect();
    out.sort();
    out
}

fn tile<'a>(d: &'a Value, path: &str) -> &'a Value {
    d["tiles"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["file"]["path"] == path))
        .unwrap_or_else(|| panic!("no tile for {path}: {}", d["tiles"]))
}

fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbaImage::from_pixel(w, h, image::Rgba([30, 100, 200, 255]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).expect("png");
    out.into_inner()
}

db_test! {
    async fn documents_list_a_daytona_workspace_within_its_bounds_and_preview_its_files(app: TestApp) {
        let fake = FakeDaytona::start(&[]);
        let o = Org::new(&app).await;
        daytona(&o, &fake.api_url, &fake.api_key).await;
        let agent = o.agent(service_agent("writer", "conversation")).await;
        let conv = o.conversation(&agent, json!({})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&run, "notes/plan.md", "# Plan\nship it\n").await.status, 204);
        put_bytes(&o, &run, "uploads/photo.png", png(320, 200)).await;
        let (key, dir, workspace) = sandbox_of(&o, &fake, &run).await;
        put(&dir, "node_modules/left-pad/index.js", b"module.exports = 1");

        let d = documents_of(&o, &workspace).await;
        assert_eq!(in_tree(&d, false), ["notes/plan.md", "uploads/photo.png"], "excluded folders are left out");
        assert_eq!(d["listing"]["complete"], true, "{}", d["listing"]);
        assert_eq!(d["file_count"], 2);
        let thumb = tile(&d, "uploads/photo.png")["thumbnail"].as_str().unwrap_or_default().to_string();
        assert!(thumb.starts_with("data:image/webp;base64,"), "{}", d["tiles"]);
        let text = tile(&d, "notes/plan.md")["text_preview"].as_str().unwrap_or_default().to_string();
        assert_eq!(text, "# Plan\nship it");
        // The file itself, and its preview page (Markdown rendered).
        let (status, bytes) = get_bytes(&o, &format!("/api/v1/documents/workspaces/{workspace}/file?path=notes%2Fplan.md")).await;
        assert_eq!((status, bytes.as_slice()), (200, &b"# Plan\nship it\n"[..]));
        let page = app.web.get(&format!("/documents/workspaces/{workspace}?path={}", urlencode("notes/plan.md"))).await;
        assert_eq!(page.status, 200);
        assert_eq!(page.select_text("#preview-markdown h1").as_deref(), Some("Plan"));
        o.call(Method::GET, &format!("/api/v1/documents/workspaces/{workspace}/file?path=nothing.md"), None).await.problem(404);

        // A cut: folders eight levels deep; the sixth level is listed, not opened.
        put(&dir, "deep/l2/l3/l4/l5/l6/l7/l8.txt", b"deep");
        let d = documents_of(&o, &workspace).await;
        assert_eq!((d["listing"]["limited"].as_bool(), d["listing"]["complete"].as_bool()), (Some(true), Some(false)), "{}", d["listing"]);
        assert!(d["listing"]["note"].as_str().is_some_and(|n| n.contains("not every file") && n.contains("6 levels")), "{}", d["listing"]);
        let dirs = in_tree(&d, true);
        assert!(dirs.contains(&"deep/l2/l3/l4/l5/l6".to_string()) && !dirs.iter().any(|p| p.ends_with("/l7")), "{dirs:?}");
        std::fs::remove_dir_all(dir.join("deep")).expect("rm");

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
        fake.assert_log_matches_the_documents();
    }
}

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

db_test! {
    async fn a_manifest_materialises_in_a_daytona_sandbox_once(app: TestApp) {
        let fake = FakeDaytona::start(&[]);
        let repo = serve_repo().await;
        let o = Org::new(&app).await;
        daytona(&o, &fake.api_url, &fake.api_key).await;
        let manifest = json!({"entries": [
            {"kind": "file", "path": "notes.md", "content": "notes"},
            {"kind": "file", "path": "data/raw.bin", "content_base64": "AAEC/w=="},
            {"kind": "dir", "path": "out"},
            {"kind": "git_repo", "url": repo.url, "ref": "main", "path": "repo"},
            {"kind": "env", "name": "GREETING", "value": "hello"},
        ]});
        let agent = o.agent(json!({"name": "m-daytona", "backend": "service", "scope": "conversation", "manifest": manifest})).await;
        let conv = o.conversation(&agent, json!({})).await;
        let r1 = o.run(&agent, Some(&conv), json!({})).await;
        let ls = o.ws(&r1, Method::GET, "ls", None).await;
        assert_eq!(ls.status, 200, "{}", ls.body);
        let mut names: Vec<String> = ls.json().as_array().expect("list").iter().filter_map(|e| e["name"].as_str().map(str::to_string)).collect();
        names.sort();
        assert_eq!(names, ["data", "notes.md", "out", "repo"]);
        assert_eq!(o.read(&r1, "repo/README.md").await.body, "# served repo\n");
        assert_eq!(o.read(&r1, "repo/src/lib.txt").await.body, "library\n");
        o.read(&r1, "repo/.git/HEAD").await.problem(404);
        let (status, raw) = get_bytes(&o, &format!("/api/v1/runs/{r1}/workspace/files?path={}", urlencode("data/raw.bin"))).await;
        assert_eq!((status, raw), (200, vec![0u8, 1, 2, 255]));
        let e = o.exec(&r1, "printenv GREETING").await.json();
        assert_eq!(e["stdout"], "hello\n", "{e}");
        // The repository is in the sandbox's own folder (Daytona's work dir), not at /workspace.
        let (_, dir, _) = sandbox_of(&o, &fake, &r1).await;
        assert_eq!(std::fs::read_to_string(dir.join("repo/src/lib.txt")).expect("cloned in the sandbox"), "library\n");
        o.finish(&r1).await;
        let rows = o.rows(&r1).await;
        assert_eq!(rows[0], row("mkdir", "/workspace/out", true, ""), "{rows:?}");
        assert_eq!(rows[1], row("execute", &format!("git clone {} /workspace/repo", repo.url), true, "cloned"), "{rows:?}");
        let mut writes = rows[2..4].to_vec();
        writes.sort();
        assert_eq!(writes, vec![row("write", "/workspace/data/raw.bin", true, "4 bytes"), row("write", "/workspace/notes.md", true, "5 bytes")]);
        assert_eq!(rows[4], row("ls", "/workspace", true, "4 entries"), "{rows:?}");

        // A later run of the same workspace attaches: nothing is written again.
        let r2 = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&r2, "notes.md", "changed").await.status, 204);
        assert_eq!(o.read(&r2, "notes.md").await.body, "changed");
        o.finish(&r2).await;
        assert_eq!(
            o.rows(&r2).await,
            vec![row("write", "/workspace/notes.md", true, "7 bytes"), row("read", "/workspace/notes.md", true, "7 bytes")]
        );
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
