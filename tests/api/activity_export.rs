//! Activity like a log viewer (issue 30): the page's Export (CSV and NDJSON of its filters and
//! time range, streamed, this organization's rows only) and its time range (the last hour, day,
//! week or a custom one, in the URL), with the count of matches for the range — on both
//! databases, and the picker in real Chromium.

use serde_json::{json, Value};

use crate::browser::{self, Browser};
use crate::browser_screens::wait_until;
use crate::db_test;
use crate::helpers::{Client, Resp, TestApp};
use crate::support::browser_sign_in::sign_in;
use crate::support::Org;

/// A run of a `state` agent of `o` that wrote each of `files` (one recorded operation each).
async fn run_writing(o: &Org<'_>, files: &[&str]) {
    let agent = o.agent(json!({"name": "scribe", "backend": "state", "scope": "conversation"})).await;
    let conversation = o.conversation(&agent, json!({})).await;
    let run = o.run(&agent, Some(&conversation), json!({})).await;
    for f in files {
        assert_eq!(o.write(&run, f, "text").await.status, 204, "writing {f}");
    }
}

/// Owner A's rows (`now.txt`, and `old.txt` moved two days back) and another organization's
/// (`elsewhere.txt`); the other organization's owner, signed in.
async fn two_orgs(app: &TestApp) -> Client {
    let a = Org::new(app).await;
    run_writing(&a, &["now.txt", "old.txt"]).await;
    let two_days_ago = agenticos::db::now_ms() - 2 * 86_400_000;
    app.execute(&format!("UPDATE sandbox_operations SET created_at = {two_days_ago} WHERE target LIKE '%old.txt'"))
        .await;
    let other = app.other_org_user("b@example.com", "B Corp").await;
    let b = Org { app, token: other.create_token_in_page("runtime", "owner").await, org_id: String::new() };
    run_writing(&b, &["elsewhere.txt"]).await;
    other
}

fn targets_ndjson(r: &Resp) -> Vec<String> {
    r.body
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter_map(|v| v["target"].as_str().map(str::to_string))
        .collect()
}

fn has(targets: &[String], file: &str) -> bool {
    targets.iter().any(|t| t.ends_with(file))
}

db_test! {
    async fn the_activity_export_streams_the_filter_and_range_of_this_organization_only(app: TestApp) -> anyhow::Result<()> {
        let b = two_orgs(&app).await;

        // CSV of every row: a download, a header, A's rows, none of B's.
        let csv = app.web.get("/sandboxes/activity/export?format=csv").await;
        assert_eq!(csv.status, 200, "{}", csv.body);
        assert_eq!(csv.headers.get("content-type").and_then(|v| v.to_str().ok()), Some("text/csv; charset=utf-8"));
        let disposition = csv.headers.get("content-disposition").and_then(|v| v.to_str().ok()).unwrap_or_default();
        assert!(disposition.starts_with("attachment; filename=\"acme-activity-start-to-") && disposition.ends_with("Z.csv\""), "{disposition}");
        let lines: Vec<&str> = csv.body.lines().collect();
        assert!(lines[0].starts_with("time,op,target,ok,"), "{}", lines[0]);
        assert_eq!(lines.iter().filter(|l| l.contains("now.txt") || l.contains("old.txt")).count(), 2, "{}", csv.body);
        assert!(!csv.body.contains("elsewhere.txt"), "another organization's row: {}", csv.body);

        // NDJSON of the last day: the old row is outside the range.
        let day = app.web.get("/sandboxes/activity/export?format=ndjson&range=day").await;
        assert_eq!(day.status, 200, "{}", day.body);
        let t = targets_ndjson(&day);
        assert!(has(&t, "now.txt") && !has(&t, "old.txt") && !has(&t, "elsewhere.txt"), "{t:?}");
        // The other organization's export holds its row only.
        let theirs = b.get("/sandboxes/activity/export?format=ndjson").await;
        let t = targets_ndjson(&theirs);
        assert!(has(&t, "elsewhere.txt") && !has(&t, "now.txt") && !has(&t, "old.txt"), "{t:?}");

        // The page: the range in the URL, the count of matches for it, the export of the same rows.
        let page = app.web.get("/sandboxes/activity?range=day").await;
        assert_eq!(page.status, 200);
        assert_eq!(page.select_attr("#oplog-range option[selected]", "value").as_deref(), Some("day"));
        assert_eq!(page.select_text("#oplog-counts").as_deref().map(str::trim), Some("Rows 1–1 of 1 in the last 24 hours"));
        let export = page.select_attr("#oplog-export-csv", "href").expect("the CSV export link");
        assert!(export.starts_with("/sandboxes/activity/export?") && export.contains("since=") && export.contains("format=csv"), "{export}");
        let custom = app.web.get("/sandboxes/activity?since=2000-01-01&until=2000-01-02").await;
        assert_eq!(custom.select_attr("#oplog-range option[selected]", "value").as_deref(), Some("custom"));
        assert_eq!(custom.select_attr("#oplog-since", "value").as_deref(), Some("2000-01-01T00:00"));
        assert_eq!(custom.select_text("#oplog-counts").as_deref().map(str::trim), Some("0 of 0 in this range"));

        // Refused: a range we do not offer (inline, 422), a format we do not write, a member.
        let refused = app.web.get("/sandboxes/activity?range=year").await;
        assert_eq!(refused.status, 422);
        assert!(refused.select_text("#oplog-range-error").is_some_and(|m| m.contains("last hour")), "{}", refused.body);
        assert_eq!(app.web.get("/sandboxes/activity/export?format=xml").await.status, 422);
        let member = app.member_with_role("m@example.com", "member").await;
        assert_eq!(member.get("/sandboxes/activity/export?format=csv").await.status, 403);
        Ok(())
    }
}

db_test! {
    async fn the_time_range_picker_filters_in_place_and_keeps_the_range_in_the_url(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("the_time_range_picker_filters_in_place_and_keeps_the_range_in_the_url") {
            return Ok(());
        }
        two_orgs(&app).await;
        let b = Browser::start().await?;
        sign_in(&b, &app.address).await?;
        b.goto(&format!("{}/sandboxes/activity", app.address)).await?;
        b.wait_for_text("#oplog-counts", "of 2").await?;
        b.choose("#oplog-range", "hour").await?;
        b.wait_for_text("#oplog-counts", "Rows 1–1 of 1 in the last hour").await?;
        wait_until(&b, "the range in the URL", "return location.search.includes('range=hour')").await?;
        let href = b.wait_for("#oplog-export-ndjson").await?.attr("href").await?.unwrap_or_default();
        let rows = app.web.get(&href).await;
        assert_eq!(targets_ndjson(&rows).len(), 1, "{href}: {}", rows.body);
        // Typing a From time makes the range custom.
        b.client
            .execute("const f = document.getElementById('oplog-since'); f.value = '2000-01-01T00:00'; f.dispatchEvent(new Event('input', {bubbles: true}));", vec![])
            .await?;
        wait_until(&b, "the range custom", "return document.getElementById('oplog-range').value === 'custom'").await?;
        b.close().await
    }
}
