//! Activity as a timeline (issue 49, item 5): bars of the operations and failures over the chosen
//! range above the table, each a link that narrows the range to it with an accessible name; the
//! total for the filters; the export named by organization and range — on both databases, and
//! the bars by keyboard in real Chromium at 1280 and 390 px with axe.

use serde_json::json;

use crate::browser::{self, Browser};
use crate::browser_screens::{js, wait_until};
use crate::db_test;
use crate::helpers::{Resp, TestApp};
use crate::support::browser_sign_in::sign_in;
use crate::support::Org;

const MINUTE: i64 = 60_000;

/// Owner A's three operations moved to known times — `a.txt` (failed) and `b.txt` in one
/// half-hour three hours ago, `c.txt` half an hour ago — and another organization's `elsewhere.txt`
/// three hours ago. Answers the start of the half-hour of `a.txt` and `b.txt`.
async fn three_rows(app: &TestApp) -> i64 {
    let a = Org::new(app).await;
    let agent = a.agent(json!({"name": "scribe", "backend": "state", "scope": "conversation"})).await;
    let conversation = a.conversation(&agent, json!({})).await;
    let run = a.run(&agent, Some(&conversation), json!({})).await;
    for f in ["a.txt", "b.txt", "c.txt"] {
        assert_eq!(a.write(&run, f, "text").await.status, 204, "writing {f}");
    }
    let other = app.other_org_user("b@example.com", "B Corp").await;
    let b = Org { app, token: other.create_token_in_page("runtime", "owner").await, org_id: String::new() };
    let agent = b.agent(json!({"name": "scribe", "backend": "state", "scope": "conversation"})).await;
    let conversation = b.conversation(&agent, json!({})).await;
    let run = b.run(&agent, Some(&conversation), json!({})).await;
    assert_eq!(b.write(&run, "elsewhere.txt", "text").await.status, 204);

    let now = agenticos::db::now_ms();
    let half_hour = (now - 3 * 60 * MINUTE).div_euclid(30 * MINUTE) * 30 * MINUTE;
    for (file, at, ok) in [
        ("a.txt", half_hour + MINUTE, 0),
        ("b.txt", half_hour + 2 * MINUTE, 1),
        ("c.txt", now - 30 * MINUTE, 1),
        ("elsewhere.txt", half_hour + MINUTE, 0),
    ] {
        app.execute(&format!(
            "UPDATE sandbox_operations SET created_at = {at}, ok = {ok} WHERE target LIKE '%{file}' AND operation = 'write'"
        ))
        .await;
    }
    half_hour
}

/// Each bar's link and accessible name.
fn bars(page: &Resp) -> Vec<(String, String)> {
    let sel = scraper::Selector::parse("#oplog-timeline .timeline-bar").expect("selector");
    page.html()
        .select(&sel)
        .map(|e| {
            let attr = |k: &str| e.value().attr(k).unwrap_or_default().to_string();
            (attr("href"), attr("aria-label"))
        })
        .collect()
}

/// The UTC minute `ms` as the range's fields write it.
fn minute(ms: i64) -> String {
    let fmt = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]");
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .expect("a time")
        .format(&fmt)
        .expect("format")
}

db_test! {
    async fn the_activity_timeline_counts_operations_and_failures_by_bar_and_a_bar_narrows_the_range(app: TestApp) -> anyhow::Result<()> {
        let half_hour = three_rows(&app).await;

        // The last 24 hours: 3 rows (not the other organization's), in half-hour bars; the bar
        // of a.txt and b.txt says 2 operations, 1 failed, and c.txt's 1 operation.
        let page = app.web.get("/sandboxes/activity?range=day").await;
        assert_eq!(page.status, 200, "{}", page.body);
        assert_eq!(page.select_text("#oplog-total").as_deref(), Some("3 rows"));
        assert_eq!(page.select_text("#oplog-counts").as_deref(), Some("Rows 1–3 of 3 in the last 24 hours"));
        let all = bars(&page);
        assert!((48..=49).contains(&all.len()), "{} bars", all.len());
        let busy: Vec<&(String, String)> = all.iter().filter(|(_, name)| !name.contains(": 0 operations")).collect();
        assert_eq!(busy.len(), 2, "{busy:?}");
        let (href, name) = busy[0];
        let from = minute(half_hour);
        let to = minute(half_hour + 29 * MINUTE);
        assert!(name.starts_with(&format!("{} {}–", &from[..10], &from[11..])), "{name}");
        assert!(name.ends_with("UTC: 2 operations, 1 failed; show this range"), "{name}");
        assert!(busy[1].1.contains(": 1 operation, 0 failed"), "{}", busy[1].1);
        assert!(href.contains("range=custom") && href.contains(&format!("since={}", from.replace(':', "%3A"))), "{href}");
        assert!(href.contains(&format!("until={}", to.replace(':', "%3A"))), "{href}");

        // The bar's link: the range narrowed to its half-hour, the same filters, its rows only.
        let narrowed = app.web.get(href).await;
        assert_eq!(narrowed.status, 200, "{}", narrowed.body);
        assert_eq!(narrowed.select_text("#oplog-total").as_deref(), Some("2 rows"));
        assert_eq!(narrowed.select_attr("#oplog-range option[selected]", "value").as_deref(), Some("custom"));
        let rows = narrowed.select_all("#oplog-rows tr");
        assert!(narrowed.body.contains("a.txt") && narrowed.body.contains("b.txt") && !narrowed.body.contains("c.txt"), "{rows:?}");
        let minutes = bars(&narrowed);
        assert_eq!(minutes.len(), 30, "a half-hour in one-minute bars: {minutes:?}");

        // A filter is counted as the table is: failures only.
        let failed = app.web.get("/sandboxes/activity?range=day&failed_only=true").await;
        assert_eq!(failed.select_text("#oplog-total").as_deref(), Some("1 row"));
        assert!(bars(&failed).iter().all(|(href, _)| href.contains("failed_only=true")));

        // Any time begins at the organization's oldest row; a range with nothing in it counts 0.
        let any = app.web.get("/sandboxes/activity").await;
        assert_eq!(any.select_text("#oplog-total").as_deref(), Some("3 rows"));
        let empty = app.web.get("/sandboxes/activity?since=2000-01-01&until=2000-01-02").await;
        assert_eq!(empty.select_text("#oplog-total").as_deref(), Some("0 rows"));

        // The export is named by the organization and the range.
        let csv = app.web.get("/sandboxes/activity/export?format=csv&since=2026-12-01T10:00&until=2026-12-02T09:59").await;
        assert_eq!(csv.status, 200);
        assert_eq!(
            csv.header("content-disposition").as_deref(),
            Some("attachment; filename=\"acme-activity-2026-12-01_1000Z-to-2026-12-02_0959Z.csv\"")
        );
        let ndjson = app.web.get("/sandboxes/activity/export?format=ndjson&range=day").await;
        let name = ndjson.header("content-disposition").unwrap_or_default();
        let day_ago = minute(agenticos::db::now_ms() - 24 * 60 * MINUTE).replace(['-', ':'], "");
        assert!(name.starts_with("attachment; filename=\"acme-activity-") && name.ends_with(".ndjson\""), "{name}");
        assert!(name.replace('-', "").contains(&day_ago[..8]), "{name}");
        Ok(())
    }
}

db_test! {
    async fn the_activity_timelines_bars_are_links_a_keyboard_reaches_at_1280_and_390_px(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("the_activity_timelines_bars_are_links_a_keyboard_reaches_at_1280_and_390_px") {
            return Ok(());
        }
        three_rows(&app).await;
        for width in [1280, 390] {
            let b = if width == 390 { crate::browser_documents::phone().await? } else { Browser::start().await? };
            sign_in(&b, &app.address).await?;
            let failures = crate::browser_axe::violations(&b, &app.address, "owner", "/sandboxes/activity?range=day").await?;
            assert!(failures.is_empty(), "at {width} px: {failures:#?}");
            b.wait_for_text("#oplog-total", "3 rows").await?;
            // The chart fits the page's width.
            let fits = js(&b, "const r = document.querySelector('#oplog-timeline svg').getBoundingClientRect(); return r.width > 100 && r.right <= window.innerWidth;").await?;
            assert_eq!(fits, json!(true), "the chart at {width} px");
            // Tab from the element before the chart reaches the first bar with something in it.
            let reached = js(&b, "const bars = Array.from(document.querySelectorAll('#oplog-timeline .timeline-bar'));
                const busy = bars.find(a => !a.getAttribute('aria-label').includes(': 0 operations'));
                busy.focus(); return document.activeElement === busy && busy.tabIndex >= 0;").await?;
            assert_eq!(reached, json!(true), "a bar takes the focus at {width} px");
            let active = b.client.active_element().await?;
            active.send_keys("\u{E007}").await?;
            wait_until(&b, "the bar's range", "return location.search.includes('range=custom')").await?;
            b.wait_for_text("#oplog-total", "2 rows").await?;
            let failures = crate::browser_axe::violations(&b, &app.address, "owner", &format!("/sandboxes/activity{}", js(&b, "return location.search").await?.as_str().unwrap_or_default())).await?;
            assert!(failures.is_empty(), "narrowed at {width} px: {failures:#?}");
            b.close().await?;
        }
        Ok(())
    }
}
