//! Human dates (issue 30): the console's tables say when as people do ("3 min ago", "in 2 d"),
//! the exact UTC time on hover, and the audit log's When stays on one line — on both databases.

use reqwest::Method;
use serde_json::json;

use crate::db_test;

db_test! {
    async fn tables_say_when_as_people_do_with_the_exact_time_on_hover(app: TestApp) -> anyhow::Result<()> {
        app.setup_owner().await;
        app.web.create_token_in_page("runtime", "owner").await;
        let secret = json!({"name": "deploy key", "purpose": "sandboxd", "value": "s3cret-value"});
        assert_eq!(app.web.api(Method::POST, "/api/v1/vault/secrets", Some(secret)).await.status, 201);
        for (page, cell) in [("/tokens", "td time.when"), ("/vault", "#secrets-table td time.when"), ("/members", "td time.when")] {
            let r = app.web.get(page).await;
            assert_eq!(r.status, 200, "{page}");
            let text = r.select_text(cell).unwrap_or_default();
            assert!(text.ends_with(" ago"), "{page}: {text:?}");
            let title = r.select_attr(cell, "title").unwrap_or_default();
            assert!(title.ends_with(" UTC") && title.len() == "2026-12-03 10:00:05 UTC".len(), "{page}: {title:?}");
        }
        let audit = app.web.get("/audit").await;
        assert!(audit.select_attr("#audit-table tbody td.when-cell", "class").is_some_and(|c| c.contains("nowrap")), "{}", audit.body);
        Ok(())
    }
}

/// Pieces of the visible text of a page's `main` (attributes left out: a `<time>` keeps the exact
/// time in its `title` and `datetime`) that read as a raw time: `2026-12-03` or `10:00`.
pub(crate) fn raw_times(body: &str) -> Vec<String> {
    let html = scraper::Html::parse_document(body);
    let main = scraper::Selector::parse("main").expect("selector");
    let text: Vec<char> = html.select(&main).flat_map(|m| m.text()).collect::<Vec<_>>().join(" ").chars().collect();
    let shape = |at: usize, pattern: &str| {
        pattern
            .chars()
            .enumerate()
            .all(|(i, p)| text.get(at + i).is_some_and(|c| if p == 'd' { c.is_ascii_digit() } else { *c == p }))
    };
    let mut found = Vec::new();
    for at in 0..text.len() {
        if at > 0 && text[at - 1].is_ascii_digit() {
            continue;
        }
        let len = if shape(at, "dddd-dd-dd") {
            10
        } else if shape(at, "dd:dd") {
            5
        } else {
            continue;
        };
        let end = (at + len + 12).min(text.len());
        found.push(text[at.saturating_sub(12)..end].iter().collect());
    }
    found
}

db_test! {
    async fn no_page_shows_a_raw_time_outside_the_audit_log(app: TestApp) -> anyhow::Result<()> {
        let o = crate::support::org::Org::new(&app).await;
        let agent = o.agent(json!({"name": "notes", "backend": "state", "scope": "conversation"})).await;
        let conv = o.conversation(&agent, json!({"title": "Plans"})).await;
        let first = o.run(&agent, Some(&conv), json!({})).await;
        o.finish(&first).await;
        let _second = o.run(&agent, Some(&conv), json!({})).await;
        app.invite("new@example.com", "member").await;

        let conversation = format!("/conversations/{conv}");
        for page in ["/", "/conversations", conversation.as_str(), "/account", "/members", "/tokens", "/vault", "/agents"] {
            let r = app.web.get(page).await;
            assert_eq!(r.status, 200, "{page}");
            assert_eq!(raw_times(&r.body), Vec::<String>::new(), "{page} shows a raw time");
        }
        // The conversation says when it started and when each run started and finished, in
        // words, the exact time on hover; its runs are named, newest first.
        let r = app.web.get(&conversation).await;
        assert!(r.select_text(".page-header time.when").is_some_and(|t| t.ends_with(" ago")), "{}", r.body);
        assert_eq!(r.select_all("#runs-table tbody tr td:first-child"), ["Run 2", "Run 1"]);
        assert_eq!(r.select_all("#runs-table time.when").len(), 3, "two starts and one finish");
        let latest = r.select_text("#workspace-latest-run").unwrap_or_default();
        assert!(latest.starts_with("Run 2 · started by "), "{latest:?}");
        // The pending invitation's end and the sign-ins read the same way.
        assert!(app.web.get("/members").await.select_text("td time.when").is_some());
        let account = app.web.get("/account").await;
        assert!(account.select_all("#sessions-table time.when").len() >= 2, "signed in and ends: {}", account.body);
        // The test's own check finds a raw time where there is one.
        assert_eq!(raw_times("<main><p>at 2026-12-03 10:00:05 UTC</p></main>").len(), 3);
        assert!(raw_times("<main><time title=\"2026-12-03 10:00\">3 min ago</time></main>").is_empty());
        Ok(())
    }
}
