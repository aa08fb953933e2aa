//! Real Chromium for issue 9's account and form flows: a first sign-in with a one-time password
//! goes through choosing one's own; the first invalid field takes the focus and a refused action
//! keeps the page's URL; the audit log filters (on SQLite and PostgreSQL).

use anyhow::Context;

use crate::browser::{self, Browser};
use crate::db_test;
use crate::helpers::OWNER_EMAIL;
use crate::support::browser_sign_in::{sign_in, submit_sign_in};

async fn active_id(b: &Browser) -> anyhow::Result<String> {
    let v = b.client.execute("return document.activeElement ? document.activeElement.id : '';", vec![]).await?;
    Ok(v.as_str().unwrap_or_default().to_string())
}

/// The top of the element matching `css`, in CSS pixels.
async fn top(b: &Browser, css: &str) -> anyhow::Result<f64> {
    let script = "return document.querySelector(arguments[0]).getBoundingClientRect().top;";
    let v = b.client.execute(script, vec![serde_json::json!(css)]).await?;
    v.as_f64().with_context(|| format!("no top for {css}: {v}"))
}

db_test! {
    async fn a_first_sign_in_with_a_one_time_password_chooses_a_new_one_in_a_real_browser(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("a_first_sign_in_with_a_one_time_password_chooses_a_new_one_in_a_real_browser") {
            return Ok(());
        }
        let created = agenticos::auth::service::create_owner_with_one_time_password(&app.state.db, "ops@example.com", "Ops")
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let one_time = created.one_time_password.context("a one-time password")?;
        let b = Browser::start().await?;
        submit_sign_in(&b, &app.address, "ops@example.com", &one_time).await?;
        b.wait_for("#new-password").await?;
        assert_eq!(b.current_path().await?, "/account/password");
        assert_eq!(b.text("h1").await?, "Choose your password");
        assert_eq!(active_id(&b).await?, "current-password");
        // No other page until then.
        b.goto(&format!("{}/members", app.address)).await?;
        b.wait_for("#new-password").await?;
        assert_eq!(b.current_path().await?, "/account/password");

        b.fill("#current-password", &one_time).await?;
        b.fill("#new-password", "my own password 1").await?;
        b.fill("#confirm-password", "my own password 2").await?;
        b.click("main form.form button[type=submit]").await?;
        b.wait_for_text("#confirm-password-error", "not the same").await?;
        assert_eq!(active_id(&b).await?, "confirm-password");
        b.fill("#current-password", &one_time).await?;
        b.fill("#new-password", "my own password 1").await?;
        b.fill("#confirm-password", "my own password 1").await?;
        b.click("main form.form button[type=submit]").await?;
        b.wait_for("nav.sidebar-nav").await?;
        assert_eq!(b.current_path().await?, "/");
        b.wait_for_text("#flash", "Your password is set").await?;

        // The account page, from the e-mail in the top bar: this browser's sign-in is marked.
        b.click(".user-menu a.account-link").await?;
        b.wait_for_text("#sessions-table", "this browser").await?;
        assert_eq!(b.current_path().await?, "/account");
        assert!(b.text("#sessions-table").await?.contains("Headless Chrome"));

        // Signed out and in again with the chosen password: straight to the console.
        b.click(".user-menu button[type=submit]").await?;
        b.wait_for("#password").await?;
        submit_sign_in(&b, &app.address, "ops@example.com", "my own password 1").await?;
        b.wait_for("nav.sidebar-nav").await?;
        assert_eq!(b.current_path().await?, "/");
        b.close().await
    }
}

db_test! {
    async fn the_first_invalid_field_takes_the_focus_and_a_refused_action_keeps_the_url_in_a_real_browser(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("the_first_invalid_field_takes_the_focus_and_a_refused_action_keeps_the_url_in_a_real_browser") {
            return Ok(());
        }
        app.setup_owner().await;
        let b = Browser::start().await?;
        sign_in(&b, &app.address).await?;

        // A boosted form refused: its messages, the focus on the first invalid field, each row of
        // fields still aligned (name and description; role, expiry and the button), and the page's
        // own URL.
        b.click("nav.sidebar-nav a[href='/tokens']").await?;
        b.wait_for("#token-name").await?;
        let (name_top, described_top) = (top(&b, "#token-name").await?, top(&b, "#token-description").await?);
        b.click("form[action='/tokens'] button[type=submit]").await?;
        b.wait_for("#token-name-error").await?;
        assert_eq!(active_id(&b).await?, "token-name");
        assert_eq!(b.current_path().await?, "/tokens");
        let (name_after, described_after) = (top(&b, "#token-name").await?, top(&b, "#token-description").await?);
        let (role_after, expires_after) = (top(&b, "#token-role").await?, top(&b, "#token-expires").await?);
        let button = top(&b, "form[action='/tokens'] button[type=submit]").await?;
        assert!((name_after - described_after).abs() < 1.0, "name {name_after}, description {described_after}");
        assert!((role_after - expires_after).abs() < 1.0, "role {role_after}, expires {expires_after}");
        assert!((role_after - button).abs() < 2.0, "role {role_after}, button {button}");
        assert!(role_after > name_after, "role {role_after} below name {name_after}");
        assert!((name_top - described_top).abs() < 1.0 && (name_after - name_top).abs() < 1.0, "the row did not move");

        // The members page: removing the last owner is refused, the address bar keeps /members.
        b.click("nav.sidebar-nav a[href='/members']").await?;
        b.wait_for("#members-table").await?;
        b.click("#members-table a.member-remove").await?;
        b.wait_for("dialog#member-remove-dialog[open] #member-remove-confirm").await?;
        b.click("#member-remove-confirm").await?;
        b.wait_for_text("#flash", "The last owner cannot be removed").await?;
        assert_eq!(b.current_path().await?, "/members");
        b.client.refresh().await?;
        b.wait_for("#members-table").await?;
        assert_eq!(b.current_path().await?, "/members");

        // "New organization" opens in its own layout, not stuck in the console's frame.
        b.click(".org-switch a[href='/orgs/new']").await?;
        b.wait_for("body.auth main.auth-card #name").await?;
        b.fill("#name", "acme").await?;
        b.click("main form.form button[type=submit]").await?;
        b.wait_for_text("#name-error", "already belong to an organization").await?;
        assert_eq!(active_id(&b).await?, "name");
        assert_eq!(b.current_path().await?, "/orgs/new");
        b.close().await
    }
}

db_test! {
    async fn the_audit_log_filters_in_a_real_browser(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("the_audit_log_filters_in_a_real_browser") {
            return Ok(());
        }
        app.setup_owner().await;
        app.web.create_token_in_page("robot", "operator").await;
        assert_eq!(app.new_client().post_login(OWNER_EMAIL, "wrong password!").await.status, 401);
        let b = Browser::start().await?;
        sign_in(&b, &app.address).await?;
        b.click("nav.sidebar-nav a[href='/audit']").await?;
        let all = b.wait_for_text("#audit-table tbody", "Sign-in failed").await?;
        assert!(all.contains("API token created"), "{all}");
        let title = b.wait_for("#audit-table time").await?.attr("title").await?.context("a title")?;
        assert!(title.ends_with('Z') && title.contains('.'), "the exact UTC time on hover: {title}");

        b.wait_for("#audit-event").await?.select_by_value("sign_in.failed").await?;
        b.click("#audit-filters button[type=submit]").await?;
        b.wait_for("a.btn[href='/audit']").await?;
        let text = b.wait_for_text("#audit-table tbody", "Sign-in failed").await?;
        assert!(!text.contains("API token created"), "{text}");
        let rows = b.client.find_all(fantoccini::Locator::Css("#audit-table tbody tr")).await?;
        assert_eq!(rows.len(), 1);
        let url = b.client.current_url().await?;
        assert!(url.query().is_some_and(|q| q.contains("event=sign_in.failed")), "the filters are in the URL: {url}");

        // A time it cannot read: said at the field, which takes the focus.
        b.fill("#audit-from", "next tuesday").await?;
        b.click("#audit-filters button[type=submit]").await?;
        b.wait_for_text("#audit-from-error", "UTC time").await?;
        assert_eq!(active_id(&b).await?, "audit-from");
        assert!(b.client.find(fantoccini::Locator::Css("#audit-table")).await.is_err());

        b.fill("#audit-from", "2000-01-01").await?;
        b.wait_for("#audit-event").await?.select_by_value("").await?;
        b.fill("#audit-actor", "SIGN-IN").await?;
        b.click("#audit-filters button[type=submit]").await?;
        let text = b.wait_for_text("#audit-table tbody", "Sign-in failed").await?;
        assert!(!text.contains("API token created"), "{text}");
        b.click("a.btn[href='/audit']").await?;
        b.wait_for_text("#audit-table tbody", "API token created").await?;
        b.close().await
    }
}
