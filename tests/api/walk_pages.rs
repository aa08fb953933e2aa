//! The smaller items of issue 49's walk, as the pages are served (SQLite and PostgreSQL): Setup
//! focuses the first invalid field and says the password's length once; a member's Home says
//! nothing of the console's internals; the organization switches only on its Switch button; copy
//! buttons draw their icon (no symbol font needed); Documents' groups say when in words and a
//! folder's row its newest change, and a folder below the listing's depth says so, not "0 files".

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::db_test;
use crate::helpers::Resp;
use crate::peer;
use crate::support::{service_agent, Org};

/// How many times `needle` occurs in the page's `<main>` text.
fn times_in_main(page: &Resp, needle: &str) -> usize {
    let sel = scraper::Selector::parse("main").expect("selector");
    let html = page.html();
    let text: String = html.select(&sel).flat_map(|m| m.text()).collect();
    text.matches(needle).count()
}

db_test! {
    async fn setup_focuses_the_first_invalid_field_and_says_the_passwords_length_once(app: TestApp) {
        // Everything missing: the organization, the form's first field, takes the focus.
        let r = app.web.post_setup("", "", "").await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
        assert!(["organization", "email", "password"].iter().all(|f| r.field_error(f).is_some()), "{}", r.body);
        assert_eq!(r.select_attr("#organization", "autofocus").as_deref(), Some(""));
        assert!(r.select_attr("#email", "autofocus").is_none(), "{}", r.body);

        // Only the password too short: it takes the focus, and its length is said once.
        let r = app.web.post_setup("owner@example.com", "short", "Acme").await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
        assert_eq!(r.field_error("password").as_deref(), Some("Use at least 10 characters."));
        assert_eq!(r.select_attr("#password", "autofocus").as_deref(), Some(""));
        assert_eq!(times_in_main(&r, "10 characters"), 1, "{}", r.body);
        assert_eq!(r.select_attr("#password", "aria-describedby").as_deref(), Some("password-error"));

        // The form as first shown keeps its hint.
        let fresh = app.new_client().get("/setup").await;
        assert_eq!(fresh.select_text("#password-hint").as_deref(), Some("At least 10 characters."));
        assert_eq!(fresh.select_attr("#organization", "autofocus").as_deref(), Some(""));
    }
}

db_test! {
    async fn a_members_home_says_nothing_of_the_consoles_internals_and_the_organization_switches_on_its_button(app: TestApp) {
        app.setup_owner().await;
        let owner = app.web.get("/").await;
        let database = owner.select_text("#home-database .stat-value").expect("the owner sees the database");
        assert!(database == "SQLite (embedded)" || database == "PostgreSQL", "{database}");
        assert!(owner.select_text("#start-run").is_some_and(|t| t.contains("an agent runtime opens one through the API")));

        let member = app.member_with_role("mia@example.com", "member").await;
        let home = member.get("/").await;
        assert_eq!(home.status, StatusCode::OK);
        assert!(home.select_text("#home-database").is_none(), "{}", home.body);
        for internal in ["SQLite", "PostgreSQL", "Database", "agent runtime", "through the API"] {
            assert_eq!(times_in_main(&home, internal), 0, "a member's Home says {internal:?}: {}", home.body);
        }
        let step = home.select_text("#start-run").expect("the member's step");
        assert!(step.contains("conversation") && step.contains("Documents"), "{step}");

        // The organization select does not submit itself: a Switch button does, with or
        // without script.
        assert!(home.select_attr("#org-switch-select", "data-autosubmit").is_none(), "{}", home.body);
        assert_eq!(home.select_text(".org-switch button#org-switch-go[type=submit]").as_deref(), Some("Switch"));
        assert!(!home.body.contains("<noscript>"), "the button is always there");
    }
}

db_test! {
    async fn documents_say_when_in_words_and_a_folder_below_the_listing_says_it_is_not_listed(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let agent = o.agent(service_agent("walker", "run")).await;
        let run = o.run(&agent, None, json!({})).await;
        assert_eq!(o.write(&run, "notes.md", "# Notes").await.status, 204);
        assert_eq!(o.write(&run, "reports/q1.md", "q1").await.status, 204);
        assert_eq!(o.write(&run, "reports/q2.md", "q2").await.status, 204);
        assert_eq!(o.write(&run, "a/b/c/d/e/f/g/deep.txt", "deep").await.status, 204);
        let page = o.call(Method::GET, "/api/v1/documents", None).await.json();
        let id = page["groups"][0]["workspace"]["id"].as_str().unwrap_or_else(|| panic!("a group: {page}")).to_string();

        let docs = app.web.get("/documents").await;
        assert_eq!(docs.status, StatusCode::OK);
        let group = format!("#group-{id}");
        // A file's Changed: in words, the exact time on hover, never the raw ISO time.
        let when = docs.select_text(&format!("{group} tr.document-file[data-path='notes.md'] time.file-when"));
        assert!(when.as_deref().is_some_and(|w| w.ends_with(" ago") || w == "just now"), "{when:?}: {}", docs.body);
        let title = docs.select_attr(&format!("{group} tr.document-file[data-path='notes.md'] time.file-when"), "title");
        assert!(title.as_deref().is_some_and(|t| t.ends_with(" UTC")), "{title:?}");
        // A folder's Changed is its newest file's time; its file count is beside its files.
        let folder = format!("{group} tr.document-folder[data-path='reports']");
        assert!(docs.select_text(&format!("{folder} time.file-when")).is_some(), "{}", docs.body);
        assert_eq!(docs.select_text(&format!("{folder} .folder-files")).as_deref(), Some("2 files: q1.md, q2.md"));
        let sel = scraper::Selector::parse(&format!("{group} table.document-rows td")).expect("selector");
        let html = docs.html();
        let cells: Vec<String> = html.select(&sel).map(|td| td.text().collect::<String>()).collect();
        assert!(!cells.iter().any(|c| c.contains('T') && c.contains(':') && c.contains('-')), "a raw ISO time: {cells:?}");
        assert!(!cells.iter().any(|c| c.trim() == "2 files" || c.trim() == "1 file"), "a count under Changed: {cells:?}");

        // The workspace's tree: the folder where the listing stopped says so.
        let tree = app.web.get(&format!("/documents/workspaces/{id}")).await;
        assert_eq!(tree.status, StatusCode::OK);
        assert_eq!(tree.select_text("li.tree-dir[data-path='reports'] > details > summary .muted").as_deref(), Some("2 files"));
        let deepest = tree.select_text("li.tree-dir[data-path='a/b/c/d/e/f'] > details > summary .muted");
        assert_eq!(deepest.as_deref(), Some("not listed: deeper than 6 levels"), "{}", tree.body);
        assert_eq!(times_in_main(&tree, "0 files"), 0, "{}", tree.body);
    }
}

db_test! {
    async fn a_copy_button_draws_its_icon_and_is_named(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let agent = o.agent(service_agent("copier", "run")).await;
        let run = o.run(&agent, None, json!({})).await;
        assert_eq!(o.write(&run, "some/long/path/of/a/file.txt", "x").await.status, 204);
        let page = app.web.get("/sandboxes/activity").await;
        assert_eq!(page.status, StatusCode::OK);
        let button = "tr.operation td.target button.copy-value";
        assert_eq!(page.select_attr(button, "aria-label").as_deref(), Some("Copy the whole target"), "{}", page.body);
        assert_eq!(page.select_attr(&format!("{button} svg.copy-icon"), "aria-hidden").as_deref(), Some("true"));
        assert!(!page.body.contains('⧉'), "no glyph a font may lack");
    }
}
