//! Documents as a member uses it (issue 30), on SQLite and PostgreSQL: sorting by newest, name or
//! size and filtering by type (groups without a match left out, a wrong value said inline);
//! search and the "who" filter read every workspace the person may see, not the page of 50, and
//! say what they counted; and in real Chromium on a phone (390 px) a workspace's tree folds and
//! filters from the keyboard, a file opens as a sheet where the person is, and a member is not
//! offered "Restore into a new run" (which their role is refused).

use reqwest::Method;
use serde_json::{json, Value};

use crate::browser::{self, Browser};
use crate::browser_screens::{js, wait_until};
use crate::db_test;
use crate::helpers::{Resp, MEMBER_PASSWORD};
use crate::peer;
use crate::support::browser_sign_in::sign_in_as;
use crate::support::{service_agent, urlencode, Org};

/// The `data-path`s of a group's file rows, in order.
fn rows_of(page: &Resp, workspace: &str) -> Vec<String> {
    let sel = scraper::Selector::parse(&format!("#group-{workspace} tr.document-file")).expect("selector");
    page.html().select(&sel).filter_map(|e| e.value().attr("data-path").map(str::to_string)).collect()
}

/// The ids of the groups shown, in order.
fn groups_of(page: &Resp) -> Vec<String> {
    let sel = scraper::Selector::parse("section.document-group").expect("selector");
    page.html()
        .select(&sel)
        .filter_map(|e| e.value().attr("id").and_then(|id| id.strip_prefix("group-")).map(str::to_string))
        .collect()
}

/// The workspace of the `n`-th newest group of the API's first page.
async fn newest_workspace(o: &Org<'_>) -> String {
    let page = o.call(Method::GET, "/api/v1/documents", None).await.json();
    page["groups"][0]["workspace"]["id"].as_str().unwrap_or_else(|| panic!("a group: {page}")).to_string()
}

db_test! {
    async fn documents_sort_filter_by_type_and_search_every_workspace_not_the_page_of_50(app: TestApp) {
        let o = Org::new(&app).await;
        let agent = o.agent(json!({"name": "filer", "backend": "state", "scope": "run"})).await;
        // The oldest workspace holds the only data file and the only attachment: on page 2.
        let first = o.run(&agent, None, json!({})).await;
        assert_eq!(o.write(&first, "needle/table.csv", "a,b\n1,2\n").await.status, 204);
        assert_eq!(o.write(&first, "uploads/brief.txt", "Summarise.").await.status, 204);
        let oldest = newest_workspace(&o).await;
        for i in 0..50 {
            let run = o.run(&agent, None, json!({})).await;
            assert_eq!(o.write(&run, &format!("note-{i:02}.txt"), "x").await.status, 204);
        }
        // The newest: three files written in this order, of different sizes.
        let run = o.run(&agent, None, json!({})).await;
        assert_eq!(o.write(&run, "b-middle.md", &"m".repeat(300)).await.status, 204);
        assert_eq!(o.write(&run, "C-large.py", &"l".repeat(900)).await.status, 204);
        assert_eq!(o.write(&run, "a-small.txt", "s").await.status, 204);
        let newest = newest_workspace(&o).await;

        // Unfiltered: a page of 50 workspaces, the oldest on the next page.
        let page = app.web.get("/documents").await;
        assert_eq!(page.status, 200);
        assert_eq!(groups_of(&page).len(), 50);
        assert!(!groups_of(&page).contains(&oldest) && page.select_text("#documents-next").is_some());
        assert!(page.select_text("#documents-count").is_none(), "no filter, nothing counted");
        // Newest first by default, by name, by size (largest first).
        assert_eq!(rows_of(&page, &newest), ["a-small.txt", "C-large.py", "b-middle.md"]);
        let by_name = app.web.get("/documents?sort=name").await;
        assert_eq!(rows_of(&by_name, &newest), ["a-small.txt", "b-middle.md", "C-large.py"]);
        assert_eq!(by_name.select_attr("#documents-sort option[selected]", "value").as_deref(), Some("name"));
        let by_size = app.web.get("/documents?sort=size").await;
        assert_eq!(rows_of(&by_size, &newest), ["C-large.py", "b-middle.md", "a-small.txt"]);

        // A type: only the groups with such files, found beyond the first page, and counted.
        let data = app.web.get("/documents?type=data").await;
        assert_eq!(groups_of(&data), [oldest.as_str()]);
        assert_eq!(
            data.select_text("#documents-count").as_deref(),
            Some("1 data file in 1 of the 52 workspaces you may see. Workspaces without such files are left out.")
        );
        assert!(data.select_text("#documents-empty").is_none());
        let code = app.web.get("/documents?type=code").await;
        assert_eq!(groups_of(&code), [newest.as_str()]);
        assert_eq!(rows_of(&code, &newest), ["C-large.py"]);
        let none = app.web.get("/documents?type=images").await;
        assert!(groups_of(&none).is_empty());
        assert!(none.select_text("#documents-count").is_some_and(|t| t.starts_with("0 images in 0 of the 52")));

        // Search and "who" read every workspace too.
        let hits = app.web.get("/documents?q=needle").await;
        assert_eq!(hits.select_all("#documents-hit-tiles li.tile").len(), 1, "{}", hits.body);
        assert!(hits.select_text("#documents-count").is_some_and(|t| t.starts_with("1 file matches “needle” in 1 of the 52 workspaces you may see.")));
        let person = app.web.get("/documents?who=person").await;
        assert_eq!(groups_of(&person), [oldest.as_str()]);
        assert!(person.select_text("#documents-count").is_some_and(|t| t.starts_with("1 file attached by a person in 1 of the 52")));
        let api = o.call(Method::GET, "/api/v1/documents?q=note-&sort=name", None).await.json();
        assert_eq!(api["reach"]["files"], 50, "{}", api["reach"]);
        assert_eq!((api["reach"]["workspaces"].as_u64(), api["reach"]["searched"].as_u64()), (Some(50), Some(52)));
        assert_eq!(api["groups"].as_array().map(Vec::len), Some(50));
        assert!(api["next_cursor"].is_null(), "50 groups matched: one page");
        assert_eq!(api["hits"][0]["file"]["name"], "note-00.txt");
        // A filtered page of 50 groups goes on after its last one.
        let all_agent = o.call(Method::GET, "/api/v1/documents?who=agent", None).await.json();
        assert_eq!(all_agent["groups"].as_array().map(Vec::len), Some(50));
        let cursor = all_agent["next_cursor"].as_str().expect("a next page").to_string();
        let rest = o.call(Method::GET, &format!("/api/v1/documents?who=agent&cursor={}", urlencode(&cursor)), None).await.json();
        let rest_ids: Vec<&str> = rest["groups"].as_array().expect("groups").iter().filter_map(|g| g["workspace"]["id"].as_str()).collect();
        // 52 workspaces hold the agent's files: the last 2 on the next page, none twice.
        assert_eq!((rest_ids.len(), rest_ids.last().copied()), (2, Some(oldest.as_str())));
        assert!(all_agent["groups"].as_array().expect("groups").iter().all(|g| !rest_ids.contains(&g["workspace"]["id"].as_str().unwrap_or(""))));
        assert!(rest["next_cursor"].is_null());

        // A value the page does not know is said inline, never a 500; the API answers 422.
        for (query, field) in [("sort=oldest", "sort"), ("type=videos", "type")] {
            let bad = app.web.get(&format!("/documents?{query}")).await;
            assert_eq!(bad.status, 200, "{query}");
            assert!(bad.select_text("#documents-error").is_some_and(|t| t.starts_with(field)), "{}", bad.body);
            let p = o.call(Method::GET, &format!("/api/v1/documents?{query}"), None).await;
            p.problem(422);
            assert_eq!(p.problem_fields(), [field]);
        }
    }
}

/// The member's id, from the members list.
pub(crate) async fn user_id(o: &Org<'_>, email: &str) -> String {
    let members: Value = o.call(Method::GET, "/api/v1/members", None).await.json();
    members
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["email"] == email)
        .and_then(|m| m["user_id"].as_str())
        .unwrap_or_else(|| panic!("{email} in {members}"))
        .to_string()
}

/// A browser whose page is 390 px wide (a window opened that narrow is widened: it is resized
/// once open, its frame added).
pub(crate) async fn phone() -> anyhow::Result<Browser> {
    let b = Browser::start_with_args(&["--window-size=390,844", "--hide-scrollbars"]).await?;
    b.goto("about:blank").await?;
    let frame =
        js(&b, "return [window.outerWidth - window.innerWidth, window.outerHeight - window.innerHeight]").await?;
    let extra = |i: usize| frame[i].as_u64().and_then(|n| u32::try_from(n).ok()).unwrap_or(0);
    b.client.set_window_size(390 + extra(0), 844 + extra(1)).await?;
    anyhow::ensure!(js(&b, "return window.innerWidth").await? == json!(390), "not 390 px wide");
    Ok(b)
}

async fn fits(b: &Browser, what: &str) -> anyhow::Result<()> {
    let wide = js(b, "return document.scrollingElement.scrollWidth - window.innerWidth").await?;
    anyhow::ensure!(wide.as_f64().unwrap_or(1.0) <= 0.0, "{what} scrolls sideways by {wide} px");
    Ok(())
}

const ENTER: &str = "\u{E007}";

db_test! {
    async fn on_a_phone_a_member_folds_and_filters_a_tree_and_opens_a_file_as_a_sheet(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("on_a_phone_a_member_folds_and_filters_a_tree_and_opens_a_file_as_a_sheet") {
            return Ok(());
        }
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let email = "reader@example.com";
        let member = app.member_with_role(email, "member").await;
        let member_id = user_id(&o, email).await;
        // A host workspace with a long tree, and a stored one with notes only.
        let writer = o.agent(service_agent("writer", "conversation")).await;
        let conv = o.conversation(&writer, json!({"title": "Quarter", "member_user_ids": [member_id]})).await;
        let run = o.run(&writer, Some(&conv), json!({})).await;
        for i in 1..=30 {
            assert_eq!(o.write(&run, &format!("notes/day-{i:02}.md"), &format!("# Day {i}\n")).await.status, 204);
        }
        assert_eq!(o.write(&run, "data/table.csv", "n,square\n1,1\n2,4\n").await.status, 204);
        assert_eq!(o.write(&run, "zz/last.md", "# The last file\n\nAt the bottom of the tree.").await.status, 204);
        let keeper = o.agent(json!({"name": "keeper", "backend": "state", "scope": "conversation"})).await;
        let other = o.conversation(&keeper, json!({"title": "Checklist", "member_user_ids": [member_id]})).await;
        let notes_run = o.run(&keeper, Some(&other), json!({})).await;
        assert_eq!(o.write(&notes_run, "checklist.md", "- laptop").await.status, 204);
        let page = o.call(Method::GET, "/api/v1/documents", None).await.json();
        let id_of = |conversation: &str| {
            page["groups"].as_array().into_iter().flatten()
                .find(|g| g["workspace"]["conversation_id"] == conversation)
                .and_then(|g| g["workspace"]["id"].as_str()).map(str::to_string)
                .unwrap_or_else(|| panic!("no group for {conversation}: {page}"))
        };
        let (host_ws, stored_ws) = (id_of(&conv), id_of(&other));
        let taken = o.call(Method::POST, &format!("/api/v1/workspaces/{host_ws}/snapshots"), None).await;
        assert_eq!(taken.status, 201, "{}", taken.body);
        let snapshot = taken.json()["id"].as_str().expect("snapshot id").to_string();

        let b = phone().await?;
        sign_in_as(&b, &app.address, email, MEMBER_PASSWORD).await?;
        b.goto(&format!("{}/documents", app.address)).await?;
        // A type and an order, from the page's own controls.
        b.wait_for("#documents-type").await?;
        js(&b, "const s = document.querySelector('#documents-type'); s.value = 'data'; \
                document.querySelector('#documents-sort').value = 'size'; return true").await?;
        b.click("#documents-search button[type=submit]").await?;
        b.wait_for_text("#documents-count", "1 data file in 1 of the 2 workspaces you may see.").await?;
        b.wait_for(&format!("#group-{host_ws}")).await?;
        anyhow::ensure!(b.client.find(fantoccini::Locator::Css(&format!("#group-{stored_ws}"))).await.is_err(), "an empty group is hidden");
        fits(&b, "/documents filtered").await?;
        // A search reads both workspaces.
        b.goto(&format!("{}/documents?q=day-07", app.address)).await?;
        b.wait_for_text("#documents-count", "1 file matches “day-07” in 1 of the 2 workspaces you may see.").await?;

        // The workspace's page: a folder folds and unfolds from the keyboard.
        b.goto(&format!("{}/documents/workspaces/{host_ws}", app.address)).await?;
        b.wait_for("#workspace-tree").await?;
        let folder = "#workspace-tree li[data-path='notes'] > details";
        let day = "#workspace-tree li[data-path='notes/day-01.md'] a.tree-open";
        anyhow::ensure!(b.wait_for(day).await?.is_displayed().await?, "open at first");
        js(&b, &format!("document.querySelector(\"{folder} > summary\").focus(); return true")).await?;
        b.client.active_element().await?.send_keys(ENTER).await?;
        wait_until(&b, "the folder to fold", &format!("return !document.querySelector(\"{folder}\").open")).await?;
        anyhow::ensure!(!b.wait_for(day).await?.is_displayed().await?, "a folded folder hides its files");
        b.client.active_element().await?.send_keys(ENTER).await?;
        wait_until(&b, "the folder to unfold", &format!("return document.querySelector(\"{folder}\").open")).await?;

        // The tree filters: typed, then Enter.
        b.fill("#tree-filter-q", "table").await?;
        b.client.active_element().await?.send_keys(ENTER).await?;
        b.wait_for_text("#tree-filter-count", "1 file holds “table” in 32 files.").await?;
        anyhow::ensure!(b.client.find(fantoccini::Locator::Css(day)).await.is_err(), "filtered out");
        b.wait_for("#workspace-tree li[data-path='data/table.csv']").await?;
        anyhow::ensure!(b.client.current_url().await?.query().is_some_and(|q| q.contains("filter=table")), "the filter is in the URL");
        b.click("#tree-filter-clear").await?;
        b.wait_for("#workspace-tree li[data-path='zz/last.md']").await?;

        // A file far down the tree opens as a sheet where the person is, not at the page's bottom.
        // (A boosted link's swap scrolls to the top once it settles: the file is scrolled to until
        // the page stays there.)
        let last = "#workspace-tree li[data-path='zz/last.md'] a.tree-open";
        wait_until(&b, "the page to finish loading", "return document.readyState === 'complete' && !document.querySelector('.htmx-request, .htmx-settling, .htmx-swapping')").await?;
        let far_down = format!("const a = document.querySelector(\"{last}\"); if (!a) return false; \
            if (window.scrollY <= 300) a.scrollIntoView({{block: 'center'}}); return window.scrollY > 300");
        wait_until(&b, "the file to be far down the page", &far_down).await?;
        let before = js(&b, "return window.scrollY").await?.as_f64().unwrap_or(0.0);
        anyhow::ensure!(before > 300.0, "the file is far down the page ({before} px)");
        b.click(last).await?;
        b.wait_for_text("#preview-markdown", "At the bottom of the tree.").await?;
        let sheet = js(&b, "const r = document.querySelector('#workspace-preview').getBoundingClientRect(); \
            return [r.top, r.bottom, window.innerHeight, window.scrollY, getComputedStyle(document.querySelector('#workspace-preview')).position, \
            document.activeElement.id]").await?;
        let (top, bottom, height) = (sheet[0].as_f64().unwrap_or(-1.0), sheet[1].as_f64().unwrap_or(-1.0), sheet[2].as_f64().unwrap_or(0.0));
        anyhow::ensure!(top >= 0.0 && top < height && bottom <= height + 0.5, "the preview is on screen: {sheet}");
        anyhow::ensure!((sheet[3].as_f64().unwrap_or(0.0) - before).abs() < 2.0, "the page stayed where it was: {sheet}");
        assert_eq!((sheet[4].as_str(), sheet[5].as_str()), (Some("fixed"), Some("workspace-preview")), "{sheet}");
        anyhow::ensure!(b.client.current_url().await?.query().is_some_and(|q| q.contains("path=zz%2Flast.md")), "the URL names the file");
        b.wait_for("#workspace-tree li[data-path='zz/last.md'] a[aria-current='true']").await?;
        fits(&b, "a workspace's page with a file open").await?;
        b.click("#preview-close").await?;
        wait_until(&b, "the sheet to close", "const p = document.querySelector('#workspace-preview'); \
            return !!p && getComputedStyle(p).display === 'none'").await?;

        // Snapshots: Download, and no Restore for a member.
        b.wait_for("#snapshots-table").await?;
        b.wait_for(&format!("#snapshots-table tr[data-snapshot='{snapshot}'] a[download]")).await?;
        anyhow::ensure!(b.client.find(fantoccini::Locator::Css("#snapshots-table .snapshot-restore")).await.is_err(), "no Restore for a member");
        b.close().await?;

        // The owner is offered Restore; the member's request is still refused by the server.
        let list = format!("/documents/workspaces/{host_ws}/snapshots");
        let owner = app.web.get(&list).await;
        assert_eq!(owner.select_all(".snapshot-restore"), ["Restore into a new run"]);
        let token = member.csrf().await;
        let restore = format!("{list}/{snapshot}/restore");
        let refused = member.send(member.http.post(member.url(&restore)).header("x-csrf-token", token)).await;
        assert_eq!(refused.status, 200, "{}", refused.body);
        assert!(refused.select_text("#snapshots-error").is_some_and(|e| e.contains("role in this organization does not allow")), "{}", refused.body);
        assert!(refused.select_all(".snapshot-restore").is_empty());
        Ok(())
    }
}
