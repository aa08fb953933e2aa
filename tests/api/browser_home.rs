//! Issue 30 in real Chromium: Home answers "is everything OK?" (a host that does not answer, a
//! failing delete and a failed operation, each with a link to where it is fixed), Getting started
//! marks what the organization has done and names the next step, and an API token made on the page
//! with an expiry says when it ends (on SQLite and PostgreSQL).

use serde_json::{json, Value};

use crate::browser::{self, Browser};
use crate::db_test;
use crate::health::{failed_operation, failing_tombstone};
use crate::support::browser_sign_in::sign_in;

async fn js(b: &Browser, script: &str, args: Vec<Value>) -> anyhow::Result<Value> {
    Ok(b.client.execute(script, args).await?)
}

/// The class and badge of Getting started's step `id`.
async fn step(b: &Browser, id: &str) -> anyhow::Result<(String, String)> {
    let v = js(
        b,
        "const li = document.getElementById('start-' + arguments[0]); \
         return li ? [li.className, li.querySelector('.badge').textContent.trim()] : ['missing', ''];",
        vec![json!(id)],
    )
    .await?;
    Ok((v[0].as_str().unwrap_or_default().to_string(), v[1].as_str().unwrap_or_default().to_string()))
}

db_test! {
    async fn home_says_what_needs_you_and_what_is_left_to_set_up_in_a_real_browser(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("home_says_what_needs_you_and_what_is_left_to_set_up_in_a_real_browser") {
            return Ok(());
        }
        app.setup_owner().await;
        let b = Browser::start().await?;
        b.client.set_window_size(1280, 900).await?;
        sign_in(&b, &app.address).await?;

        // A new organization: nothing done, the host first, and nothing needs anyone yet.
        b.goto(&format!("{}/", app.address)).await?;
        b.wait_for_text("#getting-started-count", "0 of 5 done").await?;
        assert_eq!(step(&b, "host").await?, ("step-todo".to_string(), "Next".to_string()));
        assert_eq!(step(&b, "token").await?, ("step-todo".to_string(), "To do".to_string()));
        assert!(b.text("#health-verdict").await?.starts_with("Yes"), "{}", b.text("#health-verdict").await?);

        // A host that does not answer, a delete failing there, a failed operation.
        let idle = app.insert_idle_sandboxd_connection("idle").await;
        let org = app.scalar_strings("SELECT id FROM organizations").await.remove(0);
        failing_tombstone(&app, &org, &idle).await;
        failed_operation(&app, &org, 60_000).await;
        // Its health is learnt where hosts are checked: the Connections page's live check.
        b.goto(&format!("{}/sandboxes", app.address)).await?;
        b.wait_for_text(&format!("#health-{idle}"), "answer").await?;
        b.goto(&format!("{}/", app.address)).await?;
        b.wait_for_text("#health-verdict", "Not quite").await?;
        b.wait_for_text("#getting-started-count", "1 of 5 done").await?;
        assert_eq!(step(&b, "host").await?, ("step-done".to_string(), "Done".to_string()));
        assert_eq!(step(&b, "agent").await?, ("step-todo".to_string(), "Next".to_string()));
        assert_eq!(b.text("#health-deletes .stat-value").await?.trim(), "1");
        assert!(b.text("#health-deletes .stat-meta").await?.contains("failing on 1 host"));
        assert_eq!(b.text("#health-failed-operations .stat-value").await?.trim(), "1");
        // Each problem links to where it is fixed.
        b.wait_for(&format!("#health-connection-{idle}")).await?;
        b.click(&format!("#health-connection-{idle} a")).await?;
        b.wait_for(&format!("#connection-{idle}")).await?;
        assert_eq!(b.current_path().await?, "/sandboxes");
        b.goto(&format!("{}/", app.address)).await?;
        b.click("#health-failed-operations").await?;
        b.wait_for("#oplog-results").await?;
        let failed_only = js(
            &b,
            "return [new URL(location.href).searchParams.get('failed_only'), document.querySelector('#oplog-failed').checked];",
            vec![],
        )
        .await?;
        assert_eq!(failed_only, json!(["true", true]), "the activity log opens on the failed operations");

        // A token for a runtime, expiring after 30 days: the list says when, the full time on hover.
        b.goto(&format!("{}/tokens", app.address)).await?;
        b.fill("#token-name", "runtime-eu-1").await?;
        js(&b, "document.querySelector('#token-role').value = 'operator'; document.querySelector('#token-expires').value = '30';", vec![]).await?;
        b.click("form[action='/tokens'] button[type=submit]").await?;
        b.wait_for("#new-token-value").await?;
        let expires = js(
            &b,
            "const t = document.querySelector('#tokens-table .token-expires time'); return t ? [t.textContent.trim(), t.title] : [];",
            vec![],
        )
        .await?;
        let (when, full) = (expires[0].as_str().unwrap_or_default(), expires[1].as_str().unwrap_or_default());
        assert!(when == "in 29 d" || when == "in 30 d", "{expires}");
        assert!(full.len() >= 16 && full.contains(':'), "the full time on hover: {expires}");

        b.goto(&format!("{}/", app.address)).await?;
        b.wait_for_text("#getting-started-count", "2 of 5 done").await?;
        assert_eq!(step(&b, "token").await?, ("step-done".to_string(), "Done".to_string()));
        b.close().await
    }
}
