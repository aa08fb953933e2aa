//! Documents against the real sandboxd peer and the `state` backend, on SQLite and PostgreSQL:
//! bounded listings and what they say (with tiles and previews on every host kind, by
//! `host_test!`), exclusions, unreadable folders, thumbnails within their
//! budget and cached, safe file serving, and who sees which workspace.

use std::path::{Path, PathBuf};

use reqwest::Method;
use serde_json::{json, Value};

use crate::hosts::Host;
use crate::peer::{self, Peer, PeerOptions};
use crate::snapshots::{get_bytes, put_bytes};
use crate::support::documents::workspaces_seen_by;
use crate::support::{service_agent, urlencode, Org};
use crate::{db_test, host_test};

/// A conversation-scoped service agent's workspace on `peer`, opened through our API (one file,
/// `hello.txt`), and where its files are on the peer's disk.
struct Seeded {
    workspace_id: String,
    dir: PathBuf,
}

async fn seeded(o: &Org<'_>, peer: &Peer, agent_name: &str) -> Seeded {
    let agents = o.call(Method::GET, "/api/v1/agents", None).await.json();
    let agent = match agents.as_array().and_then(|a| a.iter().find(|x| x["name"] == agent_name)) {
        Some(a) => a["id"].as_str().expect("id").to_string(),
        None => o.agent(service_agent(agent_name, "conversation")).await,
    };
    let conversation = o.conversation(&agent, json!({})).await;
    let run = o.run(&agent, Some(&conversation), json!({})).await;
    assert_eq!(o.write(&run, "hello.txt", "hello").await.status, 204);
    let state = o.ws(&run, Method::GET, "state", None).await.json();
    let key = state["session_key"].as_str().expect("key").to_string();
    let workspace_id = workspace_of(o, &conversation).await;
    Seeded { workspace_id, dir: peer.workspace_root.join(&key).join("workspace") }
}

/// The id of the workspace whose group names `conversation`.
async fn workspace_of(o: &Org<'_>, conversation: &str) -> String {
    let page = o.call(Method::GET, "/api/v1/documents", None).await.json();
    page["groups"]
        .as_array()
        .and_then(|g| g.iter().find(|g| g["workspace"]["conversation_id"] == conversation))
        .and_then(|g| g["workspace"]["id"].as_str())
        .unwrap_or_else(|| panic!("no group for {conversation}: {page}"))
        .to_string()
}

/// Writes `bytes` at `path` under `dir` (a workspace's folder on its host), folders and all.
pub(crate) fn put(dir: &Path, path: &str, bytes: &[u8]) {
    let p = dir.join(path);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, bytes).expect("write");
}

/// Documents' view of workspace `id` (`GET /api/v1/documents/workspaces/{id}`).
pub(crate) async fn documents_of(o: &Org<'_>, id: &str) -> Value {
    let r = o.call(Method::GET, &format!("/api/v1/documents/workspaces/{id}"), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()
}

/// The paths of a Documents tree's folders (`dirs`) or files, sorted.
pub(crate) fn in_tree(d: &Value, dirs: bool) -> Vec<String> {
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

fn files_in_tree(d: &Value) -> Vec<String> {
    in_tree(d, false)
}

/// The tile of `path` in a Documents answer.
pub(crate) fn tile<'a>(d: &'a Value, path: &str) -> &'a Value {
    d["tiles"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["file"]["path"] == path))
        .unwrap_or_else(|| panic!("no tile for {path}: {}", d["tiles"]))
}

pub(crate) fn png(w: u32, h: u32, shade: u8) -> Vec<u8> {
    let img = image::RgbaImage::from_pixel(w, h, image::Rgba([shade, 100, 200, 255]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).expect("png");
    out.into_inner()
}

/// A conversation's workspace on `host` holding `notes/plan.md` and `uploads/photo.png`, written
/// through our API: (its session key, its folder on the host, its workspace id).
pub(crate) async fn plan_and_photo(o: &Org<'_>, host: &Host) -> (String, PathBuf, String) {
    host.connect(o).await;
    let agent = o.agent(service_agent("writer", "conversation")).await;
    let conv = o.conversation(&agent, json!({})).await;
    let run = o.run(&agent, Some(&conv), json!({})).await;
    assert_eq!(o.write(&run, "notes/plan.md", "# Plan\nship it\n").await.status, 204);
    put_bytes(o, &run, "uploads/photo.png", png(320, 200, 30)).await;
    let state = o.ws(&run, Method::GET, "state", None).await.json();
    let key = state["session_key"].as_str().expect("key").to_string();
    let dir = host.files_of(&key).await.expect("the workspace's files on its host");
    (key, dir, state["workspace_id"].as_str().expect("workspace id").to_string())
}

host_test! {
    async fn documents_list_a_workspace_within_its_bounds_and_preview_its_files(app: TestApp, host: &Host) {
        let o = Org::new(&app).await;
        let (_, dir, workspace) = plan_and_photo(&o, host).await;
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
        let page = o.call(Method::GET, "/api/v1/documents", None).await;
        assert_eq!(page.status, 200, "{}", page.body);
        assert!(!page.body.contains(host.secret()), "{}", page.body);
    }
}

db_test! {
    async fn a_deep_workspace_lists_2000_entries_and_says_it_is_not_every_file(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let s = seeded(&o, peer, "deep").await;
        // 3,000 files over 8 levels of folders, more of them near the top.
        let mut folder = String::new();
        for (level, files) in [800, 600, 500, 400, 300, 200, 100, 100].into_iter().enumerate() {
            folder.push_str(&format!("level{}/", level + 1));
            for i in 0..files {
                put(&s.dir, &format!("{folder}f{i}.txt"), b"x");
            }
        }
        let d = documents_of(&o, &s.workspace_id).await;
        assert_eq!(d["tree"].as_array().expect("tree").len(), 2000, "entries kept");
        assert_eq!(d["listing"]["limited"], true);
        assert_eq!(d["listing"]["complete"], false);
        let note = d["listing"]["note"].as_str().expect("a note");
        assert!(note.contains("not every file") && note.contains("2,000"), "{note}");
        // The page says it too.
        let page = app.web.get(&format!("/documents/workspaces/{}", s.workspace_id)).await;
        assert_eq!(page.status, 200);
        assert!(page.select_text("#workspace-listing-note").is_some_and(|t| t.contains("not every file")));
    }
}

db_test! {
    async fn excluded_folders_are_neither_shown_nor_counted_even_when_they_fill_the_listing(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let s = seeded(&o, peer, "builder").await;
        for i in 0..20_000 {
            put(&s.dir, &format!("node_modules/pkg{}/f{i}.js", i % 50), b"module");
        }
        for p in [".git/HEAD", ".venv/bin/activate", "skills/search.md", ".agenticos/state.json", "src/__pycache__/a.pyc"] {
            put(&s.dir, p, b"tooling");
        }
        let mine = ["hello.txt", "report.md", "src/app.py", "src/lib/util.py", "uploads/photo.png", "zeta/notes.txt"];
        for p in &mine[1..] {
            put(&s.dir, p, b"mine");
        }
        let d = documents_of(&o, &s.workspace_id).await;
        assert_eq!(files_in_tree(&d), mine.iter().map(|p| p.to_string()).collect::<Vec<_>>());
        assert_eq!(d["file_count"], 6);
        assert_eq!(d["size"], 5 + 4 * 5);
        assert_eq!(d["listing"]["complete"], true, "{}", d["listing"]);
        // The group on /documents counts the same, and a search finds nothing excluded.
        let page = o.call(Method::GET, "/api/v1/documents?q=js", None).await.json();
        assert_eq!(page["hits"].as_array().expect("hits").len(), 0, "{}", page["hits"]);
        // (By name: the default order is newest first, and these folders were written within moments.)
        let page = o.call(Method::GET, "/api/v1/documents?sort=name", None).await.json();
        let group = &page["groups"][0];
        assert_eq!(group["file_count"], 6);
        let folders: Vec<&str> = group["folders"].as_array().expect("folders").iter().filter_map(|f| f["name"].as_str()).collect();
        assert_eq!(folders, ["src", "zeta"]);
        let mut rows: Vec<&str> = group["files"].as_array().expect("files").iter().filter_map(|f| f["path"].as_str()).collect();
        rows.sort_unstable();
        assert_eq!(rows, ["hello.txt", "report.md", "uploads/photo.png"]);
    }
}

db_test! {
    async fn a_folder_that_cannot_be_read_is_skipped_and_the_listing_says_incomplete(app: TestApp) {
        let peer = Peer::start(PeerOptions::default().without_read_override()).await.expect("peer");
        let o = Org::new(&app).await;
        o.connect(&peer).await;
        let s = seeded(&o, &peer, "locked").await;
        put(&s.dir, "open/a.txt", b"a");
        put(&s.dir, "closed/secret.txt", b"s");
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(s.dir.join("closed"), std::fs::Permissions::from_mode(0o000)).expect("chmod");
        let d = documents_of(&o, &s.workspace_id).await;
        std::fs::set_permissions(s.dir.join("closed"), std::fs::Permissions::from_mode(0o755)).expect("chmod back");
        assert_eq!(files_in_tree(&d), ["hello.txt", "open/a.txt"]);
        assert_eq!(d["listing"]["incomplete"], true, "{}", d["listing"]);
        assert!(d["listing"]["unreadable"].is_null());
        assert!(d["listing"]["note"].as_str().is_some_and(|n| n.contains("could not be read")));
    }
}

db_test! {
    async fn thirty_images_make_24_thumbnails_and_6_glyphs_and_a_second_view_reads_none(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let s = seeded(&o, peer, "painter").await;
        std::fs::remove_file(s.dir.join("hello.txt")).expect("rm");
        for i in 0..30u8 {
            put(&s.dir, &format!("charts/c{i:02}.png"), &png(400, 300, i * 8));
        }
        let first = o.call(Method::GET, "/api/v1/documents", None).await.json();
        let tiles = first["tiles"].as_array().expect("tiles");
        assert_eq!(tiles.len(), 30);
        let thumbs = tiles.iter().filter(|t| t["thumbnail"].as_str().is_some_and(|u| u.starts_with("data:image/webp;base64,"))).count();
        assert_eq!(thumbs, 24);
        assert_eq!(tiles.iter().filter(|t| t["thumbnail"].is_null() && t["glyph"] == "image").count(), 6);
        assert_eq!(first["cost"]["image_reads"], 24);
        assert_eq!(first["cost"]["host_requests"], 25, "one listing and 24 reads");
        let second = o.call(Method::GET, "/api/v1/documents", None).await;
        // The console accounts for its time: the wait for the host's listing and the rest.
        let timing = second.header("server-timing").expect("Server-Timing");
        let dur = |name: &str| -> f64 {
            let metric = timing.split(',').map(str::trim).find(|m| m.starts_with(&format!("{name};"))).expect(name);
            metric.split(';').find_map(|p| p.strip_prefix("dur=")).and_then(|v| v.parse().ok()).expect("dur")
        };
        assert!(dur("host") > 0.0, "one listing was waited for: {timing}");
        assert!(dur("app") >= 0.0, "{timing}");
        let second = second.json();
        assert_eq!(second["cost"]["image_reads"], 0);
        assert_eq!(second["cost"]["host_requests"], 1, "the listing alone");
        assert_eq!(second["tiles"], first["tiles"]);
    }
}

db_test! {
    async fn files_are_served_safely_and_links_never_lead_outside(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let s = seeded(&o, peer, "server").await;
        put(&s.dir, "art/logo.svg", b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>");
        put(&s.dir, "art/page.html", b"<script>alert(1)</script>");
        put(&s.dir, "art/résumé.png", &png(4, 4, 1));
        std::os::unix::fs::symlink("/etc/passwd", s.dir.join("leak")).expect("symlink");
        let file = |p: &str| format!("/api/v1/documents/workspaces/{}/file?path={}", s.workspace_id, urlencode(p));

        for p in ["art/logo.svg", "art/page.html"] {
            let r = o.call(Method::GET, &file(p), None).await;
            assert_eq!(r.status, 200, "{}", r.body);
            assert_eq!(r.header("content-type").as_deref(), Some("application/octet-stream"));
            assert!(r.header("content-disposition").is_some_and(|d| d.starts_with("attachment;")), "{p}");
            assert_eq!(r.header("content-security-policy").as_deref(), Some("sandbox"));
            assert_eq!(r.header("x-content-type-options").as_deref(), Some("nosniff"));
        }
        let r = o.call(Method::GET, &file("art/résumé.png"), None).await;
        assert_eq!(r.header("content-type").as_deref(), Some("image/png"));
        assert_eq!(
            r.header("content-disposition").as_deref(),
            Some("inline; filename=\"r_sum_.png\"; filename*=UTF-8''r%C3%A9sum%C3%A9.png")
        );
        let r = o.call(Method::GET, &format!("{}&download=true", file("art/résumé.png")), None).await;
        assert!(r.header("content-disposition").is_some_and(|d| d.starts_with("attachment;")));

        // A link the sandbox planted: the host refuses it, nothing of the target comes back.
        let r = o.call(Method::GET, &file("leak"), None).await;
        assert!(matches!(r.status.as_u16(), 400 | 404), "{} {}", r.status, r.body);
        assert!(!r.body.contains("root:"), "{}", r.body);
        // Paths that climb out, NUL bytes and a missing path: clear errors, never a 5xx.
        o.call(Method::GET, &file("../../etc/passwd"), None).await.problem(400);
        o.call(Method::GET, &file("/etc/passwd"), None).await.problem(400);
        let r = o.call(Method::GET, &file("a\0b"), None).await;
        assert!(matches!(r.status.as_u16(), 400 | 422), "{}", r.status);
        o.call(Method::GET, &format!("/api/v1/documents/workspaces/{}/file", s.workspace_id), None).await.problem(422);
        o.call(Method::GET, &file("nothing-here.txt"), None).await.problem(404);
        // The listing never shows the link.
        let d = documents_of(&o, &s.workspace_id).await;
        assert!(!files_in_tree(&d).contains(&"leak".to_string()));
    }
}

db_test! {
    async fn members_see_their_conversations_workspaces_operators_all_other_orgs_none(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let alice = app.member_with_role("alice@example.com", "member").await;
        let bob = app.member_with_role("bob@example.com", "member").await;
        let ids: Vec<String> = app.scalar_strings("SELECT id FROM users ORDER BY email").await;
        let emails: Vec<String> = app.scalar_strings("SELECT email FROM users ORDER BY email").await;
        let alice_id = ids[emails.iter().position(|e| e == "alice@example.com").expect("alice")].clone();
        let agent = o.agent(service_agent("helper", "conversation")).await;
        let conv = o.conversation(&agent, json!({"title": "alice's chat", "member_user_ids": [alice_id]})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&run, "notes/plan.md", "the plan").await.status, 204);
        let workspace = workspace_of(&o, &conv).await;

        assert_eq!(workspaces_seen_by(&alice).await, std::slice::from_ref(&workspace));
        assert!(workspaces_seen_by(&bob).await.is_empty());
        let one = format!("/api/v1/documents/workspaces/{workspace}");
        assert_eq!(alice.api(Method::GET, &one, None).await.json()["workspace"]["title"], "alice's chat");
        bob.api(Method::GET, &one, None).await.problem(404);
        bob.api(Method::GET, &format!("{one}/file?path=notes/plan.md"), None).await.problem(404);
        let r = alice.api(Method::GET, &format!("{one}/file?path=notes/plan.md"), None).await;
        assert_eq!(r.body, "the plan");
        // The owner (an operator and above) sees every workspace.
        assert_eq!(o.call(Method::GET, &one, None).await.status, 200);
        // Another organization: 404, as if it did not exist.
        let other = app.other_org_user("eve@example.com", "Other").await;
        other.api(Method::GET, &one, None).await.problem(404);
        other.api(Method::GET, &format!("{one}/file?path=notes/plan.md"), None).await.problem(404);
        let none = other.api(Method::GET, "/api/v1/documents", None).await.json();
        assert!(none["groups"].as_array().expect("groups").is_empty());
        // The page: the member sees the group and the nav entry.
        let page = alice.get("/documents").await;
        assert_eq!(page.status, 200);
        assert!(page.select_text(&format!("#group-{workspace} h2")).is_some_and(|t| t.contains("alice's chat")));
        assert!(page.select_attr("nav a[href='/documents']", "href").is_some());
        let page = bob.get("/documents").await;
        assert!(page.select_text("#documents-empty").is_some());
    }
}

db_test! {
    async fn a_state_workspace_is_listed_from_the_database_with_its_usage(app: TestApp) {
        let o = Org::new(&app).await;
        let agent = o.agent(json!({"name": "keeper", "backend": "state", "scope": "user"})).await;
        let conv = o.conversation(&agent, json!({})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&run, "uploads/a.txt", "attached").await.status, 204);
        assert_eq!(o.write(&run, "out/b.md", "# written").await.status, 204);
        assert_eq!(o.write(&run, "skills/x.md", "skill").await.status, 204);
        // A shared `state` workspace takes a run's changes when the run finishes (the merge).
        let finished = o.call(Method::POST, &format!("/api/v1/runs/{run}/finish"), None).await;
        assert_eq!(finished.status, 200);
        let page = o.call(Method::GET, "/api/v1/documents?who=person", None).await.json();
        let group = &page["groups"][0];
        assert_eq!(group["workspace"]["location"], "stored");
        assert_eq!(group["workspace"]["scope"], "user");
        assert_eq!(group["workspace"]["owner_name"], crate::helpers::OWNER_EMAIL);
        assert_eq!(group["workspace"]["limit_bytes"], 4_194_304);
        assert_eq!(group["file_count"], 1, "only the attachment: {group}");
        assert_eq!(page["cost"]["host_requests"], 0);
        let tiles = page["tiles"].as_array().expect("tiles");
        assert_eq!(tiles.len(), 1);
        assert_eq!(tiles[0]["file"]["added_by"], "person");
        assert_eq!(tiles[0]["text_preview"], "attached");
        o.call(Method::GET, "/api/v1/documents?who=robot", None).await.problem(422);
        o.call(Method::GET, "/api/v1/documents?cursor=nonsense", None).await.problem(422);
        let long = "x".repeat(201);
        o.call(Method::GET, &format!("/api/v1/documents?q={long}"), None).await.problem(422);
        let page = app.web.get("/documents?who=robot").await;
        assert_eq!(page.status, 200);
        assert!(page.select_text("#documents-error").is_some_and(|t| t.contains("who")));
    }
}

db_test! {
    async fn a_person_browses_documents_in_a_real_browser(app: TestApp) -> anyhow::Result<()> {
        if !crate::browser::browser_or_skip("a_person_browses_documents_in_a_real_browser") {
            return Ok(());
        }
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let s = seeded(&o, peer, "analyst").await;
        put(&s.dir, "report.md", b"# Quarterly report\nRevenue went up.");
        put(&s.dir, "charts/growth.png", &png(320, 200, 40));
        put(&s.dir, "uploads/brief.txt", b"Please summarise the quarter.");
        put(&s.dir, "node_modules/left-pad/index.js", b"module.exports = 1");

        let b = crate::browser::Browser::start().await?;
        b.goto(&format!("{}/login", app.address)).await?;
        b.fill("#email", crate::helpers::OWNER_EMAIL).await?;
        b.fill("#password", crate::helpers::OWNER_PASSWORD).await?;
        b.click("button[type=submit]").await?;
        b.wait_for("nav.sidebar-nav").await?;
        b.click("nav.sidebar-nav a[href='/documents']").await?;
        // Groups and thumbnails.
        b.wait_for(&format!("#group-{}", s.workspace_id)).await?;
        b.wait_for("#documents-tiles img.tile-thumb").await?;
        // Read once shown: swapped-in content fades in from opacity 0 (`.htmx-added`), and a
        // browser reads no text of an element it does not show.
        let group = b.wait_for_text(&format!("#group-{}", s.workspace_id), "report.md").await?;
        assert!(group.contains("charts/") && !group.contains("node_modules"), "{group}");
        // Only what a person attached.
        b.click("#documents-who a[data-who='person']").await?;
        b.wait_for_text("#documents-who a[aria-current='page']", "Attached by a person").await?;
        let tiles = b.wait_for_text("#documents-tiles", "brief.txt").await?;
        assert!(!tiles.contains("report.md"), "{tiles}");
        // A search lists hits flat.
        b.click("#documents-who a[data-who='anyone']").await?;
        b.wait_for_text("#documents-who a[aria-current='page']", "Anyone").await?;
        b.fill("#documents-q", "growth").await?;
        b.click("#documents-search button[type=submit]").await?;
        b.wait_for_text("#documents-hits", "growth.png").await?;
        // A workspace's page: its tree, a text file's preview, then an image's.
        b.click(&format!("#group-{} h2 a", s.workspace_id)).await?;
        b.wait_for("#workspace-tree").await?;
        b.click("#workspace-tree li[data-path='report.md'] a").await?;
        b.wait_for_text("#preview-markdown", "Revenue went up.").await?;
        b.wait_for_text("#preview-markdown h1", "Quarterly report").await?;
        b.click("#workspace-tree li[data-path='charts/growth.png'] a").await?;
        b.wait_for("#preview-image").await?;
        let width = b
            .client
            .execute(
                "const i = document.querySelector('#preview-image'); \
                 return new Promise(r => i.complete ? r(i.naturalWidth) : i.addEventListener('load', () => r(i.naturalWidth)));",
                vec![],
            )
            .await?;
        assert_eq!(width, json!(320), "the image was served and drawn");
        b.close().await
    }
}

db_test! {
    async fn an_older_host_is_listed_one_workspace_at_a_time_and_a_much_older_one_is_unreadable(app: TestApp) {
        let o = Org::new(&app).await;
        // Before 0.2.37: no `trees`, one `tree` per workspace.
        let old = Peer::start(PeerOptions::default().drop_route("/workspaces/trees")).await.expect("peer");
        o.connect_with(&old, json!({"save_anyway": true})).await;
        let a = seeded(&o, &old, "first").await;
        let b = seeded(&o, &old, "first").await;
        put(&b.dir, "notes/todo.md", b"- list");
        let page = o.call(Method::GET, "/api/v1/documents", None).await.json();
        assert_eq!(page["cost"]["host_requests"], 2 + 2, "a failed trees, then one tree each: {}", page["cost"]);
        let counts: Vec<i64> = page["groups"].as_array().expect("groups").iter().filter_map(|g| g["file_count"].as_i64()).collect();
        assert_eq!(counts, [2, 1], "{page}");
        assert!(page["groups"].as_array().expect("groups").iter().all(|g| g["listing"]["complete"] == true));
        let _ = a;

        // Before 0.2.35: no listing at all. Its workspace is unreadable, saying why; the page stands.
        let older = Peer::start(
            PeerOptions::default().drop_route("/workspaces/trees").drop_route("/workspaces/{session_id}/tree"),
        )
        .await
        .expect("peer");
        let agent = o.agent(json!({"name": "second", "backend": "service", "scope": "conversation",
            "connection_id": o.connect_with(&older, json!({"save_anyway": true})).await})).await;
        let conv = o.conversation(&agent, json!({"title": "on the old host"})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&run, "x.txt", "x").await.status, 204);
        let page = o.call(Method::GET, "/api/v1/documents", None).await.json();
        let groups = page["groups"].as_array().expect("groups");
        assert_eq!(groups.len(), 3);
        let unreadable = groups.iter().find(|g| g["workspace"]["conversation_id"] == conv.as_str()).expect("its group");
        let reason = unreadable["listing"]["unreadable"].as_str().expect("unreadable");
        assert!(reason.contains("older than sandboxd 0.2.35"), "{reason}");
        assert_eq!(groups.iter().filter(|g| g["listing"]["complete"] == true).count(), 2);
        let html = app.web.get("/documents").await;
        assert_eq!(html.status, 200);
        assert!(html.body.contains("older than sandboxd 0.2.35"));
    }
}

/// A PNG of `w`×`h` in one shade, padded at its end (after `IEND`, which decoders ignore) to
/// `size` bytes: two images of different content and the same size.
fn png_of_size(w: u32, h: u32, shade: u8, size: usize) -> Vec<u8> {
    let mut bytes = png(w, h, shade);
    assert!(bytes.len() <= size, "{} > {size}", bytes.len());
    bytes.resize(size, 0);
    bytes
}

db_test! {
    async fn a_state_file_keeps_when_it_was_written_for_newest_first_and_its_thumbnail(app: TestApp) {
        let o = Org::new(&app).await;
        let agent = o.agent(json!({"name": "dated", "backend": "state", "scope": "run"})).await;
        let run = o.run(&agent, None, json!({})).await;
        let put_png = |bytes: Vec<u8>| {
            let url = o.app.web.url(&format!("/api/v1/runs/{run}/workspace/files?path=chart.png"));
            o.app.web.send(reqwest::Client::new().put(url).bearer_auth(&o.token).body(bytes))
        };
        // Written in this order: the newest first is not the order of the paths.
        assert_eq!(o.write(&run, "a-first.txt", "first").await.status, 204);
        assert_eq!(o.write(&run, "b-second.txt", "second").await.status, 204);
        assert_eq!(put_png(png_of_size(40, 30, 10, 400)).await.status, 204);
        let page = o.call(Method::GET, "/api/v1/documents", None).await.json();
        let tiles = page["tiles"].as_array().expect("tiles");
        let paths: Vec<&str> = tiles.iter().filter_map(|t| t["file"]["path"].as_str()).collect();
        assert_eq!(paths, ["chart.png", "b-second.txt", "a-first.txt"], "{page}");
        assert!(tiles.iter().all(|t| t["file"]["modified_at"].as_str().is_some_and(|m| m.ends_with("+00:00"))), "{page}");
        let first = tiles[0]["thumbnail"].as_str().expect("a thumbnail").to_string();

        // The image rewritten with other pixels and the same size: a new thumbnail, not the
        // cached one.
        assert_eq!(put_png(png_of_size(40, 30, 250, 400)).await.status, 204);
        let page = o.call(Method::GET, "/api/v1/documents", None).await.json();
        let tile = &page["tiles"][0];
        assert_eq!(tile["file"]["path"], "chart.png");
        assert_eq!(tile["file"]["size"], 400);
        assert_ne!(tile["thumbnail"].as_str().expect("a thumbnail"), first);
    }
}
