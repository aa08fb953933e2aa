//! People are named (issue 49): a run says whose it is and whose agent, in the API and on the
//! conversation's page; two people's workspaces of one agent are told apart by the person; an
//! attached file names whoever attached it; an operation log row names its run's person. A person
//! is named only to fellow members of the organization, and no longer once they left. On SQLite
//! and PostgreSQL (`state` agents, and the real sandboxd peer for attachments), and in Chromium at
//! 1280 and 390 px with axe (serious and critical = 0) on the conversation's page, Documents and a
//! workspace's tree.

use reqwest::Method;
use serde_json::{json, Value};

use crate::browser;
use crate::browser_attach::{both_widths, wide_browser};
use crate::browser_documents::user_id;
use crate::browser_screens::js;
use crate::db_test;
use crate::helpers::{Client, MEMBER_PASSWORD, OWNER_EMAIL};
use crate::peer;
use crate::support::browser_sign_in::sign_in_as;
use crate::support::{service_agent, urlencode, Org};

/// The membership id of `email` (what `DELETE /api/v1/members/{id}` takes).
async fn membership_id(o: &Org<'_>, email: &str) -> String {
    let members: Value = o.call(Method::GET, "/api/v1/members", None).await.json();
    members
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["email"] == email)
        .and_then(|m| m["id"].as_str())
        .unwrap_or_else(|| panic!("{email} in {members}"))
        .to_string()
}

/// Each group's title on Documents' answer, sorted.
fn titles(page: &Value) -> Vec<String> {
    let mut t: Vec<String> = page["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g["workspace"]["title"].as_str().map(str::to_string))
        .collect();
    t.sort();
    t
}

db_test! {
    async fn runs_and_workspaces_name_their_person_and_agent_to_fellow_members_only(app: TestApp) {
        let o = Org::new(&app).await;
        let mia = app.member_with_role("mia@example.com", "member").await;
        let _noah = app.member_with_role("noah@example.com", "member").await;
        let mia_id = user_id(&o, "mia@example.com").await;
        let noah_id = user_id(&o, "noah@example.com").await;
        let agent = o.agent(json!({"name": "Personal tutor", "backend": "state", "scope": "user"})).await;
        let mut runs = Vec::new();
        for (who, id) in [("mia", &mia_id), ("noah", &noah_id)] {
            let conv = o.conversation(&agent, json!({"title": format!("{who}'s lessons"), "member_user_ids": [id]})).await;
            let run = o.run(&agent, Some(&conv), json!({"user_id": id})).await;
            assert_eq!(o.write(&run, "notes.md", who).await.status, 204);
            o.finish(&run).await;
            runs.push((conv, run));
        }
        let (mia_conv, mia_run) = &runs[0];
        let (_, noah_run) = &runs[1];

        // The API: the run names its person and its agent, beside the fields it had.
        let r = o.call(Method::GET, &format!("/api/v1/runs/{mia_run}"), None).await.json();
        assert_eq!(
            (&r["started_by"], &r["user_id"], &r["user_name"], &r["agent_name"]),
            (&json!("member"), &json!(mia_id), &json!("mia@example.com"), &json!("Personal tutor")),
            "{r}"
        );
        let list = o.call(Method::GET, &format!("/api/v1/runs?agent_id={agent}"), None).await.json();
        let names: Vec<&Value> = list["runs"].as_array().expect("runs").iter().map(|r| &r["user_name"]).collect();
        assert_eq!(names, [&json!("noah@example.com"), &json!("mia@example.com")], "{list}");
        // A member sees her own run named, as the conversation's page does.
        let mine = mia.api(Method::GET, &format!("/api/v1/runs/{mia_run}"), None).await.json();
        assert_eq!(mine["user_name"], "mia@example.com", "{mine}");

        // The conversation's page: the runs table and the latest run say who, not "member".
        let page = mia.get(&format!("/conversations/{mia_conv}")).await;
        assert_eq!(page.status, 200);
        assert_eq!(page.select_all("#runs-table td.started-by"), ["mia@example.com"], "{}", page.body);
        let latest = page.select_text("#workspace-latest-run").unwrap_or_default();
        assert!(latest.contains("started by mia@example.com"), "{latest}");

        // Documents: the two personal workspaces of one agent are told apart by the person.
        let all = o.call(Method::GET, "/api/v1/documents", None).await.json();
        assert_eq!(
            titles(&all),
            ["Personal tutor · mia@example.com's workspace", "Personal tutor · noah@example.com's workspace"],
            "{all}"
        );
        let hers = mia.api(Method::GET, "/api/v1/documents", None).await.json();
        assert_eq!(titles(&hers), ["Personal tutor · mia@example.com's workspace"], "{hers}");
        let page = mia.get("/documents").await;
        let headings = page.select_all("[id^='group-'] h2");
        assert_eq!(headings.len(), 1, "{}", page.body);
        assert!(headings[0].contains("Personal tutor · mia@example.com's workspace"), "{headings:?}");

        // Another organization sees no run, so no name.
        let other = app.other_org_user("eve@example.com", "Other").await;
        other.api(Method::GET, &format!("/api/v1/runs/{mia_run}"), None).await.problem(404);
        let theirs = other.api(Method::GET, "/api/v1/runs", None).await.json();
        assert_eq!(theirs["runs"], json!([]), "{theirs}");

        // A person who left is no longer named: the run keeps its person's id, not the name.
        let membership = membership_id(&o, "noah@example.com").await;
        let removed = o.call(Method::DELETE, &format!("/api/v1/members/{membership}"), None).await;
        assert!(removed.status.is_success(), "{}", removed.body);
        let r = o.call(Method::GET, &format!("/api/v1/runs/{noah_run}"), None).await.json();
        assert_eq!((&r["user_id"], &r["user_name"]), (&json!(noah_id), &Value::Null), "{r}");
    }
}

/// What the conversation page's drop zone sends for one file.
async fn attach(c: &Client, conversation: &str, name: &str, bytes: &[u8]) {
    let token = c.csrf().await;
    let url = c.url(&format!("/conversations/{conversation}/files?name={}", urlencode(name)));
    let rb = c.http.post(url).header("content-type", "application/octet-stream").header("x-csrf-token", token);
    let r = c.send(rb.body(bytes.to_vec())).await;
    assert_eq!(r.status, 200, "{}", r.body);
}

/// The `added_by_name` of each attached tile on Documents' answer, by path.
fn attached_by(page: &Value) -> Vec<(String, Value)> {
    let mut t: Vec<(String, Value)> = page["tiles"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["file"]["added_by"] == "person")
        .map(|t| (t["file"]["path"].as_str().unwrap_or_default().to_string(), t["file"]["added_by_name"].clone()))
        .collect();
    t.sort_by(|a, b| a.0.cmp(&b.0));
    t
}

db_test! {
    async fn an_attached_file_names_the_person_who_attached_it_while_they_are_a_member(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let mia = app.member_with_role("mia@example.com", "member").await;
        let mia_id = user_id(&o, "mia@example.com").await;
        let agent = o.agent(service_agent("reader", "conversation")).await;
        let conv = o.conversation(&agent, json!({"title": "Quarter", "member_user_ids": [mia_id]})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;
        // The agent writes under uploads/ itself: no one attached it, so no one is named.
        assert_eq!(o.write(&run, "uploads/by-agent.txt", "agent").await.status, 204);
        attach(&mia, &conv, "brief.txt", b"the brief").await;

        let page = o.call(Method::GET, "/api/v1/documents?who=person", None).await.json();
        assert_eq!(
            attached_by(&page),
            [("uploads/brief.txt".to_string(), json!("mia@example.com")), ("uploads/by-agent.txt".to_string(), Value::Null)],
            "{page}"
        );
        let workspace = page["groups"][0]["workspace"]["id"].as_str().expect("workspace").to_string();
        // Her own view, the page's tiles and the workspace's tree say it in words.
        let hers = mia.api(Method::GET, "/api/v1/documents?who=person", None).await.json();
        assert_eq!(attached_by(&hers)[0].1, json!("mia@example.com"), "{hers}");
        let html = mia.get("/documents").await;
        let words = html.select_all(".tile-meta");
        assert!(words.iter().any(|w| w.starts_with("attached by mia@example.com")), "{words:?}");
        let tree = mia.get(&format!("/documents/workspaces/{workspace}")).await;
        let rows = tree.select_all(".tree-file");
        assert!(rows.iter().any(|r| r.contains("brief.txt") && r.contains("attached by mia@example.com")), "{rows:?}");
        assert!(rows.iter().any(|r| r.contains("by-agent.txt") && r.contains("attached by a person")), "{rows:?}");

        // The operation log names the run's person beside its agent (the owner started the run),
        // and its upload row's detail names who attached the file.
        let log = o.call(Method::GET, &format!("/api/v1/operations?run_id={run}"), None).await.json();
        let items = log["items"].as_array().expect("items");
        assert!(!items.is_empty() && items.iter().all(|i| i["user_name"] == OWNER_EMAIL), "{log}");
        let activity = app.web.get(&format!("/sandboxes/activity?run_id={run}")).await;
        let agents = activity.select_all("#oplog-rows td.agent");
        assert!(!agents.is_empty(), "{}", activity.body);
        assert!(agents.iter().all(|a| a.contains(&format!("reader for {OWNER_EMAIL}"))), "{agents:?}");

        // Once she left the organization she is no longer named.
        let membership = membership_id(&o, "mia@example.com").await;
        let removed = o.call(Method::DELETE, &format!("/api/v1/members/{membership}"), None).await;
        assert!(removed.status.is_success(), "{}", removed.body);
        let page = o.call(Method::GET, "/api/v1/documents?who=person", None).await.json();
        assert_eq!(attached_by(&page)[0], ("uploads/brief.txt".to_string(), Value::Null), "{page}");
    }
}

db_test! {
    async fn a_member_sees_who_started_runs_and_attached_files_in_chromium(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("a_member_sees_who_started_runs_and_attached_files_in_chromium") {
            return Ok(());
        }
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let mia = app.member_with_role("mia@example.com", "member").await;
        let mia_id = user_id(&o, "mia@example.com").await;
        let agent = o.agent(service_agent("reader", "conversation")).await;
        let conv = o.conversation(&agent, json!({"title": "Quarter", "member_user_ids": [mia_id]})).await;
        let run = o.run(&agent, Some(&conv), json!({"user_id": mia_id})).await;
        assert_eq!(o.write(&run, "notes.md", "# Notes\n").await.status, 204);
        attach(&mia, &conv, "brief.txt", b"the brief").await;
        let page = o.call(Method::GET, "/api/v1/documents", None).await.json();
        let workspace = page["groups"][0]["workspace"]["id"].as_str().expect("workspace").to_string();

        let b = wide_browser().await?;
        sign_in_as(&b, &app.address, "mia@example.com", MEMBER_PASSWORD).await?;
        b.goto(&format!("{}/conversations/{conv}", app.address)).await?;
        b.wait_for_text("#runs-table td.started-by", "mia@example.com").await?;
        b.wait_for_text("#workspace-latest-run", "started by mia@example.com").await?;
        both_widths(&b, "a conversation's page naming who started its run").await?;
        b.goto(&format!("{}/documents", app.address)).await?;
        b.wait_for_text(".tile[data-path='uploads/brief.txt'] .tile-meta", "attached by mia@example.com").await?;
        both_widths(&b, "Documents naming who attached a file").await?;
        b.goto(&format!("{}/documents/workspaces/{workspace}", app.address)).await?;
        // The tree's row, read whether or not its folder is open.
        b.wait_for(".tree-file[data-path='uploads/brief.txt']").await?;
        let row = js(&b, "return document.querySelector(\".tree-file[data-path='uploads/brief.txt']\").textContent").await?;
        anyhow::ensure!(row.as_str().is_some_and(|t| t.contains("attached by mia@example.com")), "{row}");
        both_widths(&b, "a workspace's tree naming who attached a file").await?;
        b.close().await?;
        Ok(())
    }
}
